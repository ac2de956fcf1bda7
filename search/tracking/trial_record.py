"""One trial as the study's answer reads it: :class:`TrialRecord`, a row of the trial table.

Made from a trial's MLflow run (:meth:`TrialRecord.of_run`: what :mod:`search.tracking.tracker` logged,
read back by :func:`search.tracking.runs.trial_table`) or from a simulated study's ended trial
(:meth:`TrialRecord.of_ended`); read by the report's ranking and finalize's choice of sides and claims.
A table is made of records only where one is drawn or written: :meth:`TrialRecord.columns` are the
columns of ``trials.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from search.tracking import records as rec
from search.tracking.outcome import COMPLETED, FAILED, PRUNED, outcome_of
from search.tracking.records import TrialParams
from trainables.config import ConfigError
from trainables.fidelity import SEED_COUNT
from trainables.results import DEGENERATE, parse_seed_key, per_seed
from trainables.trial import TrialConfig

RUNNING, INTERRUPTED = "running", "interrupted"  # a run's status tag before its end, or cut off with its study
STATUSES = (COMPLETED, PRUNED, FAILED, RUNNING, INTERRUPTED, "")  # "": a record that is no trial (the ablation)


class EndedTrial(Protocol):
    """What :meth:`TrialRecord.of_ended` reads of a simulated study's trial (``search.simulation.trial.SimTrial``)."""

    trial_id: str
    number: int
    last_result: dict[str, Any]
    epoch: int

    @property
    def trial_config(self) -> TrialConfig: ...

    @property
    def seeds(self) -> list[int]: ...


@dataclass(frozen=True)
class TrialRecord:
    """A trial's config as its params name it, its status, and its scores at the last epoch it reported."""

    run_id: str  # the MLflow run (a simulated trial: its Tune trial id; the ablation: ``<winner's>-ablation``)
    label: str  # the run name, ``t03 sst2+pos square``
    status: str = ""  # one of STATUSES
    number: int = -1  # the Optuna trial's number; -1 where none was recorded
    key: str = ""  # the canonical config key (spaces.canonical)
    baseline: bool = False  # the single-task baseline the study always trains
    auxiliary: str = ""  # the auxiliary tasks, ``sst2+pos``, or ``none``
    schema: str = ""  # the sampling schema, ``single`` for one task
    exponent: float = math.nan  # power only
    anneal_c: float = math.nan  # anneal only
    lr: float = math.nan
    warmup: float = math.nan
    batch_size: int = 0
    epochs: int = 0  # epochs trained
    seeds: str = ""  # the seeds it trains, ``1,2,3``
    node: str = ""
    device: str = ""
    objective: float = math.nan  # the objective's seed mean at the last epoch
    objective_std: float = math.nan
    start_time: int = 0  # ms since the epoch (MLflow's)
    final_for: str = ""  # a final run: the run id of the trial whose config it trained again
    checkpoint: str = ""  # a final run: its checkpoint folder (local or URI), where finalize found one
    objective_metric: str = ""  # the metric whose seed mean is the objective: ``semeval/dev/acc_4way``
    metrics: Mapping[str, float] = field(default_factory=dict)  # every metric's last value, by name

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ConfigError(f"trial {self.label or self.run_id}: status {self.status!r}, expected one of {STATUSES}")
        for name in ("number", "batch_size", "epochs", "start_time"):
            if not isinstance(getattr(self, name), int):
                raise ConfigError(f"trial {self.label or self.run_id}: {name} {getattr(self, name)!r} is no integer")

    # -- what the answer reads ------------------------------------------------------
    @property
    def single_task(self) -> bool:
        """It trained the primary alone: the baseline, or a trial whose space left every auxiliary off."""
        return self.baseline or self.auxiliary == "none"

    @property
    def objective_seeds(self) -> dict[int, float]:
        """``{seed: objective}`` at the last epoch (a seed that never reported is missing)."""
        return per_seed(self.metrics, self.objective_metric) if self.objective_metric else {}

    def mean(self, name: str) -> float:
        """The seed mean of ``name`` (``semeval/test/acc_4way``); NaN where the run has none."""
        return float(self.metrics.get(f"{name}/mean", math.nan))

    def std(self, name: str) -> float:
        """The seed std beside :meth:`mean`; NaN where the run has no mean of ``name``."""
        return float(self.metrics.get(f"{name}/std", math.nan)) if f"{name}/mean" in self.metrics else math.nan

    def seeded(self, name: str) -> dict[int, float]:
        """``{seed: value}`` of ``name`` (``semeval/test/acc_4way``)."""
        return per_seed(self.metrics, name)

    @property
    def last_point(self) -> float:
        """Where it last reported, in epochs: its whole epochs, else the screen point inside the first."""
        return float(self.epochs) or float(self.metrics.get(rec.SCREEN_EPOCH, self.metrics.get("epoch", 0.0)))

    def degenerate_seeds(self) -> dict[int, bool]:
        """``{seed: degenerate}`` at its last report, as the trainer read it off the predictions
        (``trainables.degenerate``); empty where the run recorded no flag."""
        return {s: v > 0 for s, v in per_seed(self.metrics, DEGENERATE).items()}

    @property
    def seed_epochs(self) -> float:
        """The compute it spent: the point it last reported (its whole epochs, else the screen point inside the
        first) times the seeds it had there (``seeds/trained`` under a seed schedule, else every seed): a
        schedule's added seeds catch up, so that product is what they trained."""
        point = self.last_point
        seeds = self.metrics.get(SEED_COUNT) or len([s for s in self.seeds.split(",") if s]) or 1
        return point * float(seeds)

    def columns(self) -> dict[str, Any]:
        """The record as a row of ``trials.csv``: its fields, its passes over the primary's training rows
        (``primary_passes``), the objective per seed (``objective/seed<S>``) and every dev and test score
        (``{task}/{split}/{metric}`` mean, ``... std``, per seed ``.../seed<S>``)."""
        row: dict[str, Any] = {
            "trial": self.number,
            "label": self.label,
            "run_id": self.run_id,
            "status": self.status,
            "canonical_key": self.key,
            "baseline": self.baseline,
            "auxiliary": self.auxiliary,
            "schema": self.schema,
            "exponent": self.exponent,
            "anneal_c": self.anneal_c,
            "lr": self.lr,
            "warmup": self.warmup,
            "batch_size": self.batch_size,
            "epochs": self.epochs,
            "seeds": self.seeds,
            "node": self.node,
            "device": self.device,
            rec.OBJECTIVE: self.objective,
            rec.OBJECTIVE_STD: self.objective_std,
            "start_time": self.start_time,
            "final_for": self.final_for,
            "seed_epochs": self.seed_epochs,
            rec.PASSES: float(self.metrics.get(rec.PASSES, math.nan)),  # NaN: a study from before it was counted
        }
        for key, value in self.metrics.items():
            name = key[: -len("/mean")]
            if key.endswith("/mean") and ("/dev/" in key or "/test/" in key):
                row[name] = value
                row[name + " std"] = self.metrics.get(name + "/std", math.nan)
            seeded = parse_seed_key(key)
            if seeded and seeded[0] == self.objective_metric:
                row[rec.objective_seed_key(seeded[1])] = value
            if seeded and ("/dev/" in key or "/test/" in key):
                row[key] = value
        return row

    # -- made from ----------------------------------------------------------------------
    @classmethod
    def of_run(cls, run, objective_metric: str) -> TrialRecord:
        """A trial's (or a final run's) MLflow run, as the tracker logged it; ``objective_metric``: the
        study's objective without ``/mean``."""
        t, m = run.data.tags, run.data.metrics
        p = TrialParams.from_params(run.data.params)
        return cls(
            run_id=run.info.run_id,
            label=run.info.run_name,
            status=t.get(rec.STATUS_TAG, RUNNING),
            number=tag_int(run, rec.TRIAL_NUMBER_TAG, -1),
            key=t.get(rec.CANONICAL_KEY_TAG, ""),
            baseline=t.get(rec.BASELINE_TAG) == "true",
            **config_fields(p),
            epochs=tag_int(run, rec.EPOCHS_TAG, 0),
            seeds=p.seeds,
            node=t.get("hostname", ""),
            device=t.get("device", ""),
            objective=m.get(rec.OBJECTIVE, math.nan),
            objective_std=m.get(rec.OBJECTIVE_STD, math.nan),
            start_time=run.info.start_time,
            final_for=t.get(rec.FINAL_FOR_TAG, ""),
            objective_metric=objective_metric,
            metrics=dict(sorted(m.items())),
        )

    @classmethod
    def of_ended(cls, trial: EndedTrial, objective: str, max_epochs: int) -> TrialRecord:
        """A simulated study's ended trial, its scores at the last epoch it reported; ``objective``: the
        study's (``semeval/dev/acc_4way/mean``); ``max_epochs``: the epoch that completes a trial."""
        config = trial.trial_config
        p = TrialParams.of(config.training(), trial.seeds)
        result = trial.last_result
        return cls(
            run_id=trial.trial_id,
            label=config.label or trial.trial_id,
            status=outcome_of(result, max_epochs),
            number=trial.number,
            key=config.key or trial.trial_id,
            baseline=config.baseline,
            **config_fields(p),
            epochs=int(trial.epoch),  # whole epochs: a trial stopped at the screen point trained none
            seeds=p.seeds,
            objective=float(result.get(objective, math.nan)),
            objective_metric=rec.strip_mean(objective),
            metrics={k: float(v) for k, v in result.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
        )


def tag_int(run, tag: str, default: int) -> int:
    """An integer tag of ``run``, ``default`` where it has none; a clear error where it is no integer."""
    value = run.data.tags.get(tag)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"MLflow run {run.info.run_id}: tag {tag!r} is {value!r}, expected an integer") from None


def config_fields(p: TrialParams) -> dict[str, Any]:
    """The record's fields that come from the trial's params (an unset exponent or anneal_c is NaN)."""
    return {
        "auxiliary": p.aux,
        "schema": p.schema,
        "exponent": math.nan if p.exponent is None else p.exponent,
        "anneal_c": math.nan if p.anneal_c is None else p.anneal_c,
        "lr": p.lr,
        "warmup": p.warmup,
        "batch_size": p.batch_size,
    }
