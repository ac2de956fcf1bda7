"""The MLflow layout of a study, written by the tracker and read back by ``trial_table``
(Tune's trial objects stood in for by plain ones: no Ray trials run here)."""

import io
import json
import math
import time
from dataclasses import replace
from types import SimpleNamespace

import mlflow
import pytest

from search.study.config import SearchConfig
from search.study.kind import TrainedTrials
from search.study.plan import plan_offline
from search.study.progress import StudyStatus, TrialLines, Work, status_line
from search.tracking.records import CONFIG_ARTIFACT, TrialParams
from search.tracking.runs import find_parent, start_parent_run, trial_table
from search.tracking.tracker import MLflowTracker
from search.tracking.trial_record import TrialRecord
from search.tracking.view import EXPERIMENT_KIND, FINAL_VIEW_SUFFIX, SHARED_VIEW_PREFIX
from spaces import canonical, run_name
from trainables.config import ConfigError, SamplingConfig, TrainConfig
from trainables.tune import aggregate, seed_values_kept

OBJECTIVE = "semeval/dev/acc_4way/mean"
BASE = TrainConfig(tasks=("semeval",), primary="semeval", epochs=2, batch_size=16, data_dir="/data")


def trial(trial_id, number, config, baseline=False, seeds=(1, 2)):
    return SimpleNamespace(
        trial_id=trial_id,
        last_result=None,
        error_file=None,
        config={
            "train": config.to_dict(),
            "key": f"key-{number}",
            "label": run_name(number, config, baseline),
            "number": number,
            "baseline": baseline,
            "seeds": list(seeds),
        },
    )


def result(epoch, per_seed, seeds, config):
    out = aggregate(per_seed, seeds, lambda k: seed_values_kept(k, config.primary, OBJECTIVE))
    return {
        **out,
        "epoch": epoch,
        "training_iteration": epoch,
        "timestamp": 1000 + epoch,
        "hostname": "node-a",
        "device": "cpu",
        "time_this_iter_s": 1.5,
    }


@pytest.fixture()
def study(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # artifacts of a sqlite store go under ./mlruns
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    cfg = SearchConfig("absa", preset="smoke", seeds=2, metric="acc_4way", trials=2, storage=str(tmp_path))
    started = plan_offline(replace(cfg, name="absa-smoke-1"), TrainedTrials()).invocation
    parent = start_parent_run(uri, "absa", "absa-smoke-1", started.to_params())
    tracker = MLflowTracker(
        uri, parent, max_epochs=2, seeds=[1, 2], objective=OBJECTIVE, spool=tmp_path / "spool.jsonl"
    )
    multi = canonical(BASE.with_(tasks=("semeval", "sst2", "pos"), sampling=SamplingConfig("power", exponent=1.31)))
    base_trial, multi_trial = trial("a", 0, canonical(BASE), baseline=True), trial("b", 3, multi)
    for t, cfg, scores, passes in (
        (base_trial, canonical(BASE), (0.5, 0.7), 1.0),
        (multi_trial, multi, (0.6, float("nan")), 0.4),
    ):
        tracker.on_trial_start(0, [], t)
        for epoch in (1, 2):
            per_seed = [
                {
                    "semeval/dev/acc_4way": s + epoch / 10,
                    "train/loss": 1.0 / epoch,
                    "sampling/p/semeval": 1.0,
                    "sst2/dev/acc": 0.9,
                }
                for s in scores
            ]
            for m in per_seed:
                if math.isnan(m["semeval/dev/acc_4way"]):
                    del m["semeval/dev/acc_4way"]
            t.last_result = {**result(epoch, per_seed, [1, 2], cfg), "primary_passes": passes * epoch}
            tracker.on_trial_result(0, [], t, t.last_result)
        tracker.on_trial_complete(0, [], t)
    assert tracker.spool.drain(60), tracker.spool.last_error  # the spool's thread sends in the background
    return mlflow.MlflowClient(uri), parent, base_trial, multi_trial


def test_trial_run_layout(study):
    client, parent, _, multi_trial = study
    experiment, found = find_parent(client, "absa", "absa-smoke-1")
    assert found.info.run_id == parent
    assert experiment.tags[EXPERIMENT_KIND[0]] == EXPERIMENT_KIND[1]
    view = json.loads(experiment.tags[SHARED_VIEW_PREFIX + "absa-smoke-1"])
    assert (
        view["orderByKey"] == "metrics.`objective`" and view["orderByAsc"] is False and parent in view["searchFilter"]
    )

    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id], "tags.kind = 'trial'")}
    assert set(runs) == {"t00 baseline", "t03 sst2+pos power(a=1.3)"}
    # the view lists the search's trials, not finalize's runs of single seeds under the same parent
    client.create_run(
        experiment.experiment_id,
        run_name="final winner t03 seeds 3",
        tags={"mlflow.parentRunId": parent, "kind": "final"},
    )
    viewed = client.search_runs([experiment.experiment_id], view["searchFilter"])
    assert {r.info.run_name for r in viewed} == set(runs)
    # ... which have a view of their own, by name (the search's filter and order must be ones MLflow runs)
    final = json.loads(experiment.tags[SHARED_VIEW_PREFIX + "absa-smoke-1" + FINAL_VIEW_SUFFIX])
    viewed = client.search_runs([experiment.experiment_id], final["searchFilter"], order_by=[final["orderByKey"]])
    assert [r.info.run_name for r in viewed] == ["final winner t03 seeds 3"]
    baseline, multi = runs["t00 baseline"], runs["t03 sst2+pos power(a=1.3)"]
    assert baseline.data.params == {
        "schema": "single",
        "aux": "none",
        "lr": "2e-05",
        "warmup": "0.1",
        "batch_size": "16",
        "epochs": "2",
        "model": BASE.encoder.model,
        "tasks": "semeval",
        "seeds": "1,2",
    }
    assert multi.data.params["schema"] == "power" and multi.data.params["exponent"] == "1.31"
    assert multi.data.params["aux"] == "sst2+pos" and multi.data.params["weights"] == "semeval=1,sst2=0.5,pos=0.5"
    assert "anneal_c" not in multi.data.params
    assert (
        multi.data.tags.items()
        >= {
            "status": "completed",
            "baseline": "false",
            "trial": "3",
            "epochs_trained": "2",
            "canonical_key": "key-3",
            "kind": "trial",
            "hostname": "node-a",
            "device": "cpu",
        }.items()
    )

    m = baseline.data.metrics
    assert m["objective"] == pytest.approx(0.8) and m["objective_std"] == pytest.approx(0.1414213, rel=1e-5)
    assert (m["semeval/dev/acc_4way/seed1"], m["semeval/dev/acc_4way/seed2"]) == pytest.approx((0.7, 0.9))
    assert "train/loss/seed1" not in m and "sampling/p/semeval/mean" in m and "sst2/dev/acc/std" in m
    assert not any(k.startswith("epoch") for k in m) and "time_this_iter_s" not in m
    # one seed scored: a mean and that seed, no spread
    assert "objective_std" not in multi.data.metrics and "semeval/dev/acc_4way/std" not in multi.data.metrics
    history = client.get_metric_history(baseline.info.run_id, "objective")
    assert [(h.step, round(h.value, 6)) for h in history] == [(1, 0.7), (2, 0.8)]

    saved = json.loads(open(client.download_artifacts(multi.info.run_id, CONFIG_ARTIFACT)).read())
    assert TrainConfig.from_dict(saved) == TrainConfig.from_dict(multi_trial.config["train"])


def test_every_result_logs_its_primary_passes_at_its_step(study):
    """``primary_passes``, a trial-level result key beside ``epoch`` (the trained and the simulated trainable
    report it alike), is a metric at every step, and a column of the trial table."""
    client, parent, _, _ = study
    experiment, parent_run = find_parent(client, "absa", None)
    table = {r.label: r for r in trial_table(client, experiment.experiment_id, parent_run)}
    curves = {
        label: [(h.step, h.value) for h in client.get_metric_history(r.run_id, "primary_passes")]
        for label, r in table.items()
    }
    assert curves == {"t00 baseline": [(1, 1.0), (2, 2.0)], "t03 sst2+pos power(a=1.3)": [(1, 0.4), (2, 0.8)]}
    assert table["t00 baseline"].columns()["primary_passes"] == 2.0


def test_trial_table_reads_the_layout(study):
    client, parent, _, _ = study
    experiment, parent_run = find_parent(client, "absa", None)
    table = {r.number: r for r in trial_table(client, experiment.experiment_id, parent_run)}
    base, multi = table[0], table[3]
    assert (base.label, base.schema, base.auxiliary, base.baseline, base.status) == (
        "t00 baseline",
        "single",
        "none",
        True,
        "completed",
    )
    assert (multi.schema, multi.exponent, multi.auxiliary, multi.epochs, multi.seeds) == (
        "power",
        1.31,
        "sst2+pos",
        2,
        "1,2",
    )
    assert math.isnan(multi.anneal_c) and math.isnan(multi.objective_std) and multi.objective == pytest.approx(0.8)
    assert base.mean("semeval/dev/acc_4way") == pytest.approx(0.8) and base.std("semeval/dev/acc_4way") > 0
    assert base.seeded("semeval/dev/acc_4way")[2] == pytest.approx(0.9) and base.objective_seeds[1] == pytest.approx(
        0.7
    )
    assert base.mean("sst2/dev/acc") == pytest.approx(0.9) and math.isnan(multi.std("semeval/dev/acc_4way"))
    assert (base.key, base.run_id) == ("key-0", base.run_id) and base.lr == 2e-5 and base.batch_size == 16
    assert multi.objective_seeds == {1: pytest.approx(0.8)} and base.single_task and not multi.single_task
    # trials.csv's columns, as the table held them before the records
    columns = base.columns()
    assert list(columns)[:21] == [
        "trial", "label", "run_id", "status", "canonical_key", "baseline", "auxiliary", "schema", "exponent",
        "anneal_c", "lr", "warmup", "batch_size", "epochs", "seeds", "node", "device", "objective",
        "objective_std", "start_time", "final_for",
    ]  # fmt: skip
    assert columns["semeval/dev/acc_4way"] == pytest.approx(0.8) and columns["objective/seed2"] == pytest.approx(0.9)
    assert columns["semeval/dev/acc_4way std"] > 0 and columns["semeval/dev/acc_4way/seed1"] == pytest.approx(0.7)
    assert "train/loss" not in columns and "sampling/p/semeval" not in columns


def test_a_trials_seed_epochs_are_its_last_point_times_the_seeds_it_had_there():
    """What best_so_far.png adds up: a seed schedule's seeds and a screen point's fraction, not epochs x K."""
    assert TrialRecord(run_id="a", label="a", epochs=4, seeds="1,2,3").seed_epochs == 12  # every seed throughout
    assert TrialRecord(run_id="b", label="b", epochs=3, seeds="1,2,3", metrics={"seeds/trained": 1}).seed_epochs == 3
    stopped = TrialRecord(
        run_id="c", label="c", epochs=0, seeds="1,2,3", metrics={"screen/epoch": 0.4, "seeds/trained": 1}
    )
    assert stopped.seed_epochs == pytest.approx(0.4)


def test_a_trial_run_with_a_bad_tag_is_refused_naming_the_run_and_tag(study):
    client, _, _, _ = study
    experiment, parent_run = find_parent(client, "absa", None)
    (run, _) = trial_table(client, experiment.experiment_id, parent_run)
    client.set_tag(run.run_id, "trial", "three")
    with pytest.raises(ConfigError, match=f"MLflow run {run.run_id}: tag 'trial' is 'three', expected an integer"):
        trial_table(client, experiment.experiment_id, parent_run)
    client.set_tag(run.run_id, "trial", "0")
    client.set_tag(run.run_id, "status", "half-done")
    with pytest.raises(ConfigError, match="trial t00 baseline: status 'half-done', expected one of"):
        trial_table(client, experiment.experiment_id, parent_run)


def test_params_round_trip():
    cfg = canonical(BASE.with_(tasks=("semeval", "sst2"), sampling=SamplingConfig("anneal", anneal_c=0.74)))
    params = TrialParams.of(cfg, [1, 2, 3])
    assert params.to_params()["anneal_c"] == "0.74" and "exponent" not in params.to_params()
    assert TrialParams.from_params(params.to_params()) == params


def test_console_line_names_the_trial_by_its_number():
    cfg = canonical(BASE.with_(tasks=("semeval", "sst2", "pos"), sampling=SamplingConfig("square"), lr=3e-5))
    t = trial("x", 3, cfg)
    t.last_result = {OBJECTIVE: 0.6123, "semeval/dev/acc_4way/std": 0.01, "epoch": 1}
    out = io.StringIO()
    TrialLines(OBJECTIVE, max_epochs=2, stream=out).on_trial_complete(0, [], t)
    assert out.getvalue() == "[t03] pruned@1   objective=0.6123 ± 0.0100  t03 sst2+pos square lr=3e-05 wu=0.1\n"


def test_status_line_names_the_best_completed_trial_not_a_pruned_one():
    single, multi = canonical(BASE), canonical(BASE.with_(tasks=("semeval", "sst2"), sampling=SamplingConfig("prop")))
    done, pruned, running, failed = (
        trial("a", 0, single, baseline=True),
        *(trial(x, n, multi) for x, n in (("b", 1), ("c", 2), ("d", 3))),
    )
    done.status, done.last_result = "TERMINATED", {OBJECTIVE: 0.61, "semeval/dev/acc_4way/std": 0.002, "epoch": 2}
    pruned.status, pruned.last_result = "TERMINATED", {OBJECTIVE: 0.70, "epoch": 1}  # higher, but after one epoch
    running.status, running.last_result = "RUNNING", {OBJECTIVE: 0.65, "epoch": 1}
    failed.status, failed.last_result = "ERROR", {"epoch": 1}
    line = status_line([done, pruned, running, failed], OBJECTIVE, 2, "max", elapsed_s=125, total=6)
    assert line == (
        "[study 02:05] trials: 3 done (1 completed, 1 pruned, 1 failed), 1 running (t02 epoch 1/2), 2 left"
        " | best completed: t00 baseline objective=0.6100 ± 0.0020"
    )
    assert status_line([running], OBJECTIVE, 2, "max", 5).endswith(
        "trials: 0 done (0 completed, 0 pruned, 0 failed), 1 running (t02 epoch 1/2), 0 left | no trial completed yet"
    )
    out = io.StringIO()
    reporter = StudyStatus(OBJECTIVE, 2, every_s=60, stream=out)
    reporter.setup(start_time=time.time(), total_samples=6, metric=OBJECTIVE, mode="max")
    assert not reporter.should_report([done]) and reporter.should_report([done], done=True)
    reporter.report([done], True)
    assert "best completed: t00 baseline" in out.getvalue()


def test_a_big_studys_status_line_says_where_its_running_trials_are_not_each_one():
    cfg = canonical(BASE)
    running = [trial(f"r{n}", n, cfg) for n in range(256)]
    for n, t in enumerate(running):
        t.status, t.last_result = "RUNNING", {OBJECTIVE: 0.6, "epoch": (0.4, 1, 2)[n % 3]}
    line = status_line(running, OBJECTIVE, 4, "max", 65, total=10000)
    assert "256 running (epochs 0.4-2 of 4), 9744 left | no trial completed yet" in line and len(line) < 200


def test_status_line_spends_seed_epochs_and_gives_an_eta():
    cfg = canonical(BASE)
    done, pruned, running = (trial(x, n, cfg) for x, n in (("a", 0), ("b", 1), ("c", 2)))
    # 2 seeds, 4 epochs, rungs at 1 and 2 (reduction factor 2): 10 s per seed-epoch measured
    done.status, done.last_result = "TERMINATED", {OBJECTIVE: 0.6, "epoch": 4, "time_total_s": 80.0}
    pruned.status, pruned.last_result = "TERMINATED", {OBJECTIVE: 0.5, "epoch": 1, "time_total_s": 20.0}
    running.status, running.last_result = "RUNNING", {OBJECTIVE: 0.55, "epoch": 1, "time_total_s": 20.0}
    work = Work(seeds=2, max_t=4, rungs=(1, 2), reduction_factor=2)
    # a new trial: 2 seed-epochs, then 1/2 go on to epoch 2 (+2 seed-epochs) and 1/4 to epoch 4 (+4): 2 + 1 + 1 = 4
    assert work.expected(work.schedule({})) == 4.0
    # the running trial passed rung 1: 2 spent, 1/2 stop at epoch 2 (4), 1/2 go on to 4 (8): 6 in all, 4 to go
    assert work.expected(work.schedule({}), epoch=1) == 6.0
    line = status_line([done, pruned, running], OBJECTIVE, 4, "max", 130, total=5, work=work)
    # spent 8 + 2 + 2 = 12 in 120 s; to go 4 (running) + 2 left x 4 = 12, at 10 s each, one at a time
    assert "2 left | 12 seed-epochs spent, ~12 to go: ETA 2 min (10.0 s per seed-epoch, 1 at a time) |" in line
    pending = trial("d", 3, cfg)
    pending.status = "PENDING"
    fresh = status_line([pending], OBJECTIVE, 4, "max", 3, total=2, work=work)
    assert "0 seed-epochs spent, ~8 to go: ETA after the first epoch" in fresh


def test_a_diverged_trial_counts_as_failed():
    from search.tracking.outcome import outcome

    cfg = canonical(BASE)
    done, cut, diverged, errored = (trial(x, n, cfg) for x, n in (("c", 1), ("p", 2), ("d", 3), ("e", 4)))
    done.last_result, cut.last_result = {OBJECTIVE: 0.6, "epoch": 2}, {OBJECTIVE: 0.5, "epoch": 1}
    diverged.last_result = {OBJECTIVE: math.nan, "epoch": 1, "diverged": 1.0, "failure_reason": "DivergedError: nan"}
    errored.status, errored.last_result = "ERROR", {OBJECTIVE: 0.4, "epoch": 1}
    for t in (done, cut, diverged):
        t.status = "TERMINATED"  # Tune saw a diverged trial end normally
    assert [outcome(t, 2) for t in (done, cut, diverged, errored)] == ["completed", "pruned", "failed", "failed"]
    out = io.StringIO()
    TrialLines(OBJECTIVE, max_epochs=2, stream=out).on_trial_complete(0, [], diverged)
    assert out.getvalue().startswith("[t03] failed ") and out.getvalue().endswith(": DivergedError: nan\n")


def test_a_result_held_for_its_checkpoint_is_logged_when_a_resumed_study_ends_the_trial_on_it(study, tmp_path):
    """A study stopped (a full disk, Ctrl-C) between a result and its checkpoint: the restored trial comes back with
    that result, and the scheduler may stop it there at once. The resumed driver's tracker logs it at the trial's
    end; a result the first driver had logged already is kept once."""
    import pickle

    from ray.tune.result import SHOULD_CHECKPOINT

    client, parent, base_trial, _ = study
    uri = client.tracking_uri
    first = MLflowTracker(uri, parent, max_epochs=4, seeds=[1, 2], objective=OBJECTIVE, spool=tmp_path / "s2.jsonl")
    held = trial("c", 5, canonical(BASE.with_(lr=3e-5)))
    first.on_trial_start(0, [], held)
    held.last_result = {**result(1, [{"semeval/dev/acc_4way": 0.6}] * 2, [1, 2], BASE), SHOULD_CHECKPOINT: True}
    first.on_trial_result(0, [], held, held.last_result)  # the study stops before Tune holds the checkpoint
    assert first.spool.drain(60)
    resumed = pickle.loads(pickle.dumps(first))
    resumed.on_trial_complete(0, [], held)  # restored with that result and stopped on it
    resumed.on_trial_complete(0, [], base_trial)  # its last result was logged by the first driver
    assert resumed.spool.drain(60), resumed.spool.last_error
    runs = {
        r.data.tags.get("trial_id"): r.info.run_id
        for r in client.search_runs([find_parent(client, "absa", None)[0].experiment_id])
    }
    assert [(h.step, h.value) for h in client.get_metric_history(runs["c"], "objective")] == [(1, 0.6)]
    assert [h.step for h in client.get_metric_history(runs["a"], "objective")] == [1, 2]


def test_the_trial_table_reads_every_page_of_a_study_larger_than_one(study, monkeypatch):
    """A study of 10,000 trials is more than one ``search_runs`` page: the table holds every trial, in start
    order, however few runs a page the store gives (here 1: one call would have cut the table there)."""
    client, parent, _, _ = study
    experiment, parent_run = find_parent(client, "absa", None)
    whole = [r.number for r in trial_table(client, experiment.experiment_id, parent_run)]
    search_runs = client.search_runs

    def small_pages(*args, max_results=1000, **kwargs):
        return search_runs(*args, max_results=min(max_results, 1), **kwargs)

    monkeypatch.setattr(client, "search_runs", small_pages)
    assert len(whole) > 1
    assert [r.number for r in trial_table(client, experiment.experiment_id, parent_run)] == whole
