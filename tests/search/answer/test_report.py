"""The report's sentences, on hand-made inputs (the whole report is tested end to end in test_study.py)."""

import math

import pytest

from search.answer.ranking import baseline_lr
from spaces import get_study
from spaces.canonical import baseline_choices, baseline_moves
from trainables.config import TrainConfig


def test_the_baseline_lr_says_where_it_comes_from():
    assert baseline_lr(2e-5, 2e-5) == "The baseline trains with lr 2e-05 (the thesis's)."
    assert baseline_lr(1e-4, 1e-4) == "The baseline trains with lr 0.0001, the preset's, not the thesis's 2e-05."
    assert baseline_lr(5e-5, 2e-5) == (
        "The baseline trains with lr 5e-05: moved into the study's lr range from the preset's 2e-05 (the thesis's)."
    )
    assert baseline_lr(5e-5, 1e-4).endswith("from the preset's 0.0001 (the thesis's is 2e-05).")


def test_a_range_that_excludes_the_preset_lr_moves_the_baseline_and_says_so():
    from dataclasses import replace

    from spaces import Range

    study = replace(get_study("absa"), lr=Range(5e-5, 1e-4, log=True))
    base = TrainConfig(tasks=("semeval",), primary="semeval")  # the thesis's lr, 2e-5
    assert baseline_choices(study, base)["lr"] == 5e-5
    assert baseline_moves(study, base) == {"lr": (2e-5, 5e-5)}
    assert baseline_moves(get_study("absa"), base) == {}


def test_the_dev_screen_calls_a_trial_above_only_where_holm_rejects():
    from search.answer.ranking import versus_baseline
    from search.tracking.trial_record import TrialRecord

    def trial(label, baseline, values):
        seeds = {f"semeval/dev/acc_4way/seed{s}": v for s, v in enumerate(values, 1)}
        objective = sum(values) / len(values)
        return TrialRecord(label, label, "completed", baseline=baseline, objective=objective,
                           objective_metric="semeval/dev/acc_4way", metrics=seeds)  # fmt: skip

    base = (0.70, 0.71, 0.69, 0.70)
    clear = trial("t01", False, (0.80, 0.812, 0.789, 0.80))  # +10 pp on every seed: passes Holm's first step
    marginal = trial("t02", False, (0.72, 0.74, 0.695, 0.72))  # p 0.036: alone it passes 5%, among 7 it does not
    noise = [trial(f"t{i:02d}", False, (0.70, 0.72, 0.68, 0.70)) for i in range(3, 8)]
    done = versus_baseline([trial("t00", True, base), clear, marginal, *noise], "max")
    screen = {x.trial.label: x.beyond_noise for x in done}
    assert screen["t00"] == "–" and screen["t01"] == "above" and screen["t02"] == "within noise"
    assert done[1].delta == pytest.approx(0.1003, abs=1e-4) and done[1].low > 0 and done[0].delta == 0
    alone = versus_baseline([trial("t00", True, base), marginal], "max")
    assert alone[1].beyond_noise == "above"  # the same trial, in a family of one


def test_the_ranking_puts_the_best_first_a_trial_without_objective_last_and_a_key_once():
    from search.answer.ranking import Ranked, by_objective, first_of_each_key
    from search.tracking.trial_record import TrialRecord

    def ranked(label, objective, key=None):
        return Ranked(TrialRecord(label, label, "completed", key=key or label, objective=objective), 0, 0, 0, 0, "")

    rows = [ranked("a", 0.7), ranked("b", math.nan), ranked("c", 0.9), ranked("d", 0.7)]
    assert [x.trial.label for x in by_objective(rows, "max")] == ["c", "a", "d", "b"]  # ties keep their order
    assert [x.trial.label for x in by_objective(rows, "min")] == ["a", "d", "c", "b"]
    twice = [ranked("t00", 0.8, "base"), ranked("t01", 0.7), ranked("t00", 0.8, "base")]
    assert [x.trial.label for x in first_of_each_key(twice)] == ["t00", "t01"]


def test_the_ranking_says_where_a_row_is_over_fewer_seeds_than_the_seed_list():
    """Under the default search the baseline trains one of the two seeds (finalize compares it on fresh ones):
    the header says a row without ± is one seed, and says nothing of it where every row has every seed."""
    from search.answer.ranking import Context, header_lines
    from search.tracking.trial_record import TrialRecord

    def trial(label, baseline, values):
        seeds = {f"semeval/dev/acc_4way/seed{s}": v for s, v in enumerate(values, 1)}
        return TrialRecord(label, label, "completed", baseline=baseline, objective=sum(values) / len(values),
                           objective_metric="semeval/dev/acc_4way", metrics=seeds, seeds="1,2")  # fmt: skip

    def header(table):
        return " ".join(header_lines(table, "absa", "semeval/dev/acc_4way/mean", "max", Context()))

    finalist = trial("t01", False, (0.80, 0.82))
    assert "over 2 seeds (fewer where a trial trained fewer" in header([trial("t00", True, (0.70,)), finalist])
    assert "fewer where" not in header([trial("t00", True, (0.70, 0.71)), finalist])
