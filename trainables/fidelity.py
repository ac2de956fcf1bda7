"""Seeds as a fidelity: how many of a trial's K seeds it trains at each epoch.

A trial trains its first ASHA rung on ``first`` seeds; each rung it passes (Tune lets it go on
past the rung's epoch: it was promoted) multiplies its seeds by ``growth`` (ASHA's reduction
factor, so each rung costs about what the one below did: a rung keeps 1/growth of the trials),
and past the last rung below the final epoch it trains all K, so every finalist is ranked at full
fidelity. Seeds are a prefix of the seed list: every trial shares its first seeds with the
baseline (which trains them from the start: all K, or the first rung's seeds where
only the finalists train every seed), so a rung compares means over the same seeds.

An added seed first catches up, training the epochs it missed without reporting, so every
reported epoch is a mean over seeds at that same epoch. A trial that reached epoch ``e``
has therefore trained ``e * at(e)`` seed-epochs.

Pure: no Ray, no torch. The Tune wrappers (``trainables/tune.py``, ``search/simulation/trainable.py``)
follow it; ``search/study/scheduler.py`` pairs the baseline's rung values with it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainables.config import ConfigError
from trainables.results import seed_key

FIDELITY = "fidelity"  # trial config key holding :meth:`SeedSchedule.to_dict`
SEED_COUNT = "seeds/trained"  # result key: how many seeds this epoch's means are over
SCREEN = "screen"  # trial config key: the fraction of the first epoch after which a search trial first reports


def check_screen(screen: float | None, where: str = "--screen-fraction") -> float | None:
    """``screen`` if it is a fraction of an epoch strictly between 0 and 1 (or None); one line otherwise."""
    if screen is not None and not 0 < screen < 1:
        raise ConfigError(f"{where} {screen}: expected a fraction of the first epoch, above 0 and below 1")
    return screen


def epoch_value(point: float) -> float | int:
    """An epoch as results and tags show it: 2 at an epoch's end, 0.5 at a screen point."""
    return int(point) if point == int(point) else point


def report_points(epochs: int, screen: float | None = None) -> tuple[float, ...]:
    """Where a trial evaluates dev and reports, in epochs: after ``screen`` of the first epoch (the screen
    rung: every cell of a study compared for a fraction of an epoch's compute), then after every epoch."""
    return ((screen,) if screen else ()) + tuple(float(e) for e in range(1, epochs + 1))


def family_leaders_kept(epoch: float, grace_period: int, max_t: int) -> bool:
    """Whether cohort halving keeps each schema family's leader past the whole-epoch rung ``epoch``: at
    the first, and at every one below the last. Families' real curves still differ by a few pp after
    half of training (benchmarks/results/HISTORY.md, "every family at 3 seeds"), so a slow starter meets the
    fast ones only at the last rung, where those going on train every seed (a leader kept there would
    cost K seeds each)."""
    return epoch == grace_period or epoch < max_t - 1


def halving_survivors(
    cells: int,
    families: int,
    screen: float | None,
    grace: int,
    reduction_factor: float,
    max_t: int,
    hedge: int = 0,
    strata: int = 1,
) -> list[tuple[float, float, float]]:
    """Cohort halving's expected course (``search/study/halving.py``), results exchangeable: ``(point, alive,
    going)`` for each rung, from ``cells`` trials in ``families`` families, one of them the baseline alone (the
    grid's single-task cell) and the rest of equal size. At the screen point each schema family keeps its top
    ceil(size / reduction_factor) and the baseline goes on; at each epoch rung the top ceil(alive / rf) go on,
    the baseline (taken as not among them: the others passed every rung on their luck, it passed none), and where
    :func:`family_leaders_kept` each schema family's leader where none of its members is (:func:`none_among_top`).
    ``hedge`` cells go on past every rung below the last whatever they score (``search.study.cohort_rule``): ranked
    with the rest, those not among the top go on beside them. With ``strata`` > 1 every rung, the screen too,
    keeps the top ceil(size / reduction_factor) of each of ``strata`` equal exposure strata."""
    points = ([screen] if screen else []) + [float(e) for e in range(grace, max_t)]
    schema_families = max(families - 1, 1)
    hedge = min(hedge, max(cells - 1, 0))
    alive, course = float(cells), []
    for point in points:
        size = max(alive - 1, 0.0) / schema_families  # the baseline is a family of its own
        if strata > 1:  # an expected count of trials: between the tops of its floor and its ceiling
            low, share = math.floor(alive), alive - math.floor(alive)
            top = (1 - share) * stratified_top(low, strata, reduction_factor)
            top += share * stratified_top(low + 1, strata, reduction_factor)
        elif point == screen:
            top = schema_families * math.ceil(size / reduction_factor)
        else:
            top = math.ceil(alive / reduction_factor)
        going = top + 1  # the baseline: the one trial never selected on its luck, so rarely among the top
        hedged = 0.0
        if point < max_t - 1:  # the hedged not among the top go on too: at the first rung as drawn, then all of
            # them (the others passed a rung on their luck, the hedged did not: as the baseline, rarely among the top)
            hedged = hedge * (max(0.0, 1 - top / alive) if point == points[0] else 1.0)
        if point != screen and family_leaders_kept(point, grace, max_t):  # a family none of whose kept is in
            going += schema_families * none_among_top(alive - 1, size, math.ceil(top + hedged))
        going += hedged
        going = min(alive, going)
        course.append((point, alive, going))
        alive = going
    return course


def stratum_of(position: int, n: int, strata: int) -> int:
    """The exposure stratum of the trial at ``position`` of ``n`` sorted by passes over the primary: ``strata``
    groups of about equal size (as many as there are trials, where fewer)."""
    return int(position // (n / min(strata, n)))


def stratified_top(n: int, strata: int, reduction_factor: float) -> int:
    """How many of ``n`` trials go on when each of ``strata`` exposure strata (:func:`stratum_of`, as
    ``search.study.cohort_rule`` cuts them) keeps its top ceil(size / reduction_factor)."""
    sizes = Counter(stratum_of(i, n, strata) for i in range(n))
    return sum(math.ceil(c / reduction_factor) for c in sizes.values())


def none_among_top(n: float, members: float, top: int) -> float:
    """The chance that none of a group's ``members`` is among the ``top`` of ``n`` exchangeable results
    (hypergeometric; sizes may be expected values, not integers)."""
    chance = 1.0
    for i in range(top):
        chance *= max(0.0, (n - members - i) / (n - i)) if n - i > 0 else 0.0
    return chance


def asha_rungs(grace_period: int, reduction_factor: float, max_t: int) -> tuple[int, ...]:
    """The epochs at which ASHA (one bracket) decides on a trial, below ``max_t``.

    The milestones are Ray's ``_Bracket``'s, computed the same way (numpy's log, so the float
    rounding agrees): ``grace_period * reduction_factor**k``. A trial's result is recorded at a
    milestone from the first epoch at or past it; at ``max_t`` every trial stops anyway.
    """
    rungs = int(np.log(max_t / grace_period) / np.log(reduction_factor) + 1)
    milestones = (grace_period * reduction_factor**k for k in range(rungs))
    return tuple(sorted({math.ceil(m) for m in milestones if math.ceil(m) < max_t}))


@dataclass(frozen=True)
class SeedSchedule:
    """Seeds a trial trains at each epoch: ``first`` up to the first rung, times ``growth`` per
    rung passed (at most ``seeds``), all ``seeds`` past the last rung."""

    seeds: int  # K, the trial's whole seed list
    first: int  # seeds up to and including the first rung's epoch
    rungs: tuple[int, ...] = ()  # ASHA's rung epochs below the last epoch, ascending
    growth: int = 2  # seed factor per rung passed
    # the baseline trains the first rung's seeds throughout (else all K): where only the finalists train every
    # seed, the baseline is the bar at the rungs, on those seeds, and finalize compares it on fresh seeds
    baseline_first: bool = False

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ConfigError(f"seed schedule: {self.seeds} seeds, expected >= 1")
        if not 1 <= self.first <= self.seeds:
            raise ConfigError(f"first rung seeds {self.first}: expected 1 to {self.seeds} (the seeds of a trial)")
        if self.growth < 2:
            raise ConfigError(f"seed schedule growth {self.growth}: expected >= 2")
        if any(r < 1 for r in self.rungs) or list(self.rungs) != sorted(set(self.rungs)):
            raise ConfigError(f"seed schedule rungs {list(self.rungs)}: expected ascending epochs >= 1")

    @classmethod
    def full(cls, seeds: int) -> SeedSchedule:
        """Every seed at every epoch: the baseline's, finalize's, and any trial's without the option."""
        return cls(seeds=seeds, first=seeds)

    def at(self, epoch: float) -> int:
        """Seeds trained at ``epoch`` (1-based; a screen point below 1 trains the first rung's seeds): those of
        the rung segment it falls in."""
        passed = sum(1 for rung in self.rungs if rung < epoch)
        if passed == len(self.rungs):
            return self.seeds
        return min(self.seeds, self.first * self.growth**passed)

    def seed_epochs(self, epoch: float) -> float:
        """Seed-epochs a trial has trained once it reported ``epoch`` (catch-up included; a screen point
        inside the first epoch costs its fraction)."""
        return epoch * self.at(epoch) if epoch > 0 else 0

    def to_dict(self) -> dict[str, Any]:
        out = {"first": self.first, "rungs": list(self.rungs), "growth": self.growth}
        return {**out, "baseline": "first"} if self.baseline_first else out  # absent: every seed (as before it)

    @classmethod
    def of_trial(cls, config: Mapping[str, Any], seeds: int) -> SeedSchedule:
        """A trial's schedule from its (flat) Tune config (:meth:`of`)."""
        return cls.of(config.get(FIDELITY), bool(config.get("baseline")), seeds)

    @classmethod
    def of(cls, spec: Mapping[str, Any] | None, baseline: bool, seeds: int) -> SeedSchedule:
        """A trial's schedule from the study's (:meth:`to_dict`): the full one where the study has none, and
        for the baseline (it is never stopped and sets every rung's bar), whose full schedule is the first
        rung's seeds where the study says so (``baseline_first``)."""
        if not spec:
            return cls.full(seeds)
        if baseline:
            return cls.full(int(spec["first"]) if spec.get("baseline") == "first" else seeds)
        return cls(
            seeds=seeds,
            first=int(spec["first"]),
            rungs=tuple(spec["rungs"]),
            growth=int(spec["growth"]),
            baseline_first=spec.get("baseline") == "first",
        )


def prefix_mean(result: Mapping[str, Any], objective: str, seeds: Sequence[int]) -> float | None:
    """The mean of ``objective`` (a ``<key>/mean`` result key) over ``seeds`` alone, from the
    result's per-seed values; None where one of them is missing or NaN."""
    if not objective.endswith("/mean"):
        return None
    key = objective[: -len("/mean")]
    values = [result.get(seed_key(key, s)) for s in seeds]
    if not values or any(v is None or v != v for v in values):
        return None
    return float(np.mean(np.asarray(values, dtype=np.float64)))
