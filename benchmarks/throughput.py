"""``python -m benchmarks.throughput``: training throughput, measured as ratios in one run.

1. The multitask loop (``Trainer.train_steps`` over two tasks drawn by the real sampler: task
   switching between heads, batch iteration, collate, clipping, scheduler) against a
   bare PyTorch loop with the same recipe (forward, backward, clipping, AdamW, LR schedule,
   the run's precision) over the *identical* sequence of (task, batch) pairs, pre-collated,
   on the same model. Goal: ratio >= 0.98.
2. Dynamic padding (each batch to its longest row) against fixed 128-token padding,
   on the first task's rows (SemEval QA_B), both through the bare loop. Goal: >= 2x.

It also reports real (unpadded) tokens per second and, where the device's peak is known
(``benchmarks.peaks`` or ``--peak-tflops``), model FLOPs utilization: 6 x non-embedding
parameters x real tokens trained / seconds / peak (embedding lookups do no matmul; the
scaling-law convention of Kaplan et al. 2020).

Each round runs the contenders' blocks in ABBA order, and both blocks of each half
train on the same batches, so machine-load drift and batch lengths hit both alike.
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from benchmarks import options, strategies
from benchmarks.options import FIXED_LENGTH, benchmark_config
from benchmarks.peaks import model_flops, non_embedding_parameters, peak_tflops
from trainables.batching import TaskBatches, collate, to_device
from trainables.cli import setup_logging
from trainables.loop import Trainer

EPOCH = 0  # the sampler's epoch throughout (the "random" schema's distribution is fixed anyway)
CONTENDERS = ("loop", "bare", "dynamic", "fixed128")
WARMUP_STEPS_PER_TASK = 2  # two batch widths: with --compile, the dynamic-shape graph is built in warm-up
Step = tuple[int, np.ndarray]  # (task index, rows of that task's training split)
Batch = tuple[str, dict[str, torch.Tensor]]  # (task name, collated CPU tensors)


def sync(device: torch.device) -> None:
    """Wait for queued GPU work, so a timer read after it covers that work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# -- the loop's upcoming batches ----------------------------------------------
def iterator_state(trainer: Trainer) -> bytes:
    """The sampler's and the batch iterators' positions, as comparable, restorable bytes."""
    batches = [{**s, "order": s["order"].numpy()} for s in (b.state_dict() for b in trainer.batches)]
    return pickle.dumps((trainer.sampler.state_dict(), batches))


def restore_iterators(trainer: Trainer, state: bytes) -> None:
    sampler, batches = pickle.loads(state)
    trainer.sampler.load_state_dict(sampler)
    for b, s in zip(trainer.batches, batches):
        b.load_state_dict(s)


def peek(trainer: Trainer, n: int) -> tuple[list[Step], bytes]:
    """The next ``n`` steps the loop will train on, and the iterator state after them.

    The trainer is left as it was, so its next ``n`` steps draw exactly these.
    """
    before = iterator_state(trainer)
    steps = []
    for _ in range(n):
        t = trainer.sampler.sample(EPOCH)
        steps.append((t, trainer.batches[t].next()))
    after = iterator_state(trainer)
    restore_iterators(trainer, before)
    return steps, after


def collated(trainer: Trainer, steps: list[Step], fixed_length: int | None = None) -> list[Batch]:
    """The batches as the loop collates them (its padding multiple), pinned on CUDA like the loop's."""
    out = []
    for t, rows in steps:
        name = trainer.names[t]
        batch = collate(
            trainer.data[name].train,
            rows,
            trainer.padding,
            trainer.kinds[name],
            fixed_length,
            multiple=trainer.pad_multiple,
        )
        if trainer.device.type == "cuda":
            batch = {k: v.pin_memory() for k, v in batch.items()}
        out.append((name, batch))
    return out


# -- the contenders -------------------------------------------------------------
def loop_steps(trainer: Trainer, n: int, expected_after: bytes) -> float:
    """``n`` steps of the multitask loop; returns seconds. Checks it drew the peeked batches."""
    trainer.model.train()
    sync(trainer.device)
    started = time.perf_counter()
    trainer.train_steps(EPOCH, n)
    sync(trainer.device)
    seconds = time.perf_counter() - started
    if iterator_state(trainer) != expected_after:
        raise RuntimeError("the loop drew other batches than the bare loop was given")
    return seconds


def bare_steps(trainer: Trainer, batches: list[Batch]) -> float:
    """The same recipe as the loop (forward, backward, clipping, AdamW, LR schedule, autocast and
    loss scaling) over pre-collated batches, on the trainer's model; returns seconds. What the
    loop adds on top is its machinery: task sampling, per-task batch iterators, collate, loss
    bookkeeping and its periodic finite-loss checks."""
    model, optimizer, device, scaler = trainer.model, trainer.optimizer, trainer.device, trainer.scaler
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    sync(device)
    started = time.perf_counter()
    for name, batch in batches:
        batch = to_device(batch, device)
        labels = batch.pop("labels")
        with trainer.precision.autocast():
            logits = trainer.forward(name, **batch)  # (B, C), or (B, T, C) for tagging
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), trainer.config.max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        trainer.scheduler.step()
    sync(device)
    return time.perf_counter() - started


def rows_in(steps: list[Step]) -> int:
    return sum(len(rows) for _, rows in steps)


def tokens_in(trainer: Trainer, steps: list[Step]) -> int:
    """Real (unpadded) tokens of the steps' rows."""
    return sum(int(trainer.data[trainer.names[t]].train.lengths()[rows].sum()) for t, rows in steps)


# -- the benchmark ----------------------------------------------------------------
class PaddingBlocks:
    """Bare-loop blocks on the first task's rows, padded dynamically or to a fixed length. The rows
    come from their own stream, so these blocks leave the loop's batches untouched."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer, self.task = trainer, trainer.names[0]
        self.data = trainer.data[self.task].train
        self.rows = TaskBatches(len(self.data), trainer.config.batch_size, seed=1)

    def draw(self, n: int) -> list[np.ndarray]:
        return [self.rows.next() for _ in range(n)]

    def seconds(self, rows: list[np.ndarray], fixed_length: int | None) -> float:
        t = self.trainer
        kind = t.kinds[self.task]
        batches = [
            (self.task, collate(self.data, r, t.padding, kind, fixed_length, multiple=t.pad_multiple)) for r in rows
        ]
        return bare_steps(t, batches)


def warm_up(trainer: Trainer, steps_per_task: int = WARMUP_STEPS_PER_TASK) -> None:
    """The allocator, kernels and optimizer state, and with ``--compile`` every graph: each task's
    batches through the bare loop (a task the sampler happened not to draw would compile inside a
    timed block), then the loop itself. Rows come from their own streams; the loop's are untouched."""
    for t, name in enumerate(trainer.names):
        rows = TaskBatches(len(trainer.data[name].train), trainer.config.batch_size, seed=2)
        bare_steps(trainer, collated(trainer, [(t, rows.next()) for _ in range(steps_per_task)]))
    plan, after = peek(trainer, steps_per_task)
    loop_steps(trainer, len(plan), after)


@dataclass
class Tally:
    """Seconds, rows and tokens of every round, and each round's ratios."""

    task_steps: dict[str, int]
    seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("loop", "bare", "dynamic", "fixed128"), 0.0)
    )
    loop_rows: int = 0
    loop_tokens: int = 0
    padding_rows: int = 0
    loop_ratios: list[float] = field(default_factory=list)
    padding_ratios: list[float] = field(default_factory=list)


def loop_vs_bare(trainer: Trainer, steps: int, tally: Tally) -> None:
    """B A | A B, each half on the batches the loop draws next."""
    plan1, after1 = peek(trainer, steps)
    bare = bare_steps(trainer, collated(trainer, plan1))
    loop = loop_steps(trainer, steps, after1)
    plan2, after2 = peek(trainer, steps)
    loop += loop_steps(trainer, steps, after2)
    bare += bare_steps(trainer, collated(trainer, plan2))
    tally.loop_ratios.append(bare / loop)  # both trained on the same rows: time ratio = throughput ratio
    tally.seconds["loop"] += loop
    tally.seconds["bare"] += bare
    tally.loop_rows += rows_in(plan1) + rows_in(plan2)
    tally.loop_tokens += tokens_in(trainer, plan1 + plan2)
    for t, _ in plan1 + plan2:
        tally.task_steps[trainer.names[t]] += 1


def dynamic_vs_fixed(padding: PaddingBlocks, steps: int, tally: Tally) -> None:
    """A B | B A, each half on one list of batches."""
    rows1 = padding.draw(steps)
    dynamic = padding.seconds(rows1, None)
    fixed = padding.seconds(rows1, FIXED_LENGTH)
    rows2 = padding.draw(steps)
    fixed += padding.seconds(rows2, FIXED_LENGTH)
    dynamic += padding.seconds(rows2, None)
    tally.padding_ratios.append(fixed / dynamic)
    tally.seconds["dynamic"] += dynamic
    tally.seconds["fixed128"] += fixed
    tally.padding_rows += sum(map(len, rows1 + rows2))


def benchmark(trainer: Trainer, steps: int, padding_steps: int, rounds: int) -> dict[str, Any]:
    """Interleaved ABBA rounds of loop vs bare and dynamic vs fixed padding; medians of per-round ratios."""
    padding = PaddingBlocks(trainer)
    warm_up(trainer)
    warm = padding.draw(1)  # and the fixed-length shapes
    padding.seconds(warm, None)
    padding.seconds(warm, FIXED_LENGTH)
    tally = Tally(dict.fromkeys(trainer.names, 0))
    for _ in range(rounds):
        loop_vs_bare(trainer, steps, tally)
        dynamic_vs_fixed(padding, padding_steps, tally)
    return summarize(trainer, padding.task, tally)


def summarize(trainer: Trainer, padding_task: str, tally: Tally) -> dict[str, Any]:
    lengths = {n: trainer.data[n].train.lengths() for n in trainer.names}
    seconds = tally.seconds
    return {
        "tasks": trainer.names,
        "loop_steps_per_task": tally.task_steps,
        "padding_task": padding_task,
        "tokens_mean": {n: float(v.mean()) for n, v in lengths.items()},
        "tokens_max": {n: int(v.max()) for n, v in lengths.items()},
        "loop_samples_per_s": tally.loop_rows / seconds["loop"],
        "bare_samples_per_s": tally.loop_rows / seconds["bare"],
        "loop_tokens_per_s": tally.loop_tokens / seconds["loop"],
        "bare_tokens_per_s": tally.loop_tokens / seconds["bare"],
        "dynamic_samples_per_s": tally.padding_rows / seconds["dynamic"],
        "fixed128_samples_per_s": tally.padding_rows / seconds["fixed128"],
        "loop_vs_bare_ratio": float(np.median(tally.loop_ratios)),
        "loop_vs_bare_per_round": tally.loop_ratios,
        "dynamic_padding_speedup": float(np.median(tally.padding_ratios)),
        "dynamic_padding_per_round": tally.padding_ratios,
    }


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)


def flops(trainer: Trainer, results: dict[str, Any], peak: float | None) -> dict[str, Any]:
    """Model TFLOP/s and MFU of both contenders: 6 x non-embedding parameters x real tokens."""
    n = non_embedding_parameters(trainer.model)
    per_s = {k: model_flops(n, 1) * results[f"{k}_tokens_per_s"] for k in ("loop", "bare")}
    return {
        "parameters": sum(p.numel() for p in trainer.model.parameters()),
        "non_embedding_parameters": n,
        "flops_per_token": "6 x non_embedding_parameters (embedding lookups do no matmul; Kaplan et al. 2020)",
        "peak_tflops": peak,
        "loop_model_tflops_per_s": per_s["loop"] / 1e12,
        "loop_mfu": per_s["loop"] / (peak * 1e12) if peak else None,
        "bare_mfu": per_s["bare"] / (peak * 1e12) if peak else None,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = options.parser("python -m benchmarks.throughput", __doc__, devices=("auto", "cpu", "cuda"))
    p.add_argument("--steps", type=int, default=8, help="training steps per loop/bare block")
    p.add_argument("--padding-steps", type=int, default=2, help="training steps per dynamic/fixed-128 block")
    p.add_argument("--rounds", type=int, default=6, help="ABBA rounds; the summary takes medians over them")
    p.add_argument("--compile", action="store_true", help="torch.compile the encoder (loop and bare alike)")
    p.add_argument("--no-prefetch", action="store_true", help="collate in the training thread")
    p.add_argument(
        "--strategies",
        action="store_true",
        help="instead: the cost per step of each adaptive strategy of absa-plus (bandit schema, uncertainty weights, "
        "every task per step with a sum or PCGrad, layer-wise lr decay, gradual unfreezing) against the plain loop "
        "(--steps, --rounds)",
    )
    p.add_argument(
        "--peak-tflops",
        type=float,
        help="the device's peak TFLOPS at --precision, for MFU (default: benchmarks.peaks' table)",
    )
    return options.parse(p, argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    setup_logging()
    model, label = options.encoder(args)
    config = benchmark_config(args, model, compile=args.compile, prefetch=not args.no_prefetch)
    if args.strategies:
        return strategies_main(args, config, label)
    trainer = Trainer(config)
    load_before = os.getloadavg()[0]
    results = benchmark(trainer, args.steps, args.padding_steps, args.rounds)
    load_after = os.getloadavg()[0]  # this benchmark alone adds about its thread count

    name = device_name(trainer.device)
    peak = args.peak_tflops or (peak_tflops(name, trainer.precision.name) if trainer.device.type == "cuda" else None)
    summary = {
        **options.header(),
        "device": name,
        "model": label,
        "precision": trainer.precision.name,
        "pad_to_multiple_of": trainer.pad_multiple,
        "compile": args.compile,
        "prefetch": not args.no_prefetch,
        "batch_size": args.batch_size,
        "steps_per_block": args.steps,
        "padding_steps_per_block": args.padding_steps,
        "rounds": args.rounds,
        "load_average_1min": {"start": load_before, "end": load_after},
        **results,
        **flops(trainer, results, peak),
    }
    options.report(summary, args.out)
    return summary


def strategies_main(args: argparse.Namespace, config, label: str) -> dict[str, Any]:
    """``--strategies``: :mod:`benchmarks.strategies` on the run's config, with the usual header."""
    load_before = os.getloadavg()[0]
    results = strategies.benchmark(config, args.steps, args.rounds)
    summary = {
        **options.header(),
        "device": str(config.device),
        "model": label,
        "precision": config.precision,
        "batch_size": args.batch_size,
        "tasks": list(config.tasks),
        "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
        **results,
    }
    options.report(summary, args.out)
    return summary


if __name__ == "__main__":
    main()
