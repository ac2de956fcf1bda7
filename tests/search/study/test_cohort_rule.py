"""Cohort halving's decision rule on hand-made cohorts: who goes on past a rung, with and without exposure
strata, a hedge and a floor; and which cohort positions a hedge draws."""

from collections import Counter

import pytest

from search.study.cohort_rule import Cohort, CohortRule, hedged_positions

# four epochs, a screen point a quarter into the first: rungs 0.25, 1, 2 and 3 (the last)
RULE = CohortRule(factor=3, screen=0.25, grace=1, max_t=4)
SINGLE, MULTI = "single-task", "multitask"


def cohort(values: dict[str, float], families: dict[str, str], **kw) -> Cohort:
    """The baseline is ``base``; single-task trials are on the single-task side, the rest multitask."""
    sides = {t: SINGLE if families[t] == SINGLE else MULTI for t in values}
    return Cohort(values=values, families=families, sides=sides, baselines=kw.pop("baselines", ("base",)), **kw)


# the baseline, a single-task trial above it, two prop, two square and four anneal (the slow starters)
VALUES = {"base": 0.70, "alone": 0.75, "a": 0.90, "b": 0.89, "c": 0.88, "d": 0.80}
VALUES |= {"e": 0.79, "f": 0.78, "g": 0.60, "h": 0.59}
FAMILIES = {"base": SINGLE, "alone": SINGLE, "a": "prop", "b": "prop", "c": "square", "d": "square"}
FAMILIES |= {"e": "anneal", "f": "anneal", "g": "anneal", "h": "anneal"}


def test_without_strata_the_top_third_goes_on_with_the_baseline_the_sides_and_the_families_leaders():
    grid = cohort(VALUES, FAMILIES)
    top = {"a", "b", "c", "d"}  # ceil(10 / 3)
    # the last rung: the top, the baseline, the single-task side's leader ("alone", above the baseline)
    assert RULE.promote(3.0, grid) == top | {"base", "alone"}
    # below it (and at the first whole-epoch rung) anneal's leader too, however far behind
    assert RULE.promote(1.0, grid) == RULE.promote(2.0, grid) == top | {"base", "alone", "e"}
    assert CohortRule(3, None, 1, 2).promote(1.0, grid) == top | {"base", "alone", "e"}  # the first rung is the last
    assert CohortRule(2, None, 1, 4).promote(3.0, grid) == {"a", "b", "c", "d", "e", "base", "alone"}  # ceil(10/2)


def test_at_the_screen_each_family_keeps_its_own_top():
    grid = cohort(VALUES, FAMILIES)
    # prop: ceil(2/3) = 1, square 1, anneal ceil(4/3) = 2, single-task 1 (alone) and the baseline
    assert RULE.promote(0.25, grid) == {"a", "c", "e", "f", "alone", "base"}
    assert "f" not in RULE.promote(1.0, grid)  # at an epoch rung, anneal's runner-up is ranked with the rest


# six prop cells: the more of the primary a cell saw, the better it scores at the rung
PASSES = {"p1": 0.2, "p2": 0.3, "p3": 0.5, "p4": 0.6, "p5": 0.9, "p6": 1.0}
SCORES = {"p1": 0.70, "p2": 0.72, "p3": 0.80, "p4": 0.81, "p5": 0.85, "p6": 0.86}


def exposed(passes: dict[str, float] = PASSES, **kw) -> Cohort:
    return Cohort(SCORES, dict.fromkeys(SCORES, "prop"), dict.fromkeys(SCORES), passes=passes, **kw)


def test_with_strata_a_rung_is_ranked_within_groups_of_equal_exposure():
    one = CohortRule(3, None, 1, 4)
    strata = CohortRule(3, None, 1, 4, strata=3)
    assert one.promote(3.0, exposed()) == {"p5", "p6"}  # ceil(6 / 3), by score alone
    # three strata of two (p1 p2 | p3 p4 | p5 p6), the top of each: p2 goes on as the best of the least exposed
    assert strata.promote(3.0, exposed()) == {"p2", "p4", "p6"}
    shuffled = {"p1": 0.9, "p2": 0.2, "p3": 1.0, "p4": 0.3, "p5": 0.6, "p6": 0.5}  # p2 p4 | p6 p5 | p1 p3
    assert strata.promote(3.0, exposed(shuffled)) == {"p4", "p6", "p3"}
    assert CohortRule(3, None, 1, 4, strata=6).promote(3.0, exposed()) == set(SCORES)  # a stratum each
    assert CohortRule(3, None, 1, 4, strata=9).promote(3.0, exposed()) == set(SCORES)  # more strata than trials
    # the screen too: strata rank across families there
    mixed = Cohort(SCORES, {t: "prop" if t in ("p1", "p3", "p5") else "anneal" for t in SCORES}, {}, passes=PASSES)
    assert CohortRule(3, 0.25, 1, 4).promote(0.25, mixed) == {"p5", "p6"}  # each family's top
    assert CohortRule(3, 0.25, 1, 4, strata=3).promote(0.25, mixed) == {"p2", "p4", "p6"}


def test_strata_without_every_trials_passes_fall_back_to_one_ranking_and_say_so(caplog, monkeypatch):
    monkeypatch.setattr("search.study.cohort_rule._warned", set())
    strata = CohortRule(3, None, 1, 4, strata=3)
    missing = {t: p for t, p in PASSES.items() if t != "p1"}
    assert strata.promote(3.0, exposed(missing)) == {"p5", "p6"}
    assert strata.promote(3.0, exposed({})) == {"p5", "p6"}
    warned = [r.getMessage() for r in caplog.records if "exposure strata asked for" in r.getMessage()]
    assert len(warned) == 1 and "ranked as one group" in warned[0]  # once a process, not once a rung


def test_hedged_trials_go_on_past_every_rung_below_the_last_and_meet_the_rest_there():
    grid = cohort(VALUES, FAMILIES, hedged={"h", "g"})
    for rung in (0.25, 1.0, 2.0):
        assert {"g", "h"} <= RULE.promote(rung, grid), rung
    assert not {"g", "h"} & RULE.promote(3.0, grid)
    assert not {"g", "h"} & RULE.promote(1.0, cohort(VALUES, FAMILIES))  # unhedged, they would not


def test_a_start_at_or_below_the_floor_goes_on_once_at_a_whole_epoch_rung_below_the_last():
    values = {**SCORES, "p1": 0.55, "p2": 0.5}  # p1 at the floor, p2 below it
    rule = CohortRule(3, 0.25, 1, 4, floor=0.55)
    cells = Cohort(values, dict.fromkeys(values, "prop"), dict.fromkeys(values))
    assert rule.promote(1.0, cells) == {"p5", "p6", "p1", "p2"}
    assert rule.promote(3.0, cells) == {"p5", "p6"}  # the last: past it a finalist trains every seed
    assert rule.at_floor(1.0, values) == {"p1", "p2"}
    assert rule.promote(0.25, cells) == {"p6", "p5"}  # the screen: a fraction of an epoch proves nothing
    assert rule.at_floor(0.25, values) == set()
    again = Cohort(values, cells.families, cells.sides, failed_before={"p1"})
    assert rule.promote(2.0, again) == {"p5", "p6", "p2"}  # p1 failed before: judged as any other now
    assert CohortRule(3, 0.25, 1, 4).promote(1.0, cells) == {"p5", "p6"}  # no floor: no pass
    assert CohortRule(3, 0.25, 1, 4).at_floor(1.0, values) == set()
    assert CohortRule(3, 0.25, 1, 4, floor=0.5).promote(1.0, cells) == {"p5", "p6", "p2"}  # at it: on
    assert CohortRule(3, 0.25, 1, 4, floor=0.5 - 1e-6).promote(1.0, cells) == {"p5", "p6"}


def test_the_last_rung_and_where_family_leaders_are_kept():
    assert RULE.last == 3.0
    assert [RULE.keeps_leaders(r) for r in (0.25, 1.0, 2.0, 3.0)] == [False, True, True, False]
    assert CohortRule(3, None, 2, 5).keeps_leaders(2.0) and not CohortRule(3, None, 2, 5).keeps_leaders(4.0)


def test_hedged_positions_are_drawn_from_the_seed_never_the_baseline():
    assert hedged_positions(43, 3, seed=7) == hedged_positions(43, 3, seed=7)
    assert len({hedged_positions(43, 3, seed=s) for s in range(20)}) > 15  # another seed, another draw
    for n, hedge in ((43, 3), (5, 4), (5, 9), (2, 1)):
        for seed in range(30):
            drawn = hedged_positions(n, hedge, seed)
            assert len(drawn) == min(hedge, n - 1) and 0 not in drawn and drawn <= set(range(1, n)), (n, hedge)
    assert hedged_positions(5, 9, 0) == frozenset(range(1, 5))
    assert hedged_positions(43, 0, 1) == hedged_positions(1, 3, 1) == hedged_positions(0, 3, 1) == frozenset()


def test_every_position_is_about_equally_likely_to_be_hedged():
    n, hedge, seeds = 10, 2, 4000
    counts = Counter(p for seed in range(seeds) for p in hedged_positions(n, hedge, seed))
    expected = seeds * hedge / (n - 1)  # 889, sd about 26
    assert set(counts) == set(range(1, n))
    assert all(abs(c - expected) < 0.12 * expected for c in counts.values()), counts


@pytest.mark.parametrize("rung", [0.25, 1.0, 3.0])
def test_a_cohort_of_the_baseline_alone_keeps_it(rung):
    alone = Cohort({"base": 0.1}, {"base": SINGLE}, {"base": SINGLE}, baselines=("base",))
    assert RULE.promote(rung, alone) == {"base"}


def test_trials_tied_with_the_last_of_the_top_go_on_with_it():
    # a screen where every cell still scores the majority rate (as at the full preset): nothing to cut on
    flat = Cohort(dict.fromkeys(SCORES, 0.583), dict.fromkeys(SCORES, "prop"), dict.fromkeys(SCORES))
    assert CohortRule(3, 0.25, 1, 4).promote(0.25, flat) == set(SCORES)
    # ceil(6 / 3) = 2: p6 and p5 are the top, p4 ties p5 and goes on, p3 below does not
    tied = Cohort(SCORES | {"p4": 0.85}, dict.fromkeys(SCORES, "prop"), dict.fromkeys(SCORES))
    assert CohortRule(3, None, 1, 4).promote(3.0, tied) == {"p4", "p5", "p6"}
    # within a stratum too: p1 and p2 tie, both go on
    both = Cohort(SCORES | {"p1": 0.72}, dict.fromkeys(SCORES, "prop"), dict.fromkeys(SCORES), passes=PASSES)
    assert CohortRule(3, None, 1, 4, strata=3).promote(3.0, both) == {"p1", "p2", "p4", "p6"}
