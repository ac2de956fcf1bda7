"""A study invocation's name: a new one must be free in Tune, Optuna and MLflow; ``--resume`` finds
the latest; the command that continues it.
"""

from __future__ import annotations

import glob
import logging
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import optuna

from search.infra.storage import storage_path
from search.study.config import SearchConfig
from trainables.cli import mask_credentials
from trainables.config import ConfigError

logger = logging.getLogger(__name__)


def latest_experiment(storage: str, study: str, preset: str | None) -> str:
    if "://" in storage:
        raise ConfigError("--resume with an object-store --storage needs --name EXPERIMENT")
    pattern = f"{study}-{preset or '*'}-*"
    found = [p for p in glob.glob(os.path.join(storage_path(storage), pattern)) if "-final-" not in os.path.basename(p)]
    found.sort(key=os.path.getmtime)
    if not found:
        raise ConfigError(f"--resume: no experiment {pattern} under {storage_path(storage)}")
    return os.path.basename(found[-1])


def check_new_name(name: str, storage: str, optuna_storage: str) -> None:
    """A new study must not reuse an experiment's name (``storage``: Tune's, absolute): Tune, Optuna and
    MLflow would mix them."""
    taken = "://" not in storage and Path(storage, name).exists()
    sqlite_file = optuna_storage[len("sqlite:///") :] if optuna_storage.startswith("sqlite:///") else None
    if not taken and (sqlite_file is None or Path(sqlite_file).is_file()):  # asking would create a new file
        try:
            taken = name in optuna.get_all_study_names(optuna_storage)
        except Exception as exc:  # an unreachable Optuna storage is bad input too
            raise ConnectionError(
                f"--optuna-storage {mask_credentials(optuna_storage)}: "
                f"{mask_credentials(str(exc).splitlines()[0][:200])}"
            ) from None
    if taken:
        raise ConfigError(f"--name {name}: a study of that name exists; continue it with --resume, or pick a new name")


def warn_ignored_on_resume(cfg: SearchConfig) -> None:
    """The flags given with ``--resume`` that it ignores: it continues the study as it was started."""
    fixed = {  # --trials adds trials up to its number (search.study.extend)
        "--search": cfg.search if cfg.search != SearchConfig.search else None,
        "--epochs": cfg.epochs,
        "--model": cfg.model,
        "--seeds": cfg.seeds,
        "--grace-period": cfg.grace_period,
        "--reduction-factor": cfg.reduction_factor,
        "--first-rung-seeds": cfg.first_rung_seeds,
        "--auxiliary": cfg.auxiliary,
    }
    given = [flag for flag, value in fixed.items() if value is not None]
    if given:
        logger.warning("--resume continues the study as it was started: ignoring %s", ", ".join(given))


def resume_command(study: str, name: str, flags: Sequence[str] = ()) -> str:
    """The command that continues the study invocation ``name`` (``study``: its file, or a built-in's name;
    ``flags``: those that locate or define it), quoted for a shell."""
    return shlex.join(["python", "-m", "search.run", study, "--resume", "--name", name, *flags])
