"""Finalize's missing seeds, trained to full epochs as Tune trials of the study's own trainable and
tracker (runs tagged ``kind=final``, ``final_for`` the trial's run), then read back as scores."""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any

from search.answer.claims import Contender
from search.answer.config import FinalizeConfig
from search.answer.contenders import collect
from search.answer.text import list_text
from search.study.ending import sigterm_as_ctrl_c
from search.study.kind import TrialKind
from search.tracking import records as rec
from search.tracking.records import Invocation
from search.tracking.trial_record import TrialRecord
from trainables.cli import mask_credentials
from trainables.results import parse_seed_key
from trainables.trial import TrialConfig

logger = logging.getLogger(__name__)


def train_missing(
    cfg: FinalizeConfig,
    parent_run_id: str,
    invocation: Invocation,
    contenders: list[Contender],
    missing: dict[str, list[int]],
    primary: str,
    seeds: list[int],
    kind: TrialKind,
) -> None:
    """Train each contender's missing final seeds to full epochs, scoring test, as Tune trials logged to MLflow."""
    from search.infra.ray_connect import connect_address
    from search.infra.resources import check_request

    res = cfg.resources
    connect_address(res.address, kind.ray_cpus(res.max_concurrent, res.cpus_per_trial, os.cpu_count() or 1))
    if threading.current_thread() is threading.main_thread():
        sigterm_as_ctrl_c()  # after ray.init, whose own handler would leave the final runs RUNNING
    check_request(res.cpus_per_trial, res.gpus_per_trial, local=res.address in (None, "local"))
    points = [final_point(c, missing[c.role], invocation.objective) for c in contenders if missing[c.role]]
    results = fit_final_runs(cfg, parent_run_id, invocation, contenders, points, kind)
    by_run = {c.row.run_id: c for c in contenders}
    for result in results:
        point = TrialConfig.of_tune(result.config)
        c = by_run[point.final_for]
        check_complete(result, point.label)
        collect(c, [result_row(result, point.label, list(point.seeds), invocation.objective)], primary, seeds)
        c.trained = list(point.seeds)


def final_point(c: Contender, seeds: list[int], objective: str) -> dict[str, Any]:
    """One Tune trial config: the contender's exact config, scoring test this time (the search's trials
    do not), its missing seeds, tagged as a final run."""
    logger.info("finalize trains %s seeds %s to %d epochs", c.row.label, list_text(seeds), c.config.epochs)
    return TrialConfig(
        train=c.config.with_(evaluate_test=True),
        seeds=tuple(seeds),
        key=c.row.key,
        label=f"final {c.role} {c.row.label} seeds {list_text(seeds)}",
        baseline=c.row.baseline,
        kind=rec.FINAL_KIND,
        final_for=c.row.run_id,
        metric=objective,
    ).to_tune()


def fit_final_runs(
    cfg: FinalizeConfig,
    parent_run_id: str,
    invocation: Invocation,
    contenders: list[Contender],
    points: list[dict[str, Any]],
    kind: TrialKind,
):
    """The final runs as one Tune experiment beside the study's; its results once MLflow has them all."""
    from ray import tune

    from search.study.progress import FinalLines, FinalStatus
    from search.study.tuner import build_tuner
    from search.tracking.sink import spool_path, study_spool
    from search.tracking.tracker import MLflowTracker

    objective, tune_path = invocation.objective, invocation.tune_path
    storage, _, study_experiment = tune_path.rstrip("/").rpartition("/")
    epochs = max(c.config.epochs for c in contenders)
    # the study's own spool: what the search left unsent goes first, then these runs, in order
    spool = study_spool(spool_path(tune_path), cfg.tracking_uri, parent_run_id)
    tracker = MLflowTracker(cfg.tracking_uri, parent_run_id, epochs, [], objective=objective, spool=str(spool.path))
    cpus, concurrent = final_slots(cfg, len(points))
    tuner = build_tuner(
        kind.final_trainable([c.config for c in contenders], objective, cpus, cfg.resources.gpus_per_trial),
        {"trial": tune.grid_search(points)},
        name=f"{study_experiment}-final-{time.strftime('%Y%m%d-%H%M%S')}",
        storage=storage,
        max_failures=cfg.resources.max_failures,  # a final run whose process or node is lost goes on, as a trial does
        keep_checkpoints=1,
        callbacks=[tracker, FinalLines(objective, epochs)],
        progress_reporter=FinalStatus(epochs, cfg.expected_s),
        verbose=1,  # Tune calls a progress reporter only from verbosity 1
        max_concurrent_trials=concurrent,
    )
    results = tuner.fit()
    by_run = {c.row.run_id: c for c in contenders}
    stopped = sum(result.error is None and not finished(result, by_run) for result in results)
    if stopped:  # Ctrl-C or SIGTERM during fit: Tune ends gracefully, its runs stopped where they were
        command = finalize_command(cfg, study_experiment)
        end_open_runs(spool, "interrupted (Ctrl-C or SIGTERM)", command)
        raise KeyboardInterrupt(
            f"finalize interrupted with {stopped} of {len(results)} final runs unfinished; the search itself is "
            f"complete: continue with {command}"
        )
    if not spool.drain(spool.grace_s):
        raise ConnectionError(
            f"MLflow tracking server {mask_credentials(cfg.tracking_uri)} unreachable "
            f"({spool.last_error}): {spool.pending()} records of the final runs wait in {spool.path}"
        )
    return results


def final_slots(cfg: FinalizeConfig, arms: int) -> tuple[float, int]:
    """CPUs per final run and how many run at once. On CPUs only (no GPU asked) every arm runs at once on
    the CPUs the slots would hold: with 3 arms and 2 slots the third would otherwise train alone on one
    core while the other waits (measured: the default run's final phase, issue 30); each run keeps one
    torch thread at least, so the numbers are the same either way."""
    res = cfg.resources
    if res.gpus_per_trial > 0 or arms <= res.max_concurrent:
        return res.cpus_per_trial, res.max_concurrent
    share = math.floor(res.cpus_per_trial * res.max_concurrent / arms * 1e4) / 1e4  # Ray counts in 1e-4 units
    return share, arms


def finished(result, by_run: dict[str, Contender]) -> bool:
    """Whether a final run reached its contender's last epoch. One that never started (Tune stopped before it)
    has no config in its result."""
    if not result.config or not result.metrics:
        return False
    contender = by_run.get(TrialConfig.of_tune(result.config).final_for)
    return contender is not None and int(result.metrics.get("epoch", 0)) >= contender.config.epochs


def end_open_runs(spool, reason: str, command: str) -> None:
    """The final runs the spool opened and did not end: KILLED, tagged with why and the command that trains them
    again (the study's parent run stays as the search left it), sent while the tracking store answers."""
    from search.study.ending import DRAIN_S
    from search.tracking.sink import open_trial_runs

    tags = {rec.STATUS_TAG: "interrupted", rec.END_REASON: reason, rec.RESUME_TAG: command}
    for trial in open_trial_runs(spool.path):
        spool.put({"op": "end", "trial": trial, "state": "KILLED", "tags": tags})
    if not spool.drain(min(DRAIN_S, spool.grace_s)):
        logger.warning("%d MLflow records wait in %s: the next finalize sends them first", spool.pending(), spool.path)


def finalize_command(cfg: FinalizeConfig, study_experiment: str) -> str:
    """The command that trains the final runs still missing (the complete ones are taken back from MLflow)."""
    command = f"python -m search.finalize {cfg.study} --name {study_experiment}"
    if cfg.tracking_uri != FinalizeConfig.tracking_uri:
        command += f" --tracking-uri {mask_credentials(cfg.tracking_uri)}"
    return command + (f" --seeds {cfg.seeds}" if cfg.seeds != FinalizeConfig.seeds else "")


def check_complete(result, label: str) -> None:
    """A final run that failed stops finalize (one without an error reached its last epoch: :func:`finished`,
    checked for every run as the fit returned)."""
    if result.error is not None:
        raise RuntimeError(f"finalize could not train {label}: {result.error}")


def result_row(result, label: str, seeds: list[int], objective: str) -> TrialRecord:
    """A final run's last result as a record: its objective, and its scores of ``seeds`` only."""
    metrics = {}
    for key, value in result.metrics.items():
        seeded = parse_seed_key(key) if isinstance(key, str) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (not seeded or seeded[1] in seeds):
            metrics[key] = float(value)
    return TrialRecord(
        run_id="",
        label=label,
        objective=float(result.metrics.get(objective, math.nan)),
        checkpoint=result.checkpoint.path if result.checkpoint else "",
        objective_metric=rec.strip_mean(objective),
        metrics=metrics,
    )
