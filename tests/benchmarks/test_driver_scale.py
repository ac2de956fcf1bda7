"""benchmarks.driver_scale: one study's figures in process (the real searcher and scheduler on a simulated clock),
and its arguments checked."""

import pytest

from benchmarks.driver_scale import one, parse


def test_one_study_gives_the_drivers_cost_and_the_slot_use():
    figures = one(trials=60, slots=8, truth="late_bloomer", search="default", window=20, seed=0)
    assert figures["trials"] == 60 and figures["window"] == 20 and figures["search"] == "cells-halving"
    assert figures["driver_cpu_s"] > 0 and figures["peak_rss_mb"] > 0
    assert 0 < figures["cpu_ms_per_trial_last_tenth"] <= 1000 * figures["driver_cpu_s"] / 6  # its last 6 trials'
    assert 0 < figures["slot_use"] <= 1  # work over slots x makespan, in simulated seconds


def test_the_arguments_are_checked(capsys):
    assert parse([]).trials == [1000, 3000, 10000] and parse([]).window == 256
    with pytest.raises(SystemExit):
        parse(["--window", "-1"])
    assert "--window 0 or more" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(["--quality", "2", "--window", "0"])
    assert "--window 1 or more" in capsys.readouterr().err


def test_the_windows_cost_pairs_each_study_with_and_without_it():
    from benchmarks.driver_scale import quality

    row = quality(trials=40, slots=4, truth="late_bloomer", search="tpe", window=10, studies=2)
    assert row["studies"] == 2 and 0 <= row["same_selection"] <= 2 and row["paired_diff_se"] is not None
    assert 0 < row["true_windowed"] < 1 and 0 < row["true_unbounded"] < 1
