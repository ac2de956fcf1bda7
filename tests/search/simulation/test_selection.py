"""The config a simulated study selects: ``choose``'s two sides, the better on dev."""

from dataclasses import replace

from search.simulation.selection import selected
from search.tracking.trial_record import TrialRecord


def table(*rows) -> list[TrialRecord]:
    return [
        TrialRecord(label, label, status, baseline=b, auxiliary=aux, objective=o) for label, status, b, aux, o in rows
    ]


def test_the_better_of_the_two_sides_on_dev():
    t = table(
        ("t00 baseline", "completed", True, "none", 0.80),
        ("t01 sst2+pos square", "completed", False, "sst2+pos", 0.82),
        ("t02 pos prop", "pruned", False, "pos", 0.90),  # stopped early: never selected
        ("t03 single", "completed", False, "none", 0.81),
    )
    assert selected(t, "max").label == "t01 sst2+pos square"
    t[3] = replace(t[3], objective=0.83)
    assert selected(t, "max").label == "t03 single"


def test_one_side_only_or_nothing_completed():
    only_single = table(
        ("t00 baseline", "completed", True, "none", 0.80), ("t01 pos prop", "pruned", False, "pos", 0.9)
    )
    assert selected(only_single, "max").label == "t00 baseline"
    assert selected(table(("t00 baseline", "pruned", True, "none", 0.80)), "max") is None


def test_final_verdict_is_finalizes_on_fresh_seeds(tmp_path):
    """A multitask config 10 pp above the rest is called better; under the null the verdict is finalize's
    headline too, never a made-up one."""
    from dataclasses import replace as with_seed

    from search.answer.stats import BETTER, SAME, WORSE
    from search.simulation.selection import final_verdict
    from search.simulation.study import simulate
    from search.simulation.truth import load_truth, resolve_truth
    from search.study.config import SearchConfig

    path = tmp_path / "big.toml"
    text = open(resolve_truth("null")).read().replace('name = "null"', 'name = "big"')
    path.write_text(text + '\n[[bonus]]\ncontains = ["sst2"]\ngain = 0.10\n')
    for truth_path, allowed in ((str(path), {BETTER}), (resolve_truth("null"), {BETTER, SAME, WORSE})):
        cfg = SearchConfig("absa", preset="full", simulate=truth_path, search="grid", seeds=1, max_concurrent=4)
        truth = with_seed(load_truth(truth_path), seed=3)
        assert final_verdict(simulate(cfg, truth), truth) in allowed
