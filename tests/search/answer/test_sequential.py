"""Seeds added with error control: the spending plan's boundaries, checked against simulated null paths."""

import math

import numpy as np
import pytest
from scipy.stats import t

from search.answer.power import detectable_gain, seeds_for
from search.answer.sequential import ALPHA, Design, boundaries, default_max_seeds, schedule


def test_one_look_is_the_t_quantile_of_what_it_spends():
    design = Design(10)
    (look,) = boundaries((5,), design)
    assert look.spent == pytest.approx(ALPHA * 0.5**0.25)
    assert look.boundary == pytest.approx(t.ppf(1 - look.spent, 4))
    assert boundaries((10,), design)[0].spent == pytest.approx(ALPHA)


def test_looks_spend_the_error_once_and_nothing_beyond_the_plan():
    looks = boundaries((3, 5, 10, 12), Design(10))
    assert looks[-2].total == pytest.approx(ALPHA) and sum(x.spent for x in looks) == pytest.approx(ALPHA)
    assert math.isinf(looks[-1].boundary)  # past the planned most seeds: nothing left
    assert schedule([3, 3, 5, 4, 10]) == (3, 5, 10)  # a repeated or smaller count is no new look
    assert default_max_seeds(5) == 10 and default_max_seeds(8) == 16


@pytest.mark.parametrize("path", [(3, 5, 10), tuple(range(3, 11)), (5, 10)])
def test_stopping_at_the_first_better_keeps_the_error(path):
    # fresh null paths (another generator than the boundaries'), stop at the first t above the boundary
    rng = np.random.default_rng(7)
    d = rng.standard_normal((40_000, path[-1]))
    stopped = np.zeros(len(d), dtype=bool)
    for look in boundaries(path, Design(default_max_seeds(path[0]))):
        x = d[:, : look.n]
        stat = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(look.n))
        stopped |= stat > look.boundary
    se = math.sqrt(ALPHA * (1 - ALPHA) / len(d))
    assert stopped.mean() <= ALPHA + 2 * se, stopped.mean()
    naive = np.zeros(len(d), dtype=bool)  # testing each look at 2.5%: what the plan prevents
    for n in path:
        x = d[:, :n]
        naive |= x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n)) > t.ppf(1 - ALPHA, n - 1)
    assert naive.mean() > ALPHA + 4 * se


def test_detectable_gain_and_planning_agree_with_simulated_power():
    # (c + t_0.8) * sd / sqrt(n): hand-worked at n = 5, boundary 2.776, sd 0.02
    assert detectable_gain(5, 0.02, 2.776) == pytest.approx((2.776 + t.ppf(0.8, 4)) * 0.02 / math.sqrt(5))
    assert math.isnan(detectable_gain(1, 0.02, 2.0)) and math.isnan(detectable_gain(5, 0.02, math.inf))
    k = seeds_for(0.02, 0.015)
    assert k is not None and seeds_for(0.01, 0.015) > k > seeds_for(0.04, 0.015)
    boundary = boundaries((k,), Design(default_max_seeds(k)))[0].boundary
    rng = np.random.default_rng(3)
    d = 0.02 + 0.015 * rng.standard_normal((20_000, k))
    power = (d.mean(1) / (d.std(1, ddof=1) / math.sqrt(k)) > boundary).mean()
    assert power >= 0.78, power  # the normal-theory formula errs on the safe side
    with pytest.raises(ValueError):
        seeds_for(0.0, 0.01)


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_stated_gain_is_found_80_percent_of_the_time_averaged_over_studies(n):
    from scipy.stats import nct

    from search.answer.power import spread_bound, stated_gain

    boundary = boundaries((n,), Design(default_max_seeds(n)))[0].boundary
    rng = np.random.default_rng(n)
    spreads = rng.standard_normal((20_000, n)).std(1, ddof=1)  # observed spreads of studies at true spread 1
    assert stated_gain(n, 0.02, boundary) == pytest.approx(0.02 * stated_gain(n, 1.0, boundary))  # linear in the sd
    gains = spreads * stated_gain(n, 1.0, boundary)
    found = nct.sf(boundary, n - 1, gains * math.sqrt(n))  # each stated gain's true power
    assert found.mean() >= 0.78, found.mean()
    naive = nct.sf(boundary, n - 1, spreads * detectable_gain(n, 1.0, boundary) * math.sqrt(n))
    assert naive.mean() < 0.76  # the observed spread taken as the true one: optimistic
    assert spread_bound(n, 1.0) > 1.0 and math.isnan(spread_bound(1, 1.0))
