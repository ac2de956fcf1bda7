"""Seeds as a fidelity in the simulator backend: the same trials, seed counts and decisions as a Ray
study with ``--first-rung-seeds``, and the compute each trial spent (catch-up included)."""

import pytest
from ray_study import backend_trials, ray_trials

from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig

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
    ray = ray_trials(tmp_path, *FLAGS)
    ours = backend_trials(simulated())
    assert ours == ray
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
