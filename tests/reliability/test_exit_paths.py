"""Whatever ends a study, nothing is left RUNNING (issue 11, item 6), end to end: a crash of the
driver's own code, then SIGTERM to the resumed driver, then a ``--resume`` that finishes with every
epoch logged once. (Ctrl-C: ``tests/search/test_study.py``'s resume test; each exception type
without Ray: ``test_study_end.py``.)"""

import signal

import pytest
from faults import (
    EPOCH_LINE,
    RUN,
    Driver,
    figure,
    optuna_running,
    optuna_states,
    runs,
    spool_of,
    steps_logged,
    study_args,
    values_lost,
)
from optuna.trial import TrialState

# 2 minutes of CI's 15; the same endings without Ray: test_study_end.py; Ctrl-C and resume: test_study.py
pytestmark = [pytest.mark.slow, pytest.mark.reliability, pytest.mark.extended]
RESUME = "python -m search.run absa --resume --name exits --storage "  # then the study's stores
# search.run with a bug in the driver's own code, in the Tune loop (an error in a callback's
# trial hooks Tune turns into a trial failure; one in on_step_begin ends the driver): it strikes
# once a trial has finished and the next one has reported an epoch
CRASH = """
import runpy
from search.tracking.tracker import MLflowTracker
def crash(self, iteration, trials, **info):
    if any(t.status == "TERMINATED" for t in trials) and any(t.status == "RUNNING" and t.last_result for t in trials):
        raise RuntimeError("injected driver fault")
MLflowTracker.on_step_begin = crash
runpy.run_module("search.run", run_name="__main__", alter_sys=True)
"""


def assert_ended(tmp, db, state: str, reason: str, earlier: tuple[str, ...] = ()) -> None:
    """No run RUNNING: the parent in ``state`` with ``reason``; each trial run finished, or KILLED by
    this ending or an ``earlier`` one; Optuna's RUNNING trials are those the ending handed to --resume."""
    everything = runs(db)
    (parent,) = [r for r in everything if r["tags"].get("kind") == "study"]
    assert [r["name"] for r in everything if r["status"] == "RUNNING"] == [], everything
    assert (parent["status"], parent["tags"].get("end_reason")) == (state, reason)
    assert parent["tags"].get("resume", "").startswith(RESUME), parent["tags"]
    for run in everything:
        if run["tags"].get("kind") == "trial" and run["status"] != "FINISHED":
            assert run["status"] == "KILLED" and run["tags"]["status"] == "interrupted", run
            assert run["tags"]["end_reason"] in (reason, *earlier), run
    running, ended = optuna_running(tmp, "exits")
    assert running == ended["running_trials"] and reason in ended["reason"], ended
    assert ended["resume"].startswith(RESUME), ended


def test_crash_then_sigterm_leave_nothing_running_and_resume_finishes(tmp_path, tiny_bert, record_property):
    db = tmp_path / "mlflow.db"
    args = study_args(
        tmp_path, tiny_bert, f"sqlite:///{db}", "exits", "--trials", "2", "--epochs", "2", "--max-concurrent", "1"
    )

    # -- a bug in the driver's code as the first trial ends: a traceback, exit 1 -------------------------
    driver = Driver(["-c", CRASH, *args], tmp_path)
    assert driver.finish() == 1, driver.output[-4000:]
    assert "RuntimeError: injected driver fault" in driver.output
    assert_ended(tmp_path, db, "FAILED", "RuntimeError: injected driver fault")

    # -- --resume, then SIGTERM once a trial trains: Tune saves its state, exit 130 -----------------------
    driver = Driver([*RUN, *args, "--resume"], tmp_path)
    driver.wait_for(EPOCH_LINE.pattern)
    driver.proc.send_signal(signal.SIGTERM)
    assert driver.finish() == 130, driver.output[-4000:]
    assert "Traceback" not in driver.output, driver.output[-4000:]
    assert_ended(tmp_path, db, "KILLED", "interrupted (SIGTERM)", earlier=("RuntimeError: injected driver fault",))

    # -- --resume finishes: two trials completed, each epoch logged once ------------------------------------
    # (a trial the crash caught before Tune saved it stays KILLED; Optuna's trial of it FAILs, and its
    # config trains afresh under a new number)
    driver = Driver([*RUN, *args, "--resume"], tmp_path)
    assert driver.finish() == 0, driver.output[-4000:]
    everything = runs(db)
    (parent,) = [r for r in everything if r["tags"].get("kind") == "study"]
    assert parent["status"] == "FINISHED" and "end_reason" not in parent["tags"] and "resume" not in parent["tags"]
    trials = [r for r in everything if r["tags"].get("kind") == "trial"]
    done = [r for r in trials if r["status"] == "FINISHED"]
    assert len(done) == 2 and all(r["tags"]["status"] in ("completed", "pruned") for r in done), trials
    assert all(r["status"] == "KILLED" and "resume" not in r["tags"] for r in trials if r not in done), trials
    for run in done:
        steps = [step for step, _ in steps_logged(db, run["run_id"])]
        assert steps == list(range(1, int(run["tags"]["epochs_trained"]) + 1)), (run["name"], steps)
    states = optuna_states(tmp_path, "exits")
    assert TrialState.RUNNING not in states and states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED) == 2
    spooled, lost = values_lost(db, spool_of(tmp_path, "exits"))
    assert lost == 0 and spooled > 0
    figure(record_property, faults_injected=2, studies_ended_cleanly=3, values_lost=lost, values_spooled=spooled)
