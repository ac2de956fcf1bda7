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
    """What the plan needs beyond the flags. The cluster's GPUs are counted only without ``--preset`` (or
    ``--resume``, which takes the preset the study recorded) where the kind's default preset depends on them:
    a private local Ray sees this machine's GPUs, a cluster at ``--address`` its own."""
    site = Site(stamp=time.strftime("%Y%m%d-%H%M%S"), cpus=os.cpu_count() or 1)
    if cfg.preset is not None or cfg.resume or not kind.counts_gpus:
        return site
    if cfg.address in (None, "local"):
        import torch  # here: only a trained study without --preset counts GPUs; a simulated one never imports torch

        gpus = float(torch.cuda.device_count())
    else:
        connect_address(cfg.address)
        gpus = float(ray.cluster_resources().get("GPU", 0))
    return Site(site.stamp, site.cpus, gpus)


def ready(plan: StudyPlan) -> TrialData:
    """Data, tasks and metric checked (before Ray starts), then Ray connected."""
    res = plan.resources
    if res.address not in (None, "auto", "local"):
        probe_address(res.address)  # a mistyped address fails in seconds, not after tokenizing
    if plan.preset_reason:
        logger.info("no --preset: %s", plan.preset_reason)
    data = plan.kind.prepare(plan.study, plan.base, plan.objective)
    connect(res.address, res.cpus_per_trial, res.gpus_per_trial, plan.stores.storage, res.ray_cpus)
    if plan.preset.note:
        logger.info("%s", plan.preset.note)
    if data.majority:
        logger.info(
            "majority rate (constant predictor) on this dev set: %s",
            ", ".join(f"{k}={v:.4f}" for k, v in data.majority.items() if v == v),
        )
    return data
