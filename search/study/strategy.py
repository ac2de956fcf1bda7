"""The search strategies ``search.run --search`` names: what a study tries first, which Optuna sampler
proposes the rest, and how ASHA compares trials at a rung (docs/search-strategies.md: which to use when,
with the measured table).

A strategy is data; ``search.study.tuner`` builds the study's first points, sampler and scheduler from
it, and the simulator (``search.simulation.study``) builds them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST = ("baseline", "cells")  # the baseline alone, or every (auxiliary set x schema) cell of the thesis grid
SAMPLERS = ("tpe", "tpe-mv", "random")
RUNGS = ("asha", "family")  # ASHA over every trial, or within each schema family (search.study.scheduler)


@dataclass(frozen=True)
class SearchStrategy:
    """``first``: the points tried first (``cells``: the thesis grid's 43, baseline first, as a screen);
    ``sampler``: what proposes every later point (``tpe-mv``: multivariate TPE, ``group`` and
    ``constant_liar``); ``rungs``: how ASHA compares trials; ``only_first``: the study is its first
    points and nothing else (the grid: trials = the number of cells)."""

    name: str
    first: str = "baseline"
    sampler: str = "tpe"
    rungs: str = "asha"
    only_first: bool = False

    def __post_init__(self) -> None:
        for key, allowed in (("first", FIRST), ("sampler", SAMPLERS), ("rungs", RUNGS)):
            if getattr(self, key) not in allowed:
                value = getattr(self, key)
                raise ValueError(f"search strategy {self.name}: {key} {value!r}, expected one of {allowed}")


STRATEGIES: dict[str, SearchStrategy] = {
    s.name: s
    for s in (
        SearchStrategy("tpe"),  # univariate TPE + ASHA, the baseline first (the default until issue 28)
        SearchStrategy("grid", first="cells", only_first=True),  # the thesis's hand grid (ASHA per --grace-period)
        SearchStrategy("random", sampler="random"),
        SearchStrategy("tpe-mv", sampler="tpe-mv"),  # multivariate TPE + ASHA
        SearchStrategy("family", rungs="family"),  # univariate TPE + ASHA within each schema family
        SearchStrategy("cells", first="cells", sampler="tpe-mv"),  # screen every cell, then multivariate TPE
        SearchStrategy("cells-family", first="cells", sampler="tpe-mv", rungs="family"),  # and stratified rungs
    )
}


def strategy_of(search: str) -> SearchStrategy:
    return STRATEGIES[search]
