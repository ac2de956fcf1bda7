"""``python -m benchmarks.throughput``: training throughput, measured as ratios in one run.

1. The multitask loop (``Trainer.step`` over two tasks drawn by the real sampler: task
   switching between heads, batch iteration, collate, clipping, scheduler) against a
   bare PyTorch loop with the same recipe (forward, backward, clipping, AdamW, LR schedule,
   the run's precision) over the *identical* sequence of (task, batch) pairs, pre-collated,
   on the same model. Goal: ratio >= 0.98.
2. Dynamic padding (each batch to its longest row) against fixed 128-token padding,
   on the first task's rows (SemEval QA_B), both through the bare loop. Goal: >= 2x.

It also reports real (unpadded) tokens per second and, where the device's peak is known
(``benchmarks.peaks`` or ``--peak-tflops``), model FLOPs utilization: 6 x parameters x real
tokens trained / seconds / peak.

Each round runs the contenders' blocks in ABBA order, and both blocks of each half
train on the same batches, so machine-load drift and batch lengths hit both alike.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pickle
import platform
import time
from typing import Any

import numpy as np
import torch

from benchmarks.peaks import model_flops, peak_tflops
from benchmarks.random_encoder import SHAPES, describe, save_random_encoder
from trainables.batching import TaskBatches, collate, default_cache_dir, to_device
from trainables.cli import setup_logging
from trainables.config import DEFAULT_MODEL, PRECISIONS, EncoderConfig, SamplingConfig, TrainConfig
from trainables.data import resolve_data_dir
from trainables.loop import Trainer

EPOCH = 0  # the sampler's epoch throughout (the "random" schema's distribution is fixed anyway)
FIXED_LENGTH = 128
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
def benchmark(trainer: Trainer, steps: int, padding_steps: int, rounds: int) -> dict:
    """Interleaved ABBA rounds of loop vs bare and dynamic vs fixed padding; medians of per-round ratios."""
    padding_task = trainer.names[0]
    padding_data = trainer.data[padding_task].train
    # its own row stream, so the padding blocks leave the loop's batches untouched
    padding_batches = TaskBatches(len(padding_data), trainer.config.batch_size, seed=1)

    def padding_blocks(fixed_length: int | None, rows: list[np.ndarray]) -> float:
        batches = [
            (
                padding_task,
                collate(
                    padding_data,
                    r,
                    trainer.padding,
                    trainer.kinds[padding_task],
                    fixed_length,
                    multiple=trainer.pad_multiple,
                ),
            )
            for r in rows
        ]
        return bare_steps(trainer, batches)

    # warm-up: allocator, kernels, the encoder's optimizer state, the fixed-length shapes
    plan, after = peek(trainer, 2)
    bare_steps(trainer, collated(trainer, plan))
    loop_steps(trainer, len(plan), after)
    warm = [padding_batches.next()]
    padding_blocks(None, warm)
    padding_blocks(FIXED_LENGTH, warm)

    seconds = {"loop": 0.0, "bare": 0.0, "dynamic": 0.0, "fixed128": 0.0}
    rows = {"loop": 0, "padding": 0}
    tokens = 0
    task_steps = {n: 0 for n in trainer.names}
    loop_ratios, padding_ratios = [], []
    for _ in range(rounds):
        # loop vs bare: B A | A B, each half on the batches the loop draws next
        plan1, after1 = peek(trainer, steps)
        bare = bare_steps(trainer, collated(trainer, plan1))
        loop = loop_steps(trainer, steps, after1)
        plan2, after2 = peek(trainer, steps)
        loop += loop_steps(trainer, steps, after2)
        bare += bare_steps(trainer, collated(trainer, plan2))
        # dynamic vs fixed padding: A B | B A, each half on one list of batches
        rows1 = [padding_batches.next() for _ in range(padding_steps)]
        dynamic = padding_blocks(None, rows1)
        fixed = padding_blocks(FIXED_LENGTH, rows1)
        rows2 = [padding_batches.next() for _ in range(padding_steps)]
        fixed += padding_blocks(FIXED_LENGTH, rows2)
        dynamic += padding_blocks(None, rows2)

        # both contenders of a pair trained on the same rows, so time ratios are throughput ratios
        loop_ratios.append(bare / loop)
        padding_ratios.append(fixed / dynamic)
        for key, value in (("loop", loop), ("bare", bare), ("dynamic", dynamic), ("fixed128", fixed)):
            seconds[key] += value
        rows["loop"] += rows_in(plan1) + rows_in(plan2)
        tokens += tokens_in(trainer, plan1 + plan2)
        rows["padding"] += sum(map(len, rows1 + rows2))
        for t, _ in plan1 + plan2:
            task_steps[trainer.names[t]] += 1

    lengths = {n: trainer.data[n].train.lengths() for n in trainer.names}
    return {
        "tasks": trainer.names,
        "loop_steps_per_task": task_steps,
        "padding_task": padding_task,
        "tokens_mean": {n: float(v.mean()) for n, v in lengths.items()},
        "tokens_max": {n: int(v.max()) for n, v in lengths.items()},
        "loop_samples_per_s": rows["loop"] / seconds["loop"],
        "bare_samples_per_s": rows["loop"] / seconds["bare"],
        "loop_tokens_per_s": tokens / seconds["loop"],
        "bare_tokens_per_s": tokens / seconds["bare"],
        "dynamic_samples_per_s": rows["padding"] / seconds["dynamic"],
        "fixed128_samples_per_s": rows["padding"] / seconds["fixed128"],
        "loop_vs_bare_ratio": float(np.median(loop_ratios)),
        "loop_vs_bare_per_round": loop_ratios,
        "dynamic_padding_speedup": float(np.median(padding_ratios)),
        "dynamic_padding_per_round": padding_ratios,
    }


def benchmark_config(args: argparse.Namespace, model: str, seed: int = 0, **options: Any) -> TrainConfig:
    """What both benchmarks train: ``--tasks`` sampled at random, batches of ``--batch-size``
    at up to FIXED_LENGTH tokens, with ``--device`` and ``--precision``, plus ``options``."""
    tasks = tuple(t for t in args.tasks.split(",") if t)
    return TrainConfig(
        tasks=tasks,
        primary=tasks[0],
        sampling=SamplingConfig(schema="random"),
        encoder=EncoderConfig(model=model, max_seq_length=FIXED_LENGTH),
        batch_size=args.batch_size,
        max_train_examples=2400,
        max_eval_examples=25,
        data_dir=str(resolve_data_dir(args.data_dir)),
        evaluate_test=False,
        device=args.device,
        seed=seed,
        precision=args.precision,
        lr=1e-5,
        epochs=100,  # a long schedule: no warm-up cliff or decay to zero inside the benchmark
        **options,
    )


def main() -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.throughput",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", default=DEFAULT_MODEL, help="any AutoModel name or local path")
    p.add_argument(
        "--random-init",
        choices=sorted(SHAPES),
        metavar="SHAPE",
        help="instead of --model's weights, a randomly initialised encoder of this shape ("
        + "; ".join(describe(s) for s in SHAPES)
        + "); throughput depends on the architecture, not the weights",
    )
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto: CUDA when available")
    p.add_argument(
        "--tasks",
        default="semeval,sst2",
        help="tasks of the multitask loop, sampled uniformly; the first also runs the padding comparison",
    )
    p.add_argument("--steps", type=int, default=8, help="training steps per loop/bare block")
    p.add_argument("--padding-steps", type=int, default=2, help="training steps per dynamic/fixed-128 block")
    p.add_argument("--rounds", type=int, default=6, help="ABBA rounds; the summary takes medians over them")
    p.add_argument("--batch-size", type=int, default=24)
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="auto: bf16 on CUDA with native bf16, fp16 on older CUDA, fp32 on CPU",
    )
    p.add_argument("--compile", action="store_true", help="torch.compile the forward (loop and bare alike)")
    p.add_argument("--no-prefetch", action="store_true", help="collate in the training thread")
    p.add_argument(
        "--peak-tflops",
        type=float,
        help="the device's peak TFLOPS at --precision, for MFU (default: benchmarks.peaks' table)",
    )
    p.add_argument("--data-dir")
    p.add_argument("--out", help="also write the JSON summary here")
    args = p.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: no CUDA device is visible to torch")
    setup_logging()

    model, label = args.model, args.model
    if args.random_init:
        model, label = (
            str(save_random_encoder(args.random_init, default_cache_dir() / "random-encoders")),
            describe(args.random_init),
        )
    config = benchmark_config(args, model, compile=args.compile, prefetch=not args.no_prefetch)
    trainer = Trainer(config)
    load_before = os.getloadavg()[0]
    results = benchmark(trainer, args.steps, args.padding_steps, args.rounds)
    load_after = os.getloadavg()[0]  # this benchmark alone adds about its thread count

    device = trainer.device
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)
    parameters = sum(p.numel() for p in trainer.model.parameters())
    peak = args.peak_tflops or (peak_tflops(device_name, trainer.precision.name) if device.type == "cuda" else None)
    flops = {
        "parameters": parameters,
        "peak_tflops": peak,
        "loop_model_tflops_per_s": model_flops(parameters, 1) * results["loop_tokens_per_s"] / 1e12,
        "loop_mfu": model_flops(parameters, 1) * results["loop_tokens_per_s"] / (peak * 1e12) if peak else None,
        "bare_mfu": model_flops(parameters, 1) * results["bare_tokens_per_s"] / (peak * 1e12) if peak else None,
    }
    summary = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, "
        f"threads {torch.get_num_threads()}",
        "device": device_name,
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
        **flops,
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        from trainables.cli import write_json

        write_json(args.out, summary)


if __name__ == "__main__":
    main()
