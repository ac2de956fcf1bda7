"""The two sides of the final comparison, chosen on dev from the trial table, and their per-seed
scores, configs and checkpoints as MLflow and Tune recorded them.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

import pandas as pd

from search.answer.comparison import Contender
from search.tracking.outcome import COMPLETED
from search.tracking.records import CONFIG_ARTIFACT, objective_per_seed, strip_mean
from trainables.config import ConfigError, TrainConfig
from trainables.results import per_seed

logger = logging.getLogger(__name__)


# -- choosing ---------------------------------------------------------------------
def choose(table: pd.DataFrame, mode: str) -> tuple[pd.Series, pd.Series]:
    """The best completed multitask trial by dev objective (seed mean), and the baseline."""
    done = table[(table.status == COMPLETED) & table.objective.notna()]
    baseline = done[done.baseline]
    if baseline.empty:
        raise ConfigError("the study has no completed baseline trial yet: continue it with --resume first")
    others = done[~done.baseline].sort_values("objective", ascending=(mode == "min"))
    if others.empty:
        raise ConfigError("the study has no completed multitask trial yet: continue it with --resume first")
    return others.iloc[0], baseline.iloc[0]


def primary_test_metrics(table: pd.DataFrame, primary: str) -> list[str]:
    """The primary task's test metrics that hold per-seed values, in first-seen order."""
    names = []
    for column in table.columns:
        if isinstance(column, str) and column.startswith(f"{primary}/test/") and "/seed" in column:
            name = column[len(f"{primary}/test/") :].rsplit("/seed", 1)[0]
            if name not in names:
                names.append(name)
    return names


def collect(contender: Contender, rows: list[pd.Series], primary: str, metrics: list[str]) -> None:
    """Per-seed dev objective and test scores of ``rows`` (the trial, then earlier finalize runs)."""
    for row in rows:
        for seed, value in objective_per_seed(row).items():
            tests = {m: per_seed(row, f"{primary}/test/{m}").get(seed) for m in metrics}
            if seed in contender.dev or any(v is None for v in tests.values()):
                continue  # a seed counts once, and only with every test score
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


def majority_on_test(config: TrainConfig) -> dict[str, float]:
    """The constant predictor's scores on the primary's test rows as the trials saw them (same limit)."""
    from trainables.batching import limit_rows
    from trainables.majority import majority_scores
    from trainables.tasks import get_task

    task = get_task(config.primary, Path(config.data_dir), config.protocol)
    rows = task.examples("test")
    return majority_scores(
        task, [rows[i] for i in limit_rows(len(rows), config.max_eval_examples, task.group_size, first=True)]
    )


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
