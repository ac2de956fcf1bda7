"""Library notices kept off the console (``--verbose`` shows them): Ray, Tune, Optuna, MLflow chatter.

Ray, Tune, Optuna and MLflow log notices a user cannot act on (a local Ray started,
checkpoints written, state snapshots "may become a bottleneck", database tables
created, TensorBoard dropping tuple hyperparameters, ...). :func:`quiet_console`
keeps them out unless ``--verbose``; warnings that matter (a failing trial, a node
lost, a missing GPU) are still shown. The study's log file (:func:`log_path`, under
``$MTL_CACHE_DIR/logs/``) keeps every warning the console leaves out, Tune's advice
included, and the whole traceback of a failed trial, which the console gives as one
line naming the trial and the file; Tune's ``Tuner.restore`` hint stays in the file too
(the study prints its own ``--resume`` command).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from trainables.cli import default_cache_dir

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


# Tune's records the console leaves to the log file: advice for Tune's own use, and its resume hint
FILE_ONLY = (
    "Resume experiment with: Tuner.restore",
    "Resume training with: ",
    "Trials did not complete: ",
    # MLflow's advice on logging the winner's model as a Python object (the registry's pyfunc is ours)
    "Passing a Python object as `python_model`",
    # cohort halving marks the losers it stops while paused for saving (search/study/halving.py): known, chosen
    "You are trying to access _mark_trial_to_checkpoint interface",
)
TRIAL_FAILED = "Trial task failed for trial "  # Tune's ERROR record of a failed trial, with its traceback

_quiet = False
_log: Path | None = None


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
    import mlflow  # noqa: F401  (MLflow sets its own console handler up on import: filter it after that)
    import optuna
    import ray  # noqa: F401  (Ray sets its loggers up on import: quiet them after that)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    quiet_loggers()
    log_to_file()


def log_path() -> Path | None:
    """The study's log file (None with ``--verbose``, where everything is on the console)."""
    return _log


def log_to_file() -> Path | None:
    """Every warning and error, tracebacks whole, also to a log file; the console handlers of the
    root and ``ray`` loggers (Ray's own does not propagate) leave out what :class:`Console` says."""
    global _log
    folder = default_cache_dir() / "logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"search-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        file = logging.FileHandler(path, encoding="utf-8")
    except OSError as exc:  # a read-only home: the console keeps what it showed before
        logging.getLogger(__name__).debug("no log file: %s", exc)
        return None
    file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # the root's console handler, and those of the loggers that do not propagate to it
    for logger in (logging.getLogger(), logging.getLogger("ray"), logging.getLogger("mlflow")):
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                handler.addFilter(Console(handler, path))
        logger.addHandler(file)
    for name in NOISY_WARNINGS:  # their warnings now reach the file; Console keeps them off the screen
        logging.getLogger(name).setLevel(logging.WARNING)
    _log = path
    return path


class Console(logging.Filter):
    """On a console handler: what it leaves to the log file. Tune's advice (:data:`NOISY_WARNINGS`)
    below ERROR and its resume hint are left out; a failed trial's traceback becomes one line naming
    the trial, its error and the log file. A filter, not a formatter: ``ray.init`` replaces the
    formatters of the ``ray`` logger's handlers. It never changes a record: the log file's handler
    gets the same one, traceback and all."""

    def __init__(self, handler: logging.Handler, log: Path) -> None:
        super().__init__()
        self.handler, self.log = handler, log

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if record.name.startswith(NOISY_WARNINGS) and record.levelno < logging.ERROR:
            return False
        if message.startswith(TRIAL_FAILED):
            self.handler.emit(
                logging.makeLogRecord(
                    {**record.__dict__, "msg": self.one_line(record), "args": (), "exc_info": None, "exc_text": None}
                )
            )
            return False
        return not any(text in message for text in FILE_ONLY)

    def one_line(self, record: logging.LogRecord) -> str:
        """``trial boom_00000 failed: ValueError: boom (traceback in LOG)``."""
        error = record.exc_info[1] if record.exc_info else None
        error = getattr(error, "cause", None) or error  # a RayTaskError wraps the trainable's own
        text = str(error).strip()
        what = f"{type(error).__name__}: {text.splitlines()[0][:200]}" if text else type(error).__name__
        return f"trial {str(record.msg)[len(TRIAL_FAILED) :]} failed: {what} (traceback in {self.log})"


def quiet_loggers() -> None:
    """Library loggers to WARNING (the noisiest to ERROR); deprecation notices off. Also runs in
    every Ray worker (:func:`worker_setup`), where checkpoint notices come from."""
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in NOISY_WARNINGS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    sys.unraisablehook = exit_in_finalizer_hook


def exit_in_finalizer_hook(unraisable: Any) -> None:
    """``sys.unraisablehook``: an exit raised inside a finalizer (a Ray worker told to exit while a ``WeakSet``
    callback runs: "Exception ignored in: <function WeakSet...> SystemExit: 1", which Ray forwards to the
    driver's console) goes to the log at DEBUG; anything else is printed as Python prints it."""
    if isinstance(unraisable.exc_value, (SystemExit, KeyboardInterrupt)):
        logging.getLogger(__name__).debug("exit inside a finalizer ignored: %r", unraisable.object)
        return
    sys.__unraisablehook__(unraisable)


def worker_setup() -> dict[str, Any] | None:
    """``ray.init(runtime_env=...)``: quiet the workers too, when the console is quiet."""
    return {"worker_process_setup_hook": "search.infra.quiet.quiet_worker"} if _quiet else None


def quiet_worker() -> None:
    """A Ray worker of a quiet study: the libraries as :func:`quiet_loggers`, and the training loop's step lines
    off (Ray forwards a worker's output to the console; the study prints a line per trial, per final epoch and
    a status line a minute instead)."""
    quiet_loggers()
    logging.getLogger("trainables.loop").setLevel(logging.WARNING)
