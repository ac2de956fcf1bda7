"""Paired comparisons over seeds: is a config really better than the baseline?

Every trial trains under the same seeds, so a config and the baseline form pairs
(same seed: same data order for the shared task, same head initialisation). The
difference per seed removes the part of the seed noise both share; its mean gets
a Student-t interval (the paired t-test). Pure functions on arrays.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trainables.config import ConfigError

METHOD = "paired t, 95%"


# the words of a verdict; which side is compared with which is the claim's (search.answer.claims)
BETTER, SAME, WORSE, TOO_FEW = ("better", "no significant difference", "worse", "too few seeds to tell")
UNDECIDED = "undecided"  # the interval holds 0 and a gain worth having: neither is ruled out
ZERO_SPREAD = (
    "no verdict: every seed gave the same difference, so the interval has zero width and measures no seed noise"
)


@dataclass(frozen=True)
class PairedDifference:
    """``config - baseline`` over ``n`` shared seeds, with a two-sided interval."""

    mean: float
    std: float  # sample std of the per-seed differences (NaN for n < 2)
    n: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def method(self) -> str:
        return f"paired t, {100 * self.confidence:.1f}%"


def paired_difference(config: Sequence[float], baseline: Sequence[float], confidence: float = 0.95) -> PairedDifference:
    """Paired t interval of ``mean(config - baseline)``; pairs with a NaN or inf on either side are dropped.

    With one pair the interval is unbounded (NaN): one seed says nothing about noise.
    """
    a, b = np.asarray(config, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    d = (a - b)[np.isfinite(a) & np.isfinite(b)]
    n = len(d)
    if n == 0:
        return PairedDifference(math.nan, math.nan, 0, math.nan, math.nan, confidence)
    mean = float(d.mean())
    if n < 2:
        return PairedDifference(mean, math.nan, 1, math.nan, math.nan, confidence)
    from scipy.stats import t

    std = float(d.std(ddof=1))
    half = float(t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
    return PairedDifference(mean, std, n, mean - half, mean + half, confidence)


# two pairs give a t interval, but two equal differences (common on a small discrete test set)
# give it zero width; three is the least that says anything about seed noise
MIN_PAIRS = 3
SPREAD_TOLERANCE = 1e-9  # relative: a smaller std of the differences is rounding, not seed noise


def verdict(diff: PairedDifference, mode: str = "max", margin: float = math.nan) -> str:
    """Plain words for an interval: better, worse (for ``mode``), no significant difference where it holds 0 and
    rules out a gain of ``margin`` (an equivalence margin, in the metric's units), else undecided.

    Too few pairs, or a zero spread (identical per-seed differences: the t interval collapses to a
    point, whatever the number of seeds), give no verdict and say why."""
    if diff.n < MIN_PAIRS or math.isnan(diff.low):
        return TOO_FEW
    if not diff.std > SPREAD_TOLERANCE * max(1.0, abs(diff.mean)):  # 0.64 - 0.62 != 0.62 - 0.60 in floats
        return ZERO_SPREAD
    if diff.low > 0:
        return BETTER if mode == "max" else WORSE
    if diff.high < 0:
        return WORSE if mode == "max" else BETTER
    largest_gain = diff.high if mode == "max" else -diff.low  # the interval's end on the good side
    return SAME if largest_gain < margin else UNDECIDED


def exceeds_noise(diff: PairedDifference, mode: str = "max") -> bool:
    """Whether a gain is outside its seed noise (the interval excludes 0 on the good side)."""
    return verdict(diff, mode) == BETTER


def against_constant(scores: Sequence[float], constant: float, confidence: float = 0.95) -> PairedDifference:
    """``mean(scores) - constant`` with its t interval over the seeds: a paired difference whose other
    side never varies (a constant predictor's score on the same rows, such as the majority rate)."""
    return paired_difference(scores, [constant] * len(scores), confidence)


def beats_constant(diff: PairedDifference, mode: str = "max") -> bool:
    """Whether scores are better than a constant beyond their seed noise (:func:`against_constant`).

    Too few seeds say no. A zero spread (every seed the same score, typically every seed predicting
    the majority class) is decided by the sign of the difference: there is no noise to be within."""
    said = verdict(diff, mode)
    if said == ZERO_SPREAD:
        return diff.mean > 0 if mode == "max" else diff.mean < 0
    return said == BETTER


def p_value(diff: PairedDifference) -> float:
    """Two-sided paired t p-value of ``diff.mean != 0`` (NaN below two pairs; 0 at zero spread and a nonzero mean)."""
    from scipy.stats import t

    if diff.n < 2 or math.isnan(diff.std):
        return math.nan
    if diff.std == 0:
        return 0.0 if diff.mean else 1.0
    return float(2 * t.sf(abs(diff.mean) / (diff.std / math.sqrt(diff.n)), diff.n - 1))


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down: which of the hypotheses are rejected at family-wise error ``alpha`` (valid under
    any dependence between them; a NaN p-value is never rejected and counts in the family)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (math.isnan(pvalues[i]), pvalues[i]))
    rejected = [False] * m
    for rank, i in enumerate(order):
        if math.isnan(pvalues[i]) or pvalues[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def relative_change(delta: float, baseline: float, floor: float = 0.05) -> float:
    """``delta / |baseline|``, NaN where the baseline is near zero (a relative gain would mislead)."""
    if not math.isfinite(baseline) or abs(baseline) < floor:
        return math.nan
    return delta / abs(baseline)


def mean_std(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean and sample std over the finite values, and how many there were (std NaN below 2)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else math.nan, len(v)


def margin_gain(text: str) -> float:
    """``--margin``'s value (an argparse type, so ``search.run`` refuses it before its search, not after)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise ConfigError(f"--margin {text}: expected a gain > 0 in the objective's units (0.01: 1 pp)")
    return value


def margin_arg(text: str) -> float:
    """``--margin`` as an argparse type: its error is argparse's one line."""
    try:
        return margin_gain(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--margin {text}: ")) from None
