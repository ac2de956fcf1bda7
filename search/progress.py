"""One line per finished trial, with its canonical config and score."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ray.tune import Callback

from search.outcome import COMPLETED, FAILED, outcome
from search.tracking import error_reason


class TrialLines(Callback):
    def __init__(self, objective: str, max_epochs: int, stream: TextIO | None = None) -> None:
        self.objective, self.max_epochs = objective, max_epochs
        self.stream = stream

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "stream": None}

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        result = trial.last_result or {}
        status = outcome(trial, self.max_epochs)
        if status == FAILED:
            self.on_trial_error(iteration, trials, trial)
            return
        status = status if status == COMPLETED else f"pruned@{int(result.get('epoch', 0))}"
        mean = result.get(self.objective)
        std = result.get(self.objective[: -len("/mean")] + "/std") if self.objective.endswith("/mean") else None
        score = f"{mean:.4f}" + (f" ± {std:.4f}" if std is not None else "") if mean is not None else "n/a"
        self._print(f"{tag(trial)} {status:<10} objective={score}  {describe(trial)}")

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._print(f"{tag(trial)} {'failed':<10} {describe(trial)}: {error_reason(trial)}")


def tag(trial) -> str:
    """``[t03]``: the trial's Optuna number, as in its run name."""
    number = trial.config.get("number")
    return f"[t{number:02d}]" if number is not None else f"[{trial.trial_id}]"


def describe(trial) -> str:
    """``t03 sst2+pos square lr=3e-05 wu=0.1``: the run name and what it leaves out."""
    train = trial.config.get("train", {})
    extra = " ".join(f"{short}={train[key]:.2g}" for key, short in (("lr", "lr"), ("warmup", "wu")) if key in train)
    return f"{trial.config.get('label', trial.trial_id)} {extra}".strip()
