"""The final comparison's pure parts on hand-made trial tables (the end-to-end run is in test_study)."""

import math

import pytest

from search.answer.claims import EXPLORATORY, TUNED, Contender, compare
from search.answer.contenders import (
    choose,
    collect,
    complete_finals,
    final_seeds,
    primary_test_metrics,
)
from search.answer.stats import BETTER, WORSE
from search.tracking.records import objective_metric_of
from search.tracking.trial_record import TrialRecord
from trainables.config import ConfigError, TrainConfig

DEV = "semeval/dev/acc_4way"


def row(label, status, objective, baseline=False, dev=(), test=(), aux="sst2", first=1, checkpoint=""):
    metrics = {f"{DEV}/seed{seed}": value for seed, value in enumerate(dev, first)}
    metrics |= {f"semeval/test/acc_4way/seed{seed}": value for seed, value in enumerate(test, first)}
    return TrialRecord(
        run_id=label,
        label=label,
        status=status,
        key=label,
        baseline=baseline,
        auxiliary="none" if baseline else aux,
        objective=objective,
        objective_std=0.01,
        checkpoint=checkpoint,
        objective_metric=DEV,
        metrics=metrics,
    )


def scores(**values):
    """A final run's per-seed scores: ``dev5=0.74`` -> the objective's metric of seed 5."""
    metrics = {
        (f"{DEV}/seed{k[3:]}" if k.startswith("dev") else f"semeval/test/{k[:-1]}/seed{k[-1]}"): v
        for k, v in values.items()
    }
    return TrialRecord(run_id="", label="final", objective_metric=DEV, metrics=metrics)


TABLE = (
    row("t00 baseline", "completed", 0.70, True, (0.69, 0.71)),
    row("t01 sst2 sqrt", "completed", 0.74, False, (0.73, 0.75)),
    row("t02 pos square", "pruned", 0.90),  # pruned trials never win, however high they stood
    row("t03 sst2+pos prop", "completed", 0.72, False, (0.72, 0.72)),
    row("t04 single lr=4.6e-05", "completed", 0.71, False, (0.70, 0.72), aux="none"),
    row("t05 single lr=9e-05", "failed", 0.95, False, aux="none"),
    row("t06 sentihood prop", "completed", math.inf, False),  # inf is dropped like NaN
)


def test_choose_takes_the_best_multitask_trial_and_the_best_single_task_trial():
    winner, opponent = choose(TABLE, "max")
    assert (winner.label, opponent.label) == ("t01 sst2 sqrt", "t04 single lr=4.6e-05")  # a tuned single task
    assert [x.label for x in choose(TABLE, "min")] == [
        "t03 sst2+pos prop",
        "t00 baseline",
    ]
    assert choose(TABLE[:4] + TABLE[5:], "max")[1].label == "t00 baseline"
    alone = [r for r in TABLE if r.auxiliary == "none"]
    with pytest.raises(ConfigError, match="no completed multitask"):
        choose(alone, "max")
    with pytest.raises(ConfigError, match="no completed single-task"):
        choose([r for r in TABLE if r.auxiliary != "none"], "max")


def test_choose_keeps_the_tables_order_among_ties():
    tied = (row("t01 a", "completed", 0.7), row("t02 b", "completed", 0.7), row("t00", "completed", 0.6, True))
    assert choose(tied, "max")[0].label == "t01 a" and choose(tied, "min")[0].label == "t01 a"


def test_final_seeds_are_fresh():
    assert final_seeds((1, 2), 3) == [3, 4, 5]
    assert final_seeds((1, 2, 3), 5) == [4, 5, 6, 7, 8]


def test_only_final_runs_that_trained_every_epoch_are_reused():
    finals = [
        TrialRecord(run_id, run_id, status, final_for=final_for, epochs=epochs)
        for run_id, final_for, status, epochs in (
            ("f1", "t01", "completed", 2),
            ("f2", "t01", "interrupted", 1),
            ("f3", "t01", "failed", 2),
            ("f4", "t01", "running", 2),
            ("f5", "t00", "completed", 2),
            ("f6", "t01", "completed", 1),  # a shorter config's
        )
    ]
    assert [r.run_id for r in complete_finals(finals, "t01", 2)] == ["f1"]
    assert complete_finals((), "t01", 2) == []


def test_per_seed_values_and_metrics_are_read_from_a_record():
    final = row("f", "completed", 0.7, dev=(0.7,), test=(0.65,))
    assert final.seeded("semeval/test/acc_4way") == {1: 0.65} and final.objective_seeds == {1: 0.7}
    assert primary_test_metrics(final, "semeval") == ["acc_4way"]
    assert objective_metric_of("semeval/dev/acc_4way/mean", "semeval") == "acc_4way"
    assert objective_metric_of("train/loss/mean", "semeval") is None


def test_compare_pairs_fresh_seeds_and_gives_one_verdict():
    config = TrainConfig(tasks=("semeval",), primary="semeval")
    seeds = final_seeds((1, 2), 3)  # 3, 4, 5
    winner, opponent = Contender("winner", TABLE[1], config), Contender("opponent", TABLE[4], config)
    # the search's own rows hold seeds 1-2 only: they add nothing to the final seeds
    collect(winner, [TABLE[1]], "semeval", seeds)
    assert winner.dev == {}
    w = row("f", "completed", 0.74, dev=(0.73, 0.75), test=(0.65, 0.66), first=3, checkpoint="/w")
    extra = scores(dev5=0.74, acc_4way5=0.655, acc_3way5=0.7)
    collect(winner, [w, extra, scores(dev6=0.7, acc_4way6=0.7)], "semeval", seeds)
    collect(
        opponent, [row("g", "completed", 0.7, dev=(0.7, 0.71, 0.7), test=(0.60, 0.62, 0.61), first=3)], "semeval", seeds
    )
    assert winner.dev == {3: 0.73, 4: 0.75, 5: 0.74} and winner.checkpoints[3] == "/w/seed-3.pt"  # seed 6: not final
    claim = compare(
        TUNED, winner, opponent, metrics=["acc_4way", "acc_3way"], seeds=seeds, mode="max", objective_metric="acc_4way"
    )
    headline, rows = claim.headline, claim.rows
    assert headline is rows[0] and headline.diff.n == 3
    assert headline.diff.mean == pytest.approx((0.05 + 0.04 + 0.045) / 3)
    assert headline.verdict == BETTER  # differences 0.05, 0.04, 0.045: tight
    assert rows[1].verdict == EXPLORATORY  # one verdict, on the study's metric
    rows = compare(
        TUNED, winner, opponent, metrics=["acc_4way"], seeds=[3, 4, 5, 6], mode="max", objective_metric="acc_4way"
    ).rows
    assert rows[0].diff.n == 3  # seed 6 has no pair
    worse = compare(
        TUNED, opponent, winner, metrics=["acc_4way"], seeds=seeds, mode="max", objective_metric="acc_4way"
    ).rows
    assert worse[0].verdict == WORSE and math.isclose(worse[0].diff.mean, -rows[0].diff.mean)


def flagged(record, degenerate, until=None, learned=None):
    """``record`` with the trainer's per-seed flags: degenerate at its last report, the last point it was, and
    the last point it was not."""
    from dataclasses import replace

    metrics = dict(record.metrics) | {f"degenerate/seed{s}": float(d) for s, d in enumerate(degenerate, 1)}
    metrics |= {f"degenerate_until/seed{s}": float(u) for s, u in enumerate(until or (), 1)}
    metrics |= {f"learned_until/seed{s}": float(u) for s, u in enumerate(learned or (), 1)}
    return replace(record, metrics=metrics)


def test_search_risk_counts_degenerate_runs_not_weak_ones():
    from search.answer.claims import Risk
    from search.answer.contenders import search_risk

    table = [
        row("t00 baseline", "completed", 0.70, True, (0.69, 0.58)),  # no flags: at the floor is degenerate
        row("t01 sst2 sqrt", "completed", 0.74, False, (0.57, math.inf)),  # below it, and one diverged
        row("t02 pos square", "pruned", 0.60, False, (0.70, math.nan)),  # seed 2 never reported
        flagged(row("t03 pos sqrt", "completed", 0.72, False, (0.72, 0.61)), (0, 0)),  # 0.61 learned a little: weak
    ]
    risk = search_risk(table, 0.58, "t01 sst2 sqrt", "t00 baseline")
    # alike: the baseline (its lr unrecorded); unexplained: the failed baseline and SST-2 config share no feature
    assert risk == Risk((2, 2), (1, 2), (3, 7), (0, 3), (2, 5), (1, 5), unexplained=True)
    # "": no trial; the group: every run of a config with SST-2 (each row's auxiliary task) at a like lr; alike:
    # those of the other configs made of SST-2 alone (t01's two failures among them) and of the baseline
    assert search_risk(table, 0.58, "t03 pos sqrt", "") == Risk((0, 2), (0, 0), (3, 7), (2, 3), (2, 5), (3, 5), True)
    # without a floor, only the diverged run fails where no flag says more
    risk = search_risk(table, math.nan, "t01 sst2 sqrt", "t00 baseline")
    assert risk == Risk((1, 2), (0, 2), (1, 7), (0, 3), (1, 5), (0, 5))  # one failed config: SST-2 sqrt's features
    # the trainer's flag decides where there is one: a run at 0.70 whose predictions are constant failed
    table[3] = flagged(row("t03 pos sqrt", "completed", 0.72, False, (0.72, 0.70)), (0, 1))
    assert search_risk(table, 0.58, "t03 pos sqrt", "").winner == (1, 2)


def test_failures_of_unlike_configs_do_not_make_the_winner_suspect():
    from dataclasses import replace

    from search.answer.claims import rate_bound
    from search.answer.contenders import kin, search_risk

    table = [
        replace(flagged(row("t00 baseline", "completed", 0.70, True, (0.70,)), (0,)), schema="single", lr=2e-5),
        replace(flagged(row("t01 sst2+sentihood sqrt", "completed", 0.74, False, (0.74,), aux="sst2+sentihood"), (0,)),
                schema="sqrt", lr=2e-5),
        replace(flagged(row("t02 pos square", "completed", 0.63, False, (0.63,), aux="pos"), (1,)),
                schema="square", lr=2e-5),
        replace(flagged(row("t03 pos sqrt", "completed", 0.64, False, (0.64,), aux="pos"), (1,)),
                schema="sqrt", lr=9e-5),  # the winner's schema, at 4.5 times its lr
    ]  # fmt: skip
    risk = search_risk(table, 0.58, "t01 sst2+sentihood sqrt", "t00 baseline")
    assert risk.study == (2, 4) and risk.kin == (0, 0) and not risk.near
    assert kin(table[3], replace(table[1], lr=6e-5))  # within a factor of 2: kin, and its failure is near
    near = search_risk([*table[:2], replace(table[3], lr=4e-5)], 0.58, "t01 sst2+sentihood sqrt", "t00 baseline")
    assert near.kin == (1, 1) and near.near
    # beside t02's failure, PoS explains both (t02 failed without sqrt): t03's is no longer the winner's schema's
    told = search_risk([*table[:3], replace(table[3], lr=4e-5)], 0.58, "t01 sst2+sentihood sqrt", "t00 baseline")
    assert told.kin == (0, 0) and not told.near
    # failures that share no feature (PoS square's, and SST-2 random's at 50 times the winner's lr): nothing a
    # config is made of explains them, proneness may be any config's, and only the winner's own runs bound it
    scattered = [*table[:3], replace(flagged(row("t04 sst2 random", "completed", 0.63, False, (0.63,), aux="sst2"),
                                             (1,)), schema="random", lr=1e-3)]  # fmt: skip
    risk = search_risk(scattered, 0.58, "t01 sst2+sentihood sqrt", "t00 baseline")
    assert risk.unexplained and risk.near and risk.kin == (0, 0) and risk.bound == rate_bound(*risk.winner)


def test_a_run_stopped_while_degenerate_is_no_failure_where_runs_were_seen_to_recover():
    from dataclasses import replace

    from search.answer.contenders import search_risk

    stopped = replace(flagged(row("t02 pos rr", "pruned", 0.60, False, (0.60,)), (1,), (1.0,)), epochs=1)
    done = [
        flagged(row("t00 baseline", "completed", 0.70, True, (0.70,)), (0,), (0.0,)),
        flagged(row("t01 sst2 sqrt", "completed", 0.74, False, (0.74,)), (0,), (0.0,)),
    ]
    assert search_risk([*done, stopped], 0.58, "t02 pos rr", "").winner == (1, 1)  # no run seen to recover: failed
    # the baseline predicted one answer after epoch 1 and learned by its end: degenerate at epoch 1 is a late start
    done[0] = flagged(done[0], (0,), (1.0,))
    assert search_risk([*done, stopped], 0.58, "t02 pos rr", "").winner == (0, 1)
    # a completed run that ends degenerate failed, whatever recovered elsewhere
    ended = replace(flagged(row("t03 pos sqrt", "completed", 0.60, False, (0.60,)), (1,), (3.0,)), epochs=3)
    assert search_risk([*done, ended], 0.58, "t03 pos sqrt", "").winner == (1, 1)


def test_a_run_stopped_after_it_learned_and_fell_back_is_no_failure_but_one_that_never_learned_is():
    from dataclasses import replace

    from search.answer.contenders import search_risk

    done = [flagged(row("t00 baseline", "completed", 0.70, True, (0.70,)), (0,), (0.0,), (3.0,))]
    # two seeds stopped at epoch 2, both degenerate there, nothing seen to recover at 2 or later: seed 1 had
    # learned at its screen point (it has not shown how it ends), seed 2 never had
    stopped = flagged(row("t01 pos rr", "pruned", 0.60, False, (0.60, 0.60)), (1, 1), (2.0, 2.0), (0.3, 0.0))
    risk = search_risk([*done, replace(stopped, epochs=2)], 0.58, "t01 pos rr", "")
    assert risk.winner == (1, 2)
    # a completed run that learned and ends degenerate failed: it has shown how it ends
    ended = flagged(row("t02 pos sqrt", "completed", 0.60, False, (0.60,)), (1,), (3.0,), (2.0,))
    assert search_risk([*done, replace(ended, epochs=3)], 0.58, "t02 pos sqrt", "").winner == (1, 1)


def test_a_degenerate_trial_is_never_a_side():
    from search.answer.contenders import choose

    table = [
        flagged(row("t00 baseline", "completed", 0.70, True, (0.70,)), (0,)),
        flagged(row("t01 pos sequential", "completed", 0.80, False, (0.80,)), (1,)),  # the best dev, one answer
        flagged(row("t02 sst2 sqrt", "completed", 0.74, False, (0.74,)), (0,)),
    ]
    assert [r.label for r in choose(table, "max")] == ["t02 sst2 sqrt", "t00 baseline"]


def test_the_answer_becomes_the_study_runs_description_within_mlflows_limit(tmp_path):
    from mlflow import MlflowClient

    from search.answer.final import NOTE_LIMIT, NOTE_TAG, describe

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.create_run(client.create_experiment("absa"), tags={NOTE_TAG: "Trials side by side: `link`."})
    run_id = run.info.run_id
    describe(client, run_id, "## Final test evaluation: 5 fresh seeds\n\nbetter")
    describe(client, run_id, "## Final test evaluation: 7 fresh seeds\n\nsame")  # a later look replaces it
    note = client.get_run(run_id).data.tags[NOTE_TAG]
    assert note == "Trials side by side: `link`.\n\n## Final test evaluation: 7 fresh seeds\n\nsame"
    describe(client, run_id, "## Final test evaluation: 9 fresh seeds\n\n" + "x" * 9000)
    long = client.get_run(run_id).data.tags[NOTE_TAG]
    assert len(long) <= NOTE_LIMIT and long.endswith("final.md in the report)")


def _look(seeds: int, verdict: str, needed: int | None):
    from types import SimpleNamespace

    row = SimpleNamespace(metric="acc_4way", verdict=verdict, needed=needed, diff=SimpleNamespace(low=-0.01, high=0.05))
    return SimpleNamespace(seeds=list(range(seeds)), headline=row)


def test_until_decided_takes_the_looks_an_undecided_verdict_asks_for_and_stops_once_decided(monkeypatch):
    from search.answer import final
    from search.answer.config import FinalizeConfig
    from search.answer.stats import UNDECIDED

    looks = {5: _look(5, UNDECIDED, 8), 8: _look(8, UNDECIDED, 8), 9: _look(9, BETTER, None)}
    asked = []

    def one_look(cfg, kinds, kind=None):
        asked.append(cfg.seeds)
        return looks[cfg.seeds]

    monkeypatch.setattr(final, "finalize", one_look)
    cfg = FinalizeConfig("absa", seeds=5, until_decided=True)
    assert final.finalize_study(cfg, None).headline.verdict == BETTER
    assert asked == [5, 8, 9]  # a look the plan says would decide, else one seed more: never the same look twice
    asked.clear()
    assert final.finalize_study(FinalizeConfig("absa", seeds=5), None).headline.verdict == UNDECIDED
    assert asked == [5]  # the default: one look
    asked.clear()
    looks[5] = _look(5, UNDECIDED, None)  # the plan's most seeds cannot decide it: no look past them
    assert final.finalize_study(cfg, None).headline.verdict == UNDECIDED and asked == [5]


def test_a_margin_is_a_positive_gain_refused_in_one_line():
    from search.answer.config import FinalizeConfig

    for bad in (0.0, -0.01, math.inf, math.nan):
        with pytest.raises(ConfigError, match="--margin .*expected a gain > 0"):
            FinalizeConfig("absa", margin=bad)
    assert FinalizeConfig("absa", margin=0.01).margin == 0.01


def test_the_winners_failure_rate_is_its_groups_where_its_own_runs_are_few():
    from dataclasses import replace

    from search.answer.claims import Risk, rate_bound, survives_collapses
    from search.answer.contenders import search_risk

    def cell(label, aux, schema, failed, seeds=2):
        return replace(flagged(row(label, "completed", 0.70, False, (0.70,) * seeds, aux=aux), (failed,) * seeds),
                       schema=schema, lr=1e-4)  # fmt: skip

    table = [
        replace(flagged(row("t00 baseline", "completed", 0.68, True, (0.68,) * 2), (0, 0)), lr=1e-4),
        cell("t01 sst2+sentihood sqrt", "sst2+sentihood", "sqrt", 0, seeds=5),
        *(cell(f"t{i:02} sst2 {s}", "sst2", s, 0, 5) for i, s in enumerate(("prop", "random", "anneal"), 2)),
        *(cell(f"t{i:02} sentihood {s}", "sentihood", s, 0, 5) for i, s in enumerate(("prop", "random", "anneal"), 5)),
        cell("t08 sst2+pos square", "sst2+pos", "square", 1),  # fails, and shares SST-2: kin, so near
    ]
    risk = search_risk(table, 0.6, "t01 sst2+sentihood sqrt", "t00 baseline")
    assert risk.near and risk.winner == (0, 5) and risk.group == (2, 22)  # SST-2's configs: 2 of 22 runs
    assert risk.bound == rate_bound(2, 22) < rate_bound(0, 5)  # not the 52% its own 5 runs leave open
    assert survives_collapses(0.03, risk, 0.05) and not survives_collapses(0.03, Risk((0, 5), kin=(2, 2)), 0.05)
    seen = Risk((1, 8), kin=(1, 1), group=(1, 40))  # its own runs failed: its own bound, not the clean group's
    assert seen.bound == rate_bound(1, 8) > rate_bound(1, 40)
    # a failed config made only of the winner's features (SST-2 alone at another lr): nothing the winner lacks
    # explains it, so the winner's own runs bound it
    table.append(replace(cell("t09 sst2 sqrt", "sst2", "sqrt", 1), lr=1e-3))
    alike = search_risk(table, 0.6, "t01 sst2+sentihood sqrt", "t00 baseline")
    assert alike.alike == (2, 4) and alike.bound == rate_bound(0, 5)  # t09 and the baseline at a like lr


def test_failures_a_feature_the_winner_lacks_explains_are_not_the_winners():
    """weak_configs' shape: every failed run is a PoS config's under square, and the SST-2 + Sentihood winner
    shares SST-2 with one of them and Sentihood with the other: PoS-square explains them, not its features."""
    from dataclasses import replace

    from search.answer.contenders import explaining, features, search_risk

    def cell(label, aux, schema, failed):
        return replace(flagged(row(label, "completed", 0.70, False, (0.70, 0.70), aux=aux), (failed, 0)),
                       schema=schema, lr=2e-5)  # fmt: skip

    table = [
        replace(flagged(row("t00 baseline", "completed", 0.68, True, (0.68,) * 2), (0, 0)), lr=2e-5),
        cell("t01 sst2+sentihood sqrt", "sst2+sentihood", "sqrt", 0),
        cell("t02 sst2+pos square", "sst2+pos", "square", 1),
        cell("t03 pos+sentihood square", "pos+sentihood", "square", 1),
        cell("t04 pos sqrt", "pos", "sqrt", 0),  # a PoS config without failures: told apart as well
    ]
    winner = "t01 sst2+sentihood sqrt"
    risk = search_risk(table, 0.6, winner, "t00 baseline")
    assert risk.study == (2, 10) and risk.kin == (0, 0) and risk.group == (0, 2) and not risk.near
    # both failed configs share SST-2 with the winner: SST-2 may be the cause, so they speak of it
    shared = [*table[:3], cell("t03 sst2+pos+sentihood square", "sst2+pos+sentihood", "square", 1)]
    assert explaining([features(r) for r in shared[2:]], shared[1]) == set()
    assert search_risk(shared, 0.6, winner, "t00 baseline").near
    # one failed config kin to the winner: the feature they share is as likely a cause as the rest
    assert search_risk(table[:3], 0.6, winner, "t00 baseline").kin == (1, 2)
    # a failed single-task run has no feature: nothing the winner lacks explains every failure
    lone = [*table, replace(flagged(row("t05 single", "completed", 0.6, True, (0.6,)), (1,)), lr=1e-4)]
    assert search_risk(lone, 0.6, winner, "t00 baseline").kin == (2, 6)  # t02-t04, 2 runs each
