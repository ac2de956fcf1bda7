"""The final comparison's pure parts on hand-made trial tables (the end-to-end run is in test_study)."""

import math

import pandas as pd
import pytest

from search.answer.comparison import Contender, compare
from search.answer.contenders import choose, collect, objective_metric_of, per_seed, primary_test_metrics
from trainables.config import ConfigError, TrainConfig


def row(label, status, objective, baseline=False, dev=(), test=()):
    r = {
        "label": label,
        "status": status,
        "objective": objective,
        "objective_std": 0.01,
        "baseline": baseline,
        "canonical_key": label,
        "run_id": label,
    }
    for seed, value in enumerate(dev, 1):
        r[f"objective/seed{seed}"] = value
    for seed, value in enumerate(test, 1):
        r[f"semeval/test/acc_4way/seed{seed}"] = value
    return r


TABLE = pd.DataFrame(
    [
        row("t00 baseline", "completed", 0.70, True, (0.69, 0.71), (0.60, 0.62)),
        row("t01 sst2 sqrt", "completed", 0.74, False, (0.73, 0.75), (0.65, 0.66)),
        row("t02 pos square", "pruned", 0.90),  # pruned trials never win, however high they stood
        row("t03 sst2+pos prop", "completed", 0.72, False, (0.72, 0.72), (0.64, 0.63)),
    ]
)


def test_choose_takes_the_best_completed_multitask_trial_and_the_baseline():
    winner, baseline = choose(TABLE, "max")
    assert (winner.label, baseline.label) == ("t01 sst2 sqrt", "t00 baseline")
    assert choose(TABLE, "min")[0].label == "t03 sst2+pos prop"
    with pytest.raises(ConfigError, match="no completed baseline"):
        choose(TABLE[~TABLE.baseline], "max")
    with pytest.raises(ConfigError, match="no completed multitask"):
        choose(TABLE[TABLE.baseline], "max")


def test_per_seed_values_and_metrics_are_read_from_columns():
    assert per_seed(TABLE.iloc[1], "semeval/test/acc_4way") == {1: 0.65, 2: 0.66}
    assert primary_test_metrics(TABLE, "semeval") == ["acc_4way"]
    assert objective_metric_of("semeval/dev/acc_4way/mean", "semeval") == "acc_4way"
    assert objective_metric_of("train/loss/mean", "semeval") is None


def test_compare_pairs_seeds_and_names_the_verdict():
    config = TrainConfig(tasks=("semeval",), primary="semeval")
    winner, baseline = Contender("winner", TABLE.iloc[1], config), Contender("baseline", TABLE.iloc[0], config)
    collect(winner, [TABLE.iloc[1]], "semeval", ["acc_4way"])
    collect(baseline, [TABLE.iloc[0]], "semeval", ["acc_4way"])
    # a third seed from a later finalize run; a row lacking a test score for a seed adds nothing
    extra = pd.Series({"objective/seed3": 0.74, "semeval/test/acc_4way/seed3": 0.655, "checkpoint_dir": "/ck/w"})
    collect(winner, [extra, pd.Series({"objective/seed4": 0.7})], "semeval", ["acc_4way"])
    collect(
        baseline, [pd.Series({"objective/seed3": 0.70, "semeval/test/acc_4way/seed3": 0.61})], "semeval", ["acc_4way"]
    )
    assert winner.dev == {1: 0.73, 2: 0.75, 3: 0.74} and winner.checkpoints == {3: "/ck/w/seed-3.pt"}
    rows, headline = compare(winner, baseline, ["acc_4way"], [1, 2, 3], "max", "acc_4way")
    assert headline is rows[0] and headline["n"] == 3
    assert headline["diff_mean"] == pytest.approx((0.05 + 0.04 + 0.045) / 3)
    assert headline["verdict"] == "better than the baseline"  # differences 0.05, 0.04, 0.045: tight
    rows, _ = compare(winner, baseline, ["acc_4way"], [1, 2, 3, 4], "max", "acc_4way")
    assert rows[0]["n"] == 3  # seed 4 has no pair
    worse, _ = compare(baseline, winner, ["acc_4way"], [1, 2, 3], "max", "acc_4way")
    assert worse[0]["verdict"] == "worse than the baseline" and math.isclose(
        worse[0]["diff_mean"], -rows[0]["diff_mean"]
    )
