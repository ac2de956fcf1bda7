"""A study worked out once: :func:`plan` turns the validated flags (:class:`SearchConfig`), the trial kind and
what was looked up outside them (:class:`Site`, and on ``--resume`` the invocation the study recorded) into a
frozen :class:`StudyPlan`. Every builder after it (prepare, tuner, searcher, scheduler, guard, ending) takes
the plan and derives nothing from the flags again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from search.infra.storage import absolute_sqlite, beside_store, local_path, storage_path
from search.study.config import (
    SearchConfig,
    first_rung_of,
    objective_of,
    reduction_factor_of,
    screen_of,
    seeds_of,
    study_of,
)
from search.study.kind import TrialKind
from search.study.names import resume_command
from search.study.strategy import DEFAULT, FALLBACK, WIDE, SearchStrategy, default_search, strategy_of
from search.tracking.records import Invocation
from spaces import Preset, Study, baseline_choices, task_points, thesis_grid
from trainables.cli import mask_credentials
from trainables.config import ConfigError, EncoderConfig, SamplingConfig, TrainConfig
from trainables.fidelity import SeedSchedule, asha_rungs

DEFAULT_STORAGE = "ray_results"  # Tune's experiments without --storage
DEFAULT_OPTUNA = "sqlite:///optuna.db"  # without --optuna-storage or a local --storage


@dataclass(frozen=True)
class Site:
    """What a plan needs from outside the flags, looked up before it (``search.study.runner.look``)."""

    stamp: str  # the clock, ``%Y%m%d-%H%M%S``: a new study's default name
    cpus: int  # this machine's CPUs
    gpus: float | None = None  # the cluster's GPUs; None: not counted (a preset was given, or the kind ignores them)


@dataclass(frozen=True)
class Started:
    """``--resume``: the study invocation it continues, as its parent MLflow run recorded it."""

    name: str
    invocation: Invocation
    parent_run_id: str


@dataclass(frozen=True)
class Rungs:
    """ASHA's rungs: epochs before a trial can be stopped, the reduction factor, the last epoch."""

    grace_period: int
    reduction_factor: int
    max_t: int
    strata: int = 1  # cohort halving: exposure strata of a rung's ranking (search.study.cohort_rule)
    hedge: int = 0  # cohort halving: cells let past every rung below the last


@dataclass(frozen=True)
class Resources:
    cpus_per_trial: float
    gpus_per_trial: float
    max_concurrent: int
    max_failures: int  # retries of a failed trial from its checkpoint
    address: str | None  # the Ray cluster; None: a private local Ray
    ray_cpus: int | None  # a private local Ray's logical CPUs (the kind's); None: the machine's


@dataclass(frozen=True)
class Stores:
    """Where everything goes: MLflow, Tune's experiments (``root``), Optuna; SQLite paths made absolute."""

    tracking_uri: str
    storage: str  # as given
    root: str  # ``storage`` as Tune keeps it (absolute, or a URI)
    optuna_storage: str
    tracking_grace: float  # seconds the tracking server may be unreachable
    artifact_root: str | None  # a new MLflow experiment's artifacts: beside a SQLite store; None: the server's


@dataclass(frozen=True)
class StudyPlan:
    """Everything one study invocation does, derived once (:func:`plan`)."""

    study: Study  # with this invocation's candidates and ranges
    preset_reason: str  # why the kind chose it without --preset (a line); "" where --preset or the record said
    gpu_reason: str  # what the trials' GPUs are on a cluster with GPUs (a line); "" on one without
    search_reason: str  # which strategy ``--search default`` runs and why (a line); "" where --search named one
    preset: Preset
    study_file: str  # the .toml file the study came from; "": a built-in
    kind: TrialKind
    base: TrainConfig  # what every trial's TrainConfig shares
    schedule: SeedSchedule | None  # seeds as a fidelity; None: every seed throughout
    screen: float | None  # the screen point inside the first epoch where search trials first report; None: none
    strategy: SearchStrategy  # the one --search names (``default`` resolved), or the resumed study recorded
    search_seed: int
    trials: int
    points: tuple[dict[str, Any], ...]  # what the searcher tries first
    rungs: Rungs
    resources: Resources
    stores: Stores
    name: str  # the Tune experiment, the Optuna study, the parent run's name
    # what the parent run records (on --resume: what it recorded): the preset's name, seeds, objective and mode
    invocation: Invocation
    resuming: bool
    parent_run_id: str  # on --resume, the study's parent MLflow run; "" for a new one
    report: bool
    finalize: bool
    final_seeds: int
    forecast: Any = None  # the run's forecast from this machine's pace (search.study.sizing); None: none made
    prepared: Any = None  # the TrialData the pace was measured on, for ready() to take; None: prepared there

    @property
    def path(self) -> str:
        """The Tune experiment folder."""
        return f"{self.stores.root}/{self.name}"

    @property
    def resume_command(self) -> str:
        """The command that continues this study, pasted as it is: the study file (or built-in name) and the
        flags that locate or define it (credentials in URIs masked)."""
        stores = self.stores
        flags = ["--storage", stores.root, "--tracking-uri", mask_credentials(stores.tracking_uri)]
        flags += ["--optuna-storage", mask_credentials(stores.optuna_storage), *self.kind.flags()]
        return resume_command(self.study_file or self.study.name, self.name, flags)


def stores_of(cfg: SearchConfig) -> Stores:
    """Where the study keeps things (the runner checks them, and reads a resumed study's record, before the plan).
    Given ``--storage`` and ``--tracking-uri``, nothing lands in the working folder: Optuna's SQLite file goes
    in a local ``--storage`` folder, MLflow's artifacts beside its SQLite store (or at ``--artifact-location``)."""
    storage = cfg.storage or DEFAULT_STORAGE
    folder = local_path(cfg.storage) if cfg.storage else None
    optuna = cfg.optuna_storage or (f"sqlite:///{folder}/optuna.db" if folder else DEFAULT_OPTUNA)
    tracking = absolute_sqlite(cfg.tracking_uri)
    artifacts = artifact_uri(cfg.artifact_location) if cfg.artifact_location else beside_store(tracking)
    return Stores(tracking, storage, storage_path(storage), absolute_sqlite(optuna), cfg.tracking_grace, artifacts)


def artifact_uri(location: str) -> str:
    """``--artifact-location`` as MLflow takes it: a local folder made absolute (MLflow would resolve a relative
    one against whichever process reads it), a URI as given."""
    return location if "://" in location else Path(location).expanduser().resolve().as_uri()


def first_points(strategy: SearchStrategy, study: Study, base: TrainConfig, trials: int) -> tuple[dict[str, Any], ...]:
    """What the searcher tries first: every cell of the thesis grid (a screen); or the baseline, then each
    auxiliary task alone, as many as leave the sampler two of the ``trials``; or the baseline alone."""
    if strategy.first == "cells":
        return tuple(thesis_grid(study, base))
    tasks = task_points(study, base)[: max(0, trials - 3)] if strategy.first == "tasks" else []
    return (baseline_choices(study, base), *tasks)


def cohort_families(points: tuple[dict[str, Any], ...]) -> int:
    """How many schema families the first points hold (single-task one of them): cohort halving keeps each
    family's leader (``search.study.halving``)."""
    return len({point.get("schema") if point.get("multitask") else "single-task" for point in points})


def resolved_search(cfg: SearchConfig, study: Study, base: TrainConfig, preset: Preset) -> tuple[SearchConfig, str]:
    """``cfg`` with ``--search default`` made the strategy it runs (the invocation records that one, so a
    resumed study keeps it), and the line that says why; ``cfg`` as it is where ``--search`` named one."""
    if cfg.search != DEFAULT:
        return cfg, ""
    trials, cells = cfg.trials or preset.trials, len(thesis_grid(study, base))
    search = default_search(trials, cells, cfg.max_concurrent, cells_only=cfg.trials is None)
    if search == WIDE:
        return replace(cfg, search=search), (
            f"--search {search}: {cfg.max_concurrent} slots hold the {cells} cells of the grid at once: each trains "
            "on 2 seeds under ASHA, in the slot-time the cell screen would leave idle (--search cells-halving for it)"
        )
    if search == FALLBACK:
        return replace(
            cfg, search=search
        ), f"--search {search}: {trials} trials cannot hold the {cells} cells of the grid"
    budget = f"{trials} trials: the {cells} cells, then TPE" if cfg.trials else f"{cells} trials (--trials N adds TPE)"
    return replace(cfg, search=search), f"--search {search}: every one of the {cells} cells of the grid; {budget}"


def check_screen_rungs(strategy: SearchStrategy, screen: float | None, search_reason: str) -> float | None:
    """``screen`` where the strategy's rungs decide at it (halving: the cohort is compared there); one line
    where ``--screen-fraction`` asks for one under ASHA, whose rungs are whole epochs."""
    if screen and not strategy.cohort:
        why = f" ({search_reason})" if search_reason else ""
        raise ConfigError(
            f"--screen-fraction {screen:g}: --search {strategy.name}{why} decides at whole epochs; a screen point "
            "needs the halving rungs (--search cells-halving)"
        )
    return screen


def rungs_of(
    cfg: SearchConfig, strategy: SearchStrategy, preset: Preset, epochs: int, search_reason: str = ""
) -> Rungs:
    """ASHA's rungs; a grace period past the last epoch stops nothing, as one at it does (a replay runs at its
    table's epochs, whatever the grace period was chosen for). ``search_reason``: why ``--search default``
    became the strategy it is, said where a flag needs another."""
    strata = cfg.strata if cfg.strata is not None else strategy.strata
    hedge = cfg.hedge if cfg.hedge is not None else strategy.hedge
    if (strata > 1 or hedge) and not strategy.cohort:
        why = f" ({search_reason}; --search cells-halving has it)" if search_reason else ""
        raise ConfigError(f"--strata and --hedge act on cohort halving: --search {strategy.name} has none{why}")
    grace = min(cfg.grace_period or preset.grace_period, epochs)
    return Rungs(grace, reduction_factor_of(cfg, preset), epochs, strata, hedge)


def resources_of(cfg: SearchConfig, kind: TrialKind, site: Site, gpus: float) -> Resources:
    ray_cpus = kind.ray_cpus(cfg.max_concurrent, cfg.cpus_per_trial, site.cpus)
    return Resources(cfg.cpus_per_trial, gpus, cfg.max_concurrent, cfg.max_failures, cfg.address, ray_cpus)


def plan(cfg: SearchConfig, kind: TrialKind, site: Site, stores: Stores, started: Started | None = None) -> StudyPlan:
    """The study ``cfg`` asks for, with ``kind``'s trials; on ``--resume``, ``cfg`` is the invocation ``started``
    as :func:`~search.study.config.continuing` gives it back, and the seeds, objective, mode and trials are the
    ones it recorded (more trials where ``--trials`` asks: :mod:`search.study.extend`). Tune restores a resumed
    study's searcher, scheduler and param space: its points, rungs and seed schedule are not used again."""
    preset_name, preset_reason = (cfg.preset, "") if cfg.preset else kind.default_preset(site.gpus or 0.0)
    study = study_of(cfg, preset_name)
    kind.check(study)
    preset = study.preset(preset_name)
    base = base_config(replace(cfg, epochs=kind.epochs(cfg.epochs)), study, preset)
    cfg, search_reason = resolved_search(cfg, study, base, preset)
    strategy = strategy_of(cfg.search)  # resolved once: everything after takes the object
    rungs = rungs_of(cfg, strategy, preset, base.epochs, search_reason)
    seeds = seeds_of(cfg, preset) if started is None else started.invocation.seeds
    first = first_rung_of(cfg, preset)
    screen = check_screen_rungs(strategy, screen_of(cfg, base.warmup * base.epochs), search_reason)
    schedule = None if first is None else seed_schedule(strategy, len(seeds), first, rungs)
    points = first_points(strategy, study, base, cfg.trials or preset.trials)
    gpus, gpu_reason = gpus_per_trial(cfg.gpus_per_trial, site.gpus or 0.0)
    resources = resources_of(cfg, kind, site, gpus)
    resuming = started is not None
    if started is None:
        name = cfg.name or f"{cfg.study}-{preset_name}-{site.stamp}"
        cells = strategy.only_first or (strategy.cells_budget and not cfg.trials)
        trials = len(points) if cells else (cfg.trials or preset.trials)
        record = Record(cfg, kind, study, preset_name, base, tuple(seeds), first or 0, trials, gpus, screen or 0.0)
        started = Started(name, record.invocation(f"{stores.root}/{name}", stores.optuna_storage), "")
    invocation = started.invocation
    if resuming and strategy.only_first and (cfg.trials or 0) > invocation.trials:
        raise ConfigError(
            f"--resume --trials {cfg.trials}: study {started.name} is --search {strategy.name}, its "
            f"{invocation.trials} points and nothing else; expected a study searched by a sampler (--search tpe)"
        )
    made = StudyPlan(
        study=study,
        preset_reason=preset_reason,
        gpu_reason=gpu_reason,
        search_reason=search_reason,
        preset=preset,
        study_file=cfg.study_file or "",
        kind=kind,
        base=base,
        schedule=schedule,
        screen=screen,
        strategy=strategy,
        search_seed=cfg.search_seed,
        trials=max(invocation.trials, cfg.trials or 0) if resuming else invocation.trials,
        points=points[: invocation.trials],  # a point past the budget would wait in Optuna, never run
        rungs=rungs,
        resources=resources,
        stores=stores,
        name=started.name,
        invocation=invocation,
        resuming=resuming,
        parent_run_id=started.parent_run_id,
        report=cfg.report,
        finalize=cfg.finalize,
        final_seeds=cfg.final_seeds or preset.final_seeds,
    )
    return kind.checked(made)  # what the kind cannot run is refused here, before anything starts


@dataclass(frozen=True)
class Record:
    """What a new study's parent run records of it (:class:`Invocation`), from the plan's parts."""

    cfg: SearchConfig
    kind: TrialKind
    study: Study
    preset_name: str
    base: TrainConfig
    seeds: tuple[int, ...]
    first_rung_seeds: int  # 0: none
    trials: int
    gpus_per_trial: float
    screen: float = 0.0  # 0: none

    def invocation(self, tune_path: str, optuna_storage: str) -> Invocation:
        cfg, study, base = self.cfg, self.study, self.base
        return Invocation(
            study=cfg.study,
            preset=self.preset_name,
            search=cfg.search,
            trials=self.trials,
            seeds=self.seeds,
            objective=objective_of(cfg, study),
            mode=cfg.mode or study.mode,
            model=base.encoder.model,
            epochs=base.epochs,
            candidates=tuple(study.candidates),
            protocol=base.protocol,
            tune_path=mask_credentials(tune_path),
            optuna_storage=mask_credentials(optuna_storage),
            gpus_per_trial=self.gpus_per_trial,
            cpus_per_trial=cfg.cpus_per_trial,
            max_concurrent=cfg.max_concurrent,
            simulate=self.kind.truth,
            first_rung_seeds=self.first_rung_seeds,
            screen=self.screen,
            train_rows=cfg.train_rows or 0,
            eval_rows=cfg.eval_rows or 0,
        )


def gpus_per_trial(asked: float | None, cluster_gpus: float) -> tuple[float, str]:
    """A trial's GPUs (``--gpus-per-trial``, else one where the cluster has GPUs) and what to say about them."""
    if not cluster_gpus:
        return asked or 0.0, ""
    if asked is None:
        return 1.0, f"{cluster_gpus:g} GPU(s) in the cluster: each trial asks for one (--gpus-per-trial 0.5 shares one)"
    if asked == 0:
        return 0.0, f"--gpus-per-trial 0 on a cluster with {cluster_gpus:g} GPU(s): trials train on CPUs only"
    return asked, ""


def plan_offline(cfg: SearchConfig, kind: TrialKind) -> StudyPlan:
    """``cfg``'s plan where nothing runs on a cluster (the estimate, the simulator, benchmarks, tests): no GPUs
    counted (without ``--preset``, the kind's default for a cluster without GPUs), this machine's CPUs."""
    return plan(cfg, kind, Site(time.strftime("%Y%m%d-%H%M%S"), os.cpu_count() or 1), stores_of(cfg))


def seed_schedule(strategy: SearchStrategy, seeds: int, first: int, rungs: Rungs) -> SeedSchedule:
    """Seeds as a fidelity: ``first`` seeds to the first rung, times the reduction factor per rung passed, all
    K past the last; under a strategy whose finalists alone train every seed, ``first`` up to the last epoch
    below ``max_t`` (the last halving rung) and all K past it, and the baseline ``first`` throughout (finalize
    compares it with the winner on fresh seeds; more seeds here would decide nothing)."""
    if strategy.finalist_seeds and rungs.max_t > 1:
        return SeedSchedule(seeds, first, (rungs.max_t - 1,), rungs.reduction_factor, baseline_first=True)
    return SeedSchedule(seeds, first, rungs_epochs(rungs), rungs.reduction_factor)


def rungs_epochs(rungs: Rungs) -> tuple[int, ...]:
    return asha_rungs(rungs.grace_period, rungs.reduction_factor, rungs.max_t)


def base_config(cfg: SearchConfig, study: Study, preset: Preset) -> TrainConfig:
    """Everything a trial's TrainConfig shares: the preset's scale plus command-line overrides."""
    return TrainConfig(
        tasks=(study.primary,),
        primary=study.primary,
        sampling=SamplingConfig(),
        encoder=EncoderConfig(
            model=cfg.model or preset.model, max_seq_length=preset.max_seq_length, layers=preset.layers
        ),
        epochs=cfg.epochs or preset.epochs,
        batch_size=preset.batch_size,
        seed=0,
        lr=preset.lr or TrainConfig.lr,
        max_train_examples=cfg.train_rows or preset.max_train_examples,
        train_fraction=preset.train_fraction,
        max_eval_examples=cfg.eval_rows or preset.max_eval_examples,
        max_auxiliary_eval_examples=preset.max_auxiliary_eval_examples,
        protocol=cfg.protocol,
        data_dir=str(Path(cfg.data_dir or data_root()).resolve()),
        precision=cfg.precision or preset.precision,
        group_by_length=preset.group_by_length,
        evaluate_test=False,  # nothing in the search may look at test; finalize's runs score it on fresh seeds
    )


def data_root() -> str:
    return os.environ.get("MTL_DATA_DIR", "data")
