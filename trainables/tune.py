"""Ray Tune function trainable: one trial trains one canonical config under K seeds.

The only core module that imports Ray. At every report point (a search trial's every epoch and its
screen point; a final run's last epoch: ``TrialConfig.points``) it reports, for every
metric, the seed mean and standard deviation (ASHA decides on the mean), the
per-seed values of the primary task's scores and of the objective, and
checkpoints every seed's full training state, so a retried or restored trial
continues where it stopped with the result it would have had: bit for bit on the CPU,
within tolerance on CUDA (its kernels are not deterministic; ``trainables/loop.py``).

Under a seed schedule (seeds as a fidelity, :mod:`trainables.fidelity`) a trial trains only the
first seeds its epoch calls for; a seed added after a rung first trains the epochs it missed,
unreported, so each reported epoch is a mean over seeds at that epoch. The checkpoint holds the
seeds trained so far (``fidelity.json``).

A diverged run (NaN loss) is not an error for Tune: retrying it from its last
checkpoint would diverge again, so the trial reports one final result flagged
``diverged`` with the reason, and the searcher and tracker record it as failed.
"""

from __future__ import annotations

import atexit
import json
import logging
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
from ray import tune

from trainables.batching import tokenizer_identity
from trainables.cli import setup_logging
from trainables.config import TrainConfig
from trainables.exposure import PRIMARY_PASSES
from trainables.fidelity import SEED_COUNT, SeedSchedule, epoch_value
from trainables.loop import DivergedError, TaskData, Trainer, prepare_data
from trainables.model import load_tokenizer
from trainables.results import DIVERGED, FAILURE_REASON, aggregate, seed_values_kept
from trainables.trial import TrialConfig

logger = logging.getLogger(__name__)


def placement() -> dict[str, Any]:
    """Where this trial runs, and the device it trains on (see :func:`training_device`)."""
    context = ray.get_runtime_context()
    gpus = tune.get_context().get_trial_resources().required_resources.get("GPU", 0) if _in_tune() else 0
    device, fallback = training_device(gpus, torch.cuda.is_available())
    if fallback:
        logger.warning("trial was given %s GPU but no CUDA device is visible: training on the CPU", gpus)
    return {
        "node_id": context.get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "hostname": socket.gethostname(),
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "torch_device": device,
        "gpus_requested": float(gpus),
        "cpu_fallback": fallback,
    }


def training_device(gpus_requested: float, cuda_visible: bool) -> tuple[str, bool]:
    """``(torch device, CPU fallback)`` of a trial. CUDA only when the trial requested a GPU: a
    GPU visible to a 0-GPU trial is not reserved for it (Ray may have given it to another)."""
    if not gpus_requested:
        return "cpu", False
    return ("cuda", False) if cuda_visible else ("cpu", True)


THREAD_EXIT_WAIT_S = 10.0


def finish_before_exit() -> None:
    """Make this process wait (up to THREAD_EXIT_WAIT_S) at exit for the calling thread to end.

    Tune runs a function trainable in a daemon thread and stops a trial by raising SystemExit
    in it (from ``tune.report``) while the actor's main thread goes on to exit. A daemon thread
    that has used torch and is still alive when the interpreter finalizes aborts the process
    (``terminate called``; Ray prints a SIGABRT stack for every such stopped trial). Joined from
    an ``atexit`` hook, it ends first, freeing its models while the interpreter is whole.
    """
    thread = threading.current_thread()
    if thread is not threading.main_thread():
        atexit.register(thread.join, THREAD_EXIT_WAIT_S)


def _in_tune() -> bool:
    try:
        return tune.get_context().get_trial_id() is not None
    except Exception:
        return False


def diverged_result(metric: str, epoch: float, reason: str) -> dict[str, Any]:
    """The last result of a diverged trial. The objective is NaN: ASHA's cutoffs skip NaN
    (``nanpercentile``), where an infinite value would poison every later cutoff."""
    return {metric: float("nan"), "epoch": epoch, DIVERGED: 1.0, FAILURE_REASON: reason}


def data_signature(config: TrainConfig, tokenizer) -> str:
    """What tokenized data depends on besides the task list: shared data is used only on a match."""
    return "|".join(
        map(
            str,
            (
                tokenizer_identity(tokenizer),
                config.encoder.max_seq_length,
                config.max_train_examples,
                config.train_fraction,
                config.max_eval_examples,
                config.max_auxiliary_eval_examples,
                config.protocol,
                Path(config.data_dir).resolve(),
                config.evaluate_test,
            ),
        )
    )


def multitask_trainable(
    config: dict[str, Any],
    data: dict[str, TaskData] | None = None,
    signature: str | None = None,
    metric: str | None = None,
) -> None:
    """Tune entry point. ``config``: a :class:`~trainables.trial.TrialConfig` as Tune's dict (``train``, ``seeds``,
    ``key``, ..., or nested under ``trial``, from ``tune.grid_search`` over whole configs), read back here.
    ``metric``: the study's objective, reported as NaN by a diverged trial (else the config's ``metric``),
    so Tune's check that every result holds it passes.

    ``data``: every task's tokenized splits, prepared once by the driver and shared through
    the object store (``tune.with_parameters``), used when its ``signature`` matches this
    trial's (:func:`data_signature`); otherwise the trial prepares its own (disk cache).
    """
    trial = TrialConfig.of_tune(config)
    finish_before_exit()
    setup_logging()  # worker process: quiet transformers' progress bars, keep our progress lines
    seeds = list(trial.seeds)
    where = placement()
    base = trial.train.with_(device=where["torch_device"])
    torch.set_num_threads(max(1, int(tune.get_context().get_trial_resources().required_resources.get("CPU", 1))))

    tokenizer = load_tokenizer(base.encoder)
    data = trial_data(base, tokenizer, data, signature)
    label = trial.label  # the trial's run name, "t03 sst2+pos square"

    def trainer(seed: int) -> Trainer:
        return Trainer(base.with_(seed=seed), data, tokenizer, name=f"{label} seed {seed}".strip())

    trainers = restore(trainer, seeds, trial.key, where["hostname"])
    where["restored_from_epoch"] = epoch_value(trainers[0].position) if trainers else 0
    objective = metric or trial.metric or "objective"
    primary = data[base.primary].task.name  # "semeval" for the spec "semeval:NLI_M"
    counted = trial.fidelity is not None  # seeds/trained is reported where the study has a schedule
    reporting = Reporting(objective, primary, where, trial.key, counted)
    train_and_report(trainers, trainer, seeds, trial.schedule(), trial.points(), reporting)


def trial_data(
    base: TrainConfig, tokenizer, data: dict[str, TaskData] | None, signature: str | None
) -> dict[str, TaskData]:
    """The driver's shared data where it fits this trial, else the trial's own; its tasks only."""
    if data is None or not set(base.tasks) <= set(data) or signature != data_signature(base, tokenizer):
        data = prepare_data(base, tokenizer)  # on-disk cache: tokenized once per node
    return {spec: data[spec] for spec in base.tasks}


FIDELITY_STATE = "fidelity.json"  # in a checkpoint: {"seeds": how many of the trial's seeds it holds}


def restore(trainer: Callable[[int], Trainer], seeds: Sequence[int], key: str, hostname: str) -> list[Trainer]:
    """The trainers of the seeds Tune's checkpoint holds, each at its saved state; none without one.
    A checkpoint from before seed schedules (no ``fidelity.json``) holds every seed."""
    checkpoint = tune.get_checkpoint()
    if not checkpoint:
        return []
    with checkpoint.as_directory() as directory:
        state = Path(directory) / FIDELITY_STATE
        held = json.loads(state.read_text())["seeds"] if state.exists() else len(seeds)
        trainers = [trainer(seed) for seed in seeds[:held]]
        for seed, t in zip(seeds, trainers):
            t.load(Path(directory) / f"seed-{seed}.pt")
    logger.info("resumed %s from its checkpoint at epoch %g on %s", key, trainers[0].position, hostname)
    return trainers


@dataclass(frozen=True)
class Reporting:
    """What a trial's results say beside the scores: the objective (NaN when it diverged), whose
    scores keep per-seed values, where it ran, its key, and whether ``seeds/trained`` is reported."""

    objective: str
    primary: str  # the primary task's name, "semeval"
    where: dict[str, Any]
    key: str
    counted: bool = False  # the study has a seed schedule

    def keep_seeds(self, metric: str) -> bool:
        return seed_values_kept(metric, self.primary, self.objective)


def train_and_report(
    trainers: list[Trainer],
    trainer: Callable[[int], Trainer],
    seeds: Sequence[int],
    schedule: SeedSchedule,
    points: Sequence[float],
    reporting: Reporting,
) -> None:
    """Train the schedule's seeds to each report point (``points``: every epoch's end, and a screen point
    inside the first); report their aggregate and checkpoint them at each. ``trainers``: the seeds restored
    (a prefix of ``seeds``, all at one point); ``trainer(seed)`` makes a new one."""
    objective, where, key = reporting.objective, reporting.where, reporting.key
    for before, point in zip([0.0, *points], points):
        if trainers and trainers[0].reached(point):
            continue  # restored past it
        try:
            # promoted past a rung: the added seeds catch up to the last point, unreported
            for seed in seeds[len(trainers) : schedule.at(point)]:
                trainers.append(trainer(seed))
                if before:
                    trainers[-1].run_to(before, evaluate=False)
            per_seed = [t.run_to(point) for t in trainers]
        except DivergedError as exc:
            reason = f"DivergedError: {exc}"
            logger.error("%s diverged: %s", key, reason)
            tune.report({**diverged_result(objective, point, reason), **where})
            return
        # the step and the exposure are the trial's, not scores: one value each (passes: the seeds' mean)
        passes = float(np.mean([m[PRIMARY_PASSES] for m in per_seed]))
        per_seed = [{k: v for k, v in m.items() if k not in ("epoch", PRIMARY_PASSES)} for m in per_seed]
        trained = seeds[: len(trainers)]
        metrics: dict[str, Any] = aggregate(per_seed, trained, reporting.keep_seeds)
        metrics.update(epoch=epoch_value(point), **{PRIMARY_PASSES: passes}, **where)
        if reporting.counted:
            metrics[SEED_COUNT] = len(trainers)
        with tempfile.TemporaryDirectory() as directory:
            for seed, t in zip(trained, trainers):
                t.save(Path(directory) / f"seed-{seed}.pt")
            (Path(directory) / FIDELITY_STATE).write_text(json.dumps({"seeds": len(trainers)}))
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))
