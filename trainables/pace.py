"""How fast this machine trains and scores a study's model: a few real steps of every task, timed.

A study's first ETA (``search.study.forecast``) cannot wait for its first epoch (80 s a seed-epoch on a slow
2-core machine at the smoke preset): these steps take seconds. Each task trains ``steps`` micro-batches of its
own rows (a step of a tagging task costs more than one of a sentence pair) and scores ``rows`` dev rows, with
the threads one trial gets (``trainables.tune`` sets ``cpus_per_trial`` of them), after one untimed step each:
the first pays for allocation, not for training.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from trainables.batching import Encoded, collate
from trainables.config import TrainConfig
from trainables.loop import Trainer
from trainables.prepare import TaskData


@dataclass(frozen=True)
class Pace:
    """Seconds per training micro-batch and per dev row scored, by task spec (``semeval:NLI_M``); the
    seconds a trial spends building its model before it trains; the threads they were measured with."""

    step_s: dict[str, float]
    eval_row_s: dict[str, float]
    build_s: float
    threads: int


def first_rows(data: Encoded, n: int) -> Encoded:
    """The first ``n`` rows of a split (a tagging split's labels are per token, a sequence split's per row)."""
    n = min(n, len(data))
    end = int(data.offsets[n])
    per_token = len(data.labels) == len(data.ids) and len(data.labels) != len(data)
    return Encoded(
        ids=data.ids[:end],
        type_ids=None if data.type_ids is None else data.type_ids[:end],
        offsets=data.offsets[: n + 1],
        labels=data.labels[:end] if per_token else data.labels[:n],
        words=None if data.words is None else data.words[:n],
    )


def measure_pace(
    config: TrainConfig, data: dict[str, TaskData], threads: int, at_once: int = 1, steps: int = 3, rows: int = 32
) -> Pace:
    """Train ``steps`` micro-batches and score ``rows`` dev rows of every task of ``config`` (on its device, with
    ``threads`` torch threads each, restored after), ``at_once`` models side by side as that many trials share
    the machine (their memory bandwidth too: two trials on two cores train slower than one alone); the time to
    build a model. Each task's figure is the models' mean."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        started = time.perf_counter()
        trainers = [Trainer(config, {t: data[t] for t in config.tasks}, name="pace") for _ in range(max(1, at_once))]
        build = (time.perf_counter() - started) / len(trainers)
        step_s, eval_row_s = {}, {}
        for index, name in enumerate(trainers[0].names):
            step_s[name] = float(np.mean(side_by_side(trainers, partial(timed_steps, index=index, steps=steps))))
            dev = first_rows(data[name].dev, rows)
            eval_row_s[name] = float(np.mean(side_by_side(trainers, partial(timed_scoring, name=name, dev=dev))))
        return Pace(step_s, eval_row_s, build, max(1, threads))
    finally:
        torch.set_num_threads(before)


def side_by_side(trainers: list[Trainer], work: Callable[[Trainer], float]) -> list[float]:
    """``work`` on every trainer at once, a thread each (torch releases the GIL in its kernels)."""
    if len(trainers) == 1:
        return [work(trainers[0])]
    with ThreadPoolExecutor(len(trainers)) as pool:
        return list(pool.map(work, trainers))


def timed_scoring(trainer: Trainer, name: str, dev: Encoded) -> float:
    """Seconds per dev row scored, after one untimed row (the first call allocates)."""
    trainer.predict(name, first_rows(dev, 1))
    started = time.perf_counter()
    trainer.predict(name, dev)
    return (time.perf_counter() - started) / max(1, len(dev))


def timed_steps(trainer: Trainer, index: int, steps: int) -> float:
    """Mean seconds of a training micro-batch of task ``index`` (forward, backward, optimizer step), after one
    untimed step; the batches are the task's own, in its epoch order."""
    name = trainer.names[index]
    times = []
    for step in range(steps + 1):
        started = time.perf_counter()
        rows = trainer.batches[index].next()
        batch = collate(
            trainer.data[name].train, rows, trainer.padding, trainer.kinds[name], multiple=trainer.pad_multiple
        )
        trainer.backward(index, batch)
        trainer.optimizer_step()
        if trainer.device.type == "cuda":
            torch.cuda.synchronize(trainer.device)
        if step:
            times.append(time.perf_counter() - started)
    return float(np.mean(times))
