"""The optional multitask machinery of one run (issue 19), behind one object the trainer calls.

Off by default, and then every hook is a no-op, so a run without it trains bit for bit as before:
two AdamW groups, summed gradients, everything trainable, static sampling.

Who calls what, all from the training thread (:class:`~trainables.loop.Trainer`):

- once: :meth:`Strategy.param_groups` builds the AdamW groups (layer-wise lr, the log-variances);
- per micro-batch: :meth:`Strategy.weigh` on its loss before backward, :meth:`Strategy.collect`
  after it (PCGrad keeps each task's gradient apart);
- per optimizer step: :meth:`Strategy.start_update` first (unfreezing), :meth:`Strategy.combine`
  before clipping (the PCGrad sum into ``.grad``);
- every ``bandit_every`` steps and at the end of an epoch: :meth:`Strategy.feed`, the bandit's rewards;
- per epoch: :meth:`Strategy.metrics`; with the trainer's: :meth:`state_dict` / :meth:`load_state_dict`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from trainables.balancing import UncertaintyWeights
from trainables.config import TrainConfig
from trainables.gradients import TaskGradients
from trainables.layers import decayed_groups, encoder_layers, freeze_below, lowest_trainable_depth, unfreeze_stage
from trainables.model import MultitaskModel
from trainables.sampling import TaskSampler


def plain_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    # no weight decay on biases and LayerNorm weights, as in BERT
    decay, no_decay = [], []
    for p in model.parameters():
        (no_decay if p.ndim < 2 else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


class Strategy:
    """Loss weighting, gradient combination, layer-wise lr, unfreezing and bandit rewards of a run."""

    def __init__(self, config: TrainConfig, model: MultitaskModel, names: Sequence[str], seed: int) -> None:
        self.config, self.model, self.names = config, model, list(names)
        optim = config.optim
        self.layers = encoder_layers(model.encoder)
        self.weights = UncertaintyWeights(len(names)) if optim.loss_weighting == "uncertainty" else None
        surgery = optim.gradients == "pcgrad" and config.multitask_steps
        self.gradients = TaskGradients(list(model.encoder.parameters()), seed) if surgery else None
        self.trainable_from = 0  # the lowest depth that trains now
        self.primary_loss: float | None = None  # the bandit's last held-out primary loss

    def to(self, device: torch.device) -> Strategy:
        if self.weights is not None:
            self.weights.to(device)
        return self

    # -- building -------------------------------------------------------------
    def param_groups(self) -> list[dict[str, Any]]:
        config = self.config
        if config.optim.layer_decay == 1.0:
            groups = plain_groups(self.model, config.weight_decay)
        else:
            groups = decayed_groups(self.model, self.layers, config.optim.layer_decay, config.weight_decay)
            for g in groups:
                g["lr"] = config.lr * g["lr_scale"]
        if self.weights is not None:  # their own lr, scheduled like the rest; never decayed
            lr = config.optim.uncertainty_lr
            groups.append({"params": list(self.weights.parameters()), "weight_decay": 0.0, "lr": lr})
        return groups

    # -- per micro-batch ------------------------------------------------------
    def weigh(self, task: int, loss: torch.Tensor) -> torch.Tensor:
        return loss if self.weights is None else self.weights(task, loss)

    def collect(self, task: int) -> None:
        if self.gradients is not None:
            self.gradients.collect(task)

    # -- per optimizer step ---------------------------------------------------
    def start_update(self, epoch: int, updates: int) -> None:
        """Freeze what the unfreezing schedule keeps frozen at this point (``updates``: optimizer
        steps taken so far). Recomputed, never stored, so a resumed run freezes as it would have."""
        optim = self.config.optim
        stage = unfreeze_stage(optim.unfreeze, optim.unfreeze_every, epoch, updates)
        depth = lowest_trainable_depth(stage, self.layers)
        if depth != self.trainable_from:  # a fresh or resumed model starts with everything trainable
            freeze_below(self.model, depth, self.layers)
            self.trainable_from = depth

    def combine(self) -> None:
        if self.gradients is not None:
            self.gradients.combine()

    # -- bandit rewards -------------------------------------------------------
    def feed(
        self, sampler: TaskSampler, tasks: np.ndarray, losses: torch.Tensor, held_out: Callable[[], float]
    ) -> None:
        """Reward the draws ``tasks`` (their ``losses``): each its own loss (ODM), or every one the fall
        of the primary's held-out loss since the last feed (``held_out()`` measures it now)."""
        if not sampler.adaptive or not len(tasks):
            return
        if self.config.sampling.bandit_reward == "loss":
            rewards = losses.double().cpu().tolist()  # the host sync, once per bandit_every steps
        else:
            if self.primary_loss is None:
                raise RuntimeError("Strategy.begin was not called before the first bandit reward")
            before, self.primary_loss = self.primary_loss, held_out()
            rewards = [before - self.primary_loss] * len(tasks)
        sampler.update(tasks.tolist(), rewards)

    def begin(self, sampler: TaskSampler, held_out: Callable[[], float]) -> None:
        """Before the first step of a run: the held-out primary loss the first reward is measured from."""
        if sampler.adaptive and self.config.sampling.bandit_reward == "primary" and self.primary_loss is None:
            self.primary_loss = held_out()

    # -- reporting and state --------------------------------------------------
    def metrics(self, task_names: Sequence[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.weights is not None:
            out.update({f"loss/weight/{n}": w for n, w in zip(task_names, self.weights.weights())})
        if self.config.optim.unfreeze != "off":
            out["optim/frozen_layers"] = float(self.trainable_from)  # depths below this did not train
        return out

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        if self.weights is not None:
            state["weights"] = self.weights.state_dict()
        if self.gradients is not None:
            state["gradients"] = self.gradients.state_dict()
        if self.primary_loss is not None:
            state["primary_loss"] = self.primary_loss
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.weights is not None:
            self.weights.load_state_dict(state["weights"])
        if self.gradients is not None:
            self.gradients.load_state_dict(state["gradients"])
        self.primary_loss = state.get("primary_loss")
