"""How a study invocation ends: whatever ends it, nothing it opened is left RUNNING.

The runner makes a :class:`StudyEnd` first, tells it the study's parent run once that is
open (created, or reopened by ``--resume`` just before Tune runs) and calls one of:

- :meth:`StudyEnd.finished`: the parent run FINISHED;
- :meth:`StudyEnd.stopped` (Ctrl-C, SIGTERM, the tracking server unreachable past its grace
  period): Tune saved its state; the parent run and every trial run still open are KILLED,
  tagged ``end_reason`` and ``resume`` (the command that continues them); Optuna trials
  still RUNNING stay so for ``--resume``, which reruns their Tune trials and tells Optuna
  their outcome, and the Optuna study's user attribute ``ended`` names them and the reason;
- :meth:`StudyEnd.crashed` (an error in the driver, a refusal after the parent run exists, a
  second Ctrl-C): the parent run FAILED (KILLED for an interrupt) with the error as its
  ``end_reason``, open trial runs KILLED; resumable as above when Tune's state was saved,
  otherwise the RUNNING Optuna trials FAIL.

MLflow writes go through the study's spool (:mod:`search.tracking.sink`): with the tracking
server down they wait on disk and ``--resume`` sends them first.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState
from ray import tune

from search.study.names import resume_command
from search.study.plan import StudyPlan
from search.tracking.outcome import TUNE_ENDED
from search.tracking.records import END_REASON, RESUME_TAG, STATUS_TAG
from search.tracking.sink import open_trial_runs
from search.tracking.spool import Spool
from trainables.cli import mask_credentials

logger = logging.getLogger(__name__)


DRAIN_S = 30.0  # how long an ending waits for its records to reach a server that answers


def sigterm_as_ctrl_c(noted: Callable[[], None] | None = None) -> None:
    """SIGTERM stops the driver as Ctrl-C does: Tune's graceful stop during fit (its state saved, the runs ended
    by the caller), KeyboardInterrupt elsewhere. The handler ``ray.init`` installs exits at once, before any of
    that. Call after ``ray.init``, in the main thread; ``noted`` is called first."""

    def on_sigterm(signum, frame) -> None:
        if noted is not None:
            noted()
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, on_sigterm)


class TrackingUnavailable(ConnectionError):
    """The tracking server stayed unreachable past the grace period: the study stopped, resumable."""


@dataclass
class StudyEnd:
    study: str
    name: str = ""
    tune_path: str = ""
    optuna_storage: str = ""
    spool: Spool | None = None  # set by :meth:`opened`
    signal_name: str | None = None  # SIGTERM, when that stopped the study
    resume: str = ""  # the command that continues the study (the plan's); "": its name alone
    done: bool = field(default=False, init=False)

    def opened(self, spool: Spool, name: str, tune_path: str, optuna_storage: str, resume: str = "") -> None:
        """The parent run is open: from here on an ending must close it."""
        self.spool, self.name, self.tune_path, self.optuna_storage = spool, name, tune_path, optuna_storage
        self.resume = resume

    def reopened(self, spool: Spool, name: str, tune_path: str, optuna_storage: str, resume: str = "") -> None:
        """``--resume``, just before Tune runs: the parent run RUNNING again, its ending's tags gone."""
        spool.put({"op": "start", "trial": None, "clear_tags": [END_REASON, RESUME_TAG]})
        self.opened(spool, name, tune_path, optuna_storage, resume)

    def resume_command(self) -> str:
        return self.resume or resume_command(self.study, self.name)

    def watch_signals(self) -> None:
        """SIGTERM ends the study as Ctrl-C does (:func:`sigterm_as_ctrl_c`), its name kept for the ending."""
        sigterm_as_ctrl_c(lambda: setattr(self, "signal_name", "SIGTERM"))

    # -- the three endings ------------------------------------------------------------
    def finished(self) -> None:
        self.done = True
        self.spool.put({"op": "end", "trial": None, "state": "FINISHED", "tags": {}})
        # the study's ``ended`` in Optuna (optuna-dashboard shows it) is this ending, not an earlier interruption
        end_optuna_trials(self.optuna_storage, self.name, "FINISHED: every trial ended", None)

    def stopped(self, reason: str, wait_s: float = DRAIN_S) -> None:
        self._end("KILLED", reason, wait_s)

    def crashed(self, exc: BaseException) -> None:
        if self.done or self.spool is None:
            return  # nothing opened yet (a refusal before the parent run), or already ended
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            state, reason = "KILLED", f"interrupted ({self.signal_name or signal_of(exc)})"
        else:
            text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            state, reason = "FAILED", f"{type(exc).__name__}: {text}"
        if self._end(state, reason, min(DRAIN_S, self.spool.grace_s)):
            logger.error(
                "study %s ended (%s), its runs %s; continue it with: %s",
                self.name,
                reason,
                state,
                self.resume_command(),
            )

    def _end(self, state: str, reason: str, wait_s: float) -> bool:
        """End every run still open, the parent with ``state``; whether ``--resume`` continues the study."""
        self.done = True
        reason = mask_credentials(reason)
        unfinished = saved_unfinished(self.tune_path)
        resume = {RESUME_TAG: self.resume_command()}
        for trial in open_trial_runs(self.spool.path):
            # a trial Tune's saved state lacks (a crash between two saves) is trained afresh by --resume
            tags = {STATUS_TAG: "interrupted", END_REASON: reason, **(resume if trial in (unfinished or ()) else {})}
            self.spool.put({"op": "end", "trial": trial, "state": "KILLED", "tags": tags})
        tags = {END_REASON: reason, **(resume if unfinished is not None else {})}
        self.spool.put({"op": "end", "trial": None, "state": state, "tags": tags})
        end_optuna_trials(
            self.optuna_storage,
            self.name,
            f"{state}: {reason}",
            self.resume_command() if unfinished is not None else None,
        )
        if not self.spool.drain(wait_s) and wait_s > 0:
            # --resume sends a spool's backlog before it looks for anything to continue
            logger.warning(
                "%d MLflow records wait in %s (tracking server unreachable: %s); %s sends them",
                self.spool.pending(),
                self.spool.path,
                self.spool.last_error,
                self.resume_command(),
            )
        return unfinished is not None


def signal_of(exc: BaseException) -> str:
    """Ctrl-C, or the signal a ``SystemExit`` stands for (``ray.init``'s SIGTERM handler exits with 15)."""
    code = getattr(exc, "code", None)
    if isinstance(exc, SystemExit) and isinstance(code, int) and code in {s.value for s in signal.Signals}:
        return signal.Signals(code).name
    return "Ctrl-C" if isinstance(exc, KeyboardInterrupt) else f"exit {code}"


def saved_unfinished(tune_path: str) -> set[str] | None:
    """The trials ``--resume`` continues (unfinished in the state Tune saved), or None where
    Tune saved no state to restore."""
    if not tune_path:
        return None
    try:
        if not tune.Tuner.can_restore(tune_path):
            return None
        return {t.trial_id for t in tune.ExperimentAnalysis(tune_path).trials if t.status not in TUNE_ENDED}
    except Exception:  # an unreadable state or object store: nothing we can promise
        return None


def end_optuna_trials(storage: str, name: str, reason: str, resume: str | None) -> list[int]:
    """Optuna trials still RUNNING: kept for ``resume`` (the study's user attribute ``ended``
    names them), or, with nothing to resume, failed with ``reason``. Returns their numbers."""
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except Exception:  # no Optuna study yet, or its storage unreadable: nothing of ours is in it
        return []
    running = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    study.set_user_attr(
        "ended",
        {"at": time.strftime("%Y-%m-%d %H:%M:%S"), "reason": reason, "running_trials": running, "resume": resume},
    )
    if resume is None:
        for number in running:
            study.tell(number, state=TrialState.FAIL)
    return running


def tracking_unavailable(spool: Spool, plan: StudyPlan, what: str = "stopped with its state saved") -> Exception:
    stores = plan.stores
    return TrackingUnavailable(
        f"MLflow tracking server {mask_credentials(stores.tracking_uri)} unreachable for over "
        f"{stores.tracking_grace:g} s ({spool.last_error}): study {plan.name} {what}, {spool.pending()} records "
        f"wait in {spool.path}; once the server answers, continue with: {plan.resume_command}"
    )
