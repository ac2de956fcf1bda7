"""What kind of trial a study runs: trained (:class:`TrainedTrials`, here) or simulated (its truth file,
``search.simulation.kind.SimulatedTrials``). Everything that differs between the two is a method here.

The kind is chosen once per study, by a chooser the command line hands down (``search.simulation.kind.
trial_kind``: from ``--simulate``, or on ``--resume`` and in finalize from the truth the invocation recorded);
:func:`search.study.plan.plan` holds it and the rooms ask it: what to prepare before any trial, which Tune
trainable to run, the majority floor on test, whether a model is registered, a checkpoint's size, a local
Ray's CPUs. The study room cannot import the simulated kind (simulation sits above it), which is why the
chooser comes from above.
"""

from __future__ import annotations

import abc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from ray import tune

from spaces import Study
from trainables.config import ConfigError, TrainConfig
from trainables.majority import majority_scores
from trainables.tasks import get_task

if TYPE_CHECKING:
    from trainables.loop import TaskData

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrialData:
    """What every trial of a study shares, made once before any trial: the tokenized data of every task
    and its :func:`trainables.tune.data_signature` (none for a simulated trial), the majority floor on dev."""

    data: dict[str, TaskData]
    signature: str
    majority: dict[str, float]  # primary dev metric -> a constant predictor's score


class TrialKind(abc.ABC):
    """How a study's trials come to their scores. :func:`search.study.plan.plan` asks :meth:`check`,
    :meth:`default_preset`, :meth:`epochs`, :meth:`ray_cpus` and last :meth:`checked` while it plans;
    ``search.study.prepare.ready`` asks :meth:`prepare` before Ray starts; the tuner asks :meth:`trainable`;
    finalize asks :meth:`final_trainable`, :meth:`majority_on_test` and :attr:`registers_model`; the report asks
    :meth:`study_note`."""

    truth: str = ""  # the truth file a simulated study's scores come from; recorded as the invocation's ``simulate``
    registers_model: bool = True  # finalize logs and registers the winner's model
    model_bytes: int | None = None  # a checkpoint's model bytes per seed; None: the encoder's (search.infra.disk)
    counts_gpus: bool = True  # whether the preset's default depends on the cluster's GPUs
    paced: bool = False  # whether this machine's pace tells a trial's time (:meth:`pace`)

    def flags(self) -> list[str]:
        """The command-line flags that make a study of this kind (for the line that resumes it)."""
        return []

    def study_note(self, note: str) -> str:
        """The preset's ``note`` as the report heads a study of this kind with."""
        return note

    def check(self, study: Study) -> None:  # noqa: B027 (an optional hook)
        """Refuse a study this kind cannot run, before anything starts (one line)."""

    def epochs(self, asked: int | None) -> int | None:
        """The epochs every trial trains: ``asked`` (``--epochs``; None: the preset's), or the kind's own."""
        return asked

    def pace(self, base: TrainConfig, data: TrialData, threads: int, at_once: int = 1) -> Any:
        """This machine's pace at ``base``'s scale (:class:`trainables.pace.Pace`), measured with a trial's
        ``threads``, ``at_once`` trials side by side, where :attr:`paced` (a simulated trial sleeps its truth's
        time)."""
        raise NotImplementedError(f"{type(self).__name__} has no pace to measure")

    def checked(self, plan: Any) -> Any:
        """The :class:`~search.study.plan.StudyPlan` ``plan`` as made, or one line refusing what this kind cannot
        run (asked last by ``plan``, before anything starts)."""
        return plan

    @abc.abstractmethod
    def default_preset(self, gpus: float) -> tuple[str, str]:
        """The preset of an invocation without ``--preset``, on a cluster with ``gpus`` GPUs, and why (a line)."""

    @abc.abstractmethod
    def ray_cpus(self, max_concurrent: int, cpus_per_trial: float, machine_cpus: int) -> int | None:
        """A private local Ray's logical CPUs; None: the machine's."""

    @abc.abstractmethod
    def prepare(self, study: Study, base: TrainConfig, objective: str) -> TrialData:
        """Check the objective and make what every trial shares (before Ray starts)."""

    @abc.abstractmethod
    def trainable(self, data: TrialData, objective: str, cpus: float, gpus: float) -> Any:
        """The search's Tune trainable, with each trial's resources."""

    @abc.abstractmethod
    def final_trainable(self, configs: list[TrainConfig], objective: str, cpus: float, gpus: float) -> Any:
        """Finalize's Tune trainable for the contenders ``configs``, scoring test (the search's held none)."""

    @abc.abstractmethod
    def majority_on_test(self, config: TrainConfig) -> dict[str, float]:
        """The constant predictor's scores on the primary's test rows, as ``config``'s runs saw them."""


Kinds = Callable[[str], TrialKind]  # a truth file ("" for none) -> the study's kind: what the CLIs hand down


def with_resources(trainable: Callable, cpus: float, gpus: float, **parameters: Any) -> Any:
    """A function trainable with its shared parameters (one copy in the object store for all trials) and
    each trial's resources."""
    return tune.with_resources(tune.with_parameters(trainable, **parameters), {"cpu": cpus, "gpu": gpus})


class TrainedTrials(TrialKind):
    """Trials that train the multitask model (:func:`trainables.tune.multitask_trainable`).

    ``trainables.tune``, ``trainables.loop``, ``trainables.model`` and ``trainables.batching`` are imported
    inside the methods: they import torch, which a simulated study's driver never imports
    (``tests/search/test_simulate.py`` runs one with torch unimportable), and every study imports this module."""

    def default_preset(self, gpus: float) -> tuple[str, str]:
        if gpus:
            return "full", f"{gpus:g} GPU(s) in the cluster, so the full (thesis-scale) preset"
        return "smoke", "no GPU in the cluster, so the smoke preset (CPU minutes; --preset full for thesis scale)"

    def ray_cpus(self, max_concurrent: int, cpus_per_trial: float, machine_cpus: int) -> int | None:
        return None

    def prepare(self, study: Study, base: TrainConfig, objective: str) -> TrialData:
        """Validate tasks and metric, tokenize every task's data once for all trials, the majority floor."""
        from trainables.loop import prepare_data
        from trainables.model import load_tokenizer
        from trainables.tune import data_signature

        everything = base.with_(tasks=(study.primary,) + tuple(study.candidates))
        for spec in everything.tasks:  # unknown names fail here, before any data is read
            get_task(spec, Path(base.data_dir), base.protocol)
        primary = get_task(study.primary, Path(base.data_dir), base.protocol)
        dev = primary.examples("dev")[: primary.group_size]
        probs = np.full((len(dev), primary.num_labels), 1.0 / primary.num_labels)
        known = {f"{primary.name}/dev/{k}/mean" for k in primary.metrics(probs, dev)} | {"train/loss/mean"}
        if objective not in known:
            raise ConfigError(f"--metric {objective!r}: expected one of {', '.join(sorted(known))}")
        started = time.perf_counter()
        tokenizer = load_tokenizer(base.encoder)
        data = prepare_data(everything, tokenizer)  # tokenized once per study, shared through the object store
        logger.info("datasets of %s tokenized in %.1fs", ",".join(everything.tasks), time.perf_counter() - started)
        majority = majority_scores(data[study.primary].task, data[study.primary].dev_examples)
        return TrialData(data, data_signature(base, tokenizer), majority)

    paced = True

    def pace(self, base: TrainConfig, data: TrialData, threads: int, at_once: int = 1) -> Any:
        from trainables.pace import measure_pace

        return measure_pace(base.with_(tasks=tuple(data.data)), data.data, threads, at_once)

    def trainable(self, data: TrialData, objective: str, cpus: float, gpus: float) -> Any:
        from trainables.tune import multitask_trainable

        return with_resources(
            multitask_trainable, cpus, gpus, data=data.data, signature=data.signature, metric=objective
        )

    def final_trainable(self, configs: list[TrainConfig], objective: str, cpus: float, gpus: float) -> Any:
        from trainables.loop import prepare_data
        from trainables.model import load_tokenizer
        from trainables.tune import data_signature

        tasks = tuple(dict.fromkeys(t for c in configs for t in c.tasks))
        everything = configs[0].with_(tasks=tasks, evaluate_test=True)  # the search's data holds no test
        tokenizer = load_tokenizer(everything.encoder)
        data = prepare_data(everything, tokenizer)
        return self.trainable(TrialData(data, data_signature(everything, tokenizer), {}), objective, cpus, gpus)

    def majority_on_test(self, config: TrainConfig) -> dict[str, float]:
        from trainables.rows import limit_rows

        task = get_task(config.primary, Path(config.data_dir), config.protocol)
        rows = task.examples("test")
        return majority_scores(
            task, [rows[i] for i in limit_rows(len(rows), config.max_eval_examples, task.group_size, first=True)]
        )
