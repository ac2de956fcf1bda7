"""Data root and dataset tools.

``python -m trainables.data export TASK --split S --out FILE.csv`` writes the exact
rows the model sees (``id,text_a,text_b,label``) in model order.
``python -m trainables.data download`` fetches the public copies into the data root.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from trainables.cli import run_main
from trainables.tasks import PROTOCOLS, SPLITS, DataError, Task, get_task, task_names

# Public copies (see the data README): repository, commit, path in repo -> path under the data root.
SOURCES = [
    ("HSLCY/ABSA-BERT-pair", "7d238eb8c772946b9e572373c144b11151e4187f", "data/semeval2014/Restaurants_Train.xml", "semeval2014/raw/Restaurants_Train.xml"),
    ("HSLCY/ABSA-BERT-pair", "7d238eb8c772946b9e572373c144b11151e4187f", "data/semeval2014/Restaurants_Test_Gold.xml", "semeval2014/raw/Restaurants_Test_Gold.xml"),
    *[("HSLCY/ABSA-BERT-pair", "7d238eb8c772946b9e572373c144b11151e4187f", f"data/sentihood/sentihood-{s}.json", f"sentihood/raw/sentihood-{s}.json") for s in ("train", "dev", "test")],
    *[("Drdajie/QA-B", "a63a3ca5a837e6b13ad90bfd94afdddbd2124040", f"data/sentihood/bert-pair/{f}", f"sentihood/bert-pair/{f}")
      for f in ("train_NLI_M.tsv", "dev_NLI_M.tsv", "test_NLI_M.tsv", "dev_QA_B.tsv", "test_QA_B.tsv")],
    ("eyalbd2/Reproducing-AutoPrompt", "6288fb5bec9c572f2492875ae0111df5b6daed11", "glue_data/SST-2/train_full.tsv", "sst2/train.tsv"),
    ("eyalbd2/Reproducing-AutoPrompt", "6288fb5bec9c572f2492875ae0111df5b6daed11", "glue_data/SST-2/dev.tsv", "sst2/dev.tsv"),
    *[("kamalkraj/BERT-NER", "e5be564156f194f1becb0d82aeaf6e762d9eb9ed", f"data/{f}", f"conll2003/{f}") for f in ("train.txt", "valid.txt", "test.txt")],
]


def resolve_data_dir(value: str | None = None) -> Path:
    """``--data-dir``, else ``$MTL_DATA_DIR``, else ``./data``."""
    return Path(value or os.environ.get("MTL_DATA_DIR") or "data")


def label_text(task: Task, label: int | tuple[int, ...]) -> str:
    if isinstance(label, tuple):
        return " ".join(task.labels[i] for i in label)
    return str(label) if getattr(task, "binary", False) else task.labels[label]


def export(task: Task, split: str, out: Path) -> int:
    """Write ``split``'s rows in model order; atomically (temp file, then rename)."""
    examples = task.examples(split)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "text_a", "text_b", "label"])
            for ex in examples:
                writer.writerow([ex.id, ex.text_a, ex.text_b or "", label_text(task, ex.label)])
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(examples)


def download(data_dir: Path) -> None:
    for repo, commit, src, dst in SOURCES:
        target = data_dir / dst
        if target.is_file() and target.stat().st_size > 0:
            continue
        url = f"https://raw.githubusercontent.com/{repo}/{commit}/{src}"
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"fetching {url}", file=sys.stderr)
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                body = response.read()
        except (urllib.error.URLError, TimeoutError) as exc:
            raise OSError(f"cannot fetch {url}: {exc} (offline? copy the files into {data_dir} by hand)") from None
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(body)
        os.replace(tmp, target)
    print(f"data root {data_dir} complete (the Sentihood train QA_B rows are built from train_NLI_M.tsv)", file=sys.stderr)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m trainables.data", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="write a split's model rows as CSV")
    e.add_argument("task", help=f"task spec: {', '.join(task_names())} (optionally TASK:CONSTRUCTION)")
    e.add_argument("--split", required=True, choices=SPLITS)
    e.add_argument("--out", required=True)
    e.add_argument("--data-dir")
    e.add_argument("--protocol", default="holdout", choices=PROTOCOLS)
    d = sub.add_parser("download", help="fetch the public copies into the data root")
    d.add_argument("--data-dir")
    args = p.parse_args()
    data_dir = resolve_data_dir(args.data_dir)
    if args.command == "download":
        download(data_dir)
        return 0
    n = export(get_task(args.task, data_dir, args.protocol), args.split, Path(args.out))
    print(f"wrote {n} rows of {args.task} {args.split} to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main, (DataError, OSError))
