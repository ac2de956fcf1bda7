"""Data root and dataset tools.

``python -m trainables.data export TASK --split S --out FILE.csv`` writes the exact
rows the model sees (``id,text_a,text_b,label``) in model order; labels are
written as class names (``0``/``1`` for the binary QA_B/NLI_B constructions,
space-separated tags for tagging tasks), so an export is itself a valid
``csv:`` task file.
``python -m trainables.data download`` fetches the public copies into the data root.
"""

from __future__ import annotations

import csv
import hashlib
import os
import sys
import urllib.request
from pathlib import Path
from typing import NamedTuple

from trainables.cli import ArgumentParser, atomic_write, run_main
from trainables.tasks import PROTOCOLS, SPLITS, DataError, Task, get_task, task_names


class Source(NamedTuple):
    """A public file: ``raw.githubusercontent.com/{repo}/{commit}/{path}`` -> ``{target}`` under the data root."""

    repo: str
    commit: str
    path: str
    target: str
    blob: str  # git blob SHA-1 (``git hash-object``), as listed in the data README


_SUN = ("HSLCY/ABSA-BERT-pair", "7d238eb8c772946b9e572373c144b11151e4187f")
_QAB = ("Drdajie/QA-B", "a63a3ca5a837e6b13ad90bfd94afdddbd2124040")
_SST = ("eyalbd2/Reproducing-AutoPrompt", "6288fb5bec9c572f2492875ae0111df5b6daed11")
_NER = ("kamalkraj/BERT-NER", "e5be564156f194f1becb0d82aeaf6e762d9eb9ed")
SOURCES = (
    Source(
        *_SUN,
        "data/semeval2014/Restaurants_Train.xml",
        "semeval2014/raw/Restaurants_Train.xml",
        "a08b2529c06347af5e722c62df5f9d3befa192c9",
    ),
    Source(
        *_SUN,
        "data/semeval2014/Restaurants_Test_Gold.xml",
        "semeval2014/raw/Restaurants_Test_Gold.xml",
        "83442de5d4e2e436e39716c8b3afd6249c0aa2e2",
    ),
    Source(
        *_SUN,
        "data/sentihood/sentihood-train.json",
        "sentihood/raw/sentihood-train.json",
        "dec46f53d92df8b08367b3a10eb32465090f40b4",
    ),
    Source(
        *_SUN,
        "data/sentihood/sentihood-dev.json",
        "sentihood/raw/sentihood-dev.json",
        "c8fa58c444c5a0a7e1cd000b44ff0b8ab1595609",
    ),
    Source(
        *_SUN,
        "data/sentihood/sentihood-test.json",
        "sentihood/raw/sentihood-test.json",
        "66d5c180e1172130bac2376448daded4a3c3157a",
    ),
    Source(
        *_QAB,
        "data/sentihood/bert-pair/train_NLI_M.tsv",
        "sentihood/bert-pair/train_NLI_M.tsv",
        "3710038dabc73f57b7529f1a605c491bd6388cf6",
    ),
    Source(
        *_QAB,
        "data/sentihood/bert-pair/dev_NLI_M.tsv",
        "sentihood/bert-pair/dev_NLI_M.tsv",
        "ffd128fdc0e40b018dcf3af11d9868ad5d6c1c96",
    ),
    Source(
        *_QAB,
        "data/sentihood/bert-pair/test_NLI_M.tsv",
        "sentihood/bert-pair/test_NLI_M.tsv",
        "e354af97d7d29984d724470faceba6f588543324",
    ),
    Source(
        *_QAB,
        "data/sentihood/bert-pair/dev_QA_B.tsv",
        "sentihood/bert-pair/dev_QA_B.tsv",
        "ed5284ab41111e24adbb458dc21697eb5d586610",
    ),
    Source(
        *_QAB,
        "data/sentihood/bert-pair/test_QA_B.tsv",
        "sentihood/bert-pair/test_QA_B.tsv",
        "7cac2060c59be5f0eeb2ab09d1ae06d889269d76",
    ),
    Source(*_SST, "glue_data/SST-2/train_full.tsv", "sst2/train.tsv", "781e7d9833b405de7d1faff982d040c30be79fd5"),
    Source(*_SST, "glue_data/SST-2/dev.tsv", "sst2/dev.tsv", "b1285ff5696fd163af4737dfd5adf134525d2296"),
    Source(*_NER, "data/train.txt", "conll2003/train.txt", "171cfe484671d6fa04e99526cbafd45e83842f54"),
    Source(*_NER, "data/valid.txt", "conll2003/valid.txt", "33b26c6eda1253d9e1384ac1f5b513ff8a4e3164"),
    Source(*_NER, "data/test.txt", "conll2003/test.txt", "b0eee5d55d63b0038c940d7584bb85c89d91a9be"),
)


def resolve_data_dir(value: str | None = None) -> Path:
    """``--data-dir``, else ``$MTL_DATA_DIR``, else ``./data``."""
    return Path(value or os.environ.get("MTL_DATA_DIR") or "data")


# export


def label_text(task: Task, label: int | tuple[int, ...]) -> str:
    if isinstance(label, tuple):
        return " ".join(task.labels[i] for i in label)
    return task.labels[label]


def export(task: Task, split: str, out: Path) -> int:
    """Write ``split``'s rows in model order, atomically (temp file, then rename); return the row count."""
    examples = task.examples(split)
    with atomic_write(out, newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text_a", "text_b", "label"])
        for ex in examples:
            writer.writerow([ex.id, ex.text_a, ex.text_b or "", label_text(task, ex.label)])
    return len(examples)


# download


def git_blob_sha1(body: bytes) -> str:
    """The id git gives a file's content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def download(data_dir: Path) -> int:
    """Fetch every missing or altered public file into ``data_dir``; return how many were fetched.

    Raises OSError (one line) when a file cannot be fetched or its content differs.
    """
    fetched = 0
    for source in SOURCES:
        target = data_dir / source.target
        if target.is_file() and git_blob_sha1(target.read_bytes()) == source.blob:
            continue
        url = f"https://raw.githubusercontent.com/{source.repo}/{source.commit}/{source.path}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                body = response.read()
        except OSError as exc:  # URLError, HTTPError and timeouts are all OSErrors
            raise OSError(
                f"cannot fetch {url}: {getattr(exc, 'reason', exc)} (offline? copy the files into {data_dir} by hand)"
            ) from None
        if git_blob_sha1(body) != source.blob:
            raise OSError(f"{url}: content differs from the expected git blob {source.blob}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".part")
        tmp.write_bytes(body)
        os.replace(tmp, target)
        print(f"fetched {target} ({len(body)} bytes)", file=sys.stderr)
        fetched += 1
    return fetched


def main() -> int:
    p = ArgumentParser(prog="python -m trainables.data", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="write a split's model rows as CSV")
    e.add_argument("task", help=f"task spec: {', '.join(task_names())} (optionally TASK:OPTION)")
    e.add_argument("--split", required=True, choices=SPLITS)
    e.add_argument("--out", required=True, type=Path)
    e.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    e.add_argument("--protocol", default=PROTOCOLS[0], choices=PROTOCOLS)
    d = sub.add_parser("download", help="fetch the public copies into the data root")
    d.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    args = p.parse_args()
    data_dir = resolve_data_dir(args.data_dir)
    if args.command == "download":
        n = download(data_dir)
        print(f"data root {data_dir} complete ({n} files fetched)", file=sys.stderr)
        return 0
    n = export(get_task(args.task, data_dir, args.protocol), args.split, args.out)
    print(f"wrote {n} rows of {args.task} {args.split} to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main, (DataError, OSError))
