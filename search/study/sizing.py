"""A new study's first ETA, and the default run sized to fit its promise on this machine.

Before any trial, where the trials train on this machine's CPU, a few steps of every task are timed
(:func:`trainables.pace.measure_pace`, a trial's threads) and the whole run is forecast from them
(:mod:`search.study.forecast`): one line says how long it will take. The smoke preset (what ``make run`` runs)
promises a run within 15 minutes on a 2-core machine; where the forecast says it would not fit, each task keeps
fewer training rows and the primary fewer dev and test rows (one share of the preset's for both; the seeds,
epochs and the verdict's design untouched), and the line says so and how to keep the preset's (``--train-rows``,
``--eval-rows``). A study on GPUs or a cluster is not forecast here: the driver's CPU says nothing about their
pace. The forecast already counts the start (the process's age when it is made): the tenth kept back is for
the forecast's error.
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
# the forecast the sizing aims at: a tenth of the budget kept for the forecast's error (measured -5% to +2%:
# benchmarks/README.md, default_run). The forecast counts finalize's three arms, the most it trains: with two (a
# winner of one auxiliary task, its ablation the baseline) the run ends about a fifth sooner
TARGET_S = 0.9 * RUN_BUDGET_S
SIZED_PRESET = "smoke"
# never below this share of the preset's rows: at 0.35 (315 training rows a task) every final seed of the default
# run stayed at the majority rate (benchmarks/README.md, default_run); where even this share would not fit, the
# start line says how long the run will take instead
FEWEST_SHARE = 0.6


def local_cpu(plan: StudyPlan) -> bool:
    """Whether the trials train on this machine's CPU (a private local Ray, no GPU asked)."""
    return plan.resources.address in (None, "local") and not plan.resources.gpus_per_trial


def sized(plan: StudyPlan, rows_given: bool, replan: Callable[[int, int], StudyPlan]) -> StudyPlan:
    """``plan`` with its forecast said, or, for the smoke preset without ``--train-rows``/``--eval-rows`` on a
    machine where it would not fit, ``replan(train_rows, eval_rows)``: the same study keeping at most that many
    training rows per task and dev and test rows of the primary, one share of the preset's for both."""
    if plan.resuming or not local_cpu(plan) or not plan.kind.paced:  # a simulated trial sleeps its truth's time
        return plan
    data = plan.kind.prepare(plan.study, plan.base, plan.invocation.objective)
    threads, cpus = max(1, int(plan.resources.cpus_per_trial)), plan.resources.ray_cpus or os.cpu_count() or 1
    pace = plan.kind.pace(plan.base, data, threads, parallel(plan.resources.max_concurrent, threads, cpus))
    started = process_age_s()

    def at(share: float) -> Forecast:
        return replace(forecast(plan, data.data, pace, cpus, scale=share), started_s=started)

    ahead, base = at(1.0), plan.base
    logger.info("this machine's pace: %s; the run: %s", pace_text(pace, base.batch_size), ahead.text())
    cut = not rows_given and plan.invocation.preset == SIZED_PRESET and ahead.total_s > TARGET_S
    if not cut or not base.max_train_examples or not base.max_eval_examples:
        return replace(plan, forecast=ahead, prepared=data)
    share = fitting_share(at)
    fitted = at(share)
    rows = max(1, int(base.max_train_examples * share)), max(1, int(base.max_eval_examples * share))
    floor = f" ({FEWEST_SHARE:g} of the preset's, the fewest it takes: at 0.35 the default run's models did not learn)"
    over = floor if fitted.total_s > TARGET_S else ""
    logger.info(
        "the %s preset would take ~%d min on this machine, more than the %d that keep the %d-minute promise with "
        "a tenth to spare for the forecast's error: each task trains at most "
        "%d rows (of %d) and the primary is scored on %d dev and test rows (of %d), the run %s%s; seeds and "
        "epochs as the preset's; --train-rows %d --eval-rows %d keep the preset's",
        SIZED_PRESET, round(ahead.total_s / 60), round(TARGET_S / 60), RUN_BUDGET_S // 60, rows[0],
        base.max_train_examples, rows[1], base.max_eval_examples, fitted.text(), over, base.max_train_examples,
        base.max_eval_examples,
    )  # fmt: skip
    return replace(replan(*rows), forecast=fitted)


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
