"""Where a study keeps things: Tune's storage path and the SQLite URIs of MLflow and Optuna,
checked before Ray starts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from trainables.cli import mask_credentials
from trainables.config import ConfigError


def storage_path(storage: str) -> str:
    return storage if "://" in storage else str(Path(storage).resolve())


def local_path(storage: str) -> Path | None:
    """A local (or mounted) storage as an absolute path; None for object stores (s3://, gs://)."""
    if "://" in storage and not storage.startswith("file://"):
        return None
    return Path(storage.removeprefix("file://")).resolve()


def is_remote_storage(storage: str) -> bool:
    return local_path(storage) is None


def absolute_sqlite(uri: str) -> str:
    """``sqlite:///mlflow.db`` -> an absolute path, so a driver started elsewhere (Ray Client,
    a job's working copy) writes to the same database the user will open."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        return prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


def check_storage(storage: str, optuna_storage: str) -> None:
    """``--storage`` and a SQLite ``--optuna-storage`` must be writable, before Ray starts (a typo
    otherwise surfaces after the cluster's start-up, or as a traceback from SQLAlchemy); a local
    ``--storage`` folder is made here."""
    path = local_path(storage)
    if path is not None:
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not writable(existing):
            raise ConfigError(f"--storage {storage}: {existing} is not a writable directory")
        path.mkdir(parents=True, exist_ok=True)  # Tune would make it later; an Optuna file may live in it
    if optuna_storage.startswith("sqlite:///"):
        folder = Path(optuna_storage[len("sqlite:///") :]).resolve().parent
        if not writable(folder):
            raise ConfigError(
                f"--optuna-storage {mask_credentials(optuna_storage)}: folder {folder} is missing or not writable"
            )


def writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (by trying: root passes permission checks on /proc)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
