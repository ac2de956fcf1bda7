"""Class probabilities of one task's head over a tokenized split: evaluation and prediction."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import torch

from trainables.batching import IGNORE, Encoded, Padding, collate, to_device
from trainables.model import MultitaskModel, head_key


@torch.inference_mode()
def predict_probs(
    model: MultitaskModel,
    name: str,
    data: Encoded,
    padding: Padding,
    batch_size: int,
    device: torch.device,
    multiple: int = 1,
    autocast: Callable[[], AbstractContextManager] = contextlib.nullcontext,
) -> np.ndarray:
    """Class probabilities of task ``name``'s head: (rows, C) for sequence tasks, (words, C) for tagging.
    ``multiple``: pad widths to it; ``autocast``: the training precision's context."""
    model.eval()
    kind = model.kinds[name]
    order = np.argsort(data.lengths(), kind="stable")  # similar lengths together: less padding
    per_row: list[np.ndarray] = [np.empty(0)] * len(order)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        batch = collate(data, rows, padding, kind, multiple=multiple)
        labels = batch.pop("labels")
        with autocast():
            logits = model(name, **to_device(batch, device))
        p = torch.softmax(logits.float(), -1).cpu()
        for i, r in enumerate(rows):
            # tagging: keep each word's first sub-token, the only labelled one
            per_row[r] = p[i][labels[i] != IGNORE].numpy() if kind == "tagging" else p[i].numpy()
    if kind != "tagging":
        return np.stack(per_row)
    # words truncated away by max_seq_length get a uniform (so, scored) prediction
    n_classes = model.heads[head_key(name)].out_features
    out = []
    for r, p in enumerate(per_row):
        missing = int(data.words[r]) - len(p)  # type: ignore[index]
        out.append(np.concatenate([p, np.full((missing, n_classes), 1.0 / n_classes)]) if missing else p)
    return np.concatenate(out)
