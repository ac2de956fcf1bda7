"""The winner as an MLflow model: log_winner -> registry -> predict CLI and ``mlflow models serve`` agree."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from search.tracking.registry import log_winner
from trainables.model import load_tokenizer

ROOT = Path(__file__).resolve().parents[3]
SENTENCES = ["The bread is top notch as well.", "Service was slow but the food was great."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"mlflow models serve exited with {server.returncode}: {server.stdout.read()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} not up after {seconds}s")


def test_log_winner_registers_a_model_the_cli_and_the_server_agree_on(tiny_winner, tmp_path):
    from mlflow import MlflowClient

    _, config, checkpoint = tiny_winner
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("absa", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = client.create_run(experiment).info.run_id
    metrics = {"semeval/dev/acc_4way": 0.75, "semeval/test/acc_4way": 0.7}
    tokenizer = load_tokenizer(config.encoder)
    model_uri = log_winner(uri, run_id, "absa", checkpoint, config, tokenizer, metrics, {"canonical_key": "k #1"})
    assert model_uri == "models:/absa-best/1"
    version = client.get_model_version("absa-best", "1")
    assert version.run_id == run_id
    assert (
        version.tags["seed"] == "1"
        and version.tags["tasks"] == "semeval,pos"
        and version.tags["canonical_key"] == "k #1"
    )
    assert version.tags["metric.semeval/test/acc_4way"] == "0.7" and version.tags["config.lr"] == "0.001"
    assert "semeval+pos" in version.description and "semeval/dev/acc_4way | 0.7500" in version.description
    assert log_winner(uri, run_id, "absa", checkpoint, config, tokenizer, metrics, {}) == "models:/absa-best/2"

    # the server execs `uvicorn` from PATH: the venv's bin, as in an activated environment
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": uri, "PATH": path}
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "search.predict",
            "--model",
            model_uri,
            "--input",
            str(tmp_path / "in.txt"),
            "--out",
            str(tmp_path / "p.jsonl"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    cli = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [c["input"] for c in cli] == SENTENCES and all(len(c["aspects"]) == 5 for c in cli)

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "models",
            "serve",
            "-m",
            model_uri,
            "--env-manager",
            "local",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/ping", server)
        body = json.dumps({"dataframe_split": {"columns": ["text"], "data": [[s] for s in SENTENCES]}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/invocations", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            served = json.loads(response.read())["predictions"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    assert len(served) == len(cli)
    for rest, line in zip(served, cli):
        assert (rest["input"], rest["task"]) == (line["input"], line["task"])
        for aspect, value in line["aspects"].items():
            assert rest["aspects"][aspect]["polarity"] == value["polarity"]
            assert rest["aspects"][aspect]["probabilities"] == pytest.approx(value["probabilities"], abs=1e-6)
