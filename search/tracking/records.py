"""TODO docstring
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

from spaces.canonical import WEIGHTED
from trainables.config import ConfigError, TrainConfig

logger = logging.getLogger(__name__)


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

    def to_params(self) -> dict[str, str]:
        out = {}
        for key, value in asdict(self).items():
            out[key] = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        return out

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Invocation:
        missing = [f.name for f in fields(cls) if f.name not in params]
        if missing:
            raise ConfigError(f"MLflow params of a study run lack {', '.join(missing)}: not a run search.run started")
        types = {
            "trials": int,
            "epochs": int,
            "max_concurrent": int,
            "gpus_per_trial": float,
            "cpus_per_trial": float,
            "seeds": lambda v: tuple(int(s) for s in v.split(",") if s),
            "candidates": lambda v: tuple(filter(None, v.split(","))),
        }
        return cls(**{f.name: types.get(f.name, str)(params[f.name]) for f in fields(cls)})


FINAL_KIND = "final"  # tag kind of the runs finalize trains


STATUS_TAG = "status"  # running | completed | pruned | failed | interrupted (KILLED with its study)


CONFIG_ARTIFACT = "trial_config.json"


END_REASON = "end_reason"  # tag of a run its study ended (KILLED, FAILED): why


RESUME_TAG = "resume"  # tag beside it: the command that continues the run, where it can be continued


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

    @classmethod
    def of(cls, config: TrainConfig, seeds: Sequence[int]) -> TrialParams:
        multitask = len(config.tasks) > 1
        schema = config.sampling.schema if multitask else "single"
        weighted = multitask and schema in WEIGHTED
        return cls(
            schema=schema,
            aux="+".join(t for t in config.tasks if t != config.primary) or "none",
            lr=readable(config.lr),
            warmup=readable(config.warmup),
            batch_size=config.batch_size,
            epochs=config.epochs,
            model=config.encoder.model,
            tasks=",".join(config.tasks),
            seeds=",".join(map(str, seeds)),
            exponent=readable(config.sampling.exponent) if schema == "power" else None,
            anneal_c=readable(config.sampling.anneal_c) if schema == "anneal" else None,
            weights=",".join(f"{t}={w:g}" for t, w in zip(config.tasks, config.task_weights())) if weighted else None,
        )

    def to_params(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> TrialParams:
        types = {"lr": float, "warmup": float, "batch_size": int, "epochs": int, "exponent": float, "anneal_c": float}
        values = {f.name: types.get(f.name, str)(params[f.name]) for f in fields(cls) if f.name in params}
        try:
            return cls(**values)
        except TypeError:
            raise ConfigError(
                f"MLflow params {sorted(params)}: not a trial's (expected {[f.name for f in fields(cls)]})"
            ) from None
