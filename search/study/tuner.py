"""The Ray Tune ``Tuner`` of a planned study: a new one (searcher, ASHA, parent MLflow run, callbacks) or
one restored by ``--resume`` from the state Tune saved, with the original invocation's data."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import optuna
from ray import tune

from search.infra import disk
from search.infra.disk import KEEP_CHECKPOINTS
from search.infra.storage import make_sqlite_folder
from search.study.ending import StudyEnd, tracking_unavailable
from search.study.extend import extend_trials
from search.study.halving import CohortHalving, limiter_of
from search.study.kind import TrialData
from search.study.names import check_new_name
from search.study.plan import StudyPlan, cohort_families
from search.study.prepare import ready
from search.study.progress import StudyStatus, TrialLines, Work
from search.study.recent import RECENT_TRIALS, RecentTrialsSampler
from search.study.scheduler import ContenderKeepingASHA, FamilyASHA
from search.study.searcher import CanonicalOptunaSearch
from search.tracking import records as rec
from search.tracking.records import Invocation, objective_metric_of
from search.tracking.runs import start_parent_run
from search.tracking.sink import spool_path, study_spool
from search.tracking.spool import Spool
from search.tracking.tracker import MLflowTracker
from spaces.canonical import baseline_moves
from trainables.config import ConfigError
from trainables.fidelity import asha_rungs, halving_survivors
from trainables.trial import TrialConfig

logger = logging.getLogger(__name__)


def log_majority(spool: Spool, majority: dict[str, float]) -> None:
    """The majority floor of the primary's dev set, as parent-run metrics ``majority/dev/<metric>``."""
    now = int(time.time() * 1000)
    metrics = [[rec.majority_key(k), float(v), now, 0] for k, v in majority.items() if v == v]
    if metrics:
        spool.put({"op": "log", "trial": None, "metrics": metrics})


def send_backlog(spool: Spool, plan: StudyPlan) -> None:
    """``--resume``: what an earlier driver could not send to MLflow goes first, in order."""
    if spool.pending():
        logger.info("sending %d MLflow records an earlier run of %s left in %s", spool.pending(), plan.name, spool.path)
        if not spool.drain(plan.stores.tracking_grace):
            raise tracking_unavailable(spool, plan, "not resumed")


@dataclass
class Launch:
    """A study ready to fit: its Tuner, where Tune keeps it, and how it was started."""

    name: str
    path: str  # the Tune experiment folder
    tuner: Any
    spool: Spool
    invocation: Invocation


def guard_of(plan: StudyPlan) -> disk.StorageGuard:
    """The storage's free space checked for the study's checkpoints (their size is the trial kind's)."""
    return disk.guard(
        plan.stores.root,
        plan.name,
        plan.base,
        len(plan.invocation.seeds),
        plan.trials,
        plan.resources.max_concurrent,
        plan.resume_command,
        plan.resuming,
        model_bytes=plan.kind.model_bytes,
    )


def restored_tuner(plan: StudyPlan, end: StudyEnd) -> Launch:
    """``--resume``: the backlog of MLflow records first, then Tune's saved experiment (its
    searcher, scheduler and callbacks included) with the original invocation's data."""
    spool = study_spool(spool_path(plan.path), plan.stores.tracking_uri, plan.parent_run_id, plan.stores.tracking_grace)
    send_backlog(spool, plan)
    data = ready(plan)
    if not tune.Tuner.can_restore(plan.path):
        raise ConfigError(f"--resume: {plan.path} holds no restorable Tune experiment")
    logger.info("restoring %s", plan.path)
    guard_of(plan)  # the check only: the guard itself is restored with the experiment
    if plan.trials > plan.invocation.trials:  # --resume --trials N: more trials than it was started with
        logger.info(
            "%s: %d trials in total (started with %d)", plan.name, plan.trials, extend_trials(plan.path, plan.trials)
        )
    trainable = trainable_of(plan, data)
    tuner = tune.Tuner.restore(plan.path, trainable=trainable, resume_unfinished=True, resume_errored=False)
    end.reopened(spool, plan.name, plan.path, plan.stores.optuna_storage, plan.resume_command)
    return Launch(plan.name, plan.path, tuner, spool, plan.invocation)


def new_tuner(plan: StudyPlan, end: StudyEnd) -> Launch:
    """A new study: its Optuna searcher (the baseline or the thesis grid first), ASHA, the
    parent MLflow run with the invocation, and the callbacks that log, print and guard the disk."""
    stores, objective, epochs = plan.stores, plan.invocation.objective, plan.base.epochs
    check_new_name(plan.name, stores.root, stores.optuna_storage)
    data = ready(plan)
    make_sqlite_folder(stores.optuna_storage)  # a new --storage folder that holds Optuna's file
    say_baseline_moves(plan)
    guard = guard_of(plan)
    searcher, scheduler = optuna_searcher(plan), scheduler_of(plan, data.majority)
    params = plan.invocation.to_params()
    parent = start_parent_run(stores.tracking_uri, plan.study.name, plan.name, params, stores.artifact_root)
    spool = study_spool(spool_path(plan.path), stores.tracking_uri, parent, stores.tracking_grace)
    end.opened(spool, plan.name, plan.path, stores.optuna_storage, plan.resume_command)
    log_majority(spool, data.majority)
    tracker = MLflowTracker(
        stores.tracking_uri, parent, epochs, list(plan.invocation.seeds), objective=objective, spool=str(spool.path)
    )
    tuner = build_tuner(
        trainable_of(plan, data),
        param_space_of(plan),
        name=plan.name,
        storage=stores.root,
        max_failures=plan.resources.max_failures,
        keep_checkpoints=KEEP_CHECKPOINTS,
        callbacks=[tracker, TrialLines(objective, epochs), guard],
        progress_reporter=StudyStatus(objective, epochs, work=work_of(plan), forecast=plan.forecast),
        verbose=1,
        metric=objective,
        mode=plan.invocation.mode,
        search_alg=limiter_of(searcher, scheduler, plan.resources.max_concurrent),
        scheduler=scheduler,
        num_samples=plan.trials,
        max_concurrent_trials=None,  # the limiter above
        reuse_actors=True,  # a slot runs its next trial in the same process: no ~10 s start (benchmarks/README.md)
    )
    return Launch(plan.name, plan.path, tuner, spool, plan.invocation)


def trial_folder(trial) -> str:
    """A trial's folder in its experiment: ``trial_<id>`` (Tune's default name spells the config out as well)."""
    return f"trial_{trial.trial_id}"


def build_tuner(
    trainable: Any,
    param_space: dict[str, Any],
    *,
    name: str,
    storage: str,
    max_failures: int,
    keep_checkpoints: int,
    callbacks: list[Any],
    progress_reporter: Any = None,
    verbose: int = 0,
    **tune_config: Any,
) -> tune.Tuner:
    """The one Tuner builder, of the search and of finalize's runs: the experiment ``name`` under ``storage``,
    trials in folders named by id, a failed trial retried ``max_failures`` times from its last checkpoint, the
    last ``keep_checkpoints`` kept; ``tune_config``: the rest of ``tune.TuneConfig`` (searcher, scheduler, ...)."""
    return tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(trial_dirname_creator=trial_folder, **tune_config),
        run_config=tune.RunConfig(
            name=name,
            storage_path=storage,
            failure_config=tune.FailureConfig(max_failures=max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=keep_checkpoints),
            callbacks=callbacks,
            progress_reporter=progress_reporter,
            verbose=verbose,
        ),
    )


def trainable_of(plan: StudyPlan, data: TrialData) -> Any:
    """The kind's trainable with the shared data and each trial's resources."""
    res = plan.resources
    return plan.kind.trainable(data, plan.invocation.objective, res.cpus_per_trial, res.gpus_per_trial)


def say_baseline_moves(plan: StudyPlan) -> None:
    """A baseline whose preset value lies outside the study's range trains with it moved into the range."""
    for key, (preset_value, moved) in baseline_moves(plan.study, plan.base).items():
        logger.warning(
            "the baseline trains with %s %g, not the preset's %g: moved into the study's %s range "
            "(the report says so too)",
            key,
            moved,
            preset_value,
            key,
        )


def sampler_of(plan: StudyPlan, multivariate: bool = False, window: int = RECENT_TRIALS) -> optuna.samplers.BaseSampler:
    """The study's Optuna sampler, seeded, as its strategy says (search.study.strategy). ``multivariate``: TPE
    over the joint density of each group of parameters sampled together (``group``: the space is
    conditional); measured in the simulator only (benchmarks/README.md, search_quality), not offered
    by ``search.run``. TPE models the last ``window`` finished trials (:mod:`search.study.recent`: its modelling
    cost stops growing there; a study with fewer finished trials gets exactly TPE's suggestions)."""
    sampler = plan.strategy.sampler
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=plan.search_seed)
    # multivariate, group and constant_liar are chosen knowingly: Optuna's "experimental" notice about each is
    # not news to the user of a study
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if sampler == "tpe-mv":  # one joint density per group; running trials' points count as bad (issue 28)
            tpe = optuna.samplers.TPESampler(seed=plan.search_seed, multivariate=True, group=True, constant_liar=True)
        elif multivariate:
            tpe = optuna.samplers.TPESampler(seed=plan.search_seed, multivariate=True, group=True, constant_liar=False)
        else:  # independent TPE without the constant liar: what "tpe" meant and was measured as (Optuna 5's defaults)
            tpe = optuna.samplers.TPESampler(seed=plan.search_seed, multivariate=False, constant_liar=False)
    return RecentTrialsSampler(tpe, window)


def optuna_searcher(plan: StudyPlan, storage: Any = None, sampler: Any = None, name: str | None = None):
    """Optuna behind the canonical-config searcher, in the study's Optuna storage (``storage``: another
    Optuna storage, e.g. the simulator's in-memory one; ``sampler``: another than :func:`sampler_of`'s;
    ``name``: another Optuna study name than the plan's)."""
    return CanonicalOptunaSearch(
        plan.study,
        plan.base,
        plan.base.epochs,
        metric=plan.invocation.objective,
        mode=plan.invocation.mode,
        points_to_evaluate=list(plan.points),
        sampler=sampler or sampler_of(plan),
        study_name=name or plan.name,
        storage=storage or optuna.storages.RDBStorage(plan.stores.optuna_storage),
    )


def param_space_of(plan: StudyPlan) -> dict[str, Any]:
    """What every search trial's config holds beside the searcher's choices: its seeds and, with
    ``--first-rung-seeds``, the seed schedule the trainable follows (``trainables.fidelity``)."""
    fidelity = None if plan.schedule is None else plan.schedule.to_dict()
    return TrialConfig(seeds=plan.invocation.seeds, fidelity=fidelity, screen=plan.screen).to_tune()


def work_of(plan: StudyPlan) -> Work:
    """The scheduler's rungs and odds of going on at each, for the status line's expected remaining work:
    ASHA's; under cohort halving every epoch from the grace period below the last (and the screen), the odds
    from the cohort's expected course (each family's leader kept), for every trial alike."""
    r, fidelity = plan.rungs, None if plan.schedule is None else plan.schedule.to_dict()
    screen = (plan.screen,) if plan.screen else ()
    if not plan.strategy.cohort:
        rungs = screen + asha_rungs(r.grace_period, r.reduction_factor, r.max_t)
        return Work(len(plan.invocation.seeds), r.max_t, rungs, r.reduction_factor, fidelity=fidelity)
    families = cohort_families(plan.points)
    course = halving_survivors(
        len(plan.points), families, plan.screen, r.grace_period, r.reduction_factor, r.max_t, r.hedge, r.strata
    )
    rungs = tuple(point for point, _, _ in course)
    passes = tuple(going / alive if alive else 0.0 for _, alive, going in course)
    return Work(len(plan.invocation.seeds), r.max_t, rungs, r.reduction_factor, passes, fidelity)


def scheduler_of(plan: StudyPlan, majority: Mapping[str, float] | None = None) -> ContenderKeepingASHA:
    """ASHA over epochs that keeps the baseline and each side's leader; the plan's rungs; with
    ``--first-rung-seeds``, paired on the seeds each rung's trials have. ``majority``: the primary's dev
    majority rate per metric (cohort halving lets a trial at or below it on once: a failed start)."""
    common = dict(
        time_attr="training_iteration",
        max_t=plan.rungs.max_t,
        grace_period=plan.rungs.grace_period,
        reduction_factor=plan.rungs.reduction_factor,
        schedule=plan.schedule,
    )
    if plan.strategy.cohort:
        # its rungs are epochs (a screen point is 0.5 of one), not results counted
        common["time_attr"] = "epoch"
        metric = objective_metric_of(plan.invocation.objective, plan.study.primary_name)
        return CohortHalving(
            **common,
            cohort=len(plan.points),
            slots=plan.resources.max_concurrent,
            screen=plan.screen,
            strata=plan.rungs.strata,
            hedge=plan.rungs.hedge,
            hedge_seed=plan.search_seed,
            floor=(majority or {}).get(metric or ""),
        )
    return (FamilyASHA if plan.strategy.rungs == "family" else ContenderKeepingASHA)(**common)
