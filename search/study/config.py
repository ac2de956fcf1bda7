"""What the user said to one study invocation (``search.run``'s flags), validated; :func:`search.study.plan.plan`
derives everything else from it once, with the helpers below (which the validation uses too)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from search.study.strategy import DEFAULT, STRATEGIES
from search.tracking.records import Invocation
from spaces import Preset, Range, Study, get_study
from trainables.config import PRECISIONS, ConfigError
from trainables.fidelity import check_screen
from trainables.tasks.base import PROTOCOLS

SEARCHES = (DEFAULT, *STRATEGIES)  # search.study.strategy: what each --search does


@dataclass(frozen=True)
class SearchConfig:
    study: str  # the study's name
    preset: str | None = None  # None: the trial kind's default (trained: full where the cluster has GPUs, else smoke)
    trials: int | None = None  # None: the preset's
    seeds: int | None = None  # number of seeds; None: the preset's
    max_concurrent: int = 2
    gpus_per_trial: float | None = None  # None: one where the cluster has GPUs, else none
    cpus_per_trial: float = 1.0
    metric: str | None = None  # primary-task metric name or full result key; None: the study's
    mode: str | None = None
    tracking_uri: str = "sqlite:///mlflow.db"
    train_rows: int | None = None  # at most this many training rows per task; None: the preset's (or the pace's)
    eval_rows: int | None = None  # at most this many dev and test rows of the primary; None: as train_rows
    artifact_location: str | None = None  # a new experiment's artifacts; None: beside a SQLite store, else the server's
    storage: str | None = None  # None: ./ray_results
    optuna_storage: str | None = None  # None: optuna.db in a local --storage folder, else ./optuna.db
    resume: bool = False
    name: str | None = None
    address: str | None = None
    search: str = DEFAULT  # search.study.strategy (plan() resolves "default"); docs/search-strategies.md
    model: str | None = None
    epochs: int | None = None
    grace_period: int | None = None
    reduction_factor: int | None = None
    max_failures: int = 2
    auxiliary: tuple[str, ...] | None = None  # restrict the study's candidates
    data_dir: str | None = None
    protocol: str = PROTOCOLS[0]  # holdout
    search_seed: int = 0
    report: bool = True
    finalize: bool = True  # the final test comparison of winner and baseline (search.finalize)
    final_seeds: int | None = None  # seeds of that comparison; None: the preset's
    # overrides of the study's ranges: (low, high)
    exponent_range: tuple[float, float] | None = None
    anneal_range: tuple[float, float] | None = None
    lr_range: tuple[float, float] | None = None
    warmup_range: tuple[float, float] | None = None
    precision: str | None = None  # None: the preset's
    tracking_grace: float = 600.0  # seconds the tracking server may be unreachable before the study stops, resumable
    simulate: str | None = None  # a truth file (absolute path): simulated trials, no torch, no data
    # seeds as a fidelity: seeds of a trial's first ASHA rung, times the reduction factor per rung
    # passed (trainables.fidelity); None: every trial trains every seed
    first_rung_seeds: int | None = None
    # a screen rung: the fraction of the first epoch after which every search trial first reports (halving rungs
    # decide there); None: the strategy's; 0: none
    screen_fraction: float | None = None
    # cohort halving (search.study.cohort_rule): exposure strata of a rung's ranking, and cells let past every rung
    # below the last (a hedge); None: the strategy's
    strata: int | None = None
    hedge: int | None = None
    study_file: str | None = None  # the .toml file the study came from (absolute); None: a built-in study

    def __post_init__(self) -> None:
        study = get_study(self.study)  # raises on an unknown study
        if self.preset is not None:
            study.preset(self.preset)
        if self.final_seeds is not None and self.final_seeds < 3:  # search.answer.stats.MIN_PAIRS, a room above
            raise ConfigError(f"--final-seeds {self.final_seeds}: expected >= 3 (fewer seeds can give no verdict)")
        if self.search not in SEARCHES:
            raise ConfigError(f"--search {self.search!r}: expected one of {', '.join(SEARCHES)}")
        for flag, value in (
            ("--trials", self.trials),
            ("--seeds", self.seeds),
            ("--epochs", self.epochs),
            ("--max-concurrent", self.max_concurrent),
            ("--grace-period", self.grace_period),
            ("--train-rows", self.train_rows),
            ("--eval-rows", self.eval_rows),
        ):
            if value is not None and value < 1:
                raise ConfigError(f"{flag} {value}: expected >= 1")
        if self.reduction_factor is not None and self.reduction_factor < 2:
            raise ConfigError(f"--reduction-factor {self.reduction_factor}: expected >= 2")
        gpus = self.gpus_per_trial or 0.0
        if gpus < 0 or self.cpus_per_trial <= 0:
            raise ConfigError(
                f"--gpus-per-trial {self.gpus_per_trial} / --cpus-per-trial {self.cpus_per_trial}: "
                "expected GPUs >= 0 and CPUs > 0"
            )
        if gpus > 1 and gpus != int(gpus):
            raise ConfigError(f"--gpus-per-trial {self.gpus_per_trial}: fractions only below 1")
        if self.mode is not None and self.mode not in ("max", "min"):
            raise ConfigError(f"--mode {self.mode!r}: expected max or min")
        if self.auxiliary is not None:
            if not self.auxiliary:
                raise ConfigError(f"--auxiliary is empty: study {self.study} needs at least one auxiliary task")
            if study.primary in self.auxiliary or study.primary_name in self.auxiliary:
                raise ConfigError(f"--auxiliary lists the primary task {study.primary!r}")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"--protocol {self.protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        if not self.tracking_grace >= 0:
            raise ConfigError(f"--tracking-grace {self.tracking_grace}: expected seconds >= 0")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ConfigError(f"--precision {self.precision!r}: expected one of {', '.join(PRECISIONS)}")

        if self.screen_fraction:  # 0: none
            check_screen(self.screen_fraction)
        if self.strata is not None and self.strata < 1:
            raise ConfigError(f"--strata {self.strata}: expected >= 1 (1: one ranking of every trial at a rung)")
        if self.hedge is not None and self.hedge < 0:
            raise ConfigError(f"--hedge {self.hedge}: expected >= 0 cells")
        check_first_rung(self, study_of(self, self.preset))  # study_of validates the ranges


# -- what plan() derives from the flags (search.study.plan); validation above checks the same ------
def study_of(cfg: SearchConfig, preset: str | None) -> Study:
    """The study with this invocation's candidates and ranges (validated on construction) under ``preset``."""
    study = get_study(cfg.study)
    changes: dict = {}
    if preset is not None and study.preset(preset).primary:
        changes["primary"] = study.preset(preset).primary
    if cfg.auxiliary is not None:
        changes["candidates"] = cfg.auxiliary
    if preset is not None and study.lr is not None and study.preset(preset).lr_range is not None:
        changes["lr"] = study.preset(preset).lr_range  # --lr-range, below, still wins
    for field, value in (
        ("exponent", cfg.exponent_range),
        ("anneal_c", cfg.anneal_range),
        ("lr", cfg.lr_range),
        ("warmup", cfg.warmup_range),
    ):
        if value is not None:
            changes[field] = Range(value[0], value[1], log=field == "lr")
    return replace(study, **changes) if changes else study


def objective_of(cfg: SearchConfig, study: Study) -> str:
    """The Tune result key the search ranks by: ``--metric`` (a primary dev metric or a full key), else the study's."""
    if cfg.metric is None:
        return study.objective
    if "/" in cfg.metric:
        return cfg.metric if cfg.metric.endswith(("/mean", "/std")) else f"{cfg.metric}/mean"
    return f"{study.primary_name}/dev/{cfg.metric}/mean"


DEFAULT_SEEDS = 3  # a trial's seeds where neither a flag, the preset nor the search strategy says


def seeds_of(cfg: SearchConfig, preset: Preset) -> tuple[int, ...]:
    """The seeds every trial trains: 1..--seeds, else the preset's, else 1..the search strategy's, else 1..3 (as
    ``reduction_factor_of`` reads the reduction factor)."""
    if cfg.seeds is not None:
        return tuple(range(1, cfg.seeds + 1))
    if preset.seeds is not None:
        return tuple(preset.seeds)
    own = STRATEGIES[cfg.search].seeds if cfg.search in STRATEGIES else None  # "default": not chosen yet
    return tuple(range(1, (own or DEFAULT_SEEDS) + 1))


def first_rung_of(cfg: SearchConfig, preset: Preset | None) -> int | None:
    """Seeds of a trial's first rung: ``--first-rung-seeds``, else the preset's (a study file may set it), else
    the search strategy's; None: all."""
    if cfg.first_rung_seeds is not None or preset is None:
        return cfg.first_rung_seeds
    if preset.first_rung_seeds is not None:
        return preset.first_rung_seeds
    return STRATEGIES[cfg.search].first_rung_seeds if cfg.search in STRATEGIES else None  # "default": not chosen yet


def screen_of(cfg: SearchConfig, warmup_epochs: float = 0.0) -> float | None:
    """The screen point inside the first epoch: ``--screen-fraction`` (0: none), else the search strategy's, moved
    to the end of the learning-rate warm-up where that comes later (``warmup_epochs``: the warm-up in epochs, the
    study's base config's; measured: a quarter-epoch into warm-up, small models score at or below the majority
    rate, benchmarks/README.md), and none where the warm-up outlasts the first epoch."""
    if cfg.screen_fraction is not None:
        return cfg.screen_fraction or None
    screen = STRATEGIES[cfg.search].screen if cfg.search in STRATEGIES else None  # "default": not chosen yet
    if screen is None:
        return None
    screen = max(screen, round(warmup_epochs, 4))
    return screen if screen < 1 else None


def reduction_factor_of(cfg: SearchConfig, preset: Preset) -> int:
    """ASHA's reduction factor: ``--reduction-factor``, else the preset's, else the search strategy's, else 2."""
    return cfg.reduction_factor or preset.reduction_factor or STRATEGIES[cfg.search].reduction_factor or 2


def check_first_rung(cfg: SearchConfig, study: Study) -> None:
    """1 <= N <= K once K is known (``--seeds`` or a chosen preset), on a seed-mean objective."""
    preset = None if cfg.preset is None else study.preset(cfg.preset)
    n = first_rung_of(cfg, preset)
    if n is None:
        return
    source = "--first-rung-seeds" if cfg.first_rung_seeds is not None else f"preset {cfg.preset} first_rung_seeds"
    if cfg.seeds is not None or preset is not None:
        k = cfg.seeds if preset is None else len(seeds_of(cfg, preset))
        if not 1 <= n <= k:
            raise ConfigError(f"{source} {n}: expected 1 to {k} (the seeds every trial trains)")
    elif n < 1:
        raise ConfigError(f"--first-rung-seeds {n}: expected >= 1")
    if not objective_of(cfg, study).endswith("/mean"):
        raise ConfigError(f"{source}: the objective {objective_of(cfg, study)} is no seed mean to pair")


def continuing(cfg: SearchConfig, started: Invocation) -> SearchConfig:
    """``--resume``: the restored trials need the original invocation's data, whatever the flags say now."""
    return replace(
        cfg,
        preset=started.preset,
        model=started.model,
        epochs=started.epochs,
        protocol=started.protocol,
        auxiliary=started.candidates or None,
        simulate=started.simulate or None,
        first_rung_seeds=started.first_rung_seeds or None,
        screen_fraction=started.screen,  # 0: none, as recorded
        train_rows=started.train_rows or None,  # the rows it trained (--train-rows, or sized to the machine's pace)
        eval_rows=started.eval_rows or None,
        seeds=len(started.seeds),
        search=started.search or cfg.search,  # the strategy it ran (resolved from "default" when it started)
        # the Optuna study where the invocation recorded it, unless the flag says (or the record masks a password)
        optuna_storage=cfg.optuna_storage or (None if "***" in started.optuna_storage else started.optuna_storage),
    )
