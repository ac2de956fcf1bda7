"""The two sides of the final comparison, chosen on dev from the trial table, and their per-seed
scores, configs and checkpoints as MLflow and Tune recorded them.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from search.answer.claims import Contender
from search.tracking.outcome import COMPLETED
from search.tracking.records import CONFIG_ARTIFACT, objective_per_seed, strip_mean
from spaces.canonical import canonical_key
from trainables.config import ConfigError, TrainConfig
from trainables.results import parse_seed_key, per_seed

logger = logging.getLogger(__name__)


# -- choosing ---------------------------------------------------------------------
def single_task(table: pd.DataFrame) -> pd.Series:
    """Which rows trained the primary alone: the baseline, and trials whose space left every auxiliary off."""
    return table.baseline.astype(bool) | (table.get("auxiliary", pd.Series("", index=table.index)) == "none")


def choose(table: pd.DataFrame, mode: str) -> tuple[pd.Series, pd.Series]:
    """The two sides of "does multitask training help the primary?", both chosen on dev (seed mean):
    the best completed trial with at least one auxiliary task, and the best completed single-task
    trial (the baseline, or one whose lr and warm-up the search tuned): both had the search's tuning,
    and may differ in every setting it chose (claim (a) names them; claim (b), the ablation, isolates
    the auxiliary tasks)."""
    done = table[(table.status == COMPLETED) & np.isfinite(table.objective.astype(float))]
    done = done.sort_values("objective", ascending=(mode == "min"), kind="stable")
    alone = single_task(done)
    if not alone.any():
        raise ConfigError("the study has no completed single-task trial yet: continue it with --resume first")
    if alone.all():
        raise ConfigError("the study has no completed multitask trial yet: continue it with --resume first")
    return done[~alone].iloc[0], done[alone].iloc[0]


def ablation_row(winner: pd.Series, config: TrainConfig) -> pd.Series:
    """The ablation's row (it is no trial of the search): its label, its own run id for ``final_for``
    (its final runs are found again by it) and the ablated config's canonical key."""
    return pd.Series(
        {
            "label": f"{winner.label} without auxiliary tasks",
            "run_id": f"{winner.run_id}-ablation",
            "canonical_key": canonical_key(config),
            "baseline": False,
            "objective": float("nan"),
            "objective_std": float("nan"),
        }
    )


def search_collapses(table: pd.DataFrame, floor: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """Seed runs of the search at or below ``floor`` (the dev majority rate) or not finite, out of all its
    seed runs, per side: (multitask, single-task), each ``(collapsed, runs)``, at each trial's last report."""
    columns = [c for c in table.columns if isinstance(c, str) and c.startswith("objective/seed")]
    if not columns or table.empty:
        return (0, 0), (0, 0)
    values = table[columns].to_numpy(dtype=float)
    ran = ~np.isnan(values)  # NaN: the seed never reported (seeds as a fidelity, or a failed trial)
    fell = ran & (np.isinf(values) | ((values <= floor) if np.isfinite(floor) else False))
    alone = single_task(table).to_numpy()
    return (int(fell[~alone].sum()), int(ran[~alone].sum())), (int(fell[alone].sum()), int(ran[alone].sum()))


def final_seeds(search_seeds: Sequence[int], k: int) -> list[int]:
    """K seeds the search never trained: a seed's luck on dev, which helped choose a config, would
    otherwise carry to its test score and favour the chosen side."""
    first = max(search_seeds, default=0) + 1
    return list(range(first, first + k))


def complete_finals(finals: pd.DataFrame, run_id: str, epochs: int) -> list[pd.Series]:
    """Earlier finalize runs of ``run_id`` that trained every epoch; a stopped or failed one is retrained."""
    if finals.empty:
        return []
    mine = finals[(finals.final_for == run_id) & (finals.status == COMPLETED) & (finals.epochs >= epochs)]
    return [r for _, r in mine.iterrows()]


def test_metrics_of(row: pd.Series, primary: str) -> list[str]:
    """The primary's test metrics a row holds per seed, in first-seen order."""
    return test_metric_names(row.index, primary)


def primary_test_metrics(table: pd.DataFrame, primary: str) -> list[str]:
    """The primary task's test metrics that hold per-seed values, in first-seen order."""
    return test_metric_names(table.columns, primary)


def test_metric_names(keys, primary: str) -> list[str]:
    """``semeval/test/acc_4way/seed<S>`` keys -> ``acc_4way``, each once, in first-seen order."""
    prefix = f"{primary}/test/"
    names: dict[str, None] = {}
    for key in keys:
        parsed = parse_seed_key(key) if isinstance(key, str) else None
        if parsed and parsed[0].startswith(prefix):
            names[parsed[0][len(prefix) :]] = None
    return list(names)


def collect(contender: Contender, rows: list[pd.Series], primary: str, seeds: Sequence[int]) -> None:
    """Per-seed dev objective and test scores of ``rows`` (finalize's runs) for ``seeds`` only."""
    for row in rows:
        metrics = test_metrics_of(row, primary)
        for seed, value in objective_per_seed(row).items():
            tests = {m: per_seed(row, f"{primary}/test/{m}").get(seed) for m in metrics}
            if seed not in seeds or seed in contender.dev or not metrics or any(v is None for v in tests.values()):
                continue  # a final seed counts once, and only with every test score
            contender.dev[seed] = value
            for m, v in tests.items():
                contender.test.setdefault(m, {})[seed] = float(v)  # type: ignore[arg-type]
            checkpoint = row.get("checkpoint_dir")
            if isinstance(checkpoint, str) and checkpoint:
                contender.checkpoints[seed] = f"{checkpoint.rstrip('/')}/seed-{seed}.pt"


def objective_metric_of(objective: str, primary: str) -> str | None:
    """``semeval/dev/acc_4way/mean`` -> ``acc_4way``; None for objectives off the primary's dev split."""
    name = strip_mean(objective)
    prefix = f"{primary}/dev/"
    return name[len(prefix) :] if name.startswith(prefix) else None


def trial_config(client, run_id: str) -> TrainConfig:
    """The exact TrainConfig a trial trained (its ``trial_config.json`` artifact)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run_id, CONFIG_ARTIFACT, tmp)
        return TrainConfig.from_dict(json.loads(Path(path).read_text()))


def trial_checkpoint(tune_path: str, trial_id: str | None) -> str:
    """The last checkpoint folder of a study trial (``trial_<id>/checkpoint_*``), local or URI; "" if none."""
    import pyarrow.fs as pafs

    if not trial_id:
        return ""
    fs, root = pafs.FileSystem.from_uri(tune_path) if "://" in tune_path else (pafs.LocalFileSystem(), tune_path)
    try:
        found = fs.get_file_info(pafs.FileSelector(f"{root.rstrip('/')}/trial_{trial_id}", allow_not_found=True))
    except OSError:
        return ""
    folders = sorted(
        i.path for i in found if i.type == pafs.FileType.Directory and i.base_name.startswith("checkpoint_")
    )
    if not folders:
        return ""
    prefix = tune_path.split("://", 1)[0] + "://" if "://" in tune_path else ""
    return prefix + folders[-1]


def final_checkpoint(tune_path: str, trial_id: str | None) -> str:
    """The checkpoint folder of an earlier finalize's run: trial ``trial_id`` in one of the Tune
    experiments ``<study experiment>-final-<time>`` beside the study's own; "" if none is left."""
    import pyarrow.fs as pafs

    if not trial_id:
        return ""
    storage, _, experiment = tune_path.rstrip("/").rpartition("/")
    fs, root = pafs.FileSystem.from_uri(storage) if "://" in storage else (pafs.LocalFileSystem(), storage)
    try:
        found = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
    except OSError:
        return ""
    prefix = storage.split("://", 1)[0] + "://" if "://" in storage else ""
    for info in sorted(found, key=lambda i: i.base_name, reverse=True):  # the latest finalize first
        if info.type == pafs.FileType.Directory and info.base_name.startswith(f"{experiment}-final-"):
            folder = trial_checkpoint(prefix + info.path, trial_id)
            if folder:
                return folder
    return ""
