"""A study checked and made ready before any trial: preset chosen, tasks and metric validated, every
task's data tokenized once, the majority floor, then Ray joined.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from search.infra.ray_connect import connect, connect_address, probe_address
from search.study.config import SearchConfig
from spaces import Preset, Study
from trainables.config import ConfigError, TrainConfig

if TYPE_CHECKING:
    from trainables.loop import TaskData

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A validated study, ready to run: its config, data (tokenized once) and the majority floor."""

    study: Study
    preset: Preset
    base: TrainConfig
    objective: str
    data: dict[str, TaskData]
    signature: str  # :func:`trainables.tune.data_signature` of ``data``
    majority: dict[str, float]  # primary dev metric -> a constant predictor's score


def prepare(cfg: SearchConfig) -> Prepared:
    """Validate the whole study before any trial: tasks, data, metric. Tokenizes every task's
    data once, for all trials, and returns it with its :func:`data_signature`. A simulated study
    (``--simulate``) reads no data: its metrics and majority floor come from the truth file."""
    if cfg.simulate is not None:
        return prepare_simulated(cfg)
    import numpy as np

    from trainables.loop import prepare_data
    from trainables.majority import majority_scores
    from trainables.model import load_tokenizer
    from trainables.tasks import get_task

    study, preset = cfg.resolved_study(), cfg.resolved_preset()
    base = cfg.base_config()
    everything = base.with_(tasks=(study.primary,) + tuple(study.candidates))
    objective = cfg.objective()
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
    from trainables.tune import data_signature  # imports Ray: only a study needs it, not search.estimate

    data = prepare_data(everything, tokenizer)  # tokenized once per study, shared through the object store
    logger.info("datasets of %s tokenized in %.1fs", ",".join(everything.tasks), time.perf_counter() - started)
    majority = majority_scores(data[study.primary].task, data[study.primary].dev_examples)
    return Prepared(study, preset, base, objective, data, data_signature(base, tokenizer), majority)


def prepare_simulated(cfg: SearchConfig) -> Prepared:
    """A simulated study: the objective checked against the truth's metrics; no data, no tokenizer."""
    study, preset, truth = cfg.resolved_study(), cfg.resolved_preset(), cfg.truth()
    objective = cfg.objective()
    known = {f"{truth.primary}/dev/{m}/mean" for m in truth.tasks[truth.primary]} | {"train/loss/mean"}
    if objective not in known:
        raise ConfigError(f"--metric {objective!r}: expected one of {', '.join(sorted(known))} (truth {cfg.simulate})")
    logger.info("simulated study: trials scored by truth %s (%s), no training", truth.name, cfg.simulate)
    return Prepared(study, preset, cfg.base_config(), objective, {}, "", dict(truth.majority))


def resolve_preset(cfg: SearchConfig) -> SearchConfig:
    """No ``--preset``: ``full`` where the cluster has GPUs (said in one line), else ``smoke``.

    On ``--resume`` the preset comes from the invocation it continues."""
    if cfg.preset is not None or cfg.resume:
        return cfg
    if cfg.simulate is not None:  # no device to look at: a simulated study stands for a GPU study
        logger.info("no --preset: a simulated study simulates the full (thesis-scale) preset")
        return replace(cfg, preset="full")
    if cfg.address in (None, "local"):
        import torch

        gpus = float(torch.cuda.device_count())  # a private local Ray sees this machine's GPUs
    else:
        import ray

        connect_address(cfg.address)
        gpus = float(ray.cluster_resources().get("GPU", 0))
    preset = "full" if gpus else "smoke"
    logger.info(
        "no --preset: %s",
        f"{gpus:g} GPU(s) in the cluster, so the full (thesis-scale) preset"
        if gpus
        else "no GPU in the cluster, so the smoke preset (CPU minutes; --preset full for thesis scale)",
    )
    return replace(cfg, preset=preset)


def ready(cfg: SearchConfig) -> Prepared:
    """Data, tasks and metric checked (before Ray starts), then Ray connected."""
    if cfg.address not in (None, "auto", "local"):
        probe_address(cfg.address)  # a mistyped address fails in seconds, not after tokenizing
    prep = prepare(cfg)
    connect(cfg.address, cfg.cpus_per_trial, cfg.gpus_per_trial, cfg.storage, cfg.simulated_cpus())
    if prep.preset.note:
        logger.info("%s", prep.preset.note)
    if prep.majority:
        logger.info(
            "majority rate (constant predictor) on this dev set: %s",
            ", ".join(f"{k}={v:.4f}" for k, v in prep.majority.items() if v == v),
        )
    return prep
