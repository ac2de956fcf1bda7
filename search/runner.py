"""Build and run (or restore) the Ray Tune study for a :class:`SearchConfig`."""

from __future__ import annotations

import glob
import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from search.config import Invocation, SearchConfig
from search.ray_connect import connect, connect_address, probe_address
from search.spool import Spool
from search.storage import absolute_sqlite, check_storage, storage_path
from spaces import Preset, Study, baseline_choices, thesis_grid
from spaces.canonical import baseline_moves
from trainables.cli import mask_credentials
from trainables.config import ConfigError, TrainConfig
from trainables.loop import TaskData, prepare_data
from trainables.majority import majority_scores
from trainables.model import load_tokenizer
from trainables.tasks import get_task

if TYPE_CHECKING:  # search.ending imports Ray (through the tracker): only a study needs it
    from search.ending import StudyEnd

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A validated study, ready to run: its config, data (tokenized once) and the majority floor."""

    study: Study
    preset: Preset
    base: TrainConfig
    objective: str
    data: dict[str, TaskData]
    signature: str  # :func:`trainables.tune.data_signature` of ``data``
    majority: dict[str, float]  # primary dev metric -> a constant predictor's score


def prepare(cfg: SearchConfig) -> Prepared:
    """Validate the whole study before any trial: tasks, data, metric. Tokenizes every task's
    data once, for all trials, and returns it with its :func:`data_signature`."""
    study, preset = cfg.resolved_study(), cfg.resolved_preset()
    base = cfg.base_config()
    everything = base.with_(tasks=(study.primary,) + tuple(study.candidates))
    objective = cfg.objective()
    for spec in everything.tasks:  # unknown names fail here, before any data is read
        get_task(spec, Path(base.data_dir), base.protocol)
    primary = get_task(study.primary, Path(base.data_dir), base.protocol)
    dev = primary.examples("dev")[: primary.group_size]
    probs = np.full((len(dev), primary.num_labels), 1.0 / primary.num_labels)
    known = {f"{primary.name}/dev/{k}/mean" for k in primary.metrics(probs, dev)} | {"train/loss/mean"}
    if objective not in known:
        raise ConfigError(f"--metric {objective!r}: expected one of {', '.join(sorted(known))}")
    started = time.perf_counter()
    tokenizer = load_tokenizer(base.encoder)
    from trainables.tune import data_signature  # imports Ray: only a study needs it, not search.estimate

    data = prepare_data(everything, tokenizer)  # tokenized once per study, shared through the object store
    logger.info("datasets of %s tokenized in %.1fs", ",".join(everything.tasks), time.perf_counter() - started)
    majority = majority_scores(data[study.primary].task, data[study.primary].dev_examples)
    return Prepared(study, preset, base, objective, data, data_signature(base, tokenizer), majority)


def resolve_preset(cfg: SearchConfig) -> SearchConfig:
    """No ``--preset``: ``full`` where the cluster has GPUs (said in one line), else ``smoke``.

    On ``--resume`` the preset comes from the invocation it continues."""
    if cfg.preset is not None or cfg.resume:
        return cfg
    if cfg.address in (None, "local"):
        import torch

        gpus = float(torch.cuda.device_count())  # a private local Ray sees this machine's GPUs
    else:
        import ray

        connect_address(cfg.address)
        gpus = float(ray.cluster_resources().get("GPU", 0))
    preset = "full" if gpus else "smoke"
    logger.info(
        "no --preset: %s",
        f"{gpus:g} GPU(s) in the cluster, so the full (thesis-scale) preset"
        if gpus
        else "no GPU in the cluster, so the smoke preset (CPU minutes; --preset full for thesis scale)",
    )
    return replace(cfg, preset=preset)


def log_majority(spool: Spool, majority: dict[str, float]) -> None:
    """The majority floor of the primary's dev set, as parent-run metrics ``majority/dev/<metric>``."""
    now = int(time.time() * 1000)
    metrics = [[f"majority/dev/{k}", float(v), now, 0] for k, v in majority.items() if v == v]
    if metrics:
        spool.put({"op": "log", "trial": None, "metrics": metrics})


def send_backlog(spool: Spool, cfg: SearchConfig, name: str) -> None:
    """``--resume``: what an earlier driver could not send to MLflow goes first, in order."""
    if spool.pending():
        logger.info("sending %d MLflow records an earlier run of %s left in %s", spool.pending(), name, spool.path)
        if not spool.drain(cfg.tracking_grace):
            raise tracking_unavailable(spool, cfg, name, "not resumed")


def tracking_unavailable(
    spool: Spool, cfg: SearchConfig, name: str, what: str = "stopped with its state saved"
) -> Exception:
    from search.ending import TrackingUnavailable

    return TrackingUnavailable(
        f"MLflow tracking server {mask_credentials(cfg.tracking_uri)} unreachable for over {cfg.tracking_grace:g} s "
        f"({spool.last_error}): study {name} {what}, {spool.pending()} records wait in {spool.path}; once the "
        f"server answers, continue with: {resume_command(cfg, name)}"
    )


def client(tracking_uri: str):
    from search.tracking import client as mlflow_client

    return mlflow_client(tracking_uri)


def latest_experiment(storage: str, study: str, preset: str | None) -> str:
    if "://" in storage:
        raise ConfigError("--resume with an object-store --storage needs --name EXPERIMENT")
    pattern = f"{study}-{preset or '*'}-*"
    found = [p for p in glob.glob(os.path.join(storage_path(storage), pattern)) if "-final-" not in os.path.basename(p)]
    found.sort(key=os.path.getmtime)
    if not found:
        raise ConfigError(f"--resume: no experiment {pattern} under {storage_path(storage)}")
    return os.path.basename(found[-1])


def check_new_name(cfg: SearchConfig, name: str, storage: str) -> None:
    """A new study must not reuse an experiment's name: Tune, Optuna and MLflow would mix them."""
    import optuna

    taken = "://" not in storage and Path(storage, name).exists()
    sqlite_file = cfg.optuna_storage[len("sqlite:///") :] if cfg.optuna_storage.startswith("sqlite:///") else None
    if not taken and (sqlite_file is None or Path(sqlite_file).is_file()):  # asking would create a new file
        try:
            taken = name in optuna.get_all_study_names(cfg.optuna_storage)
        except Exception as exc:  # an unreachable Optuna storage is bad input too
            raise ConnectionError(
                f"--optuna-storage {mask_credentials(cfg.optuna_storage)}: "
                f"{mask_credentials(str(exc).splitlines()[0][:200])}"
            ) from None
    if taken:
        raise ConfigError(f"--name {name}: a study of that name exists; continue it with --resume, or pick a new name")


def warn_ignored_on_resume(cfg: SearchConfig) -> None:
    fixed = {
        "--trials": cfg.trials,
        "--search": cfg.search if cfg.search != "tpe" else None,
        "--epochs": cfg.epochs,
        "--model": cfg.model,
        "--seeds": cfg.seeds,
        "--grace-period": cfg.grace_period,
        "--reduction-factor": cfg.reduction_factor,
        "--auxiliary": cfg.auxiliary,
    }
    given = [flag for flag, value in fixed.items() if value is not None]
    if given:
        logger.warning("--resume continues the study as it was started: ignoring %s", ", ".join(given))


def space_exhausted(optuna_storage: str, name: str) -> bool:
    """Whether the searcher ran out of new configs (then fewer trials than asked is a finish)."""
    import optuna

    from search.searcher import EXHAUSTED

    try:
        return bool(optuna.load_study(study_name=name, storage=optuna_storage).user_attrs.get(EXHAUSTED))
    except Exception:  # e.g. a Ray Client driver whose storage lives on the head
        return False


def run(cfg: SearchConfig) -> dict[str, Any]:
    """Run the study; return where its results are (Tune path, MLflow parent run). However it
    ends, nothing it opened is left RUNNING (:mod:`search.ending`)."""
    from search.ending import StudyEnd

    end = StudyEnd(cfg.study)
    try:
        return run_study(cfg, end)
    except BaseException as exc:
        end.crashed(exc)
        raise


@dataclass
class Launch:
    """A study ready to fit: its Tuner, where Tune keeps it, and how it was started."""

    name: str
    path: str  # the Tune experiment folder
    tuner: Any
    spool: Spool
    invocation: Invocation


def run_study(cfg: SearchConfig, end: StudyEnd) -> dict[str, Any]:
    from search.tracking import check_tracking_uri

    cfg = replace(
        cfg, tracking_uri=absolute_sqlite(cfg.tracking_uri), optuna_storage=absolute_sqlite(cfg.optuna_storage)
    )
    check_tracking_uri(cfg.tracking_uri)
    check_storage(cfg)
    cfg = resolve_preset(cfg)
    launch = restored_tuner(cfg, end) if cfg.resume else new_tuner(cfg, end)
    end.watch_signals()
    launch.tuner.fit()
    return summarise(cfg, launch, end)


def ready(cfg: SearchConfig) -> Prepared:
    """Data, tasks and metric checked (before Ray starts), then Ray connected."""
    if cfg.address not in (None, "auto", "local"):
        probe_address(cfg.address)  # a mistyped address fails in seconds, not after tokenizing
    prep = prepare(cfg)
    connect(cfg)
    if prep.preset.note:
        logger.info("%s", prep.preset.note)
    if prep.majority:
        logger.info(
            "majority rate (constant predictor) on this dev set: %s",
            ", ".join(f"{k}={v:.4f}" for k, v in prep.majority.items() if v == v),
        )
    return prep


def trainable_of(cfg: SearchConfig, prep: Prepared):
    from ray import tune

    from trainables.tune import multitask_trainable

    return tune.with_resources(
        # one copy in the object store for all trials
        tune.with_parameters(multitask_trainable, data=prep.data, signature=prep.signature, metric=prep.objective),
        {"cpu": cfg.cpus_per_trial, "gpu": cfg.gpus_per_trial},
    )


def resume_command(cfg: SearchConfig, name: str) -> str:
    return f"python -m search.run {cfg.study} --resume --name {name}"


def restored_tuner(cfg: SearchConfig, end: StudyEnd) -> Launch:
    """``--resume``: the backlog of MLflow records first, then Tune's saved experiment (its
    searcher, scheduler and callbacks included) with the original invocation's data."""
    from ray import tune

    from search import disk
    from search.mlflow_spool import spool_path, study_spool
    from search.tracking import find_parent

    warn_ignored_on_resume(cfg)
    storage = storage_path(cfg.storage)
    name = cfg.name or latest_experiment(cfg.storage, cfg.study, cfg.preset)
    _, parent_run = find_parent(client(cfg.tracking_uri), cfg.study, name)
    started = Invocation.from_params(parent_run.data.params)
    spool = study_spool(spool_path(f"{storage}/{name}"), cfg.tracking_uri, parent_run.info.run_id, cfg.tracking_grace)
    send_backlog(spool, cfg, name)
    cfg = cfg.continuing(started)
    prep = ready(cfg)
    path = storage.rstrip("/") + "/" + name
    if not tune.Tuner.can_restore(path):
        raise ConfigError(f"--resume: {path} holds no restorable Tune experiment")
    logger.info("restoring %s", path)
    disk.guard(
        storage,
        name,
        prep.base,
        len(started.seeds),
        started.trials,
        cfg.max_concurrent,
        resume_command(cfg, name),
        resuming=True,
    )  # the check only: the guard is restored with the experiment
    tuner = tune.Tuner.restore(path, trainable=trainable_of(cfg, prep), resume_unfinished=True, resume_errored=False)
    end.reopened(spool, name, path, cfg.optuna_storage)
    return Launch(name, path, tuner, spool, started)


def new_tuner(cfg: SearchConfig, end: StudyEnd) -> Launch:
    """A new study: its Optuna searcher (the baseline or the thesis grid first), ASHA, the
    parent MLflow run with the invocation, and the callbacks that log, print and guard the disk."""
    import optuna
    from ray import tune

    from search import disk
    from search.mlflow_spool import spool_path, study_spool
    from search.progress import StudyStatus, TrialLines
    from search.scheduler import BaselineKeepingASHA
    from search.searcher import CanonicalOptunaSearch
    from search.tracking import MLflowTracker, start_parent_run

    storage = storage_path(cfg.storage)
    name = cfg.name or f"{cfg.study}-{cfg.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_new_name(cfg, name, storage)
    prep = ready(cfg)
    study, preset, base, objective = prep.study, prep.preset, prep.base, prep.objective
    points = thesis_grid(study, base) if cfg.search == "grid" else [baseline_choices(study, base)]
    for key, (preset_value, moved) in baseline_moves(study, base).items():
        logger.warning(
            "the baseline trains with %s %g, not the preset's %g: moved into the study's %s range "
            "(the report says so too)",
            key,
            moved,
            preset_value,
            key,
        )
    trials = len(points) if cfg.search == "grid" else (cfg.trials or preset.trials)
    path = f"{storage}/{name}"
    invocation = cfg.invocation(path, trials)
    seeds = list(invocation.seeds)
    guard = disk.guard(storage, name, base, len(seeds), trials, cfg.max_concurrent, resume_command(cfg, name))
    sampler = (
        optuna.samplers.RandomSampler(seed=cfg.search_seed)
        if cfg.search == "random"
        else optuna.samplers.TPESampler(seed=cfg.search_seed)
    )
    searcher = CanonicalOptunaSearch(
        study,
        base,
        base.epochs,
        metric=objective,
        mode=invocation.mode,
        points_to_evaluate=points,
        sampler=sampler,
        study_name=name,
        storage=optuna.storages.RDBStorage(cfg.optuna_storage),
    )
    scheduler = BaselineKeepingASHA(
        time_attr="training_iteration",
        max_t=base.epochs,
        grace_period=cfg.grace_period or preset.grace_period,
        reduction_factor=cfg.reduction_factor or preset.reduction_factor,
    )
    parent = start_parent_run(cfg.tracking_uri, cfg.study, name, invocation.to_params())
    spool = study_spool(spool_path(path), cfg.tracking_uri, parent, cfg.tracking_grace)
    end.opened(spool, name, path, cfg.optuna_storage)
    log_majority(spool, prep.majority)
    tuner = tune.Tuner(
        trainable_of(cfg, prep),
        param_space={"seeds": seeds},
        tune_config=tune.TuneConfig(
            metric=objective,
            mode=invocation.mode,
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=trials,
            max_concurrent_trials=cfg.max_concurrent,
            trial_dirname_creator=lambda trial: f"trial_{trial.trial_id}",
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=storage,
            failure_config=tune.FailureConfig(max_failures=cfg.max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            callbacks=[
                MLflowTracker(cfg.tracking_uri, parent, base.epochs, seeds, objective=objective, spool=str(spool.path)),
                TrialLines(objective, base.epochs),
                guard,
            ],
            progress_reporter=StudyStatus(objective, base.epochs),
            verbose=1,
        ),
    )
    return Launch(name, path, tuner, spool, invocation)


def summarise(cfg: SearchConfig, launch: Launch, end: StudyEnd) -> dict[str, Any]:
    """How the fit ended, read from the state Tune saved: finished, interrupted (resumable),
    stopped for a full disk or an unreachable tracking server (resumable, raised)."""
    from ray import tune

    from search import disk
    from search.outcome import FAILED, outcome

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
    unfinished = sum(1 for s in statuses if s not in ("TERMINATED", "ERROR")) + never_created
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
            resume_command(cfg, name),
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
