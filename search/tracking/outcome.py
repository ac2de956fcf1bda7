"""A trial's outcome, decided in one place: completed, pruned (stopped early by ASHA) or failed.
The searcher (what Optuna is told), the tracker (the MLflow run's ``status``) and the console
lines all ask here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from search.infra.tune_status import ENDED, ERROR
from trainables.results import DIVERGED

COMPLETED, PRUNED, FAILED = "completed", "pruned", "failed"
TUNE_ENDED = ENDED  # Tune trial statuses that end a trial (any other may still run)


def outcome_of(result: Mapping[str, Any] | None, max_epochs: int, errored: bool = False) -> str:
    """``failed`` when the trial errored or its loss diverged (the trainable's own verdict: Tune saw
    a normal end), ``completed`` when its last result is epoch ``max_epochs``, else ``pruned``."""
    result = result or {}
    if errored or result.get(DIVERGED):
        return FAILED
    return COMPLETED if int(result.get("epoch", 0)) >= max_epochs else PRUNED


def outcome(trial, max_epochs: int) -> str:
    """Of a finished Tune trial (status ERROR: it errored)."""
    return outcome_of(trial.last_result, max_epochs, errored=getattr(trial, "status", None) == ERROR)
