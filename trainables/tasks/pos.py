"""CoNLL-2003 English part-of-speech tagging (Tjong Kim Sang & De Meulder 2003).

The thesis's "NER" task is really PoS tagging on CoNLL-2003. Token
classification over the 45 tags; the model labels each word's first sub-token.
Splits: train / valid / test under both protocols (dev = valid). ``-DOCSTART-``
lines are skipped. Row ids: ``{file}:{line of the sentence's first word}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trainables import metrics
from trainables.tasks._io import label_index
from trainables.tasks.base import DataError, Example, Task, register

# The 45 tags of CoNLL-2003 train, sorted; hard-coded so head outputs never shift
# (valid and test use no other tag).
TAGS = (
    '"',
    "$",
    "''",
    "(",
    ")",
    ",",
    ".",
    ":",
    "CC",
    "CD",
    "DT",
    "EX",
    "FW",
    "IN",
    "JJ",
    "JJR",
    "JJS",
    "LS",
    "MD",
    "NN",
    "NNP",
    "NNPS",
    "NNS",
    "NN|SYM",
    "PDT",
    "POS",
    "PRP",
    "PRP$",
    "RB",
    "RBR",
    "RBS",
    "RP",
    "SYM",
    "TO",
    "UH",
    "VB",
    "VBD",
    "VBG",
    "VBN",
    "VBP",
    "VBZ",
    "WDT",
    "WP",
    "WP$",
    "WRB",
)
FILES = {"train": "train.txt", "dev": "valid.txt", "test": "test.txt"}


def read_conll(path: Path, tags: Sequence[str]) -> list[Example]:
    """Sentences of a CoNLL-2003 file: words joined by spaces, label = POS tag indices."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc}), expected CoNLL-2003 'word POS chunk NER' lines") from None
    index = {tag: i for i, tag in enumerate(tags)}
    out: list[Example] = []
    words: list[str] = []
    labels: list[int] = []
    start = 0  # line of the sentence's first word
    for line_no, line in enumerate(lines + [""], 1):  # the extra blank line ends the last sentence
        fields = line.split()
        if fields and len(fields) != 4:
            raise DataError(f"{path}:{line_no}: {len(fields)} fields, expected 4 (word POS chunk NER)")
        if fields and fields[0] != "-DOCSTART-":
            start = start if words else line_no
            words.append(fields[0])
            tag = index.get(fields[1])
            labels.append(label_index(fields[1], tags, f"{path}:{line_no}") if tag is None else tag)
        elif words:  # a blank line (or a document start) ends the sentence
            out.append(Example(f"{path.name}:{start}", " ".join(words), None, tuple(labels)))
            words, labels = [], []
    if not out:
        raise DataError(f"{path}: no sentences, expected CoNLL-2003 'word POS chunk NER' lines")
    return out


@register("pos")
class PoS(Task):
    name = "pos"
    kind = "tagging"
    labels = TAGS
    source = "https://github.com/kamalkraj/BERT-NER (data/)"
    files = tuple(f"conll2003/{name}" for name in FILES.values())

    def examples(self, split: str) -> list[Example]:
        if split not in FILES:
            raise DataError(f"pos: unknown split {split!r}, expected train, dev or test")
        return read_conll(self.path("conll2003", FILES[split]), self.labels)

    def metrics(self, probs: np.ndarray, examples: Sequence[Example]) -> dict[str, float]:
        gold = np.fromiter((t for ex in examples for t in ex.label), dtype=np.int64)  # type: ignore[union-attr]
        return {"token_acc": metrics.token_accuracy(probs, gold)}
