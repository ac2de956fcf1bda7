"""MLflow for a study: an experiment per study, a parent run per invocation, a child run per trial.

Logging happens in the Tune driver (a Tune callback), which is the one place
that knows a trial's fate (completed, pruned by ASHA, failed); workers only
report results. The callback pickles without its client, so a restored study
(``Tuner.restore``) keeps logging into the same runs.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

from ray.tune import Callback

from trainables.tune import DIVERGED, FAILURE_REASON

logger = logging.getLogger(__name__)
STATUS_TAG = "status"  # running | completed | pruned | failed
SKIP_PARAMS = {"data_dir", "device", "seed"}


def client(tracking_uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def check_tracking_uri(tracking_uri: str) -> None:
    """Fail fast (before any trial) when the store cannot be reached."""
    import mlflow.exceptions

    if tracking_uri.startswith(("http://", "https://")):
        # the REST client retries with back-off for minutes; one short probe says enough
        import urllib.error
        import urllib.request

        try:
            urllib.request.urlopen(tracking_uri.rstrip("/") + "/health", timeout=5).close()
        except urllib.error.HTTPError:
            pass  # a server answered (behind a proxy prefix or auth, /health may be 401/404): reachable
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionError(f"MLflow tracking URI {tracking_uri} is unreachable: {reason}") from None
        return
    if tracking_uri.startswith("sqlite:///"):
        # checking by opening would create the database before the study is known to be valid
        folder = os.path.dirname(os.path.abspath(tracking_uri[len("sqlite:///"):])) or "."
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise ConnectionError(f"MLflow tracking URI {tracking_uri}: folder {folder} is missing or not writable")
        return
    try:
        client(tracking_uri).search_experiments(max_results=1)
    except (mlflow.exceptions.MlflowException, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConnectionError(f"MLflow tracking URI {tracking_uri} is unreachable: {first[:200]}") from None


def start_parent_run(tracking_uri: str, experiment: str, name: str, params: dict[str, Any]) -> str:
    c = client(tracking_uri)
    found = c.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else c.create_experiment(experiment)
    run = c.create_run(experiment_id, run_name=name, tags={"kind": "study", "tune_experiment": name})
    from mlflow.entities import Param

    c.log_batch(run.info.run_id, params=[Param(k, param_text(v)) for k, v in params.items()])
    return run.info.run_id


def param_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)[:6000]


def numeric(result: dict[str, Any]) -> dict[str, float]:
    return {
        k: float(v) for k, v in result.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
        and ("/" in k or k == "epoch")  # our metrics; Tune's own bookkeeping keys stay out
    }


class MLflowTracker(Callback):
    def __init__(self, tracking_uri: str, parent_run_id: str, max_epochs: int, seeds: list[int]) -> None:
        self.tracking_uri, self.parent_run_id = tracking_uri, parent_run_id
        self.max_epochs, self.seeds = max_epochs, seeds
        self.runs: dict[str, str] = {}  # Tune trial id -> MLflow run id
        self._client = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}

    @property
    def client(self):
        if self._client is None:
            self._client = client(self.tracking_uri)
        return self._client

    def _run_id(self, trial) -> str:
        if trial.trial_id in self.runs:
            return self.runs[trial.trial_id]
        c = self.client
        parent = c.get_run(self.parent_run_id)
        # a restored study may have created this trial's run before the driver died
        found = c.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{self.parent_run_id}' and tags.trial_id = '{trial.trial_id}'",
        )
        if found:
            run_id = found[0].info.run_id
            c.set_terminated(run_id, "RUNNING")
        else:
            cfg = {**trial.config, **trial.config.get("trial", {})}
            run = c.create_run(
                parent.info.experiment_id,
                run_name=cfg.get("label", trial.trial_id),
                tags={
                    "mlflow.parentRunId": self.parent_run_id, "trial_id": trial.trial_id,
                    "canonical_key": cfg.get("key", ""), STATUS_TAG: "running", "kind": "trial",
                    "baseline": str(bool(cfg.get("baseline", False))).lower(),
                },
            )
            run_id = run.info.run_id
            params = {k: v for k, v in cfg.get("train", {}).items() if k not in SKIP_PARAMS}
            params.update({f"choice/{k}": v for k, v in cfg.get("choices", {}).items()})
            params["seeds"] = ",".join(map(str, cfg.get("seeds", self.seeds)))
            from mlflow.entities import Param

            c.log_batch(run_id, params=[Param(k, param_text(v)) for k, v in params.items()])
        self.runs[trial.trial_id] = run_id
        return run_id

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self._run_id(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        from mlflow.entities import Metric

        run_id, step = self._run_id(trial), int(result.get("epoch", result.get("training_iteration", 0)))
        stamp = int(result.get("timestamp", 0) * 1000)
        metrics = [Metric(k, v, stamp, step) for k, v in numeric(result).items()]
        for start in range(0, len(metrics), 900):  # MLflow takes at most 1000 per batch
            self.client.log_batch(run_id, metrics=metrics[start:start + 900])
        for tag in ("node_id", "node_ip", "hostname", "device", "cpu_fallback", "gpus_requested", "restored_from_epoch"):
            if tag in result:
                self.client.set_tag(run_id, tag, str(result[tag]))

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        result = trial.last_result or {}
        epochs = int(result.get("epoch", 0))
        run_id = self._run_id(trial)
        if result.get(DIVERGED):  # the trainable's own verdict; Tune saw a normal end
            status, epochs, state = "failed", max(0, epochs - 1), "FAILED"  # the diverging epoch did not finish
            self.client.set_tag(run_id, "failure_reason", str(result.get(FAILURE_REASON, "diverged"))[:5000])
        else:
            status, state = ("completed" if epochs >= self.max_epochs else "pruned"), "FINISHED"
        self.client.set_tag(run_id, STATUS_TAG, status)
        self.client.set_tag(run_id, "epochs_trained", str(epochs))
        self.client.set_terminated(run_id, state)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        run_id = self._run_id(trial)
        reason = error_reason(trial)
        self.client.set_tag(run_id, STATUS_TAG, "failed")
        self.client.set_tag(run_id, "failure_reason", reason[:5000])
        self.client.set_terminated(run_id, "FAILED")


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
