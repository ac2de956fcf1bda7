import math

import pytest

from search.answer.stats import (
    BETTER,
    SAME,
    TOO_FEW,
    UNDECIDED,
    WORSE,
    ZERO_SPREAD,
    against_constant,
    beats_constant,
    exceeds_noise,
    mean_std,
    paired_difference,
    relative_change,
    verdict,
)


def test_paired_t_interval_on_hand_worked_numbers():
    # differences 0.05, 0.04, 0.03, 0.04, 0.06: mean 0.044, sd sqrt(1.3e-4), t(0.975, 4) = 2.776445
    d = paired_difference([0.80, 0.82, 0.79, 0.81, 0.80], [0.75, 0.78, 0.76, 0.77, 0.74])
    assert d.n == 5 and d.mean == pytest.approx(0.044)
    assert d.std == pytest.approx(math.sqrt(1.3e-4))
    half = 2.776445 * math.sqrt(1.3e-4) / math.sqrt(5)
    assert (d.low, d.high) == (pytest.approx(0.044 - half, abs=1e-6), pytest.approx(0.044 + half, abs=1e-6))
    assert d.method == "paired t, 95.0%"


def test_pairing_removes_shared_seed_noise():
    # unpaired, the seed spread (0.1) swamps the gain; paired, every seed gains 0.01 +- 0.001
    base = [0.5, 0.6, 0.7, 0.8]
    better = [b + 0.01 + e for b, e in zip(base, (0.001, -0.001, 0.0005, -0.0005))]
    assert verdict(paired_difference(better, base)) == BETTER


def test_verdicts_follow_the_interval_and_mode():
    up = paired_difference([0.9, 0.91, 0.92], [0.8, 0.8, 0.81])
    down = paired_difference([0.8, 0.8, 0.81], [0.9, 0.91, 0.92])
    mixed = paired_difference([0.8, 0.9, 0.85], [0.85, 0.85, 0.85])
    assert (verdict(up), verdict(down), verdict(mixed)) == (BETTER, WORSE, UNDECIDED)  # no margin: none ruled out
    # the interval [-0.07, +0.10]: "no significant difference" only where it rules out the gain worth having
    assert (verdict(mixed, margin=0.2), verdict(mixed, margin=0.05)) == (SAME, UNDECIDED)
    assert verdict(mixed, "min", margin=0.2) == SAME and verdict(mixed, "min", margin=0.05) == UNDECIDED
    assert (verdict(up, "min"), verdict(down, "min")) == (WORSE, BETTER)  # e.g. a loss
    assert exceeds_noise(up) and not exceeds_noise(mixed) and not exceeds_noise(down)


def test_too_few_pairs_say_so():
    one = paired_difference([0.9, math.nan], [0.1, 0.2])  # a NaN drops its pair
    assert one.n == 1 and one.mean == pytest.approx(0.8) and math.isnan(one.low)
    assert verdict(one) == TOO_FEW and verdict(paired_difference([], [])) == TOO_FEW
    # two seeds whose differences happen to be equal: a zero-width interval, still no verdict
    two = paired_difference([0.62, 0.64], [0.60, 0.62])
    assert two.low == pytest.approx(two.high) and verdict(two) == TOO_FEW and not exceeds_noise(two)
    with pytest.raises(ValueError):
        paired_difference([1.0, 2.0], [1.0])


def test_a_zero_spread_gives_no_verdict_and_says_why():
    # three identical differences (in floats 0.64 - 0.62 and 0.62 - 0.60 differ in the last bit)
    same = paired_difference([0.62, 0.64, 0.66], [0.60, 0.62, 0.64])
    assert same.n == 3 and same.high - same.low < 1e-12
    assert verdict(same) == ZERO_SPREAD and "zero width" in ZERO_SPREAD and not exceeds_noise(same)


def test_inf_is_dropped_like_nan():
    d = paired_difference([0.9, math.inf, 0.8, 0.85], [0.8, 0.7, -math.inf, 0.8])
    assert d.n == 2 and d.mean == pytest.approx(0.075)


def test_relative_change_is_withheld_near_zero():
    assert relative_change(0.1, 0.5) == pytest.approx(0.2)
    assert math.isnan(relative_change(0.1364, 0.01)) and math.isnan(relative_change(0.1, math.nan))


def test_mean_std_counts_finite_values():
    assert mean_std([1.0, 3.0, math.nan]) == (2.0, pytest.approx(math.sqrt(2)), 2)
    m, s, n = mean_std([1.0])
    assert (m, n) == (1.0, 1) and math.isnan(s)


def test_a_score_beats_the_majority_rate_only_beyond_its_seed_noise():
    # the smoke run's shape: dev acc_4way over 3 final seeds against a majority rate of 0.5831
    clear = against_constant([0.6296, 0.6310, 0.6280], 0.5831)
    noisy = against_constant([0.5900, 0.5750, 0.5880], 0.5831)  # mean 0.5843: above, inside its noise
    assert clear.n == 3 and clear.mean == pytest.approx(0.6295 - 0.5831, abs=1e-4)
    assert beats_constant(clear) and not beats_constant(noisy)
    assert noisy.low < 0 < noisy.high
    # every seed at the majority answer: zero spread, decided by the sign (no noise to be within)
    assert not beats_constant(against_constant([0.5831] * 3, 0.5831))
    assert beats_constant(against_constant([0.60] * 3, 0.5831))
    # two seeds cannot tell; lower is better for a min metric
    assert not beats_constant(against_constant([0.70, 0.71], 0.5831))
    assert beats_constant(against_constant([0.20, 0.21, 0.22], 0.5), mode="min")


def test_holm_steps_down_and_p_values_match_the_t_interval():
    from search.answer.stats import holm, p_value

    # m = 4 at 5%: 0.01 <= 0.0125 and 0.016 <= 0.0167 rejected, 0.03 > 0.025 stops the walk
    assert holm([0.03, 0.01, 0.016, 0.2]) == [False, True, True, False]
    assert holm([0.011, math.nan]) == [True, False] and holm([]) == []
    assert holm([0.026, 0.026]) == [False, False]  # one test at 0.026 would pass; two must share alpha
    d = paired_difference([0.80, 0.82, 0.79, 0.81, 0.80], [0.75, 0.78, 0.76, 0.77, 0.74])
    edge = paired_difference([0.8, 0.81, 0.79], [0.8, 0.8, 0.8])
    assert p_value(d) < 0.05 and verdict(d) == BETTER and p_value(edge) > 0.05 and verdict(edge) == UNDECIDED
