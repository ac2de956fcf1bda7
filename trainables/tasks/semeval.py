"""SemEval-2014 Task 4 restaurants, aspect-category polarity (Pontiki et al. 2014).

Read from the raw XML. QA_B (default) as Sun et al. 2019: per sentence the
aspects price, anecdotes, food, ambience, service; per aspect the polarities
positive, neutral, negative, conflict, none; ``text_a`` = ``the polarity of the
aspect {aspect} is {polarity} .``, ``text_b`` = the sentence (trailing
whitespace stripped), label 1 for the gold polarity (none if the aspect is
absent). A category listed twice keeps its first polarity; a sentence without
categories is an error (every SemEval-2014 sentence has at least one). Other
constructions, as Sun et al.'s ``generate/`` scripts: ``NLI_B`` (``text_a`` =
``{polarity} - {aspect}``, ``text_b`` = the sentence), and one 5-class row per
aspect, *sentence first* as Sun et al.'s ``Semeval_{NLI,QA}_M_Processor``:
``NLI_M`` (``text_a`` = the sentence, ``text_b`` = the aspect) and ``QA_M``
(``text_b`` = ``what do you think of the {aspect} of it ?``). Truncation cuts
the sentence only (:attr:`Task.sentence_side`). Row ids:
``{sentence id}/{aspect}[/{polarity}]``.

Splits. ``holdout`` protocol: dev = the train sentences whose
``int(hashlib.sha1(id.encode()).hexdigest(), 16) % 10 == 0`` (293 of 3044,
whole sentences), train = the rest, test = ``Restaurants_Test_Gold.xml``;
model selection never sees test.
``thesis`` protocol: train = all of train, dev = test (what the thesis did).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainables import metrics
from trainables.tasks._absa import AuxiliarySentenceTask
from trainables.tasks._io import held_out
from trainables.tasks.base import DataError, Example, label_probabilities, register

ASPECTS = ("price", "anecdotes", "food", "ambience", "service")
CATEGORIES = {
    "price": "price",
    "anecdotes/miscellaneous": "anecdotes",
    "food": "food",
    "ambience": "ambience",
    "service": "service",
}
POLARITIES = ("positive", "neutral", "negative", "conflict", "none")
FILES = {"train": "Restaurants_Train.xml", "test": "Restaurants_Test_Gold.xml"}


def read_sentences(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    """``(sentence id, text, {aspect: polarity})`` in document order."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise DataError(f"{path}:{exc.position[0]}: malformed XML ({exc}), expected SemEval-2014 <sentences>") from None
    out = []
    for i, node in enumerate(root.iter("sentence")):
        sid = node.get("id")
        text = node.findtext("text")
        if sid is None or text is None:
            raise DataError(f"{path}: sentence #{i + 1} lacks an id attribute or a <text> element")
        categories = node.find("aspectCategories")
        if categories is None or categories.find("aspectCategory") is None:
            # otherwise every aspect would silently read as "none"
            raise DataError(
                f"{path}: sentence {sid}: no <aspectCategories>/<aspectCategory>, expected at least one category"
            )
        gold: dict[str, str] = {}
        for cat in categories.iter("aspectCategory"):
            name, polarity = cat.get("category"), cat.get("polarity")
            if name not in CATEGORIES:
                raise DataError(
                    f"{path}: sentence {sid}: unknown category {name!r}, expected one of {', '.join(CATEGORIES)}"
                )
            if polarity not in POLARITIES[:4]:
                raise DataError(
                    f"{path}: sentence {sid}: unknown polarity {polarity!r}, "
                    f"expected one of {', '.join(POLARITIES[:4])}"
                )
            gold.setdefault(CATEGORIES[name], polarity)  # a repeated category keeps the first
        out.append((sid, text.rstrip(), gold))
    if not out:
        raise DataError(f"{path}: no <sentence> elements, expected SemEval-2014 restaurants XML")
    return out


@register("semeval")
class SemEval(AuxiliarySentenceTask):
    name = "semeval"
    aspects = ASPECTS
    polarities = POLARITIES
    source = "https://github.com/HSLCY/ABSA-BERT-pair (data/semeval2014)"
    files = tuple(f"semeval2014/raw/{name}" for name in FILES.values())

    def sentences(self, split: str) -> list[tuple[str, str, dict[str, str]]]:
        if split == "test" or (split == "dev" and self.protocol == "thesis"):
            return read_sentences(self.path("semeval2014", "raw", FILES["test"]))
        if split not in ("train", "dev"):
            raise DataError(f"semeval: unknown split {split!r}, expected train, dev or test")
        rows = read_sentences(self.path("semeval2014", "raw", FILES["train"]))
        if self.protocol == "thesis":
            return rows
        return [r for r in rows if held_out(r[0], 10) == (split == "dev")]

    def examples(self, split: str) -> list[Example]:
        return [ex for sid, text, gold in self.sentences(split) for ex in self.rows(sid, text, gold)]

    def rows(self, sid: str, text: str, gold: dict[str, str]) -> list[Example]:
        """One sentence's rows: 5 (M) or 25 (B), aspects in :data:`ASPECTS` order."""
        out = []
        for aspect in ASPECTS:
            truth = gold.get(aspect, "none")
            if not self.binary:
                question = aspect if self.construction == "NLI_M" else f"what do you think of the {aspect} of it ?"
                out.append(Example(f"{sid}/{aspect}", text, question, POLARITIES.index(truth)))
                continue
            for polarity in POLARITIES:
                question = (
                    f"the polarity of the aspect {aspect} is {polarity} ."
                    if self.construction == "QA_B"
                    else f"{polarity} - {aspect}"
                )
                out.append(Example(f"{sid}/{aspect}/{polarity}", question, text, int(polarity == truth)))
        return out

    def inputs(self, text: str) -> list[Example]:
        return self.rows("input", text.rstrip(), {})

    def decode(self, probs: np.ndarray, rows: Sequence[Example]) -> dict[str, Any]:
        """Per aspect: the polarity (or ``none``) and the per-polarity scores the metrics use."""
        score = self.scores(probs)[0]  # (5 aspects, 5 polarities)
        return {
            "aspects": {
                aspect: label_probabilities(score[i], POLARITIES, "polarity") for i, aspect in enumerate(ASPECTS)
            }
        }

    def scores(self, probs: np.ndarray) -> np.ndarray:
        """(sentences, 5 aspects, 5 polarities): P(yes) normalised per aspect (B), or the softmax rows (M)."""
        score = metrics.group_scores(probs[:, 1], 5) if self.binary else np.asarray(probs)
        return score.reshape(-1, len(ASPECTS), len(POLARITIES))

    def gold(self, examples: Sequence[Example]) -> np.ndarray:
        """Gold polarity index per (sentence, aspect) row."""
        if not self.binary:
            return np.array([ex.label for ex in examples])
        yes = np.array([ex.label for ex in examples]).reshape(-1, 5)
        return yes.argmax(1)

    def metrics(self, probs: np.ndarray, examples: Sequence[Example]) -> dict[str, float]:
        return metrics.semeval_metrics(self.scores(probs).reshape(-1, len(POLARITIES)), self.gold(examples))
