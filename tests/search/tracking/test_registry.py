"""The winner as an MLflow model: log_winner -> registry -> predict CLI and ``search.serve`` agree, and
say once what the model is."""

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

from search.tracking.records import ModelCard
from search.tracking.registry import log_winner
from trainables.model import load_tokenizer

ROOT = Path(__file__).resolve().parents[3]
SENTENCES = ["The bread is top notch as well.", "Service was slow but the food was great."]
# a smoke model's shape: dev acc_4way over three final seeds inside the noise of the majority rate
DEMO = ModelCard(
    study="absa",
    preset="smoke",
    metric="acc_4way",
    dev_mean=0.5843,
    dev_std=0.0081,
    seeds=(3, 4, 5),
    majority=0.5831,
    low=-0.0190,
    high=0.0214,
    above_majority=False,
    verdict="test acc_4way, multitask winner against single-task opponent: no significant difference",
)


def test_a_card_round_trips_through_tags_and_says_when_not_to_use_the_model():
    assert ModelCard.from_tags(DEMO.to_tags()) == DEMO
    assert DEMO.to_tags()["card.preset"] == "smoke" and DEMO.to_tags()["card.above_majority"] == "false"
    assert "majority rate 0.5831" in DEMO.summary() and "no significant difference" in DEMO.summary()
    assert "within seed noise of the majority rate 0.5831" in DEMO.caveat()
    two_seeds = ModelCard(**{**DEMO.__dict__, "seeds": (1, 2), "low": 0.0286, "high": 0.0644})  # above, unproven
    assert "too few seeds (2) to tell it from the majority rate" in two_seeds.caveat()
    usable = ModelCard(**{**DEMO.__dict__, "dev_mean": 0.70, "low": 0.1, "high": 0.13, "above_majority": True})
    assert usable.caveat() is None and usable.about()["caveat"] is None
    unknown = ModelCard(**{**DEMO.__dict__, "majority": float("nan")})  # no floor to compare with: no claim
    assert unknown.caveat() is None and unknown.about()["majority"] is None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"search.serve exited with {server.returncode}: {server.stdout.read()[-2000:]}")
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
    model_uri = log_winner(uri, run_id, "absa", checkpoint, config, tokenizer, metrics, {"canonical_key": "k #1"}, DEMO)
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
    assert ModelCard.from_tags(version.tags) == DEMO
    assert DEMO.summary() in version.description and DEMO.caveat() in version.description
    assert log_winner(uri, run_id, "absa", checkpoint, config, tokenizer, metrics, {}) == "models:/absa-best/2"

    # the environment not activated: its bin (uvicorn, mlflow) off PATH
    bin_dir = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != bin_dir)
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
    assert r.stderr.count(DEMO.caveat()) == 1, r.stderr[-2000:]  # said once, not per line
    cli = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [c["input"] for c in cli] == SENTENCES and all(len(c["aspects"]) == 5 for c in cli)

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "search.serve", "--model", model_uri, "--port", str(port)],
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
            answer = json.loads(response.read())
        served = answer["predictions"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    assert answer["model"] == json.loads(json.dumps(DEMO.about()))  # once per answer, beside the predictions
    assert all("caveat" not in rest for rest in served)
    assert len(served) == len(cli)
    for rest, line in zip(served, cli):
        assert (rest["input"], rest["task"]) == (line["input"], line["task"])
        for aspect, value in line["aspects"].items():
            assert rest["aspects"][aspect]["polarity"] == value["polarity"]
            assert rest["aspects"][aspect]["probabilities"] == pytest.approx(value["probabilities"], abs=1e-6)
