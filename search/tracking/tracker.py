"""The tracker callback: a study's trials in MLflow, written from the Tune driver.

The driver is the one place that knows a trial's fate (completed, pruned by ASHA, failed);
workers only report results. The callback never calls MLflow: it appends records to the study's
spool (:mod:`search.tracking.sink`), which a background thread sends in order, so a
tracking-server outage never stalls training; a restored study (``Tuner.restore``) finds its
runs again and logs into them. What it writes is named in :mod:`search.tracking.records`. A run
its study ended before the trial did (Ctrl-C, a crash, the tracking server gone) is KILLED with
``status`` ``interrupted``, ``end_reason`` and, where ``--resume`` continues it, ``resume``.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from ray.tune import Callback
from ray.tune.result import SHOULD_CHECKPOINT

from search.infra.interrupt import interrupt_tune
from search.tracking import records as rec
from search.tracking.outcome import FAILED, outcome_of
from search.tracking.records import CONFIG_ARTIFACT, END_REASON, RESUME_TAG, STATUS_TAG, TrialParams
from search.tracking.sink import study_spool
from search.tracking.spool import Spool
from trainables.results import DIVERGED, FAILURE_REASON
from trainables.trial import TrialConfig

logger = logging.getLogger(__name__)


def numeric(result: dict[str, Any], objective: str | None) -> dict[str, float]:
    """The metrics of one result: ours (slashed keys, and ``primary_passes``; Tune's bookkeeping and
    ``epoch``, the step, stay out) plus ``objective`` and ``objective_std`` named as such."""
    out = {
        k: float(v)
        for k, v in result.items()
        if ("/" in k or k == rec.PASSES)
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(float(v))
    }
    if objective and objective in out:
        out[rec.OBJECTIVE] = out[objective]
        std = rec.strip_mean(objective) + "/std" if objective.endswith("/mean") else None
        if std in out:
            out[rec.OBJECTIVE_STD] = out[std]
    return out


class MLflowTracker(Callback):
    """Tune callback: each trial's run, results and fate, as records in the study's spool
    (:func:`study_spool`, sent by :class:`MlflowSink`), so the driver never waits for the
    tracking server. Once the server has been unreachable past the spool's grace period,
    ``on_step_begin`` stops the study as Ctrl-C does: Tune saves its state and
    ``--resume`` continues it (the runner says so in one line)."""

    def __init__(
        self,
        tracking_uri: str,
        parent_run_id: str,
        max_epochs: int,
        seeds: list[int],
        *,
        spool: str,
        objective: str | None = None,
    ) -> None:
        self.tracking_uri, self.parent_run_id = tracking_uri, parent_run_id
        self.max_epochs, self.seeds, self.objective = max_epochs, seeds, objective
        self.spool_file = str(spool)
        self.started: set[str] = set()  # trials whose run this driver has opened
        self.waiting: dict[str, list[dict[str, Any]]] = {}  # trial -> logs of results Tune holds no checkpoint of yet
        self.logged: dict[str, Any] = {}  # trial -> the training_iteration of the last result this driver logged
        self._spool: Spool | None = None
        self._stopping = False

    def __getstate__(self) -> dict[str, Any]:
        # a restored driver opens (finds and reopens) its trials' runs again, through its own spool
        return {**self.__dict__, "started": set(), "waiting": {}, "logged": {}, "_spool": None, "_stopping": False}

    @property
    def spool(self) -> Spool:
        if self._spool is None:
            self._spool = study_spool(self.spool_file, self.tracking_uri, self.parent_run_id)
        return self._spool

    def _start(self, trial) -> None:
        if trial.trial_id in self.started:
            return
        self.started.add(trial.trial_id)
        cfg = TrialConfig.of_tune(trial.config)
        tags = {
            rec.PARENT_TAG: self.parent_run_id,
            rec.TRIAL_ID_TAG: trial.trial_id,
            rec.KIND_TAG: cfg.kind or rec.TRIAL_KIND,
            rec.CANONICAL_KEY_TAG: cfg.key,
            STATUS_TAG: "running",
            rec.EPOCHS_TAG: "0",
            rec.BASELINE_TAG: str(cfg.baseline).lower(),
        }
        if cfg.number is not None:
            tags[rec.TRIAL_NUMBER_TAG] = str(cfg.number)
        if cfg.final_for:  # seeds search.finalize trained for that trial's config
            tags[rec.FINAL_FOR_TAG] = cfg.final_for
        params = TrialParams.of(cfg.train, cfg.seeds or self.seeds).to_params()
        self.spool.put(
            {
                "op": "start",
                "trial": trial.trial_id,
                "name": cfg.label or trial.trial_id,
                "tags": tags,
                "params": params,
                "artifacts": {CONFIG_ARTIFACT: cfg.train.to_dict()},
                "reopen_tags": {STATUS_TAG: "running"},
                "clear_tags": [END_REASON, RESUME_TAG],
            }
        )

    def on_step_begin(self, iteration, trials, **info) -> None:
        if self.spool.expired() and not self._stopping:
            self._stopping = True
            # Tune's notices name Ctrl-C and Tuner.restore; the runner's one line says what happened and what to do
            logging.getLogger("ray.tune.tune").setLevel(logging.CRITICAL)
            # Tune's graceful stop, as on Ctrl-C: state saved, trials resumable
            interrupt_tune()

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self._start(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        self._start(trial)
        record = self._log_record(trial, result)
        if result.get(SHOULD_CHECKPOINT):
            # logged once Tune holds its checkpoint (on_checkpoint, saved after the result): an epoch a
            # stop catches in between is trained again by --resume, and logged then, once
            self.waiting.setdefault(trial.trial_id, []).append(record)
        else:
            self._put_log(trial, record)

    def _log_record(self, trial, result: dict[str, Any]) -> dict[str, Any]:
        epoch = float(result.get("epoch", result.get("training_iteration", 0)))
        step = int(epoch)  # a screen point (0.5) is step 0: MLflow's steps are integers
        stamp = int(result.get("timestamp", 0) * 1000)
        tags = {tag: str(result[tag]) for tag in rec.PLACEMENT_TAGS if tag in result}
        if not result.get(DIVERGED):
            tags[rec.EPOCHS_TAG] = str(step)
        metrics = [[k, v, stamp, step] for k, v in numeric(result, self.objective).items()]
        if epoch != step:
            metrics.append([rec.SCREEN_EPOCH, epoch, stamp, step])
        return {
            "op": "log",
            "trial": trial.trial_id,
            "metrics": metrics,
            "tags": tags,
            "iteration": result.get("training_iteration"),
        }

    def _put_log(self, trial, record: dict[str, Any]) -> None:
        self.logged[trial.trial_id] = record["iteration"]
        self.spool.put(record)

    def _log_last_result(self, trial) -> None:
        """Log the result Tune ends ``trial`` with, unless this driver logged it: a result held for its checkpoint
        when the study stopped (a full disk, Ctrl-C) comes back with the restored trial, and the scheduler may stop
        the trial on it at once, with no new result to log it by. Logged twice, its values and timestamp are the
        same: MLflow keeps one."""
        result = trial.last_result or {}
        if not result or (self.objective and self.objective not in result):
            return  # no result yet
        if self.logged.get(trial.trial_id) != result.get("training_iteration"):
            self._put_log(trial, self._log_record(trial, result))

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info) -> None:
        if self.waiting.get(trial.trial_id):
            self._put_log(trial, self.waiting[trial.trial_id].pop(0))  # one save per checkpointed result, in order

    def on_trial_recover(self, iteration, trials, trial, **info) -> None:
        self.waiting.pop(trial.trial_id, None)  # retried from its last checkpoint: those epochs train again

    def _flush(self, trial) -> None:
        for record in self.waiting.pop(trial.trial_id, []):
            self._put_log(trial, record)
        self._log_last_result(trial)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._start(trial)
        self._flush(trial)
        result = trial.last_result or {}
        epochs = int(float(result.get("epoch", 0)))  # whole epochs: one stopped at a screen point trained none
        status = outcome_of(result, self.max_epochs)
        tags, state = {STATUS_TAG: status}, "FINISHED"
        if status == FAILED:  # diverged: the trainable's own verdict, Tune saw a normal end
            epochs, state = max(0, epochs - 1), "FAILED"  # the diverging epoch did not finish
            tags[rec.FAILURE_TAG] = str(result.get(FAILURE_REASON, "diverged"))[:5000]
        tags[rec.EPOCHS_TAG] = str(epochs)
        self.spool.put({"op": "end", "trial": trial.trial_id, "state": state, "tags": tags})

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._start(trial)
        self._flush(trial)
        tags = {STATUS_TAG: FAILED, rec.FAILURE_TAG: error_reason(trial)[:5000]}
        self.spool.put({"op": "end", "trial": trial.trial_id, "state": "FAILED", "tags": tags})


def error_reason(trial) -> str:
    """The last line of the trial's error, or a diverged trial's reason."""
    result = getattr(trial, "last_result", None) or {}
    if result.get(DIVERGED):
        return str(result.get(FAILURE_REASON, "diverged"))
    text = ""
    if getattr(trial, "error_file", None):
        try:
            with open(trial.error_file) as f:
                text = f.read()
        except OSError:
            pass
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "unknown error"
