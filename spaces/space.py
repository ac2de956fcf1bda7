"""Optuna define-by-run spaces. These functions only call ``trial.suggest_*``.

A point of the space is a flat dict of *choices* (``aux/sst2``, ``schema``, ...);
:func:`spaces.canonical.apply_choices` turns choices into a training config.
"""

from __future__ import annotations

from typing import Any

from spaces.canonical import AUX_ONLY, WEIGHTED
from spaces.studies import Study


def define_space(trial: Any, study: Study) -> dict[str, Any] | None:
    """Suggest one schema for ``study``; returns the constants of the point (none).

    The first choice is single-task or multitask, at even odds: the final verdict compares the best
    of each, so the single-task side gets half the search's lr and warm-up tuning, not the 1 in
    2^candidates it would get from the auxiliary flags alone. A single-task point has no schema
    (one task trains the same under all of them). A multitask point always has an auxiliary task:
    where every ``aux/<task>`` flag came out off, ``aux_only`` picks one (without it, that draw
    trained single-task, and with one candidate only a quarter of the points were multitask)."""
    on = study.strategy_dimensions()
    # a study without candidates has no multitask point to draw
    multitask = trial.suggest_categorical("multitask", [False, True] if study.candidates else [False])
    if not multitask:
        chosen: list[str] = []
        schema = "prop"
    else:
        chosen = [task for task in study.candidates if trial.suggest_categorical(f"aux/{task}", [False, True])]
        if not chosen:
            chosen = [trial.suggest_categorical(AUX_ONLY, list(study.candidates))]
        step_mode = trial.suggest_categorical("step_mode", list(study.step_modes)) if "step_modes" in on else "sampled"
        # one batch of every task per step: no draws, so no schema
        schema = trial.suggest_categorical("schema", list(study.schemas)) if step_mode == "sampled" else "prop"
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
    if on:
        define_strategies(trial, study, on, schema if multitask else None, step_mode if multitask else None)
    return None


def define_strategies(trial: Any, study: Study, on: tuple[str, ...], schema: str | None, step_mode: str | None) -> None:
    """Issue 19's dimensions that ``study`` turns on (``on``); ``schema`` and ``step_mode`` are None
    for a single-task point, which searches only what single-task fine-tuning has too."""
    if schema == "bandit":
        trial.suggest_categorical("bandit_reward", list(study.bandit_reward))
        trial.suggest_float("bandit_lr", study.bandit_lr.low, study.bandit_lr.high, log=True)
        trial.suggest_float("bandit_explore", study.bandit_explore.low, study.bandit_explore.high)
    if step_mode is not None and "loss_weighting" in on:
        trial.suggest_categorical("loss_weighting", list(study.loss_weighting))
    # PCGrad acts where a step holds several tasks: every task per step, or (with no such mode to
    # choose) the grad_accum micro-batches of the study's base config
    if "gradients" in on and (step_mode == "all" or step_mode is not None and "all" not in study.step_modes):
        trial.suggest_categorical("gradients", list(study.gradients))
    if "layer_decay" in on:
        trial.suggest_float("layer_decay", study.layer_decay.low, study.layer_decay.high)  # type: ignore[union-attr]
    if "unfreeze" in on and trial.suggest_categorical("unfreeze", list(study.unfreeze)) == "step":
        trial.suggest_int("unfreeze_every", int(study.unfreeze_every.low), int(study.unfreeze_every.high), log=True)
