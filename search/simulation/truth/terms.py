"""The terms of a truth that match configs: bonuses, learning curves, collapses (docs/truth-files.md).

Each is a frozen table read from a truth file (``search.simulation.truth.reading``) with one question
about a canonical :class:`TrainConfig`: does it apply, and what does it give. Pure functions of the
config: no Ray, no torch, no data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainables.config import TrainConfig
from trainables.tasks import declared_name

STATIC_EXPONENTS = {"random": 0.0, "sqrt": 0.5, "prop": 1.0, "square": 2.0}  # p ∝ w**a, a fixed
Interval = tuple[float, float]  # [low, high], both ends included


def task_name(spec: str) -> str:
    """``semeval:NLI_M`` -> ``semeval``: a truth names tasks as their metric keys do."""
    return declared_name(spec)


def auxiliary_of(config: TrainConfig) -> frozenset[str]:
    return frozenset(task_name(t) for t in config.tasks if t != config.primary)


def exponent_of(config: TrainConfig) -> float | None:
    """The fixed exponent of a static schema (``power``'s own); None for any other distribution
    (round robin, anneal, the bandit, one batch of every task per step)."""
    schema = config.sampling.schema
    if config.optim.step_mode == "all" or schema not in (*STATIC_EXPONENTS, "power"):
        return None
    return float(config.sampling.exponent) if schema == "power" else STATIC_EXPONENTS[schema]  # type: ignore[arg-type]


def inside(value: float | None, interval: Interval | None) -> bool:
    """True without an interval; else whether ``value`` is known and within it."""
    return interval is None or (value is not None and interval[0] <= value <= interval[1])


@dataclass(frozen=True)
class Curve:
    """A quadratic penalty ``depth * (x - peak)**2`` (0 at the peak)."""

    peak: float = 0.0
    depth: float = 0.0

    def penalty(self, x: float) -> float:
        return self.depth * (x - self.peak) ** 2


@dataclass(frozen=True)
class Match:
    """Which multitask configs a table is about; every condition given must hold, and a table with
    none matches every multitask config (``single_task``: the single-task config instead).

    ``auxiliary``: exactly these auxiliary tasks; ``contains``: at least these; ``schemas``: one of
    these schema names; ``exponent``: a static schema (or ``power``) whose exponent is in the range;
    ``anneal_c``: ``anneal`` with its c in the range."""

    auxiliary: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()
    exponent: Interval | None = None
    anneal_c: Interval | None = None
    single_task: bool = False

    def applies(self, config: TrainConfig) -> bool:
        auxiliary = auxiliary_of(config)
        if not auxiliary:
            return self.single_task
        if self.single_task:
            return False
        schema = config.sampling.schema
        anneal_c = config.sampling.anneal_c if schema == "anneal" else None
        return (
            (not self.auxiliary or auxiliary == frozenset(self.auxiliary))
            and frozenset(self.contains) <= auxiliary
            and (not self.schemas or schema in self.schemas)
            and inside(exponent_of(config), self.exponent)
            and inside(anneal_c, self.anneal_c)
        )


@dataclass(frozen=True)
class Bonus:
    """A gain on the primary for the multitask configs ``match`` accepts."""

    match: Match
    gain: float

    def applies(self, config: TrainConfig) -> bool:
        return self.match.applies(config)


@dataclass(frozen=True)
class LearningCurve:
    """How far below its converged score a matching config is as it trains.

    Over epochs (``passes`` empty): ``deficit[e - 1]`` after epoch e of ``len(deficit) + 1`` (0 after the
    last), placed at the fractions e/E of training and interpolated linearly for another epoch count
    (before the first point: the first deficit). Over the primary's passes (``passes`` given, increasing):
    ``deficit[i]`` after ``passes[i]`` passes over the primary's training rows, interpolated linearly
    between them and held at the last beyond it; below the first, :meth:`Truth.deficit` rises from the
    untrained score. A config that ends short of the last point ends short of its converged score."""

    match: Match
    deficit: tuple[float, ...]
    passes: tuple[float, ...] = ()

    @property
    def in_passes(self) -> bool:
        return bool(self.passes)

    def at(self, epoch: int, epochs: int) -> float:
        points = len(self.deficit) + 1
        xs = np.arange(1, points + 1) / points
        return float(np.interp(epoch / epochs, xs, [*self.deficit, 0.0]))

    def at_passes(self, passes: float) -> float:
        """The deficit after ``passes`` passes, at or beyond the first point."""
        return float(np.interp(passes, self.passes, self.deficit))


@dataclass(frozen=True)
class Transient:
    """A seed of a matching config that fails at first and recovers (measured: 1 start in 6 of prop and
    anneal scored 25 pp below the majority rate after epoch 1, and was level with the others after epoch 2):
    with ``probability``, seed s of the config scores ``below_majority`` under the majority rate on the
    primary's metrics at every point up to ``until`` (epochs), and its own curve after."""

    match: Match
    probability: float
    until: float = 1.0
    below_majority: float = 0.0


@dataclass(frozen=True)
class Collapse:
    """Each (config, seed) of the configs it is about fails with ``probability``: its primary scores keep
    ``keeps`` of their gain over the majority's at every epoch (0: the constant answer, a seed that
    diverged). About: configs trained at an lr above ``lr_above`` (0: any lr) that ``match`` accepts
    (None: every config, single-task ones too), so failure can be a property of some configs only."""

    lr_above: float
    probability: float
    match: Match | None = None
    keeps: float = 0.0

    def chance(self, config: TrainConfig) -> float:
        about = config.lr > self.lr_above and (self.match is None or self.match.applies(config))
        return self.probability if about else 0.0

    def failed(self, score: float, majority: float) -> float:
        """What a failed seed scores where it would have scored ``score``."""
        return majority + self.keeps * (score - majority)
