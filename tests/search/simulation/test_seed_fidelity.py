"""Seeds as a fidelity in the simulator backend: the same trials, seed counts and decisions as a Ray
study with ``--first-rung-seeds``, and the compute each trial spent (catch-up included)."""

import subprocess
import sys

import mlflow
import pytest
from conftest import study_env, study_stores

from search.simulation import simulate
from search.simulation.selection import trial_row
from search.study.config import SearchConfig
from search.tracking import runs
from trainables.simulated import load_truth, resolve_truth

# 8 trials of 2 epochs at 3 seeds, 1 on the first rung (grace 1, reduction 2); one slot: Tune's order
FLAGS = ["--trials", "8", "--seeds", "3", "--epochs", "2", "--max-concurrent", "1", "--first-rung-seeds", "1"]


def simulated():
    path = resolve_truth("three_better")
    cfg = SearchConfig(
        "absa", preset="full", simulate=path, trials=8, seeds=3, epochs=2, max_concurrent=1, first_rung_seeds=1
    )
    return simulate(cfg, load_truth(path))


def test_the_backend_follows_the_seed_schedule_and_charges_the_catch_up():
    study = simulated()
    for t in study.trials:
        full = t.config.get("baseline") or t.epoch == 2
        assert t.seed_epochs == (3 * t.epoch if full else 1), (t.config["label"], t.epoch, t.seed_epochs)
        assert ("semeval/dev/acc_4way/seed2" in t.last_result) == bool(full)
    assert {t.epoch for t in study.trials} == {1, 2}


@pytest.mark.slow
def test_the_backend_makes_the_ray_studys_trials_and_decisions_with_a_seed_schedule(tmp_path):
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

    study = simulated()
    rows = [trial_row(t, study.prep.objective, 2) for t in study.trials]
    ours = [(r["label"], t.config["key"], r["status"], t.epoch, r["objective"]) for r, t in zip(rows, study.trials)]
    assert ours == ray_trials
    assert {"completed", "pruned"} <= {r[2] for r in ours}


def test_the_benchmarks_fidelity_strategy_runs_the_schedule():
    from search.simulation.strategies import chosen

    fixed, fidelity = chosen("tpe-k3-rf3")[0], chosen("tpe-k3-rf3-fidelity")[0]
    path = resolve_truth("three_better")
    for strategy, first_rung in ((fixed, 3), (fidelity, 1)):
        cfg = strategy.config(path, 0, 4)
        study = simulate(cfg, load_truth(path), strategy.scheduler, strategy.seed_count)  # as search_quality calls it
        stopped = [t for t in study.trials if t.epoch == 1]
        assert stopped and {t.seed_epochs for t in stopped} == {first_rung}
        assert (study.trials[0].config["baseline"], study.trials[0].seed_epochs) == (True, 12)
