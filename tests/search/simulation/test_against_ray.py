"""The simulator backend against the real Ray path: one slot, the same truth and search seed, the same
trials in the same order with the same stop/complete decisions and the same Optuna record."""

import subprocess
import sys

import mlflow
import optuna
import pytest
from conftest import study_env, study_stores

from search.simulation import simulate
from search.simulation.selection import trial_row
from search.study.config import SearchConfig
from search.tracking import runs
from trainables.simulated import load_truth, resolve_truth

# 8 trials of 2 epochs at 1 seed: ASHA (grace 1, reduction 2) completes some and stops others at
# epoch 1 (t05-t07 with search seed 0); one slot, so Tune's order is deterministic
FLAGS = ["--trials", "8", "--seeds", "1", "--epochs", "2", "--max-concurrent", "1", "--search-seed", "0"]


def optuna_record(study: optuna.Study) -> list[tuple]:
    return [(t.number, t.params, t.state, t.intermediate_values, t.value) for t in study.trials]


@pytest.mark.slow
def test_the_backend_makes_the_ray_studys_trials_and_decisions(tmp_path):
    run = [sys.executable, "-m", "search.run", "absa", "--simulate", "three_better", *FLAGS, "--no-finalize"]
    r = subprocess.run(
        [*run, "--no-report", *study_stores(tmp_path)],
        cwd=tmp_path,
        env=study_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("absa")
    (parent,) = [x for x in client.search_runs([experiment.experiment_id]) if x.data.tags.get("kind") == "study"]
    table = runs.trial_table(client, experiment.experiment_id, parent).sort_values("trial")
    ray_trials = [(r.label, r.canonical_key, r.status, r.epochs, r.objective) for r in table.itertuples()]
    (name,) = optuna.get_all_study_names(f"sqlite:///{tmp_path}/optuna.db")
    ray_optuna = optuna_record(optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path}/optuna.db"))

    path = resolve_truth("three_better")
    cfg = SearchConfig("absa", preset="full", simulate=path, trials=8, seeds=1, epochs=2, max_concurrent=1)
    study = simulate(cfg, load_truth(path))
    rows = [trial_row(t, study.prep.objective, 2) for t in study.trials]
    ours = [(r["label"], t.config["key"], r["status"], t.epoch, r["objective"]) for r, t in zip(rows, study.trials)]

    assert ours == ray_trials
    assert {"completed", "pruned"} <= {r[2] for r in ours}  # both decisions were taken
    assert optuna_record(study.searcher._ot_study) == ray_optuna
