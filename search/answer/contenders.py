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

from search.answer.claims import Contender, Risk, rate_bound
from search.tracking.outcome import COMPLETED
from search.tracking.records import CONFIG_ARTIFACT
from search.tracking.trial_record import TrialRecord
from spaces.canonical import canonical_key
from trainables.config import ConfigError, TrainConfig
from trainables.results import DEGENERATE_UNTIL, LEARNED_UNTIL, parse_seed_key, per_seed

logger = logging.getLogger(__name__)


# -- choosing ---------------------------------------------------------------------
def choose(table: Sequence[TrialRecord], mode: str) -> tuple[TrialRecord, TrialRecord]:
    """The two sides of "does multitask training help the primary?", both chosen on dev (seed mean):
    the best completed trial with at least one auxiliary task, and the best completed single-task
    trial (the baseline, or one whose lr and warm-up the search tuned): both had the search's tuning,
    and may differ in every setting it chose (claim (a) names them; claim (b), the ablation, isolates
    the auxiliary tasks). A trial whose model is degenerate (:func:`is_degenerate`) is neither. Ties keep the
    table's order."""
    done = [r for r in table if r.status == COMPLETED and math.isfinite(r.objective) and not is_degenerate(r)]
    done.sort(key=lambda r: r.objective, reverse=(mode != "min"))  # stable, descending too
    alone = [r for r in done if r.single_task]
    if not alone:
        raise ConfigError(
            "the study has no completed single-task trial that learned (none, or every one predicts one answer): "
            "continue it with --resume, or train longer or at another lr"
        )
    multitask = [r for r in done if not r.single_task]
    if not multitask:
        raise ConfigError(
            "the study has no completed multitask trial that learned (none, or every one predicts one answer): "
            "continue it with --resume, or train longer or at another lr"
        )
    return multitask[0], alone[0]


def ablation_row(winner: TrialRecord, config: TrainConfig) -> TrialRecord:
    """The ablation's record (it is no trial of the search): its label, its own run id for ``final_for``
    (its final runs are found again by it) and the ablated config's canonical key."""
    return TrialRecord(
        run_id=f"{winner.run_id}-ablation", label=f"{winner.label} without auxiliary tasks", key=canonical_key(config)
    )


def seed_failures(row: TrialRecord, floor: float) -> dict[int, bool]:
    """``{seed: degenerate}`` of a run at its last report: the trainer's flag (``trainables.degenerate``: its
    predictions constant), else, for a run that recorded none, a score that is not finite or no better than the
    constant predictor (at or below ``floor``, the majority rate)."""
    flags = row.degenerate_seeds()
    out = {}
    for seed, value in row.objective_seeds.items():
        if seed in flags:
            out[seed] = flags[seed] or not math.isfinite(value)
        else:
            out[seed] = not math.isfinite(value) or (math.isfinite(floor) and value <= floor + 1e-9)
    return out


def is_degenerate(row: TrialRecord) -> bool:
    """Whether most of a trial's seeds ended degenerate (its trainer's flags): such a model learned nothing, and
    is never a side of the final comparison, however its dev score ranks."""
    flags = list(row.degenerate_seeds().values())
    return bool(flags) and sum(flags) * 2 > len(flags)


def transient_points(table: Sequence[TrialRecord]) -> float:
    """The latest point at which a run of the study was degenerate and then learned (0: none seen): degenerate
    there is no failure, only a late start. On the real-curve table 22% of runs predict one answer after epoch 1
    of 3 and none after epoch 3 (benchmarks/README.md): a run stopped early says nothing of how it would end."""
    latest = 0.0
    for r in table:
        until = per_seed(r.metrics, DEGENERATE_UNTIL)
        for seed, failed in r.degenerate_seeds().items():
            if not failed and until.get(seed, 0.0) > 0:
                latest = max(latest, until[seed])
    return latest


def kin(a: TrialRecord, b: TrialRecord) -> bool:
    """Configs alike in what makes a config prone to fail: an auxiliary task in common or the same schema, at an
    lr within a factor of 2 (where both record one). Failures of PoS cells say little of an SST-2 + Sentihood one."""
    if a.key == b.key:
        return False
    tasks = set(a.auxiliary.split("+")) & set(b.auxiliary.split("+")) - {"", "none"}
    alike = bool(tasks) or (a.schema and a.schema == b.schema)
    return bool(alike and close_lr(a, b))


def close_lr(a: TrialRecord, b: TrialRecord) -> bool:
    """lrs within a factor of 2 (or either unrecorded)."""
    return not (math.isfinite(a.lr) and math.isfinite(b.lr) and a.lr > 0 and b.lr > 0) or (
        abs(math.log(a.lr / b.lr)) <= math.log(KIN_LR_FACTOR) + 1e-9
    )


KIN_LR_FACTOR = 2.0


def search_risk(table: Sequence[TrialRecord], floor: float, winner_key: str, other_key: str) -> Risk:
    """Failed seed runs of the search (:class:`~search.answer.claims.Risk`): of the winner's config, of the other
    side's (every trial with its canonical key), of the configs kin to the winner's (:func:`kin`) and of the
    whole study. A run failed where it ended degenerate (:func:`seed_failures`): at its trial's last report if
    the trial completed; a run stopped early only where it never learned (a run that learned and then fell to
    a constant answer before its stop has not shown how it ends: on the real-curve table every run at the
    majority rate after epoch 2 of 3 had beaten it before, and beat it again after epoch 3) and no run of the
    study was seen to learn after being degenerate at its stop point or later (:func:`transient_points`). A
    weak run (it learned, a little) is no failure: it loses on dev."""
    late = transient_points(table)
    winner = next((r for r in table if r.key == winner_key), None)
    groups = sorted(features(winner)) if winner is not None else []
    failures = [counted_failures(r, floor, late) for r in table]
    broken = [features(r) for r, f in zip(table, failures) if any(f)]  # the failed configs' features
    told = explaining(broken, winner)
    counts = {"winner": [0, 0], "other": [0, 0], "study": [0, 0], "kin": [0, 0], "alike": [0, 0]}
    counts |= {g: [0, 0] for g in groups}
    for r, failed_runs in zip(table, failures):
        owners = ["study"] + [
            side for side, key in (("winner", winner_key), ("other", other_key)) if key and r.key == key
        ]
        apart = bool(told & features(r))  # its failures are told's, not the winner's features'
        if winner is not None and kin(r, winner) and not apart:
            owners.append("kin")
        if winner is not None and (r.key == winner_key or close_lr(r, winner)) and not apart:
            owners += sorted(set(groups) & features(r))
        if winner is not None and r.key != winner_key and alike(r, winner):
            owners.append("alike")
        for failed in failed_runs:
            for owner in owners:
                counts[owner][0] += failed
                counts[owner][1] += 1
    # the likeliest to fail of the groups that did fail (its bound: a small group that failed says more than a
    # large one), else the largest group
    group = max((counts[g] for g in groups), key=lambda c: (1, rate_bound(*c)) if c[0] else (0, c[1]), default=[0, 0])
    sides = (tuple(counts[k]) for k in ("winner", "other", "study", "kin"))
    unexplained = winner is not None and bool(broken) and not set.intersection(*broken)
    return Risk(*sides, group=tuple(group), alike=tuple(counts["alike"]), unexplained=unexplained)  # type: ignore[arg-type]


def counted_failures(row: TrialRecord, floor: float, late: float) -> list[bool]:
    """Per seed run of ``row``, whether it counts as failed (:func:`search_risk`): degenerate at its last report,
    unless its trial was stopped at or before ``late`` (:func:`transient_points`) or after the run had learned."""
    stopped, learned = row.status != COMPLETED, per_seed(row.metrics, LEARNED_UNTIL)
    return [
        failed and not (stopped and (row.last_point <= late or learned.get(seed, 0.0) > 0))
        for seed, failed in seed_failures(row, floor).items()
    ]


def explaining(failed: Sequence[set[str]], winner: TrialRecord | None) -> set[str]:
    """The features (:func:`features`) every failed run of the study has (``failed``: its configs' features), where
    the winner has none of those: a cause outside the winner explains every failure, and no feature of the winner's
    is needed for one (empty where one may be: a single failed config kin to the winner leaves the feature they
    share as likely a cause as the rest; a failed single-task run has no feature, so nothing explains it). On
    weak_configs every failure is a PoS config's under square, and SST-2 + Sentihood under sqrt shares SST-2 with
    one failed config and Sentihood with another: those failures are PoS-square's."""
    if winner is None or not failed:
        return set()
    common = set.intersection(*failed)
    return set() if common & features(winner) else common


def alike(a: TrialRecord, winner: TrialRecord) -> bool:
    """Whether nothing the winner lacks tells ``a``'s failures from the winner's: ``a`` is made only of the winner's
    features (at any lr), or it is single-task at a like lr (made of none, only its lr tells it apart)."""
    mine = features(a)
    return mine <= features(winner) and (bool(mine) or close_lr(a, winner))


def features(row: TrialRecord) -> set[str]:
    """What a config is made of, as far as failing goes: its auxiliary tasks and its schema."""
    tasks = set(row.auxiliary.split("+")) - {"", "none"}
    return tasks | ({f"schema:{row.schema}"} if row.schema and tasks else set())


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
        metrics, flags = primary_test_metrics(row, primary), row.degenerate_seeds()
        for seed, value in row.objective_seeds.items():
            tests = {m: row.seeded(f"{primary}/test/{m}").get(seed) for m in metrics}
            if seed not in seeds or seed in contender.dev or not metrics or any(v is None for v in tests.values()):
                continue  # a final seed counts once, and only with every test score
            contender.dev[seed] = value
            if seed in flags:
                contender.degenerate[seed] = flags[seed]
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
