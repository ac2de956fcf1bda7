"""A stand-in for ``ray.tune`` inside a trainable module: a trial run in-process, its reports kept,
its checkpoints copied aside, and a stop after a chosen epoch (as ASHA's, through ``tune.report``)."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any


class Stopped(Exception):
    """Tune stopped the trial: ``tune.report`` raised in its thread."""


class Checkpoint:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def from_directory(cls, path: str | Path) -> Checkpoint:
        return cls(path)

    @contextmanager
    def as_directory(self):
        yield str(self.path)


class FakeTune:
    Checkpoint = Checkpoint

    def __init__(self, folder: Path, stop_after: int | None = None, checkpoint: Checkpoint | None = None) -> None:
        self.folder, self.stop_after, self.checkpoint = folder, stop_after, checkpoint
        self.results: list[dict[str, Any]] = []

    def get_checkpoint(self) -> Checkpoint | None:
        return self.checkpoint

    def report(self, metrics: dict[str, Any], checkpoint: Checkpoint | None = None) -> None:
        self.results.append(dict(metrics))
        if checkpoint is not None:  # Tune persists it before the reporting thread goes on
            kept = self.folder / f"checkpoint-{len(self.results)}"
            shutil.copytree(checkpoint.path, kept)
            self.checkpoint = Checkpoint(kept)
        if self.stop_after is not None and metrics.get("epoch", 0) >= self.stop_after:
            raise Stopped

    def get_context(self) -> SimpleNamespace:
        resources = SimpleNamespace(required_resources={"CPU": 1})
        return SimpleNamespace(get_trial_resources=lambda: resources, get_trial_id=lambda: None)

    def run(self, trainable, config: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
        """Run the trial until it ends or is stopped; the results it reported in this run."""
        before = len(self.results)
        try:
            trainable(config, **kw)
        except Stopped:
            pass
        return self.results[before:]
