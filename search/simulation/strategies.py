"""The search strategies issue 18 part 3 compares, each a ``search.run`` invocation of the absa study.

A strategy is what its user would type: ``--search``, ``--seeds``, ``--trials`` and ASHA's grace period
and reduction factor (None: the preset's). Families are lists of strategies over budgets (trial
counts) chosen so that their compute spans ~10% to ~250% of the thesis grid's 172 seed-epochs:
under the full preset's ASHA (grace 1, reduction 2, 4 epochs) a trial trains ~2.2 epochs, so ~2.2 K
seed-epochs at K seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

from search.simulation.backend import SeedCount
from search.simulation.study import SchedulerOf
from search.study.config import SearchConfig
from search.study.tuner import scheduler_of
from trainables.config import ConfigError

STUDY, PRESET = "absa", "full"


@dataclass(frozen=True)
class Strategy:
    family: str
    search: str  # search.study.config.SEARCHES
    seeds: int  # K: seeds every trial trains (0: the preset's)
    trials: int | None = None  # None: the grid's size (--search grid)
    grace_period: int | None = None  # None: the preset's
    reduction_factor: int | None = None
    first_rung_seeds: int | None = None  # seeds as a fidelity (--first-rung-seeds); None: all K throughout
    # where another scheduler plugs in: a scheduler built from the study, seeds reporting each epoch
    # (None: the study's own, which follows first_rung_seeds)
    scheduler: SchedulerOf = scheduler_of
    seed_count: SeedCount | None = None
    multivariate: bool = False  # an experiment: TPE over joint densities (search.simulation.study.searcher_for)
    screen: float | None = None  # --screen-fraction (None: the strategy's; 0: none)
    strata: int | None = None  # --strata (None: the strategy's)
    hedge: int | None = None  # --hedge (None: the strategy's)

    @property
    def group(self) -> str:
        """The strategy without its budget: what one curve of the benchmark's plot shows."""
        grace = f" grace={self.grace_period}" if self.grace_period is not None and self.family != "grid" else ""
        reduction = f" rf={self.reduction_factor}" if self.reduction_factor is not None else ""
        return f"{self.family}{' mv' if self.multivariate else ''} K={self.seeds}{grace}{reduction}{self.fidelity}"

    @property
    def name(self) -> str:
        budget = "" if self.trials is None else f" N={self.trials}"
        grace = "" if self.grace_period is None else f" grace={self.grace_period}"
        reduction = "" if self.reduction_factor is None else f" rf={self.reduction_factor}"
        return f"{self.group.split(' K=')[0]} K={self.seeds}{budget}{grace}{reduction}{self.fidelity}"

    @property
    def fidelity(self) -> str:
        screen = "" if self.screen is None else f" screen={self.screen:g}"
        screen += "" if self.strata is None else f" strata={self.strata}"
        screen += "" if self.hedge is None else f" hedge={self.hedge}"
        return ("" if self.first_rung_seeds is None else f" first-rung={self.first_rung_seeds}") + screen

    def config(self, truth: str, search_seed: int, slots: int) -> SearchConfig:
        """The study's invocation (``truth``: the truth file's path)."""
        return SearchConfig(
            STUDY,
            preset=PRESET,
            simulate=truth,
            search=self.search,
            seeds=self.seeds or None,  # 0: the preset's
            trials=self.trials,
            grace_period=self.grace_period,
            reduction_factor=self.reduction_factor,
            search_seed=search_seed,
            max_concurrent=slots,
            first_rung_seeds=self.first_rung_seeds,
            screen_fraction=self.screen,
            strata=self.strata,
            hedge=self.hedge,
        )


def budgets(
    family: str, search: str, seeds: int, trials: tuple[int, ...], grace: int | None = None, **kw
) -> list[Strategy]:
    return [Strategy(family, search, seeds, n, grace, **kw) for n in trials]


# the thesis's hand grid: 43 configs, one seed, every epoch (grace period = epochs: ASHA stops nothing)
GRID = [Strategy("grid", "grid", 1, None, grace_period=4)]
FAMILIES: dict[str, list[Strategy]] = {
    "grid": GRID,
    "tpe-k1": budgets("tpe-asha", "tpe", 1, (8, 16, 24, 40, 64, 100, 150, 215)),
    "tpe-k3": budgets("tpe-asha", "tpe", 3, (3, 6, 9, 14, 22, 34, 50, 72)),
    "random-k1": budgets("random-asha", "random", 1, (16, 40, 100, 215)),
    "random-k3": budgets("random-asha", "random", 3, (6, 14, 34, 72)),
    # not tuning the truth: what the search controls (seeds, budget, how early ASHA stops)
    "tpe-k3-grace2": budgets("tpe-asha", "tpe", 3, (9, 14, 22, 34), grace=2),
    "tpe-k2": budgets("tpe-asha", "tpe", 2, (6, 9, 14, 22, 34, 50)),
    # the grid's 43 configs under the preset's ASHA (what `--search grid --seeds 1` runs), and a harsher ASHA
    "grid-asha": [Strategy("grid-asha", "grid", 1)],
    "grid-asha-rf4": [Strategy("grid-asha", "grid", 1, reduction_factor=4)],
    "grid-asha-rf8": [Strategy("grid-asha", "grid", 1, reduction_factor=8)],
    "tpe-mv-k1": budgets("tpe-asha", "tpe", 1, (16, 24, 40, 64, 100), multivariate=True),
    "tpe-mv-k3": budgets("tpe-asha", "tpe", 3, (6, 9, 14, 22, 34, 50), multivariate=True),
    "grid-asha-k2": [Strategy("grid-asha", "grid", 2)],
    "grid-asha-k3": [Strategy("grid-asha", "grid", 3)],
    # seeds as a fidelity: 1 seed to the first rung, 2 to the second, all 3 past it (the baseline all 3);
    # ~1.25x tpe-k3's trials, for about its compute (a trial stopped early costs fewer seed-epochs)
    "tpe-k3-fidelity": [Strategy("tpe-asha", "tpe", 3, n, first_rung_seeds=1) for n in (4, 8, 11, 17, 27, 42, 62, 90)],
    # the same at reduction factor 3 (rungs at epochs 1 and 3): 1 seed to the first rung, then all 3
    "tpe-k3-rf3": [Strategy("tpe-asha", "tpe", 3, n, reduction_factor=3) for n in (9, 14, 22, 34, 50, 72)],
    "tpe-k3-rf3-fidelity": [
        Strategy("tpe-asha", "tpe", 3, n, reduction_factor=3, first_rung_seeds=1) for n in (11, 17, 27, 41, 61, 88)
    ],
}
# issue 28: the search strategies of search.study.strategy, at one seed (the grid's) and at 2 and 3
FAMILIES.update(
    {
        "tpe-mv-cl-k1": budgets("tpe-mv", "tpe-mv", 1, (16, 24, 40, 64, 100)),
        "family-k1": budgets("family", "family", 1, (16, 24, 40, 64, 100)),
        "cells-k1": budgets("cells", "cells", 1, (43, 64, 100)),
        "cells-family-k1": budgets("cells-family", "cells-family", 1, (43, 64, 100)),
        "cells-family-k1-rf4": budgets("cells-family", "cells-family", 1, (43, 64, 100), reduction_factor=4),
        "cells-family-k2": budgets("cells-family", "cells-family", 2, (43, 64, 100)),
        "cells-family-k3": budgets("cells-family", "cells-family", 3, (43, 64)),
        "cells-k2": budgets("cells", "cells", 2, (43, 64, 100)),
        "cells-k2-rf3": budgets("cells", "cells", 2, (43,), reduction_factor=3),
        "cells-family-k2-rf3": budgets("cells-family", "cells-family", 2, (43,), reduction_factor=3),
        # cohort halving (search.study.halving): every cell decided together at each rung, each family's leader
        # kept at every epoch rung but the last (at the first only when these were measured); K=1 over reduction
        # factors, then 2-3 seeds with seeds as the fidelity
        "halving-k1": [
            Strategy("cells-halving", "cells-halving-epochs", 1, 43, reduction_factor=r) for r in (3, 4, 6, 8, 16)
        ],
        "halving-k2": [
            Strategy("cells-halving", "cells-halving-epochs", 2, 43, reduction_factor=r, first_rung_seeds=1)
            for r in (3, 4)
        ],
        "halving-k3": [
            Strategy("cells-halving", "cells-halving-epochs", 3, 43, reduction_factor=r, first_rung_seeds=1)
            for r in (3, 4)
        ],
        # the screen rung (issue 28, goal 1): the cohort compared after a fraction of the first epoch, at one seed
        # (the grid's) and with seeds as the fidelity past the first epoch; candidates written before measuring
        "screen-k1": [
            Strategy("cells-halving", "cells-halving-epochs", 1, 43, reduction_factor=r, screen=f)
            for r in (3, 4)
            for f in (0.25, 0.5)
        ],
        "screen-k2": [
            Strategy("cells-halving", "cells-halving-epochs", 2, 43, reduction_factor=r, first_rung_seeds=1, screen=f)
            for r in (3, 4)
            for f in (0.25, 0.5)
        ],
        "screen-k3": [
            Strategy("cells-halving", "cells-halving-epochs", 3, 43, reduction_factor=4, first_rung_seeds=1, screen=f)
            for f in (0.25, 0.5)
        ],
        # the same with every seed for the finalists alone (past the last rung), written after the screens above
        # failed to match the grid under late_bloomer at <= 30% of its compute
        "screen-finalists": [
            Strategy("screen-finalists", "cells-halving", k, 43, reduction_factor=r, first_rung_seeds=1, screen=f)
            for k in (2, 3)
            for r in (3, 4)
            for f in (0.25, 0.5)
        ],
        # what `python -m search.run absa --preset full` runs with no other flag: the default --search at
        # the preset's seeds and trials; and the same at one seed (the grid's)
        "default": [Strategy("default", SearchConfig.search, 0)],
        "default-k1": [Strategy("default", SearchConfig.search, 1)],
        "default-k2": [Strategy("default", SearchConfig.search, 2)],
        # the default given about the grid's compute, by each knob a user has: more seeds, a gentler reduction,
        # more trials (TPE past the cells)
        "default-rf2": [Strategy("default", SearchConfig.search, 3, reduction_factor=2)],
        # issue 28, goal 1 (<= 30% of the grid): the default at reduction factor 4 (ASHA's own default) at 1-3 seeds,
        # written before it was measured: fewer trials past each rung, fewer finalists on every seed
        "default-rf4": [Strategy("default", SearchConfig.search, k, reduction_factor=4) for k in (1, 2, 3)],
        # the default given more compute by the knobs of the default of 2026-11-27 (3 seeds, reduction 3), and by
        # 3 seeds alone (goal 2: better than the grid at no more compute)
        "default-k3": [
            Strategy("default", SearchConfig.search, 3, reduction_factor=3),
            Strategy("default", SearchConfig.search, 3),
        ],
        # issue 39, written before any was measured: the default with its rungs ranked within exposure strata, with a
        # hedge of cells let past every rung below the last, and both; candidates for the rule in
        # docs/search-strategies.md (the cheapest whose worst margin over the grid is within -0.03)
        "exposure": [Strategy("default", SearchConfig.search, 0, strata=s, hedge=h) for s in (1, 3) for h in (0, 3, 6)],
        # the hedged candidates alone (more studies where a margin was within one SE of the rule's bound)
        "exposure-hedge": [Strategy("default", SearchConfig.search, 0, strata=1, hedge=h) for h in (0, 3, 6)],
        # the strata-3 candidates alone (their first 100 studies left every margin within two SEs of the bound)
        "exposure-strata": [Strategy("default", SearchConfig.search, 0, strata=3, hedge=h) for h in (0, 3, 6)],
        "exposure-k3": [
            Strategy("default", SearchConfig.search, 3, reduction_factor=3, strata=s, hedge=h)
            for s in (1, 3)
            for h in (0, 6)
        ],
        "default-more": [
            Strategy("default", SearchConfig.search, 5),
            Strategy("default", SearchConfig.search, 3, reduction_factor=2),
            Strategy("default", SearchConfig.search, 3, trials=86),
        ],
    }
)
DEFAULT = ("grid", "grid-asha", "tpe-k1", "tpe-k3", "random-k1", "random-k3")
# the suite of issue 28 (benchmarks/README.md): today's TPE + ASHA, random and multivariate TPE at <= 30% of the
# grid's compute and near it, against the cell screens at 1 and 2 seeds (2 seeds at reduction 3: about the grid's)
SUITE = {
    "grid": GRID,
    "tpe-k1": budgets("tpe-asha", "tpe", 1, (16, 64)),
    "random-k1": budgets("random-asha", "random", 1, (16,)),
    "tpe-mv-cl-k1": budgets("tpe-mv", "tpe-mv", 1, (16, 64)),
    "cells-k1": budgets("cells", "cells", 1, (43,)),
    "cells-family-k1": budgets("cells-family", "cells-family", 1, (43, 64)),
    "cells-k2": budgets("cells", "cells", 2, (43,)),
    "cells-family-k2": budgets("cells-family", "cells-family", 2, (43,)),
    "cells-k2-rf3": FAMILIES["cells-k2-rf3"],
    "cells-family-k2-rf3": FAMILIES["cells-family-k2-rf3"],
}
FAMILIES["suite"] = [s for family in SUITE.values() for s in family]
# the same without the strategies the first two truths had already ruled out (random, multivariate TPE alone, the
# cell screens at one seed past 43 trials): what the loaded machine of 2026-11-25 left time for on the others
CORE = ("grid", "tpe-k1", "cells-k1", "cells-family-k1", "cells-k2", "cells-k2-rf3", "cells-family-k2-rf3")
FAMILIES["suite-core"] = [s for name in CORE for s in SUITE[name]]


def chosen(names: str) -> list[Strategy]:
    """``grid,tpe-k3`` -> their strategies; one line naming the families on a bad name."""
    out: list[Strategy] = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        if name not in FAMILIES:
            raise ConfigError(f"--strategies {name!r}: expected a comma-separated list of {', '.join(FAMILIES)}")
        out += FAMILIES[name]
    if not out:
        raise ConfigError("--strategies is empty: expected one or more of " + ", ".join(FAMILIES))
    return out
