"""The last study's stores, recorded for the tools a user opens beside the report (make dashboard, make ui)."""

import subprocess
import sys

from search.infra import last_study


def test_the_last_record_wins_and_a_store_with_a_password_is_not_written(tmp_path, monkeypatch):
    monkeypatch.setenv("MTL_CACHE_DIR", str(tmp_path))
    assert last_study.last("optuna") is None
    last_study.record("absa", "absa-smoke-1", "sqlite:////s/mlflow.db", "sqlite:////s/optuna.db")
    last_study.record("absa", "absa-smoke-2", "http://u:s3cret@host:5000", "sqlite:////t/optuna.db")
    assert last_study.last("optuna") == "sqlite:////t/optuna.db"
    assert last_study.last("mlflow") is None  # the password stays off the disk
    assert "s3cret" not in last_study.record_path().read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["last_study.json"]  # nothing half-written left


def test_the_command_prints_the_store_or_one_line_why_not(tmp_path):
    env = {"MTL_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "search.infra.last_study", "optuna"]
    r = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.strip().startswith("error: no optuna store on record in "), r.stderr
    (tmp_path / "last_study.json").write_text('{"optuna_storage": "sqlite:////s/optuna.db"}\n')
    r = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "sqlite:////s/optuna.db\n", r.stderr
