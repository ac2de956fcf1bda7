"""Disk space of a study's Tune storage: checked before it starts, a resumable stop when it runs out.

A trial checkpoints every seed's whole training state each epoch: the weights and AdamW's two
moments, about three times the model's parameter bytes per seed (:func:`checkpoint_bytes`).
Tune keeps two checkpoints per trial (:data:`KEEP_CHECKPOINTS`), three while a new one is written.

A full disk is no trial fault: Tune's ``max_failures`` would retry the trial from its last
checkpoint into the same full disk. :class:`StorageGuard` (a Tune callback in the driver) stops
the whole study the way Ctrl-C does instead (trials left resumable, the experiment state written
once more), when a trial fails with ENOSPC or, before that, when the storage's free space drops
below the running trials' next checkpoints. ``--resume`` continues once space is freed.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray.tune import Callback

from search.infra.interrupt import interrupt_tune
from search.infra.storage import local_path
from search.infra.tune_status import RUNNING
from trainables.config import TrainConfig
from trainables.trial import TrialConfig

logger = logging.getLogger(__name__)


# a trial's error text that means the disk (or a quota) is full, not that the trial is wrong
FULL = re.compile(r"no space left on device|disk quota exceeded|\[errno (28|122)\]", re.IGNORECASE)


# Checkpoints Tune keeps per trial (``CheckpointConfig(num_to_keep)``). Tune saves the whole
# experiment state (every trial) whenever a trial has checkpointed this many times since the last
# save: at 1 that is after every result, so the saves grow as results x trials (measured,
# benchmarks/README.md, sim_cost). At 2 they follow Tune's own period, which keeps them near 5%
# of the driver's time; the cost is one more checkpoint per trial on disk.
KEEP_CHECKPOINTS = 2


OVERHEAD = 2 * 2**20  # per seed: sampler, batch orders, RNG states, scheduler


RESERVE = 8 * 2**20  # kept free for the experiment state Tune writes when the study stops


POLL_S = 5.0  # seconds between free-space checks in the driver


STOPPED: dict[str, str] = {}  # experiment path -> why StorageGuard stopped it (read by the runner)


class StorageFull(OSError):
    """The storage cannot hold the study's checkpoints: one line for the user, exit code 2."""


def size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def model_state_bytes(model: str) -> int:
    """Parameter bytes of the encoder ``model`` (a name or path), counted without loading weights."""
    import torch
    from transformers import AutoConfig, AutoModel

    from trainables.model import resolve_model_path

    config = AutoConfig.from_pretrained(resolve_model_path(model))
    with torch.device("meta"):  # shapes only: no memory, no download of weights
        encoder = AutoModel.from_config(config)
    return sum(p.numel() * p.element_size() for p in encoder.parameters())


@dataclass(frozen=True)
class SpaceNeed:
    """Bytes a study's checkpoints take on the storage."""

    checkpoint: int  # one trial's checkpoint: seeds x (weights + AdamW moments + overhead)
    first: int  # the first checkpoints of the trials that start at once
    total: int  # every trial's last KEEP_CHECKPOINTS checkpoints, plus one being written per running trial

    @classmethod
    def of(
        cls, base: TrainConfig, seeds: int, trials: int, concurrent: int, model_bytes: int | None = None
    ) -> SpaceNeed:
        """``model_bytes``: the encoder's parameter bytes, if known (0 for a simulated study's trials)."""
        model_bytes = model_state_bytes(base.encoder.model) if model_bytes is None else model_bytes
        checkpoint = seeds * (3 * model_bytes + OVERHEAD)
        running = max(1, min(trials, concurrent))
        return cls(checkpoint, running * checkpoint, (KEEP_CHECKPOINTS * trials + running) * checkpoint)

    def text(self) -> str:
        return f"~{size(self.checkpoint)} per trial checkpoint, ~{size(self.total)} for the whole study"


def free_bytes(storage: str) -> int | None:
    """Free bytes where a local ``storage`` lives (its nearest existing folder); None for object stores."""
    path = local_path(storage)
    if path is None:
        return None
    existing = next(p for p in (path, *path.parents) if p.exists())
    return shutil.disk_usage(existing).free


def check_space(storage: str, need: SpaceNeed, advice: str) -> None:
    """Refuse a study whose first checkpoints cannot fit; warn when the whole study will not."""
    free = free_bytes(storage)
    if free is None:
        return
    if free < need.first + RESERVE:
        raise StorageFull(
            f"--storage {storage}: {size(free)} free, the study needs at least "
            f"{size(need.first + RESERVE)} to start ({need.text()}): {advice}"
        )
    if free < need.total + RESERVE:
        logger.warning(
            "--storage %s: %s free, the study may need %s (%s): it stops, resumably, when space runs out",
            storage,
            size(free),
            size(need.total + RESERVE),
            need.text(),
        )


def guard(
    storage: str,
    name: str,
    base: TrainConfig,
    seeds: int,
    trials: int,
    concurrent: int,
    resume: str,
    resuming: bool = False,
    model_bytes: int | None = None,
) -> StorageGuard:
    """Check the storage's free space for the study (:func:`check_space`); its guard for the run.
    ``resume``: the command that continues the study; ``model_bytes``: as :meth:`SpaceNeed.of`."""
    need = SpaceNeed.of(base, seeds, trials, concurrent, model_bytes)
    check_space(storage, need, f"free space, then: {resume}" if resuming else "free space or choose another --storage")
    return StorageGuard(storage, name, need, resume)


def disk_full(trial) -> bool:
    """Whether the trial's latest failure was a full disk (Tune appends each failure to its error file)."""
    try:
        text = Path(trial.error_file).read_text(errors="replace") if trial.error_file else ""
    except OSError:
        return False
    return bool(FULL.search(text.rsplit("Failure # ", 1)[-1]))


class StorageGuard(Callback):
    """Stops the study, resumably, when its storage runs out of space (see the module's doc)."""

    def __init__(self, storage: str, name: str, need: SpaceNeed, resume: str) -> None:
        self.storage, self.name, self.need, self.resume = storage, name, need, resume
        self.reason: str | None = None
        self._checked = 0.0

    @property
    def path(self) -> Path | None:
        """The experiment's folder, where the storage is local."""
        root = local_path(self.storage)
        return None if root is None else root / self.name

    def setup(self, **info: Any) -> None:
        """Put the reserve in place: the experiment state's room when the disk fills up."""
        self.reason = None
        if self.path is None:
            return
        reserve = self.path / ".reserve"
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            reserve.write_bytes(bytes(RESERVE))  # real blocks, not a sparse file
        except OSError as exc:  # the up-front check let it start: the next poll decides
            reserve.unlink(missing_ok=True)
            logger.warning("no reserve for the experiment state under %s: %s", self.path, exc.strerror)

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        if self.reason or self.path is None or time.monotonic() - self._checked < POLL_S:
            return
        self._checked = time.monotonic()
        running = sum(1 for t in trials if t.status == RUNNING)
        free = free_bytes(self.storage) or 0
        if running and free < running * self.need.checkpoint:
            self.stop(
                f"{size(free)} free, the {running} running trial(s) need ~{size(running * self.need.checkpoint)} "
                "for their next checkpoints"
            )

    def on_trial_recover(self, iteration: int, trials: list, trial, **info: Any) -> None:
        if disk_full(trial):
            self.drop_partial_checkpoints(trial)
            label = TrialConfig.of_tune(trial.config).label or trial.trial_id
            self.stop(
                f"trial {label} could not write its checkpoint (no space left on device), "
                f"{size(free_bytes(self.storage) or 0)} free"
            )

    on_trial_error = on_trial_recover  # no retries left: the trial stays failed, the study still stops

    def drop_partial_checkpoints(self, trial) -> None:
        """A failed trial's half-written checkpoint folders: space for the experiment state."""
        if self.path is None or not trial.path:
            return
        latest = Path(trial.checkpoint.path).name if trial.checkpoint else None
        for folder in Path(trial.path).glob("checkpoint_*"):
            if folder.name != latest:
                shutil.rmtree(folder, ignore_errors=True)

    def stop(self, why: str) -> None:
        if self.reason:
            return
        self.reason = (
            f"--storage {self.storage} is full: {why}; {self.need.text()}. Free space, then continue "
            f"with: {self.resume}"
        )
        STOPPED[str(self.path or self.storage)] = self.reason
        if self.path is not None:
            (self.path / ".reserve").unlink(missing_ok=True)  # room for the state Tune writes as it stops
        logger.warning("--storage %s is full: stopping the study, resumably", self.storage)
        if not interrupt_tune():
            raise StorageFull(self.reason)

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        if self.path is not None:
            (self.path / ".reserve").unlink(missing_ok=True)


def stop_reason(storage: str, name: str) -> str | None:
    """Why :class:`StorageGuard` stopped the study ``name`` in this process, if it did."""
    root = local_path(storage)
    return STOPPED.get(str(storage if root is None else root / name))
