"""What a Ray study and the simulator backend each made, in the same shape, for the tests that check
the backend against Ray trial by trial."""

import subprocess
import sys
from pathlib import Path

import mlflow
from conftest import study_env, study_stores

from search.simulation.study import SimulatedStudy
from search.tracking import runs
from search.tracking.trial_record import TrialRecord


def ray_trials(tmp: Path, *flags: str) -> list[tuple]:
    """``search.run absa --simulate three_better *flags`` through Ray (no finalize, no report), stores
    in ``tmp``: each trial's (label, canonical key, status, epochs, objective), in trial order."""
    run = [sys.executable, "-m", "search.run", "absa", "--simulate", "three_better", *flags, "--no-finalize"]
    r = subprocess.run(
        [*run, "--no-report", *study_stores(tmp)], cwd=tmp, env=study_env(), capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    experiment = client.get_experiment_by_name("absa")
    (parent,) = [x for x in client.search_runs([experiment.experiment_id]) if x.data.tags.get("kind") == "study"]
    table = sorted(runs.trial_table(client, experiment.experiment_id, parent), key=lambda r: r.number)
    return [(r.label, r.key, r.status, r.epochs, r.objective) for r in table]


def backend_trials(study: SimulatedStudy) -> list[tuple]:
    """The same for a study the backend ran (``max_epochs``: the study's epochs)."""
    rows = [TrialRecord.of_ended(t, study.plan.invocation.objective, study.plan.base.epochs) for t in study.trials]
    return [(r.label, r.key, r.status, r.epochs, r.objective) for r in rows]
