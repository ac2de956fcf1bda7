"""``python -m trainables.evaluate TASK --split S --predictions FILE``: score any predictions.

The file has one line per exported row (``python -m trainables.data export``),
in export order: one row of class probabilities (comma- or whitespace-separated)
per row, or per word for tagging tasks. A two-class task (sst2, the binary
QA_B/NLI_B constructions) also takes a single value per line, P(class 1) =
P(yes). Every value must be a finite probability in [0, 1], and a row of
several values a distribution (summing to 1, within ``SUM_TOLERANCE``). Prints the
metrics, computed by the same code as training, as one JSON object (an
undefined metric is ``null``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from trainables.cli import ArgumentParser, run_main
from trainables.data import resolve_data_dir
from trainables.tasks import PROTOCOLS, SPLITS, DataError, Task, get_task
from trainables.tasks._io import not_utf8

SUM_TOLERANCE = 0.01  # rows rounded to a few decimals (45 PoS tags at 4 decimals: up to 0.0023 off)


def read_predictions(path: Path, rows: int, classes: int) -> np.ndarray:
    """(rows, classes) probabilities; for two classes a single column p becomes (1 - p, p)."""
    widths = (1, 2) if classes == 2 else (classes,)
    values = []
    try:
        with path.open(encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                row = prediction_row(line, values[0] if values else None, widths, f"{path}:{line_no}")
                if row:
                    values.append(row)
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    if len(values) != rows:
        raise DataError(
            f"{path}: {len(values)} prediction lines, expected {rows} (one per exported row, or per word for tagging)"
        )
    probs = np.asarray(values, dtype=np.float64) if values else np.empty((0, classes))
    return np.column_stack([1 - probs[:, 0], probs[:, 0]]) if probs.shape[1] == 1 else probs


def prediction_row(line: str, first: list[float] | None, widths: tuple[int, ...], where: str) -> list[float]:
    """One line's probabilities (none for a blank line): as many as the first line's, each in
    [0, 1], several summing to 1."""
    fields = line.replace(",", " ").split()
    if not fields:
        return []
    width = len(first) if first else len(fields)  # every line as wide as the first
    if len(fields) != width or width not in widths:
        expected = " or ".join(map(str, widths))
        raise DataError(f"{where}: {len(fields)} values, expected {expected} per line (classes of the task)")
    try:
        row = [float(x) for x in fields]
    except ValueError:
        raise DataError(f"{where}: not a number in {line.strip()!r}") from None
    bad = next((x for x in row if not 0.0 <= x <= 1.0), None)  # NaN fails the test too
    if bad is not None:
        raise DataError(f"{where}: value {bad}, expected a finite probability in [0, 1]")
    if len(row) > 1 and abs(sum(row) - 1.0) > SUM_TOLERANCE:
        raise DataError(f"{where}: values sum to {sum(row):.4g}, expected a distribution over the classes (sum 1)")
    return row


def evaluate(task: Task, split: str, predictions: Path) -> dict[str, float]:
    examples = task.examples(split)
    if task.kind == "tagging":
        rows = sum(len(ex.label) for ex in examples)  # type: ignore[arg-type]
    else:
        rows = len(examples)
    probs = read_predictions(predictions, rows, task.num_labels)
    try:
        return task.metrics(probs, examples)
    except ValueError as exc:  # e.g. rows that do not split into the metric's groups
        raise DataError(f"{predictions}: cannot score {task.name} {split}: {exc}") from None


def main() -> int:
    p = ArgumentParser(prog="python -m trainables.evaluate", description=__doc__)
    p.add_argument("task", help="task spec, as for training (e.g. semeval, semeval:NLI_M, csv:task.json)")
    p.add_argument("--split", required=True, choices=SPLITS)
    p.add_argument("--predictions", required=True, type=Path)
    p.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    p.add_argument("--protocol", default=PROTOCOLS[0], choices=PROTOCOLS)
    args = p.parse_args()
    task = get_task(args.task, resolve_data_dir(args.data_dir), args.protocol)
    scores = evaluate(task, args.split, args.predictions)
    print(json.dumps({k: None if math.isnan(v) else float(v) for k, v in scores.items()}))
    return 0


if __name__ == "__main__":
    run_main(main, (DataError, OSError))
