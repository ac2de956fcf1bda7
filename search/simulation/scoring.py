"""How well a search did against the truth: pure functions on arrays (scores in accuracy units)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

TOLERANCE = 1e-12  # float noise: a config at exactly epsilon counts as within it


def regret(best: float, scores: Sequence[float] | np.ndarray, mode: str = "max") -> np.ndarray:
    """How far each true score is from the true best (>= 0 when ``best`` is the best)."""
    scores = np.asarray(scores, dtype=np.float64)
    return best - scores if mode == "max" else scores - best


def within(regrets: Sequence[float] | np.ndarray, epsilon: float) -> np.ndarray:
    """Whether each config is within ``epsilon`` of the true best."""
    return np.asarray(regrets, dtype=np.float64) <= epsilon + TOLERANCE


def mean_se(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and its Monte Carlo standard error (sample std / sqrt n; NaN below two values)."""
    x = np.asarray(values, dtype=np.float64)
    if not len(x):
        return math.nan, math.nan
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan


def proportion_se(hits: Sequence[bool] | np.ndarray) -> tuple[float, float]:
    """A rate and its binomial standard error, sqrt(p (1 - p) / n)."""
    x = np.asarray(hits, dtype=np.float64)
    if not len(x):
        return math.nan, math.nan
    p = float(x.mean())
    return p, math.sqrt(p * (1 - p) / len(x))


def step_at(grid: Sequence[float] | np.ndarray, xs: Sequence[float], ys: Sequence[float]) -> np.ndarray:
    """A best-so-far curve ``ys`` (recorded at increasing compute ``xs``) read at each ``grid`` point:
    the last value recorded at or before it, NaN before the first."""
    xs_, ys_ = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    at = np.searchsorted(xs_, np.asarray(grid, dtype=np.float64), side="right") - 1
    return np.where(at >= 0, ys_[np.clip(at, 0, None)] if len(ys_) else math.nan, math.nan)
