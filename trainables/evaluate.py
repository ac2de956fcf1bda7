"""``python -m trainables.evaluate TASK --split S --predictions FILE``: score any predictions.

The file has one line per exported row (``python -m trainables.data export``):
for binary QA_B/NLI_B tasks one P(yes) per row; for other sequence tasks one row
of class probabilities (comma- or whitespace-separated); for tagging tasks one
row of class probabilities per word, words in export order. Prints the metrics
as one JSON object, computed by the same code as training.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from trainables.cli import run_main
from trainables.data import resolve_data_dir
from trainables.tasks import PROTOCOLS, SPLITS, DataError, get_task


def read_predictions(path: Path, rows: int, columns: int, binary: bool) -> np.ndarray:
    """(rows, columns) probabilities; a binary file's single P(yes) column becomes (1-p, p)."""
    want = 1 if binary else columns
    values = []
    with path.open() as f:
        for line_no, line in enumerate(f, 1):
            fields = line.replace(",", " ").split()
            if not fields:
                continue
            if len(fields) != want:
                raise DataError(f"{path}:{line_no}: {len(fields)} values, expected {want} per line")
            try:
                values.append([float(x) for x in fields])
            except ValueError:
                raise DataError(f"{path}:{line_no}: not a number in {line.strip()!r}") from None
    if len(values) != rows:
        raise DataError(f"{path}: {len(values)} prediction lines, expected {rows} (one per exported row/word)")
    probs = np.asarray(values, dtype=np.float64)
    return np.column_stack([1 - probs[:, 0], probs[:, 0]]) if binary else probs


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m trainables.evaluate", description=__doc__)
    p.add_argument("task")
    p.add_argument("--split", required=True, choices=SPLITS)
    p.add_argument("--predictions", required=True, type=Path)
    p.add_argument("--data-dir")
    p.add_argument("--protocol", default="holdout", choices=PROTOCOLS)
    args = p.parse_args()
    task = get_task(args.task, resolve_data_dir(args.data_dir), args.protocol)
    examples = task.examples(args.split)
    rows = sum(len(ex.label) for ex in examples) if task.kind == "tagging" else len(examples)  # type: ignore[arg-type]
    probs = read_predictions(args.predictions, rows, task.num_labels, getattr(task, "binary", False))
    print(json.dumps(task.metrics(probs, examples), sort_keys=True))
    return 0


if __name__ == "__main__":
    run_main(main, (DataError, OSError))
