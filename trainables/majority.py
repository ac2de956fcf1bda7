"""The score of a constant predictor: what a model must beat to have learned anything.

For each row the predictor outputs the label frequencies of its position within an
evaluation group (a SemEval QA_B group of 25 rows is aspect x polarity, so this is
"the most frequent polarity of each aspect"), counted on the very rows it is scored
on. No input is read, so no model that learned something should score below it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trainables.tasks import Example, Task


def majority_probs(task: Task, rows: Sequence[Example]) -> np.ndarray | None:
    """(rows, classes) constant predictions; None for tagging tasks (no per-row label)."""
    if task.kind == "tagging" or not rows:
        return None
    labels = np.array([ex.label for ex in rows], dtype=np.int64)
    position = np.arange(len(rows)) % task.group_size
    counts = np.zeros((task.group_size, task.num_labels))
    np.add.at(counts, (position, labels), 1.0)
    freq = counts / np.maximum(counts.sum(1, keepdims=True), 1.0)
    # a tiny position-independent tie-break keeps argmax stable where frequencies tie
    return freq[position] + 1e-9 * np.arange(task.num_labels)[::-1]


def majority_scores(task: Task, rows: Sequence[Example]) -> dict[str, float]:
    """The task's metrics for :func:`majority_probs` on ``rows`` (empty for tagging tasks)."""
    probs = majority_probs(task, rows)
    return {} if probs is None else {k: float(v) for k, v in task.metrics(probs, rows).items()}
