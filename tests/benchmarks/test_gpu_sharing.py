"""The sharing benchmark's process handling, on the CPU: a trial that dies or hangs fails the run
instead of leaving the parent and the other trials waiting forever."""

import multiprocessing as mp
import time

import pytest

from benchmarks.gpu_sharing import parse_args, run_trials


# targets of spawned processes: module level, so the children can import them
def reporting(index, barrier, results):
    barrier.wait(60)
    results.put({"trial": index})


def first_dies(index, barrier, results):
    if index == 0:
        raise RuntimeError("CUDA out of memory (simulated)")
    reporting(index, barrier, results)


def hangs(index, barrier, results):
    time.sleep(600)


def test_every_trial_reports_after_the_barrier():
    reports = run_trials(reporting, [(0,), (1,)], timeout=120)
    assert sorted(r["trial"] for r in reports) == [0, 1]
    assert not mp.active_children()


def test_a_trial_that_dies_fails_the_run_and_frees_the_others():
    with pytest.raises(RuntimeError, match=r"^trial 0 exited with code 1 before reporting"):
        run_trials(first_dies, [(0,), (1,), (2,)], timeout=120)  # 1 and 2 were waiting at the barrier
    assert not mp.active_children()


def test_a_run_past_its_timeout_fails_and_stops_its_trials():
    with pytest.raises(TimeoutError, match=r"^2 of 2 trials had not reported in time"):
        run_trials(hangs, [(0,), (1,)], timeout=1)
    assert not mp.active_children()


def test_flags_are_the_shared_ones_plus_its_own():
    args = parse_args(["--device", "cpu", "--trials-per-gpu", "1,2", "--random-init", "bert-base"])
    assert (args.counts, args.device, args.precision, args.tasks, args.batch_size) == (
        [1, 2],
        "cpu",
        "auto",
        "semeval,sst2",
        24,
    )
    with pytest.raises(SystemExit):
        parse_args(["--device", "cpu", "--trials-per-gpu", "0"])


@pytest.mark.slow  # three spawned trials, each importing torch and building a trainer
@pytest.mark.extended  # 40 s of CI's 12 minutes for a GPU benchmark's CPU smoke: make test-all (and gpu_check on a GPU)
def test_a_cpu_smoke_run_reports_the_precision_trained(tiny_bert, data_dir):
    from benchmarks.gpu_sharing import main

    summary = main(["--device", "cpu", "--model", str(tiny_bert), "--trials-per-gpu", "1,2", "--steps", "2"])
    assert summary["precision"] == "fp32"  # resolved, not "auto"
    assert [r["trials"] for r in summary["runs"]] == [1, 2]
    assert all(r["samples_per_s"] > 0 and r["peak_reserved_gib_per_trial"] is None for r in summary["runs"])
