"""``python -m search.serve --model models:/absa-best/1 --port 5001``: the registered model over REST.

MLflow's own scoring server (``mlflow.pyfunc.scoring_server``: ``/invocations``, ``/ping``,
``/health``, ``/version``, the same request formats as ``mlflow models serve``), run by uvicorn
inside this process: ``mlflow models serve`` starts ``uvicorn`` from ``PATH`` instead, which
fails (``exec: uvicorn: not found``) where the environment is not activated. Each answer of
``/invocations`` carries, beside ``predictions``, ``"model"``: what the model is (its card, with
a ``caveat`` where it does not beat a constant predictor; MLflow's own response format allows
keys beside ``predictions``). Listens on 127.0.0.1 unless ``--host`` says otherwise.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from trainables.cli import ArgumentParser, run_main, setup_logging
from trainables.predict import BAD_INPUT, ModelError

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None):
    p = ArgumentParser(prog="python -m search.serve", description=__doc__)
    p.add_argument("--model", required=True, help="an MLflow model URI: models:/absa-best/1, runs:/ID/model")
    p.add_argument("--host", default="127.0.0.1", help="the interface to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=5001)
    p.add_argument("--tracking-uri", help="MLflow tracking URI for models:/ URIs (default: $MLFLOW_TRACKING_URI)")
    return p.parse_args(argv)


def load(model: str, tracking_uri: str | None = None):
    """The pyfunc model at ``model`` (one ``error:`` line where it cannot be loaded)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_registry_uri(tracking_uri)
    try:
        return mlflow.pyfunc.load_model(model)
    except (MlflowException, OSError) as exc:
        raise ModelError(
            f"--model {model}: {str(exc).splitlines()[0]} (tracking URI {mlflow.get_tracking_uri()})"
        ) from None


def about_of(pyfunc_model) -> dict[str, Any]:
    """The model's card (``about.json``); ``{}`` for a model logged without one, or not by this project."""
    try:
        inner = pyfunc_model.unwrap_python_model()
    except Exception:  # a flavor other than a python_model: nothing of ours to read
        return {}
    return dict(getattr(inner, "about", {}) or {})


def build_app(pyfunc_model):
    """MLflow's scoring app around ``pyfunc_model``, whose ``/invocations`` answers also say what the model is."""
    from fastapi import Request
    from fastapi.responses import Response
    from mlflow.pyfunc import scoring_server

    app = scoring_server.init(pyfunc_model)
    about = about_of(pyfunc_model)

    @app.middleware("http")
    async def describe_model(request: Request, call_next):
        response = await call_next(request)
        if request.url.path != "/invocations" or response.status_code != 200 or not about:
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])
        answer = json.loads(body)
        if isinstance(answer, dict) and "predictions" in answer:
            answer["model"] = about
            body = json.dumps(answer).encode()
        return Response(body, status_code=200, media_type="application/json")

    return app


def main(argv: Sequence[str] | None = None) -> int:
    import uvicorn

    args = parse_args(argv)
    setup_logging()
    app = build_app(load(args.model, args.tracking_uri))
    logger.info("serving %s on http://%s:%d/invocations", args.model, args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    run_main(main, BAD_INPUT)
