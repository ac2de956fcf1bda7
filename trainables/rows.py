"""Which rows of a task's split a run keeps, and how many: the data limits of a config, without torch."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from trainables.config import TrainConfig
from trainables.tasks import get_task


def limit_rows(n_rows: int, limit: int | None, group_size: int, first: bool) -> np.ndarray:
    """Row indices of at most ``limit`` rows, whole groups only (at least one group).

    ``first`` keeps the leading groups (evaluation keeps the published order);
    otherwise a fixed-seed sample of groups, identical for every trial and seed.
    """
    n_groups = n_rows // group_size
    if limit is None or limit >= n_rows:
        return np.arange(n_rows)
    keep = max(1, limit // group_size)
    groups = np.arange(keep) if first else np.sort(np.random.default_rng(0).permutation(n_groups)[:keep])
    return (groups[:, None] * group_size + np.arange(group_size)).ravel()


def training_sizes(config: TrainConfig) -> dict[str, int]:
    """Training rows per task spec after the limits, as ``trainables.prepare.prepare_data`` keeps them (read,
    not tokenized): what a config's exposure to its primary (:mod:`trainables.exposure`) is computed from."""
    return {spec: _kept(spec, config.data_dir, config.protocol, config) for spec in config.tasks}


@functools.lru_cache(maxsize=64)
def _task_rows(spec: str, data_dir: str, protocol: str) -> tuple[int, int]:
    task = get_task(spec, Path(data_dir), protocol)
    return len(task.examples("train")), task.group_size


def _kept(spec: str, data_dir: str, protocol: str, config: TrainConfig) -> int:
    rows, group = _task_rows(spec, data_dir, protocol)
    return len(limit_rows(rows, config.train_limit(rows), group, first=False))
