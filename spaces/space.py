"""Optuna define-by-run spaces. These functions only call ``trial.suggest_*``.

A point of the space is a flat dict of *choices* (``aux/sst2``, ``schema``, ...);
:func:`spaces.canonical.apply_choices` turns choices into a training config.
"""

from __future__ import annotations

from typing import Any

from spaces.canonical import WEIGHTED
from spaces.studies import Study


def define_space(trial: Any, study: Study) -> dict[str, Any] | None:
    """Suggest one schema for ``study``; returns the constants of the point (none).

    The first choice is single-task or multitask, at even odds: the final verdict compares the best
    of each, so the single-task side gets half the search's lr and warm-up tuning, not the 1 in
    2^candidates it would get from the auxiliary flags alone. A single-task point has no schema
    (one task trains the same under all of them)."""
    if not trial.suggest_categorical("multitask", [False, True]):
        chosen: list[str] = []
        schema = "prop"
    else:
        chosen = [task for task in study.candidates if trial.suggest_categorical(f"aux/{task}", [False, True])]
        schema = trial.suggest_categorical("schema", list(study.schemas))
    if schema == "power":
        trial.suggest_float("exponent", study.exponent.low, study.exponent.high)
    if schema == "anneal":
        trial.suggest_float("anneal_c", study.anneal_c.low, study.anneal_c.high)
    if study.weight is not None and schema in WEIGHTED:  # each auxiliary's weight relative to the primary's
        for task in chosen:
            trial.suggest_float(f"weight/{task}", study.weight.low, study.weight.high, log=True)
    if study.lr is not None:
        trial.suggest_float("lr", study.lr.low, study.lr.high, log=study.lr.log)
    if study.warmup is not None:
        trial.suggest_float("warmup", study.warmup.low, study.warmup.high)
    if study.batch_sizes:
        trial.suggest_categorical("batch_size", list(study.batch_sizes))
    return None
