"""Whether a run's model is degenerate, read from its own predictions rather than from a score line.

A model is degenerate when its predictions do not depend on the input: at each position of an evaluation
group (a SemEval sentence's 5 aspects, a Sentihood location's 4) it predicts one class on (nearly) every
row, as the constant predictor of :mod:`trainables.majority` does. Such a run learned nothing; a run that
predicts several classes and scores little is weak, not degenerate. A weak config loses on dev; only a
degenerate run is a failure (``search.answer.claims``). Pure numpy.
"""

from __future__ import annotations

import numpy as np

# share of rows at their position's most frequent prediction at or above which a model is constant: a
# handful of rows off the constant answer (1 in 100) is still no model of the input
CONSTANT_SHARE = 0.99


def constant_share(predicted: np.ndarray, positions: np.ndarray) -> float:
    """Share of rows whose predicted class is the most frequent one at their group position (1.0: a
    constant predictor per position; NaN with no rows)."""
    predicted, positions = np.asarray(predicted).ravel(), np.asarray(positions).ravel()
    if len(predicted) == 0:
        return float("nan")
    at_mode = 0
    for p in np.unique(positions):
        _, counts = np.unique(predicted[positions == p], return_counts=True)
        at_mode += int(counts.max())
    return at_mode / len(predicted)


def is_degenerate(predicted: np.ndarray, positions: np.ndarray) -> bool:
    """Whether the predictions are constant per position (:data:`CONSTANT_SHARE`); not with no rows."""
    share = constant_share(predicted, positions)
    return bool(share == share and share >= CONSTANT_SHARE)
