"""How long a whole run takes (the search, finalize's arms, the report), forecast before any trial from this
machine's measured pace (:mod:`trainables.pace`) and the rows each trial trains and scores.

A seed-epoch of a search trial trains ``steps_per_epoch`` micro-batches (the mean of its tasks' sizes in
batches) and scores every task's dev rows; a search trial is expected to train the seed-epochs its scheduler
leaves it (the status line's :class:`~search.study.progress.Work`, the configs averaged over the auxiliary
subsets as the search draws them); finalize trains every arm on every final seed to the last epoch and scores
dev and test once, at the end (a final run reports only there). Trials share this machine's cores: as many run
at once as the cores hold a trial's threads. The constants below are chosen, not fitted: checked against whole
runs afterwards (``benchmarks/README.md``, ``default_run``: the forecast within -5% to +2% of the wall time).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from search.study.progress import duration
from trainables.sampling import steps_per_epoch

if TYPE_CHECKING:
    from search.study.plan import StudyPlan
    from trainables.pace import Pace
    from trainables.prepare import TaskData

# a trial's start (a Ray worker, torch and transformers imported, the model built), in training micro-batches of
# the probe's mean step (it is CPU work too, so it scales with the pace): 12 steps are 6.5 s on 2 idle cores here
START_STEPS = 12.0
KEPT = 2  # trials ASHA keeps to the last epoch whatever they score: the baseline and the multitask leader
FIXED_S = 15.0  # Ray's start before the search and finalize's before its runs (default_run's log: ~5 s and ~10 s)
REPORT_S = 15.0  # the report and the closing lines (default_run: 1.6 s and 4.8 s; the plots vary)


@dataclass(frozen=True)
class Forecast:
    """Seconds the rest of a run is expected to take, by phase."""

    search_s: float
    final_s: float
    seed_epoch_s: float  # a search trial's seed-epoch, averaged over the configs the search draws
    report_s: float = REPORT_S
    started_s: float = 0.0  # what the run had spent when the forecast was made (Python, data, the probe)

    @property
    def rest_s(self) -> float:
        return self.search_s + self.final_s + self.report_s

    @property
    def total_s(self) -> float:
        return self.started_s + self.rest_s

    def pace_ratio(self, seen: float | None) -> float:
        """How much slower than forecast the trials run: ``seen`` seconds a seed-epoch against the forecast's
        (1 where either is unknown)."""
        return seen / self.seed_epoch_s if seen and self.seed_epoch_s else 1.0

    def text(self) -> str:
        """``~14 min (search ~5 min, finalize ~9 min, the report ~15 s)``: the whole run, its start included."""
        parts = f"search ~{duration(self.search_s)}, finalize ~{duration(self.final_s)}"
        return f"~{duration(self.total_s)} ({parts}, the report ~{duration(self.report_s)})"


def train_s(tasks: tuple[str, ...], data: dict[str, TaskData], batch_size: int, pace: Pace, scale: float = 1) -> float:
    """One seed's epoch of training a config of ``tasks``: its micro-batches at the tasks' mean step; ``scale``:
    the share of each task's training rows it keeps (``--train-rows``)."""
    steps = steps_per_epoch([math.ceil(len(data[t].train) * scale / batch_size) for t in tasks])
    return steps * sum(pace.step_s[t] for t in tasks) / len(tasks)


def dev_s(tasks: tuple[str, ...], data: dict[str, TaskData], pace: Pace, scale: float = 1) -> float:
    """Scoring every task's dev rows once; ``scale``: the share of the primary's kept (``--eval-rows``; the
    primary is the first task)."""
    return sum(len(data[t].dev) * (scale if i == 0 else 1) * pace.eval_row_s[t] for i, t in enumerate(tasks))


def seed_epoch_s(
    tasks: tuple[str, ...], data: dict[str, TaskData], batch_size: int, pace: Pace, scale: float = 1
) -> float:
    """One seed's epoch of a search trial: its training and its dev scoring."""
    return train_s(tasks, data, batch_size, pace, scale) + dev_s(tasks, data, pace, scale)


def configs(primary: str, candidates: tuple[str, ...], least: int = 0) -> list[tuple[str, ...]]:
    """The configs' tasks the search draws from: the primary with each subset of at least ``least`` auxiliaries
    (0: the single-task config too; 1: a multitask winner)."""
    sizes = range(least, len(candidates) + 1)
    return [(primary, *s) for r in sizes for s in itertools.combinations(candidates, r)] or [(primary,)]


def mean_epoch_s(
    primary: str, candidates: tuple[str, ...], data, batch_size: int, pace: Pace, scale: float = 1, least: int = 0
) -> float:
    """A seed-epoch averaged over the configs with at least ``least`` auxiliaries (:func:`configs`)."""
    tasks = configs(primary, candidates, least)
    return sum(seed_epoch_s(t, data, batch_size, pace, scale) for t in tasks) / len(tasks)


def final_run_s(
    tasks: list[tuple[str, ...]], data, batch_size: int, pace: Pace, epochs: int, scale: float = 1
) -> float:
    """One final seed of a config averaged over ``tasks``: every epoch trained, dev and test scored once at the end
    (a final run reports only there; test as many rows as the primary's dev: the search's data holds no test)."""
    primary = tasks[0][0]
    test = len(data[primary].dev) * scale * pace.eval_row_s[primary]
    each = [train_s(t, data, batch_size, pace, scale) * epochs + dev_s(t, data, pace, scale) + test for t in tasks]
    return sum(each) / len(each)


def parallel(slots: int, threads: int, cpus: int) -> int:
    """Trials that train at once: the slots, as far as the cores hold their threads."""
    return max(1, min(slots, cpus // max(1, threads)))


def search_seed_epochs(plan: StudyPlan) -> float:
    """Seed-epochs the search is expected to train: the scheduler's expected course for every trial (the status
    line's :class:`~search.study.progress.Work`); under ASHA the baseline and the multitask leader it keeps
    train every epoch (cohort halving's course counts its leaders already)."""
    from search.study.tuner import work_of

    work = work_of(plan)
    each, whole = work.expected(work.schedule({})), work.schedule({}).seed_epochs(work.max_t)
    kept = 0 if plan.strategy.cohort else min(plan.trials, KEPT)
    return kept * whole + (plan.trials - kept) * each


def forecast(
    plan: StudyPlan, data: dict[str, TaskData], pace: Pace, cpus: int, final_arms: int = 3, scale: float = 1
) -> Forecast:
    """The run ``plan`` starts on this machine (``cpus`` cores), from ``pace``: the search's expected seed-epochs
    and trial starts, then ``final_arms`` arms on the final seeds (3: the winner, the single-task opponent and
    the winner's ablation; 2 where they coincide, which only the search tells). ``scale``: the share of the
    training rows and of the primary's evaluation rows kept (:mod:`search.study.sizing`)."""
    base, res, batch = plan.base, plan.resources, plan.base.batch_size
    primary, candidates = base.primary, tuple(t for t in data if t != base.primary)
    start = START_STEPS * sum(pace.step_s.values()) / len(pace.step_s)
    epoch = mean_epoch_s(primary, candidates, data, batch, pace, scale)
    search = search_seed_epochs(plan) * epoch + plan.trials * start
    winner = final_run_s(configs(primary, candidates, least=1), data, batch, pace, base.epochs, scale)
    single = final_run_s([(primary,)], data, batch, pace, base.epochs, scale)
    runs = plan.final_seeds * (winner + (final_arms - 1) * single) + final_arms * start
    return Forecast(
        search / parallel(res.max_concurrent, pace.threads, cpus) + FIXED_S / 2,
        runs / parallel(final_arms, pace.threads, cpus) + FIXED_S / 2,
        epoch,
    )
