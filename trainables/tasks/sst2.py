"""GLUE SST-2 (Socher et al. 2013; Wang et al. 2019): binary sentence sentiment.

The GLUE test split has no labels, so test = the GLUE dev set. ``holdout``
protocol: dev = the train sentences with ``sha1(sentence) % 100 == 0`` (about
1%, 670 rows), train = the rest. ``thesis`` protocol: train = all of train,
dev = test = GLUE dev (as the thesis). The hold-out is keyed by the sentence
(trailing space stripped), so the 371 repeated train sentences never straddle
train and dev. Row ids: ``{file}:{line}``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trainables import metrics
from trainables.tasks._io import held_out, label_index, read_rows
from trainables.tasks.base import DataError, Example, Task, register


@register("sst2")
class SST2(Task):
    name = "sst2"
    labels = ("0", "1")
    source = "https://github.com/eyalbd2/Reproducing-AutoPrompt (glue_data/SST-2, train_full.tsv as train.tsv)"
    files = ("sst2/train.tsv", "sst2/dev.tsv")

    def read(self, filename: str) -> list[Example]:
        path = self.path("sst2", filename)
        out = [
            Example(
                f"{filename}:{line}",
                row["sentence"].rstrip(),
                None,
                label_index(row["label"], self.labels, f"{path}:{line}"),
            )
            for line, row in read_rows(path, ("sentence", "label"))
        ]
        if not out:
            raise DataError(f"{path}: no rows, expected SST-2 sentence/label rows")
        return out

    def examples(self, split: str) -> list[Example]:
        if split not in ("train", "dev", "test"):
            raise DataError(f"sst2: unknown split {split!r}, expected train, dev or test")
        if split == "test" or (split == "dev" and self.protocol == "thesis"):
            return self.read("dev.tsv")
        rows = self.read("train.tsv")
        if self.protocol == "thesis":
            return rows
        return [ex for ex in rows if held_out(ex.text_a, 100) == (split == "dev")]

    def metrics(self, probs: np.ndarray, examples: Sequence[Example]) -> dict[str, float]:
        return {"acc": metrics.accuracy(probs, np.array([ex.label for ex in examples]))}
