"""The truth's best config over a study's whole space: what regret is measured from.

Every auxiliary subset x every schema of the space (one single-task point), each with its continuous
dimensions (lr, warm-up, anneal's c, power's exponent) swept over a fine grid that includes the truth's
own peak clipped to the range. The sweep is coordinate-wise, one dimension at a time with the others
held at their best so far, twice over: exact for the truth model, whose effect is a sum of terms
that each read one dimension, given the (auxiliary set, schema) pair (``Truth.effect``). Auxiliary
weights and batch size are left at the baseline's (the truth reads neither); so are issue 19's
strategies (the absa space has none; a truth that rewards them needs them added here).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from search.simulation.truth.model import Truth
from search.simulation.truth.replay import TableTruth
from spaces import Range, Study, apply_choices, baseline_choices, canonical, thesis_grid
from trainables.config import TrainConfig

STEPS = 101  # grid points per dimension: 1/100 of the range apart (lr: 1/100 of its decades)


@dataclass(frozen=True)
class Optimum:
    score: float  # Truth.true_score of the best config
    config: TrainConfig
    choices: dict[str, Any]


def sweep(r: Range, peak: float, steps: int = STEPS) -> list[float]:
    """``steps`` values over ``r`` (log-spaced for a log range) and ``peak`` clipped into it."""
    grid = np.geomspace(r.low, r.high, steps) if r.log else np.linspace(r.low, r.high, steps)
    return [float(v) for v in grid] + [min(max(peak, r.low), r.high)]


def dimensions(study: Study, truth: Truth, schema: str) -> dict[str, list[float]]:
    """The continuous dimensions a point with ``schema`` has, each with its sweep."""
    wanted: dict[str, tuple[Any, float]] = {
        "lr": (study.lr, 10**truth.lr.peak),
        "warmup": (study.warmup, truth.warmup.peak),
    }
    if schema == "anneal":
        wanted["anneal_c"] = (study.anneal_c, truth.anneal_c.peak)
    if schema == "power":
        wanted["exponent"] = (study.exponent, truth.exponent.peak)
    return {name: sweep(r, peak) for name, (r, peak) in wanted.items() if isinstance(r, Range)}


def true_best(truth: Truth | TableTruth, study: Study, base: TrainConfig, metric: str) -> Optimum:
    """The best true ``metric`` over ``study``'s space on ``base`` (module docstring: how); a table's, the best
    of the grid's cells (all a table knows)."""
    if isinstance(truth, TableTruth):
        cells = [cell_optimum(truth, study, base, metric, p) for p in thesis_grid(study, base)]
        return max(cells, key=lambda found: found.score)
    template = baseline_choices(study, base)
    best = Optimum(-math.inf, base, {})
    for r in range(len(study.candidates) + 1):
        for subset in itertools.combinations(study.candidates, r):
            for schema in study.schemas if subset else ("prop",):
                point = {**template, "multitask": bool(subset), "schema": schema}
                point.update({f"aux/{t}": t in subset for t in study.candidates})
                found = best_point(truth, study, base, metric, point, dimensions(study, truth, schema))
                if found.score > best.score:
                    best = found
    return best


def cell_optimum(truth: TableTruth, study: Study, base: TrainConfig, metric: str, point: dict[str, Any]) -> Optimum:
    config = canonical(apply_choices(base, point, study))
    return Optimum(truth.true_score(config, metric), config, point)


def best_point(
    truth: Truth, study: Study, base: TrainConfig, metric: str, point: dict[str, Any], dims: dict[str, list[float]]
) -> Optimum:
    """Coordinate-wise maximum of one (auxiliary set, schema) point over ``dims``."""

    def score(p: dict[str, Any]) -> Optimum:
        config = canonical(apply_choices(base, p, study))
        return Optimum(truth.true_score(config, metric), config, p)

    found = score({**point, **{name: values[-1] for name, values in dims.items()}})  # from the clipped peaks
    for _ in range(2):
        for name, values in dims.items():
            for value in values:
                candidate = score({**found.choices, name: value})
                if candidate.score > found.score:
                    found = candidate
    return found
