"""Gradient combination over the tasks of one optimizer step: a plain sum, or PCGrad.

PCGrad (Yu et al. 2020, "Gradient Surgery for Multi-Task Learning"): where task i's
gradient conflicts with task j's (negative dot product), the component of ``g_i`` along
``g_j`` is removed, for every other task j in a random order; the projected gradients are
then summed. Projections use the other tasks' *original* gradients, as in the paper.

Who calls what: the trainer builds one :class:`TaskGradients` over the shared encoder's
parameters when a run uses ``pcgrad``; after each micro-batch's backward it calls
:meth:`TaskGradients.collect` with that micro-batch's task, and before the optimizer step
:meth:`TaskGradients.combine`, which leaves the combined gradient in ``.grad``. The heads
are left out: each reads only its own task's loss, so its gradient needs no surgery, and
projecting over it would move one task's head by another's gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def pcgrad(grads: torch.Tensor, orders: Sequence[Sequence[int]]) -> torch.Tensor:
    """(T, D) per-task gradients -> (D,) their PCGrad sum.

    ``orders[i]``: the other tasks, in the order task i is projected off them. Branch-free
    (a clamp, not an ``if``), so on CUDA it never waits for the host; a zero gradient
    projects nothing (0 / eps).
    """
    out = torch.empty_like(grads)
    squared = (grads * grads).sum(1).clamp_min(torch.finfo(grads.dtype).tiny)  # (T,)
    for i in range(len(grads)):
        g = grads[i].clone()  # (D,)
        for j in orders[i]:
            conflict = torch.clamp(g @ grads[j], max=0.0)  # only a negative dot product projects
            g -= conflict / squared[j] * grads[j]
        out[i] = g
    return out.sum(0)


class TaskGradients:
    """Each task's gradient of ``params`` within one optimizer step, combined by PCGrad."""

    def __init__(self, params: Sequence[torch.nn.Parameter], seed: int) -> None:
        self.params = list(params)
        self.rng = np.random.default_rng(seed)  # the projection orders, in the run's state
        self.buffers: dict[int, list[torch.Tensor | None]] = {}

    def collect(self, task: int) -> None:
        """Move the gradients the last backward left in ``.grad`` into ``task``'s buffer."""
        buffer = self.buffers.setdefault(task, [None] * len(self.params))
        for k, p in enumerate(self.params):
            if p.grad is None:  # frozen, or not reached
                continue
            if buffer[k] is None:
                buffer[k] = p.grad  # taken, not copied: the next backward allocates a new .grad
            else:
                buffer[k].add_(p.grad)  # the same addition autograd's accumulation would make
            p.grad = None

    def combine(self) -> int:
        """Leave the combined gradient in ``.grad``; returns how many tasks the step held.

        With one task it is that task's gradient unchanged: PCGrad over one task is the sum."""
        tasks = sorted(self.buffers)
        if len(tasks) == 1:
            for p, g in zip(self.params, self.buffers[tasks[0]]):
                p.grad = g
        elif tasks:
            self._project(tasks)
        self.buffers.clear()
        return len(tasks)

    def _project(self, tasks: list[int]) -> None:
        present = [k for k, p in enumerate(self.params) if any(self.buffers[t][k] is not None for t in tasks)]
        if not present:  # the shared parameters are all frozen (gradual unfreezing): nothing to combine
            return
        flat = torch.stack(
            [torch.cat([_or_zeros(self.buffers[t][k], self.params[k]).reshape(-1) for k in present]) for t in tasks]
        )  # (T, D)
        others = [[j for j in range(len(tasks)) if j != i] for i in range(len(tasks))]
        combined = pcgrad(flat, [[o[x] for x in self.rng.permutation(len(o))] for o in others])
        start = 0
        for k in present:
            p = self.params[k]
            p.grad = combined[start : start + p.numel()].view_as(p).clone()
            start += p.numel()

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]


def _or_zeros(grad: torch.Tensor | None, param: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(param) if grad is None else grad
