"""Seeds added with error control: a group-sequential paired t test with alpha spending.

A finalized study can be continued with more seeds (``search.finalize --seeds 10`` after 5, or a
planned 3 -> 5 -> 10). Testing at 2.5% at every look and stopping at the first "better" would
inflate the false "better" rate (issue 29: 6.1% along 3 -> 5 -> 10, 8.2% at every K from 3 to 10).
Here each look ``j`` at ``n_j`` seeds may spend only ``A(n_j) - A(n_{j-1})`` of the one-sided error,
with the spending function

    A(n) = alpha * min(1, n / max_seeds) ** RHO

fixed when the first look is taken (``max_seeds``: the planned most seeds, recorded on the study).
The boundary ``c_j`` of the look's t statistic is the one at which a study with no true difference
stops for "better" at look ``j`` with exactly that probability, given it did not stop before: the
t statistics of nested seed sets are correlated, and the joint law of the path under the null
(normal paired differences, any spread: t is scale-free) is simulated once per schedule. The
first look's boundary is the exact t quantile. Whatever the path of looks, the false "better" rate
is then at most ``alpha``; looks beyond ``max_seeds`` have nothing left to spend.

Why spending and not an anytime-valid confidence sequence: with 3 to 10 seeds a confidence
sequence valid at every K is several times wider than the t interval (it pays for looks that are
never taken), while a study takes two or three looks; spending keeps nearly all the power of the
usual first look (``RHO`` small spends most of alpha there) and leaves the rest for added seeds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.025  # one-sided, per direction: the 95% two-sided interval of a single look
RHO = 0.25  # the spending curve's shape: at half the planned seeds, 84% of alpha is spent
PATHS = 400_000  # simulated null paths per schedule: the spent error is exact to about +-0.0003
MIN_MAX_SEEDS = 10


def default_max_seeds(first_look: int) -> int:
    """The planned most seeds when none is given: twice the first look, at least 10."""
    return max(MIN_MAX_SEEDS, 2 * first_look)


@dataclass(frozen=True)
class Design:
    """The spending plan of one study's final comparisons, fixed at its first look."""

    max_seeds: int
    alpha: float = ALPHA
    rho: float = RHO

    def __post_init__(self) -> None:
        if self.max_seeds < 3:
            raise ValueError(f"max_seeds {self.max_seeds}: expected >= 3")
        if not 0 < self.alpha < 0.5 or self.rho <= 0:
            raise ValueError(f"alpha {self.alpha} in (0, 0.5) and rho {self.rho} > 0 expected")

    def spent(self, n: int) -> float:
        """Cumulative one-sided error spent once ``n`` seeds have been looked at."""
        return self.alpha * min(1.0, n / self.max_seeds) ** self.rho if n > 0 else 0.0


@dataclass(frozen=True)
class Look:
    """One look at ``n`` paired seeds: its boundary and what it spent (each direction)."""

    n: int
    boundary: float  # |t| beyond it stops the comparison (inf: nothing left to spend)
    spent: float  # error this look spent
    total: float  # error spent by this and every earlier look


def schedule(pairs: Sequence[int]) -> tuple[int, ...]:
    """The looks that count: pair counts that grew (a repeated or shrunk count is no new look)."""
    looks: list[int] = []
    for n in pairs:
        if n >= 2 and (not looks or n > looks[-1]):
            looks.append(int(n))
    return tuple(looks)


@functools.lru_cache(maxsize=64)
def boundaries(looks: tuple[int, ...], design: Design) -> tuple[Look, ...]:
    """The boundary of every look of ``looks`` (increasing pair counts) under ``design``."""
    from scipy.stats import t

    out: list[Look] = []
    rng = np.random.default_rng(20261125)  # fixed: a study's boundaries are the same at every reading
    total = np.zeros(PATHS)
    squares = np.zeros(PATHS)
    alive = np.ones(PATHS, dtype=bool)
    previous = 0
    for j, n in enumerate(looks):
        spend = design.spent(n) - design.spent(previous)
        if len(looks) == 1:  # one look: the t quantile itself, nothing to simulate
            return (Look(n, float(t.ppf(1 - spend, n - 1)), spend, spend),)
        for start in range(previous, n, 8):  # 8 seeds at a time: memory stays at 8 x PATHS
            z = rng.standard_normal((PATHS, min(8, n - start)))
            total += z.sum(axis=1)
            squares += (z * z).sum(axis=1)
        mean = total / n
        sd = np.sqrt(np.maximum(squares - n * mean * mean, 0.0) / (n - 1))
        stat = mean / (sd / math.sqrt(n))
        if spend * PATHS < 1:
            c = math.inf
        elif j == 0:
            c = float(t.ppf(1 - spend, n - 1))
        else:
            # the (spend * PATHS)-th largest t among paths still running: that many stop for "better" here
            ranked = np.sort(stat[alive])[::-1]
            c = float(ranked[min(int(round(spend * PATHS)), len(ranked) - 1)])
        alive &= np.abs(stat) <= c
        out.append(Look(n, c, spend, design.spent(n)))
        previous = n
    return tuple(out)
