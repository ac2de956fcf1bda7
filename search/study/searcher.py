"""OptunaSearch that trains each canonical config once and tells Optuna about pruning.

Two gaps of the stock ``OptunaSearch`` are closed here:
- a suggestion whose canonical config was already suggested is answered from
  the earlier trial's result (now, or when it finishes) instead of training again;
- a trial stopped early by ASHA is told to Optuna as PRUNED, not COMPLETE with
  a low-budget value (stock OptunaSearch reports whatever the last result was).
"""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from typing import Any

from optuna.trial import TrialState
from ray.tune.search import Searcher
from ray.tune.search.optuna import OptunaSearch

from search.tracking.outcome import COMPLETED, FAILED, PRUNED, outcome_of
from spaces import Study, apply_choices, baseline_choices, canonical, canonical_key, define_space, run_name
from spaces.canonical import flatten
from trainables.config import TrainConfig
from trainables.results import DIVERGED
from trainables.trial import TrialConfig

logger = logging.getLogger(__name__)


MAX_DUPLICATES = 200  # consecutive repeats before the space is taken as exhausted


EXHAUSTED = "exhausted"  # Optuna study user attribute: the searcher ran out of new configs


def optuna_step(result: dict) -> int:
    """A result's step in Optuna, as in MLflow (``search.tracking.tracker``): its whole epochs, so a screen point
    inside the first epoch is step 0 and epoch E step E (Tune's ``training_iteration`` counts reports instead)."""
    return int(float(result["epoch"])) if "epoch" in result else int(result["training_iteration"])


class CanonicalOptunaSearch(OptunaSearch):
    """Uses ``OptunaSearch``'s private ``_ot_study``, ``_ot_trials`` (Tune trial id -> Optuna trial)
    and ``_completed_trials``: no public API maps Tune's trials to Optuna's (checked against Ray
    2.60). This class's own state (``first_trial``, ``outcome``, ``waiting``, ...) survives
    ``Tuner.restore`` with no code here because ``OptunaSearch.save`` pickles the whole ``__dict__``
    and ``restore`` updates it (tests/search/test_searcher.py checks that)."""

    def __init__(self, study: Study, base: TrainConfig, max_epochs: int, **kwargs: Any) -> None:
        self.study, self.base, self.max_epochs = study, base, max_epochs
        self.first_trial: dict[str, str] = {}  # canonical key -> trial that trains it
        self.key_of: dict[str, str] = {}  # trial id -> canonical key
        self.history: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.outcome: dict[str, tuple[TrialState, float | None]] = {}
        self.waiting: dict[str, list[str]] = defaultdict(list)  # trial -> duplicate Optuna trials
        self.duplicates = 0
        self.exhausted = False  # set when the space yields only repeats: the study is done
        self.baseline_key = canonical_key(canonical(apply_choices(base, baseline_choices(study, base), study)))
        super().__init__(space=functools.partial(define_space, study=study), **kwargs)

    # -- suggestions ----------------------------------------------------------
    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        for attempt in range(MAX_DUPLICATES):
            choices = super().suggest(trial_id)
            if choices is None or choices == Searcher.FINISHED:
                return choices
            config = canonical(apply_choices(self.base, choices, self.study))
            key = canonical_key(config)
            if key not in self.first_trial:
                self.first_trial[key], self.key_of[trial_id] = trial_id, key
                ot_trial = self._ot_trials[trial_id]
                name = run_name(ot_trial.number, config, key == self.baseline_key)
                ot_trial.set_user_attr("run_name", name)
                ot_trial.set_user_attr("canonical_key", key)
                return TrialConfig(
                    train=config,
                    key=key,
                    label=name,
                    number=ot_trial.number,
                    choices=flatten(choices),
                    baseline=key == self.baseline_key,
                ).to_tune()
            # a repeat: park its Optuna trial under another id and answer it from the first
            duplicate = f"{trial_id}~dup{attempt}"
            self._ot_trials[duplicate] = self._ot_trials.pop(trial_id)
            self.duplicates += 1
            original = self.first_trial[key]
            logger.info("config %s repeats trial %s: answered from its result, not trained again", key, original)
            if original in self.outcome:
                self._answer(duplicate, original)
            else:
                self.waiting[original].append(duplicate)
        logger.warning("%d suggestions in a row repeated earlier configs: space exhausted", MAX_DUPLICATES)
        self.exhausted = True
        self._ot_study.set_user_attr(EXHAUSTED, True)  # readable by a driver that holds no searcher
        return Searcher.FINISHED

    def _answer(self, duplicate: str, original: str) -> None:
        ot_trial = self._ot_trials[duplicate]
        for step, value in self.history[original]:
            ot_trial.report(value, step)
        ot_trial.set_user_attr("duplicate_of", self.key_of[original])
        state, value = self.outcome[original]
        self._ot_study.tell(ot_trial, value if state == TrialState.COMPLETE else None, state=state)
        self._completed_trials.add(duplicate)

    # -- restore --------------------------------------------------------------
    def restore(self, checkpoint_path: str) -> None:
        """Reload the searcher state Tune saved; fail Optuna trials asked for after that save.

        A driver killed between two saves leaves such trials RUNNING in the Optuna storage
        forever, while the restored searcher asks for new ones in their place.
        """
        super().restore(checkpoint_path)
        # the opposite gap: trials told to Optuna after the save, which Tune will run again;
        # their Optuna trials are finished and refuse any further report
        stored_trials = {t.number: t for t in self._ot_study.get_trials(deepcopy=False)}
        for trial_id, ot_trial in self._ot_trials.items():
            stored = stored_trials[ot_trial.number]
            if stored.state.is_finished() and trial_id not in self._completed_trials:
                self._completed_trials.add(trial_id)
                self.outcome[trial_id] = (stored.state, stored.value)
        known = {t.number for t in self._ot_trials.values()}
        for trial in self._ot_study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            if trial.number not in known:
                self._ot_study.tell(trial.number, state=TrialState.FAIL)
                logger.info("optuna trial %d was asked for after the last saved state: marked FAIL", trial.number)

    # -- results --------------------------------------------------------------
    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id in self._completed_trials:
            return  # a rerun of a trial Optuna already knows the end of
        self.report(trial_id, result)

    def report(self, trial_id: str, result: dict | None) -> None:
        """The result's objective as an Optuna intermediate value at :func:`optuna_step`, once a step. Tune gives
        the searcher no result its scheduler stops a trial on (``TuneController._process_trial_result``), so
        :meth:`on_trial_complete` reports that one: a trial stopped at its first rung shows its value there."""
        if not result or result.get(DIVERGED) or self.metric not in result:
            return  # a diverged run's NaN objective is no intermediate value; on_trial_complete fails it
        step, history = optuna_step(result), self.history[trial_id]
        if history and history[-1][0] >= step:
            return
        history.append((step, float(result[self.metric])))
        self._ot_trials[trial_id].report(float(result[self.metric]), step)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return
        if not error:
            self.report(trial_id, result)
        ot_trial = self._ot_trials[trial_id]
        ot_trial.set_user_attr("canonical_key", self.key_of.get(trial_id, ""))
        status = outcome_of(result, self.max_epochs, errored=error)
        state = {COMPLETED: TrialState.COMPLETE, PRUNED: TrialState.PRUNED, FAILED: TrialState.FAIL}[status]
        value = float(result[self.metric]) if status == COMPLETED else None  # type: ignore[index]
        self.outcome[trial_id] = (state, value)
        try:
            self._ot_study.tell(ot_trial, value, state=state)
        except Exception as exc:  # e.g. a NaN objective: Optuna refuses it, the trial stays failed
            logger.warning("optuna refused trial %s: %s", trial_id, exc)
            self._ot_study.tell(ot_trial, None, state=TrialState.FAIL)
            self.outcome[trial_id] = (TrialState.FAIL, None)
        self._completed_trials.add(trial_id)
        for duplicate in self.waiting.pop(trial_id, []):
            self._answer(duplicate, trial_id)
