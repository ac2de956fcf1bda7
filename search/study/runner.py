"""Run (or restore) a study: its stores checked, on ``--resume`` the invocation it recorded read back, the
trial kind chosen, the site looked up, the plan made (:mod:`search.study.plan`), then the Tuner built from
the plan, fitted, and how it ended read from what Tune saved."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import optuna
from ray import tune

from search.infra import disk, last_study
from search.infra.storage import check_storage
from search.study.config import SearchConfig, continuing
from search.study.ending import StudyEnd, tracking_unavailable
from search.study.kind import Kinds
from search.study.names import latest_experiment, warn_ignored_on_resume
from search.study.plan import Started, Stores, StudyPlan, plan, stores_of
from search.study.prepare import look
from search.study.progress import seconds_per_seed_epoch
from search.study.searcher import EXHAUSTED
from search.study.sizing import sized
from search.study.tuner import Launch, new_tuner, restored_tuner, work_of
from search.tracking import runs
from search.tracking.outcome import FAILED, TUNE_ENDED, outcome
from search.tracking.records import Invocation, check_resumable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StudyOutcome:
    """How a study invocation ended and where its results are (what :func:`run` returns)."""

    name: str  # the Tune experiment and the parent run's name
    path: str  # the Tune experiment folder
    trials: int  # trials Tune saved
    failed: int  # of them failed (diverged ones included)
    interrupted: bool  # unfinished trials remain: resumable
    plan: StudyPlan  # what it ran (the preset, the stores, finalize's seeds, ...)
    seconds_per_seed_epoch: float | None = None  # the pace its trials showed (None: none reported)

    def final_expected_s(self) -> float | None:
        """finalize's runs as forecast before the search, at the pace the search showed against the forecast's."""
        forecast = self.plan.forecast
        return None if forecast is None else forecast.final_s * forecast.pace_ratio(self.seconds_per_seed_epoch)


def space_exhausted(optuna_storage: str, name: str) -> bool:
    """Whether the searcher ran out of new configs (then fewer trials than asked is a finish)."""
    try:
        return bool(optuna.load_study(study_name=name, storage=optuna_storage).user_attrs.get(EXHAUSTED))
    except Exception:  # e.g. a Ray Client driver whose storage lives on the head
        return False


def run(cfg: SearchConfig, kinds: Kinds) -> StudyOutcome:
    """Run the study, its trials of the kind ``kinds`` gives for its truth file; return how it ended and
    where its results are. However it ends, nothing it opened is left RUNNING (:mod:`search.study.ending`)."""
    end = StudyEnd(cfg.study)
    try:
        return run_study(cfg, kinds, end)
    except BaseException as exc:
        end.crashed(exc)
        raise


def planned(cfg: SearchConfig, kinds: Kinds) -> StudyPlan:
    """The stores checked, a resumed study's record read, the kind chosen (once), the site looked up: the plan."""
    stores = stores_of(cfg)
    runs.check_tracking_uri(stores.tracking_uri, min(stores.tracking_grace, runs.STARTING_SERVER_WAIT))
    started = recorded(cfg, stores) if cfg.resume else None
    if started is not None:
        warn_ignored_on_resume(cfg)
        cfg = continuing(cfg, started.invocation)  # the preset, data, truth and Optuna storage it recorded
        stores = stores_of(cfg)
    kind = kinds(cfg.simulate or "")  # the study's trial kind, chosen here once (a bad truth file fails here)
    check_storage(stores.storage, stores.optuna_storage)
    site = look(cfg, kind)
    made = plan(cfg, kind, site, stores, started)
    given = cfg.train_rows is not None or cfg.eval_rows is not None

    def replan(train_rows: int, eval_rows: int) -> StudyPlan:
        return plan(replace(cfg, train_rows=train_rows, eval_rows=eval_rows), kind, site, stores)

    return sized(made, given, replan)


def recorded(cfg: SearchConfig, stores: Stores) -> Started:
    """``--resume``: the study invocation it continues (``--name``, else the latest), as its parent run recorded it."""
    name = cfg.name or latest_experiment(stores.storage, cfg.study, cfg.preset)
    _, parent_run = runs.find_parent(runs.client(stores.tracking_uri), cfg.study, name)
    invocation = Invocation.from_params(parent_run.data.params)
    check_resumable(invocation, name)  # before anything reads what Tune pickled
    return Started(name, invocation, parent_run.info.run_id)


def run_study(cfg: SearchConfig, kinds: Kinds, end: StudyEnd) -> StudyOutcome:
    study_plan = planned(cfg, kinds)
    stores = study_plan.stores
    last_study.record(cfg.study, study_plan.name, stores.tracking_uri, stores.optuna_storage)
    launch = restored_tuner(study_plan, end) if study_plan.resuming else new_tuner(study_plan, end)
    end.watch_signals()
    launch.tuner.fit()
    return how_it_ended(study_plan, launch, end)


def how_it_ended(plan: StudyPlan, launch: Launch, end: StudyEnd) -> StudyOutcome:
    """How the fit ended, read from the state Tune saved: finished, interrupted (resumable),
    stopped for a full disk or an unreachable tracking server (resumable, raised)."""
    name, spool = plan.name, launch.spool
    if full := disk.stop_reason(plan.stores.root, name):  # stopped for a full disk, as Ctrl-C stops a study: resumable
        end.stopped(full)
        raise disk.StorageFull(full)
    # the state Tune saved, as --resume will read it: after a graceful stop (Ctrl-C, SIGTERM) the
    # in-memory trials read TERMINATED, while the saved ones still read PENDING or RUNNING
    saved = tune.ExperimentAnalysis(launch.path).trials
    statuses = [t.status for t in saved]
    # trials never created count as unfinished (an interrupt stops the searcher too),
    # unless the searcher ran out of new configs
    exhausted = space_exhausted(plan.stores.optuna_storage, name)
    never_created = 0 if exhausted else max(0, plan.trials - len(statuses))
    unfinished = sum(1 for s in statuses if s not in TUNE_ENDED) + never_created
    errors = sum(outcome(t, plan.invocation.epochs) == FAILED for t in saved)  # diverged trials too
    if spool.gave_up:
        end.stopped(f"tracking server unreachable for {plan.stores.tracking_grace:g} s", wait_s=0)
        raise tracking_unavailable(spool, plan)
    if unfinished:
        end.stopped(f"interrupted ({end.signal_name or 'Ctrl-C'})")
        logger.warning(
            "study %s interrupted with %d unfinished trials; continue it with: %s",
            name,
            unfinished,
            plan.resume_command,
        )
    else:
        logger.info("study %s finished: %d trials, %d failed", name, len(statuses), errors)
        end.finished()
        if not spool.drain(max(0.0, plan.stores.tracking_grace - spool.outage_s())):
            raise tracking_unavailable(spool, plan, "finished")
    pace = seconds_per_seed_epoch(saved, work_of(plan))
    return StudyOutcome(name, launch.path, len(statuses), errors, bool(unfinished), plan, pace)
