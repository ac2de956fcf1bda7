"""The config a simulated study selects: ``choose``'s two sides, the better on dev."""

import pandas as pd

from search.simulation.selection import selected


def table(*rows) -> pd.DataFrame:
    cols = ("label", "status", "baseline", "auxiliary", "objective")
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_the_better_of_the_two_sides_on_dev():
    t = table(
        ("t00 baseline", "completed", True, "none", 0.80),
        ("t01 sst2+pos square", "completed", False, "sst2+pos", 0.82),
        ("t02 pos prop", "pruned", False, "pos", 0.90),  # stopped early: never selected
        ("t03 single", "completed", False, "none", 0.81),
    )
    assert selected(t, "max").label == "t01 sst2+pos square"
    t.loc[3, "objective"] = 0.83
    assert selected(t, "max").label == "t03 single"


def test_one_side_only_or_nothing_completed():
    only_single = table(
        ("t00 baseline", "completed", True, "none", 0.80), ("t01 pos prop", "pruned", False, "pos", 0.9)
    )
    assert selected(only_single, "max").label == "t00 baseline"
    assert selected(table(("t00 baseline", "pruned", True, "none", 0.80)), "max") is None
