"""Aspect-based sentiment as sentence pairs (Sun et al. 2019), shared by SemEval and Sentihood.

Each task builds its rows in one of four constructions: per aspect a yes/no row for every
polarity (``QA_B``, ``NLI_B``: the auxiliary sentence first), or one row with a class per
polarity (``QA_M``, ``NLI_M``: the sentence first).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from trainables.tasks.base import DataError, Task

CONSTRUCTIONS = ("QA_B", "NLI_B", "QA_M", "NLI_M")


class AuxiliarySentenceTask(Task):
    """A task whose spec option picks a construction (``semeval:NLI_M``; default ``QA_B``).

    Subclasses declare ``aspects`` and ``polarities``; :meth:`configure` (called by
    ``Task.__init__``) sets ``construction``, ``binary``, ``labels``, ``group_size`` and
    ``sentence_side`` from the option.
    """

    aspects: ClassVar[tuple[str, ...]] = ()
    polarities: ClassVar[tuple[str, ...]] = ()

    def configure(self, option: str | None) -> None:
        self.construction = option or "QA_B"
        if self.construction not in CONSTRUCTIONS:
            raise DataError(f"{self.name} construction {option!r}: expected one of {', '.join(CONSTRUCTIONS)}")
        self.binary = self.construction.endswith("_B")
        self.labels = ("0", "1") if self.binary else self.polarities
        # a group is one sentence's (or location's) aspects: B a row per (aspect, polarity), M per aspect
        self.group_size = len(self.aspects) * (len(self.polarities) if self.binary else 1)
        self.sentence_side = "b" if self.binary else "a"  # Sun et al.: B auxiliary first, M sentence first

    def scores(self, probs: np.ndarray) -> np.ndarray:
        """(groups, aspects, polarities): the per-aspect polarity scores the metrics read."""
        raise NotImplementedError

    def predicted(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each (group, aspect)'s polarity, as the metrics decode it, at its aspect's position."""
        score = self.scores(probs)
        labels = score.argmax(-1)
        return labels.ravel(), np.broadcast_to(np.arange(score.shape[1]), labels.shape).ravel()
