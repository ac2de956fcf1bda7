"""How much of the primary task's training data a run has seen: its passes over the primary's rows.

An epoch is the mean of the tasks' sizes in batches (:func:`trainables.sampling.steps_per_epoch`) and
the schema decides the primary's share of those steps, so one epoch is a different amount of primary
training in every config: a pass over the primary's data for the single-task run, a fifth of one for a
config whose auxiliaries are large. A pass is the primary's batches per pass drawn once (the last batch
of a pass may be short, as :class:`~trainables.batching.TaskBatches` draws them).

Pure: the expected passes from the config, its tasks' training sizes and the schema's distribution
(what a simulated trial reports, the truths' curves in passes read, and ``search.estimate`` counts);
the trainer counts the batches it drew (``Trainer.primary_passes``), which equals this in expectation
and exactly for round robin and single-task runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from trainables.config import TrainConfig
from trainables.sampling import make_sampler, steps_per_epoch

PRIMARY_PASSES = "primary_passes"  # result key beside ``epoch``: passes over the primary's training rows so far


def batches_per_pass(rows: int, batch_size: int) -> int:
    return max(1, -(-rows // batch_size))


def epoch_steps(config: TrainConfig, sizes: Mapping[str, int]) -> int:
    """Micro-batches per epoch, as the trainer counts them (one batch of every task per step: the nearest
    whole number of such steps to the mean)."""
    steps = steps_per_epoch([batches_per_pass(sizes[t], config.batch_size) for t in config.tasks])
    if config.optim.step_mode == "all":
        n = len(config.tasks)
        steps = n * max(1, round(steps / n))
    return steps


def screen_step(updates_per_epoch: int, accum: int, fraction: float) -> int:
    """The micro-batch of an epoch where an evaluation at ``fraction`` of it falls: a whole number of
    optimizer steps, at least one, and at least one before the epoch's end."""
    if updates_per_epoch < 2:
        raise ValueError(f"an epoch of one optimizer step has no point inside it (screen {fraction:g})")
    return min(updates_per_epoch - 1, max(1, round(fraction * updates_per_epoch))) * accum


def primary_share(config: TrainConfig, epoch: int) -> float:
    """The expected share of an epoch's micro-batches that are the primary's (``epoch`` 0-based): the
    schema's distribution in force (round robin: 1/n; one batch of every task per step: 1/n; a bandit:
    its starting distribution, uniform, since where it moves depends on the rewards)."""
    n = len(config.tasks)
    if n == 1:
        return 1.0
    if config.optim.step_mode == "all":
        return 1.0 / n
    probs = make_sampler(config.sampling, config.task_weights(), config.epochs, 0).probabilities(epoch)
    return float(np.asarray(probs)[config.tasks.index(config.primary)])


def primary_passes(config: TrainConfig, sizes: Mapping[str, int], point: float) -> float:
    """Expected passes over the primary's training rows after ``point`` epochs (0.25: a screen point a
    quarter into the first, placed as the trainer places it). ``sizes``: training rows per task spec,
    after the preset's limits (:func:`trainables.rows.training_sizes`)."""
    missing = [t for t in config.tasks if t not in sizes]
    if missing:
        raise KeyError(f"training sizes: no size for task {missing[0]!r}")
    steps = epoch_steps(config, sizes)
    whole, fraction = int(point), point - int(point)
    drawn = sum(primary_share(config, e) * steps for e in range(min(whole, config.epochs)))
    if fraction:
        accum = len(config.tasks) if config.optim.step_mode == "all" else config.grad_accum
        updates = math.ceil(steps / accum)
        drawn += primary_share(config, whole) * screen_step(updates, accum, fraction)
    return drawn / batches_per_pass(sizes[config.primary], config.batch_size)
