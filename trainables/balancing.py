"""Loss weighting between tasks: learned uncertainty weights (Kendall et al. 2018).

Each task i has a learned log-variance ``s_i = log σ_i²``; its loss enters the step as
``exp(-s_i) L_i + s_i / 2`` (the paper's classification form ``L / σ² + log σ``). A task whose
loss stays high learns a larger σ and so a smaller weight ``exp(-s_i)``; the ``s_i / 2`` term
keeps σ from growing without bound. Only losses are used, at O(1) cost, so it works as well
with one task per step (only that task's ``s_i`` moves) as with several.
"""

from __future__ import annotations

import torch
from torch import nn


def uncertainty_loss(loss: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """``exp(-s) L + s / 2``. Its gradient: ``exp(-s)`` in L, ``1/2 - exp(-s) L`` in s (zero at s = log 2L)."""
    return torch.exp(-log_var) * loss + 0.5 * log_var


class UncertaintyWeights(nn.Module):
    """One log-variance per task, zero at the start (every weight 1). Owned by the trainer, not
    the model: a saved model predicts without it."""

    def __init__(self, n_tasks: int) -> None:
        super().__init__()
        self.log_vars = nn.Parameter(torch.zeros(n_tasks))

    def forward(self, task: int, loss: torch.Tensor) -> torch.Tensor:
        return uncertainty_loss(loss, self.log_vars[task])

    def weights(self) -> list[float]:
        """``exp(-s_i)`` per task: the factor each task's loss gets (host values, for logging)."""
        return torch.exp(-self.log_vars.detach()).cpu().tolist()
