"""An in-process, event-driven study on a simulated clock, in the style of Syne Tune's simulator backend.

It drives the study's real searcher and real scheduler through the calls Ray Tune's controller makes
(``ray/tune/execution/tune_controller.py``, Ray 2.60), without Ray's actors, so a study of hundreds of
trials takes seconds of CPU instead of seconds per trial:

- a free slot gets a trial the way Tune's loop does: a new suggestion while no trial is pending
  (``searcher.suggest`` through Tune's ``ConcurrencyLimiter``, then ``scheduler.on_trial_add``), then
  ``scheduler.choose_trial_to_run`` picks a PENDING or PAUSED trial to start;
- each epoch's result arrives at ``clock + seed-epochs x seconds_per_epoch``; ``scheduler.on_trial_result``
  decides; on CONTINUE or PAUSE the searcher gets ``on_trial_result`` (Tune withholds a stopping
  result from it); on STOP, or after the last epoch, ``scheduler.on_trial_complete`` then
  ``searcher.on_trial_complete`` with the trial's last result (Tune's ``stop_trial`` order);
- results at the same simulated time are handled in the order their epochs started;
- a trial whose last epoch gets CONTINUE ends as if stopped (Tune would first pass its last result to
  the scheduler once more, as the function returned; ASHA stops every trial at ``max_t`` before that).

With ``interrupt_after`` the study is interrupted after that many results and resumed as ``Tuner.restore``
does it (:meth:`Backend.resume`): what a resumed study decides can be checked at every interrupt point.

Two things can be plugged in without touching the loop: the scheduler (any ``TrialScheduler``, e.g. a
subclass of ``ContenderKeepingASHA`` that pauses a trial at a rung to add seeds), and ``seed_count``
(trial, epoch) -> how many of the trial's seeds report that epoch. A seed that joins late trains from
its first epoch (:meth:`SimTrial.train_to`), and that catch-up is charged to the epoch that adds it.
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from search.infra.tune_status import PAUSED, PENDING, RUNNING, TERMINATED
from search.simulation.results import epoch_result
from search.simulation.trial import Controller, SimTrial
from search.simulation.truth.model import Truth
from search.study.halving import limiter_of
from trainables.config import TrainConfig
from trainables.fidelity import epoch_value

SeedCount = Callable[[SimTrial, float], int]  # (trial, epoch) -> how many of its seeds report that epoch


def all_seeds(trial: SimTrial, epoch: float) -> int:
    """Every trial trains all its seeds every epoch (what ``trainables.tune`` does today)."""
    return len(trial.seeds)


@dataclass(frozen=True)
class Event:
    """One thing that happened, at simulated ``time`` with ``spent`` seed-epochs reported so far."""

    time: float
    spent: float
    trial_id: str
    kind: str  # "start", "result" (with the scheduler's decision) or "end"
    epoch: float  # an epoch's end, or a screen point inside the first
    decision: str = ""


@dataclass
class Backend:
    """One simulated study: ``run()`` drives ``searcher`` and ``scheduler`` until ``trials`` trials
    have ended (or the searcher says FINISHED) and returns them in creation order.

    ``searcher`` and ``scheduler`` must already know the metric and mode (as after Tune's
    ``set_search_properties``). ``seconds_per_epoch``: simulated seconds of one seed-epoch.
    """

    searcher: Searcher
    scheduler: TrialScheduler
    truth: Truth
    objective: str
    max_epochs: int
    seeds: list[int]
    trials: int
    slots: int
    seconds_per_epoch: float = 60.0
    seed_count: SeedCount = all_seeds
    interrupt_after: int | None = None  # results handled before a Ctrl-C and a --resume
    # ``--resume --trials N`` (N trials in total), in turn: at the interrupt if there is one, then each after the
    # study ended (``search.study.extend`` raises the saved total and clears Tune's FINISHED, as here)
    extensions: tuple[int, ...] = ()
    # results between the state the limiter saved last and the interrupt: a hard kill between Tune's write of the
    # trials and its write of the searcher's state (``TuneController.save_to_dir``, in that order) resumes the
    # trials as they were and the scheduler as it was this many results before
    state_lag: int = 0
    # result count -> how many running trials fail right after it (1: a trial; more: a node lost with its
    # trials), each retried from its last checkpoint as Tune does with retries left (``_requeue_trial``)
    fail_after: dict[int, int] = field(default_factory=dict)
    param_space: dict = field(default_factory=dict)  # what every trial's config holds beside the suggestion
    clock: float = 0.0
    spent: float = 0.0  # seed-epochs reported so far
    events: list[Event] = field(default_factory=list)
    _all: list[SimTrial] = field(default_factory=list)
    _queue: list[tuple[float, int, str, float, list[int], float]] = field(default_factory=list)
    _configs: dict[str, TrainConfig] = field(default_factory=dict)
    _finished: bool = False

    def __post_init__(self) -> None:
        # what search.study.tuner wraps the Searcher in: Ray's ConcurrencyLimiter, or its pause-aware subclass
        self._limiter = limiter_of(self.searcher, self.scheduler, self.slots)
        # Tune's list of trials, apart from ``_all`` (creation order): a retry or a resume reorders it
        self._listed: list[SimTrial] = []
        self._controller = Controller(
            self._listed, stop=self.stop_paused, search_alg=SimpleNamespace(searcher=self._limiter)
        )
        self._by_id: dict[str, SimTrial] = {}
        self._live: list[SimTrial] = list(self._all)  # the trials not TERMINATED, pruned at each fill
        self._sequence = 0
        self._created = copy.deepcopy(self.scheduler)  # what tuner.pkl holds: the scheduler before any trial

    def run(self) -> list[SimTrial]:
        extensions = list(self.extensions)
        self.fill()
        results = 0
        while self._queue or extensions:
            if not self._queue:  # the study ended: the next --resume --trials N
                self.resume(extensions.pop(0))
                self.fill()
                continue
            time, _, trial_id, epoch, seeds, cost = heapq.heappop(self._queue)
            self.clock = time
            self.report(self._by_id[trial_id], epoch, seeds, cost)
            results += 1
            if self.interrupt_after is not None and results == self.interrupt_after - self.state_lag:
                self._saved = self._limiter.get_state()
            if results == self.interrupt_after:
                self.resume(extensions.pop(0) if extensions else None)
            self.fail(self.fail_after.get(results, 0))
            self.fill()
        return list(self._all)

    def resume(self, trials: int | None = None) -> None:
        """Ctrl-C now, then ``--resume``, as Ray 2.60 does it: the epochs in flight are lost (a trial goes on from
        its last result's checkpoint); the limiter comes back from the state it saved (``get_state``, the
        scheduler's inside), the scheduler as tuner.pkl holds it (as created), the searcher as it was; every
        unfinished trial is added again PENDING, the latest result first (``_requeue_restored_trials``).
        ``trials``: ``--resume --trials N``, N trials in total where that is more."""
        if trials is not None and trials > self.trials:
            self.trials, self._finished = trials, False
        saved = self.__dict__.pop("_saved", None) if self.state_lag else None
        saved = saved if saved is not None else self._limiter.get_state()
        self._queue.clear()
        for trial in self._all:
            trial.trained = dict(trial.checkpoint)
        self.scheduler = copy.deepcopy(self._created)
        self._limiter = limiter_of(self.searcher, self.scheduler, self.slots)
        self._limiter.set_state(saved)
        order = sorted(self._all, key=lambda t: t.reported_at, reverse=True)
        self._listed = []
        self._controller = Controller(
            self._listed, stop=self.stop_paused, search_alg=SimpleNamespace(searcher=self._limiter)
        )
        self._live = [t for t in self._all if t.status != TERMINATED]
        for trial in order:
            if trial.status != TERMINATED:
                trial.status = PENDING
            self._listed.append(trial)
            self.scheduler.on_trial_add(self._controller, trial)

    def fail(self, count: int) -> None:
        """The first ``count`` running trials fail now, as a lost node's do: the epochs in flight are lost, and
        Tune retries each (``TuneController._requeue_trial``: the scheduler's ``on_trial_error``, PENDING, moved
        to the end of Tune's list, the scheduler's ``on_trial_add``; the searcher is not told), to go on from
        its last checkpoint."""
        failing = [t for t in self._listed if t.status == RUNNING][:count] if count else []
        if not failing:
            return
        ids = {t.trial_id for t in failing}
        self._queue = [entry for entry in self._queue if entry[2] not in ids]
        heapq.heapify(self._queue)
        for trial in failing:
            self.scheduler.on_trial_error(self._controller, trial)
            trial.status, trial.trained = PENDING, dict(trial.checkpoint)
            self._listed.remove(trial)
            self._listed.append(trial)
            self.events.append(Event(self.clock, self.spent, trial.trial_id, "failed", trial.epoch))
            self.scheduler.on_trial_add(self._controller, trial)

    # -- slots ----------------------------------------------------------------------
    def fill(self) -> None:
        """Start trials while a slot is free: Tune's add-then-choose step."""
        self._live = [t for t in self._live if t.status != TERMINATED]  # what may run: not every trial
        while sum(t.status == RUNNING for t in self._live) < self.slots:
            if not any(t.status == PENDING for t in self._live):
                self.add()
            trial = self.scheduler.choose_trial_to_run(self._controller)
            if trial is None:  # Tune starts a PENDING trial whatever the scheduler chose (``_maybe_add_actors``)
                trial = next((t for t in self._listed if t.status == PENDING), None)
            if trial is None:
                return
            self.start(trial)

    def add(self) -> None:
        if self._finished or len(self._all) >= self.trials:
            return
        trial_id = f"sim_{len(self._all):05d}"
        suggestion = self._limiter.suggest(trial_id)
        if suggestion is None:  # the limiter's answer while every slot's trial is live
            return
        if suggestion == Searcher.FINISHED:
            self._finished = True
            return
        # Tune merges the suggestion over the param space (the seeds, the seed schedule, the screen point)
        trial = SimTrial(trial_id, {**self.param_space, "seeds": list(self.seeds), **suggestion}, number=len(self._all))
        self._configs[trial_id] = trial.trial_config.training()
        self._all.append(trial)
        self._live.append(trial)
        self._listed.append(trial)
        self._by_id[trial_id] = trial
        self.scheduler.on_trial_add(self._controller, trial)

    def start(self, trial: SimTrial) -> None:
        trial.status = RUNNING
        if trial.started_at is None:
            trial.started_at = self.clock
        self.events.append(Event(self.clock, self.spent, trial.trial_id, "start", trial.next_point))
        self.next_epoch(trial)

    def next_epoch(self, trial: SimTrial) -> None:
        epoch = trial.next_point
        seeds = trial.seeds[: self.seed_count(trial, epoch)]
        cost = trial.train_to(epoch, seeds)
        self._sequence += 1
        entry = (self.clock + cost * self.seconds_per_epoch, self._sequence, trial.trial_id, epoch, seeds, cost)
        heapq.heappush(self._queue, entry)

    # -- results --------------------------------------------------------------------
    def report(self, trial: SimTrial, epoch: float, seeds: list[int], cost: float) -> None:
        """One point's result through the scheduler and the searcher, as Tune's controller passes it."""
        self.spent += cost
        key = trial.trial_config.key
        config, iteration = self._configs[trial.trial_id], len(trial.decisions) + 1  # Tune's count of its results
        result = epoch_result(
            self.truth, config, key, seeds, epoch, self.objective, trial.trial_id, iteration, trial.points
        )
        decision = self.scheduler.on_trial_result(self._controller, trial, result)
        trial.decisions.append(decision)
        self.events.append(Event(self.clock, self.spent, trial.trial_id, "result", epoch, decision))
        if decision == TrialScheduler.STOP:
            result["done"] = True
        else:
            self._limiter.on_trial_result(trial.trial_id, result)
        trial.last_result, trial.epoch = result, epoch_value(epoch)  # 3, not 3.0; 0.25 at a screen point
        trial.keep_recent(result)
        trial.checkpoint, trial.reported_at = dict(trial.trained), self.clock
        if decision == TrialScheduler.STOP or epoch >= self.max_epochs:
            self.end(trial)
        elif decision == TrialScheduler.PAUSE:
            trial.status = PAUSED  # its slot is free; choose_trial_to_run may resume it later
        else:
            self.next_epoch(trial)

    def stop_paused(self, trial: SimTrial) -> None:
        """Tune's ``stop_trial`` on a PAUSED trial: the scheduler's ``on_trial_remove``, the searcher's
        ``on_trial_complete`` with no result (``tune_controller.py``, Ray 2.60)."""
        if trial.status != PAUSED:
            raise ValueError(f"trial {trial.trial_id} is {trial.status}: only a paused trial is stopped this way")
        self.scheduler.on_trial_remove(self._controller, trial)
        self._limiter.on_trial_complete(trial.trial_id)
        trial.status, trial.ended_at = TERMINATED, self.clock
        self.events.append(Event(self.clock, self.spent, trial.trial_id, "end", trial.epoch))

    def end(self, trial: SimTrial) -> None:
        self.scheduler.on_trial_complete(self._controller, trial, trial.last_result)
        self._limiter.on_trial_complete(trial.trial_id, result=trial.last_result)
        trial.status, trial.ended_at = TERMINATED, self.clock
        self.events.append(Event(self.clock, self.spent, trial.trial_id, "end", trial.epoch))
