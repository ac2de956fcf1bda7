"""The cost per step of issue 19's strategies, as ratios to the plain loop, in one run.

``python -m benchmarks.throughput --strategies`` runs it. Every option gets its own
:class:`~trainables.loop.Trainer` (same seed, so the same initial weights and the same data), and
each round times, per option, a block of the plain loop and a block of the option in ABBA order
(plain, option | option, plain), every block ``--steps`` micro-batches of ``Trainer.train_steps``.
The figure is the median over rounds of option seconds / plain seconds: its cost per micro-batch
(rows trained) relative to the plain loop, > 1 slower. An optimizer step of ``all`` holds one
micro-batch per task, and the ``accum2-*`` options two: per optimizer step they cost that many times more.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from trainables.config import OptimConfig, SamplingConfig, TrainConfig
from trainables.loop import Trainer

EPOCH = 0
OPTIONS: dict[str, dict[str, Any]] = {  # option -> TrainConfig changes
    "bandit-loss": {"sampling": SamplingConfig(schema="bandit")},
    "bandit-primary": {"sampling": SamplingConfig(schema="bandit", bandit_reward="primary")},
    "uncertainty": {"optim": OptimConfig(loss_weighting="uncertainty")},
    "all-sum": {"optim": OptimConfig(step_mode="all")},
    "all-pcgrad": {"optim": OptimConfig(step_mode="all", gradients="pcgrad")},
    "accum2-sum": {"grad_accum": 2},
    "accum2-pcgrad": {"grad_accum": 2, "optim": OptimConfig(gradients="pcgrad")},
    "layer-decay": {"optim": OptimConfig(layer_decay=0.8)},
    "unfreeze-epoch-0": {"optim": OptimConfig(unfreeze="epoch")},  # epoch 0: the heads alone train
}


def block(trainer: Trainer, steps: int) -> float:
    """Seconds of ``steps`` micro-batches of the trainer's loop, queued GPU work included."""
    trainer.model.train()
    if trainer.device.type == "cuda":
        torch.cuda.synchronize(trainer.device)
    started = time.perf_counter()
    trainer.train_steps(EPOCH, steps)
    if trainer.device.type == "cuda":
        torch.cuda.synchronize(trainer.device)
    return time.perf_counter() - started


def benchmark(base: TrainConfig, steps: int, rounds: int, options: list[str] | None = None) -> dict[str, Any]:
    """Median per-round ratio of each option's block time to the plain loop's (module docstring)."""
    names = options or list(OPTIONS)
    plain = Trainer(base)
    shared = plain.data  # every trainer reads the same tokenized data
    trainers = {n: Trainer(dataclasses.replace(base, **OPTIONS[n]), shared) for n in names}
    even = steps + steps % len(base.tasks)  # whole optimizer steps for "all" and accumulation alike
    for trainer in (plain, *trainers.values()):  # allocator, kernels, optimizer state
        block(trainer, even)
    ratios: dict[str, list[float]] = {n: [] for n in names}
    seconds = dict.fromkeys(["plain", *names], 0.0)
    for _ in range(rounds):
        for n, trainer in trainers.items():
            a = block(plain, even)
            b = block(trainer, even) + block(trainer, even)
            a += block(plain, even)
            ratios[n].append(b / a)
            seconds["plain"] += a
            seconds[n] += b
    return {
        "strategy_steps_per_block": even,
        "strategy_rounds": rounds,
        "strategy_cost_ratio": {n: float(np.median(r)) for n, r in ratios.items()},
        "strategy_cost_per_round": ratios,
        "strategy_plain_seconds_per_step": seconds["plain"] / (2 * rounds * len(names) * even),
    }
