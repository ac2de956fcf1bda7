"""The simulator backend against the real Ray path: one slot, the same truth and search seed, the same
trials in the same order with the same stop/complete decisions and the same Optuna record."""

import optuna
import pytest
from ray_study import backend_trials, ray_trials

from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig

# 8 trials of 2 epochs at 1 seed: ASHA (grace 1, reduction 2) completes some and stops others at
# epoch 1 (t05-t07 with search seed 0); one slot, so Tune's order is deterministic
FLAGS = ["--trials", "8", "--seeds", "1", "--epochs", "2", "--max-concurrent", "1", "--search-seed", "0"]


def optuna_record(study: optuna.Study) -> list[tuple]:
    return [(t.number, t.params, t.state, t.intermediate_values, t.value) for t in study.trials]


@pytest.mark.slow
def test_the_backend_makes_the_ray_studys_trials_and_decisions(tmp_path):
    ray = ray_trials(tmp_path, *FLAGS)
    (name,) = optuna.get_all_study_names(f"sqlite:///{tmp_path}/optuna.db")
    ray_optuna = optuna_record(optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path}/optuna.db"))

    path = resolve_truth("three_better")
    cfg = SearchConfig("absa", preset="full", simulate=path, trials=8, seeds=1, epochs=2, max_concurrent=1)
    study = simulate(cfg, load_truth(path))
    ours = backend_trials(study)

    assert ours == ray
    assert {"completed", "pruned"} <= {r[2] for r in ours}  # both decisions were taken
    assert optuna_record(study.searcher._ot_study) == ray_optuna
