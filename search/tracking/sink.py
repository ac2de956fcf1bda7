"""A study's MLflow spool: where it lives, and the sink that sends its records to MLflow.

The tracker callback (:class:`search.tracking.MLflowTracker`), the runner and finalize put
records; :class:`search.tracking.spool.Spool` sends them in order from a background thread through
:class:`MlflowSink`. Records say everything the sink writes (tags, params, artifacts), so the
sink knows only how to find a trial's run: tags ``mlflow.parentRunId`` and ``trial_id``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import mlflow.exceptions
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from search.infra.storage import local_path
from search.tracking.spool import Spool, Unreachable, records
from trainables.cli import default_cache_dir, mask_credentials
from trainables.config import ConfigError

SPOOL_FILE = "mlflow-spool.jsonl"


_spools: dict[Path, Spool] = {}


def spool_path(tune_path: str) -> Path:
    """A study's MLflow spool: in its Tune experiment folder, or, for an object-store
    ``--storage`` (which takes no appends), in the local cache under the experiment's name."""
    local = local_path(tune_path)
    if local is None:
        return default_cache_dir() / "spool" / f"{tune_path.rstrip('/').rpartition('/')[2]}-{SPOOL_FILE}"
    return local / SPOOL_FILE


def study_spool(path: str | Path, tracking_uri: str, parent_run_id: str, grace_s: float | None = None) -> Spool:
    """The process's one spool of a study: the runner's, the tracker's (also as a restored Tuner
    unpickles it) and finalize's are the same object, so records keep one order."""
    path = Path(path).resolve()
    if path not in _spools:
        _spools[path] = Spool(path, MlflowSink(tracking_uri, parent_run_id))
    if grace_s is not None:
        _spools[path].grace_s = grace_s
    return _spools[path]


def open_trial_runs(path: str | Path) -> list[str]:
    """Trials whose run a spool file opened (``start``) and has not ended (``end``) since."""
    open_runs: dict[str, None] = {}
    for record in records(path):
        if record.get("trial") is None:
            continue
        if record["op"] == "start":
            open_runs[record["trial"]] = None
        elif record["op"] == "end":
            open_runs.pop(record["trial"], None)
    return list(open_runs)


class MlflowSink:
    """Sends a study's spooled records to MLflow, each safe to send twice: a trial's run is
    looked up before it is created, a metric logged again with its step and timestamp is kept
    once, params, tags, artifacts and states are written with the same values.

    Records (``trial``: Tune's trial id, None for the parent run):
    ``start``: the trial's run created (``name``, ``tags``), or found and reopened: RUNNING,
    ``reopen_tags`` set, ``clear_tags`` deleted; then ``params`` and ``artifacts`` (name ->
    JSON value). For the parent (reopened by ``--resume``) only the reopening.
    ``log``: ``metrics`` as ``[key, value, ms, step]`` and ``tags``.
    ``end``: ``tags``, then the final ``state`` (FINISHED, FAILED, KILLED).
    """

    def __init__(self, tracking_uri: str, parent_run_id: str) -> None:
        self.tracking_uri, self.parent_run_id = tracking_uri, parent_run_id
        self.runs: dict[str, str] = {}  # Tune trial id -> MLflow run id
        self._client = None
        self._experiment_id: str | None = None

    def __str__(self) -> str:
        return f"MLflow tracking server {mask_credentials(self.tracking_uri)}"

    @property
    def client(self):
        if self._client is None:
            self._client = MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    @property
    def experiment_id(self) -> str:
        if self._experiment_id is None:
            self._experiment_id = self.client.get_run(self.parent_run_id).info.experiment_id
        return self._experiment_id

    def send(self, record: dict[str, Any]) -> None:
        try:
            getattr(self, f"_{record['op']}")(record)
        except mlflow.exceptions.MlflowException as exc:
            status = exc.get_http_status_code()
            if 400 <= status < 500 and status != 429:  # refused (e.g. a param changed): sending again will not help
                raise
            raise Unreachable(short_reason(exc)) from None
        except OSError as exc:
            raise Unreachable(short_reason(exc)) from None
        except Exception as exc:
            if type(exc).__module__.startswith("sqlalchemy"):  # a locked or unreadable SQLite store
                raise Unreachable(short_reason(exc)) from None
            raise

    def _start(self, r: dict[str, Any]) -> None:
        run_id = self.parent_run_id if r["trial"] is None else self._find(r["trial"])
        if run_id is None:
            run_id = self.client.create_run(self.experiment_id, run_name=r["name"], tags=r["tags"]).info.run_id
            self.runs[r["trial"]] = run_id
        else:  # a restored study's trial or parent, or this record sent again
            self.client.update_run(run_id, status="RUNNING")
            self._tags(run_id, r.get("reopen_tags", {}))
            present = self.client.get_run(run_id).data.tags
            for tag in r.get("clear_tags", []):
                if tag in present:
                    self.client.delete_tag(run_id, tag)
        if r.get("params"):
            self.client.log_batch(run_id, params=[Param(k, v) for k, v in r["params"].items()])
        for name, value in r.get("artifacts", {}).items():
            self.client.log_dict(run_id, value, name)

    def _log(self, r: dict[str, Any]) -> None:
        run_id = self._run(r["trial"])
        metrics = [Metric(k, v, stamp, step) for k, v, stamp, step in r.get("metrics", [])]
        tags = [RunTag(k, v) for k, v in r.get("tags", {}).items()]
        for start in range(0, max(1, len(metrics)), 900):  # MLflow takes at most 1000 per batch
            self.client.log_batch(run_id, metrics=metrics[start : start + 900], tags=tags if start == 0 else [])

    def _end(self, r: dict[str, Any]) -> None:
        run_id = self._run(r["trial"])
        self._tags(run_id, r.get("tags", {}))
        self.client.set_terminated(run_id, r["state"])

    def _tags(self, run_id: str, tags: dict[str, str]) -> None:
        if tags:
            self.client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])

    def _run(self, trial: str | None) -> str:
        run_id = self.parent_run_id if trial is None else self._find(trial)
        if run_id is None:
            raise ConfigError(f"no MLflow run for Tune trial {trial} under run {self.parent_run_id}")
        return run_id

    def _find(self, trial: str) -> str | None:
        if trial not in self.runs:
            found = self.client.search_runs(
                [self.experiment_id],
                order_by=["attributes.start_time ASC"],
                filter_string=f"tags.`mlflow.parentRunId` = '{self.parent_run_id}' and tags.trial_id = '{trial}'",
            )
            if not found:
                return None
            self.runs[trial] = found[0].info.run_id
        return self.runs[trial]


def short_reason(exc: BaseException) -> str:
    """What went wrong, short: the OS's words where a connection failed (``Connection refused``)."""
    text = str(exc).strip()
    cause = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if cause:
        return cause[1].strip()
    if "timed out" in text or "Timeout" in text:
        return "timed out"
    return mask_credentials(text.splitlines()[0][:200] if text else type(exc).__name__)
