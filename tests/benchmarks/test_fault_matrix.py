"""CI's small version of the fault matrix: each fault through the in-process backend at 64 slots, against the
study not interrupted (``benchmarks.fault_matrix``; the benchmark runs 100 studies a fault)."""

import random

import pytest

from benchmarks.fault_matrix import FAULTS, injected, outcome, study


@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_loses_no_trial_and_changes_no_answer(fault):
    whole = outcome(study("late_bloomer", 0, 64), "late_bloomer", 0)
    faults = injected(fault, random.Random(f"ci-{fault}"), whole["results"])
    got = outcome(study("late_bloomer", 0, 64, **faults), "late_bloomer", 0)
    assert got["lost"] == 0 and (got["selected"], got["verdict"]) == (whole["selected"], whole["verdict"]), faults
    struck = got["retried"] > 0 if fault in ("retry", "node") else got["seed_epochs"] > whole["seed_epochs"]
    assert struck, (faults, got)  # the epochs in flight at the interrupt were trained again
