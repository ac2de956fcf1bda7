"""Regret, within-epsilon, standard errors and best-so-far curves on hand-worked cases."""

import math

import numpy as np

from search.simulation.scoring import mean_se, proportion_se, regret, step_at, within


def test_regret_is_the_distance_below_the_true_best():
    assert np.allclose(regret(0.87, [0.87, 0.86, 0.8497]), [0.0, 0.01, 0.0203])
    assert np.allclose(regret(0.2, [0.25], mode="min"), [0.05])  # a loss: above the best is worse


def test_within_epsilon_counts_the_boundary_in():
    r = regret(0.87, [0.87, 0.865, 0.86, 0.8599])
    assert within(r, 0.005).tolist() == [True, True, False, False]
    assert within(r, 0.01).tolist() == [True, True, True, False]  # 0.87 - 0.86 is 0.01 up to float noise


def test_mean_and_proportion_standard_errors():
    assert mean_se([1.0, 2.0, 3.0]) == (2.0, 1.0 / math.sqrt(3))
    assert math.isnan(mean_se([1.0])[1]) and math.isnan(mean_se([])[0])
    assert proportion_se([True, False, False, True]) == (0.5, 0.25)


def test_step_at_reads_the_last_value_recorded_so_far():
    got = step_at([0, 5, 10, 12, 15], [5, 12], [0.1, 0.3])
    assert math.isnan(got[0]) and got[1:].tolist() == [0.1, 0.1, 0.3, 0.3]
