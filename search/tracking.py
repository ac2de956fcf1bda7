"""MLflow for a study: an experiment per study, a parent run per invocation, a child run per trial.

Logging happens in the Tune driver (a Tune callback), which is the one place
that knows a trial's fate (completed, pruned by ASHA, failed); workers only
report results. The callback never calls MLflow: it appends records to the study's
spool (:mod:`search.mlflow_spool`), which a background thread sends in order, so a
tracking-server outage never stalls training; a restored study (``Tuner.restore``)
finds its runs again and logs into them. Reading the records back
(:func:`find_parent`, :func:`trial_table`) lives here too, beside the writing.

A trial's run: name ``t03 sst2+pos square``; params :class:`TrialParams`; metrics per
epoch (step = epoch) ``objective``, ``objective_std`` and every result key as ``k/mean``,
``k/std`` (two seeds or more), ``k/seed<S>`` (the primary's scores and the objective's
key); tags ``status``, ``baseline``, ``trial``, ``epochs_trained``, ``canonical_key``,
``kind``; artifact ``trial_config.json`` (the flat TrainConfig, for retraining). A run its
study ended before the trial did (Ctrl-C, a crash, the tracking server gone) is KILLED with
``status`` ``interrupted``, ``end_reason`` and, where ``--resume`` continues it, ``resume``.
"""

from __future__ import annotations

import logging
import math
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import pandas as pd
from ray.tune import Callback
from ray.tune.result import SHOULD_CHECKPOINT

from search.config import Invocation
from search.mlflow_spool import study_spool
from search.mlflow_view import share_trial_view, training_experiment, trial_view_url
from search.outcome import FAILED, outcome_of
from search.spool import Spool
from spaces.canonical import WEIGHTED
from trainables.config import ConfigError, TrainConfig
from trainables.results import DIVERGED, FAILURE_REASON

logger = logging.getLogger(__name__)
STATUS_TAG = "status"  # running | completed | pruned | failed | interrupted (KILLED with its study)
CONFIG_ARTIFACT = "trial_config.json"
END_REASON = "end_reason"  # tag of a run its study ended (KILLED, FAILED): why
RESUME_TAG = "resume"  # tag beside it: the command that continues the run, where it can be continued


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
        folder = os.path.dirname(os.path.abspath(tracking_uri[len("sqlite:///") :])) or "."
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
    experiment = training_experiment(c, experiment)
    run = c.create_run(experiment, run_name=name, tags={"kind": "study", "tune_experiment": name})
    from mlflow.entities import Param

    c.log_batch(run.info.run_id, params=[Param(k, param_text(v)) for k, v in params.items()])
    if "objective" in params:
        share_trial_view(c, experiment, name, run.info.run_id, params.get("mode", "max"))
        url = trial_view_url(experiment, name)
        c.set_tag(run.info.run_id, "mlflow.note.content", f"Trials side by side, best first: `{url}` in the MLflow UI.")
        server = tracking_uri if tracking_uri.startswith(("http://", "https://")) else "http://127.0.0.1:5000"
        logger.info("MLflow: trials side by side, best first, at %s/%s", server.rstrip("/"), url)
    return run.info.run_id


def param_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)[:6000]


def numeric(result: dict[str, Any], objective: str | None) -> dict[str, float]:
    """The metrics of one result: ours (slashed keys; Tune's bookkeeping and ``epoch``, the
    step, stay out) plus ``objective`` and ``objective_std`` named as such."""
    out = {
        k: float(v)
        for k, v in result.items()
        if "/" in k and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    }
    if objective and objective in out:
        out["objective"] = out[objective]
        std = objective[: -len("/mean")] + "/std" if objective.endswith("/mean") else None
        if std in out:
            out["objective_std"] = out[std]
    return out


def readable(value: float) -> float:
    """Four significant digits: what a table column shows (``trial_config.json`` keeps every digit)."""
    return float(f"{value:.4g}")


@dataclass(frozen=True)
class TrialParams:
    """A trial's MLflow params: only what applies and tells trials apart (the whole config is
    the ``trial_config.json`` artifact)."""

    schema: str  # "single" for one task
    aux: str  # "sst2+pos" or "none"
    lr: float
    warmup: float
    batch_size: int
    epochs: int
    model: str
    tasks: str
    seeds: str
    exponent: float | None = None  # power only
    anneal_c: float | None = None  # anneal only
    weights: str | None = None  # schemas that read the weights, with more than one task

    @classmethod
    def of(cls, config: TrainConfig, seeds: Sequence[int]) -> TrialParams:
        multitask = len(config.tasks) > 1
        schema = config.sampling.schema if multitask else "single"
        weighted = multitask and schema in WEIGHTED
        return cls(
            schema=schema,
            aux="+".join(t for t in config.tasks if t != config.primary) or "none",
            lr=readable(config.lr),
            warmup=readable(config.warmup),
            batch_size=config.batch_size,
            epochs=config.epochs,
            model=config.encoder.model,
            tasks=",".join(config.tasks),
            seeds=",".join(map(str, seeds)),
            exponent=readable(config.sampling.exponent) if schema == "power" else None,
            anneal_c=readable(config.sampling.anneal_c) if schema == "anneal" else None,
            weights=",".join(f"{t}={w:g}" for t, w in zip(config.tasks, config.task_weights())) if weighted else None,
        )

    def to_params(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> TrialParams:
        types = {"lr": float, "warmup": float, "batch_size": int, "epochs": int, "exponent": float, "anneal_c": float}
        values = {f.name: types.get(f.name, str)(params[f.name]) for f in fields(cls) if f.name in params}
        try:
            return cls(**values)
        except TypeError:
            raise ConfigError(
                f"MLflow params {sorted(params)}: not a trial's (expected {[f.name for f in fields(cls)]})"
            ) from None


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
        self._spool: Spool | None = None
        self._stopping = False

    def __getstate__(self) -> dict[str, Any]:
        # a restored driver opens (finds and reopens) its trials' runs again, through its own spool
        return {**self.__dict__, "started": set(), "waiting": {}, "_spool": None, "_stopping": False}

    @property
    def spool(self) -> Spool:
        if self._spool is None:
            self._spool = study_spool(self.spool_file, self.tracking_uri, self.parent_run_id)
        return self._spool

    def _start(self, trial) -> None:
        if trial.trial_id in self.started:
            return
        self.started.add(trial.trial_id)
        cfg = {**trial.config, **trial.config.get("trial", {})}
        tags = {
            "mlflow.parentRunId": self.parent_run_id,
            "trial_id": trial.trial_id,
            "kind": cfg.get("kind", "trial"),
            "canonical_key": cfg.get("key", ""),
            STATUS_TAG: "running",
            "epochs_trained": "0",
            "baseline": str(bool(cfg.get("baseline", False))).lower(),
        }
        if cfg.get("number") is not None:
            tags["trial"] = str(cfg["number"])
        if cfg.get("final_for"):  # seeds search.finalize trained for that trial's config
            tags["final_for"] = cfg["final_for"]
        params = TrialParams.of(TrainConfig.from_dict(cfg["train"]), cfg.get("seeds", self.seeds)).to_params()
        self.spool.put(
            {
                "op": "start",
                "trial": trial.trial_id,
                "name": cfg.get("label", trial.trial_id),
                "tags": tags,
                "params": params,
                "artifacts": {CONFIG_ARTIFACT: cfg["train"]},
                "reopen_tags": {STATUS_TAG: "running"},
                "clear_tags": [END_REASON, RESUME_TAG],
            }
        )

    def on_step_begin(self, iteration, trials, **info) -> None:
        if self.spool.expired() and not self._stopping:
            self._stopping = True
            # Tune's notices name Ctrl-C and Tuner.restore; the runner's one line says what happened and what to do
            logging.getLogger("ray.tune.tune").setLevel(logging.CRITICAL)
            # Tune's graceful stop, as on Ctrl-C: state saved, trials resumable. No public API stops a Tuner
            # resumably; tune.run handles SIGUSR1 as it does SIGINT (checked against Ray 2.60)
            signal.raise_signal(signal.SIGUSR1)

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self._start(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        self._start(trial)
        step = int(result.get("epoch", result.get("training_iteration", 0)))
        stamp = int(result.get("timestamp", 0) * 1000)
        tags = {
            tag: str(result[tag])
            for tag in (
                "node_id",
                "node_ip",
                "hostname",
                "device",
                "cpu_fallback",
                "gpus_requested",
                "restored_from_epoch",
            )
            if tag in result
        }
        if not result.get(DIVERGED):
            tags["epochs_trained"] = str(step)
        metrics = [[k, v, stamp, step] for k, v in numeric(result, self.objective).items()]
        record = {"op": "log", "trial": trial.trial_id, "metrics": metrics, "tags": tags}
        if result.get(SHOULD_CHECKPOINT):
            # logged once Tune holds its checkpoint (on_checkpoint, saved after the result): an epoch a
            # stop catches in between is trained again by --resume, and logged then, once
            self.waiting.setdefault(trial.trial_id, []).append(record)
        else:
            self.spool.put(record)

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info) -> None:
        if self.waiting.get(trial.trial_id):
            self.spool.put(self.waiting[trial.trial_id].pop(0))  # one save per checkpointed result, in order

    def on_trial_recover(self, iteration, trials, trial, **info) -> None:
        self.waiting.pop(trial.trial_id, None)  # retried from its last checkpoint: those epochs train again

    def _flush(self, trial) -> None:
        for record in self.waiting.pop(trial.trial_id, []):
            self.spool.put(record)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._start(trial)
        self._flush(trial)
        result = trial.last_result or {}
        epochs = int(result.get("epoch", 0))
        status = outcome_of(result, self.max_epochs)
        tags, state = {STATUS_TAG: status}, "FINISHED"
        if status == FAILED:  # diverged: the trainable's own verdict, Tune saw a normal end
            epochs, state = max(0, epochs - 1), "FAILED"  # the diverging epoch did not finish
            tags["failure_reason"] = str(result.get(FAILURE_REASON, "diverged"))[:5000]
        tags["epochs_trained"] = str(epochs)
        self.spool.put({"op": "end", "trial": trial.trial_id, "state": state, "tags": tags})

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._start(trial)
        self._flush(trial)
        tags = {STATUS_TAG: FAILED, "failure_reason": error_reason(trial)[:5000]}
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


# -- reading the records back ---------------------------------------------------
def find_parent(client, study: str, run_name: str | None):
    """The study's experiment and its invocation's parent run (the latest when unnamed)."""
    experiment = client.get_experiment_by_name(study)
    if experiment is None:
        raise ConfigError(
            f"no MLflow experiment {study!r} at this tracking URI: run python -m search.run {study} first"
        )
    query = "tags.kind = 'study'" + (f" and tags.tune_experiment = '{run_name}'" if run_name else "")
    runs = client.search_runs(
        [experiment.experiment_id], filter_string=query, order_by=["attributes.start_time DESC"], max_results=1
    )
    if not runs:
        raise ConfigError(f"no study run {run_name or ''} in MLflow experiment {study!r}")
    return experiment, runs[0]


SEED_KEY = re.compile(r"^(?P<name>.+)/seed(?P<seed>\d+)$")


def trial_table(client, experiment_id: str, parent, kind: str = "trial") -> pd.DataFrame:
    """One row per trial run of ``parent``: its config, status, and the last epoch's objective and
    ``{task}/{dev,test}/{metric}`` scores (mean, ``"... std"``, per-seed ``.../seed<S>``).
    ``kind``: ``trial`` (the search's) or ``final`` (the seeds ``search.finalize`` trained)."""
    objective = Invocation.from_params(parent.data.params).objective
    objective_name = objective[: -len("/mean")] if objective.endswith("/mean") else objective
    children = client.search_runs(
        [experiment_id],
        max_results=5000,
        order_by=["attributes.start_time ASC"],
        filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}' and tags.kind = '{kind}'",
    )
    return pd.DataFrame([trial_row(run, objective_name) for run in children])


def trial_row(run, objective_name: str) -> dict[str, Any]:
    t, m = run.data.tags, run.data.metrics
    p = TrialParams.from_params(run.data.params)
    row: dict[str, Any] = {
        "trial": int(t.get("trial", -1)),
        "label": run.info.run_name,
        "run_id": run.info.run_id,
        "status": t.get(STATUS_TAG, "running"),
        "canonical_key": t.get("canonical_key", ""),
        "baseline": t.get("baseline") == "true",
        "auxiliary": p.aux,
        "schema": p.schema,
        "exponent": math.nan if p.exponent is None else p.exponent,
        "anneal_c": math.nan if p.anneal_c is None else p.anneal_c,
        "lr": p.lr,
        "warmup": p.warmup,
        "batch_size": p.batch_size,
        "epochs": int(t.get("epochs_trained", 0)),
        "seeds": p.seeds,
        "node": t.get("hostname", ""),
        "device": t.get("device", ""),
        "objective": m.get("objective", math.nan),
        "objective_std": m.get("objective_std", math.nan),
        "start_time": run.info.start_time,
        "final_for": t.get("final_for", ""),
    }
    for key, value in sorted(m.items()):
        name = key[: -len("/mean")]
        if key.endswith("/mean") and ("/dev/" in key or "/test/" in key):
            row[name] = value
            row[name + " std"] = m.get(name + "/std", math.nan)
        seeded = SEED_KEY.match(key)
        if seeded and seeded["name"] == objective_name:
            row[f"objective/seed{seeded['seed']}"] = value
        if seeded and ("/dev/" in key or "/test/" in key):
            row[key] = value
    return row
