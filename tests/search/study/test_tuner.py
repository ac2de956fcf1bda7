"""What the study's Tuner costs the driver as trials accumulate (issue 18, benchmarks/README.md
``sim_cost``), measured on a small simulated study: Tune reuses a slot's actor for the next trial
instead of starting a process per trial, and saves its experiment state on its own period, not
after every checkpointed result (each save writes every trial, so per-result saves grow as
results x trials)."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT, study_env


@pytest.mark.slow
def test_trials_reuse_actors_and_state_saves_do_not_follow_every_result(tmp_path):
    out = tmp_path / "cost.jsonl"
    command = [sys.executable, "-m", "benchmarks.sim_cost", "--trials", "12", "--slots", "3"]
    command += ["--epoch-seconds", "1", "--out", str(out)]
    r = subprocess.run(command, cwd=ROOT, env=study_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (figures,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert figures["trials"] == 12 and figures["results"] >= 12
    assert figures["trial_processes"] <= 6  # 3 slots; a process per trial would be 12
    assert figures["state_saves"] <= figures["results"] / 2  # num_to_keep=1 saved after every result
