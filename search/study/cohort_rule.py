"""Which trials of a cohort go on past a rung: the decision rule of cohort halving, pure (STYLE 17).

:class:`search.study.halving.CohortHalving` keeps the bookkeeping (who reported, who waits, what Tune
does with them) and asks :meth:`CohortRule.promote` once a rung's cohort is complete; the simulator drives
the same class. The rule, at a rung:

- **Ranking.** The top ``ceil(n / reduction_factor)`` go on. With ``strata`` > 1 the trials are ranked
  within strata of equal exposure instead (sorted by their passes over the primary's training rows,
  ``trainables.exposure``, cut into ``strata`` groups of about equal size, the top of each going on): an
  epoch is a different amount of primary training in every config, so a diluted cell meets cells as diluted
  as it, not a fast one's yardstick. At a screen point without strata, the trials are ranked within schema
  families (a fraction of an epoch in, the families' starts differ more than their configs).
- **Ties go on together.** Trials that score the same as the last of a group's top go on with it: a rung that
  cannot tell trials apart does not choose among them by their order. On real training this is the common case
  early: at the `full` preset every cell still scored the dev majority rate a quarter into epoch 1
  (``benchmarks/results/real_curves_full_partial_h200.jsonl``), so a screen there cuts nothing.
- **Always on:** the baseline and each side's leader (the final comparison needs both); at whole-epoch rungs
  below the last (and the first), each family's leader (``trainables.fidelity.family_leaders_kept``).
- **A hedge**, as Hyperband's brackets: the ``hedged`` trials go on past every rung below the last whatever
  they score, and meet the others at the last. Chosen at random before any result (every cell has the same
  chance), so a late bloomer that nothing early distinguishes reaches the end in that share of studies.
- **A failed start is not an end.** At a whole-epoch rung below the last, a trial at or below ``floor`` (the
  majority rate, what a constant predictor scores) goes on the first time: on real training one start in six of
  some schemas scored below it after epoch 1 and recovered by epoch 2. At its next rung it is judged as any other.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from trainables.fidelity import family_leaders_kept, stratum_of

logger = logging.getLogger(__name__)
FLOOR_SLACK = 1e-9  # a score equal to the majority rate is at the floor
TIE_SLACK = 1e-9  # two scores this close are a tie (the same count of right rows, summed in another order)


@dataclass(frozen=True)
class Cohort:
    """What the rule needs to know of a rung's trials: their values (maximising sign), schema families,
    sides (None: neither), the baselines, their passes over the primary (empty: not reported), the hedged
    ones, and those already given a pass for a failed start."""

    values: Mapping[str, float]
    families: Mapping[str, str]
    sides: Mapping[str, str | None]
    baselines: Collection[str] = ()
    passes: Mapping[str, float] = field(default_factory=dict)
    hedged: Collection[str] = ()
    failed_before: Collection[str] = ()


@dataclass(frozen=True)
class CohortRule:
    """``factor``: the reduction factor; ``screen``: the screen point (a fraction of epoch 1) or None;
    ``grace``/``max_t``: the first whole-epoch rung and the last epoch; ``strata``: exposure strata (1: none);
    ``floor``: the objective's majority rate in the maximising sign (None: unknown, no pass for failed starts)."""

    factor: float
    screen: float | None
    grace: int
    max_t: int
    strata: int = 1
    floor: float | None = None

    @property
    def last(self) -> float:
        """The last rung: past it the finalists train to the end."""
        return float(self.max_t - 1)

    def promote(self, rung: float, cohort: Cohort) -> set[str]:
        """Who goes on past ``rung`` (the module docstring)."""
        ids = sorted(cohort.values)
        ranked = sorted(ids, key=lambda t: cohort.values[t], reverse=True)
        keep: set[str] = set()
        for group in self.groups(rung, ranked, cohort):
            cut = cohort.values[group[math.ceil(len(group) / self.factor) - 1]]
            keep |= {t for t in group if cohort.values[t] >= cut - TIE_SLACK}
        keep |= {t for t in ids if t in cohort.baselines}
        for side in {cohort.sides.get(t) for t in ids} - {None}:
            keep.add(next(t for t in ranked if cohort.sides.get(t) == side))
        if self.keeps_leaders(rung):
            families = {cohort.families[t] for t in ids}
            keep |= {next(t for t in ranked if cohort.families[t] == family) for family in families}
        if rung < self.last:
            keep |= {t for t in ids if t in cohort.hedged}
        return keep | self.failed_starts(rung, cohort)

    def groups(self, rung: float, ranked: list[str], cohort: Cohort) -> list[list[str]]:
        """The groups ranked apart, each in rank order: exposure strata, else families at the screen, else one."""
        if self.strata > 1 and not all(t in cohort.passes for t in ranked):
            warn_unstratified(self.strata)
        elif self.strata > 1:
            by_passes = sorted(ranked, key=lambda t: (cohort.passes[t], t))
            stratum = {t: stratum_of(i, len(by_passes), self.strata) for i, t in enumerate(by_passes)}
            return [[t for t in ranked if stratum[t] == s] for s in sorted(set(stratum.values()))]
        if rung == self.screen:
            families = dict.fromkeys(cohort.families[t] for t in ranked)
            return [[t for t in ranked if cohort.families[t] == f] for f in families]
        return [ranked]

    def keeps_leaders(self, rung: float) -> bool:
        """Whether each family's leader goes on past whole-epoch rung ``rung`` (not the screen)."""
        return rung != self.screen and family_leaders_kept(rung, self.grace, self.max_t)

    def failed_starts(self, rung: float, cohort: Cohort) -> set[str]:
        """Trials at or below the floor at a whole-epoch rung below the last, the first time: they go on once (past
        the last rung a finalist trains every seed: a start that fails that late is judged as any other)."""
        if self.floor is None or rung == self.screen or rung >= self.last:
            return set()
        return {t for t, v in cohort.values.items() if v <= self.floor + FLOOR_SLACK and t not in cohort.failed_before}

    def at_floor(self, rung: float, values: Mapping[str, float]) -> set[str]:
        """The trials this rung finds at or below the floor (what the caller remembers as failed before)."""
        if self.floor is None or rung == self.screen:
            return set()
        return {t for t, v in values.items() if v <= self.floor + FLOOR_SLACK}


_warned: set[int] = set()


def warn_unstratified(strata: int) -> None:
    """Once a process: a rung ranked as one group though the strategy asked for strata (a simulated truth with
    neither ``[sizes]`` nor a readable data root reports no passes; real trials always report them)."""
    if strata not in _warned:
        _warned.add(strata)
        logger.warning(
            "%d exposure strata asked for, but not every trial reported its passes over the primary (a simulated "
            "truth needs [sizes] or a readable data root, MTL_DATA_DIR): its rungs are ranked as one group",
            strata,
        )


def hedged_positions(cohort: int, hedge: int, seed: int) -> frozenset[int]:
    """Which positions of a cohort of ``cohort`` trials (0: the baseline, first) are hedged: ``hedge`` of the
    others, drawn uniformly with the study's search seed before any result."""
    if hedge <= 0 or cohort <= 1:
        return frozenset()
    return frozenset(random.Random(f"hedge-{seed}").sample(range(1, cohort), min(hedge, cohort - 1)))
