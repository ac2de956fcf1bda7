import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MTL_DATA_DIR", ROOT.parent / "shared" / "data")).resolve()
os.environ["MTL_DATA_DIR"] = str(DATA)
os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # tests only: local Ray without tokens


def pytest_terminal_summary(terminalreporter) -> None:
    """The closing figure lines of the fault-injection tests (``record_property("figure", ...)``)."""
    lines = [
        f"{report.nodeid}: {value}"
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if report.when == "call"
        for name, value in report.user_properties
        if name == "figure"
    ]
    if lines:
        terminalreporter.section("fault injection figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA / "semeval2014").is_dir():
        pytest.fail(f"datasets not found under MTL_DATA_DIR={DATA}")
    return DATA


@pytest.fixture(scope="session", autouse=True)
def cache_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("token-cache")
    os.environ["MTL_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    from trainables.model import save_tiny_encoder

    return save_tiny_encoder(tmp_path_factory.mktemp("tiny-bert"), "bert")


@pytest.fixture(scope="session")
def tiny_xlnet(tmp_path_factory) -> Path:
    from trainables.model import save_tiny_encoder

    return save_tiny_encoder(tmp_path_factory.mktemp("tiny-xlnet"), "xlnet")


@pytest.fixture(scope="session")
def tiny_winner(tiny_bert, tmp_path_factory):
    """A tiny semeval + pos model trained one epoch: ``(trainer, config, checkpoint file)``."""
    from trainables.config import EncoderConfig, TrainConfig
    from trainables.loop import Trainer

    config = TrainConfig(
        tasks=("semeval", "pos"),
        primary="semeval",
        encoder=EncoderConfig(model=str(tiny_bert), max_seq_length=64),
        epochs=1,
        batch_size=8,
        lr=1e-3,
        max_train_examples=50,
        max_eval_examples=50,
        evaluate_test=False,
        seed=1,
    )
    trainer = Trainer(config)
    trainer.run_epoch()
    checkpoint = tmp_path_factory.mktemp("winner") / "checkpoint.pt"
    trainer.save(checkpoint)
    return trainer, config, checkpoint


def study_stores(tmp: Path) -> list[str]:
    """``search.run``'s flags that keep a study's MLflow, Optuna and Ray stores inside ``tmp``."""
    return ["--tracking-uri", f"sqlite:///{tmp}/mlflow.db", "--optuna-storage", f"sqlite:///{tmp}/optuna.db"] + [
        "--storage",
        str(tmp / "ray"),
    ]


def study_env() -> dict:
    """The environment of a ``search.run`` subprocess: this checkout importable, Ray's token auth
    off (tests only)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}


def tiny_config(model, **kw):
    """A three-task TrainConfig that trains the tiny encoder ``model`` in seconds (``kw`` overrides)."""
    from trainables.config import EncoderConfig, SamplingConfig, TrainConfig

    base = dict(
        tasks=("semeval", "sst2", "pos"),
        primary="semeval",
        sampling=SamplingConfig(schema="anneal"),
        encoder=EncoderConfig(model=str(model), max_seq_length=48),
        epochs=2,
        batch_size=8,
        lr=1e-3,
        max_train_examples=100,
        max_eval_examples=50,
        seed=3,
        warmup=0.0,
    )
    base.update(kw)
    return TrainConfig(**base)


def strip_timing(epochs):
    """Epoch metrics without their wall-time figures, so two runs can be compared exactly."""
    return [{k: v for k, v in e.items() if "second" not in k} for e in epochs]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    """A real ``mlflow server`` on 127.0.0.1 that a test can stop and start again: same port, same store."""

    def __init__(self, folder: Path, backend: str, *extra: str) -> None:
        self.folder, self.backend, self.extra = folder, backend, extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, wait: bool = True) -> "MlflowServer":
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                self.backend,
                *self.extra,
            ],
            cwd=self.folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if wait:
            self.wait_up()
        return self

    def wait_up(self, timeout: float = 180) -> None:
        """Until the server answers ``/health``: its port takes connections before its app answers (on a loaded
        machine, for seconds), and a study's first check would time out there."""
        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url + "/health", timeout=5).close()
                return
            except OSError:  # URLError, a refused or reset connection, a timeout
                assert self.proc.poll() is None and time.time() < deadline, "mlflow server did not start"
                time.sleep(0.5)

    def stop(self) -> float:
        """Stop the server; returns the time its port stopped taking connections (it may take
        longer to exit)."""
        closed = time.time()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            while self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                except OSError:
                    break
                time.sleep(0.1)
            closed = time.time()
            try:  # uvicorn's graceful shutdown can wait on a client's open connection for minutes
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        self.proc = None
        return closed


@contextlib.contextmanager
def mlflow_server(folder: Path, backend: str, *extra: str):
    """A real ``mlflow server`` on 127.0.0.1 for the block; yields its URL, stops it after."""
    server = MlflowServer(folder, backend, *extra)
    try:
        yield server.start().url
    finally:
        server.stop()


def readme_study_file() -> str:
    """The example study file of the study-file guide (docs/study-files.md), as it stands there."""
    text = (ROOT / "docs" / "study-files.md").read_text()
    block = re.search(r"<!-- example study file: [^\n]*-->\n```toml\n(.*?)```", text, re.S)
    assert block, "docs/study-files.md lost its example study file"
    return block.group(1)


def example_study(folder: Path, text: str | None = None) -> Path:
    """The README's example study (or ``text``) in ``folder``, beside tiny CSV files for its two tasks."""
    folder.mkdir(parents=True, exist_ok=True)
    tasks = {
        "reviews": (["negative", "positive"], ["awful food", "loved it", "never again", "great service"]),
        "topics": (["food", "service"], ["the soup", "the waiter", "our pasta", "the staff was kind"]),
    }
    for name, (labels, texts) in tasks.items():
        (folder / f"{name}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "labels": labels,
                    "train": f"{name}_train.csv",
                    "dev": f"{name}_dev.csv",
                    "test": f"{name}_test.csv",
                }
            )
        )
        for split, n in (("train", 24), ("dev", 8), ("test", 8)):
            rows = [f"{split}{i},{texts[i % 4]} {i},{labels[i % 4 in (1, 3)]}" for i in range(n)]
            (folder / f"{name}_{split}.csv").write_text("id,text_a,label\n" + "\n".join(rows) + "\n")
    path = folder / "reviews.toml"
    path.write_text(readme_study_file() if text is None else text)
    return path
