"""The verdict's calibration, measured on simulated studies through finalize's own functions."""

import math

from search.answer.stats import BETTER, SAME, WORSE
from search.simulation.calibration import Simulation, better_rate, simulate_study


def test_false_better_rate_under_the_null_is_at_most_nominal():
    studies = 2000
    rate, _ = better_rate(Simulation(), studies, seed=0)
    assert rate <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / studies), rate


def test_a_true_effect_is_found_more_often_than_none():
    import numpy as np

    strong = Simulation(effect=0.03)  # three seed sds
    assert simulate_study(strong, np.random.default_rng(1)) in (BETTER, SAME, WORSE)
    assert better_rate(strong, 200, seed=1)[0] > 0.5
