"""Cohort halving through Ray (PAUSE, resume from the checkpoint, ``stop_trial`` of a paused trial) takes the
decisions the simulator backend takes."""

import pytest
from ray_study import backend_trials, ray_trials

from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig


@pytest.mark.slow
def test_the_backend_makes_the_ray_studys_halving_decisions(tmp_path):
    # 7 cells (SST-2 as the only candidate: the baseline + 6 schemas), 1 slot: Tune's order is deterministic
    flags = ["--search", "cells-halving", "--auxiliary", "sst2", "--trials", "7", "--seeds", "1"]
    flags += ["--epochs", "3", "--max-concurrent", "1", "--search-seed", "0", "--reduction-factor", "3"]
    ray = ray_trials(tmp_path, *flags)
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
    )
    ours = backend_trials(simulate(cfg, load_truth(path)))
    assert ours == ray
    assert {"completed", "pruned"} <= {r[2] for r in ours}
