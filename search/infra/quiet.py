"""Library notices kept off the console (``--verbose`` shows them): Ray, Tune, Optuna, MLflow chatter.

Ray, Tune, Optuna and MLflow log notices a user cannot act on (a local Ray started,
checkpoints written, state snapshots "may become a bottleneck", database tables
created, TensorBoard dropping tuple hyperparameters, ...). :func:`quiet_console`
keeps them out unless ``--verbose``; warnings that matter (a failing trial, a node
lost, a missing GPU) are still shown.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

# loggers whose INFO lines are bookkeeping; their warnings still show
CHATTY = ("ray", "optuna", "mlflow", "alembic", "matplotlib")


# warnings Tune logs at WARNING level that are advice for Tune's own tuning, not for a study
NOISY_WARNINGS = (
    "ray.tune.execution.experiment_state",
    "ray.tune.logger",
    # every retry of an unreachable tracking server: the study's spool says it once (search.tracking.spool)
    "urllib3.connectionpool",
)


ENVIRONMENT = {
    # Ray's new console output ignores progress_reporter and prints every result key (hundreds here)
    "RAY_AIR_NEW_OUTPUT": "0",
    # "Experiment state snapshotting has been triggered multiple times": one checkpoint per epoch is the design
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
    # read by ray.init, which resets the "ray" logger to it ("Started a local Ray instance", run times)
    "RAY_LOGGER_LEVEL": "warning",
    # "The `process_trial_result` operation took 0.5 s, which may be a performance bottleneck": an
    # epoch's result with its checkpoint and MLflow record takes that long on 2 CPU cores, once a minute
    "TUNE_WARN_THRESHOLD_S": "5",
    # "View run ... at: URL" each time a run ends (from the spool's thread, anywhere in the output);
    # the study prints its trials view's link once
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    # "Downloading artifacts: 17%|..." bars while the winner's model is logged and registered
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
}


_quiet = False


def quiet_console(verbose: bool) -> None:
    """Called once, first thing in ``main``: quiet the libraries unless ``verbose``."""
    global _quiet
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", ENVIRONMENT["RAY_AIR_NEW_OUTPUT"])
    if verbose:
        return
    _quiet = True
    for key, value in ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # MLflow resets its logger's level on import
    import optuna
    import ray  # noqa: F401  (Ray sets its loggers up on import: quiet them after that)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    quiet_loggers()


def quiet_loggers() -> None:
    """Library loggers to WARNING (the noisiest to ERROR); deprecation notices off. Also runs in
    every Ray worker (:func:`worker_setup`), where checkpoint notices come from."""
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in NOISY_WARNINGS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)


def worker_setup() -> dict[str, Any] | None:
    """``ray.init(runtime_env=...)``: quiet the workers too, when the console is quiet."""
    return {"worker_process_setup_hook": "search.infra.quiet.quiet_loggers"} if _quiet else None
