"""``python -m search.predict --model models:/absa-best/1 --input sentences.txt --out predictions.jsonl``

The registered model's predictions: the MLflow model URI (or a local model directory) is
downloaded, then :mod:`trainables.predict`, which reads only a local directory, predicts.
"""

from __future__ import annotations

from search.tracking.registry import fetch_model
from trainables.cli import run_main
from trainables.predict import BAD_INPUT, main

if __name__ == "__main__":
    run_main(lambda: main(resolve_model=fetch_model, prog="python -m search.predict"), BAD_INPUT)
