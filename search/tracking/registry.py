"""A study's winning config as an MLflow model: logged under a run, registered as ``{study}-best``.

The pyfunc model wraps :class:`trainables.predict.Predictor` around the model directory
``save_model_dir`` writes (the pyfunc artifact ``predictor``). Its input is a DataFrame with
a ``text`` column and an optional ``task`` column (empty: the primary task); its output is a
list with one dict per row, the same dicts ``python -m search.predict`` writes as JSON
lines, so ``mlflow models serve`` answers ``{"predictions": [{...}, ...]}`` (``python -m
search.serve`` adds ``"model"``: what the model is, :class:`~search.tracking.records.ModelCard`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd

from search.tracking.records import ModelCard
from spaces.canonical import config_label, task_label
from trainables.config import TrainConfig
from trainables.tasks import declared_name

logger = logging.getLogger(__name__)


ARTIFACT = "predictor"  # the pyfunc artifact holding the model directory


PACKAGES = Path(__file__).resolve().parents[2]  # the checkout: search/ and trainables/ beside each other


class WinnerModel(mlflow.pyfunc.PythonModel):
    """pyfunc: DataFrame ``text`` [, ``task``] -> one prediction dict per row, in row order."""

    def load_context(self, context) -> None:
        from trainables.predict import Predictor

        self.predictor = Predictor.load(context.artifacts[ARTIFACT])
        if self.predictor.caveat:  # once, where the model is loaded (a server's console, a notebook)
            logger.warning("%s", self.predictor.caveat)

    @property
    def about(self) -> dict[str, Any]:
        """What the model is (the model directory's ``about.json``; ``{}`` for a model logged without it)."""
        return self.predictor.about

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> list[dict]:
        frame = pd.DataFrame(model_input)
        if "text" not in frame.columns:
            raise ValueError(f"input columns {list(frame.columns)}: expected a 'text' column (and optionally 'task')")
        texts = [str(t) for t in frame["text"]]
        tasks = [t if isinstance(t, str) and t else None for t in frame.get("task", [None] * len(frame))]
        out: list[dict] = [{}] * len(texts)
        for task in dict.fromkeys(tasks):  # one batched call per task, rows put back in order
            index = [i for i, t in enumerate(tasks) if t == task]
            for i, record in zip(index, self.predictor.predict([texts[i] for i in index], task)):
                out[i] = record
        return out


def version_tags(
    config: TrainConfig, metrics: dict[str, float], tags: dict[str, str], card: ModelCard | None = None
) -> dict[str, str]:
    """Registered-version tags: the label, every config field (``config.*``), metrics, the seed, the
    card (``card.*``: preset, dev score, majority rate, verdict), ``tags``."""
    out = {
        "label": config_label(config),
        "seed": str(config.seed),
        "tasks": ",".join(map(task_label, config.tasks)),
        "primary": declared_name(config.primary),
        "schema": config.sampling.schema,
    }
    out.update({f"config.{k}": str(v) for k, v in config.to_dict().items() if k not in ("data_dir", "device")})
    out.update({f"metric.{k}": f"{v:.6g}" for k, v in metrics.items()})
    out.update(card.to_tags() if card else {})
    out.update(tags)
    return out


def describe_version(config: TrainConfig, metrics: dict[str, float], run_id: str, card: ModelCard | None = None) -> str:
    lines = [
        f"Winning config: {config_label(config)} (seed {config.seed}, encoder {config.encoder.model}).",
        f"Trained in run {run_id}.",
    ]
    if card:
        lines += ["", card.summary() + "."]
        lines += ["", f"**Warning: {card.caveat()}.**"] if card.caveat() else []
    lines += [
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v:.4f} |" for k, v in sorted(metrics.items())]
    return "\n".join(lines)


def log_winner(
    tracking_uri: str,
    run_id: str,
    study: str,
    checkpoint: Path,
    config: TrainConfig,
    tokenizer,
    metrics: dict[str, float],
    tags: dict[str, str],
    card: ModelCard | None = None,
) -> str:
    """Log the winner as pyfunc model ``model`` of run ``run_id``, register a new version of
    ``{study}-best`` with the config, metrics, seed and ``card`` on it (the card also in the model
    directory, ``about.json``); return ``models:/{study}-best/{version}``."""
    from mlflow import MlflowClient

    from trainables.predict import save_model_dir

    name = f"{study}-best"
    with tempfile.TemporaryDirectory() as tmp, fluent_uri(tracking_uri):
        model_dir = save_model_dir(Path(tmp) / ARTIFACT, checkpoint, config, tokenizer, card.about() if card else None)
        info = log_model(run_id, model_dir)
        client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
        if not client.search_registered_models(filter_string=f"name = '{name}'"):
            client.create_registered_model(name)
        # tags and description at creation: one request, so no reader ever sees a version without them
        # (inside fluent_uri: the registry resolves the logged model's models:/m-... source there)
        created = client.create_model_version(
            name,
            info.model_uri,
            run_id=run_id,
            tags=version_tags(config, metrics, tags, card),
            description=describe_version(config, metrics, run_id, card),
            model_id=info.model_id,
        )
        version = str(created.version)
        wait_until_ready(client, name, version)
    logger.info("registered %s version %s from run %s", name, version, run_id)
    return f"models:/{name}/{version}"


def log_model(run_id: str, model_dir: Path):
    """``model_dir`` as the pyfunc model ``model`` of run ``run_id`` (MLflow's fluent API: call inside
    :func:`fluent_uri`); returns MLflow's ``ModelInfo``."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, Schema

    signature = ModelSignature(inputs=Schema([ColSpec("string", "text"), ColSpec("string", "task", required=False)]))
    active = mlflow.active_run()
    # resume the run unless the caller has it open already
    with (
        mlflow.start_run(run_id=run_id) if active is None or active.info.run_id != run_id else contextlib.nullcontext(),
        warnings.catch_warnings(),
    ):
        # the signature says what goes in; an input example would load the model once more to check it
        warnings.filterwarnings("ignore", message=".*input example was not provided.*")
        return mlflow.pyfunc.log_model(
            name="model",
            python_model=WinnerModel(),
            artifacts={ARTIFACT: str(model_dir)},
            code_paths=[str(PACKAGES / "trainables"), str(PACKAGES / "search")],
            signature=signature,
            pip_requirements=_requirements(),
        )


@contextlib.contextmanager
def fluent_uri(tracking_uri: str):
    """MLflow's fluent API (``pyfunc.log_model``) at ``tracking_uri`` for the block only: setting it
    changes process-wide state (and ``MLFLOW_TRACKING_URI``), which a caller's later clients would read."""
    saved_env = os.environ.get("MLFLOW_TRACKING_URI")
    saved = mlflow.get_tracking_uri() if saved_env is None else saved_env
    mlflow.set_tracking_uri(tracking_uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(saved)
        if saved_env is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = saved_env


def wait_until_ready(client, name: str, version: str, seconds: float = 120) -> None:
    """A server may register a version asynchronously (status PENDING_REGISTRATION)."""
    import time

    deadline = time.monotonic() + seconds
    while (status := client.get_model_version(name, version).status) == "PENDING_REGISTRATION":
        if time.monotonic() > deadline:
            raise RuntimeError(f"model {name} version {version} still pending registration after {seconds:.0f}s")
        time.sleep(0.5)
    if status != "READY":
        raise RuntimeError(f"model {name} version {version}: registration ended {status}")


def _requirements() -> list[str]:
    # pinned from this environment: inferring them would load the model in a subprocess
    from importlib.metadata import version

    return [f"{p}=={version(p)}" for p in ("mlflow", "torch", "transformers", "numpy", "pandas")]


def fetch_model(model: str, tracking_uri: str | None = None) -> Path:
    """An MLflow model URI (``models:/absa-best/1``, ``runs:/ID/model``) downloaded to a local model
    directory for :mod:`trainables.predict` (the pyfunc's artifacts searched for it)."""
    from mlflow.exceptions import MlflowException

    from trainables.predict import CONFIG_FILE, ModelError

    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_registry_uri(tracking_uri)
    try:
        root = Path(mlflow.artifacts.download_artifacts(artifact_uri=model))
    except MlflowException as exc:
        raise ModelError(
            f"--model {model}: {str(exc).splitlines()[0]} (tracking URI {mlflow.get_tracking_uri()})"
        ) from None
    found = (
        [root]
        if (root / CONFIG_FILE).is_file()
        else [p.parent for p in sorted(root.glob(f"artifacts/*/{CONFIG_FILE}"))]
    )
    if len(found) != 1:
        raise ModelError(
            f"--model {model}: no model directory in it (expected {CONFIG_FILE} at its root or under artifacts/)"
        )
    return found[0]
