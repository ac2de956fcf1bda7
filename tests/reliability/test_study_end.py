"""Every way out of ``search.study.runner.run`` ends what the study opened (search/study/ending.py), here
without Ray: the study's body replaced by one that opens a parent run, a trial run and an
Optuna trial, then fails as a driver can (a refusal after Ray started, Ctrl-C outside Tune,
Ray's SIGTERM handler)."""

import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import mlflow
import optuna
import pytest
from optuna.trial import TrialState

import search.study.ending
import search.study.runner
from search.simulation.kind import trial_kind
from search.study.config import SearchConfig
from search.study.ending import StudyEnd
from search.study.kind import TrainedTrials
from search.study.plan import plan_offline
from search.tracking.runs import start_parent_run
from search.tracking.sink import study_spool
from search.tracking.spool import unsent
from trainables.config import ConfigError

FAULTS = {
    "refused": (
        ConfigError("--gpus-per-trial 1: no node of this cluster has a GPU"),
        "FAILED",
        "ConfigError: --gpus-per-trial 1: no node of this cluster has a GPU",
    ),
    "ctrl-c": (KeyboardInterrupt(), "KILLED", "interrupted (Ctrl-C)"),
    "sigterm": (SystemExit(15), "KILLED", "interrupted (SIGTERM)"),  # Ray's handler, before watch_signals
    "bug": (ZeroDivisionError("division by zero"), "FAILED", "ZeroDivisionError: division by zero"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ending")
    return tmp, f"sqlite:///{tmp}/mlflow.db"


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failing_driver_ends_its_runs_and_trials(store, monkeypatch, fault, record_property):
    tmp, uri = store
    error, state, reason = FAULTS[fault]
    storage = f"sqlite:///{tmp}/optuna-{fault}.db"
    optuna.create_study(study_name=fault, storage=storage).ask()  # a trial Tune would have run

    def body(cfg, kinds, end: StudyEnd):
        parent = start_parent_run(uri, "absa", fault, {"objective": "train/loss/mean"})
        spool = study_spool(tmp / fault / "spool.jsonl", uri, parent)
        end.opened(spool, fault, "", storage)  # no Tune state saved: nothing to resume
        spool.put(
            {
                "op": "start",
                "trial": "t1",
                "name": "t00 baseline",
                "params": {},
                "tags": {"mlflow.parentRunId": parent, "trial_id": "t1", "kind": "trial", "status": "running"},
            }
        )
        raise error

    monkeypatch.setattr(search.study.runner, "run_study", body)
    with pytest.raises(type(error)):
        search.study.runner.run(SearchConfig("absa", tracking_uri=uri), trial_kind)

    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("absa")
    runs = client.search_runs([experiment.experiment_id], f"tags.tune_experiment = '{fault}'")
    (parent,) = runs
    (child,) = client.search_runs([experiment.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert (parent.info.status, parent.data.tags["end_reason"]) == (state, reason)
    assert "resume" not in parent.data.tags  # Tune saved nothing: there is nothing to resume
    assert (child.info.status, child.data.tags["status"], child.data.tags["end_reason"]) == (
        "KILLED",
        "interrupted",
        reason,
    )
    study = optuna.load_study(study_name=fault, storage=storage)
    assert [t.state for t in study.trials] == [TrialState.FAIL]
    assert study.user_attrs["ended"]["running_trials"] == [0] and study.user_attrs["ended"]["resume"] is None
    record_property("figure", f"faults injected=1, studies ended cleanly=1 ({state}), runs or trials left RUNNING=0")


def test_a_refusal_before_the_parent_run_touches_nothing(store, monkeypatch):
    tmp, uri = store
    storage = f"sqlite:///{tmp}/optuna-early.db"
    optuna.create_study(study_name="early", storage=storage).ask()

    def body(cfg, kinds, end):
        raise ConfigError("--metric 'bogus': expected one of ...")  # prepare() refuses, after Ray started

    monkeypatch.setattr(search.study.runner, "run_study", body)
    with pytest.raises(ConfigError):
        search.study.runner.run(SearchConfig("absa", tracking_uri=uri), trial_kind)
    study = optuna.load_study(study_name="early", storage=storage)
    assert [t.state for t in study.trials] == [TrialState.RUNNING] and "ended" not in study.user_attrs


def test_sigterm_ends_the_study_as_ctrl_c_does():
    end = StudyEnd("absa")
    previous, previous_int = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    # Python's own Ctrl-C handler: an earlier in-process Tuner may have left Tune's installed
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        end.watch_signals()
        with pytest.raises(KeyboardInterrupt):  # outside Tune; inside, Tune's own Ctrl-C handler saves its state
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        assert end.signal_name == "SIGTERM"
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def test_a_crash_with_the_tracking_server_down_leaves_its_endings_in_the_spool(store, monkeypatch, caplog):
    tmp, uri = store
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    storage = f"sqlite:///{tmp}/optuna-down.db"
    optuna.create_study(study_name="down", storage=storage)
    path = tmp / "down" / "spool.jsonl"

    def body(cfg, kinds, end: StudyEnd):
        spool = study_spool(path, "http://127.0.0.1:9", "parent-run-id", grace_s=1)  # nothing listens on port 9
        end.opened(spool, "down", "", storage)
        spool.put({"op": "start", "trial": "t1", "name": "t00 baseline", "tags": {}})
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(search.study.runner, "run_study", body)
    with pytest.raises(ZeroDivisionError):
        search.study.runner.run(SearchConfig("absa", tracking_uri=uri), trial_kind)
    ends = [(r["trial"], r["state"], r["tags"]["end_reason"]) for r in unsent(path) if r["op"] == "end"]
    assert ends == [
        ("t1", "KILLED", "ZeroDivisionError: division by zero"),
        (None, "FAILED", "ZeroDivisionError: division by zero"),
    ]
    assert "MLflow records wait in" in caplog.text and "Connection refused" in caplog.text


def test_the_outage_line_names_the_tracking_uri_without_its_password():
    spool = SimpleNamespace(last_error="Connection refused", pending=lambda: 3, path="ray/absa-1/mlflow-spool.jsonl")
    cfg = SearchConfig("absa", preset="smoke", tracking_uri="https://me:s3cret@mlflow.example.org", tracking_grace=60)
    plan = plan_offline(replace(cfg, name="absa-1"), TrainedTrials())
    line = str(search.study.ending.tracking_unavailable(spool, plan))
    assert "https://me:***@mlflow.example.org unreachable for over 60 s (Connection refused)" in line
    resume = "python -m search.run absa --resume --name absa-1 --storage"
    assert "s3cret" not in line and resume in line
    assert line.endswith(" --optuna-storage sqlite:///" + str(Path.cwd() / "optuna.db"))
