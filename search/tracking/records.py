"""The names of a study's MLflow records, defined once: tags, metric keys, params, artifacts.

Written by the tracker, the runner and finalize; read by the report, finalize, ``--resume`` and
the tests. No MLflow or Ray here, so that any reader can import it. Layout of a study:

- the study's experiment holds one parent run per invocation (tag ``kind=study``,
  ``tune_experiment``; params :class:`Invocation`; metrics ``majority/dev/<metric>`` and, after
  finalize, ``final/...``; tags ``final_verdict``, ``final_winner``, ``final_model``);
- its children are the search's trials (``kind=trial``) and the seeds finalize trained
  (``kind=final``, ``final_for`` = the trial's run id): params :class:`TrialParams`, metrics per
  epoch ``objective``, ``objective_std``, ``<key>/mean``, ``<key>/std``, ``<key>/seed<S>``, ``primary_passes``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields

from spaces.canonical import STRATEGY_PARAMS, WEIGHTED, strategy_params, task_label
from trainables.config import ConfigError, TrainConfig
from trainables.exposure import PRIMARY_PASSES
from trainables.results import FAILURE_REASON, seed_key

# -- tags ---------------------------------------------------------------------------
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own: nests a trial's run under its study's
KIND_TAG = "kind"  # study | trial | final
STUDY_KIND, TRIAL_KIND, FINAL_KIND = "study", "trial", "final"
TUNE_EXPERIMENT_TAG = "tune_experiment"  # parent run: the invocation's Tune experiment name
TRIAL_ID_TAG = "trial_id"  # Tune's trial id: how the spool's sink finds a trial's run again
TRIAL_NUMBER_TAG = "trial"  # Optuna's number, as in ``t03``
CANONICAL_KEY_TAG = "canonical_key"
BASELINE_TAG = "baseline"  # "true" | "false"
EPOCHS_TAG = "epochs_trained"
FINAL_FOR_TAG = "final_for"  # a final run: the run id of the trial whose config it retrained
STATUS_TAG = "status"  # running | completed | pruned | failed | interrupted (KILLED with its study)
FAILURE_TAG = FAILURE_REASON  # why a trial failed (the trainable's own result key, same name)
END_REASON = "end_reason"  # tag of a run its study ended (KILLED, FAILED): why
RESUME_TAG = "resume"  # tag beside it: the command that continues the run, where it can be continued
VERDICT_TAG, WINNER_TAG, MODEL_TAG = "final_verdict", "final_winner", "final_model"  # parent run, after finalize
OPPONENT_TAG = "final_opponent"  # parent run: the best single-task trial the winner is compared with
PLACEMENT_TAGS = ("node_id", "node_ip", "hostname", "device", "cpu_fallback", "gpus_requested", "restored_from_epoch")

# -- artifacts ----------------------------------------------------------------------
CONFIG_ARTIFACT = "trial_config.json"  # a trial's whole flat TrainConfig, for retraining
REPORT_FOLDER = "report"  # the parent run's report files
FINAL_REPORT = f"{REPORT_FOLDER}/final.md"

# -- metrics ------------------------------------------------------------------------
OBJECTIVE, OBJECTIVE_STD = "objective", "objective_std"  # a trial's score under the study's objective
# a result at a screen point inside the first epoch is logged at step 0 (MLflow's steps are integers), with
# this metric holding the point (0.5): the learning-curve plot puts it there
SCREEN_EPOCH = "screen/epoch"
# passes over the primary's training rows so far (trainables.exposure): the trial's result key, logged under its
# own name at every step beside the scores, so a curve can be read against exposure as well as epochs
PASSES = PRIMARY_PASSES
MAJORITY_PREFIX = "majority/dev/"


def objective_seed_key(seed: int) -> str:
    """``objective/seed<S>``: one seed's objective (MLflow metric and trial-table column)."""
    return seed_key(OBJECTIVE, seed)


def majority_key(metric: str) -> str:
    """The parent run's metric of the majority floor on the primary's dev rows."""
    return MAJORITY_PREFIX + metric


def majority_of(metrics: Mapping[str, float]) -> dict[str, float]:
    """``{metric: floor}`` from a parent run's metrics."""
    return {k[len(MAJORITY_PREFIX) :]: v for k, v in metrics.items() if k.startswith(MAJORITY_PREFIX)}


def final_key(side: str, metric: str, part: str) -> str:
    """``final/winner/acc_4way/mean``, ``final/diff/acc_4way/low``: finalize's numbers on the parent run."""
    return f"final/{side}/{metric}/{part}"


def mean_key(key: str) -> str:
    """A result key's seed mean (``semeval/dev/acc_4way`` -> ``.../mean``)."""
    return f"{key}/mean"


def strip_mean(key: str) -> str:
    """``semeval/dev/acc_4way/mean`` -> ``semeval/dev/acc_4way``; other keys unchanged."""
    return key[: -len("/mean")] if key.endswith("/mean") else key


def objective_metric_of(objective: str, primary: str) -> str | None:
    """``semeval/dev/acc_4way/mean`` -> ``acc_4way``; None for objectives off the primary's dev split."""
    name = strip_mean(objective)
    prefix = f"{primary}/dev/"
    return name[len(prefix) :] if name.startswith(prefix) else None


# The format of what a study saves for ``--resume`` (Tune's pickles of the searcher, scheduler and callbacks, and
# the scheduler's state in the limiter's): one number, raised whenever a pickled class moves or changes its fields.
# A study saved in another format is refused in one line (:func:`check_resumable`), never converted.
STUDY_FORMAT = 1  # 0: the studies started before the format was recorded (2026-11-22 to 12-07)


@dataclass(frozen=True)
class Invocation:
    """How a study was started: its parent MLflow run's params, written once by ``search.run``
    and read back by ``--resume``, ``search.report`` and ``search.finalize``."""

    study: str
    preset: str
    search: str
    trials: int
    seeds: tuple[int, ...]
    objective: str  # the Tune result key the search ranks by
    mode: str  # max or min
    model: str
    epochs: int
    candidates: tuple[str, ...]  # the auxiliary tasks the search chooses from
    protocol: str
    tune_path: str  # the Tune experiment folder (credentials masked)
    optuna_storage: str  # credentials masked
    gpus_per_trial: float
    cpus_per_trial: float
    max_concurrent: int
    simulate: str = ""  # a simulated study's truth file (``--simulate``); "" for real training
    first_rung_seeds: int = 0  # seeds as a fidelity (``--first-rung-seeds``); 0: every trial trains every seed
    screen: float = 0.0  # the screen point inside the first epoch (``--screen-fraction``); 0: none
    train_rows: int = 0  # training rows per task at most (``--train-rows``, or sized to the pace); 0: the preset's
    eval_rows: int = 0  # the primary's dev and test rows at most (``--eval-rows``, or sized); 0: the preset's
    study_format: int = STUDY_FORMAT  # what the study saves for --resume; a run that records none saved format 0

    def to_params(self) -> dict[str, str]:
        out = {}
        for key, value in asdict(self).items():
            out[key] = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        return out

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Invocation:
        missing = [f.name for f in fields(cls) if f.name not in params and f.default is MISSING]
        if missing:
            raise ConfigError(f"MLflow params of a study run lack {', '.join(missing)}: not a run search.run started")
        types = {
            "trials": int,
            "epochs": int,
            "max_concurrent": int,
            "first_rung_seeds": int,
            "train_rows": int,
            "eval_rows": int,
            "study_format": int,
            "screen": float,
            "gpus_per_trial": float,
            "cpus_per_trial": float,
            "seeds": lambda v: tuple(int(s) for s in v.split(",") if s),
            "candidates": lambda v: tuple(filter(None, v.split(","))),
        }
        given = {f.name: types.get(f.name, str)(params[f.name]) for f in fields(cls) if f.name in params}
        return cls(**{"study_format": 0, **given})


def check_resumable(invocation: Invocation, name: str) -> None:
    """``--resume`` of a study saved in another format: refused in one line, with what to do instead."""
    if invocation.study_format != STUDY_FORMAT:
        raise ConfigError(
            f"--resume: study {name} was saved in study format {invocation.study_format}, this version reads "
            f"format {STUDY_FORMAT} only: resume it with the version that started it, or start a new study "
            "without --resume (this one's MLflow runs stay readable by search.report and search.finalize)"
        )


def readable(value: float) -> float:
    """Four significant digits: what a table column shows (``trial_config.json`` keeps every digit)."""
    return float(f"{value:.4g}")


@dataclass(frozen=True)
class TrialParams:
    """A trial's MLflow params: only what applies and tells trials apart (the whole config is
    the ``trial_config.json`` artifact)."""

    schema: str  # "single" for one task
    aux: str  # "sst2+pos" or "none"
    lr: float
    warmup: float
    batch_size: int
    epochs: int
    model: str
    tasks: str
    seeds: str
    exponent: float | None = None  # power only
    anneal_c: float | None = None  # anneal only
    weights: str | None = None  # schemas that read the weights, with more than one task
    strategy: tuple[tuple[str, str], ...] = ()  # issue 19's, only where they apply (spaces.canonical.strategy_params)

    @classmethod
    def of(cls, config: TrainConfig, seeds: Sequence[int]) -> TrialParams:
        multitask = len(config.tasks) > 1
        schema = config.sampling.schema if multitask else "single"
        weighted = multitask and schema in WEIGHTED
        return cls(
            schema=schema,
            aux="+".join(task_label(t) for t in config.tasks if t != config.primary) or "none",
            lr=readable(config.lr),
            warmup=readable(config.warmup),
            batch_size=config.batch_size,
            epochs=config.epochs,
            model=config.encoder.model,
            tasks=",".join(map(task_label, config.tasks)),
            seeds=",".join(map(str, seeds)),
            exponent=readable(config.sampling.exponent) if schema == "power" else None,
            anneal_c=readable(config.sampling.anneal_c) if schema == "anneal" else None,
            weights=",".join(f"{task_label(t)}={w:g}" for t, w in zip(config.tasks, config.task_weights()))
            if weighted
            else None,
            strategy=tuple(strategy_params(config).items()),
        )

    def to_params(self) -> dict[str, str]:
        out = {k: str(v) for k, v in asdict(self).items() if v is not None and k != "strategy"}
        return out | dict(self.strategy)

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> TrialParams:
        types = {"lr": float, "warmup": float, "batch_size": int, "epochs": int, "exponent": float, "anneal_c": float}
        values = {f.name: types.get(f.name, str)(params[f.name]) for f in fields(cls) if f.name in params}
        values["strategy"] = tuple((k, params[k]) for k in STRATEGY_PARAMS if k in params)
        try:
            return cls(**values)
        except TypeError:
            raise ConfigError(
                f"MLflow params {sorted(params)}: not a trial's (expected {[f.name for f in fields(cls)]})"
            ) from None


# -- the registered model -----------------------------------------------------------
@dataclass(frozen=True)
class ModelCard:
    """What a registered model is, beside its config: written by finalize as the version's tags and
    description and as the model directory's ``about.json`` (:meth:`about`), which ``predict`` and
    the REST server read. The dev score is the study's metric over the final seeds; the majority
    rate is the constant predictor's score on the same dev rows (parent metric ``majority/dev/...``);
    ``low``/``high`` bound ``dev - majority`` (95%, t over the seeds)."""

    study: str
    preset: str
    metric: str  # the study's dev metric, e.g. acc_4way
    dev_mean: float
    dev_std: float
    seeds: tuple[int, ...]  # the final seeds the dev score is over
    majority: float  # NaN: the objective is no dev metric of the primary, no floor to compare with
    low: float
    high: float
    above_majority: bool  # the interval lies above the majority rate (search.answer.stats.beats_constant)
    verdict: str  # the study's verdict on test, with its metric

    def to_tags(self) -> dict[str, str]:
        """Version tags ``card.<field>``: one per field, numbers with every digit."""
        out = {f"{CARD_PREFIX}{k}": str(v) for k, v in asdict(self).items()}
        out[f"{CARD_PREFIX}seeds"] = ",".join(map(str, self.seeds))
        out[f"{CARD_PREFIX}above_majority"] = str(self.above_majority).lower()
        return out

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> ModelCard:
        values = {f.name: tags.get(CARD_PREFIX + f.name) for f in fields(cls)}
        missing = [k for k, v in values.items() if v is None]
        if missing:
            raise ConfigError(f"model version tags lack {', '.join(CARD_PREFIX + k for k in missing)}")
        floats = ("dev_mean", "dev_std", "majority", "low", "high")
        values.update({k: float(values[k]) for k in floats})
        values["seeds"] = tuple(int(s) for s in values["seeds"].split(",") if s)
        values["above_majority"] = values["above_majority"] == "true"
        return cls(**values)

    def summary(self) -> str:
        """One line: the preset, the dev score beside the majority rate, the verdict."""
        seeds = ",".join(map(str, self.seeds))
        floor = f"majority rate {self.majority:.4f} on the same dev rows" if self.majority == self.majority else ""
        return (
            f"{self.study}, {self.preset} preset: dev {self.metric} {self.dev_mean:.4f} ± {self.dev_std:.4f} "
            f"over final seeds {seeds}" + (f" against a {floor}" if floor else "") + f"; study verdict: {self.verdict}"
        )

    def caveat(self) -> str | None:
        """Where the dev score is not above the majority rate beyond seed noise: say so (None otherwise)."""
        if self.above_majority or self.majority != self.majority:
            return None
        where = (
            f"too few seeds ({len(self.seeds)}) to tell it from the majority rate {self.majority:.4f}"
            if self.low > 0  # an interval above the floor that still does not count: fewer than 3 seeds
            else f"within seed noise of the majority rate {self.majority:.4f} or below it"
        )
        return (
            f"this model ({self.study}, {self.preset} preset) is not shown to beat a constant predictor: its dev "
            f"{self.metric} {self.dev_mean:.4f} is {where} (95% interval of dev - majority "
            f"[{self.low:+.4f}, {self.high:+.4f}] over seeds {','.join(map(str, self.seeds))}); "
            "it demonstrates the machinery, do not use its predictions"
        )

    def about(self) -> dict[str, object]:
        """The model directory's ``about.json``: the card's fields, its summary and its caveat."""
        plain = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in asdict(self).items()}
        return {**plain, "seeds": list(self.seeds), "summary": self.summary(), "caveat": self.caveat()}


CARD_PREFIX = "card."  # a registered version's tags from its ModelCard
