"""The search strategies ``search.run --search`` names: what a study tries first, which Optuna sampler
proposes the rest, and how ASHA compares trials at a rung (docs/search-strategies.md: which to use when,
with the measured table).

A strategy is data; ``search.study.tuner`` builds the study's first points, sampler and scheduler from
it, and the simulator (``search.simulation.study``) builds them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# the baseline alone; every (auxiliary set x schema) cell of the thesis grid; or the baseline, then each auxiliary
# task alone at the schema that trains the primary most (spaces.canonical.task_points), as the budget allows
FIRST = ("baseline", "cells", "tasks")
SAMPLERS = ("tpe", "tpe-mv", "random")
# ASHA over every trial, or within each schema family (search.study.scheduler); or the first points decided
# together at each rung, each family's leader kept at every epoch rung but the last (search.study.halving)
RUNGS = ("asha", "family", "halving")


@dataclass(frozen=True)
class SearchStrategy:
    """``first``: the points tried first (``cells``: the thesis grid's 43, baseline first, as a screen);
    ``sampler``: what proposes every later point (``tpe-mv``: multivariate TPE, ``group`` and
    ``constant_liar``); ``rungs``: how ASHA compares trials; ``only_first``: the study is its first
    points and nothing else (the grid: trials = the number of cells). ``reduction_factor``,
    ``first_rung_seeds`` and ``seeds`` (K): the strategy's own, where neither a flag nor the preset sets them;
    ``cells_budget``: without ``--trials``, as many trials as first points."""

    name: str
    first: str = "baseline"
    sampler: str = "tpe"
    rungs: str = "asha"
    only_first: bool = False
    reduction_factor: int | None = None
    first_rung_seeds: int | None = None
    cells_budget: bool = False  # without --trials the study is its first points (not the preset's count)
    screen: float | None = None  # the first rung after this fraction of the first epoch (halving rungs only)
    # with a seed schedule: the first rung's seeds until the last rung, all K past it (the finalists alone), and
    # the baseline the first rung's throughout (search.study.plan.seed_schedule)
    finalist_seeds: bool = False
    seeds: int | None = None  # K, where neither --seeds nor the preset says (None: search.study.config's 3)
    # halving rungs only (search.study.cohort_rule): rank within this many strata of equal exposure to the primary
    # (1: all together, families at the screen), and let this many cells, drawn before any result, past every rung
    # below the last (a hedge for late bloomers no early score distinguishes)
    strata: int = 1
    hedge: int = 0

    @property
    def cohort(self) -> bool:
        """Whether its first points are decided together at each rung (cohort halving: search.study.halving)."""
        return self.rungs == "halving"

    def __post_init__(self) -> None:
        if (self.screen is not None or self.strata > 1 or self.hedge) and not self.cohort:
            raise ValueError(f"search strategy {self.name}: a screen point, strata and a hedge need halving rungs")
        for key, allowed in (("first", FIRST), ("sampler", SAMPLERS), ("rungs", RUNGS)):
            if getattr(self, key) not in allowed:
                value = getattr(self, key)
                raise ValueError(f"search strategy {self.name}: {key} {value!r}, expected one of {allowed}")


# every cell, halved synchronously from epoch 1 on, one seed until a trial passes the first rung (reduction 3)
HALVING_EPOCHS = SearchStrategy(
    "cells-halving-epochs",
    first="cells",
    sampler="tpe-mv",
    rungs="halving",
    reduction_factor=3,
    first_rung_seeds=1,
    cells_budget=True,  # the measured default: TPE trials after the cells cost 50% more, gained nothing
)

STRATEGIES: dict[str, SearchStrategy] = {
    s.name: s
    for s in (
        SearchStrategy("tpe"),  # univariate TPE + ASHA, the baseline first (the default until issue 28)
        # the same after the baseline and each auxiliary task alone (the default below the grid's budget: at 6
        # trials TPE's first draws left make run without a multitask trial that learned, issue 57)
        SearchStrategy("tpe-tasks", first="tasks"),
        SearchStrategy("grid", first="cells", only_first=True),  # the thesis's hand grid (ASHA per --grace-period)
        SearchStrategy("random", sampler="random"),
        SearchStrategy("tpe-mv", sampler="tpe-mv"),  # multivariate TPE + ASHA
        SearchStrategy("family", rungs="family"),  # univariate TPE + ASHA within each schema family
        SearchStrategy("cells", first="cells", sampler="tpe-mv"),  # screen every cell, then multivariate TPE
        SearchStrategy("cells-family", first="cells", sampler="tpe-mv", rungs="family"),  # and stratified rungs
        # every cell, ranked at a screen point inside the first epoch (a quarter in, or the end of the lr warm-up
        # where later: search.study.config.screen_of) and at every epoch, the top quarter of each of 3 strata of
        # equal exposure of the primary going on (schema families at the screen only with strata 1), each family's
        # leader too at every epoch rung but the last, and 6 cells, drawn before any result, let past every rung
        # below the last; one seed until the last rung and both of K = 2 for the finalists past it, the baseline on
        # one; without --trials the study is its cells. The rule of issue 39 picked it (docs/search-strategies.md:
        # no candidate was within 0.03 of the grid on every truth and the real-curve table; this one came closest)
        replace(
            HALVING_EPOCHS,
            name="cells-halving",
            screen=0.25,
            finalist_seeds=True,
            reduction_factor=4,
            seeds=2,
            strata=3,
            hedge=6,
        ),
        # the same without the screen point and with seeds growing at ASHA's rungs (the default of 2026-11-25)
        HALVING_EPOCHS,
        # every cell on 2 seeds under ASHA (the preset's grace period and reduction factor): the default where the
        # slots hold every cell at once. There the cell screen's slot-time is its finalists' chain (a first seed
        # through every epoch, then a second from scratch, in one slot) with most slots idle, and 2 seeds for
        # every cell take no more slot-time or wall time (docs/search-strategies.md, "Many slots")
        SearchStrategy("grid-k2", first="cells", only_first=True, seeds=2),
    )
}


# What ``--search`` is when not given: the cell screen halved synchronously within exposure strata, with a hedge of 6
# cells, where the trial budget holds every cell (docs/search-strategies.md: at 41% of the thesis grid's compute it
# selects within 1 pp of the true best about as often as the grid, within 0.035, on every truth measured and the
# real-curve table; nothing measured at or under 30% came within 0.06);
# below that budget a screen cannot finish: the baseline and each auxiliary task alone, then TPE over the whole
# space; where the study is its cells (no --trials) and the slots hold them all at once, every cell on 2 seeds
# under ASHA.
DEFAULT, SCREEN, WIDE, FALLBACK = "default", "cells-halving", "grid-k2", "tpe-tasks"


def default_search(trials: int, cells: int, slots: int = 1, cells_only: bool = False) -> str:
    """The strategy ``--search default`` runs with ``trials`` trials in a space of ``cells`` grid cells on ``slots``
    slots; ``cells_only``: the study is its cells (no ``--trials``)."""
    if trials < cells:
        return FALLBACK
    return WIDE if cells_only and slots >= cells else SCREEN


def strategy_of(search: str) -> SearchStrategy:
    return STRATEGIES[search]
