"""Cohort halving through Ray (PAUSE, resume from the checkpoint, ``stop_trial`` of a paused trial) takes the
decisions the simulator backend takes."""

import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from conftest import study_env, study_stores
from ray import tune
from ray_study import backend_trials, ray_trials

from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig


@pytest.mark.slow
# without a screen point (the same PAUSE, resume and stop_trial) in extended: the suite's time on 2 cores
@pytest.mark.parametrize("screen", [pytest.param(0.0, marks=pytest.mark.extended), 0.5])
def test_the_backend_makes_the_ray_studys_halving_decisions(tmp_path, screen):
    # 7 cells (SST-2 as the only candidate: the baseline + 6 schemas), 1 slot: Tune's order is deterministic;
    # with a screen point, every trial reports at half the first epoch and resumes from that checkpoint
    flags = ["--search", "cells-halving", "--auxiliary", "sst2", "--trials", "7", "--seeds", "1"]
    flags += ["--epochs", "3", "--max-concurrent", "1", "--search-seed", "0", "--reduction-factor", "3"]
    ray = ray_trials(tmp_path, *flags, "--screen-fraction", str(screen))
    path = resolve_truth("three_better")
    cfg = SearchConfig(
        "absa",
        preset="full",
        simulate=path,
        search="cells-halving",
        auxiliary=("sst2",),
        trials=7,
        seeds=1,
        epochs=3,
        max_concurrent=1,
        reduction_factor=3,
        screen_fraction=screen,
    )
    ours = backend_trials(simulate(cfg, load_truth(path)))
    assert ours == ray
    assert {"completed", "pruned"} <= {r[2] for r in ours}


# not in CI (the suite's time on 2 cores). On 2026-11-25 it passed once and once hung in the resumed study: Ray saved
# no scheduler state then, and started the trials paused at a rung; since the limiter saves it (2026-11-27) it passes
@pytest.mark.extended
@pytest.mark.timeout(600)
def test_a_halving_study_interrupted_with_cells_paused_resumes_to_a_verdict(tmp_path):
    """Ctrl-C once a cell has ended (others wait paused at a rung); the printed line finishes the study:
    every cell completed or pruned, nothing left PAUSED in Tune or RUNNING in Optuna, and a verdict."""
    truth = tmp_path / "slow.toml"
    truth.write_text(Path(resolve_truth("three_better")).read_text().replace("scale = 0.0 ", "scale = 0.01 "))
    flags = ["--simulate", str(truth), "--search", "cells-halving", "--auxiliary", "sst2", "--seeds", "1"]
    flags += ["--epochs", "3", "--reduction-factor", "3", "--max-concurrent", "1", "--final-seeds", "3"]
    run = [sys.executable, "-m", "search.run", "absa", *flags, *study_stores(tmp_path)]
    proc = subprocess.Popen(
        run, cwd=tmp_path, env=study_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if re.match(r"\[t\d\d\] pruned", line):
            break
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, "".join(seen)[-2000:] + rest[-3000:]
    (command,) = re.findall(r"continue it with: (.+)", rest)
    _, *argv = shlex.split(command)
    r = subprocess.run([sys.executable, *argv], cwd=tmp_path, env=study_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (path,) = [p for p in (tmp_path / "ray").glob("absa-*") if "-final-" not in p.name]  # not finalize's
    assert {t.status for t in tune.ExperimentAnalysis(str(path)).trials} == {"TERMINATED"}
    (name,) = optuna.get_all_study_names(f"sqlite:///{tmp_path}/optuna.db")
    states = {t.state for t in optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path}/optuna.db").trials}
    assert states <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED} and len(states) == 2
    assert "== absa: the answer ==" in r.stdout
