"""A trial's outcome, decided in one place: completed, pruned (stopped early by ASHA) or failed."""

from __future__ import annotations

from trainables.tune import DIVERGED

COMPLETED, PRUNED, FAILED = "completed", "pruned", "failed"


def outcome(trial, max_epochs: int) -> str:
    """Of a finished Tune trial: ``failed`` when it errored (status ERROR) or its loss diverged (the
    trainable's own verdict: Tune saw a normal end), ``completed`` when it trained ``max_epochs``
    epochs, else ``pruned``."""
    result = trial.last_result or {}
    if getattr(trial, "status", None) == "ERROR" or result.get(DIVERGED):
        return FAILED
    return COMPLETED if int(result.get("epoch", 0)) >= max_epochs else PRUNED
