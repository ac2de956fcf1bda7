"""Build and run (or restore) the Ray Tune study for a :class:`SearchConfig`."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from search.infra.storage import absolute_sqlite, check_storage, storage_path
from search.study.config import SearchConfig
from search.study.ending import StudyEnd, tracking_unavailable
from search.study.names import resume_command
from search.study.prepare import resolve_preset
from search.study.tuner import Launch, new_tuner, restored_tuner

logger = logging.getLogger(__name__)


def space_exhausted(optuna_storage: str, name: str) -> bool:
    """Whether the searcher ran out of new configs (then fewer trials than asked is a finish)."""
    import optuna

    from search.study.searcher import EXHAUSTED

    try:
        return bool(optuna.load_study(study_name=name, storage=optuna_storage).user_attrs.get(EXHAUSTED))
    except Exception:  # e.g. a Ray Client driver whose storage lives on the head
        return False


def run(cfg: SearchConfig) -> dict[str, Any]:
    """Run the study; return where its results are (Tune path, MLflow parent run). However it
    ends, nothing it opened is left RUNNING (:mod:`search.study.ending`)."""
    end = StudyEnd(cfg.study)
    try:
        return run_study(cfg, end)
    except BaseException as exc:
        end.crashed(exc)
        raise


def run_study(cfg: SearchConfig, end: StudyEnd) -> dict[str, Any]:
    from search.tracking.runs import check_tracking_uri

    cfg = replace(
        cfg, tracking_uri=absolute_sqlite(cfg.tracking_uri), optuna_storage=absolute_sqlite(cfg.optuna_storage)
    )
    check_tracking_uri(cfg.tracking_uri)
    check_storage(cfg.storage, cfg.optuna_storage)
    cfg = resolve_preset(cfg)
    launch = restored_tuner(cfg, end) if cfg.resume else new_tuner(cfg, end)
    end.watch_signals()
    launch.tuner.fit()
    return how_it_ended(cfg, launch, end)


def how_it_ended(cfg: SearchConfig, launch: Launch, end: StudyEnd) -> dict[str, Any]:
    """How the fit ended, read from the state Tune saved: finished, interrupted (resumable),
    stopped for a full disk or an unreachable tracking server (resumable, raised)."""
    from ray import tune

    from search.infra import disk
    from search.tracking.outcome import FAILED, TUNE_ENDED, outcome

    storage, name, spool = storage_path(cfg.storage), launch.name, launch.spool
    if full := disk.stop_reason(storage, name):  # stopped for a full disk, as Ctrl-C stops a study: resumable
        end.stopped(full)
        raise disk.StorageFull(full)
    # the state Tune saved, as --resume will read it: after a graceful stop (Ctrl-C, SIGTERM) the
    # in-memory trials read TERMINATED, while the saved ones still read PENDING or RUNNING
    saved = tune.ExperimentAnalysis(launch.path).trials
    statuses = [t.status for t in saved]
    # trials never created count as unfinished (an interrupt stops the searcher too),
    # unless the searcher ran out of new configs
    exhausted = space_exhausted(cfg.optuna_storage, name)
    never_created = 0 if exhausted else max(0, launch.invocation.trials - len(statuses))
    unfinished = sum(1 for s in statuses if s not in TUNE_ENDED) + never_created
    errors = sum(outcome(t, launch.invocation.epochs) == FAILED for t in saved)  # diverged trials too
    if spool.gave_up:
        end.stopped(f"tracking server unreachable for {cfg.tracking_grace:g} s", wait_s=0)
        raise tracking_unavailable(spool, cfg, name)
    if unfinished:
        end.stopped(f"interrupted ({end.signal_name or 'Ctrl-C'})")
        logger.warning(
            "study %s interrupted with %d unfinished trials; continue it with: %s",
            name,
            unfinished,
            resume_command(cfg.study, name),
        )
    else:
        logger.info("study %s finished: %d trials, %d failed", name, len(statuses), errors)
        end.finished()
        if not spool.drain(max(0.0, cfg.tracking_grace - spool.outage_s())):
            raise tracking_unavailable(spool, cfg, name, "finished")
    return {
        "name": name,
        "path": launch.path,
        "trials": len(statuses),
        "failed": errors,
        "preset": cfg.preset,
        "interrupted": bool(unfinished),
        "tracking_uri": cfg.tracking_uri,
    }
