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
from typing import Any

import pandas as pd

from search.tracking.records import STATUS_TAG, Invocation, TrialParams
from search.tracking.view import share_trial_view, training_experiment, trial_view_url
from trainables.config import ConfigError

logger = logging.getLogger(__name__)


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
