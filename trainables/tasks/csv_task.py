"""A user task from CSV files, declared by a small JSON config: ``csv:path/to/task.json``.

Config: ``{"name": "mytask", "kind": "sequence" | "tagging", "labels": [...],
"train": "train.csv", "dev": "dev.csv", "test": "test.csv"}`` (paths relative to
the JSON file). CSV header ``id,text_a[,text_b],label``; for tagging, ``text_a``
holds space-separated words and ``label`` as many space-separated tags. With a
``text_b`` column every row is a pair, an empty cell an empty second text; without
it, or with that column empty on every row, every row is a single text. Tagging rows
take no text_b (an empty column is fine: exports write one). A raw input to predict on
is one text, or ``text_a<TAB>text_b`` for a pair.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trainables import metrics
from trainables.tasks._io import label_index, read_rows
from trainables.tasks.base import DataError, Example, Task, register


@register("csv")
class CSVTask(Task):
    name = "csv"
    source = "your own files"

    def configure(self, option: str | None) -> None:
        if not option:
            raise DataError("task 'csv' needs its config file: csv:path/to/task.json")
        path = Path(option)  # relative to the working directory
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: cannot read task config ({exc})") from None
        if not isinstance(spec, dict):
            raise DataError(f"{path}: task config is not a JSON object; expected name, kind, labels, train, dev, test")
        for key in ("name", "labels", "train", "dev", "test"):
            if key not in spec:
                raise DataError(f"{path}: task config lacks {key!r}; expected name, kind, labels, train, dev, test")
            if key != "labels" and not isinstance(spec[key], str):
                raise DataError(f"{path}: {key!r} must be a string, got {spec[key]!r}")
        if spec.get("kind", "sequence") not in ("sequence", "tagging"):
            raise DataError(f"{path}: kind {spec['kind']!r}, expected sequence or tagging")
        labels = spec["labels"]
        if not isinstance(labels, list) or not labels or len(set(map(str, labels))) != len(labels):
            raise DataError(f"{path}: labels must be a non-empty list of distinct class names, got {labels!r}")
        self.name, self.kind = str(spec["name"]), spec.get("kind", "sequence")
        self.labels = tuple(map(str, spec["labels"]))
        self.files = {split: path.parent / spec[split] for split in ("train", "dev", "test")}

    def examples(self, split: str) -> list[Example]:
        if split not in self.files:
            raise DataError(f"{self.name}: unknown split {split!r}, expected train, dev or test")
        path = self.files[split]
        if not path.is_file() or path.stat().st_size == 0:
            raise DataError(f"{path}: missing or empty, expected CSV id,text_a[,text_b],label for task {self.name}")
        out = []
        for line, row in read_rows(path, ("id", "text_a", "label"), delimiter=",", quoting=csv.QUOTE_MINIMAL):
            where = f"{path}:{line}"
            if self.kind == "tagging":
                words, tags = row["text_a"].split(), row["label"].split()
                if len(words) != len(tags) or not words:
                    raise DataError(f"{where}: {len(words)} words but {len(tags)} labels, expected as many")
                if row.get("text_b"):
                    raise DataError(f"{where}: text_b {row['text_b']!r} in a tagging task, expected it empty")
                label: int | tuple[int, ...] = tuple(label_index(t, self.labels, where) for t in tags)
                text_a, text_b = " ".join(words), None
            else:
                # a text_b column makes every row a pair ("" where the cell is empty), so no
                # row's text_b is dropped because another row lacks one
                label, text_a, text_b = label_index(row["label"], self.labels, where), row["text_a"], row.get("text_b")
            out.append(Example(row["id"], text_a, text_b, label))
        if not out:
            raise DataError(f"{path}: no rows, expected CSV id,text_a[,text_b],label")
        if all(ex.text_b == "" for ex in out):  # an all-empty column (as exports of sst2 write): single texts
            out = [Example(ex.id, ex.text_a, None, ex.label) for ex in out]
        return out

    def inputs(self, text: str) -> list[Example]:
        """A raw input; for a pair task ``text_a<TAB>text_b`` (as its rows are pairs)."""
        if self.kind == "sequence" and "\t" in text:
            text_a, text_b = text.split("\t", 1)
            return [Example("input", text_a, text_b, 0)]
        return super().inputs(text)

    def metrics(self, probs: np.ndarray, examples: Sequence[Example]) -> dict[str, float]:
        if self.kind == "tagging":
            gold = np.fromiter((t for ex in examples for t in ex.label), dtype=np.int64)  # type: ignore[union-attr]
            return {"token_acc": metrics.token_accuracy(probs, gold)}
        return {"acc": metrics.accuracy(probs, np.array([ex.label for ex in examples]))}
