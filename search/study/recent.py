"""A sampler that models only the most recent finished trials, so that TPE's modelling, most of a suggestion's cost,
stops growing with the study.

Optuna's TPE reads every finished trial at every suggestion: splitting them into good and bad, building both
densities, and (multivariate, grouped, with the constant liar) reading each trial's parameters once per group.
Its cost per suggestion grows with the trials (in process, 256 slots, the default search: 39 ms at 1,000 trials,
136 ms at 3,000), so a study's total grows with the square. :class:`RecentTrialsSampler` hands the sampler a view
of the study in which only the last ``window`` finished trials (by number), and every unfinished one, exist.
Until a study has finished ``window`` trials the view is the whole study and the sampler suggests exactly what it
would alone. The view is read once per suggestion and kept for all of its calls. On an in-memory storage (the
simulator's, and any study Ray's ``OptunaSearch`` keeps in memory) :class:`RecentIndex` keeps the window up to date
from the trials created and finished since the last read, so a read costs the window and the unfinished trials,
not the study; on another storage the view lists the study's trials once per suggestion and cuts the window.

What it costs: TPE forgets the points tried before the window, the early exploration among them. Optuna offers no
such bound (its docs recommend TPE up to about 1,000 trials and other samplers beyond, none of which handles this
conditional, categorical space).
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Container, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.storages import InMemoryStorage
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

# The default window: above the largest study the search-quality suite measures (215 trials), so every figure
# there is TPE's own; at 1,000 trials of the default search it selected as well as TPE over every trial (10 paired
# studies: +0.10 ± 0.22 pp true score) for 19% less driver CPU (benchmarks/README.md, driver_scale)
RECENT_TRIALS = 256


class RecentIndex:
    """The last ``window`` finished trials (by number) and every unfinished one of an in-memory study, kept up to
    date between reads: the trials created since the last read join the unfinished, and the unfinished that have
    finished since join the window (a heap of the largest numbers). A read costs the new trials, the unfinished
    ones and the window, not the study. In-memory only: there ``get_trial`` is a lookup, elsewhere a query."""

    def __init__(self, window: int) -> None:
        self.window, self.storage, self.study_id, self.seen = window, None, None, 0
        self.unfinished: dict[int, int] = {}  # number -> trial id, of the trials not finished at the last read
        self.finished: list[tuple[int, int]] = []  # a min-heap of (number, trial id): the window

    def read(self, study: Study) -> list[FrozenTrial]:
        storage, study_id = study._storage, study._study_id
        if storage is not self.storage or study_id != self.study_id:  # another study: start over
            self.__init__(self.window)  # type: ignore[misc]
            self.storage, self.study_id = storage, study_id
        while True:  # the trials created since the last read, by number
            try:
                self.unfinished[self.seen] = storage.get_trial_id_from_study_id_trial_number(study_id, self.seen)
            except KeyError:
                break
            self.seen += 1
        trials = []
        for number, trial_id in list(self.unfinished.items()):
            trial = storage.get_trial(trial_id)
            if trial.state.is_finished():
                del self.unfinished[number]
                heapq.heappush(self.finished, (number, trial_id))
                if len(self.finished) > self.window:
                    heapq.heappop(self.finished)  # the oldest finished trial leaves the window
            else:
                trials.append(trial)
        trials += [storage.get_trial(trial_id) for _, trial_id in self.finished]
        return sorted(trials, key=lambda t: t.number)


class RecentStudy:
    """``study`` as a sampler sees it while it suggests one trial: of its trials only the last ``window`` finished
    ones by number and every unfinished one (a read by state filters those); everything else the study's own.
    What it read is kept for that suggestion (the trials do not change during it), so the reading is done once
    per suggestion, not once per parameter group. ``index``: the sampler's :class:`RecentIndex`, for a study on
    an in-memory storage; without one the view lists the whole study once and cuts the window."""

    def __init__(self, study: Study, window: int, index: RecentIndex | None = None) -> None:
        self._study, self._window, self._index = study, window, index
        self._view: list[FrozenTrial] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def _get_trials(
        self, deepcopy: bool = True, states: Container[TrialState] | None = None, use_cache: bool = False
    ) -> list[FrozenTrial]:
        if self._view is None:
            if self._index is not None:
                self._view = self._index.read(self._study)
            else:
                self._view = self._recent(self._study._get_trials(deepcopy=False, use_cache=use_cache))
        trials = self._view if states is None else [t for t in self._view if t.state in states]
        return copy.deepcopy(trials) if deepcopy else trials

    def get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        return self._get_trials(deepcopy=deepcopy, states=states, use_cache=False)

    @property
    def trials(self) -> list[FrozenTrial]:
        return self.get_trials()

    def _recent(self, trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
        # Optuna's storages list a study's trials by number: the last ``window`` finished ones are the last listed
        finished = [t.state.is_finished() for t in trials]  # one pass: this runs over the whole study
        count = finished.count(True)
        if count <= self._window:
            return list(trials)
        cut = [i for i, done in enumerate(finished) if done][count - self._window]  # the first finished one kept
        return [t for t, done in zip(trials[:cut], finished[:cut]) if not done] + list(trials[cut:])


class RecentTrialsSampler(optuna.samplers.BaseSampler):
    """``sampler`` over the last ``window`` finished trials of the study (module docstring)."""

    def __init__(self, sampler: optuna.samplers.BaseSampler, window: int = RECENT_TRIALS) -> None:
        if window < 1:
            raise ValueError(f"a sampler's window of recent trials must be 1 or more, got {window}")
        self.sampler, self.window = sampler, window
        self._view: tuple[int, RecentStudy] | None = None
        self._index: RecentIndex | None = None

    def __getstate__(self) -> dict[str, Any]:
        # a view holds the study, the index its trials' ids: neither saved with the searcher (rebuilt on a read)
        return {**self.__dict__, "_view": None, "_index": None}

    def __str__(self) -> str:
        return f"{type(self.sampler).__name__} over the last {self.window} finished trials"

    def view(self, study: Study, trial: FrozenTrial) -> RecentStudy:
        """The study as the sampler sees it for ``trial``: one view for all of that trial's sampling calls."""
        if self._view is None or self._view[0] != trial.number or self._view[1]._study is not study:
            in_memory = isinstance(study._storage, InMemoryStorage)
            if in_memory and self.__dict__.get("_index") is None:
                self._index = RecentIndex(self.window)
            self._view = (trial.number, RecentStudy(study, self.window, self._index if in_memory else None))
        return self._view[1]

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.sampler.infer_relative_search_space(self.view(study, trial), trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self.sampler.sample_relative(self.view(study, trial), trial, search_space)

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return self.sampler.sample_independent(self.view(study, trial), trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._view = None  # a new trial: the study has changed since the last view
        self.sampler.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        self.sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.sampler.reseed_rng()
