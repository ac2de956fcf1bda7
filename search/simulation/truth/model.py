"""A known truth for simulated studies: what any canonical config scores, per seed, split and epoch.

The model of one reported score of a config (docs/truth-files.md):

    score(config, seed, split, epoch, metric) = base[metric] + effect(config)
        + luck(config, seed) + shared(seed) - deficit(config, epoch) + noise(config, seed, split, epoch, metric)
        (+ test_offset on test)

``base`` is the primary's true score, per metric, of the single-task config at the lr and warm-up
peaks with infinite seeds and every epoch. ``effect`` is the same for every metric of the primary:
a gain per auxiliary task, the schema's (round robin; a curve over the exponent of the static
schemas; a curve over anneal's c), a bonus for named (auxiliary set, schema) configs, and curves
over log10(lr) and warm-up. ``luck`` is a config's seed effect, shared by every epoch and by dev
and test, as a seed's initialisation and data order are; ``shared`` is the part of a seed's luck
every config shares; ``noise`` is evaluation noise; ``deficit`` is the learning curve. Every draw
is a hash of its coordinates, so a resumed or repeated trial reports exactly the same values.

Pure functions of the config: no Ray, no torch, no data (``search.simulation.trainable`` reports them).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from search.simulation.truth.terms import (
    Bonus,
    Collapse,
    Curve,
    LearningCurve,
    Match,
    Transient,
    auxiliary_of,
    exponent_of,
    task_name,
)
from trainables.config import ConfigError, TrainConfig
from trainables.exposure import PRIMARY_PASSES, primary_passes
from trainables.fidelity import epoch_value
from trainables.results import DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL, aggregate, seed_values_kept
from trainables.rows import training_sizes
from trainables.sampling import make_sampler

# the adaptive strategies (issue 19) a truth can give a gain, each where it acts in a canonical config
STRATEGIES = ("bandit", "all_tasks", "uncertainty", "pcgrad", "unfreeze")


class TruthError(ConfigError):
    """A bad truth file: ``str()`` names the file, the key and what was expected."""


@dataclass(frozen=True)
class Noise:
    seed_sd: float = 0.01  # a config's seed luck, shared by its epochs, dev and test
    shared_seed_sd: float = 0.0  # a seed's luck shared by every config (what pairing on seeds removes)
    eval_sd: float = 0.005  # evaluation noise of one split at one epoch
    test_offset: float = 0.0  # test minus dev, true


@dataclass(frozen=True)
class Learning:
    gap: float = 0.0  # true deficit after the first of E epochs, falling linearly to 0 at epoch E
    multitask_gap: float = 0.0  # extra deficit of multitask configs (slow starters: what misleads ASHA)
    # "passes": the shared curve is ``curve`` (a LearningCurve over the primary's passes), not gap
    unit: str = "epochs"
    curve: LearningCurve | None = None
    loss_start: float = 1.0  # train/loss after the first epoch
    loss_end: float = 0.3  # and after the last


@dataclass(frozen=True)
class Timing:
    seconds_per_epoch: float = 0.0  # simulated device seconds of one seed's epoch
    scale: float = 0.0  # real seconds a trial sleeps per simulated second (0: none)
    steps_per_epoch: int = 1000  # what sampling/steps and train/samples_per_second report


@dataclass(frozen=True)
class Truth:
    """A truth file, loaded (:func:`load_truth`); scores any canonical :class:`TrainConfig`."""

    name: str
    primary: str  # the primary task's name, as its metric keys start
    tasks: Mapping[str, Mapping[str, float]]  # task -> metric -> true base score
    path: str = ""
    seed: int = 0
    noise: Noise = Noise()
    auxiliary: Mapping[str, float] = field(default_factory=dict)  # task -> gain when trained beside the primary
    sequential: float = 0.0  # gain of round robin (multitask)
    anneal: float = 0.0  # gain of anneal, at the anneal_c peak (multitask)
    exponent: Curve = Curve(1.0, 0.0)  # static schemas (random 0, sqrt 0.5, prop 1, square 2, power a)
    anneal_c: Curve = Curve(0.9, 0.0)
    lr: Curve = Curve(math.log10(3e-5), 0.0)  # over log10(lr): depth per decade squared
    warmup: Curve = Curve(0.1, 0.0)
    bonus: tuple[Bonus, ...] = ()
    curves: tuple[LearningCurve, ...] = ()  # the first that matches a config is its learning curve
    collapse: tuple[Collapse, ...] = ()
    transient: tuple[Transient, ...] = ()
    # training rows per task spec at the simulated preset (``[sizes]``); tasks not listed are read from the
    # study's data (trainables.rows.training_sizes): what each config's passes over the primary are computed from
    sizes: Mapping[str, int] = field(default_factory=dict)
    strategy: Mapping[str, float] = field(default_factory=dict)  # STRATEGIES -> gain where it acts
    layer_decay: Curve = Curve(1.0, 0.0)  # over the layer-wise lr decay factor (1: off)
    learning: Learning = Learning()
    time: Timing = Timing()
    majority: Mapping[str, float] = field(default_factory=dict)  # primary metric -> constant predictor's score

    # -- the truth ------------------------------------------------------------------
    def effect(self, config: TrainConfig) -> float:
        """The config's true gain on every primary metric over ``base`` (infinite seeds, every epoch)."""
        value = -self.lr.penalty(math.log10(config.lr)) - self.warmup.penalty(config.warmup)
        value += self.single_task_strategies(config)
        if not auxiliary_of(config):
            return value
        schema = config.sampling.schema
        value += sum(self.auxiliary.get(t, 0.0) for t in auxiliary_of(config)) + self.multitask_strategies(config)
        exponent = exponent_of(config)
        if exponent is not None:
            value -= self.exponent.penalty(exponent)
        elif schema == "sequential" and config.optim.step_mode != "all":
            value += self.sequential
        elif schema == "anneal" and config.optim.step_mode != "all":
            value += self.anneal - self.anneal_c.penalty(config.sampling.anneal_c)
        # else every task in each step, or an adaptive distribution: no static schema's curve
        return value + sum(b.gain for b in self.bonus if b.applies(config))

    def single_task_strategies(self, config: TrainConfig) -> float:
        """Gains of what acts on any config: layer-wise lr decay, gradual unfreezing."""
        unfreeze = self.strategy.get("unfreeze", 0.0) if config.optim.unfreeze != "off" else 0.0
        return unfreeze - self.layer_decay.penalty(config.optim.layer_decay)

    def multitask_strategies(self, config: TrainConfig) -> float:
        """Gains of what acts only beside auxiliary tasks. The config is canonical: an option that
        does not act there (PCGrad with one task per step) is already written as off."""
        on = {
            "bandit": config.sampling.schema == "bandit",
            "all_tasks": config.optim.step_mode == "all",
            "uncertainty": config.optim.loss_weighting == "uncertainty",
            "pcgrad": config.optim.gradients == "pcgrad",
        }
        return sum(self.strategy.get(name, 0.0) for name, acts in on.items() if acts)

    def true_score(self, config: TrainConfig, metric: str, split: str = "dev") -> float:
        """The primary's true ``metric`` of ``config``: what infinitely many seeds would average,
        collapsed seeds included (they score the majority's)."""
        offset = self.noise.test_offset if split == "test" else 0.0
        trained = self.tasks[self.primary][metric] + self.effect(config) + offset
        if self.curve_of(config).in_passes:  # a config that ends short of the curve's end ends below its best
            trained -= self.deficit(config, config.epochs, metric)
        fails = self.collapse_of(config)
        if fails is None:
            return trained
        p = fails.chance(config)
        return (1 - p) * trained + p * fails.failed(trained, self.majority[metric])

    def deficit(self, config: TrainConfig, epoch: float, metric: str = "") -> float:
        """The learning curve: how far below its converged score a config is after ``epoch`` (1-based):
        the first ``[[curve]]`` that matches it, else the shared ``[learning]`` curve (over epochs: the gap
        falling linearly to 0 at the last epoch; over passes: read at the config's passes over the primary).
        Before the first point of the curve (a screen point inside the first epoch; over passes, any point
        short of the curve's first) the primary's ``metric`` rises linearly from the ``[majority]`` score (an
        untrained model's) to the curve's first point; a metric without a majority score stays at the first
        point's deficit there."""
        curve = self.curve_of(config)
        if curve.in_passes:
            x, first = self.passes(config, epoch), curve.passes[0]
            if x >= first:
                return curve.at_passes(x)
            return self.untrained_to(config, metric, x / first, curve.at_passes(first))
        if epoch < 1:
            return self.untrained_to(config, metric, epoch, self.deficit(config, 1))
        if curve is not SHARED:
            return curve.at(epoch, config.epochs)
        share = (config.epochs - epoch) / (config.epochs - 1) if config.epochs > 1 else 0.0
        multitask = len(config.tasks) > 1
        return share * (self.learning.gap + (self.learning.multitask_gap if multitask else 0.0))

    def untrained_to(self, config: TrainConfig, metric: str, fraction: float, first: float) -> float:
        """The deficit at ``fraction`` of the way from an untrained model (the majority's score) to the
        curve's first point, where the deficit is ``first``."""
        if metric not in self.majority:
            return first
        untrained = self.tasks[self.primary][metric] + self.effect(config) - self.majority[metric]
        return (1 - fraction) * untrained + fraction * first

    def curve_of(self, config: TrainConfig) -> LearningCurve:
        """The first ``[[curve]]`` that matches ``config``, else the shared one (:data:`SHARED` over epochs)."""
        for curve in self.curves:
            if curve.match.applies(config):
                return curve
        return self.learning.curve or SHARED

    def passes(self, config: TrainConfig, point: float) -> float:
        """The config's expected passes over the primary's training rows after ``point`` epochs."""
        return primary_passes(config, self.sizes_of(config), point)

    def sizes_of(self, config: TrainConfig) -> dict[str, int]:
        """Training rows per task of ``config``: ``[sizes]``, else the study's data at the simulated preset."""
        listed = {t: self.sizes.get(t, self.sizes.get(task_name(t))) for t in config.tasks}
        if all(v is not None for v in listed.values()):
            return {t: int(v) for t, v in listed.items()}  # type: ignore[arg-type]
        try:
            return {**training_sizes(config), **{t: int(v) for t, v in listed.items() if v is not None}}
        except (OSError, ValueError) as exc:  # DataError is a ValueError
            raise TruthError(
                f"{self.path or self.name}: sizes: the training sizes of {', '.join(config.tasks)} are neither in "
                f"[sizes] nor readable from the data root {config.data_dir} ({exc}); expected one or the other"
            ) from None

    def passes_reported(self, config: TrainConfig, point: float) -> dict[str, float]:
        """``{primary_passes: ...}`` where the sizes are known; {} for a truth over epochs without data."""
        try:
            return {PRIMARY_PASSES: self.passes(config, point)}
        except TruthError:
            if any(c.in_passes for c in (*self.curves, self.learning.curve) if c is not None):
                raise
            return {}

    def collapse_of(self, config: TrainConfig) -> Collapse | None:
        """The ``[[collapse]]`` table about ``config`` with the largest chance (None: none, or all at 0)."""
        about = [c for c in self.collapse if c.chance(config) > 0]
        return max(about, key=lambda c: c.chance(config)) if about else None

    def collapse_chance(self, config: TrainConfig) -> float:
        """The chance that one seed of ``config`` fails: the largest of the ``[[collapse]]`` tables'."""
        fails = self.collapse_of(config)
        return fails.chance(config) if fails else 0.0

    def collapsed(self, config: TrainConfig, key: str, seed: int) -> bool:
        """Whether seed ``seed`` of config ``key`` failed (the same draw at every epoch and split)."""
        return self.failed_by(config, key, seed) is not None

    def failed_by(self, config: TrainConfig, key: str, seed: int) -> Collapse | None:
        """The ``[[collapse]]`` table seed ``seed`` of config ``key`` failed by, None where it did not fail."""
        fails = self.collapse_of(config)
        return fails if fails and uniform(self.seed, "collapse", key, seed) < fails.chance(config) else None

    def transient_of(self, config: TrainConfig, key: str, seed: int, epoch: float) -> float | None:
        """How far below the majority rate seed ``seed`` of config ``key`` sits at ``epoch``, where it is in a
        transient failure there (the first ``[[transient]]`` that matches the config), else None."""
        for i, t in enumerate(self.transient):
            if t.match.applies(config):
                failed = uniform(self.seed, "transient", i, key, seed) < t.probability
                return t.below_majority if failed and epoch <= t.until else None
        return None

    def luck(self, key: str, seed: int) -> float:
        """Seed ``seed``'s effect on config ``key``: its own part and the part every config shares."""
        return draw(self.noise.seed_sd, self.seed, "luck", key, seed) + draw(
            self.noise.shared_seed_sd, self.seed, "shared", seed
        )

    def sleep_s(self, seeds: int) -> float:
        """Real seconds one trial epoch of ``seeds`` seeds sleeps."""
        return seeds * self.time.seconds_per_epoch * self.time.scale

    # -- one seed's epoch, as the real loop reports it -----------------------------
    def epoch_metrics(self, config: TrainConfig, key: str, seed: int, epoch: float) -> dict[str, float]:
        """One seed's metrics after ``epoch`` (1-based; 0.5 a screen point) under the keys ``Trainer.run_to``
        uses."""
        epoch = epoch_value(epoch)  # 2, not 2.0: the draws' coordinates are what they always were
        out = self.training(config, key, seed, epoch)
        splits = ("dev", "test") if config.evaluate_test and epoch == config.epochs else ("dev",)
        for spec in config.tasks:
            name = task_name(spec)
            for metric, base in self.tasks.get(name, {}).items():
                for split in splits:
                    out[f"{name}/{split}/{metric}"] = self.score(config, key, seed, epoch, split, name, metric, base)
        return {**out, **self.degeneracy(config, key, seed, epoch)}

    def degeneracy(self, config: TrainConfig, key: str, seed: int, epoch: float) -> dict[str, float]:
        """What the real trainer reads off its predictions (``trainables.degenerate``), as this truth declares it:
        a seed that failed (``[[collapse]]``) is degenerate at every point, one in a ``[[transient]]`` failure
        until it recovers (and has learned from then on); every other seed learns."""
        if self.failed_by(config, key, seed) is not None:
            return {DEGENERATE: 1.0, DEGENERATE_UNTIL: float(epoch), LEARNED_UNTIL: 0.0}
        recovers = next((t.until for t in self.transient if t.match.applies(config)), None)
        down = self.transient_of(config, key, seed, min(epoch, recovers)) if recovers is not None else None
        if down is None:
            return {DEGENERATE: 0.0, DEGENERATE_UNTIL: 0.0, LEARNED_UNTIL: float(epoch)}
        degenerate = epoch <= recovers
        return {
            DEGENERATE: float(degenerate),
            DEGENERATE_UNTIL: float(min(epoch, recovers)),
            LEARNED_UNTIL: 0.0 if degenerate else float(epoch),
        }

    def trial_metrics(
        self,
        config: TrainConfig,
        key: str,
        seeds: Sequence[int],
        epoch: float,
        objective: str,
        points: Sequence[float] | None = None,
    ) -> dict[str, float]:
        """A trial's report of ``epoch`` over ``seeds``, as ``trainables.tune`` aggregates it: every
        metric's seed mean and std, per-seed values of the primary's scores and of ``objective``. ``points``
        (where the trial reports) changes nothing: this truth declares its flags at every point."""
        primary = task_name(config.primary)
        per_seed = [self.epoch_metrics(config, key, s, epoch) for s in seeds]
        # the exposure is the trial's, as the real trainable reports it: one value beside ``epoch``
        return {
            **aggregate(per_seed, seeds, lambda k: seed_values_kept(k, primary, objective)),
            **self.passes_reported(config, epoch_value(epoch)),
        }

    def score(
        self, config: TrainConfig, key: str, seed: int, epoch: float, split: str, task: str, metric: str, base: float
    ) -> float:
        """One reported score: auxiliaries keep their base, the primary moves with the config's effect."""
        value = (
            base
            - self.deficit(config, epoch, metric if task == self.primary else "")
            + draw(self.noise.eval_sd, self.seed, key, seed, epoch, split, task, metric)
        )
        if task == self.primary:
            value += self.effect(config) + self.luck(key, seed) + (self.noise.test_offset if split == "test" else 0.0)
        if task == self.primary and metric in self.majority:
            fails = self.failed_by(config, key, seed)
            if fails is not None:  # a failed seed keeps its table's share of the gain
                return fails.failed(min(1.0, max(0.0, value)), self.majority[metric])
            down = self.transient_of(config, key, seed, epoch)
            if down is not None:
                return max(0.0, self.majority[metric] - down)
        return min(1.0, max(0.0, value))

    def training(self, config: TrainConfig, key: str, seed: int, epoch: float) -> dict[str, float]:
        """``train/...`` and ``sampling/...``: the loss curve and the schema's task distribution."""
        share = (config.epochs - epoch) / (config.epochs - 1) if config.epochs > 1 else 0.0
        loss = self.learning.loss_end + share * (self.learning.loss_start - self.learning.loss_end)
        part = epoch if epoch < 1 else 1.0  # a screen point reports the part of the epoch it trained
        seconds, steps = self.time.seconds_per_epoch * part, round(self.time.steps_per_epoch * part)
        out = {
            "train/seconds": seconds,
            "train/loss": loss * math.exp(draw(0.02, self.seed, "loss", key, seed, epoch)),
            "train/samples_per_second": steps * config.batch_size / seconds if seconds else 0.0,
        }
        probs = make_sampler(config.sampling, config.task_weights(), config.epochs, seed).probabilities(
            math.ceil(epoch) - 1
        )
        for spec, p in zip(config.tasks, probs):
            name = task_name(spec)
            out[f"sampling/p/{name}"] = float(p)
            out[f"sampling/steps/{name}"] = float(round(p * steps))
            out[f"train/{name}/loss"] = out["train/loss"]
        return out


SHARED = LearningCurve(Match(), ())  # the [learning] gap over epochs: the curve of configs no [[curve]] matches


def draw(sd: float, *coordinates: Any) -> float:
    """A normal draw with standard deviation ``sd``, fixed by its coordinates (the same every time)."""
    if not sd:
        return 0.0
    digest = hashlib.blake2b("\x1f".join(map(str, coordinates)).encode(), digest_size=8).digest()
    return sd * float(np.random.default_rng(int.from_bytes(digest, "little")).standard_normal())


def uniform(*coordinates: Any) -> float:
    """A uniform draw in [0, 1), fixed by its coordinates."""
    digest = hashlib.blake2b("\x1f".join(map(str, coordinates)).encode(), digest_size=8).digest()
    return float(np.random.default_rng(int.from_bytes(digest, "little")).random())
