"""Task samplers: which task's batch each training step takes.

The thesis's task distribution (Definition 3.2.3) is ``p_i = w_i**a / sum_k w_k**a``
for importance weights ``w`` and an exponent ``a`` fixed per schema, or annealed
over epochs as ``a(e) = 1 - c * e / E``. ``sequential`` is round robin. ``bandit`` is not
static: an EXP3 bandit (Auer et al. 2002) whose distribution follows the rewards the loop
feeds it, as in online data mixing (Albalak et al. 2023).

Who calls what: the training loop builds one sampler per run with
:func:`make_sampler`, calls :meth:`TaskSampler.probabilities` once per epoch to
report the distribution in force, and :meth:`TaskSampler.sample` once per step. An
``adaptive`` sampler also gets :meth:`TaskSampler.update` with the tasks drawn since the
last update and their rewards, every ``bandit_every`` steps, from the training thread.
:meth:`state_dict` / :meth:`load_state_dict` carry the RNG (and any learned state) across checkpoints.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from trainables.config import SamplingConfig


class TaskSampler(abc.ABC):
    """Draws task indices; each schema is a small subclass with its own seeded generator."""

    adaptive = False  # True: its distribution depends on rewards, so draws wait for them (no prefetch)

    def __init__(self, weights: Sequence[float], epochs: int, seed: int) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)
        self.epochs = epochs
        self.rng = np.random.default_rng(seed)

    @abc.abstractmethod
    def probabilities(self, epoch: int) -> np.ndarray:
        """The distribution over tasks in force during ``epoch`` (0-based), shape (n_tasks,)."""

    def sample(self, epoch: int) -> int:
        return int(self.rng.choice(len(self.weights), p=self.probabilities(epoch)))

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]

    def update(self, tasks: Sequence[int], rewards: Sequence[float]) -> None:  # noqa: B027 (an optional hook)
        """Rewards of the draws ``tasks`` since the last update; static schemas ignore them."""


def power_distribution(weights: np.ndarray, exponent: float) -> np.ndarray:
    """``w**a / sum(w**a)``; computed in log space so large exponents do not overflow."""
    logits = exponent * np.log(weights)
    logits -= logits.max()
    p = np.exp(logits)
    return p / p.sum()


class PowerSampler(TaskSampler):
    """``p_i ∝ w_i ** exponent``: random (0), sqrt (0.5), prop (1), square (2), any real a."""

    def __init__(self, weights: Sequence[float], epochs: int, seed: int, exponent: float) -> None:
        super().__init__(weights, epochs, seed)
        self.exponent = exponent
        self._p = power_distribution(self.weights, exponent)  # fixed over epochs

    def probabilities(self, epoch: int) -> np.ndarray:
        return self._p


class AnnealSampler(TaskSampler):
    """Exponent ``1 - c * e / E``: starts proportional, drifts towards uniform."""

    def __init__(self, weights: Sequence[float], epochs: int, seed: int, anneal_c: float) -> None:
        super().__init__(weights, epochs, seed)
        self.anneal_c = anneal_c

    def exponent(self, epoch: int) -> float:
        return 1.0 - self.anneal_c * epoch / self.epochs

    def probabilities(self, epoch: int) -> np.ndarray:
        return power_distribution(self.weights, self.exponent(epoch))


class SequentialSampler(TaskSampler):
    """Round robin ``t_1, t_2, ..., t_n, t_1, ...``; deterministic, weights ignored."""

    def __init__(self, weights: Sequence[float], epochs: int, seed: int) -> None:
        super().__init__(weights, epochs, seed)
        self.position = 0

    def probabilities(self, epoch: int) -> np.ndarray:
        # the long-run share of steps per task
        return np.full(len(self.weights), 1.0 / len(self.weights))

    def sample(self, epoch: int) -> int:
        task = self.position % len(self.weights)
        self.position += 1
        return task

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "position": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.position = int(state["position"])


def exp3_probabilities(log_weights: np.ndarray, explore: float) -> np.ndarray:
    """EXP3's distribution: ``(1 - γ) softmax(log w) + γ / K``."""
    soft = np.exp(log_weights - log_weights.max())
    return (1.0 - explore) * soft / soft.sum() + explore / len(log_weights)


def exp3_update(
    log_weights: np.ndarray, tasks: Sequence[int], rewards: Sequence[float], p: np.ndarray, lr: float
) -> np.ndarray:
    """``log w_i += η r / p_i`` for every draw of task i: the importance-weighted reward, so a task
    drawn rarely is not starved of credit. ``p``: the distribution the draws were made from."""
    out = log_weights.copy()
    for t, r in zip(tasks, rewards):
        out[t] += lr * r / p[t]
    return out - out.max()  # softmax is shift-free; this keeps the numbers small


class BanditSampler(TaskSampler):
    """EXP3 over the tasks, starting uniform; the loop feeds it rewards every ``bandit_every`` steps."""

    adaptive = True

    def __init__(self, weights: Sequence[float], epochs: int, seed: int, lr: float, explore: float) -> None:
        super().__init__(weights, epochs, seed)
        self.lr, self.explore = lr, explore
        self.log_weights = np.zeros(len(self.weights))

    def probabilities(self, epoch: int) -> np.ndarray:
        return exp3_probabilities(self.log_weights, self.explore)

    def update(self, tasks: Sequence[int], rewards: Sequence[float]) -> None:
        # every draw since the last update was made from the current distribution
        self.log_weights = exp3_update(self.log_weights, tasks, rewards, self.probabilities(0), self.lr)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "log_weights": self.log_weights.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.log_weights = np.asarray(state["log_weights"], dtype=np.float64)


SamplerFactory = Callable[[Sequence[float], int, int, SamplingConfig], TaskSampler]
SAMPLERS: dict[str, SamplerFactory] = {  # schema -> its sampler
    "sequential": lambda w, e, s, c: SequentialSampler(w, e, s),
    "random": lambda w, e, s, c: PowerSampler(w, e, s, exponent=0.0),
    "prop": lambda w, e, s, c: PowerSampler(w, e, s, exponent=1.0),
    "sqrt": lambda w, e, s, c: PowerSampler(w, e, s, exponent=0.5),
    "square": lambda w, e, s, c: PowerSampler(w, e, s, exponent=2.0),
    "power": lambda w, e, s, c: PowerSampler(w, e, s, exponent=float(c.exponent)),  # type: ignore[arg-type]
    "anneal": lambda w, e, s, c: AnnealSampler(w, e, s, anneal_c=c.anneal_c),
    "bandit": lambda w, e, s, c: BanditSampler(w, e, s, lr=c.bandit_lr, explore=c.bandit_explore),
}


def make_sampler(config: SamplingConfig, weights: Sequence[float], epochs: int, seed: int) -> TaskSampler:
    """The sampler for ``config.schema`` over tasks with importance ``weights``."""
    return SAMPLERS[config.schema](weights, epochs, seed, config)


def steps_per_epoch(batches_per_task: Sequence[int]) -> int:
    """Mean of the tasks' training sizes, in batches (thesis Section 3.3).

    The thesis code used ``floor(sum of rows / batch size)`` instead, i.e. n times
    this many steps for n tasks; counting in batches makes one task's epoch
    exactly one pass over its data, which is what the heuristic is meant to collapse to.
    """
    return max(1, round(float(np.mean(batches_per_task))))
