"""``python -m benchmarks.gpu_sharing``: aggregate training throughput of N trials sharing one device.

For each N in ``--trials-per-gpu``, N processes (one per trial, as Ray Tune runs fractional-GPU
trials) each build a :class:`Trainer` on the same device, warm up on every task, wait for one
another at a barrier, then train ``--steps`` steps of the real loop (two tasks, the uniform
sampler). The aggregate is all processes' rows over the wall time from the first start to the
last finish; it says which ``--gpus-per-trial`` fraction keeps a GPU busiest. A trial that dies
(a CUDA out-of-memory error at 4+ trials per GPU) or a run past ``--timeout`` stops the others
and fails the benchmark. ``--device cpu`` runs the same thing as a smoke check (each process
gets cores / N threads).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from benchmarks import options
from benchmarks.options import benchmark_config
from benchmarks.throughput import loop_steps, peek, rows_in, sync, tokens_in, warm_up
from trainables.cli import setup_logging
from trainables.config import TrainConfig
from trainables.loop import Trainer, prepare_data
from trainables.model import load_tokenizer

POLL_S = 1.0  # how often the parent looks for a trial that died while it waits for reports
STOP_S = 10.0  # how long a trial has to leave after the barrier is broken, before it is terminated


def trial(config: TrainConfig, steps: int, threads: int, timeout: float, barrier: Any, results: Any) -> None:
    """One process: build, warm up, wait for the others, train ``steps`` steps, report."""
    torch.set_num_threads(threads)
    trainer = Trainer(config)
    warm_up(trainer)
    plan, after = peek(trainer, steps)
    barrier.wait(timeout)  # BrokenBarrierError when another trial died or the parent gave up
    started = time.time()
    loop_steps(trainer, steps, after)
    sync(trainer.device)
    finished = time.time()
    cuda = trainer.device.type == "cuda"
    results.put(
        {
            "rows": rows_in(plan),
            "tokens": tokens_in(trainer, plan),
            "started": started,
            "finished": finished,
            "precision": trainer.precision.name,
            # reserved, not allocated: the caching allocator's footprint is what N trials must fit in
            "peak_reserved_gib": torch.cuda.max_memory_reserved(trainer.device) / 2**30 if cuda else None,
            "peak_allocated_gib": torch.cuda.max_memory_allocated(trainer.device) / 2**30 if cuda else None,
        }
    )


def run_trials(target: Callable[..., None], trial_args: Sequence[tuple], timeout: float) -> list[dict[str, Any]]:
    """One spawned process per ``trial_args``, calling ``target(*args, barrier, results)``; their reports.

    Raises RuntimeError when a trial exits without reporting, TimeoutError past ``timeout``
    seconds; either way no process is left behind, and none waits at the barrier forever.
    """
    context = mp.get_context("spawn")  # CUDA cannot be used in forked children
    barrier, results = context.Barrier(len(trial_args)), context.Queue()
    procs = [context.Process(target=target, args=(*a, barrier, results)) for a in trial_args]
    for p in procs:
        p.start()
    try:
        reports = collect(procs, results, time.monotonic() + timeout)
        for i, p in enumerate(procs):
            p.join(STOP_S)
            if p.exitcode != 0:
                raise RuntimeError(f"trial {i} reported, then exited with code {p.exitcode}")
        return reports
    finally:
        barrier.abort()  # frees any trial still waiting at the barrier
        stop(procs)


def collect(procs: Sequence[Any], results: Any, deadline: float) -> list[dict[str, Any]]:
    """One report per process, checking between waits that none has died and time is left."""
    reports: list[dict[str, Any]] = []
    while len(reports) < len(procs):
        try:
            reports.append(results.get(timeout=POLL_S))
        except queue.Empty:
            check(procs, results, len(procs) - len(reports), deadline)
    return reports


def check(procs: Sequence[Any], results: Any, missing: int, deadline: float) -> None:
    """Raise if a trial died, all left with ``missing`` reports unsent, or the time is up."""
    for i, p in enumerate(procs):
        if p.exitcode not in (None, 0):
            raise RuntimeError(f"trial {i} exited with code {p.exitcode} before reporting (its error is above)")
    if all(p.exitcode is not None for p in procs) and results.empty():
        raise RuntimeError(f"{missing} trials exited without reporting")
    if time.monotonic() > deadline:
        raise TimeoutError(f"{missing} of {len(procs)} trials had not reported in time")


def stop(procs: Sequence[Any]) -> None:
    """Let the trials leave within STOP_S, then terminate (and at last kill) the rest."""
    deadline = time.monotonic() + STOP_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(STOP_S)
        if p.is_alive():
            p.kill()
            p.join()


def share(args: argparse.Namespace, model: str, n: int) -> dict[str, Any]:
    """N concurrent trials on the device; their aggregate and per-trial throughput."""
    threads = max(1, (os.cpu_count() or 1) // n)
    trial_args = [(benchmark_config(args, model, seed), args.steps, threads, args.timeout) for seed in range(n)]
    reports = run_trials(trial, trial_args, args.timeout)
    wall = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
    rows, tokens = sum(r["rows"] for r in reports), sum(r["tokens"] for r in reports)

    def peak(key: str) -> float | None:
        memory = [r[key] for r in reports if r[key] is not None]
        return max(memory) if memory else None

    return {
        "trials": n,
        "threads_per_trial": threads,
        "precision": reports[0]["precision"],
        "wall_seconds": wall,
        "samples_per_s": rows / wall,
        "tokens_per_s": tokens / wall,
        "per_trial_samples_per_s": [r["rows"] / (r["finished"] - r["started"]) for r in reports],
        "peak_reserved_gib_per_trial": peak("peak_reserved_gib"),
        "peak_allocated_gib_per_trial": peak("peak_allocated_gib"),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = options.parser("python -m benchmarks.gpu_sharing", __doc__, devices=("cuda", "cpu"))
    p.add_argument("--trials-per-gpu", default="1,2,4", help="comma-separated process counts to compare")
    p.add_argument("--steps", type=int, default=100, help="timed training steps per trial")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds each N may take, start-up included")
    args = options.parse(p, argv)
    args.counts = [int(x) for x in args.trials_per_gpu.split(",") if x]
    if not args.counts or min(args.counts) < 1:
        p.error(f"--trials-per-gpu {args.trials_per_gpu!r}: expected positive counts, e.g. 1,2,4")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    setup_logging()
    model, label = options.encoder(args)
    config = benchmark_config(args, model)
    prepare_data(config, load_tokenizer(config.encoder))  # fill the token cache once, not N times at once

    runs = [share(args, model, n) for n in args.counts]
    summary = {
        **options.header(threads=False),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "model": label,
        "precision": runs[0]["precision"],  # the one trained: "auto" resolved on the device
        "batch_size": args.batch_size,
        "steps": args.steps,
        "runs": runs,
        "aggregate_vs_first": [r["samples_per_s"] / runs[0]["samples_per_s"] for r in runs],
    }
    options.report(summary, args.out)
    return summary


if __name__ == "__main__":
    main()
