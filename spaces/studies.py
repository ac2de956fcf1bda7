"""Studies as data: what is searched, for which primary task, scored how.

A study is read from a TOML file (:mod:`spaces.study_file`); the built-in ones ship
as such files too. These dataclasses are what a file becomes, validated on construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from trainables.config import (
    BANDIT_REWARDS,
    DEFAULT_MODEL,
    GRADIENTS,
    LOSS_WEIGHTINGS,
    PRECISIONS,
    STEP_MODES,
    UNFREEZE,
    ConfigError,
)

# The thesis grid's schemas (Section 4); "power" (any real exponent) is ours.
THESIS_SCHEMAS = ("sequential", "random", "prop", "sqrt", "square", "anneal")
SEARCH_SCHEMAS = THESIS_SCHEMAS + ("power",)
ADAPTIVE_SCHEMAS = ("bandit",)  # not static: searched only where a study lists them (issue 19)


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    log: bool = False

    def check(self, what: str, floor: float | None = None, ceiling: float | None = None) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: expected finite numbers")
        if self.low > self.high:
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: low is above high")
        if floor is not None and self.low < floor or ceiling is not None and self.high > ceiling:
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: expected within [{floor}, {ceiling}]")
        if self.log and self.low <= 0:
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: a log range needs low > 0")


@dataclass(frozen=True)
class Preset:
    """Scale of a study run: data limits, sequence length, epochs, encoder.

    The defaults are the thesis's scale (all data, 4 epochs), for GPUs, with the search strategy's seeds.
    """

    epochs: int = 4
    max_train_examples: int | None = None  # per task, whole evaluation groups; None: all
    # every task's training rows times this, so the tasks keep their size ratios (and each schema its real
    # share of the primary: trainables.exposure); None: all, up to max_train_examples
    train_fraction: float | None = None
    layers: int | None = None  # the encoder's first N transformer layers only (None: all)
    max_eval_examples: int | None = None
    max_auxiliary_eval_examples: int | None = None  # None: as max_eval_examples
    max_seq_length: int = 128
    model: str = DEFAULT_MODEL
    trials: int = 64
    seeds: tuple[int, ...] | None = None  # None: the search strategy's, else 1-3 (search.study.config.seeds_of)
    batch_size: int = 24
    grace_period: int = 1  # ASHA: epochs every trial gets before it can be stopped
    reduction_factor: int | None = None  # None: the search strategy's, else 2 (ASHA's halving)
    # the primary task's spec at this scale (another construction of the same task, e.g.
    # "semeval:NLI_M": 5 rows per sentence where QA_B has 25); None: the study's
    primary: str | None = None
    # lr of every trial that does not search it, the baseline's included (None: the thesis's 2e-5)
    lr: float | None = None
    # the searched lr range at this scale, where the study searches lr (None: the study's range);
    # a small, short run learns only at a higher lr than the thesis's scale
    lr_range: Range | None = None
    final_seeds: int = 5  # seeds of the final winner-vs-baseline test comparison (search.finalize)
    note: str = ""  # one line: what a study at this scale can and cannot tell
    precision: str = "auto"  # trainables.config.PRECISIONS; a property of the hardware, never searched
    # seeds as a fidelity: seeds of a trial's first ASHA rung (search.run --first-rung-seeds); None: all
    first_rung_seeds: int | None = None
    # training batches of similar lengths (trainables.config.TrainConfig.group_by_length): less padding
    group_by_length: bool = False

    def __post_init__(self) -> None:
        at_least = {
            "epochs": (self.epochs, 1),
            "max_seq_length": (self.max_seq_length, 8),
            "trials": (self.trials, 1),
            "batch_size": (self.batch_size, 1),
            "grace_period": (self.grace_period, 1),
            "reduction_factor": (self.reduction_factor, 2),
            "final_seeds": (self.final_seeds, 3),  # fewer paired seeds give no verdict
            "max_train_examples": (self.max_train_examples, 1),
            "max_eval_examples": (self.max_eval_examples, 1),
            "max_auxiliary_eval_examples": (self.max_auxiliary_eval_examples, 1),
        }
        for key, (value, floor) in at_least.items():
            if value is not None and value < floor:
                raise ConfigError(f"{key} {value}: expected >= {floor}")
        if self.train_fraction is not None and not 0 < self.train_fraction <= 1:
            raise ConfigError(f"train_fraction {self.train_fraction}: expected a fraction in (0, 1]")
        if self.layers is not None and self.layers < 1:
            raise ConfigError(f"layers {self.layers}: expected >= 1")
        if self.seeds is not None and (not self.seeds or len(set(self.seeds)) != len(self.seeds)):
            raise ConfigError(f"seeds {list(self.seeds)}: expected distinct seeds, at least one")
        if not self.model:
            raise ConfigError("model: expected an encoder name or path")
        if self.lr is not None and not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError(f"lr {self.lr}: expected a positive number")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision {self.precision!r}: expected one of {', '.join(PRECISIONS)}")
        if self.lr_range is not None:
            self.lr_range.check("lr_range", 0.0, 1.0)
        if self.first_rung_seeds is not None:
            most = len(self.seeds) if self.seeds is not None else self.first_rung_seeds  # else checked once planned
            if not 1 <= self.first_rung_seeds <= most:
                bound = f"1 to {most} (the seeds)" if self.seeds is not None else ">= 1"
                raise ConfigError(f"first_rung_seeds {self.first_rung_seeds}: expected {bound}")


def smoke_note(preset: Preset) -> str:
    """The smoke preset's note, from its own values (a study file's smoke preset may change them)."""
    model = "MiniLM" if preset.model == DEFAULT_MODEL else preset.model
    rows = f"at most {preset.max_train_examples} training rows per task" if preset.max_train_examples else "all rows"
    seeds = f"{len(preset.seeds)} seeds" if preset.seeds else "the search strategy's seeds"
    return (
        f"smoke preset: {model}, {rows}, {preset.epochs} epochs, {seeds}: it proves the machinery, "
        "nothing more; differences between configs at this scale are seed noise"
    )


# 2 CPU cores, minutes: every piece of the machinery, nothing more
SMOKE = Preset(
    epochs=3,
    max_train_examples=500,
    max_eval_examples=250,
    max_seq_length=64,
    trials=6,
    seeds=(1, 2),
    batch_size=16,
    reduction_factor=3,
    lr=1e-4,
    final_seeds=3,
)
# Where a study file says nothing about a preset of these names (it may name others too).
DEFAULT_PRESETS: Mapping[str, Preset] = {"smoke": replace(SMOKE, note=smoke_note(SMOKE)), "full": Preset()}


@dataclass(frozen=True)
class Study:
    name: str
    primary: str
    candidates: tuple[str, ...]  # auxiliary tasks the search may add
    metric: str  # primary task metric the study maximises, e.g. "acc_4way"
    mode: str = "max"
    schemas: tuple[str, ...] = SEARCH_SCHEMAS
    exponent: Range = Range(0.0, 3.0)
    anneal_c: Range = Range(0.0, 1.0)
    # Optional dimensions: None keeps the preset's value (else the thesis default) fixed.
    lr: Range | None = Range(1e-5, 1e-4, log=True)
    warmup: Range | None = Range(0.0, 0.2)
    batch_sizes: tuple[int, ...] | None = None
    # Auxiliary task -> fixed importance weight (default: the secondary tier, 2; the primary weighs 4).
    weights: Mapping[str, float] = field(default_factory=dict)
    # Searched weights: each selected auxiliary's weight relative to the primary's, on this log
    # range (then ``weights`` is not used). None: fixed weights.
    weight: Range | None = None
    presets: Mapping[str, Preset] = field(default_factory=dict)
    # Issue 19's strategies: each tuple lists the choices searched (one choice: fixed); the defaults
    # are off, and a dimension is in the space only where a study changes it from its default.
    bandit_reward: tuple[str, ...] = ("loss",)  # with "bandit" among the schemas
    bandit_lr: Range = Range(0.01, 1.0, log=True)
    bandit_explore: Range = Range(0.01, 0.5)
    bandit_every: int = 10
    loss_weighting: tuple[str, ...] = ("none",)  # multitask trials only
    step_modes: tuple[str, ...] = ("sampled",)  # multitask trials only
    gradients: tuple[str, ...] = ("sum",)  # multitask trials whose steps hold several tasks
    layer_decay: Range | None = None  # single-task and multitask trials alike
    unfreeze: tuple[str, ...] = ("off",)  # single-task and multitask trials alike
    unfreeze_every: Range = Range(10, 1000, log=True)  # steps, with unfreeze "step"
    # Published results on the primary's test split, for the report.
    published: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("max", "min"):
            raise ConfigError(f"mode {self.mode!r}: expected max or min")
        if self.primary in self.candidates:
            raise ConfigError(f"candidates list the primary task {self.primary!r}: expected auxiliary tasks only")
        if len(set(self.candidates)) != len(self.candidates):
            raise ConfigError(f"candidates {list(self.candidates)}: a task is listed twice")
        allowed = SEARCH_SCHEMAS + ADAPTIVE_SCHEMAS
        unknown = set(self.schemas) - set(allowed)
        if unknown or not self.schemas:
            raise ConfigError(f"schemas {sorted(unknown)}: expected some of {', '.join(allowed)}")
        self.check_strategies()
        self.exponent.check("exponent", 0.0, 10.0)
        self.anneal_c.check("anneal_c", 0.0, 1.0)
        if self.lr is not None:
            self.lr.check("lr", 0.0, 1.0)
        if self.warmup is not None:
            self.warmup.check("warmup", 0.0, 0.99)
        if self.batch_sizes is not None and (not self.batch_sizes or min(self.batch_sizes) < 1):
            raise ConfigError(f"batch_sizes {list(self.batch_sizes)}: expected batch sizes >= 1, at least one")
        for task, w in self.weights.items():
            if not (w > 0 and math.isfinite(w)):
                raise ConfigError(f"weights: {task} = {w}: expected a positive number or a tier")
        if self.weight is not None:
            if not self.weight.log:
                raise ConfigError(f"weight range [{self.weight.low}, {self.weight.high}]: expected a log range")
            self.weight.check("weight", 1e-3, 1e3)
        for name, preset in self.presets.items():
            if preset.primary is not None and preset.primary.partition(":")[0] != self.primary_name:
                raise ConfigError(
                    f"presets.{name}.primary {preset.primary!r}: expected a construction of {self.primary_name!r}"
                )

    def check_strategies(self) -> None:
        """Issue 19's dimensions: known choices, each once; ranges within what the config accepts."""
        choices = {
            "bandit_reward": BANDIT_REWARDS,
            "loss_weighting": LOSS_WEIGHTINGS,
            "step_modes": STEP_MODES,
            "gradients": GRADIENTS,
            "unfreeze": UNFREEZE,
        }
        for key, allowed in choices.items():
            value = getattr(self, key)
            if not value or set(value) - set(allowed) or len(set(value)) != len(value):
                raise ConfigError(f"{key} {list(value)}: expected distinct choices among {', '.join(allowed)}")
        self.bandit_lr.check("bandit_lr", 1e-6, 1e3)
        self.bandit_explore.check("bandit_explore", 1e-6, 1.0)
        self.unfreeze_every.check("unfreeze_every", 1, 1e9)
        if self.bandit_every < 1:
            raise ConfigError(f"bandit_every {self.bandit_every}: expected >= 1")
        if self.layer_decay is not None:
            self.layer_decay.check("layer_decay", 1e-6, 1.0)

    def strategy_dimensions(self) -> tuple[str, ...]:
        """The strategy dimensions this study changes from their off defaults (what its space searches)."""
        fields = self.__dataclass_fields__
        keys = ("loss_weighting", "step_modes", "gradients", "unfreeze")
        on = tuple(k for k in keys if getattr(self, k) != fields[k].default)
        return (
            on
            + (("layer_decay",) if self.layer_decay is not None else ())
            + (("bandit",) if "bandit" in self.schemas else ())
        )

    @property
    def primary_name(self) -> str:
        """The primary task's name, which prefixes its metric keys (``semeval:NLI_M`` -> ``semeval``;
        a ``csv:`` task's, from its config file)."""
        from trainables.tasks import declared_name  # reads a csv: task's config file, no data

        return declared_name(self.primary)

    @property
    def objective(self) -> str:
        """The Tune metric: seed mean of the primary task's dev metric."""
        return f"{self.primary_name}/dev/{self.metric}/mean"

    def preset(self, name: str) -> Preset:
        if name not in self.presets:
            raise ConfigError(f"study {self.name}: unknown preset {name!r}, expected one of {', '.join(self.presets)}")
        return self.presets[name]
