"""What a verdict could have detected, and how many final seeds a target gain needs.

A comparison over ``n`` paired seeds whose differences spread with sample sd ``s`` and whose look
stops at ``|t| > c`` detects a true gain ``g`` about 80% of the time when

    g = (c + t_0.80(n - 1)) * s / sqrt(n)

(the usual normal-theory approximation with the t quantiles of ``n - 1`` degrees of freedom). A verdict
knows only the observed spread, which is below the true one more often than not: taken as the true
one, the stated gain is found on average 67% of the time at 5 seeds, not 80%. :func:`stated_gain`
puts the spread's one-sided 70% upper confidence bound (chi-square, ``n - 1`` degrees of freedom) in
its place, and the stated gain is found 80-84% of the time averaged over studies at 3 to 40 seeds
(``tests/search/answer/test_sequential.py`` measures it). ``seeds_for`` inverts the formula for planning at
a spread the user states: the least K whose first look (:mod:`search.answer.sequential`, a planned
maximum of ``max_seeds``) detects ``g``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from search.answer.sequential import Design, boundaries, default_max_seeds

POWER = 0.80
SPREAD_BOUND = 0.70  # the one-sided confidence of the spread's upper bound that a stated gain uses
MOST_SEEDS = 200  # planning stops here: a gain that needs more is below what seeds can show


def detectable_gain(n: int, sd: float, boundary: float, power: float = POWER) -> float:
    """The gain a look at ``n`` pairs with spread ``sd`` and boundary ``boundary`` finds ``power`` of the time."""
    from scipy.stats import t

    if n < 2 or not math.isfinite(sd) or not math.isfinite(boundary):
        return math.nan
    return (boundary + float(t.ppf(power, n - 1))) * sd / math.sqrt(n)


def spread_bound(n: int, sd: float, confidence: float = SPREAD_BOUND) -> float:
    """The one-sided ``confidence`` upper bound of a normal spread observed as ``sd`` over ``n`` values."""
    from scipy.stats import chi2

    if n < 2 or not math.isfinite(sd):
        return math.nan
    return sd * math.sqrt((n - 1) / float(chi2.ppf(1 - confidence, n - 1)))


def stated_gain(n: int, observed_sd: float, boundary: float) -> float:
    """The gain a verdict states it finds 80% of the time: :func:`detectable_gain` at the spread's upper bound."""
    return detectable_gain(n, spread_bound(n, observed_sd), boundary)


def seeds_for(gain: float, sd: float, max_seeds: int | None = None, power: float = POWER) -> int | None:
    """The least number of final seeds (>= 3) whose first look detects ``gain`` ``power`` of the time,
    for paired differences of sd ``sd``; None beyond :data:`MOST_SEEDS`. ``max_seeds``: the planned
    most seeds of the spending plan (default: twice the seeds, at least 10, as finalize plans it)."""
    if not gain > 0 or not sd > 0:
        raise ValueError(f"gain {gain} and sd {sd}: expected both > 0")
    for k in range(3, MOST_SEEDS + 1):
        design = Design(max_seeds or default_max_seeds(k))
        look = boundaries((k,), design)[0]
        if detectable_gain(k, sd, look.boundary, power) <= gain:
            return k
    return None


def seeds_to_decide(gain: float, sd: float, margin: float, path: Sequence[int], design: Design) -> int | None:
    """The least number of final seeds past the looks ``path`` whose next look, under ``design``, either finds
    ``gain`` (the difference seen, on the good side) or rules out a gain of ``margin`` 80% of the time at spread
    ``sd``: an undecided verdict's way out. None where the plan's most seeds cannot (or nothing is seen)."""
    target = max(gain, margin - gain)
    if not path or not target > 0 or not sd > 0:
        return None
    for k in range(path[-1] + 1, design.max_seeds + 1):
        look = boundaries((*path, k), design)[-1]
        if detectable_gain(k, sd, look.boundary) <= target:
            return k
    return None


def plan(gain: float, sd: float, max_seeds: int | None = None) -> dict:
    """``search.estimate --plan``: the final seeds ``gain`` needs at spread ``sd``, and what 3, 5, 10 and
    that many seeds would detect (each as a first look under finalize's default spending plan)."""
    k = seeds_for(gain, sd, max_seeds)
    shown = sorted({3, 5, 10, *([k] if k else [])})
    detects = {}
    for n in shown:
        look = boundaries((n,), Design(max_seeds or default_max_seeds(n)))[0]
        detects[str(n)] = round(detectable_gain(n, sd, look.boundary), 5)
    return {
        "gain": gain,
        "spread": sd,
        "power": POWER,
        "final_seeds": k,
        "note": None if k else f"more than {MOST_SEEDS} seeds: below what final seeds can show at this spread",
        "detectable_gain_at": detects,
    }
