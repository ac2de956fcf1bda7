"""A study's own progress on the console: one line per finished trial, with its config and score,
and a status line a minute: trials done / running / left, seed-epochs spent, an ETA from the
measured epoch times and the scheduler's expected remaining work, and the best completed trial.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ray.tune import Callback, ProgressReporter

from search.infra.tune_status import PAUSED, RUNNING
from search.tracking.outcome import COMPLETED, FAILED, PRUNED, TUNE_ENDED, outcome
from search.tracking.tracker import error_reason
from trainables.fidelity import SEED_COUNT, SeedSchedule
from trainables.trial import TrialConfig


class ConsoleLines(Callback):
    """A Tune callback that prints the study's own lines (``stream``: stdout unless given; not pickled)."""

    def __init__(self, objective: str, max_epochs: int, stream: TextIO | None = None) -> None:
        self.objective, self.max_epochs = objective, max_epochs
        self.stream = stream

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "stream": None}

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)


class TrialLines(ConsoleLines):
    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        result = trial.last_result or {}
        status = outcome(trial, self.max_epochs)
        if status == FAILED:
            self.on_trial_error(iteration, trials, trial)
            return
        status = status if status == COMPLETED else f"pruned@{float(result.get('epoch', 0)):g}"  # @0.25: at the screen
        self._print(f"{tag(trial)} {status:<10} objective={score_text(result, self.objective)}  {trial_text(trial)}")

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._print(f"{tag(trial)} {'failed':<10} {trial_text(trial)}: {error_reason(trial)}")


class FinalLines(ConsoleLines):
    """finalize's runs on the console: a line as each ends (a final run reports once, at its last epoch; the
    workers' own step lines stay off it). Its ETA is :class:`FinalStatus`'s."""

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        epoch = result.get("epoch")
        if epoch is None or float(epoch) != int(float(epoch)):
            return  # a screen point inside the first epoch: not a final run's
        label = TrialConfig.of_tune(trial.config).label or trial.trial_id
        self._print(f"{label}: epoch {float(epoch):g} of {self.max_epochs}, dev {score_text(result, self.objective)}")


def final_eta(trials: Sequence[Any], elapsed_s: float) -> str:
    """``; ETA ~3 min``: the final runs still training take as long as the longest that ended (they started
    together: every arm at once), less the time gone; none ended: nothing to tell."""
    ended = [float((t.last_result or {}).get("time_total_s", 0.0)) for t in trials if t.status in TUNE_ENDED]
    if not ended or all(t.status in TUNE_ENDED for t in trials):
        return ""
    return f"; ETA ~{duration(max(0.0, max(ended) - elapsed_s))} (as the runs that ended took)"


def tag(trial) -> str:
    """``[t03]``: the trial's Optuna number, as in its run name."""
    number = TrialConfig.of_tune(trial.config).number
    return f"[t{number:02d}]" if number is not None else f"[{trial.trial_id}]"


def trial_text(trial) -> str:
    """``t03 sst2+pos square lr=3e-05 wu=0.1``: the run name and what it leaves out."""
    config = TrialConfig.of_tune(trial.config)
    train = config.train
    extra = "" if train is None else f"lr={train.lr:.2g} wu={train.warmup:.2g}"
    return f"{config.label or trial.trial_id} {extra}".strip()


def score_text(result: dict[str, Any], objective: str) -> str:
    """``0.6296 ± 0.0020``: the objective's seed mean and, where there is one, its std; under a seed
    schedule (``--first-rung-seeds``) the seeds it is over: ``0.6123 (1 seed)``."""
    mean = result.get(objective)
    std = result.get(objective[: -len("/mean")] + "/std") if objective.endswith("/mean") else None
    if mean is None:
        return "n/a"
    seeds = result.get(SEED_COUNT)
    over = f" ({seeds} seed{'s' if seeds != 1 else ''})" if seeds is not None else ""
    return f"{mean:.4f}" + (f" ± {std:.4f}" if std is not None else "") + over


@dataclass(frozen=True)
class Work:
    """What the scheduler still expects a study to train, in seed-epochs (an epoch of one seed): ``seeds`` per
    trial (K), the last epoch ``max_t``, the rung epochs below it and the odds a trial goes on at each
    (``passes``; none given: ASHA's 1/reduction_factor). Results are taken as exchangeable; the baseline and
    each side's leader, which ASHA keeps, make the real figure somewhat larger."""

    seeds: int
    max_t: int
    rungs: tuple[float, ...] = ()  # a screen point inside the first epoch is one
    reduction_factor: int = 2
    passes: tuple[float, ...] = ()  # per rung; cohort halving's from its expected course (search.study.tuner)
    fidelity: Mapping[str, Any] | None = None  # the study's seed schedule, for trials not created yet

    def passing(self, index: int) -> float:
        passes = self.passes
        return passes[index] if index < len(passes) else 1 / self.reduction_factor

    def schedule(self, config: Mapping[str, Any]) -> SeedSchedule:
        """The trial's seeds per epoch (``--first-rung-seeds``; else all K throughout)."""
        trial = TrialConfig.of_tune(config)
        fidelity = trial.fidelity if config else self.fidelity  # {}: a trial not created yet
        return SeedSchedule.of(fidelity, trial.baseline, self.seeds)

    def expected(self, schedule: SeedSchedule, epoch: float = 0, decided: bool = True) -> float:
        """Seed-epochs a trial that reported ``epoch`` and still runs is expected to train in all; ``decided``:
        whether it went on past a rung at ``epoch`` (False: paused there until the rung's decision)."""
        total, alive = 0.0, 1.0
        for index, rung in enumerate(self.rungs):
            if rung > epoch or (rung == epoch and not decided):  # a decision still ahead of it
                total += alive * (1 - self.passing(index)) * schedule.seed_epochs(rung)  # stopped there
                alive *= self.passing(index)
        return total + alive * schedule.seed_epochs(self.max_t)


def work_text(
    trials: Sequence[Any], running: Sequence[Any], left: int, work: Work, forecast: Any = None, elapsed_s: float = 0
) -> str:
    """``14 seed-epochs spent, ~9 to go: ETA 3 min (12.5 s per seed-epoch, 2 at a time), the answer in ~11 min``.
    A paused trial waits for its rung's decision while a trial still alive has not reached that rung (cohort
    halving decides a rung when every live trial has reported there); after it, a paused trial was promoted and
    waits for a slot. The answer's ETA (with a ``forecast``): the search's, then finalize and the report as
    forecast, at the pace the search's seed-epochs have shown against the forecast's."""
    spent, seconds = shown(trials, work)
    live = [t for t in trials if t in running or t.status == PAUSED]
    lowest = min((float((t.last_result or {}).get("epoch", 0)) for t in live), default=0.0) if not left else 0.0
    to_go = left * work.expected(work.schedule({}))
    for t in live:
        schedule, epoch = work.schedule(t.config), float((t.last_result or {}).get("epoch", 0))
        decided = t.status != PAUSED or epoch <= lowest
        to_go += work.expected(schedule, epoch, decided=decided) - schedule.seed_epochs(epoch)
    text = f"{spent:g} seed-epochs spent, ~{to_go:.0f} to go"
    if not spent or not seconds:
        answer = f", the answer in ~{duration(max(0.0, forecast.rest_s - elapsed_s))}" if forecast else ""
        return text + ": ETA after the first epoch" + answer
    per, slots = seconds / spent, max(1, len(running))
    eta = to_go * per / slots
    text += f": ETA {duration(eta)} ({per:.1f} s per seed-epoch, {slots} at a time)"
    if forecast is None:
        return text
    after = (forecast.final_s + forecast.report_s) * forecast.pace_ratio(per)
    return text + f", the answer in ~{duration(eta + after)}"


def shown(trials: Sequence[Any], work: Work) -> tuple[float, float]:
    """The seed-epochs the trials have reported and the seconds they took."""
    spent = seconds = 0.0
    for t in trials:
        result = t.last_result or {}
        spent += work.schedule(t.config).seed_epochs(float(result.get("epoch", 0)))
        seconds += float(result.get("time_total_s", 0.0))
    return spent, seconds


def seconds_per_seed_epoch(trials: Sequence[Any], work: Work) -> float | None:
    """The pace the trials have shown: their seconds over the seed-epochs they reported (None: none yet)."""
    spent, seconds = shown(trials, work)
    return seconds / spent if spent and seconds else None


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.4 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


class StudyStatus(ProgressReporter):
    """Tune's progress report as one line a minute (and at the end). Replaces Tune's CLIReporter,
    whose table repeated every 30 s under a "Current best trial" that ranks last results of any
    epoch: a trial ASHA stopped at epoch 1 against completed ones."""

    def __init__(
        self,
        objective: str,
        max_epochs: int,
        every_s: float = 60.0,
        stream: TextIO | None = None,
        work: Work | None = None,
        forecast: Any = None,
    ) -> None:
        self.objective, self.max_epochs, self.every_s = objective, max_epochs, every_s
        self.stream, self.work, self.forecast = stream, work, forecast
        self.mode, self.total, self.start, self.last = "max", None, time.time(), time.time()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "stream": None}

    def setup(self, start_time=None, total_samples=None, metric=None, mode=None, **kwargs) -> None:
        self.start = self.last = start_time or time.time()
        self.total, self.mode = total_samples, mode or self.mode

    def should_report(self, trials, done: bool = False) -> bool:
        return done or time.time() - self.last >= self.every_s

    def report(self, trials, done: bool, *sys_info: str) -> None:
        self.last = time.time()
        elapsed = self.last - self.start
        line = status_line(
            trials, self.objective, self.max_epochs, self.mode, elapsed, self.total, self.work, self.forecast
        )
        print(line, file=self.stream or sys.stdout, flush=True)


class FinalStatus(ProgressReporter):
    """finalize's status line a minute: its runs report once, at their end, so until one ends the ETA is the
    forecast's (``expected_s``: the finalize phase as forecast at the search's pace; None: none), then the
    longest run that ended's."""

    def __init__(self, max_epochs: int, expected_s: float | None, every_s: float = 60.0, stream=None) -> None:
        self.max_epochs, self.expected_s, self.every_s, self.stream = max_epochs, expected_s, every_s, stream
        self.start = self.last = time.time()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "stream": None}

    def setup(self, start_time=None, total_samples=None, metric=None, mode=None, **kwargs) -> None:
        self.start = self.last = start_time or time.time()

    def should_report(self, trials, done: bool = False) -> bool:
        return not done and time.time() - self.last >= self.every_s

    def report(self, trials, done: bool, *sys_info: str) -> None:
        self.last = time.time()
        elapsed = self.last - self.start
        ended = sum(t.status in TUNE_ENDED for t in trials)
        running = sum(t.status == RUNNING for t in trials)
        minutes, seconds = divmod(int(elapsed), 60)
        line = f"[finalize {minutes:02d}:{seconds:02d}] final runs: {ended} done, {running} running"
        eta = final_eta(trials, elapsed) if ended else ""
        if not eta and self.expected_s is not None:
            left = self.expected_s - elapsed
            eta = (
                f"; ETA ~{duration(left)} (forecast)"
                if left > 0
                else f"; past its forecast (~{duration(self.expected_s)})"
            )
        print(line + eta, file=self.stream or sys.stdout, flush=True)


NAMED_RUNNING = 4  # running trials the status line names one by one; more are summed up


def status_line(
    trials: Sequence[Any],
    objective: str,
    max_epochs: int,
    mode: str,
    elapsed_s: float,
    total: int | None = None,
    work: Work | None = None,
    forecast: Any = None,
) -> str:
    """``[study 12:03] trials: 5 done (2 completed, 3 pruned, 0 failed), 1 running (t05 epoch 1/2), 0 left |
    22 seed-epochs spent, ~2 to go: ETA 50 s (25.0 s per seed-epoch, 1 at a time) | best completed: t00
    baseline objective=0.6296 ± 0.0020``."""
    running = [t for t in trials if t.status == RUNNING]
    paused = sum(t.status == PAUSED for t in trials)  # at a cohort halving rung, or promoted and waiting for a slot
    outcomes = [(t, outcome(t, max_epochs)) for t in trials if t.status in TUNE_ENDED]
    counts = Counter(status for _, status in outcomes)
    left = max(0, (total or len(trials)) - len(running) - paused - len(outcomes))
    epochs = [float((t.last_result or {}).get("epoch", 0)) for t in running]
    if len(running) <= NAMED_RUNNING:
        doing = ", ".join(f"{tag(t)[1:-1]} epoch {e:g}/{max_epochs}" for t, e in zip(running, epochs))
    else:  # a big study's line stays one line: where its running trials are, not each of them
        doing = f"epochs {min(epochs):g}-{max(epochs):g} of {max_epochs}"
    minutes, seconds = divmod(int(elapsed_s), 60)
    text = (
        f"[study {minutes:02d}:{seconds:02d}] trials: {len(outcomes)} done ({counts[COMPLETED]} completed, "
        f"{counts[PRUNED]} pruned, {counts[FAILED]} failed), {len(running)} running"
        + (f" ({doing})" if doing else "")
        + (f", {paused} paused" if paused else "")
        + f", {left} left"
    )
    if work is not None:
        text += " | " + work_text(trials, running, left, work, forecast, elapsed_s)
    done = [t for t, status in outcomes if status == COMPLETED and objective in (t.last_result or {})]
    if not done:
        return text + " | no trial completed yet"
    best = (max if mode == "max" else min)(done, key=lambda t: t.last_result[objective])
    label = TrialConfig.of_tune(best.config).label or best.trial_id
    return text + f" | best completed: {label} objective={score_text(best.last_result, objective)}"
