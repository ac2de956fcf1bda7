import json
import logging
import os
import sys

import pytest

from trainables.cli import MaskCredentials, fail, mask_credentials, run_main, write_json
from trainables.config import ConfigError
from trainables.loop import DivergedError
from trainables.tasks import DataError


def test_passwords_in_urls_are_masked_wherever_they_appear():
    assert mask_credentials("--optuna-storage postgresql://me:s3cr%40t@db:5432/optuna: refused") == (
        "--optuna-storage postgresql://me:***@db:5432/optuna: refused"
    )
    assert mask_credentials("http://u:p@h:5000 and s3://bucket/x and sqlite:////tmp/a.db") == (
        "http://u:***@h:5000 and s3://bucket/x and sqlite:////tmp/a.db"
    )
    assert mask_credentials("http://host:5000/path") == "http://host:5000/path"  # a port is no password


def test_logs_and_errors_never_print_the_password(capsys, caplog):
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "storage %s down", ("mysql://a:pw@h/db",), None)
    assert MaskCredentials().filter(record) and record.getMessage() == "storage mysql://a:***@h/db down"
    with pytest.raises(SystemExit) as exit:
        fail("--tracking-uri https://bob:hunter2@mlflow.example: unreachable")
    assert exit.value.code == 2 and "hunter2" not in capsys.readouterr().err


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def test_written_files_follow_the_umask(tmp_path, data_dir, umask):
    from trainables.data import export
    from trainables.tasks import get_task

    write_json(tmp_path / "m.json", {})
    export(get_task("sst2", data_dir), "test", tmp_path / "t.csv")
    assert (
        oct((tmp_path / "m.json").stat().st_mode & 0o777) == oct((tmp_path / "t.csv").stat().st_mode & 0o777) == "0o644"
    )
    umask(0o027)
    write_json(tmp_path / "n.json", {})
    assert (tmp_path / "n.json").stat().st_mode & 0o777 == 0o640
    os.chmod(tmp_path / "m.json", 0o664)  # an existing file keeps its mode, as open() would
    write_json(tmp_path / "m.json", {"a": 1})
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == 0o664 and not list(tmp_path.glob(".*.tmp"))


def train_cli(monkeypatch, capsys, epochs, *args: str) -> tuple[int, str]:
    """``python -m trainables.train`` in this process, its training replaced by ``epochs`` (a generator)."""
    from trainables import train

    monkeypatch.setattr(train, "train", lambda config: epochs())
    monkeypatch.setattr(sys, "argv", ["trainables.train", "--tasks", "sst2", "--epochs", "3", *args])
    with pytest.raises(SystemExit) as exit_:
        run_main(train.main, (ConfigError, DataError, DivergedError, OSError))
    return exit_.value.code, capsys.readouterr().err


def test_metrics_out_is_checked_before_training(monkeypatch, capsys):
    def never():
        raise AssertionError("trained although --metrics-out cannot be written")
        yield

    code, err = train_cli(monkeypatch, capsys, never, "--metrics-out", "/proc/m.json")
    assert code == 2 and err == "error: --metrics-out /proc/m.json: cannot write in /proc (No such file or directory)\n"


def test_epochs_before_a_divergence_are_written(monkeypatch, capsys, tmp_path):
    def diverges():
        yield {"epoch": 1.0, "train/loss": 0.7, "sst2/dev/acc": 0.6}
        raise DivergedError("loss became nan at epoch 2 step 3 on task sst2")

    code, err = train_cli(monkeypatch, capsys, diverges, "--metrics-out", str(tmp_path / "m.json"))
    assert code == 2 and err.count("\n") == 1 and "loss became nan at epoch 2" in err
    written = json.loads((tmp_path / "m.json").read_text())
    assert [e["epoch"] for e in written["epochs"]] == [1.0] and written["diverged"].startswith("loss became nan")
