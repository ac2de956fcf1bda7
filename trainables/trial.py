"""One Tune trial's config as a typed record: what the searcher (or finalize) hands a trainable.

It is a dict only at the Tune boundary: :meth:`TrialConfig.to_tune` where Tune takes it (a search
trial's suggestion, the study's param space, finalize's grid of whole configs, nested under ``trial``),
:meth:`TrialConfig.of_tune` where a trainable or a callback reads a Tune trial's config back. Tune merges
a search trial's suggestion over the param space, so :meth:`~TrialConfig.to_tune` leaves out what is
unset: the suggestion carries the config and its names, the param space the seeds and the seed schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from trainables.config import ConfigError, TrainConfig
from trainables.fidelity import FIDELITY, SCREEN, SeedSchedule, check_screen, report_points

NESTED = "trial"  # finalize's grid_search over whole configs nests each under this key


@dataclass(frozen=True)
class TrialConfig:
    train: TrainConfig | None = None  # None only in the param space, which the suggestion completes
    seeds: tuple[int, ...] = ()  # every seed the trial trains
    key: str = ""  # the canonical config key (searcher, tracker, finalize)
    label: str = ""  # the run name, ``t03 sst2+pos square``
    baseline: bool = False  # the single-task baseline: never stopped, trains its seeds from the start
    number: int | None = None  # the Optuna trial's number
    choices: Mapping[str, Any] = field(default_factory=dict)  # the searcher's choices, flattened
    metric: str = ""  # the objective, where the trainable is not given it
    kind: str = ""  # the MLflow run kind (finalize's ``final``); "": a search trial
    final_for: str = ""  # finalize: the run of the search trial whose config this trains again
    fidelity: Mapping[str, Any] | None = None  # :meth:`SeedSchedule.to_dict` of the study's seed schedule
    screen: float | None = None  # the fraction of the first epoch after which a search trial first reports

    def to_tune(self) -> dict[str, Any]:
        """The set fields as Tune's config dict (``train`` as :meth:`TrainConfig.to_dict`, ``seeds`` a list)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            default = f.default_factory() if callable(f.default_factory) else f.default
            if value == default:
                continue
            if isinstance(value, TrainConfig):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[FIDELITY if f.name == "fidelity" else f.name] = value
        return out

    @classmethod
    def of_tune(cls, config: Mapping[str, Any]) -> TrialConfig:
        """A Tune trial's config read back (a config finalize nested under ``trial`` lifted first)."""
        flat = {**config, **config.get(NESTED, {})}
        train = flat.get("train")
        try:
            return cls(
                train=None if train is None else TrainConfig.from_dict(train),
                seeds=tuple(int(s) for s in flat.get("seeds", ())),
                key=str(flat.get("key", "")),
                label=str(flat.get("label", "")),
                baseline=bool(flat.get("baseline", False)),
                number=None if flat.get("number") is None else int(flat["number"]),
                choices=dict(flat.get("choices", {})),
                metric=str(flat.get("metric") or ""),
                kind=str(flat.get("kind", "")),
                final_for=str(flat.get("final_for", "")),
                fidelity=flat.get(FIDELITY) or None,
                screen=check_screen(None if flat.get(SCREEN) is None else float(flat[SCREEN]), "trial screen"),
            )
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:  # a train dict short of a field, a seed or number not a number
            raise ConfigError(f"Tune trial config {sorted(flat)}: not a trial's ({exc})") from None

    def training(self) -> TrainConfig:
        """:attr:`train`, which every trial's config has (only the param space leaves it out)."""
        if self.train is None:
            raise ConfigError(f"Tune trial config {self.label or self.key or '?'}: no 'train' (a param space?)")
        return self.train

    def points(self) -> tuple[float, ...]:
        """Where this trial evaluates dev and reports, in epochs (:func:`~trainables.fidelity.report_points`).
        A final run reports once, after its last epoch: only its last scores count, and an interrupted
        finalize trains its runs afresh, so scoring dev after every epoch would cost (a sixth of the default
        run's final phase, issue 30) and serve nothing."""
        epochs = self.training().epochs
        return (float(epochs),) if self.final_for else report_points(epochs, self.screen)

    def schedule(self) -> SeedSchedule:
        """The seeds this trial trains at each epoch (every seed without a schedule; the baseline every seed, or
        the first rung's where the schedule says so)."""
        return SeedSchedule.of(self.fidelity, self.baseline, len(self.seeds))
