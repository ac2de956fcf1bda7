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

The state (records, decisions, the cohort's ids, the trials paused at a rung) is plain data in ``__dict__``,
saved with the experiment in the limiter's state (:mod:`search.study.tune_compat`): a resumed study takes its
decisions back and pauses again the trials Tune restores as PENDING (:meth:`CohortHalving.requeued`).

A paused trial holds no slot: the scheduler tells the searcher's :class:`PauseAwareLimiter` (Ray's
``Searcher.on_pause``/``on_unpause``, the hooks HyperBandForBOHB calls), which counts only the
trials not paused against ``--max-concurrent``, and resumes a paused winner only while fewer than
``slots`` trials run.
"""

from __future__ import annotations

import math
from typing import Any

from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from search.infra.tune_status import ENDED, PAUSED, PENDING, RUNNING
from search.study.cohort_rule import Cohort, CohortRule, hedged_positions
from search.study.scheduler import ContenderKeepingASHA, family_of, is_baseline, side_of
from search.study.tune_compat import PauseAwareLimiter, SchedulerSavingLimiter, mark_to_save, searcher_of
from trainables.exposure import PRIMARY_PASSES


class CohortHalving(ContenderKeepingASHA):
    """``cohort``: how many of the study's first trials are its first points (decided together)."""

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
        self.exposure: dict[float, dict[str, float]] = {}  # rung -> trial id -> passes over the primary there
        self.failed: set[str] = set()  # cohort trials already let on once for a start at or below the floor
        self.members: list[str] = []  # the cohort's trial ids, in order of arrival
        self.records: dict[float, dict[str, float]] = {}  # rung -> trial id -> value (maximising sign)
        self.going_on: dict[float, set[str]] = {}  # rung -> cohort trials promoted past it (once decided)
        self.ended: set[str] = set()  # cohort trials stopped, errored or removed
        self.waiting: set[str] = set()  # cohort trials paused at a rung until its decision
        self.resume: set[str] = set()  # paused trials promoted: run them before new ones
        self.doomed: set[str] = set()  # paused trials stopped at a rung, once Tune has paused them
        self.families: dict[str, str] = {}  # trial id -> schema family
        self.baselines: set[str] = set()
        self.sides: dict[str, str | None] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Tune's tuner.pkl holds the scheduler as the study created it: one pickled before screens, exposure strata,
        # the hedge and the floor takes their neutral values (the rule it decided with)
        neutral = {"screen": None, "strata": 1, "hedged_at": frozenset(), "floor": None}
        neutral |= {"exposure": {}, "failed": set()}
        self.__dict__.update({**neutral, **state})

    @property
    def rungs(self) -> tuple[float, ...]:
        """The epochs it decides at: the screen point (where there is one), then every epoch from the grace
        period below the last."""
        screen = self.__dict__.get("screen")  # absent in a scheduler pickled before screens
        return ((screen,) if screen else ()) + tuple(float(e) for e in range(self.grace, self._max_t))

    def on_trial_add(self, tune_controller, trial) -> None:
        super().on_trial_add(tune_controller, trial)  # in a resumed study, the saved state taken back first
        known = trial.trial_id in self.families  # a trial of a resumed study, in the state it saved
        self.families[trial.trial_id] = family_of(trial.config)
        self.sides[trial.trial_id] = side_of(trial.config)
        if is_baseline(trial.config):
            self.baselines.add(trial.trial_id)
        if len(self.members) < self.cohort and trial.trial_id not in self.members:
            self.members.append(trial.trial_id)
        if known and self.__dict__.get("requeueing"):
            self.requeued(trial)
        elif known:
            self.retried(trial)
        elif trial.last_result and trial.trial_id in self.members:
            self.restored(tune_controller, trial)

    def state_taken_back(self) -> None:
        self.requeueing = True  # the trials Tune adds until its first step are the restored ones

    def retried(self, trial) -> None:
        """A trial Tune retries after a failure (``TuneController._requeue_trial``: ``on_trial_error``, then
        added again, filed PENDING): live again, it goes on from its last checkpoint and reports at its rung
        again (:meth:`on_trial_result` answers a decided rung with its decision)."""
        if trial.status not in ENDED:
            self.ended.discard(trial.trial_id)
            self.doomed.discard(trial.trial_id)

    def requeued(self, trial) -> None:
        """A trial Tune restored in a study resumed with its saved state (:mod:`search.study.tune_compat`). Ray
        re-adds every unfinished trial PENDING and starts every PENDING trial whatever the scheduler says
        (``TuneController._requeue_restored_trials``, ``_maybe_add_actors``): one the state holds paused (at
        a rung until its decision, promoted until a slot is free, or stopped and not yet stopped by Tune) is
        marked PAUSED again here, before Tune files the trial by its status (``add_trial``; a retried trial,
        filed already, goes through :meth:`retried`). The others ran: they go on from their last checkpoint."""
        trial_id = trial.trial_id
        if trial.status in ENDED:
            if trial_id in self.members and trial_id not in self.ended:  # ended as the state was saved
                self.ended.add(trial_id)
                self.waiting.discard(trial_id)
                self.resume.discard(trial_id)  # a rung that waited for it is decided at Tune's first step
            return
        if trial_id in self.members and trial_id in self.ended:
            self.doomed.add(trial_id)  # stopped by a decision, not yet by Tune
        if trial_id in self.waiting | self.resume | self.doomed:
            trial.set_status(PAUSED)

    def restored(self, tune_controller, trial) -> None:
        """A cohort trial of a resumed study saved before the limiter saved the scheduler's state, added again
        with its last result: the rungs are rebuilt from the trials: every rung below a trial's last epoch was
        decided and passed by it, an ended trial waits for nothing, and a live one's last result stands at its
        rung (a paused one waits there again, or goes on where its rung was decided: :meth:`release_late`)."""
        result = self.paired(trial, trial.last_result)
        epoch = float(result.get(self._time_attr, 0))
        for rung in self.rungs:
            if rung < epoch:
                self.going_on.setdefault(rung, set()).add(trial.trial_id)
        if trial.status in ENDED:
            self.ended.add(trial.trial_id)
        elif epoch in self.rungs and self._metric in result:
            value = self._metric_op * float(result[self._metric])
            self.records.setdefault(epoch, {})[trial.trial_id] = value
            self.record(epoch, self.sides.get(trial.trial_id), value)
            if trial.status == PAUSED:
                self.waiting.add(trial.trial_id)
                searcher_of(tune_controller).on_pause(trial.trial_id)
        self.decide_ready(tune_controller)

    # -- results --------------------------------------------------------------------
    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        result = self.paired(trial, result)
        self.resume.discard(trial.trial_id)  # it runs again
        if self._time_attr not in result or self._metric not in result:
            return TrialScheduler.CONTINUE
        epoch, value = float(result[self._time_attr]), self._metric_op * float(result[self._metric])
        if epoch >= self._max_t:
            return TrialScheduler.STOP
        if epoch not in self.rungs:
            return TrialScheduler.CONTINUE
        self.records.setdefault(epoch, {})[trial.trial_id] = value
        if PRIMARY_PASSES in result:
            self.exposure.setdefault(epoch, {})[trial.trial_id] = float(result[PRIMARY_PASSES])
        leads = self.record(epoch, self.sides.get(trial.trial_id), value)
        if trial.trial_id not in self.members:
            return self.asynchronous(trial.trial_id, epoch, value, leads)
        # a trial retried after a failure, or resumed from a checkpoint before its rung, reports there again
        if trial.trial_id in self.going_on.get(epoch, ()):
            self.waiting.discard(trial.trial_id)
            return TrialScheduler.CONTINUE
        if trial.trial_id in self.ended:
            return TrialScheduler.STOP
        self.waiting.add(trial.trial_id)
        self.decide_ready(tune_controller, current=trial.trial_id)
        if trial.trial_id in self.waiting:
            searcher_of(tune_controller).on_pause(trial.trial_id)
            return TrialScheduler.PAUSE
        return self.verdict(trial.trial_id, epoch)

    def asynchronous(self, trial_id: str, epoch: float, value: float, leads: bool) -> str:
        """ASHA's rule for a trial after the cohort: on if in the top 1/reduction_factor of the rung so far."""
        values = sorted(self.records[epoch].values(), reverse=True)
        cutoff = values[max(0, math.ceil(len(values) / self.factor) - 1)]
        kept = epoch == self.rungs[0] or self.keeps_leaders(epoch)
        family_leader = kept and self.leads_family(trial_id, epoch)
        if value >= cutoff or leads or family_leader or trial_id in self.baselines:
            return TrialScheduler.CONTINUE
        self._num_stopped += 1
        return TrialScheduler.STOP

    def verdict(self, trial_id: str, epoch: float) -> str:
        if trial_id in self.going_on.get(epoch, set()):
            return TrialScheduler.CONTINUE
        self.ended.add(trial_id)
        self._num_stopped += 1
        return TrialScheduler.STOP

    def decide_ready(self, tune_controller, current: str = "") -> None:
        """Decide every rung whose cohort is complete, lowest first (one decision can complete the next)."""
        for epoch in self.rungs:
            self.decide_if_complete(tune_controller, epoch, current)
            self.release_late(tune_controller, epoch)

    def release_late(self, tune_controller, epoch: float) -> None:
        """Trials waiting at a rung decided without them: only in a resumed study, where a trial Tune saved
        PAUSED at a rung that other trials had passed (promoted, or a loser not yet stopped: which one, the
        saved trials cannot tell). It goes on: a few epochs more rather than a good cell lost."""
        if epoch not in self.going_on:
            return
        for trial_id in sorted(self.waiting & set(self.records.get(epoch, {})) - self.going_on[epoch]):
            self.waiting.discard(trial_id)
            self.going_on[epoch].add(trial_id)
            self.resume.add(trial_id)
            searcher_of(tune_controller).on_unpause(trial_id)

    def decide_if_complete(self, tune_controller, epoch: float, current: str = "") -> None:
        """Once every live cohort trial promoted to ``epoch`` has reported there: decide, stop the waiting
        losers, mark the waiting winners to resume. ``current``: the trial reporting now (on_trial_result
        answers it). A loser still saving the checkpoint of its pause is stopped once Tune has paused it
        (:meth:`stop_doomed`)."""
        below = [r for r in self.rungs if r < epoch]
        if epoch in self.going_on or any(r not in self.going_on for r in below):
            return  # decided, or a rung below still waits
        if len(self.members) < self.cohort:
            return  # part of the cohort has not started yet
        expected = self.alive_at(epoch)
        if not expected:
            return
        recorded = {t for t in self.records.get(epoch, {}) if t in expected}
        if recorded != expected:
            return
        self.going_on[epoch] = self.promoted(epoch, sorted(recorded))
        for trial in list(tune_controller.get_trials()):
            trial_id = trial.trial_id
            if trial_id == current or trial_id not in self.waiting or trial_id not in recorded:
                continue
            self.waiting.discard(trial_id)
            searcher_of(tune_controller).on_unpause(trial_id)
            if trial_id in self.going_on[epoch]:
                self.resume.add(trial_id)
            else:
                self.ended.add(trial_id)
                self._num_stopped += 1
                self.doomed.add(trial_id)
        self.waiting -= recorded
        self.stop_doomed(tune_controller)

    def stop_doomed(self, tune_controller) -> None:
        """Stop the losers once Tune has paused them: a trial still saving the checkpoint of its PAUSE has a
        PAUSE queued in Tune that would run after a stop and leave it PAUSED in the saved experiment."""
        for trial in tune_controller.get_trials():
            if trial.trial_id in self.doomed and trial.status == PAUSED:
                self.doomed.discard(trial.trial_id)
                tune_controller.stop_trial(trial)
                mark_to_save(tune_controller, trial)  # stop_trial saves only a trial with an actor

    def alive_at(self, epoch: float) -> set[str]:
        """The cohort trials that should report at rung ``epoch``: not ended, promoted past every rung below."""
        alive = set(self.members) - self.ended
        for rung in self.rungs:
            if rung >= epoch:
                break
            alive &= self.going_on.get(rung, set())
        return alive

    def promoted(self, epoch: float, trial_ids: list[str]) -> set[str]:
        """Who goes on past rung ``epoch``: the cohort's rule (:mod:`search.study.cohort_rule`) on the trials'
        values, exposure and roles; a trial found at the floor is remembered (it goes on past one rung only)."""
        rule = self.rule()
        values = {t: self.records[epoch][t] for t in trial_ids}
        exposure = self.exposure.get(epoch, {})
        hedged = {t for i, t in enumerate(self.members) if i in self.hedged_at}
        cohort = Cohort(
            values=values,
            families={t: self.families[t] for t in trial_ids},
            sides={t: self.sides.get(t) for t in trial_ids},
            baselines=self.baselines & set(trial_ids),
            passes={t: exposure[t] for t in trial_ids if t in exposure},
            hedged=hedged,
            failed_before=set(self.failed),
        )
        keep = rule.promote(epoch, cohort)
        self.failed |= rule.at_floor(epoch, values)
        return keep

    def rule(self) -> CohortRule:
        """The decision rule at this study's rungs, the floor in the maximising sign."""
        floor = None if self.floor is None else self._metric_op * self.floor
        return CohortRule(self.factor, self.screen, self.grace, self._max_t, self.strata, floor)

    def keeps_leaders(self, epoch: float) -> bool:
        """Whether each family's leader goes on past whole-epoch rung ``epoch`` (not the screen)."""
        return self.rule().keeps_leaders(epoch)

    def leads_family(self, trial_id: str, epoch: float) -> bool:
        family, values = self.families.get(trial_id), self.records[epoch]
        return all(values[trial_id] >= v for t, v in values.items() if self.families.get(t) == family)

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
        if trial.trial_id not in self.members or trial.trial_id in self.ended:
            return
        self.ended.add(trial.trial_id)
        self.doomed.discard(trial.trial_id)
        if trial.trial_id in self.waiting:
            searcher_of(tune_controller).on_unpause(trial.trial_id)
        self.waiting.discard(trial.trial_id)
        self.resume.discard(trial.trial_id)
        self.decide_ready(tune_controller)

    def choose_trial_to_run(self, tune_controller) -> Any:
        """Promoted paused trials first (the screen's survivors) while fewer than ``slots`` run, then new ones
        (the limiter bounds how many exist); never one waiting for its rung's decision."""
        if self.__dict__.pop("requeueing", False):  # Tune's first step: every restored trial is added
            self.decide_ready(tune_controller)  # a rung that waited for a trial ended as the state was saved
        self.stop_doomed(tune_controller)
        trials = tune_controller.get_trials()
        running = sum(t.status == RUNNING for t in trials)
        for trial in trials if running < self.slots else ():
            if trial.status == PAUSED and trial.trial_id in self.resume:
                return trial  # stays marked until it reports again: choose must be idempotent
        for trial in trials:
            if trial.status == PENDING:
                return trial
        return None

    def debug_string(self) -> str:
        decided = ", ".join(f"epoch {e:g}: {len(on)} go on" for e, on in sorted(self.going_on.items()))
        return f"cohort halving of {len(self.members)} first points ({decided or 'no rung decided yet'})"


def limiter_of(searcher: Searcher, scheduler: TrialScheduler, max_concurrent: int) -> SchedulerSavingLimiter:
    """The searcher wrapped to run at most ``max_concurrent`` trials at once (what ``max_concurrent_trials``
    does), paused trials not counted under cohort halving; it saves the scheduler's state with the
    experiment (:mod:`search.study.tune_compat`)."""
    limiter = PauseAwareLimiter if isinstance(scheduler, CohortHalving) else SchedulerSavingLimiter
    return limiter(searcher, max_concurrent=max_concurrent)
