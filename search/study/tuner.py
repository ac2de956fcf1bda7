"""The Ray Tune ``Tuner`` of a study: a new one (searcher, ASHA, parent MLflow run, callbacks) or
one restored by ``--resume`` from the state Tune saved, with the original invocation's data."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from search.infra.disk import KEEP_CHECKPOINTS
from search.infra.storage import storage_path
from search.study.config import SearchConfig
from search.study.ending import StudyEnd, tracking_unavailable
from search.study.legacy import accept_saved_before_rooms
from search.study.names import check_new_name, latest_experiment, resume_command, warn_ignored_on_resume
from search.study.prepare import Prepared, ready
from search.study.strategy import strategy_of
from search.tracking import records as rec
from search.tracking import runs
from search.tracking.records import Invocation
from search.tracking.spool import Spool
from spaces import baseline_choices, thesis_grid
from spaces.canonical import baseline_moves
from trainables.config import ConfigError
from trainables.fidelity import FIDELITY

if TYPE_CHECKING:
    from trainables.loop import TaskData

logger = logging.getLogger(__name__)


def log_majority(spool: Spool, majority: dict[str, float]) -> None:
    """The majority floor of the primary's dev set, as parent-run metrics ``majority/dev/<metric>``."""
    now = int(time.time() * 1000)
    metrics = [[rec.majority_key(k), float(v), now, 0] for k, v in majority.items() if v == v]
    if metrics:
        spool.put({"op": "log", "trial": None, "metrics": metrics})


def send_backlog(spool: Spool, cfg: SearchConfig, name: str) -> None:
    """``--resume``: what an earlier driver could not send to MLflow goes first, in order."""
    if spool.pending():
        logger.info("sending %d MLflow records an earlier run of %s left in %s", spool.pending(), name, spool.path)
        if not spool.drain(cfg.tracking_grace):
            raise tracking_unavailable(spool, cfg, name, "not resumed")


@dataclass
class Launch:
    """A study ready to fit: its Tuner, where Tune keeps it, and how it was started."""

    name: str
    path: str  # the Tune experiment folder
    tuner: Any
    spool: Spool
    invocation: Invocation


def trainable(data: dict[str, TaskData], signature: str, metric: str, cpus: float, gpus: float):
    """The multitask trainable with the tokenized data (one copy in the object store for all trials)
    and each trial's resources: the search's and finalize's trials alike."""
    from ray import tune

    from trainables.tune import multitask_trainable

    return tune.with_resources(
        tune.with_parameters(multitask_trainable, data=data, signature=signature, metric=metric),
        {"cpu": cpus, "gpu": gpus},
    )


def simulated(truth: str, metric: str, cpus: float, gpus: float):
    """The simulated trainable (``--simulate``): scores from the truth file, no torch, no data."""
    from ray import tune

    from search.simulation.trainable import simulated_trainable

    return tune.with_resources(
        tune.with_parameters(simulated_trainable, truth=truth, metric=metric), {"cpu": cpus, "gpu": gpus}
    )


def trainable_of(cfg: SearchConfig, prep: Prepared):
    if cfg.simulate is not None:
        return simulated(cfg.simulate, prep.objective, cfg.cpus_per_trial, cfg.gpus_per_trial)
    return trainable(prep.data, prep.signature, prep.objective, cfg.cpus_per_trial, cfg.gpus_per_trial)


def guard_of(
    cfg: SearchConfig, prep: Prepared, storage: str, name: str, seeds: int, trials: int, resuming: bool = False
):
    """The storage's free space checked for the study's checkpoints (a simulated trial's are bytes)."""
    from search.infra import disk

    command = resume_command(cfg.study, name)
    model_bytes = 0 if cfg.simulate else None
    return disk.guard(
        storage, name, prep.base, seeds, trials, cfg.max_concurrent, command, resuming, model_bytes=model_bytes
    )


def restored_tuner(cfg: SearchConfig, end: StudyEnd) -> Launch:
    """``--resume``: the backlog of MLflow records first, then Tune's saved experiment (its
    searcher, scheduler and callbacks included) with the original invocation's data."""
    from ray import tune

    from search.tracking.runs import find_parent
    from search.tracking.sink import spool_path, study_spool

    warn_ignored_on_resume(cfg)
    storage = storage_path(cfg.storage)
    name = cfg.name or latest_experiment(cfg.storage, cfg.study, cfg.preset)
    _, parent_run = find_parent(runs.client(cfg.tracking_uri), cfg.study, name)
    started = Invocation.from_params(parent_run.data.params)
    spool = study_spool(spool_path(f"{storage}/{name}"), cfg.tracking_uri, parent_run.info.run_id, cfg.tracking_grace)
    send_backlog(spool, cfg, name)
    cfg = cfg.continuing(started)
    prep = ready(cfg)
    path = storage.rstrip("/") + "/" + name
    if not tune.Tuner.can_restore(path):
        raise ConfigError(f"--resume: {path} holds no restorable Tune experiment")
    logger.info("restoring %s", path)
    guard_of(cfg, prep, storage, name, len(started.seeds), started.trials, resuming=True)  # the check only:
    # the guard itself is restored with the experiment
    accept_saved_before_rooms()
    tuner = tune.Tuner.restore(path, trainable=trainable_of(cfg, prep), resume_unfinished=True, resume_errored=False)
    end.reopened(spool, name, path, cfg.optuna_storage)
    return Launch(name, path, tuner, spool, started)


def new_tuner(cfg: SearchConfig, end: StudyEnd) -> Launch:
    """A new study: its Optuna searcher (the baseline or the thesis grid first), ASHA, the
    parent MLflow run with the invocation, and the callbacks that log, print and guard the disk."""
    from ray import tune

    from search.study.progress import StudyStatus, TrialLines
    from search.tracking.runs import start_parent_run
    from search.tracking.sink import spool_path, study_spool
    from search.tracking.tracker import MLflowTracker

    storage = storage_path(cfg.storage)
    name = cfg.name or f"{cfg.study}-{cfg.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_new_name(cfg, name, storage)
    prep = ready(cfg)
    points = first_points(cfg, prep)
    trials = len(points) if strategy_of(cfg.search).only_first else (cfg.trials or prep.preset.trials)
    path = f"{storage}/{name}"
    invocation = cfg.invocation(path, trials)
    seeds, objective, epochs = list(invocation.seeds), prep.objective, prep.base.epochs
    guard = guard_of(cfg, prep, storage, name, len(seeds), trials)
    searcher = searcher_of(cfg, prep, name, invocation.mode, points)
    parent = start_parent_run(cfg.tracking_uri, cfg.study, name, invocation.to_params())
    spool = study_spool(spool_path(path), cfg.tracking_uri, parent, cfg.tracking_grace)
    end.opened(spool, name, path, cfg.optuna_storage)
    log_majority(spool, prep.majority)
    tuner = tune.Tuner(
        trainable_of(cfg, prep),
        param_space=param_space_of(cfg, prep, seeds),
        tune_config=tune.TuneConfig(
            metric=objective,
            mode=invocation.mode,
            search_alg=searcher,
            scheduler=scheduler_of(cfg, prep),
            num_samples=trials,
            max_concurrent_trials=cfg.max_concurrent,
            reuse_actors=True,  # a slot runs its next trial in the same process: no ~10 s start (benchmarks/README.md)
            trial_dirname_creator=lambda trial: f"trial_{trial.trial_id}",
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=storage,
            failure_config=tune.FailureConfig(max_failures=cfg.max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=KEEP_CHECKPOINTS),
            callbacks=[
                MLflowTracker(cfg.tracking_uri, parent, epochs, seeds, objective=objective, spool=str(spool.path)),
                TrialLines(objective, epochs),
                guard,
            ],
            progress_reporter=StudyStatus(objective, epochs),
            verbose=1,
        ),
    )
    return Launch(name, path, tuner, spool, invocation)


def first_points(cfg: SearchConfig, prep: Prepared) -> list[dict[str, Any]]:
    """What the searcher tries first: the thesis grid (``--search grid``), else the baseline alone."""
    study, base = prep.study, prep.base
    for key, (preset_value, moved) in baseline_moves(study, base).items():
        logger.warning(
            "the baseline trains with %s %g, not the preset's %g: moved into the study's %s range "
            "(the report says so too)",
            key,
            moved,
            preset_value,
            key,
        )
    return thesis_grid(study, base) if strategy_of(cfg.search).first == "cells" else [baseline_choices(study, base)]


def sampler_of(cfg: SearchConfig, multivariate: bool = False):
    """The study's Optuna sampler, seeded: random (``--search random``) or TPE. ``multivariate``: TPE
    over the joint density of each group of parameters sampled together (``group``: the space is
    conditional); measured in the simulator only (benchmarks/README.md, search_quality), not offered
    by ``search.run``."""
    import optuna

    sampler = strategy_of(cfg.search).sampler
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=cfg.search_seed)
    if sampler == "tpe-mv":  # one joint density per group; running trials' points count as bad (issue 28)
        return optuna.samplers.TPESampler(seed=cfg.search_seed, multivariate=True, group=True, constant_liar=True)
    if multivariate:
        return optuna.samplers.TPESampler(seed=cfg.search_seed, multivariate=True, group=True)
    return optuna.samplers.TPESampler(seed=cfg.search_seed)


def searcher_of(
    cfg: SearchConfig,
    prep: Prepared,
    name: str,
    mode: str,
    points: list[dict[str, Any]],
    storage: Any = None,
    sampler: Any = None,
):
    """Optuna behind the canonical-config searcher, in the study's Optuna storage (``storage``: another
    Optuna storage, e.g. the simulator's in-memory one; ``sampler``: another than :func:`sampler_of`'s)."""
    import optuna

    from search.study.searcher import CanonicalOptunaSearch

    return CanonicalOptunaSearch(
        prep.study,
        prep.base,
        prep.base.epochs,
        metric=prep.objective,
        mode=mode,
        points_to_evaluate=points,
        sampler=sampler or sampler_of(cfg),
        study_name=name,
        storage=storage or optuna.storages.RDBStorage(cfg.optuna_storage),
    )


def rungs_of(cfg: SearchConfig, prep: Prepared) -> tuple[int, int, int]:
    """ASHA's ``(grace_period, reduction_factor, max_t)``: the preset's unless overridden."""
    grace = cfg.grace_period or prep.preset.grace_period
    return grace, cfg.reduction_factor or prep.preset.reduction_factor, prep.base.epochs


def param_space_of(cfg: SearchConfig, prep: Prepared, seeds: list[int]) -> dict[str, Any]:
    """What every search trial's config holds beside the searcher's choices: its seeds and, with
    ``--first-rung-seeds``, the seed schedule the trainable follows (``trainables.fidelity``)."""
    schedule = cfg.seed_schedule(*rungs_of(cfg, prep))
    return {"seeds": seeds} if schedule is None else {"seeds": seeds, FIDELITY: schedule.to_dict()}


def scheduler_of(cfg: SearchConfig, prep: Prepared):
    """ASHA over epochs that keeps the baseline and each side's leader; the preset's rungs unless
    overridden; with ``--first-rung-seeds``, paired on the seeds each rung's trials have."""
    from search.study.scheduler import ContenderKeepingASHA, FamilyASHA

    grace, factor, max_t = rungs_of(cfg, prep)
    scheduler = FamilyASHA if strategy_of(cfg.search).rungs == "family" else ContenderKeepingASHA
    return scheduler(
        time_attr="training_iteration",
        max_t=max_t,
        grace_period=grace,
        reduction_factor=factor,
        schedule=cfg.seed_schedule(grace, factor, max_t),
    )
