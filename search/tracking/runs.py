"""MLflow runs of a study, direct (no spool): the tracking URI checked, the parent run opened, and
the records read back (:func:`find_parent`, :func:`trial_table`) by the report, finalize and
``--resume``. What each record is called: :mod:`search.tracking.records`.
"""

from __future__ import annotations

import logging
import os
import time
import urllib.error
import urllib.request
from typing import Any

import mlflow.exceptions
from mlflow import MlflowClient
from mlflow.entities import Param

from search.infra.storage import beside_store
from search.tracking import records as rec
from search.tracking.records import Invocation
from search.tracking.trial_record import TrialRecord
from search.tracking.view import share_trial_view, training_experiment, trial_view_url
from trainables.cli import mask_credentials
from trainables.config import ConfigError

logger = logging.getLogger(__name__)


def client(tracking_uri: str):
    return MlflowClient(tracking_uri=tracking_uri)


STARTING_SERVER_WAIT = 60.0  # seconds a server that does not answer yet gets at the start (one line says so)


def check_tracking_uri(tracking_uri: str, wait: float = STARTING_SERVER_WAIT) -> None:
    """Fail fast (before any trial) when the store cannot be reached; a tracking server gets ``wait`` seconds to
    answer, as one that is starting (its port open before its app answers, or not yet open) needs."""
    if tracking_uri.startswith(("http://", "https://")):
        wait_for_server(tracking_uri, wait)
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


def wait_for_server(tracking_uri: str, wait: float) -> None:
    """Probe ``/health`` until a server answers (the REST client would retry with back-off for minutes)."""
    masked, deadline, said = mask_credentials(tracking_uri), time.monotonic() + wait, False
    while True:
        try:
            urllib.request.urlopen(tracking_uri.rstrip("/") + "/health", timeout=5).close()
            return
        except urllib.error.HTTPError:
            return  # a server answered (behind a proxy prefix or auth, /health may be 401/404): reachable
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if time.monotonic() >= deadline:
                unreachable = f"MLflow tracking URI {masked} is unreachable after {wait:.0f} s: {reason}"
                raise ConnectionError(unreachable) from None
            if not said:
                logger.info(
                    "MLflow tracking server %s does not answer yet (%s); waiting up to %.0f s", masked, reason, wait
                )
                said = True
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))


def start_parent_run(
    tracking_uri: str, experiment: str, name: str, params: dict[str, Any], artifact_root: str | None = None
) -> str:
    c = client(tracking_uri)
    artifact_root = artifact_root or beside_store(tracking_uri)  # never ./mlruns of the working folder
    experiment_id = training_experiment(c, experiment, artifact_root)
    say_artifacts(c.get_experiment(experiment_id).artifact_location, artifact_root, experiment)
    run = c.create_run(experiment_id, run_name=name, tags={rec.KIND_TAG: rec.STUDY_KIND, rec.TUNE_EXPERIMENT_TAG: name})
    c.log_batch(run.info.run_id, params=[Param(k, param_text(v)) for k, v in params.items()])
    if rec.OBJECTIVE in params:
        share_trial_view(c, experiment_id, name, run.info.run_id, params.get("mode", "max"))
        url = trial_view_url(experiment_id, name)
        c.set_tag(run.info.run_id, "mlflow.note.content", f"Trials side by side, best first: `{url}` in the MLflow UI.")
        server = tracking_uri if tracking_uri.startswith(("http://", "https://")) else "http://127.0.0.1:5000"
        logger.info("MLflow: trials side by side, best first, at %s/%s", server.rstrip("/"), url)
    return run.info.run_id


def say_artifacts(location: str, asked: str | None, experiment: str) -> None:
    """The start line's word on where artifacts go: an experiment keeps the root it was created with."""
    where = mask_credentials(location)
    if asked and location.rstrip("/") != asked.rstrip("/"):
        logger.info(
            "MLflow artifacts: %s, where experiment %s was created to keep them (not %s: MLflow does not move an "
            "experiment's artifacts; another --tracking-uri or study name starts a new one)",
            where,
            experiment,
            mask_credentials(asked),
        )
    else:
        logger.info("MLflow artifacts: %s", where)


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
    query = f"tags.{rec.KIND_TAG} = '{rec.STUDY_KIND}'" + (
        f" and tags.{rec.TUNE_EXPERIMENT_TAG} = '{run_name}'" if run_name else ""
    )
    runs = client.search_runs(
        [experiment.experiment_id], filter_string=query, order_by=["attributes.start_time DESC"], max_results=1
    )
    if not runs:
        raise ConfigError(f"no study run {run_name or ''} in MLflow experiment {study!r}")
    return experiment, runs[0]


def trial_table(client, experiment_id: str, parent, kind: str = rec.TRIAL_KIND) -> tuple[TrialRecord, ...]:
    """One record per trial run of ``parent``, in start order: its config, status, and the last epoch's
    objective and scores. ``kind``: ``trial`` (the search's) or ``final`` (the seeds ``search.finalize``
    trained)."""
    objective = Invocation.from_params(parent.data.params).objective
    children = every_run(
        client,
        experiment_id,
        f"tags.`{rec.PARENT_TAG}` = '{parent.info.run_id}' and tags.{rec.KIND_TAG} = '{kind}'",
        order_by=["attributes.start_time ASC"],
    )
    return tuple(TrialRecord.of_run(run, rec.strip_mean(objective)) for run in children)


PAGE_RUNS = 1000  # runs a search_runs page asks for (MLflow's own default page)


def every_run(client, experiment_id: str, filter_string: str, order_by: list[str] | None = None) -> list:
    """Every run of ``experiment_id`` that ``filter_string`` matches, page after page: one call's ``max_results``
    would cut a study of 10,000 trials at that count, silently."""
    runs: list = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=filter_string, order_by=order_by, max_results=PAGE_RUNS, page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs
