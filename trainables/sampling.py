"""Task samplers: which task's batch each training step takes.

The thesis's task distribution (Definition 3.2.3) is ``p_i = w_i**a / sum_k w_k**a``
for importance weights ``w`` and an exponent ``a`` fixed per schema, or annealed
over epochs as ``a(e) = 1 - c * e / E``. ``sequential`` is round robin.

Who calls what: the training loop builds one sampler per run with
:func:`make_sampler`, calls :meth:`TaskSampler.probabilities` once per epoch to
report the distribution in force, and :meth:`TaskSampler.sample` once per step.
:meth:`state_dict` / :meth:`load_state_dict` carry the RNG across checkpoints.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from trainables.config import SamplingConfig


class TaskSampler(abc.ABC):
    """Draws task indices; each schema is a small subclass with its own seeded generator."""

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


SamplerFactory = Callable[[Sequence[float], int, int, SamplingConfig], TaskSampler]
SAMPLERS: dict[str, SamplerFactory] = {  # schema -> its sampler
    "sequential": lambda w, e, s, c: SequentialSampler(w, e, s),
    "random": lambda w, e, s, c: PowerSampler(w, e, s, exponent=0.0),
    "prop": lambda w, e, s, c: PowerSampler(w, e, s, exponent=1.0),
    "sqrt": lambda w, e, s, c: PowerSampler(w, e, s, exponent=0.5),
    "square": lambda w, e, s, c: PowerSampler(w, e, s, exponent=2.0),
    "power": lambda w, e, s, c: PowerSampler(w, e, s, exponent=float(c.exponent)),  # type: ignore[arg-type]
    "anneal": lambda w, e, s, c: AnnealSampler(w, e, s, anneal_c=c.anneal_c),
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
