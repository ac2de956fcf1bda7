"""The trial object a Tune scheduler sees in a simulated study, and the controller view it asks.

Tune's own ``Trial`` needs an experiment spec, a placement group and a storage context; ASHA and the
FIFO scheduler read only ``trial_id``, ``config``, ``status`` and ``last_result`` of it, and of the
controller only ``get_trials()`` (``ray/tune/schedulers/async_hyperband.py`` and
``trial_scheduler.py``, checked against Ray 2.60). :class:`SimTrial` has exactly those, under the
same names and status strings (and the recent results Ray keeps, ``metric_n_steps``), plus the simulator's
own bookkeeping.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from search.infra.tune_status import PENDING
from trainables.trial import TrialConfig


@dataclass
class SimTrial:
    """One trial of a simulated study: its config (``{"seeds": [...], **suggestion}``, as Tune merges
    the param space with the searcher's suggestion), its state, and what it has trained so far."""

    trial_id: str
    config: dict[str, Any]
    number: int  # order of creation (0-based)
    status: str = PENDING
    last_result: dict[str, Any] = field(default_factory=dict)
    epoch: float = 0  # the last epoch reported (0.5: a screen point)
    trained: dict[int, float] = field(default_factory=dict)  # seed -> epochs trained (seeds may join late)
    seed_epochs: float = 0  # compute spent: one seed trained one epoch = 1
    started_at: float | None = None  # simulated seconds
    ended_at: float | None = None
    decisions: list[str] = field(default_factory=list)  # the scheduler's answer to each result
    checkpoint: dict[int, float] = field(default_factory=dict)  # ``trained`` as of its last result
    reported_at: float = 0  # simulated seconds of its last result
    # Ray's ``Trial.metric_n_steps``: each numeric result key's last 10 values, saved with the trial
    metric_n_steps: dict[str, dict[str, deque]] = field(default_factory=dict)

    def keep_recent(self, result: dict[str, Any]) -> None:
        """What Ray's ``_TrainingRunMetadata.update_metric`` keeps of a result (its last-10 window)."""
        for key, value in result.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.metric_n_steps.setdefault(key, {"10": deque(maxlen=10)})["10"].append(value)

    @functools.cached_property
    def trial_config(self) -> TrialConfig:
        """:attr:`config` read once as a :class:`~trainables.trial.TrialConfig` (schedulers read the dict)."""
        return TrialConfig.of_tune(self.config)

    @functools.cached_property
    def points(self) -> tuple[float, ...]:
        """Where it reports: every epoch's end, and a screen point inside the first (the study's ``--screen``)."""
        return self.trial_config.points()

    @property
    def next_point(self) -> float:
        """The point it reports next: the next epoch's end, or the screen point."""
        return next(p for p in self.points if p > self.epoch)

    @property
    def seeds(self) -> list[int]:
        return list(self.trial_config.seeds)

    def set_status(self, status: str) -> None:
        """What a scheduler calls to set a status Tune files the trial by (Ray's ``Trial.set_status``)."""
        self.status = status

    def train_to(self, epoch: float, seeds: list[int]) -> float:
        """Train ``seeds`` up to ``epoch``; the seed-epochs that cost (a seed that joins late trains
        from its first epoch: no seed's epoch is ever skipped or counted twice)."""
        cost = sum(epoch - self.trained.get(s, 0) for s in seeds)
        for s in seeds:
            self.trained[s] = epoch
        self.seed_epochs += cost
        return cost


class Controller:
    """The slice of Tune's ``TuneController`` a scheduler uses: every trial, in creation order, and, for a
    synchronous scheduler (``search.study.halving``), ``stop_trial`` and ``search_alg.searcher``."""

    def __init__(
        self, trials: list[SimTrial], stop: Callable[[SimTrial], None] | None = None, search_alg: Any = None
    ) -> None:
        self._trials = trials
        self._stop = stop
        self.search_alg = search_alg  # ``.searcher``: the limiter (what ``TuneController.search_alg`` holds)

    def get_trials(self) -> list[SimTrial]:
        return self._trials

    def stop_trial(self, trial: SimTrial) -> None:
        if self._stop is None:
            raise NotImplementedError("this simulated controller cannot stop a trial")
        self._stop(trial)
