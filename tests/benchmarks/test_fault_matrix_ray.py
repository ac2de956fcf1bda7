"""The Ray path's fault matrix (``benchmarks.fault_matrix_ray``): its drivers' command lines are the ones
``search.run`` takes, and a hard kill between Tune's two state writes, then ``--resume``, ends with nothing lost
and the answer of the study not interrupted (extended: two Ray studies, about 4 minutes on 2 cores; the benchmark
runs every fault)."""

import argparse
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from benchmarks.fault_matrix_ray import Driver, Study, ended, run_study, session_pids, trial_pids
from search.run import parser


def options(**kw) -> argparse.Namespace:
    defaults = dict(truth="late_bloomer", slots=64, window=60.0, outage_seconds=60.0, tmpfs_mb=400, timeout=600.0)
    return argparse.Namespace(**(defaults | dict(resumes=3) | kw))


def test_the_drivers_command_lines_parse_as_search_run_reads_them(tmp_path):
    study = Study(tmp_path / "s", options(), seed=3)
    started = parser().parse_args(study.start_args())
    assert (started.simulate, started.max_concurrent, started.search_seed, started.name) == (
        "late_bloomer",
        64,
        3,
        "faults-3",
    )
    resumed = parser().parse_args(study.resume_args())
    assert resumed.resume and resumed.storage == started.storage and resumed.tracking_uri == started.tracking_uri


def test_a_sessions_processes_are_found_and_only_trials_count_as_trials():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while child.pid not in session_pids(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert session_pids(child.pid) == [child.pid] and trial_pids(child.pid) == []
        assert os.getpid() not in session_pids(child.pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


@pytest.mark.slow
@pytest.mark.extended
def test_a_kill_between_the_two_writes_resumes_to_the_same_answer(tmp_path):
    args = options()
    whole = run_study(Study(tmp_path / "whole", args, 0), None, random.Random(0))
    hit = run_study(Study(tmp_path / "hit", args, 0), "kill-between-writes", random.Random("ci"))
    assert hit["struck"] and hit["exit_codes"][0] == -signal.SIGKILL and hit["exit_codes"][-1] == 0, hit
    assert hit["lost"] == hit["mlflow_running"] == hit["optuna_running"] == 0, hit
    assert (hit["selected"], hit["verdict"]) == (whole["selected"], whole["verdict"]) != (None, None)


@pytest.mark.slow
@pytest.mark.extended
def test_a_resumed_trial_whose_saved_checkpoint_is_gone_trains_again_and_nothing_is_lost(tmp_path):
    # what a kill before Tune's background sync of its saved state leaves on a loaded machine, made certain: the
    # saved experiment names a checkpoint of an unfinished trial that is no longer on the storage
    import shutil

    from benchmarks.fault_matrix_ray import answer, kill_session

    study = Study(tmp_path / "gone", options(), 0)
    driver = Driver(study.start_args(), study.folder, study.env())
    experiment, saved, deadline = study.storage / study.name, [], time.monotonic() + 300
    while not saved and driver.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)  # until the state Tune synced to the storage holds an unfinished trial with a checkpoint
        saved = unfinished_with_checkpoints(experiment)
    kill_session(driver.proc.pid)
    assert saved and ended(driver, study, "sigkill", 60) == -signal.SIGKILL, driver.text()[-2000:]
    saved = unfinished_with_checkpoints(experiment)  # the state as the kill left it (a sync may have landed)
    assert saved
    for checkpoint in (experiment / f"trial_{saved[0]}").glob("checkpoint_*"):
        shutil.rmtree(checkpoint)
    resumed = Driver(study.resume_args(), study.folder, study.env())
    assert ended(resumed, study, "sigkill", 600, 1) == 0, resumed.text()[-2000:]
    left = answer(study)
    assert left["lost"] == left["mlflow_running"] == left["optuna_running"] == 0 and left["verdict"], left
    assert f"trial {saved[0]}: its last checkpoint is gone" in resumed.text()


def unfinished_with_checkpoints(experiment) -> list[str]:
    """The unfinished trials of the latest experiment state Tune synced to ``experiment`` that hold a checkpoint
    (Tune's own format, read as text; a state being written reads as none yet)."""
    import json

    try:
        state = json.loads(max(experiment.glob("experiment_state-*.json")).read_text())
    except (ValueError, OSError):
        return []
    return [
        json.loads(trial)["trial_id"]
        for trial, metadata in state["trial_data"]
        if '"status": "TERMINATED"' not in trial and "checkpoint_dir_name" in metadata
    ]
