"""Depth of every parameter, for layer-wise lr decay and gradual unfreezing.

Depths count from the input: the embeddings are 0, encoder layer k is k + 1, and the heads
(with whatever else sits above the last layer: BERT's pooler, XLNet's final dropout) are
``L + 1`` for an L-layer encoder.

- **Layer-wise lr decay** (as in ELECTRA's and BERT fine-tuning recipes): a parameter at depth
  d trains at ``lr * decay ** (L + 1 - d)``: the heads at lr, the top layer at lr·decay, the
  embeddings at lr·decay^(L+1).
- **Gradual unfreezing** (ULMFiT, Howard and Ruder 2018; the thesis's Section 4.5.2): at stage
  0 only the heads train; each stage unfreezes the next layer down, until stage L + 1 trains
  the embeddings too. A stage lasts M epochs or M optimizer steps.
"""

from __future__ import annotations

import re
from typing import Any

from torch import nn

LAYER = re.compile(r"(?:^|\.)layers?\.(\d+)\.")  # BERT "encoder.layer.3.", XLNet "layer.3.", DistilBERT


def encoder_layers(encoder: nn.Module) -> int:
    """L, the encoder's number of layers (BERT-likes' ``num_hidden_layers``, XLNet's ``n_layer``)."""
    config = encoder.config
    return int(getattr(config, "num_hidden_layers", None) or config.n_layer)


def parameter_depth(name: str, layers: int) -> int:
    """The depth of a :class:`~trainables.model.MultitaskModel` parameter (module docstring)."""
    if not name.startswith("encoder."):
        return layers + 1  # a head
    match = LAYER.search(name)
    if match:
        return int(match[1]) + 1
    return 0 if "emb" in name else layers + 1  # "embeddings", XLNet's "word_embedding" and "mask_emb"


def lr_scale(depth: int, layers: int, decay: float) -> float:
    """``decay ** (L + 1 - depth)``: 1 for the heads, ``decay`` for the top layer."""
    return decay ** (layers + 1 - depth)


def decayed_groups(model: nn.Module, layers: int, decay: float, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: one per (depth, weight decay or not), each with its ``lr_scale`` (``lr`` is
    set by the caller as ``base lr * lr_scale``); biases and LayerNorm weights undecayed, as in BERT."""
    groups: dict[tuple[int, bool], list[nn.Parameter]] = {}
    for name, p in model.named_parameters():
        groups.setdefault((parameter_depth(name, layers), p.ndim >= 2), []).append(p)
    return [
        {"params": params, "weight_decay": weight_decay if decays else 0.0, "lr_scale": lr_scale(d, layers, decay)}
        for (d, decays), params in sorted(groups.items())
    ]


def unfreeze_stage(unit: str, every: int, epoch: int, updates: int) -> int | None:
    """How many layers below the heads train: ``epoch // M`` or ``updates // M`` (optimizer steps
    taken so far); None when unfreezing is off (everything trains)."""
    if unit == "off":
        return None
    return (epoch if unit == "epoch" else updates) // every


def lowest_trainable_depth(stage: int | None, layers: int) -> int:
    """Parameters at this depth and above train at ``stage``; 0 (all) when unfreezing is off."""
    return 0 if stage is None else max(0, layers + 1 - stage)


def freeze_below(model: nn.Module, depth: int, layers: int) -> None:
    """``requires_grad`` on exactly the parameters at ``depth`` and above: the frozen ones get no
    gradient, so AdamW skips them (no update, no weight decay) and backward stops above them."""
    for name, p in model.named_parameters():
        p.requires_grad_(parameter_depth(name, layers) >= depth)
