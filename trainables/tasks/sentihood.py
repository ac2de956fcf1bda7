"""Sentihood TABSA (Saeidi et al. 2016), as constructed by Sun et al. 2019.

Source: the published NLI_M files ``sentihood/bert-pair/{train,dev,test}_NLI_M.tsv``
(tokenized, lower-cased reviews; 4 aspects general, price, safety, transit per
(sentence, location), in the published order). QA_B (default) expands each row
into 3 rows None, Positive, Negative: ``text_a`` = ``the polarity of the aspect
{aspect} of location - {k} - is {polarity} .``, ``text_b`` = the review, label 1
iff the polarity is the gold one. This reproduces the published
``{dev,test}_QA_B.tsv`` row for row (and rebuilds the unpublished train file).
Other constructions, as Sun et al.'s ``generate/`` scripts: ``NLI_B`` (``text_a`` =
``{polarity} - location - {k} - {aspect}``, ``text_b`` = the review), and, *review
first* as Sun et al.'s ``Sentihood_{NLI,QA}_M_Processor`` (``text_a`` = the review),
3 classes: ``NLI_M`` (``text_b`` = ``location - {k} - {aspect}``, the published
file's columns as they are) and ``QA_M`` (``text_b`` = ``what do you think of the
{aspect} of location - {k} ?``). Truncation cuts the review only
(:attr:`Task.sentence_side`). Splits are the official ones under both protocols (the dataset has
its own dev set). Row ids: ``{NLI_M id}/{k}/{aspect}[/{polarity}]`` (the NLI_M id
numbers the sentence within its split; aspect ``transit-location``).

The metrics group rows by position, so reading checks the published structure:
runs of 4 rows with one id and location, aspects in the order of :data:`ASPECTS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from trainables import metrics
from trainables.tasks._absa import AuxiliarySentenceTask
from trainables.tasks._io import label_index, read_rows
from trainables.tasks.base import DataError, Example, label_probabilities, register

ASPECTS = ("general", "price", "safety", "transit location")  # as written in the NLI_M files
POLARITIES = ("None", "Positive", "Negative")
RAW_LOCATION = re.compile(r"\bLOCATION([12])\b", re.IGNORECASE)
LOCATION = re.compile(r"\blocation - ([12])\b")
TARGET = re.compile(r"^location - ([12]) - (general|price|safety|transit location)$")
Row = tuple[str, str, str, str, int]  # (id, review, location k, aspect, gold index)


def check_run(rows: list[Row], item: Row, where: str, start: int) -> None:
    """Raise unless ``item`` continues the runs of 4 aspects per (id, location) in ``rows``."""
    position = len(rows) % len(ASPECTS)
    rid, _, k, aspect, _ = item
    if position and (rid, k) != (rows[-1][0], rows[-1][2]):
        raise DataError(
            f"{where}: id {rid} location - {k} - {aspect}, expected id {rows[-1][0]} location - {rows[-1][2]} "
            f"- {ASPECTS[position]} (runs of {len(ASPECTS)} aspects; this one began on line {start})"
        )
    if aspect != ASPECTS[position]:
        raise DataError(
            f"{where}: aspect {aspect!r} of id {rid} location - {k}, expected {ASPECTS[position]!r} "
            f"(each (id, location) a run of {len(ASPECTS)} rows: {', '.join(ASPECTS)})"
        )


@register("sentihood")
class Sentihood(AuxiliarySentenceTask):
    name = "sentihood"
    aspects = ASPECTS
    polarities = POLARITIES
    source = (
        "https://github.com/Drdajie/QA-B (data/sentihood/bert-pair; made by HSLCY/ABSA-BERT-pair's generate/ scripts)"
    )
    files = tuple(f"sentihood/bert-pair/{split}_NLI_M.tsv" for split in ("train", "dev", "test"))

    def rows(self, split: str) -> list[Row]:
        """``(id, review, location k, aspect, gold index)`` in published order."""
        if split not in ("train", "dev", "test"):
            raise DataError(f"sentihood: unknown split {split!r}, expected train, dev or test")
        path = self.path("sentihood", "bert-pair", f"{split}_NLI_M.tsv")
        out: list[Row] = []
        start = 0  # line of the current run's first row
        for line, row in read_rows(path, ("id", "sentence1", "sentence2", "label")):
            target = TARGET.match(row["sentence2"])
            if target is None:
                raise DataError(
                    f"{path}:{line}: target {row['sentence2']!r}, "
                    "expected 'location - 1|2 - general|price|safety|transit location'"
                )
            gold = label_index(row["label"], POLARITIES, f"{path}:{line}")
            item = (row["id"], row["sentence1"], target.group(1), target.group(2), gold)
            check_run(out, item, f"{path}:{line}", start)
            start = line if len(out) % len(ASPECTS) == 0 else start
            out.append(item)
        if not out:
            raise DataError(f"{path}: no rows, expected Sentihood NLI_M data")
        if len(out) % len(ASPECTS):
            raise DataError(
                f"{path}: ends inside the run of id {out[-1][0]} location - {out[-1][2]} begun on line {start}, "
                f"expected runs of {len(ASPECTS)} rows ({', '.join(ASPECTS)})"
            )
        return out

    def examples(self, split: str) -> list[Example]:
        return [
            ex
            for rid, review, k, aspect, gold in self.rows(split)
            for ex in self.construct(f"{rid}/{k}/{aspect.replace(' ', '-')}", review, k, aspect, gold)
        ]

    def construct(self, key: str, review: str, k: str, aspect: str, gold: int) -> list[Example]:
        """The rows of one (review, location, aspect): 1 (M) or 3 (B)."""
        if self.construction == "NLI_M":
            return [Example(key, review, f"location - {k} - {aspect}", gold)]
        if self.construction == "QA_M":
            return [Example(key, review, f"what do you think of the {aspect} of location - {k} ?", gold)]
        return [
            Example(
                f"{key}/{polarity}",
                (
                    f"the polarity of the aspect {aspect} of location - {k} - is {polarity} ."
                    if self.construction == "QA_B"
                    else f"{polarity} - location - {k} - {aspect}"
                ),
                review,
                int(i == gold),
            )
            for i, polarity in enumerate(POLARITIES)
        ]

    def inputs(self, text: str) -> list[Example]:
        """Rows for every location the review names, each with the 4 aspects.

        The review is normalised as the published files are: ``LOCATION1`` -> ``location - 1``,
        lower-cased (their nltk word splitting is not repeated: WordPiece splits punctuation alike).
        """
        review = RAW_LOCATION.sub(r"location - \1", text.strip()).lower()
        locations = sorted(set(LOCATION.findall(review)))
        if not locations:
            raise DataError(
                f"sentihood input {text.strip()[:60]!r}: no location, expected LOCATION1/LOCATION2 (or location - 1/2)"
            )
        return [
            ex
            for k in locations
            for aspect in ASPECTS
            for ex in self.construct(f"input/{k}/{aspect.replace(' ', '-')}", review, k, aspect, 0)
        ]

    def decode(self, probs: np.ndarray, rows: Sequence[Example]) -> dict[str, Any]:
        """Per location (``LOCATION1``/``LOCATION2``) and aspect: the polarity and its scores."""
        score = self.scores(probs)  # (locations, 4 aspects, 3 polarities)
        locations = [rows[i].id.split("/")[1] for i in range(0, len(rows), self.group_size)]
        return {
            "locations": {
                f"LOCATION{k}": {
                    a.replace(" ", "-"): label_probabilities(score[j, i], POLARITIES, "polarity")
                    for i, a in enumerate(ASPECTS)
                }
                for j, k in enumerate(locations)
            }
        }

    def scores(self, probs: np.ndarray) -> np.ndarray:
        """(groups, 4 aspects, 3 polarities): P(yes) normalised per aspect (B), or the softmax rows (M)."""
        score = metrics.group_scores(probs[:, 1], 3) if self.binary else np.asarray(probs)
        return score.reshape(-1, len(ASPECTS), len(POLARITIES))

    def gold(self, examples: Sequence[Example]) -> np.ndarray:
        labels = np.array([ex.label for ex in examples])
        return labels.reshape(-1, 3).argmax(1) if self.binary else labels

    def metrics(self, probs: np.ndarray, examples: Sequence[Example]) -> dict[str, float]:
        return metrics.sentihood_metrics(self.scores(probs).reshape(-1, len(POLARITIES)), self.gold(examples))
