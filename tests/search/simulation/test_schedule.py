"""A search's schedule at a slot count (search.simulation.schedule): wall time and slot-time, and search.estimate's."""

import json

import pytest

from search.simulation.schedule import schedule
from search.study.config import SearchConfig


def test_cohort_halving_holds_more_slot_time_as_slots_outnumber_its_cells():
    at = {n: schedule(SearchConfig("absa", preset="full", max_concurrent=n), "semeval", "acc_4way") for n in (4, 32)}
    few, many = at[4], at[32]
    # the cohort decides at every rung on the same results whatever the slots: the same work, sooner
    assert few.trials == many.trials == 43 and few.spent == pytest.approx(many.spent)
    assert many.wall < few.wall and many.slot_time == 32 * many.wall
    assert 0 < many.slot_use < few.slot_use <= 1
    # a finalist trains its first seed through every epoch, then its second from scratch, in one slot: the wall
    # is at least that chain whatever the slots (8.25 seed-epochs at the full preset)
    assert many.wall >= 8.25


def test_the_grid_on_as_many_slots_as_cells_takes_one_trials_time():
    cfg = SearchConfig("absa", preset="full", max_concurrent=43, search="grid", seeds=1, grace_period=4)
    grid = schedule(cfg, "semeval", "acc_4way")
    assert (grid.trials, grid.spent, grid.wall, grid.slot_use) == (43, 172, 4, 1.0)


def test_the_estimate_gives_the_schedule_at_each_slot_count_in_hours_and_dollars(monkeypatch, capsys):
    from search.estimate import main

    argv = ["search.estimate", "absa", "--slots", "4", "32", "--samples-per-second", "500", "--usd-per-hour", "2"]
    monkeypatch.setattr("sys.argv", argv)
    assert main() == 0
    rows = json.loads(capsys.readouterr().out)["schedule"]
    assert [r["slots"] for r in rows] == [4, 32] and rows[1]["slot_seed_epochs"] > rows[0]["slot_seed_epochs"]
    for r in rows:
        assert r["slot_hours"] == pytest.approx(r["slots"] * r["wall_hours"], rel=0.05)
        assert r["usd_slot_hours"] == pytest.approx(2 * r["slot_hours"], abs=0.02)


def test_a_study_too_big_to_simulate_says_so():
    from search.estimate import estimate

    out = estimate(SearchConfig("absa", preset="smoke", trials=2000, max_concurrent=32), None, None)
    assert out["schedule"].startswith("not simulated: over 500 trials")
