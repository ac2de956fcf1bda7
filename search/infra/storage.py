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


def beside_store(tracking_uri: str) -> str | None:
    """Where MLflow's artifacts go beside a SQLite tracking store (``mlruns`` next to the database file), as a URI;
    None for a server, whose own artifact root holds them. Without it MLflow puts a database store's artifacts
    under ``./mlruns`` of whatever folder the process runs in, apart from the database that indexes them."""
    uri = absolute_sqlite(tracking_uri)
    prefix = "sqlite:///"
    return (Path(uri[len(prefix) :]).parent / "mlruns").as_uri() if uri.startswith(prefix) else None


def check_storage(storage: str, optuna_storage: str) -> None:
    """``--storage`` and a SQLite ``--optuna-storage`` must be writable, before Ray starts (a typo
    otherwise surfaces after the cluster's start-up, or as a traceback from SQLAlchemy). An Optuna file
    in the ``--storage`` folder may wait for it (:func:`make_sqlite_folder`, once the study is checked)."""
    path = local_path(storage)
    if path is not None:
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not writable(existing):
            raise ConfigError(f"--storage {storage}: {existing} is not a writable directory")
    if optuna_storage.startswith("sqlite:///"):
        folder = Path(optuna_storage[len("sqlite:///") :]).resolve().parent
        if folder != path and not writable(folder):
            raise ConfigError(
                f"--optuna-storage {mask_credentials(optuna_storage)}: folder {folder} is missing or not writable"
            )


def make_sqlite_folder(uri: str) -> None:
    """The folder of a SQLite database URI, made where missing (SQLite makes the file, not its folder)."""
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///") :]).resolve().parent.mkdir(parents=True, exist_ok=True)


def writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (by trying: root passes permission checks on /proc)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
