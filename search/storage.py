"""Where a study keeps things: Tune's storage path and the SQLite URIs of MLflow and Optuna,
checked before Ray starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from trainables.cli import mask_credentials
from trainables.config import ConfigError

if TYPE_CHECKING:
    from search.config import SearchConfig


def storage_path(storage: str) -> str:
    return storage if "://" in storage else str(Path(storage).resolve())


def is_remote_storage(storage: str) -> bool:
    return "://" in storage and not storage.startswith("file://")


def absolute_sqlite(uri: str) -> str:
    """``sqlite:///mlflow.db`` -> an absolute path, so a driver started elsewhere (Ray Client,
    a job's working copy) writes to the same database the user will open."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        return prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


def check_storage(cfg: SearchConfig) -> None:
    """``--storage`` and a SQLite ``--optuna-storage`` must be writable, before Ray starts (a typo
    otherwise surfaces after the cluster's start-up, or as a traceback from SQLAlchemy)."""
    if "://" not in cfg.storage or cfg.storage.startswith("file://"):
        path = Path(cfg.storage.removeprefix("file://")).resolve()
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not writable(existing):
            raise ConfigError(f"--storage {cfg.storage}: {existing} is not a writable directory")
    if cfg.optuna_storage.startswith("sqlite:///"):
        folder = Path(cfg.optuna_storage[len("sqlite:///") :]).resolve().parent
        if not writable(folder):
            raise ConfigError(
                f"--optuna-storage {mask_credentials(cfg.optuna_storage)}: folder {folder} is missing or not writable"
            )


def writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (by trying: root passes permission checks on /proc)."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
