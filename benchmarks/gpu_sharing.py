"""``python -m benchmarks.gpu_sharing``: aggregate training throughput of N trials sharing one device.

For each N in ``--trials-per-gpu``, N processes (one per trial, as Ray Tune runs fractional-GPU
trials) each build a :class:`Trainer` on the same device, warm up, wait for one another at a
barrier, then train ``--steps`` steps of the real loop (two tasks, the uniform sampler). The
aggregate is all processes' rows over the wall time from the first start to the last finish;
it says which ``--gpus-per-trial`` fraction keeps a GPU busiest. ``--device cpu`` runs the same
thing as a smoke check (each process gets cores / N threads).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import platform
import time
from typing import Any

import torch

from benchmarks.random_encoder import SHAPES, describe, save_random_encoder
from benchmarks.throughput import benchmark_config, loop_steps, peek, rows_in, sync, tokens_in
from trainables.batching import default_cache_dir
from trainables.cli import setup_logging, write_json
from trainables.config import DEFAULT_MODEL, PRECISIONS, TrainConfig
from trainables.loop import Trainer, prepare_data
from trainables.model import load_tokenizer

WARMUP_STEPS = 3


def trial(config: TrainConfig, steps: int, threads: int, barrier: Any, results: Any) -> None:
    """One process: build, warm up, wait for the others, train ``steps`` steps, report."""
    torch.set_num_threads(threads)
    trainer = Trainer(config)
    plan, after = peek(trainer, WARMUP_STEPS)
    loop_steps(trainer, len(plan), after)
    plan, after = peek(trainer, steps)
    barrier.wait()
    started = time.time()
    loop_steps(trainer, steps, after)
    sync(trainer.device)
    finished = time.time()
    memory = torch.cuda.max_memory_allocated(trainer.device) / 2**30 if trainer.device.type == "cuda" else None
    results.put(
        {
            "rows": rows_in(plan),
            "tokens": tokens_in(trainer, plan),
            "started": started,
            "finished": finished,
            "peak_memory_gib": memory,
        }
    )


def share(args: argparse.Namespace, model: str, n: int) -> dict[str, Any]:
    """N concurrent trials on the device; their aggregate and per-trial throughput."""
    context = mp.get_context("spawn")  # CUDA cannot be used in forked children
    barrier, results = context.Barrier(n), context.Queue()
    threads = max(1, (os.cpu_count() or 1) // n)
    procs = [
        context.Process(target=trial, args=(benchmark_config(args, model, seed), args.steps, threads, barrier, results))
        for seed in range(n)
    ]
    for p in procs:
        p.start()
    reports = [results.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a trial process exited with code {p.exitcode}")
    wall = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
    rows, tokens = sum(r["rows"] for r in reports), sum(r["tokens"] for r in reports)
    memory = [r["peak_memory_gib"] for r in reports if r["peak_memory_gib"] is not None]
    return {
        "trials": n,
        "threads_per_trial": threads,
        "wall_seconds": wall,
        "samples_per_s": rows / wall,
        "tokens_per_s": tokens / wall,
        "per_trial_samples_per_s": [r["rows"] / (r["finished"] - r["started"]) for r in reports],
        "peak_memory_gib_per_trial": max(memory) if memory else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu_sharing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", default=DEFAULT_MODEL, help="any AutoModel name or local path")
    p.add_argument(
        "--random-init",
        choices=sorted(SHAPES),
        metavar="SHAPE",
        help="instead of --model, a randomly initialised encoder of this shape",
    )
    p.add_argument("--trials-per-gpu", default="1,2,4", help="comma-separated process counts to compare")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--precision", choices=PRECISIONS, default="auto")
    p.add_argument("--tasks", default="semeval,sst2")
    p.add_argument("--steps", type=int, default=100, help="timed training steps per trial")
    p.add_argument("--batch-size", type=int, default=24)
    p.add_argument("--data-dir")
    p.add_argument("--out", help="also write the JSON summary here")
    args = p.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: no CUDA device is visible to torch (--device cpu for a smoke check)")
    counts = [int(x) for x in args.trials_per_gpu.split(",") if x]
    if not counts or min(counts) < 1:
        p.error(f"--trials-per-gpu {args.trials_per_gpu!r}: expected positive counts, e.g. 1,2,4")
    setup_logging()

    model, label = args.model, args.model
    if args.random_init:
        model = str(save_random_encoder(args.random_init, default_cache_dir() / "random-encoders"))
        label = describe(args.random_init)
    config = benchmark_config(args, model)
    prepare_data(config, load_tokenizer(config.encoder))  # fill the token cache once, not N times at once

    runs = [share(args, model, n) for n in counts]
    summary = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}",
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "model": label,
        "precision": args.precision,
        "batch_size": args.batch_size,
        "steps": args.steps,
        "runs": runs,
        "aggregate_vs_first": [r["samples_per_s"] / runs[0]["samples_per_s"] for r in runs],
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        write_json(args.out, summary)


if __name__ == "__main__":
    main()
