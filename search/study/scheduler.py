"""ASHA that never stops the single-task baseline.

Every report measures trials against the baseline, so it must reach the last
epoch. Stock ASHA can stop it at a rung when trials that got there first set a
high cutoff (likely with several trials running at once). The baseline's results
still enter the rungs, so it keeps setting the bar for everyone else.
"""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import ASHAScheduler, TrialScheduler


def is_baseline(config: dict[str, Any]) -> bool:
    return bool({**config, **config.get("trial", {})}.get("baseline", False))


class BaselineKeepingASHA(ASHAScheduler):
    """Reads ASHA's private ``_time_attr``, ``_max_t`` and ``_num_stopped`` (no public getters in
    Ray 2.60); a stop it overrides is taken back out of ASHA's count of stopped trials."""

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        action = super().on_trial_result(tune_controller, trial, result)
        last_epoch = result.get(self._time_attr, 0) >= self._max_t
        if action == TrialScheduler.STOP and not last_epoch and is_baseline(trial.config):
            self._num_stopped -= 1
            return TrialScheduler.CONTINUE
        return action
