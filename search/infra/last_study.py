"""``python -m search.infra.last_study optuna|mlflow``: the stores of the last study this machine ran, for the tools
a user opens beside the report (``make dashboard``, ``make ui`` default to them).

``search.run`` records them once its stores are checked, in ``$MTL_CACHE_DIR/last_study.json`` (default
``~/.cache/mtl-search``). A store whose address holds a password is not recorded (no secret on disk beside the
logs): the tools then fall back to their defaults and the study's closing block names the store, masked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from trainables.cli import default_cache_dir, mask_credentials

FIELDS = {"optuna": "optuna_storage", "mlflow": "tracking_uri"}


def record_path() -> Path:
    return default_cache_dir() / "last_study.json"


def record(study: str, name: str, tracking_uri: str, optuna_storage: str) -> None:
    """Write the record (atomically: a reader sees the old one or the new one); a cache that cannot be written
    costs the tools their default, never the study."""
    stores = {"tracking_uri": tracking_uri, "optuna_storage": optuna_storage}
    line = {"study": study, "name": name, **{k: v for k, v in stores.items() if mask_credentials(v) == v}}
    path = record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps(line) + "\n")
        part.replace(path)
    except OSError:
        return


def last(store: str) -> str | None:
    """The last study's ``store`` (a key of :data:`FIELDS`), None where there is none on record."""
    try:
        return json.loads(record_path().read_text()).get(FIELDS[store])
    except (OSError, ValueError, AttributeError):
        return None


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m search.infra.last_study", description=__doc__.split("\n\n")[0])
    p.add_argument("store", choices=sorted(FIELDS), help="which store's address to print")
    args = p.parse_args()
    found = last(args.store)
    if found is None:
        sys.exit(f"error: no {args.store} store on record in {record_path()} (no study run here yet)")
    print(found)


if __name__ == "__main__":
    main()
