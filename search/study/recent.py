"""A sampler that models only the most recent finished trials, so that TPE's modelling, most of a suggestion's cost,
stops growing with the study.

Optuna's TPE reads every finished trial at every suggestion: splitting them into good and bad, building both
densities, and (multivariate, grouped, with the constant liar) reading each trial's parameters once per group.
Its cost per suggestion grows with the trials (in process, 256 slots, the default search: 39 ms at 1,000 trials,
136 ms at 3,000), so a study's total grows with the square. :class:`RecentTrialsSampler` hands the sampler a view
of the study in which only the last ``window`` finished trials (by number), and every unfinished one, exist.
Until a study has finished ``window`` trials the view is the whole study and the sampler suggests exactly what it
would alone. The view is read once per suggestion and kept for all of its calls; what still grows with the study
is listing its trials (Optuna's, and one pass here to cut the window): measured with the default search at 256
slots, a suggestion took 28.5 ms at 1,000 trials and 45.0 ms at 10,000 (``benchmarks/README.md``, driver_scale).

What it costs: TPE forgets the points tried before the window, the early exploration among them. Optuna offers no
such bound (its docs recommend TPE up to about 1,000 trials and other samplers beyond, none of which handles this
conditional, categorical space).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

# The default window: above the largest study the search-quality suite measures (215 trials), so every figure
# there is TPE's own; at 1,000 trials of the default search it selected as well as TPE over every trial (10 paired
# studies: +0.10 ± 0.22 pp true score) for 19% less driver CPU (benchmarks/README.md, driver_scale)
RECENT_TRIALS = 256


class RecentStudy:
    """``study`` as a sampler sees it while it suggests one trial: of the trials it asks for (by state), the
    finished ones only the last ``window`` by number, every unfinished one; everything else the study's own.
    What it read is kept for that suggestion (the trials do not change during it), so the reading, which costs
    the whole study, is done once per state set, not once per parameter group."""

    def __init__(self, study: Study, window: int) -> None:
        self._study, self._window = study, window
        self._read: dict[tuple[Any, bool], list[FrozenTrial]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def _get_trials(
        self, deepcopy: bool = True, states: Container[TrialState] | None = None, use_cache: bool = False
    ) -> list[FrozenTrial]:
        if deepcopy:
            return self._recent(self._study._get_trials(deepcopy=True, states=states, use_cache=use_cache))
        key = (None if states is None else tuple(sorted(states, key=lambda s: s.value)), use_cache)
        if key not in self._read:
            self._read[key] = self._recent(self._study._get_trials(deepcopy=False, states=states, use_cache=use_cache))
        return self._read[key]

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

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_view": None}  # a view holds the study: not saved with the searcher

    def __str__(self) -> str:
        return f"{type(self.sampler).__name__} over the last {self.window} finished trials"

    def view(self, study: Study, trial: FrozenTrial) -> RecentStudy:
        """The study as the sampler sees it for ``trial``: one view for all of that trial's sampling calls."""
        if self._view is None or self._view[0] != trial.number or self._view[1]._study is not study:
            self._view = (trial.number, RecentStudy(study, self.window))
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
