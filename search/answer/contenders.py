"""The two sides of the final comparison, chosen on dev from the trial table, and their per-seed
scores, configs and checkpoints as MLflow and Tune recorded them.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from search.answer.claims import Contender, Risk, failure_line
from search.tracking.outcome import COMPLETED
from search.tracking.records import CONFIG_ARTIFACT
from search.tracking.trial_record import TrialRecord
from spaces.canonical import canonical_key
from trainables.config import ConfigError, TrainConfig
from trainables.results import parse_seed_key

logger = logging.getLogger(__name__)


# -- choosing ---------------------------------------------------------------------
def choose(table: Sequence[TrialRecord], mode: str) -> tuple[TrialRecord, TrialRecord]:
    """The two sides of "does multitask training help the primary?", both chosen on dev (seed mean):
    the best completed trial with at least one auxiliary task, and the best completed single-task
    trial (the baseline, or one whose lr and warm-up the search tuned): both had the search's tuning,
    and may differ in every setting it chose (claim (a) names them; claim (b), the ablation, isolates
    the auxiliary tasks). Ties keep the table's order."""
    done = [r for r in table if r.status == COMPLETED and math.isfinite(r.objective)]
    done.sort(key=lambda r: r.objective, reverse=(mode != "min"))  # stable, descending too
    alone = [r for r in done if r.single_task]
    if not alone:
        raise ConfigError("the study has no completed single-task trial yet: continue it with --resume first")
    multitask = [r for r in done if not r.single_task]
    if not multitask:
        raise ConfigError("the study has no completed multitask trial yet: continue it with --resume first")
    return multitask[0], alone[0]


def ablation_row(winner: TrialRecord, config: TrainConfig) -> TrialRecord:
    """The ablation's record (it is no trial of the search): its label, its own run id for ``final_for``
    (its final runs are found again by it) and the ablated config's canonical key."""
    return TrialRecord(
        run_id=f"{winner.run_id}-ablation", label=f"{winner.label} without auxiliary tasks", key=canonical_key(config)
    )


def search_risk(table: Sequence[TrialRecord], floor: float, winner_key: str, other_key: str) -> Risk:
    """Failed seed runs of the search (:class:`~search.answer.claims.Risk`): of the winner's config and of the
    other side's (every trial with its canonical key), and of the whole study. A run failed at or below the
    failure line (:func:`~search.answer.claims.failure_line` from ``floor``, the dev majority rate, and the
    median seed run *trained as long*) or not finite, at its trial's last report (a seed that never reported is
    no run). Runs are measured against the median of their own budget (whole epochs trained): an early stopping
    search stops most trials at a screen point, and one median over every budget would sit between the
    screen's scores and the trained runs', moving with how many of each the study happened to hold."""
    finite: dict[int, list[float]] = {}
    for r in table:
        finite.setdefault(r.epochs, []).extend(v for v in r.objective_seeds.values() if math.isfinite(v))
    lines = {b: budget_line(floor, v) for b, v in finite.items()}
    counts = {"winner": [0, 0], "other": [0, 0], "study": [0, 0]}
    for r in table:
        line = lines[r.epochs]
        owners = ["study"] + [
            side for side, key in (("winner", winner_key), ("other", other_key)) if key and r.key == key
        ]
        for value in r.objective_seeds.values():
            failed = math.isinf(value) or (math.isfinite(line) and value <= line)
            for owner in owners:
                counts[owner][0] += failed
                counts[owner][1] += 1
    return Risk(*(tuple(counts[k]) for k in ("winner", "other", "study")))  # type: ignore[arg-type]


def budget_line(floor: float, values: Sequence[float]) -> float:
    """The failure line of the runs of one budget (``values``, finite): none (NaN) where their median is at or
    below ``floor``: a run can lose no gain its budget's typical run has not made (a screen point a quarter into
    epoch 1, where on real training every cell still scores the majority rate), only diverge."""
    typical = float(np.median(values)) if len(values) else math.nan
    return failure_line(floor, typical) if typical > floor + 1e-9 else math.nan  # a tie is no gain


def final_seeds(search_seeds: Sequence[int], k: int) -> list[int]:
    """K seeds the search never trained: a seed's luck on dev, which helped choose a config, would
    otherwise carry to its test score and favour the chosen side."""
    first = max(search_seeds, default=0) + 1
    return list(range(first, first + k))


def complete_finals(finals: Sequence[TrialRecord], run_id: str, epochs: int) -> list[TrialRecord]:
    """Earlier finalize runs of ``run_id`` that trained every epoch; a stopped or failed one is retrained."""
    return [r for r in finals if r.final_for == run_id and r.status == COMPLETED and r.epochs >= epochs]


def primary_test_metrics(row: TrialRecord, primary: str) -> list[str]:
    """The primary's test metrics ``row`` holds per seed (``semeval/test/acc_4way/seed<S>`` -> ``acc_4way``),
    each once, in first-seen order."""
    prefix = f"{primary}/test/"
    names: dict[str, None] = {}
    for key in row.metrics:
        parsed = parse_seed_key(key)
        if parsed and parsed[0].startswith(prefix):
            names[parsed[0][len(prefix) :]] = None
    return list(names)


def collect(contender: Contender, rows: Sequence[TrialRecord], primary: str, seeds: Sequence[int]) -> None:
    """Per-seed dev objective and test scores of ``rows`` (finalize's runs) for ``seeds`` only."""
    for row in rows:
        metrics = primary_test_metrics(row, primary)
        for seed, value in row.objective_seeds.items():
            tests = {m: row.seeded(f"{primary}/test/{m}").get(seed) for m in metrics}
            if seed not in seeds or seed in contender.dev or not metrics or any(v is None for v in tests.values()):
                continue  # a final seed counts once, and only with every test score
            contender.dev[seed] = value
            for m, v in tests.items():
                contender.test.setdefault(m, {})[seed] = float(v)  # type: ignore[arg-type]
            if row.checkpoint:
                contender.checkpoints[seed] = f"{row.checkpoint.rstrip('/')}/seed-{seed}.pt"


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
