"""From a point of the space to the config that trains, and the key that identifies it.

Configs that train identically collapse to one canonical config before any
compute: one task makes every schema the same; equal weights make every
exponent give the uniform distribution (thesis Proposition 4.7.1); anneal with
c = 0, or over a single epoch, is prop; power with a named exponent is that
schema; weights count only relative to each other; and a fixed exponent acts on
the weights only through ``w**a``, so weights w with exponent a and weights w**a
with exponent 1 are one config (:func:`static_form`).

The strategies of issue 19 collapse where they cannot act: PCGrad where no optimizer step can
hold two tasks (one task, or one micro-batch per step) is the sum; one batch of every task per
step, with one task, is the sampled step; with several it makes the schema moot (no draws);
a bandit's parameters, the log-variances' lr and the unfreezing period count only where their
option is on. A config with every strategy off keeps the key it had before them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from spaces.studies import THESIS_SCHEMAS, Study
from trainables.config import TIERS, OptimConfig, SamplingConfig, TrainConfig
from trainables.exposure import primary_share
from trainables.tasks import declared_name

NAMED_EXPONENTS = {0.0: "random", 0.5: "sqrt", 1.0: "prop", 2.0: "square"}
EXPONENTS = {schema: a for a, schema in NAMED_EXPONENTS.items()}
WEIGHTED = ("prop", "sqrt", "square", "power", "anneal")  # schemas that read the weights
# the one auxiliary of a multitask point whose aux/<task> flags all came out off (spaces.space)
AUX_ONLY = "aux_only"
DIGITS = 12  # exponents and relative weights are rounded to this many digits in a canonical config


def flatten(choices: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"aux": {"sst2": True}}`` -> ``{"aux/sst2": True}`` (Tune unflattens searcher output)."""
    out: dict[str, Any] = {}
    for k, v in choices.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def apply_choices(base: TrainConfig, choices: Mapping[str, Any], study: Study) -> TrainConfig:
    """The (not yet canonical) config of one point of ``study``'s space, on top of ``base``."""
    c = flatten(choices)
    tasks = (study.primary,) + tuple(t for t in study.candidates if c.get(f"aux/{t}", False) or c.get(AUX_ONLY) == t)
    weights = {**dict(base.sampling.weights), **study.weights}
    if study.weight is not None:  # searched: an auxiliary's weight relative to the primary's
        primary = weights.get(study.primary, TIERS["primary"])
        weights.update({t: primary * float(c[f"weight/{t}"]) for t in tasks if f"weight/{t}" in c})
    bandit = {k: c[k] for k in ("bandit_reward", "bandit_lr", "bandit_explore") if k in c}
    sampling = SamplingConfig(
        schema=c.get("schema", "prop"),
        exponent=c.get("exponent") if c.get("schema") == "power" else None,
        anneal_c=float(c.get("anneal_c", base.sampling.anneal_c))
        if c.get("schema") == "anneal"
        else base.sampling.anneal_c,
        weights=tuple((t, weights[t]) for t in tasks if t in weights),
        **({**bandit, "bandit_every": study.bandit_every} if c.get("schema") == "bandit" else {}),
    )
    optim = {k: c[k] for k in ("loss_weighting", "gradients", "step_mode", "layer_decay", "unfreeze") if k in c}
    if c.get("unfreeze") == "step":
        optim["unfreeze_every"] = int(c["unfreeze_every"])
    return replace(
        base,
        tasks=tasks,
        primary=study.primary,
        sampling=sampling,
        optim=replace(base.optim, **optim),
        lr=float(c.get("lr", base.lr)),
        warmup=float(c.get("warmup", base.warmup)),
        batch_size=int(c.get("batch_size", base.batch_size)),
    )


def canonical(config: TrainConfig) -> TrainConfig:
    """The representative of every config that trains exactly like ``config``."""
    config = replace(config, optim=canonical_optim(config))
    if config.optim.step_mode == "all":  # every task each step: the sampler draws nothing
        return replace(config, sampling=SamplingConfig(schema="random"))
    s = config.sampling
    schema, exponent, anneal_c = s.schema, s.exponent, s.anneal_c
    if schema == "anneal" and (anneal_c == 0.0 or config.epochs == 1):
        schema = "prop"  # a(e) = 1 - c*e/E is 1 for c = 0, and at e = 0, the only epoch of E = 1
    weights = config.task_weights()
    if len(config.tasks) == 1 or (schema in WEIGHTED and len(set(weights)) == 1):
        schema, exponent = "random", None  # every exponent gives the uniform distribution
    elif schema in EXPONENTS or schema == "power":
        a = float(exponent) if schema == "power" else EXPONENTS[schema]  # type: ignore[arg-type]
        schema, exponent, weights = static_form(config.tasks.index(config.primary), weights, a)
    default = SamplingConfig()
    # w**a / sum(w**a) is scale-free: weights relative to the largest, spelled out for every task,
    # make "sst2=4,pos=2" and the tier defaults one config
    relative = tuple((t, round(w / max(weights), DIGITS)) for t, w in zip(config.tasks, weights))
    bandit = {k: getattr(s, k) for k in BANDIT_FIELDS} if schema == "bandit" else {}
    sampling = SamplingConfig(
        schema=schema,
        exponent=exponent,
        anneal_c=anneal_c if schema == "anneal" else default.anneal_c,
        weights=relative if schema in WEIGHTED else (),
        **bandit,
    )
    return replace(config, sampling=sampling)


BANDIT_FIELDS = ("bandit_reward", "bandit_lr", "bandit_explore", "bandit_every")


def canonical_optim(config: TrainConfig) -> OptimConfig:
    """The optimizer-step strategy with what cannot act on ``config`` set back to its default."""
    o, default = config.optim, OptimConfig()
    step_mode = o.step_mode if len(config.tasks) > 1 else default.step_mode
    return replace(
        o,
        step_mode=step_mode,
        gradients=o.gradients if replace(config, optim=replace(o, step_mode=step_mode)).multitask_steps else "sum",
        uncertainty_lr=o.uncertainty_lr if o.loss_weighting == "uncertainty" else default.uncertainty_lr,
        unfreeze_every=o.unfreeze_every if o.unfreeze != "off" else default.unfreeze_every,
    )


def static_form(primary: int, weights: tuple[float, ...], a: float) -> tuple[str, float | None, tuple[float, ...]]:
    """``(schema, exponent, weights)`` representing every fixed exponent a' and weights w' with
    ``w'**a' ∝ weights**a``: the distribution fixes ``v_i = a log2(w_i / w_primary)`` and nothing else.

    The representative puts the auxiliary task nearest the primary (smallest ``|v_i| > 0``; a tie
    to the lighter) at the tier ratio, half the primary's weight (twice, if it is heavier): then
    ``a' = |v_i|`` and ``w'_j = 2 ** (v_j / a')``. Tier weights (primary 4, others 2) keep their
    exponent and their schema's name, and the searched weights w with exponent a and w**a with
    exponent 1 are one config.
    """
    v = [a * math.log2(w / weights[primary]) for w in weights]
    if not any(v):
        return "random", None, weights  # a = 0
    nearest = abs(min((x for x in v if x), key=lambda x: (abs(x), x > 0)))
    exponent = float(f"{nearest:.{DIGITS}g}")
    schema = NAMED_EXPONENTS.get(exponent, "power")
    return schema, None if schema != "power" else exponent, tuple(2.0 ** (x / nearest) for x in v)


def schema_label(config: TrainConfig, digits: int = 3) -> str:
    """``single`` for one task, else the schema with its own parameter: ``power(a=1.3)``."""
    s = config.sampling
    if len(config.tasks) == 1:
        return "single"
    if config.optim.step_mode == "all":
        return "all-tasks"
    if s.schema == "bandit":
        reward = "loss" if s.bandit_reward == "loss" else f"primary/{s.bandit_every}"
        return f"bandit({reward} η={s.bandit_lr:.{digits}g} γ={s.bandit_explore:.{digits}g})"
    if s.schema == "power":
        return f"power(a={s.exponent:.{digits}g})"
    if s.schema == "anneal":
        return f"anneal(c={s.anneal_c:.{digits}g})"
    return s.schema


def task_label(spec: str) -> str:
    """A task spec as labels show it: a task from a file by its declared name (``csv:/data/topics/task.json``
    -> ``topics``, the file's ``name``); any other as written (``semeval:NLI_M``: the construction tells
    configs apart, and canonical keys recorded before stay the same)."""
    return declared_name(spec) if Path(spec.partition(":")[2]).suffix else spec


def config_label(config: TrainConfig) -> str:
    """A config's short human label: ``semeval+sst2+pos anneal(c=0.5) lr=2e-05 wu=0.1 bs=24``
    (the label part of :func:`canonical_key`; a registered model's ``label`` tag)."""
    tasks = "+".join(map(task_label, config.tasks))
    label = f"{tasks} {schema_label(config)} lr={config.lr:.2g} wu={config.warmup:.2g} bs={config.batch_size}"
    return " ".join([label, *strategy_labels(config)])


STRATEGY_PARAMS = (  # MLflow param names, in column order
    "bandit_reward",
    "bandit_lr",
    "bandit_explore",
    "bandit_every",
    "loss_weighting",
    "uncertainty_lr",
    "step_mode",
    "gradients",
    "layer_decay",
    "unfreeze",
    "unfreeze_every",
)


def strategy_params(config: TrainConfig) -> dict[str, str]:
    """Issue 19's MLflow params of a trial, only those that apply to its canonical config (none when all
    are off): the bandit's with the bandit, ``uncertainty_lr`` beside ``loss_weighting = uncertainty``, ..."""
    c = canonical(config)
    s, o = c.sampling, c.optim
    out: dict[str, Any] = {}
    if s.schema == "bandit" and len(c.tasks) > 1:
        out.update({k: getattr(s, k) for k in BANDIT_FIELDS})
    if o.loss_weighting != "none":
        out.update(loss_weighting=o.loss_weighting, uncertainty_lr=o.uncertainty_lr)
    out.update({k: getattr(o, k) for k in ("step_mode", "gradients") if getattr(o, k) != getattr(OptimConfig, k)})
    if o.layer_decay != 1.0:
        out["layer_decay"] = o.layer_decay
    if o.unfreeze != "off":
        out.update(unfreeze=o.unfreeze, unfreeze_every=o.unfreeze_every)
    return {k: f"{v:.4g}" if isinstance(v, float) else str(v) for k, v in out.items()}


def strategy_labels(config: TrainConfig, digits: int = 3) -> list[str]:
    """The strategies that are on, shortly: ``uw`` (uncertainty weights), ``pcgrad``, ``lld=0.8``
    (layer-wise lr decay), ``unfreeze/epoch`` or ``unfreeze/50`` (steps); none when all are off."""
    o = config.optim
    out = ["uw"] if o.loss_weighting == "uncertainty" else []
    out += ["pcgrad"] if o.gradients == "pcgrad" else []
    out += [f"lld={o.layer_decay:.{digits}g}"] if o.layer_decay != 1.0 else []
    if o.unfreeze != "off":
        out.append(f"unfreeze/{o.unfreeze}" if o.unfreeze_every == 1 else f"unfreeze/{o.unfreeze_every}{o.unfreeze}s")
    return out


def run_name(number: int, config: TrainConfig, baseline: bool) -> str:
    """A trial's one name (MLflow run, console, Optuna): ``t03 sst2+pos square``, ``t00 baseline``.

    The number (Optuna's) tells trials apart; the rest says what differs at a glance.
    """
    auxiliary = "+".join(task_label(t) for t in config.tasks if t != config.primary)
    short = (
        "baseline" if baseline else " ".join([auxiliary, schema_label(config, 2), *strategy_labels(config, 2)]).strip()
    )
    return f"t{number:02d} {short}"


def canonical_key(config: TrainConfig) -> str:
    """Label plus a hash of every field that changes training (not the seed or paths)."""
    c = canonical(config)
    fields = asdict(c)
    for volatile in ("seed", "data_dir", "device", "evaluate_test", "check_every", "compile", "prefetch"):
        fields.pop(volatile)
    # added after keys were first recorded: hashed only when set, so earlier studies' keys still match
    for later in ("precision", "grad_accum", "pad_to_multiple_of", "train_fraction", "group_by_length"):
        if fields[later] == TrainConfig.__dataclass_fields__[later].default:
            fields.pop(later)
    if c.encoder.layers is None:  # likewise
        fields["encoder"].pop("layers")
    if c.optim == OptimConfig():  # issue 19's, likewise
        fields.pop("optim")
    for later in BANDIT_FIELDS:
        if fields["sampling"][later] == SamplingConfig.__dataclass_fields__[later].default:
            fields["sampling"].pop(later)
    digest = hashlib.sha1(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{config_label(c)} #{digest}"


def baseline_choices(study: Study, base: TrainConfig | None = None) -> dict[str, Any]:
    """The single-task baseline: the primary alone, with ``base``'s lr, warm-up and batch size
    (default: the thesis's), moved into the study's ranges where they lie outside."""
    aux = {f"aux/{t}": False for t in study.candidates}
    return {"multitask": False, **aux, "schema": "prop", **_defaults(study, base), **_strategies_off(study)}


def baseline_moves(study: Study, base: TrainConfig) -> dict[str, tuple[float, float]]:
    """What :func:`baseline_choices` moved into the study's ranges: ``{"lr": (2e-05, 5e-05)}``."""
    chosen = _defaults(study, base)
    return {k: (getattr(base, k), chosen[k]) for k in ("lr", "warmup") if k in chosen and chosen[k] != getattr(base, k)}


def _defaults(study: Study, base: TrainConfig | None = None) -> dict[str, Any]:
    base = base or TrainConfig(tasks=(study.primary,), primary=study.primary)
    out: dict[str, Any] = {}
    if study.lr is not None:
        out["lr"] = min(max(base.lr, study.lr.low), study.lr.high)
    if study.warmup is not None:
        out["warmup"] = min(max(base.warmup, study.warmup.low), study.warmup.high)
    if study.batch_sizes:
        out["batch_size"] = base.batch_size if base.batch_size in study.batch_sizes else study.batch_sizes[0]
    return out


def _strategies_off(study: Study) -> dict[str, Any]:
    """Issue 19's dimensions at their off values (where the study's choices allow), so the baseline
    and the thesis grid's points are plain fine-tuning: Optuna would otherwise sample the ones a
    point leaves out."""

    def off(choices: tuple[str, ...], value: str) -> str:
        return value if value in choices else choices[0]

    out: dict[str, Any] = {
        "step_mode": off(study.step_modes, "sampled"),
        "loss_weighting": off(study.loss_weighting, "none"),
        "gradients": off(study.gradients, "sum"),
        "unfreeze": off(study.unfreeze, "off"),
    }
    if study.layer_decay is not None:
        out["layer_decay"] = min(max(1.0, study.layer_decay.low), study.layer_decay.high)
    return out


def task_points(study: Study, base: TrainConfig) -> list[dict[str, Any]]:
    """Each auxiliary candidate alone with the primary, under the study's static schema that gives the primary
    the most of an epoch's steps (square at the thesis's tier weights: 0.8), the other dimensions at defaults: a
    small search's first multitask points. An epoch is the mean of the tasks' sizes (thesis 3.3), so a schema
    that dilutes the primary leaves a short run's primary undertrained: at the smoke preset's 3 epochs a
    pos+sentihood sequential trial stayed at the majority rate, and TPE's first draws are as likely to be such
    configs as not."""
    defaults = {**_defaults(study, base), **_strategies_off(study)}
    static = [s for s in THESIS_SCHEMAS if s in study.schemas and s != "anneal"]
    if not static:
        return []
    points = []
    for task in study.candidates:
        point = {"multitask": True, **{f"aux/{t}": t == task for t in study.candidates}, **defaults}
        configs = {s: canonical(apply_choices(base, {**point, "schema": s}, study)) for s in static}
        best = max(static, key=lambda s: sum(primary_share(configs[s], e) for e in range(base.epochs)))  # ties: first
        points.append({**point, "schema": best})
    return points


def thesis_grid(study: Study, base: TrainConfig) -> list[dict[str, Any]]:
    """The thesis's hand grid: 6 schemas x every task subset containing the primary, deduplicated.

    Baseline first; anneal uses the thesis's c = 0.9; the other dimensions stay at defaults.
    """
    points, seen = [], set()
    defaults = {**_defaults(study, base), **_strategies_off(study)}
    subsets = [combo for r in range(len(study.candidates) + 1) for combo in itertools.combinations(study.candidates, r)]
    for subset in subsets:
        for schema in THESIS_SCHEMAS:
            # "multitask" too: left out, Optuna would sample it and turn half the points single-task
            point = {"multitask": bool(subset), **{f"aux/{t}": t in subset for t in study.candidates}}
            point.update(schema=schema, **defaults)
            if schema == "anneal":
                point["anneal_c"] = 0.9
            key = canonical_key(apply_choices(base, point, study))
            if key not in seen:
                seen.add(key)
                points.append(point)
    return points
