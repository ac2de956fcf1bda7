"""The two claims: every config difference named, the ablation arm, collapsed seeds, the verdict's words."""

import math

import pytest

from search.answer.claims import (
    ABLATION,
    COLLAPSED_MORE,
    EXPLORATORY,
    NO_ERROR_LEFT,
    TUNED,
    UNTUNED,
    Claim,
    Contender,
    Risk,
    ablation_config,
    collapsed_seeds,
    compare,
    differences,
    rate_bound,
    survives_collapses,
)
from search.answer.comparison import FinalResult, final_frame
from search.answer.sequential import Design
from search.answer.stats import BETTER, SAME
from search.tracking.trial_record import TrialRecord
from trainables.config import SamplingConfig, TrainConfig

WINNER = TrainConfig(
    tasks=("semeval", "sst2"),
    primary="semeval",
    sampling=SamplingConfig(schema="sqrt", weights=(("semeval", 2.0), ("sst2", 1.0))),
    lr=1.2e-5,
    warmup=0.004,
)
SINGLE = TrainConfig(tasks=("semeval",), primary="semeval")


def side(role, config, scores, label=None):
    row = TrialRecord(run_id=role, label=label or role, objective=0.7, objective_std=0.01)
    return Contender(role, row, config, test={"acc_4way": dict(enumerate(scores, 4))})


def on_4way(key: str, winner: Contender, other: Contender, seeds: list[int], **kw) -> Claim:
    """``compare`` on acc_4way alone, maximised and the objective; ``kw`` as ``compare`` takes them."""
    return compare(key, winner, other, metrics=["acc_4way"], seeds=seeds, mode="max", objective_metric="acc_4way", **kw)


def test_claim_a_names_every_difference_and_claim_b_only_the_auxiliary_tasks():
    named = differences(WINNER, SINGLE)
    assert any(d.startswith("lr 1.2e-05 vs 2e-05") for d in named)
    assert any(d.startswith("warmup 0.004 vs 0.1") for d in named)
    assert any(d.startswith("tasks semeval+sst2 vs semeval") for d in named)
    assert "sampling.schema sqrt vs –" in named  # the single-task side samples nothing
    ablated = ablation_config(WINNER)
    assert (ablated.tasks, ablated.lr, ablated.warmup, ablated.epochs) == (("semeval",), 1.2e-5, 0.004, WINNER.epochs)
    assert [d.split(" ")[0] for d in differences(WINNER, ablated)] == ["tasks", "sampling.schema", "sampling.weights"]
    assert differences(WINNER, WINNER) == ()


def test_collapsed_seeds_are_named_and_left_out_of_the_paired_test():
    scored = side("w", WINNER, [0.58, 0.70, math.nan])
    assert collapsed_seeds(scored, "acc_4way", [4, 5, 6, 7], 0.58) == (4, 6, 7)  # 7: no score
    scored.degenerate = {4: False, 5: True}  # the trainer's flags decide where there are some
    assert collapsed_seeds(scored, "acc_4way", [4, 5, 6, 7], 0.58) == (5, 6, 7)
    w = side("winner", WINNER, [0.745, 0.75, 0.58, 0.76, 0.735, 0.755])
    o = side("opponent", SINGLE, [0.70, 0.71, 0.70, 0.72, 0.70, 0.71])
    seeds = list(range(4, 10))
    claim = on_4way(TUNED, w, o, seeds, floor={"acc_4way": 0.58})
    h = claim.headline
    assert h.collapsed == ((6,), ()) and h.diff.n == 5
    # a clean gain of 4 pp against one collapse in 6 (loss 13 pp): the collapse rate's bound undoes it
    assert h.verdict == COLLAPSED_MORE
    # the same gain with no collapse, in a study whose search never collapsed: better
    clean = side("winner", WINNER, [0.745, 0.75, 0.745, 0.76, 0.735, 0.755])
    assert on_4way(TUNED, clean, o, seeds, floor={"acc_4way": 0.58}).headline.verdict == BETTER
    assert rate_bound(0, 0) == 1.0 and 0.0 < rate_bound(0, 100) < 0.04
    assert survives_collapses(0.01, Risk(), 0.27)
    assert not survives_collapses(0.01, Risk((7, 50), (0, 50), (7, 100)), 0.27)
    assert survives_collapses(0.05, Risk((1, 400), (1, 400), (2, 800)), 0.27)


def test_a_weak_seed_is_no_failure_and_risk_comes_from_runs_near_the_winner():
    w = side("winner", WINNER, [0.745, 0.75, 0.62, 0.76, 0.735, 0.755])  # seed 6 at 62%: weak, it learned
    w.degenerate = dict.fromkeys(range(4, 10), False)
    o = side("opponent", SINGLE, [0.70, 0.71, 0.70, 0.72, 0.70, 0.71])
    seeds = list(range(4, 10))
    h = on_4way(TUNED, w, o, seeds, floor={"acc_4way": 0.58}).headline
    assert h.collapsed == ((), ()) and h.diff.n == 6  # in the test, with its loss
    # the same seed flagged degenerate (one answer per aspect, though at 62%) failed
    w.degenerate[6] = True
    h = on_4way(TUNED, w, o, seeds, floor={"acc_4way": 0.58}).headline
    assert h.collapsed == ((6,), ()) and h.verdict == COLLAPSED_MORE
    # clean final seeds, and kin configs failed in the search: the winner's own eight runs cannot rule out a
    # failure rate that undoes a 4 pp gain
    clean = side("winner", WINNER, [0.745, 0.75, 0.745, 0.76, 0.735, 0.755])
    said = on_4way(TUNED, clean, o, seeds, floor={"acc_4way": 0.58}, risk=Risk((0, 2), (0, 2), (9, 90), (3, 10)))
    assert said.headline.verdict == COLLAPSED_MORE
    # failures only among unlike configs of the study: better
    unlike = Risk((0, 2), (0, 2), (9, 90), (0, 10))
    assert on_4way(TUNED, clean, o, seeds, floor={"acc_4way": 0.58}, risk=unlike).headline.verdict == BETTER


def test_a_look_beyond_the_planned_seeds_spends_nothing():
    w = side("winner", WINNER, [0.745, 0.75, 0.745, 0.76, 0.735, 0.755])
    o = side("opponent", SINGLE, [0.70, 0.71, 0.70, 0.72, 0.70, 0.71])
    seeds = list(range(4, 10))
    claim = on_4way(TUNED, w, o, seeds, earlier=[3], design=Design(3))
    assert claim.headline.verdict == NO_ERROR_LEFT


def test_the_answer_names_each_claim_what_it_could_detect_and_the_looks():
    seeds = [4, 5, 6, 7, 8]
    w = side("winner", WINNER, [0.74, 0.70, 0.72, 0.69, 0.73], "t03 sst2 sqrt")
    o = side("opponent", SINGLE, [0.71, 0.72, 0.70, 0.71, 0.70], "t00 baseline")
    a = side(ABLATION, ablation_config(WINNER), [0.72, 0.69, 0.73, 0.70, 0.72], "t03 sst2 sqrt without auxiliary tasks")
    claims = tuple(on_4way(k, w, x, seeds) for k, x in ((TUNED, o), (ABLATION, a)))
    assert all(c.headline.verdict == SAME for c in claims)
    result = FinalResult("absa", "absa-1", "semeval/dev/acc_4way/mean", "max", seeds, w, claims, search_seeds=[1, 2, 3])
    text = result.markdown()
    assert "### (a) Is the study's best multitask config better than the best plain fine-tuning" in text
    assert "### (b) Do the auxiliary tasks help this config?" in text
    assert "lr 1.2e-05 vs 2e-05" in text and "a gain above +" in text and "is ruled out, below the gain worth" in text
    assert claims[0].headline.margin == claims[0].headline.detectable  # the default margin: what the look detects
    assert "| 1 | 5 | (a) |" in text and "| 1 | 5 | (b) |" in text  # the looks table
    assert result.verdicts().startswith("(a) against the best single-task trial of equal tuning, test acc_4way: no")
    frame = final_frame(result)
    assert set(frame.source.head(2)) == {"final (a) tuned", "final (b) ablation"}
    assert frame.detectable_gain.iloc[0] > 0
    assert "Each claim's false 'better' is at most 2.5%; the two together, at most 5%" in result.verdicts()
    assert "95.8% repeated interval" in text  # the first look of 5 seeds spends 2.1% a side: 95.8%, not 95%


def test_a_margin_the_interval_does_not_rule_out_is_undecided_with_the_seeds_that_would_decide_it():
    from search.answer.sequential import Design
    from search.answer.stats import UNDECIDED

    seeds = [4, 5, 6, 7, 8]
    w = side("winner", WINNER, [0.74, 0.70, 0.72, 0.69, 0.73], "t03 sst2 sqrt")
    o = side("opponent", SINGLE, [0.71, 0.72, 0.70, 0.71, 0.70], "t00 baseline")
    h = on_4way(TUNED, w, o, seeds, margin=0.03).headline  # Δ +0.006, [-0.022, +0.034]: 3 pp not ruled out
    assert h.verdict == UNDECIDED and h.margin == 0.03 and h.needed is None  # not within the plan's 10 seeds
    wide = on_4way(TUNED, w, o, seeds, margin=0.03, design=Design(60)).headline
    assert wide.verdict == UNDECIDED and 10 < wide.needed <= 60
    text = FinalResult("absa", "a-1", "semeval/dev/acc_4way/mean", "max", seeds, w, (on_4way(TUNED, w, o, seeds,
        margin=0.03, design=Design(60)),), search_seeds=[1]).markdown()  # fmt: skip
    assert f"about {wide.needed} final seeds would decide it" in text and "the margin asked for (--margin)" in text
    assert wide.to_dict()["seeds_to_decide"] == wide.needed and wide.to_dict()["margin"] == 0.03


def test_one_comparison_where_the_best_single_task_config_is_the_winners_ablation():
    seeds = [4, 5, 6, 7, 8]
    w = side("winner", WINNER, [0.74, 0.70, 0.72, 0.69, 0.73], "t03 sst2 sqrt")
    o = side("opponent", ablation_config(WINNER), [0.71, 0.72, 0.70, 0.71, 0.70], "t00 baseline")
    claims = (
        on_4way(TUNED, w, o, seeds, other_name=UNTUNED),
        on_4way(ABLATION, w, o, seeds),
    )
    result = FinalResult("absa", "absa-1", "semeval/dev/acc_4way/mean", "max", seeds, w, claims, search_seeds=[1])
    text = result.markdown()
    assert result.coincide and "claim (b) is claim (a), one comparison trained once" in text
    assert text.count("**Verdict (") == 1 and "equal tuning" not in text
    assert result.verdicts().startswith(f"(a, b) against the {UNTUNED}, test acc_4way")
    assert "One comparison (the best single-task config is the multitask trial's own ablation)" in result.verdicts()
    assert list(final_frame(result).source.head(1)) == ["final (a, b) tuned"]


def test_exploratory_intervals_are_adjusted_over_the_exploratory_metrics():
    seeds = [4, 5, 6, 7, 8]
    w = side("winner", WINNER, [0.74, 0.70, 0.72, 0.69, 0.73])
    o = side("opponent", SINGLE, [0.71, 0.72, 0.70, 0.71, 0.70])
    for c in (w, o):
        c.test |= {m: dict(c.test["acc_4way"]) for m in ("acc_3way", "acc_2way")}
    rows = compare(
        TUNED, w, o, metrics=["acc_4way", "acc_3way", "acc_2way"], seeds=seeds, mode="max", objective_metric="acc_4way"
    ).rows
    assert [r.verdict for r in rows[1:]] == [EXPLORATORY, EXPLORATORY]
    assert rows[1].diff.confidence == pytest.approx(0.975)  # 95% together over two metrics
    assert rows[1].diff.high - rows[1].diff.low > rows[0].diff.high - rows[0].diff.low  # wider than the look's


def test_the_answer_says_what_the_studys_failed_runs_let_it_rule_out():
    seeds = [4, 5, 6, 7, 8]
    w = side("winner", WINNER, [0.745, 0.75, 0.745, 0.76, 0.735], "t03 sst2 sqrt")
    o = side("opponent", SINGLE, [0.70, 0.71, 0.70, 0.72, 0.70], "t00 baseline")
    floor = {"acc_4way": 0.58}
    clean = on_4way(TUNED, w, o, seeds, floor=floor, risk=Risk((0, 3), (0, 3), (0, 90)))
    text = FinalResult(
        "absa", "a-1", "semeval/dev/acc_4way/mean", "max", seeds, w, (clean,), search_seeds=[1, 2, 3]
    ).markdown()
    assert "No seed run of the study failed (100, search and final)" in text and "above 37%" in text  # 8 runs
    failed = on_4way(TUNED, w, o, seeds, floor=floor, risk=Risk((0, 3), (0, 3), (4, 90), (2, 20)))
    text = FinalResult(
        "absa", "a-1", "semeval/dev/acc_4way/mean", "max", seeds, w, (failed,), search_seeds=[1, 2, 3]
    ).markdown()
    assert "4 of the study's 100 seed runs failed, 2 of 20 among configs kin to the multitask one" in text
    assert "the multitask config failed on 0 of its own 8" in text
    elsewhere = on_4way(TUNED, w, o, seeds, floor=floor, risk=Risk((0, 3), (0, 3), (4, 90), (0, 20)))
    text = FinalResult(
        "absa", "a-1", "semeval/dev/acc_4way/mean", "max", seeds, w, (elsewhere,), search_seeds=[1, 2, 3]
    ).markdown()
    assert "4 of the study's 100 seed runs failed, none of its own, the other side's or its kin's" in text
