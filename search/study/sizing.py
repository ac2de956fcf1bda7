"""A new study's first ETA, and the default run sized to fit its promise on this machine.

Before any trial, where the trials train on this machine's CPU, a few steps of every task are timed
(:func:`trainables.pace.measure_pace`, a trial's threads) and the whole run is forecast from them
(:mod:`search.study.forecast`): one line says how long it will take. The smoke preset (what ``make run`` runs)
promises a run within 15 minutes on a 2-core machine; where the forecast says it would not fit, each task keeps
fewer training rows (its dev and test rows, the seeds and the verdict's design untouched), and the line says so
and how to keep the preset's (``--train-rows``). A study on GPUs or a cluster is not forecast here: the
driver's CPU says nothing about their pace.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace

from search.study.forecast import Forecast, forecast, parallel
from search.study.plan import StudyPlan

logger = logging.getLogger(__name__)

RUN_BUDGET_S = 15 * 60  # the default run's promise (README): make run within 15 minutes
# the forecast the sizing aims at: a fifth of the budget left for the start (imports, data, this probe: ~30 s on
# 2 cores) and the forecast's own error (benchmarks/README.md, default_run: the forecast against the run)
TARGET_S = 0.8 * RUN_BUDGET_S
SIZED_PRESET = "smoke"
FEWEST_SHARE = 0.2  # never below a fifth of the preset's training rows: below it the baseline stops learning


def local_cpu(plan: StudyPlan) -> bool:
    """Whether the trials train on this machine's CPU (a private local Ray, no GPU asked)."""
    return plan.resources.address in (None, "local") and not plan.resources.gpus_per_trial


def sized(plan: StudyPlan, train_rows_given: bool, replan: Callable[[int], StudyPlan]) -> StudyPlan:
    """``plan`` with its forecast said, or, for the smoke preset without ``--train-rows`` on a machine where it
    would not fit, ``replan(rows)``: the same study keeping at most ``rows`` training rows per task."""
    if plan.resuming or not local_cpu(plan) or not plan.kind.paced:  # a simulated trial sleeps its truth's time
        return plan
    data = plan.kind.prepare(plan.study, plan.base, plan.invocation.objective)
    threads, cpus = max(1, int(plan.resources.cpus_per_trial)), plan.resources.ray_cpus or os.cpu_count() or 1
    pace = plan.kind.pace(plan.base, data, threads, parallel(plan.resources.max_concurrent, threads, cpus))
    ahead = replace(forecast(plan, data.data, pace, cpus), started_s=process_age_s())
    logger.info("this machine's pace: %s; the run: %s", pace_text(pace, plan.base.batch_size), ahead.text())
    if train_rows_given or plan.invocation.preset != SIZED_PRESET or ahead.total_s <= TARGET_S:
        return replace(plan, forecast=ahead, prepared=data)
    share = fitting_share(lambda s: replace(forecast(plan, data.data, pace, cpus, scale=s), started_s=ahead.started_s))
    if not plan.base.max_train_examples:
        return replace(plan, forecast=ahead, prepared=data)
    rows = max(1, int(plan.base.max_train_examples * share))
    fitted = replace(forecast(plan, data.data, pace, cpus, scale=share), started_s=ahead.started_s)
    logger.info(
        "the %s preset would take %s on this machine, over the %d-minute promise: each task trains at most %d rows "
        "(of %d), the run %s; --train-rows %d keeps the preset's",
        SIZED_PRESET,
        f"~{round(ahead.total_s / 60)} min",
        RUN_BUDGET_S // 60,
        rows,
        plan.base.max_train_examples,
        fitted.text(),
        plan.base.max_train_examples,
    )
    return replace(replan(rows), forecast=fitted)


def fitting_share(at: Callable[[float], Forecast]) -> float:
    """The largest share of the training rows (in steps of 0.05, at least ``FEWEST_SHARE``) whose forecast fits
    ``TARGET_S``."""
    share = 1.0
    while share > FEWEST_SHARE and at(share).total_s > TARGET_S:
        share = round(share - 0.05, 2)
    return max(share, FEWEST_SHARE)


def process_age_s() -> float:
    """Seconds since this process started (Linux's ``/proc``; 0 elsewhere): the run's start is part of its time."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, counted after "pid (comm)"
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def pace_text(pace, batch_size: int) -> str:
    """``7.1 training rows/s and 95 dev rows/s a trial (1 thread, measured)``."""
    step = sum(pace.step_s.values()) / len(pace.step_s)
    row = sum(pace.eval_row_s.values()) / len(pace.eval_row_s)
    threads = f"{pace.threads} thread{'s' if pace.threads != 1 else ''}"
    return f"{batch_size / step:.1f} training rows/s and {1 / row:.0f} dev rows/s a trial ({threads}, measured)"
