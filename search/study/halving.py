"""Synchronous successive halving of a study's first points (the cell screen), family leaders kept.

ASHA decides on a trial the moment it reaches a rung, against whatever reached the rung before it:
with the thesis grid's 43 cells as the first points and a few slots, the first trials to arrive
meet an almost empty rung and go on, and a cell's fate depends on when it ran. Here the first
points are a cohort: a cohort trial that reaches a rung pauses (Tune checkpoints it and frees its
slot) until every live cohort trial has reached that rung; then one decision for all of them:

- the top ``ceil(n / reduction_factor)`` go on (n: the cohort trials at the rung); at a screen point
  inside the first epoch, the top ``1 / reduction_factor`` of each schema family instead: that early,
  configs sit near the majority rate and the slow starters further below, so families are not compared;
- at the first epoch rung and every one below the last, the leader of each schema family goes on too:
  schemas that change what is trained when start slower, and a family meets the others only at the
  last rung, where the finalists are chosen (``trainables.fidelity.family_leaders_kept``;
  docs/search-strategies.md);
- the baseline always goes on, and each side's leader (``ContenderKeepingASHA``'s rule): the
  final comparison needs both sides complete.

Every epoch below the last is a rung from the grace period on, and with ``screen`` the point after that
fraction of the first epoch is the first rung (the screen: every cell compared for a fraction of an
epoch's compute; the trainables report there and checkpoint inside the epoch). Trials after the cohort (the
sampler's, once the screen is spent) are decided as ASHA does, against every result recorded at
the rung, with the same reduction factor. With a seed schedule (``--first-rung-seeds``) a trial
adds seeds as it passes rungs, and each rung compares means over the seeds every trial there has.

The rungs' state (records, decisions, the cohort's ids, the trials paused at a rung) is
:class:`search.study.cohort_rungs.CohortState`, versioned plain data, saved with the experiment in the limiter's
state (:mod:`search.infra.ray_compat`, :meth:`CohortHalving.saved_state`): a resumed study takes its decisions
back and pauses again the trials Tune restores as PENDING (:meth:`CohortHalving.requeued`). What is decided
lives in :mod:`search.study.cohort_rungs` (no Ray); this module is its Tune adapter.

A paused trial holds no slot: the scheduler tells the searcher's :class:`PauseAwareLimiter` (Ray's
``Searcher.on_pause``/``on_unpause``, the hooks HyperBandForBOHB calls), which counts only the
trials not paused against ``--max-concurrent``, and resumes a paused winner only while fewer than
``slots`` trials run.
"""

from __future__ import annotations

import copy
from typing import Any

from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from search.infra.ray_compat import PauseAwareLimiter, SchedulerSavingLimiter, mark_to_save, searcher_of
from search.infra.tune_status import ENDED, PAUSED, PENDING, RUNNING, TERMINATED
from search.study.cohort_rule import CohortRule, hedged_positions
from search.study.cohort_rungs import CONTINUE, PAUSE, STOP, CohortRungs, CohortSettings, CohortState
from search.study.scheduler import ContenderKeepingASHA, family_of, is_baseline, side_of
from trainables.exposure import PRIMARY_PASSES


class CohortHalving(ContenderKeepingASHA):
    """The Tune adapter of :class:`search.study.cohort_rungs.CohortRungs`: ``cohort``: how many of the study's
    first trials are its first points (decided together). The rungs' state is ``state`` (versioned plain data,
    saved with the experiment through :meth:`saved_state`); this class turns Tune's calls into it and carries
    out its answers (pause, stop, resume, the searcher told of every pause)."""

    def __init__(
        self,
        *,
        grace_period: int = 1,
        reduction_factor: float = 4,
        cohort: int = 0,
        slots: int = 1,
        screen: float | None = None,
        strata: int = 1,
        hedge: int = 0,
        hedge_seed: int = 0,
        floor: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(grace_period=grace_period, reduction_factor=reduction_factor, **kwargs)
        self.grace, self.factor, self.cohort, self.slots = grace_period, reduction_factor, cohort, slots
        self.screen = screen  # the screen point inside the first epoch (a fraction), the first rung; None: none
        self.strata = strata  # exposure strata of the ranking (search.study.cohort_rule); 1: none
        self.hedged_at = hedged_positions(cohort, hedge, hedge_seed)  # cohort positions past every rung but the last
        self.floor = floor  # the objective's majority rate (the metric's own sign); None: unknown
        self.state = CohortState()

    def saved_state(self) -> dict[str, Any]:
        """What the limiter saves with the experiment: ASHA's own fields as they are, the cohort's versioned."""
        asha = copy.deepcopy({k: v for k, v in self.__getstate__().items() if k != "state"})
        return {**asha, COHORT_STATE: self.state.to_state()}

    def take_back(self, saved: dict[str, Any]) -> None:
        """A resumed study's saved state (:meth:`saved_state`)."""
        self.__dict__.update({k: v for k, v in saved.items() if k != COHORT_STATE})
        self.state = CohortState.from_state(saved[COHORT_STATE])

    def rungs_of(self) -> CohortRungs:
        """The pure rungs over this study's state, with the rule at its current metric sign."""
        return CohortRungs(CohortSettings(self.rule(), self.cohort, self.hedged_at), self.state)

    @property
    def rungs(self) -> tuple[float, ...]:
        """The epochs it decides at: the screen point (where there is one), then every epoch from the grace
        period below the last."""
        return self.rungs_of().rungs

    def on_trial_add(self, tune_controller, trial) -> None:
        super().on_trial_add(tune_controller, trial)  # live; in a resumed study, the saved state taken back first
        known = self.rungs_of().add(
            trial.trial_id, family_of(trial.config), side_of(trial.config), is_baseline(trial.config)
        )
        if self.__dict__.get("requeueing"):
            self.requeued(trial)
        elif known:
            self.retried(trial)

    def state_taken_back(self) -> None:
        self.requeueing = True  # the trials Tune adds until its first step are the restored ones

    def retried(self, trial) -> None:
        """A trial Tune retries after a failure (``TuneController._requeue_trial``: ``on_trial_error``, then
        added again, filed PENDING): live again, it goes on from its last checkpoint and reports at its rung
        again (:meth:`on_trial_result` answers a decided rung with its decision)."""
        if trial.status not in ENDED:
            self.state.ended.discard(trial.trial_id)
            self.state.doomed.discard(trial.trial_id)

    def requeued(self, trial) -> None:
        """A trial Tune restored in a study resumed with its saved state (:mod:`search.infra.ray_compat`). Ray
        re-adds every unfinished trial PENDING and starts every PENDING trial whatever the scheduler says
        (``TuneController._requeue_restored_trials``, ``_maybe_add_actors``): one the state holds paused (at
        a rung until its decision, promoted until a slot is free, or stopped and not yet stopped by Tune) is
        marked PAUSED again here, before Tune files the trial by its status (``add_trial``; a retried trial,
        filed already, goes through :meth:`retried`). The others ran: they go on from their last checkpoint."""
        trial_id, s = trial.trial_id, self.state
        if trial.status in ENDED:
            if trial_id in s.members and trial_id not in s.ended:  # ended as the state was saved
                s.ended.add(trial_id)
                s.waiting.discard(trial_id)
                s.resume.discard(trial_id)  # a rung that waited for it is decided at Tune's first step
                if trial.status == TERMINATED:  # stopped, not failed: by a decision, where not at its last epoch
                    self.rungs_of().stopped_unseen(trial_id, self.recent(trial))
            return
        self.reconcile(trial)
        if trial_id in s.members and trial_id in s.ended:
            s.doomed.add(trial_id)  # stopped by a decision, not yet by Tune
        if trial_id in s.waiting | s.resume | s.doomed:
            trial.set_status(PAUSED)

    def reconcile(self, trial) -> None:
        """A restored trial's recent results, where the saved state may be older than the trials Tune saved
        (:meth:`search.study.cohort_rungs.CohortRungs.reconcile`; a trial after the cohort: recorded at its
        rungs for ASHA's rule). Ray keeps each metric's last 10 values with the trial (``metric_n_steps``), the
        epoch's and the objective's among them; with a seed schedule the recorded value is the objective as
        reported, not the schedule's paired mean."""
        rungs, trial_id = self.rungs_of(), trial.trial_id
        recent = self.recent(trial)
        if trial_id in self.state.members:
            recorded = rungs.reconcile(trial_id, recent)
        else:
            recorded = rungs.record_unseen(trial_id, recent)
        values = dict((e, v) for e, v, _ in recent)
        for epoch in recorded:
            self.record(epoch, self.state.sides.get(trial_id), values[epoch])

    def recent(self, trial) -> list[tuple[float, float, float | None]]:
        """``(epoch, value in the maximising sign, passes)`` of the trial's recent results, oldest first: Ray's
        last-10 window where the epoch's and the objective's line up, else the last result alone."""
        window = getattr(trial, "metric_n_steps", None) or {}
        epochs = list(window.get(self._time_attr, {}).get("10", ()))
        values = list(window.get(self._metric, {}).get("10", ()))
        passes = list(window.get(PRIMARY_PASSES, {}).get("10", ()))
        last = self.paired(trial, trial.last_result or {})
        if self._time_attr not in last or self._metric not in last:
            return []
        if not epochs or len(epochs) != len(values) or float(epochs[-1]) != float(last[self._time_attr]):
            epochs, values = [last[self._time_attr]], [last[self._metric]]
            passes = [last[PRIMARY_PASSES]] if PRIMARY_PASSES in last else []
        values[-1] = last[self._metric]  # the last one paired as on_trial_result saw it
        passes = passes if len(passes) == len(epochs) else [None] * len(epochs)
        op = self._metric_op
        return [(float(e), op * float(v), None if p is None else float(p)) for e, v, p in zip(epochs, values, passes)]

    # -- results --------------------------------------------------------------------
    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        result = self.paired(trial, result)
        self.state.resume.discard(trial.trial_id)  # it runs again
        if self._time_attr not in result or self._metric not in result:
            return TrialScheduler.CONTINUE
        epoch, value = float(result[self._time_attr]), self._metric_op * float(result[self._metric])
        if epoch >= self._max_t:
            return TrialScheduler.STOP
        rungs = self.rungs_of()
        if epoch not in rungs.rungs:
            return TrialScheduler.CONTINUE
        passes = float(result[PRIMARY_PASSES]) if PRIMARY_PASSES in result else None
        rungs.record(trial.trial_id, epoch, value, passes)
        leads = self.record(epoch, self.state.sides.get(trial.trial_id), value)
        if trial.trial_id not in self.state.members:
            if rungs.asynchronous(trial.trial_id, epoch, value, leads):
                return TrialScheduler.CONTINUE
            self._num_stopped += 1
            return TrialScheduler.STOP
        answer = rungs.at_rung(trial.trial_id, epoch)
        if answer is not None:
            return ACTIONS[answer]
        self.decide_ready(tune_controller, current=trial.trial_id)
        if trial.trial_id in self.state.waiting:
            searcher_of(tune_controller).on_pause(trial.trial_id)
            return TrialScheduler.PAUSE
        answer = rungs.verdict(trial.trial_id, epoch)
        self._num_stopped += answer == STOP
        return ACTIONS[answer]

    def decide_ready(self, tune_controller, current: str = "") -> None:
        """Decide every rung whose cohort is complete, lowest first (one decision can complete the next); stop
        the waiting losers, mark the waiting winners to resume, let on the trials a rung decided without."""
        rungs, searcher = self.rungs_of(), searcher_of(tune_controller)
        for epoch in rungs.rungs:
            recorded = rungs.decide(epoch)
            if recorded is not None:
                resumed, stopped = rungs.settle(epoch, recorded, current)
                for trial_id in sorted(resumed | stopped):
                    searcher.on_unpause(trial_id)
                self._num_stopped += len(stopped)
                self.stop_doomed(tune_controller)
            for trial_id in sorted(rungs.late(epoch)):
                searcher.on_unpause(trial_id)

    def stop_doomed(self, tune_controller) -> None:
        """Stop the losers once Tune has paused them: a trial still saving the checkpoint of its PAUSE has a
        PAUSE queued in Tune that would run after a stop and leave it PAUSED in the saved experiment."""
        if not self.state.doomed:
            return
        for trial in list(self.live().values()):
            if trial.trial_id in self.state.doomed and trial.status == PAUSED:
                self.state.doomed.discard(trial.trial_id)
                tune_controller.stop_trial(trial)
                mark_to_save(tune_controller, trial)  # stop_trial saves only a trial with an actor

    def rule(self) -> CohortRule:
        """The decision rule at this study's rungs, the floor in the maximising sign."""
        floor = None if self.floor is None or self._metric_op is None else self._metric_op * self.floor
        return CohortRule(self.factor, self.screen, self.grace, self._max_t, self.strata, floor)

    def keeps_leaders(self, epoch: float) -> bool:
        """Whether each family's leader goes on past whole-epoch rung ``epoch`` (not the screen)."""
        return self.rule().keeps_leaders(epoch)

    # -- ends and order -------------------------------------------------------------
    def on_trial_complete(self, tune_controller, trial, result: dict) -> None:
        self.forget(tune_controller, trial)
        super().on_trial_complete(tune_controller, trial, result)

    def on_trial_error(self, tune_controller, trial) -> None:
        self.forget(tune_controller, trial)
        super().on_trial_error(tune_controller, trial)

    def on_trial_remove(self, tune_controller, trial) -> None:
        self.forget(tune_controller, trial)
        super().on_trial_remove(tune_controller, trial)

    def forget(self, tune_controller, trial) -> None:
        """A cohort trial that ended: no rung waits for it any more."""
        was_waiting = self.rungs_of().end(trial.trial_id)
        if was_waiting is None:
            return
        if was_waiting:
            searcher_of(tune_controller).on_unpause(trial.trial_id)
        self.decide_ready(tune_controller)

    def choose_trial_to_run(self, tune_controller) -> Any:
        """Promoted paused trials first (the screen's survivors) while fewer than ``slots`` run, then new ones
        (the limiter bounds how many exist); never one waiting for its rung's decision."""
        if self.__dict__.pop("requeueing", False):  # Tune's first step: every restored trial is added
            self.decide_ready(tune_controller)  # a rung that waited for a trial ended as the state was saved
        self.stop_doomed(tune_controller)
        trials = self.live_trials()
        running = sum(t.status == RUNNING for t in trials)
        for trial in trials if running < self.slots else ():
            if trial.status == PAUSED and trial.trial_id in self.state.resume:
                return trial  # stays marked until it reports again: choose must be idempotent
        for trial in trials:
            if trial.status == PENDING:
                return trial
        return None

    def debug_string(self) -> str:
        return self.rungs_of().describe()


COHORT_STATE = "cohort_state"  # the key of the cohort's versioned state in the saved scheduler state
ACTIONS = {CONTINUE: TrialScheduler.CONTINUE, PAUSE: TrialScheduler.PAUSE, STOP: TrialScheduler.STOP}


def limiter_of(searcher: Searcher, scheduler: TrialScheduler, max_concurrent: int) -> SchedulerSavingLimiter:
    """The searcher wrapped to run at most ``max_concurrent`` trials at once (what ``max_concurrent_trials``
    does), paused trials not counted under cohort halving; it saves the scheduler's state with the
    experiment (:mod:`search.infra.ray_compat`)."""
    limiter = PauseAwareLimiter if isinstance(scheduler, CohortHalving) else SchedulerSavingLimiter
    return limiter(searcher, max_concurrent=max_concurrent)
