"""End to end: ``python -m search.run`` on a tiny random encoder, real Ray, MLflow and Optuna."""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import optuna
import pandas as pd
import pytest
from conftest import example_study, mlflow_server, study_env, study_stores
from optuna.trial import TrialState


def study_args(tmp: Path, model: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "search.run",
        "absa",
        "--preset",
        "smoke",
        "--model",
        str(model),
        "--seeds",
        "2",
        "--epochs",
        "3",
        "--grace-period",
        "1",
        "--reduction-factor",
        "2",
        "--metric",
        "train/loss",
        "--mode",
        "min",  # continuous, so ASHA has something to cut
        *study_stores(tmp),
        *extra,
    ]


def runs(tmp: Path):
    client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    experiment = client.get_experiment_by_name("absa")
    everything = client.search_runs([experiment.experiment_id])
    parents = [r for r in everything if r.data.tags.get("kind") == "study"]
    children = [r for r in everything if r.data.tags.get("kind") == "trial"]
    return client, parents, children


def optuna_trials(tmp: Path):
    storage = f"sqlite:///{tmp}/optuna.db"
    (name,) = optuna.get_all_study_names(storage)
    return optuna.load_study(study_name=name, storage=storage).trials


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory, tiny_bert):
    """A finished tiny study (6 trials, 2 seeds, 3 epochs, not finalized): its folder and output."""
    tmp_path = tmp_path_factory.mktemp("tiny-study")
    # one at a time, so which trial reaches a rung first, and so what ASHA stops, is the same every run
    # (ASHA keeps each side's leader; the baseline's keeping, whatever the order, is tests/search/study's)
    r = subprocess.run(
        study_args(tmp_path, tiny_bert, "--trials", "6", "--max-concurrent", "1", "--no-finalize"),
        cwd=tmp_path,
        env=study_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return tmp_path, r


@pytest.mark.slow
def test_tiny_study_end_to_end(tiny_study):
    tmp_path, r = tiny_study
    assert len(re.findall(r"^\[t\d\d\] ", r.stdout, re.M)) == 6, r.stdout[-3000:]  # one line per finished trial

    client, parents, children = runs(tmp_path)
    assert len(parents) == 1 and len(children) == 6
    parent = parents[0]
    assert parent.data.params["objective"] == "train/loss/mean" and parent.data.params["seeds"] == "1,2"
    assert {a.path for a in client.list_artifacts(parent.info.run_id, "report")} >= {
        "report/report.md",
        "report/report.csv",
        "report/objective_per_schema.png",
        "report/best_so_far.png",
        "report/learning_curves.png",
    }
    for child in children:
        tags, params, metrics = child.data.tags, child.data.params, child.data.metrics
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert tags["status"] in ("completed", "pruned") and tags["canonical_key"]
        assert tags["device"] == "cpu" and tags["node_ip"] and tags["hostname"]
        assert params["tasks"].startswith("semeval") and {"schema", "aux", "lr", "warmup", "seeds"} <= set(params)
        assert child.info.run_name.startswith(f"t{int(tags['trial']):02d} ")
        assert {
            "objective",
            "objective_std",
            "train/loss/mean",
            "train/loss/std",
            "train/loss/seed1",
            "train/loss/seed2",
            "semeval/dev/acc_4way/mean",
            "semeval/dev/acc_4way/seed2",
            "sampling/p/semeval/mean",
        } <= set(metrics)
        history = client.get_metric_history(child.info.run_id, "train/loss/mean")
        assert [m.step for m in history] == list(range(1, int(tags["epochs_trained"]) + 1))
    (baseline,) = [c for c in children if c.data.tags.get("baseline") == "true"]
    assert baseline.data.tags["status"] == "completed" and baseline.info.run_name == "t00 baseline"
    assert baseline.data.params["schema"] == "single" and baseline.data.params["aux"] == "none"
    assert client.get_run(parent.info.run_id).info.status == "FINISHED"

    # ASHA's stops reach Optuna as PRUNED, finished trials as COMPLETE
    status = {c.data.tags["canonical_key"]: c.data.tags["status"] for c in children}
    trials = optuna_trials(tmp_path)
    by_key = {t.user_attrs["canonical_key"]: t.state for t in trials if "duplicate_of" not in t.user_attrs}
    names = {t.user_attrs["run_name"] for t in trials if "duplicate_of" not in t.user_attrs}
    assert names == {c.info.run_name for c in children}  # one numbering: Optuna's
    assert by_key == {k: TrialState.PRUNED if s == "pruned" else TrialState.COMPLETE for k, s in status.items()}
    assert list(status.values()).count("pruned") >= 1, "ASHA pruned nothing: the test would prove nothing"

    folder = next((tmp_path / "results" / "absa").iterdir())
    text = (folder / "report.md").read_text()
    assert "**t00 baseline**" in text and "SOTA (thesis Table 3.4)" in text and "Majority rate" in text
    import pandas as pd

    table = pd.read_csv(folder / "report.csv")
    base_row = table[table.source == "baseline"].iloc[0]
    assert base_row.delta_abs == 0 and base_row["delta_rel_%"] == 0
    searched = table[table.source == "search"]
    assert all(b == "n=2: too few" for b in searched.beyond_noise)  # two seeds: no trial is called beyond noise
    assert (searched.objective_mean - base_row.objective_mean).round(9).tolist() == searched.delta_abs.round(9).tolist()
    assert len(pd.read_csv(folder / "trials.csv")) == 6


@pytest.mark.slow
@pytest.mark.extended  # 1.5 minutes of CI's 12: make test-all; its rule (complete_finals) is unit-tested in CI
def test_an_interrupted_finalize_is_trained_again_not_reused(tiny_study):
    """Ctrl-C during finalize's training leaves its final runs interrupted; the rerun the message asks
    for trains those seeds again (issue 17: a partly trained final run never counts as finished)."""
    from reliability.faults import Driver

    tmp_path, _ = tiny_study
    name = next((tmp_path / "ray").iterdir()).name
    args = ["-m", "search.finalize", "absa", "--name", name, "--seeds", "3", "--no-register"]
    args += ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--out", str(tmp_path / "final-out")]
    first = Driver(args, tmp_path)
    first.wait_for(r"final (winner|opponent) .*: epoch 1 of \d+, dev")  # a final run is training
    os.killpg(first.proc.pid, signal.SIGINT)
    assert first.finish(timeout=300) != 0, first.output[-3000:]
    assert f"rerun python -m search.finalize absa --name {name}" in first.output, first.output[-3000:]
    client, (parent,), _ = runs(tmp_path)
    experiment = client.get_experiment_by_name("absa").experiment_id
    stopped = client.search_runs([experiment], "tags.kind = 'final'")
    assert stopped and all(f.data.tags["status"] != "completed" for f in stopped), [f.data.tags for f in stopped]

    r = subprocess.run([sys.executable, *args], cwd=tmp_path, env=study_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    finals = client.search_runs([experiment], "tags.kind = 'final'")
    done = [f for f in finals if f.data.tags["status"] == "completed"]
    # each arm's three fresh seeds (3-5: the search trained 1-2) come from complete runs of the rerun alone:
    # winner, opponent, and the winner's ablation unless it is the opponent's config
    arms = {f.data.tags["final_for"] for f in done}
    assert len(done) == len(arms) in (2, 3) and {f.info.run_id for f in done}.isdisjoint(f.info.run_id for f in stopped)
    assert all(f.data.params["seeds"] == "3,4,5" and f.data.tags["epochs_trained"] == "3" for f in done)
    assert client.get_run(parent.info.run_id).data.tags["final_verdict"].startswith("acc_4way: ")


@pytest.mark.slow
def test_resume_after_interrupt_loses_and_duplicates_nothing(tmp_path, tiny_bert):
    args = study_args(
        tmp_path,
        tiny_bert,
        "--trials",
        "3",
        "--name",
        "resumable",
        "--no-report",
        "--max-concurrent",
        "1",
        "--seeds",
        "1",
        "--epochs",
        "2",  # the interruption and the resume, not the recipe: two epochs a trial are enough to cut between
    )
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        env=study_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen = []
    deadline = time.time() + 300
    for line in proc.stdout:  # interrupt (Ctrl-C) once the first trial has finished
        seen.append(line)
        if re.match(r"\[t\d\d\] ", line) or time.time() > deadline:
            break
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, "".join(seen)[-2000:] + rest[-3000:]
    _, (parent,), before = runs(tmp_path)
    # nothing left RUNNING: what --resume continues is KILLED and says so
    assert (parent.info.status, parent.data.tags["end_reason"]) == ("KILLED", "interrupted (Ctrl-C)")
    stores = ["--storage", str(tmp_path / "ray"), "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    stores += ["--optuna-storage", f"sqlite:///{tmp_path}/optuna.db"]
    resume = ["python", "-m", "search.run", "absa", "--resume", "--name", "resumable", *stores]
    assert parent.data.tags["resume"] == shlex.join(resume)
    assert not [c for c in before if c.info.status == "RUNNING"] and all(
        c.data.tags["status"] == "interrupted" for c in before if c.info.status == "KILLED"
    )
    assert 1 <= sum(c.data.tags["status"] in ("completed", "pruned") for c in before) < 3
    running = [t.number for t in optuna_trials(tmp_path) if t.state == TrialState.RUNNING]
    study = optuna.load_study(study_name="resumable", storage=f"sqlite:///{tmp_path}/optuna.db")
    assert running == study.user_attrs["ended"]["running_trials"]  # handed to --resume, below

    # a new study may not take the interrupted one's name
    r = subprocess.run(
        study_args(tmp_path, tiny_bert, "--trials", "3", "--name", "resumable"),
        cwd=tmp_path,
        env=study_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "error: --name resumable: a study of that name exists" in r.stderr, r.stderr[-2000:]

    # no --model: a resumed study takes the encoder (and the data it needs) from the invocation it continues
    args = study_args(
        tmp_path, tiny_bert, "--trials", "3", "--resume", "--name", "resumable", "--no-finalize", "--epochs", "2"
    )
    args = args[: args.index("--model")] + args[args.index("--model") + 2 :]
    r = subprocess.run(args, cwd=tmp_path, env=study_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    client, parents, children = runs(tmp_path)
    assert len(parents) == 1
    trial_ids = [c.data.tags["trial_id"] for c in children]
    assert len(trial_ids) == len(set(trial_ids)) == 3  # nothing lost, nothing twice
    ended = optuna.load_study(study_name="resumable", storage=f"sqlite:///{tmp_path}/optuna.db").user_attrs["ended"]
    assert ended["reason"].startswith("FINISHED") and not ended["running_trials"]  # not the interruption's
    assert all(c.data.tags["status"] in ("completed", "pruned") for c in children)
    for child in children:  # every epoch logged once, in order, across the interruption
        steps = [m.step for m in client.get_metric_history(child.info.run_id, "train/loss/mean")]
        assert steps == list(range(1, int(child.data.tags["epochs_trained"]) + 1)), steps
    states = [t.state for t in optuna_trials(tmp_path)]
    assert states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED) == 3
    assert TrialState.RUNNING not in states


def test_bad_input_fails_before_any_trial(tmp_path, tiny_bert):
    cases = {
        ("absx",): "unknown study 'absx'",
        ("absa", "--auxiliary", "sst2,bogus"): "unknown task 'bogus'",
        ("absa", "--auxiliary", ","): "--auxiliary is empty",
        ("absa", "--exponent-range", "2,1"): "exponent range [2.0, 1.0]: low is above high",
        ("absa", "--anneal-range", "0,1.5"): "anneal_c range [0.0, 1.5]: expected within [0.0, 1.0]",
        ("absa", "--metric", "bogus"): "--metric 'semeval/dev/bogus/mean': expected one of",
        ("absa", "--data-dir", str(tmp_path / "nodata")): "semeval: missing dataset file(s)",
        # a server that does not answer gets the grace (at most a minute) to start: 3 s here, said in one line
        ("absa", "--tracking-uri", "http://127.0.0.1:9", "--tracking-grace", "3"): "MLflow tracking URI "
        "http://127.0.0.1:9 is unreachable after 3 s",
        ("absa", "--address", "127.0.0.1:9"): "Ray cluster at --address 127.0.0.1:9 is unreachable",
        ("absa", "--storage", "/proc/x"): "--storage /proc/x: /proc is not a writable directory",
        ("absa", "--optuna-storage", "sqlite:////proc/x/optuna.db"): "--optuna-storage sqlite:////proc/x/optuna.db: "
        "folder /proc/x is missing or not writable",
        (
            "absa",
            "--optuna-storage",
            "postgresql://me:s3cret@127.0.0.1:9/optuna",
        ): "postgresql://me:***@127.0.0.1:9/optuna",
        # after Ray starts, before any run or trial: Tune would wait forever for a GPU
        ("absa", "--preset", "smoke", "--gpus-per-trial", "1"): "--gpus-per-trial 1: no node of this Ray cluster can "
        "ever run a trial (1 CPU/1 GPU); nodes: 1 x ",
    }
    # all at once: each case is mostly the interpreter importing torch and Ray
    procs = {
        args: subprocess.Popen(
            [sys.executable, "-m", "search.run", *args, "--model", str(tiny_bert)],
            cwd=tmp_path,
            env=study_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in cases
    }
    for args, message in cases.items():
        out, err = procs[args].communicate(timeout=300)
        r = subprocess.CompletedProcess(args, procs[args].returncode, out, err)
        errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
        assert r.returncode == 2 and len(errors) == 1 and message in errors[0], (args, r.stderr[-1500:])
        assert "s3cret" not in r.stderr + r.stdout
    assert not (tmp_path / "ray_results").exists() and not (tmp_path / "mlflow.db").exists()


def test_a_bad_range_is_one_line_not_the_usage(capsys):
    from search.run import parser

    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["absa", "--warmup-range", "0.1,abc"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: argument --warmup-range: '0.1,abc': expected LOW,HIGH (two numbers)")


def test_help_groups_every_flag_and_shows_its_default():
    from search.run import parser

    p = parser()
    for group in p._action_groups:  # argparse has no public accessor for its groups (checked on 3.12)
        for action in group._group_actions:
            if group.title == "options":  # argparse's own group: only --help and --list stay there
                assert action.dest in ("help", "list"), action.option_strings
            elif action.option_strings and action.nargs != 0:  # a flag with a value says its default
                assert "default:" in (action.help or ""), action.option_strings
    assert "(default: sqlite:///mlflow.db)" in " ".join(p.format_help().split())


@pytest.mark.slow
@pytest.mark.extended  # 1.5 minutes of CI's 15 (test_model and the outage test use a server too): make test-all
def test_study_logs_to_a_tracking_server(tmp_path, tiny_bert):
    with mlflow_server(
        tmp_path, f"sqlite:///{tmp_path}/server.db", "--artifacts-destination", str(tmp_path / "art")
    ) as uri:
        # one epoch: ASHA cannot stop anything; finalize trains fresh seeds 2-4 for winner and opponent
        args = study_args(
            tmp_path,
            tiny_bert,
            "--trials",
            "4",  # the space draws single-task at even odds: enough for a multitask trial beside the baseline
            "--epochs",
            "1",
            "--seeds",
            "1",
            "--tracking-uri",
            uri,
            "--final-seeds",
            "3",
        )
        r = subprocess.run(args, cwd=tmp_path, env=study_env(), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        client = mlflow.MlflowClient(uri, registry_uri=uri)
        experiment = client.get_experiment_by_name("absa")
        everything = client.search_runs([experiment.experiment_id])
        children = [run for run in everything if run.data.tags.get("kind") == "trial"]
        finals = [run for run in everything if run.data.tags.get("kind") == "final"]
        (parent,) = [run for run in everything if run.data.tags.get("kind") == "study"]
        assert len(children) == 4 and all(c.data.tags["status"] == "completed" for c in children)
        assert all("train/loss/mean" in c.data.metrics for c in children)
        assert "report/report.md" in {a.path for a in client.list_artifacts(parent.info.run_id, "report")}

        # finalize: seeds 2-4 (none the search used) of winner, opponent and the winner's ablation (unless it is
        # the opponent's config) as runs of their own, a verdict per claim, a model
        assert len(finals) in (2, 3) and all(f.data.params["seeds"] == "2,3,4" for f in finals), (
            r.stdout[-3000:] + r.stderr[-3000:]
        )
        trial_ids = {c.info.run_id for c in children}
        assert {f.data.tags["final_for"].removesuffix("-ablation") for f in finals} <= trial_ids
        parent = client.get_run(parent.info.run_id)
        verdict = parent.data.tags["final_verdict"]
        assert verdict.startswith("acc_4way: ") and verdict != "acc_4way: too few seeds to tell"
        assert {"final/winner/acc_4way/mean", "final/opponent/acc_4way/mean", "final/diff/acc_4way/low"} <= set(
            parent.data.metrics
        )
        assert parent.data.tags["final_model"] == "models:/absa-best/1"
        version = client.get_model_version("absa-best", "1")
        said = version.tags.get("verdict", "")  # both claims: (a) ...; (b) ...
        assert said.startswith("(a) ") and verdict.split(": ", 1)[1] in said, said
        assert "metric.test/acc_4way" in version.tags, (
            version.tags,
            r.stdout[-2000:] + r.stderr[-2000:],
        )
        folder = next((tmp_path / "results" / "absa").iterdir())
        final = pd.read_csv(folder / "final.csv")
        row = final[(final.source == "final (a) tuned") & (final.metric == "acc_4way")].iloc[0]
        assert row.n == 3 and row.method.startswith("paired t") and row.diff_low <= row.diff_mean <= row.diff_high
        report = (folder / "report.md").read_text()
        assert "## Final test evaluation: 3 fresh seeds (2,3,4)" in report and "Majority" in report
        assert "Δ multitask − other [interval, level]" in report
        closing = r.stdout[r.stdout.index("== absa: the answer ==") :]  # the summary block ends the output
        assert "multitask vs single-task on test acc_4way" in closing and "models:/absa-best/1" in closing


# 25-30 s of CI's 12 minutes: make test-all; CI parses the README's study file (tests/spaces/test_study_file.py)
# and trains file tasks in the core (tests/trainables/test_tasks.py)
@pytest.mark.extended
def test_readme_study_file_end_to_end(tmp_path, tiny_bert):
    """The README's example study file, as it stands, on two tiny CSV tasks of its own."""
    study = example_study(tmp_path / "my")
    args = [
        sys.executable,
        "-m",
        "search.run",
        str(study),
        "--preset",
        "smoke",
        "--model",
        str(tiny_bert),
        "--trials",
        "2",
        "--seeds",
        "1",
        "--epochs",
        "1",
        "--max-concurrent",
        "2",
        "--no-finalize",
        "--search-seed",
        "5",
        *study_stores(tmp_path),
    ]
    r = subprocess.run(args, cwd=tmp_path, env=study_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    everything = client.search_runs([client.get_experiment_by_name("reviews").experiment_id])
    (parent,) = [run for run in everything if run.data.tags.get("kind") == "study"]
    children = [run for run in everything if run.data.tags.get("kind") == "trial"]
    assert parent.data.params["objective"] == "reviews/dev/acc/mean" and len(children) == 2
    assert all(c.data.tags["status"] == "completed" and "reviews/dev/acc/mean" in c.data.metrics for c in children)
    (multitask,) = [c for c in children if c.data.tags["baseline"] != "true"]
    # a file task by its declared name, in the run's name and params (issue 16: not its path or stem)
    assert multitask.info.run_name.split()[1] == "topics", multitask.info.run_name
    assert multitask.data.params["aux"] == "topics" and "/" not in multitask.data.params["tasks"]

    # the trial searched the auxiliary's weight (seed 5: it adds the auxiliary under prop, a weighted schema)
    trials = [t for t in optuna_trials(tmp_path) if "duplicate_of" not in t.user_attrs]
    weights = {k: v for t in trials for k, v in t.params.items() if k.startswith("weight/")}
    assert list(weights) == [f"weight/csv:{tmp_path / 'my' / 'topics.json'}"], [t.params for t in trials]
    assert 0.25 <= next(iter(weights.values())) <= 4.0

    (folder,) = (tmp_path / "results" / "reviews").iterdir()
    report = (folder / "report.md").read_text()
    assert "**t00 baseline**" in report and "my last model (one seed)" in report


def test_strata_and_hedge_flags_reach_the_config_and_bad_ones_are_one_line():
    from search.run import config_from_args, parser
    from search.study.kind import TrainedTrials
    from search.study.plan import plan_offline
    from trainables.config import ConfigError

    cfg = config_from_args(parser().parse_args(["absa", "--strata", "3", "--hedge", "2"]))
    assert (cfg.strata, cfg.hedge) == (3, 2)
    cfg = config_from_args(parser().parse_args(["absa"]))
    assert (cfg.strata, cfg.hedge) == (None, None)  # the strategy's
    for flags, message in ((["--strata", "-1"], "--strata -1: expected >= 1"), (["--hedge", "-1"], "--hedge -1")):
        with pytest.raises(ConfigError, match=message) as info:
            config_from_args(parser().parse_args(["absa", *flags]))
        assert "\n" not in str(info.value)
    tpe = config_from_args(parser().parse_args(["absa", "--preset", "full", "--search", "tpe", "--hedge", "3"]))
    with pytest.raises(ConfigError, match="--strata and --hedge act on cohort halving: --search tpe") as info:
        plan_offline(tpe, TrainedTrials())  # what search.run plans before Ray starts a trial
    assert "\n" not in str(info.value)
