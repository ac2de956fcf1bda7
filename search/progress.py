"""One line per finished trial, with its canonical config and score."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ray.tune import Callback

from search.tracking import error_reason
from trainables.tune import DIVERGED


class TrialLines(Callback):
    def __init__(self, objective: str, max_epochs: int, stream: TextIO | None = None) -> None:
        self.objective, self.max_epochs = objective, max_epochs
        self.stream = stream
        self.finished = 0

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "stream": None}

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        result = trial.last_result or {}
        if result.get(DIVERGED):
            self.on_trial_error(iteration, trials, trial)
            return
        epochs = int(result.get("epoch", 0))
        status = "completed" if epochs >= self.max_epochs else f"pruned@{epochs}"
        mean = result.get(self.objective)
        std = result.get(self.objective[: -len("/mean")] + "/std") if self.objective.endswith("/mean") else None
        score = f"{mean:.4f}" + (f" ± {std:.4f}" if std is not None else "") if mean is not None else "n/a"
        self.finished += 1
        self._print(f"[trial {self.finished}] {status:<12} {self.objective}={score}  {trial.config.get('label', '')}")

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self.finished += 1
        self._print(f"[trial {self.finished}] failed       {trial.config.get('label', '')}: {error_reason(trial)}")
