"""A study checked and made ready before any trial: the site looked up for the plan (the clock, this
machine's CPUs, the cluster's GPUs where the preset depends on them), then the plan's tasks and metric
validated, every task's data tokenized once, the majority floor, then Ray joined.
"""

from __future__ import annotations

import logging
import os
import time

import ray

from search.infra.ray_connect import connect, connect_address, probe_address
from search.study.config import SearchConfig
from search.study.kind import TrialData, TrialKind
from search.study.plan import Site, StudyPlan

logger = logging.getLogger(__name__)


def look(cfg: SearchConfig, kind: TrialKind) -> Site:
    """What the plan needs beyond the flags: the clock, this machine's CPUs and, where they decide something,
    the cluster's GPUs: without ``--gpus-per-trial`` (a trial asks for one GPU where the cluster has GPUs), or
    without ``--preset`` (the kind's default may depend on them; ``--resume`` takes the recorded one)."""
    site = Site(stamp=time.strftime("%Y%m%d-%H%M%S"), cpus=os.cpu_count() or 1)
    if cfg.gpus_per_trial is not None and (cfg.preset is not None or cfg.resume):
        return site
    return Site(site.stamp, site.cpus, cluster_gpus(cfg.address, kind))


def cluster_gpus(address: str | None, kind: TrialKind) -> float:
    """The GPUs of the Ray this study runs on: a cluster's (at ``--address``, or one this process already
    joined) as Ray advertises them; for a private local Ray not started yet, this machine's CUDA devices
    where the kind trains (a simulated study's private Ray counts none: its trials only sleep)."""
    if ray.is_initialized() or address not in (None, "local"):
        connect_address(address)  # returns at once where this process already joined one
        return float(ray.cluster_resources().get("GPU", 0))
    if not kind.counts_gpus:
        return 0.0
    import torch  # here: only a trained study counts CUDA devices; a simulated one never imports torch

    return float(torch.cuda.device_count())


def ready(plan: StudyPlan) -> TrialData:
    """Data, tasks and metric checked (before Ray starts), then Ray connected."""
    res = plan.resources
    if res.address not in (None, "auto", "local"):
        probe_address(res.address)  # a mistyped address fails in seconds, not after tokenizing
    if plan.preset_reason:
        logger.info("no --preset: %s", plan.preset_reason)
    if plan.search_reason:
        logger.info("%s", plan.search_reason)
    if plan.gpu_reason:
        logger.info("%s", plan.gpu_reason)
    data = plan.prepared or plan.kind.prepare(plan.study, plan.base, plan.invocation.objective)
    connect(res.address, res.cpus_per_trial, res.gpus_per_trial, plan.stores.storage, res.ray_cpus)
    if plan.preset.note:
        logger.info("%s", plan.preset.note)
    if data.majority:
        logger.info(
            "majority rate (constant predictor) on this dev set: %s",
            ", ".join(f"{k}={v:.4f}" for k, v in data.majority.items() if v == v),
        )
    return data
