"""ASHA that keeps both sides of the final comparison alive.

The study's answer compares the best completed multitask trial with the best completed
single-task trial (search.answer.contenders.choose), so both sides must reach the last epoch:

- The single-task baseline is never stopped: every report measures trials against it. Stock
  ASHA can stop it at a rung when trials that got there first set a high bar (likely with
  several trials running at once). Its results still enter the rungs, so it keeps setting the
  bar for everyone else.
- A trial that leads its side (multitask or single-task) at a rung, among the results recorded
  there so far, is promoted even below the rung's cutoff. Without this a small study can end
  with every multitask trial stopped at the first rung (measured: the default smoke run,
  3 of 3) and no verdict. The cost is small: a new leader is a record among the side's results
  at that rung, and the expected number of records among n exchangeable values is
  1 + 1/2 + ... + 1/n (about ln n + 0.58: 5 of 100, 7.5 of 1,000).

With a seed schedule (seeds as a fidelity, ``--first-rung-seeds``; :mod:`trainables.fidelity`)
trials may reach a rung on fewer seeds than the baseline trains; the comparison there stays paired:
the value recorded for a result holding more seeds than the schedule has at that epoch (the
baseline's) is its mean over the schedule's first seeds, the seeds every trial at that rung has.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from search.infra.ray_compat import adopt_saved_state, drop_missing_checkpoint
from search.infra.tune_status import ENDED, PAUSED, PENDING
from trainables.fidelity import SeedSchedule, prefix_mean
from trainables.results import per_seed
from trainables.trial import NESTED, TrialConfig

logger = logging.getLogger(__name__)

MULTITASK, SINGLE_TASK = "multitask", "single-task"


def flat(config: dict[str, Any]) -> dict[str, Any]:
    """A trial's config with what ``tune.grid_search`` over whole configs nests under ``trial`` lifted."""
    return {**config, **config.get(NESTED, {})}


def is_baseline(config: dict[str, Any]) -> bool:
    return TrialConfig.of_tune(config).baseline


def side_of(config: dict[str, Any]) -> str | None:
    """Which side of the final comparison a trial's config is on; None where its tasks are not known."""
    trial = TrialConfig.of_tune(config)
    if trial.baseline:
        return SINGLE_TASK
    if trial.train is None:
        return None
    return MULTITASK if len(trial.train.tasks) > 1 else SINGLE_TASK


class ContenderKeepingASHA(ASHAScheduler):
    """Reads ASHA's private ``_time_attr``, ``_max_t``, ``_metric_op`` and ``_num_stopped`` (no
    public getters in Ray 2.60); a stop it overrides is taken back out of ASHA's count of stopped
    trials. ``leaders`` ((epoch, side) -> best score so far, in ASHA's maximising sign) is saved with
    the rest of ``__dict__`` (ASHA's rungs too) in the limiter's state at every experiment checkpoint,
    and a resumed study takes it back (:mod:`search.infra.ray_compat`: Ray saves no scheduler).

    ``schedule``: the study's seed schedule, or None (every trial trains every seed: ASHA as
    before).
    """

    def __init__(self, *args: Any, schedule: SeedSchedule | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schedule = schedule
        self.leaders: dict[tuple[float, str], float] = {}  # (epoch, side) -> best score so far (maximising sign)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != LIVE}  # Tune's trials: never pickled with it

    def live(self) -> dict[str, Any]:
        """Tune's trials that had not ended at the last scan, in Tune's order (its list, restricted to them): what
        :meth:`choose_trial_to_run` scans instead of every trial of the study (Ray's FIFO scan of
        ``get_trials()`` at every free slot costs the study's size: 1.8 ms a call at 6,000 trials). Each trial
        Tune adds, or adds again (a retry moves it to the end of Tune's list; a resume adds every trial in its
        new order), comes through :meth:`on_trial_add`; an ended one is dropped at the next scan."""
        return self.__dict__.setdefault(LIVE, {})

    def live_trials(self) -> list[Any]:
        """:meth:`live`, the trials that ended since the last scan dropped."""
        live = self.live()
        for trial_id in [i for i, t in live.items() if t.status in ENDED]:
            del live[trial_id]
        return list(live.values())

    def choose_trial_to_run(self, tune_controller) -> Any:
        """Ray's FIFO choice (the first PENDING trial in Tune's order, else the first PAUSED one) over the live
        trials."""
        trials = self.live_trials()
        return next((t for t in trials if t.status == PENDING), None) or next(
            (t for t in trials if t.status == PAUSED), None
        )

    def on_trial_add(self, tune_controller, trial) -> None:
        live = self.live()
        live.pop(trial.trial_id, None)
        live[trial.trial_id] = trial
        if adopt_saved_state(self, tune_controller):
            self.state_taken_back()
        if drop_missing_checkpoint(trial):
            logger.warning(
                "trial %s: its last checkpoint is gone from the storage (Tune's saved state was older than its "
                "checkpoints): it trains again from its first epoch",
                trial.trial_id,
            )
        super().on_trial_add(tune_controller, trial)

    def saved_state(self) -> dict[str, Any]:
        """What the limiter saves with the experiment (:mod:`search.infra.ray_compat`): ASHA's fields as they
        are (Ray has no public state for them), less Tune's live trials."""
        return copy.deepcopy(self.__getstate__())

    def take_back(self, saved: dict[str, Any]) -> None:
        """A resumed study's saved state (:meth:`saved_state`)."""
        self.__dict__.update(saved)

    def state_taken_back(self) -> None:
        """A resumed study's scheduler has just taken back what it had decided before the interrupt; Tune
        adds the restored trials next, before its first step."""

    def paired(self, trial, result: dict) -> dict:
        """``result`` with the objective over the seeds the schedule has at its epoch, where it holds
        more (the baseline's); unchanged otherwise. A copy: the tracker logs the result as reported."""
        schedule = self.schedule
        if schedule is None or self._time_attr not in result or self._metric not in result:
            return result
        seeds = list(TrialConfig.of_tune(trial.config).seeds)
        k = schedule.at(float(result[self._time_attr]))
        if len(per_seed(result, self._metric.removesuffix("/mean"))) <= k:
            return result
        value = prefix_mean(result, self._metric, seeds[:k])
        return result if value is None else {**result, self._metric: value}

    def on_trial_complete(self, tune_controller, trial, result: dict) -> None:
        super().on_trial_complete(tune_controller, trial, self.paired(trial, result))

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        result = self.paired(trial, result)
        action = super().on_trial_result(tune_controller, trial, result)
        if self._time_attr not in result or self._metric not in result:
            return action
        epoch, score = result[self._time_attr], self._metric_op * result[self._metric]
        leads = self.record(epoch, side_of(trial.config), score)
        last_epoch = epoch >= self._max_t
        if action == TrialScheduler.STOP and not last_epoch and (is_baseline(trial.config) or leads):
            self._num_stopped -= 1
            return TrialScheduler.CONTINUE
        return action

    def record(self, epoch: float, side: str | None, score: float) -> bool:
        """Record a result; whether it leads its side at this epoch so far (ties lead)."""
        leaders = self.leaders
        if side is None or score != score:  # unknown side, or NaN
            return False
        best = leaders.get((epoch, side))
        if best is None or score >= best:
            leaders[(epoch, side)] = score
            return True
        return False


LIVE = "_live"  # the scheduler's field of Tune's live trials (ContenderKeepingASHA.live): neither saved nor pickled


def family_of(config: dict[str, Any]) -> str:
    """A trial's schema family: its schema for a multitask config, ``single-task`` otherwise (and for a
    config whose tasks are not known)."""
    if side_of(config) != MULTITASK:
        return SINGLE_TASK
    return TrialConfig.of_tune(config).training().sampling.schema


class FamilyASHA(ContenderKeepingASHA):
    """ASHA whose rungs compare a trial only with trials of its own schema family (stratified rungs).

    Schemas that change what is trained when (anneal, round robin) start slower than the static
    ones, so at an early rung stock ASHA stops them for a deficit they would have made up
    (benchmarks/results/HISTORY.md, "learning curves"; docs/search-strategies.md). Here each family has
    its own bracket, a copy of ASHA's own made before any result: within a family the cutoff is
    ASHA's (the top 1/reduction_factor go on), and the first trial of a family at a rung always
    goes on. The baseline and each side's leader are kept as in :class:`ContenderKeepingASHA`.
    Reads ASHA's private ``_brackets`` and ``_trial_info`` (Ray 2.60: no public per-trial bracket).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.template = copy.deepcopy(self._brackets[0])
        self.families: dict[str, Any] = {}

    def on_trial_add(self, tune_controller, trial) -> None:
        super().on_trial_add(tune_controller, trial)  # checks metric and mode
        family = family_of(trial.config)
        if family not in self.families:
            self.families[family] = copy.deepcopy(self.template)
        self._trial_info[trial.trial_id] = self.families[family]
