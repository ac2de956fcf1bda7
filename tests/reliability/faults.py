"""Helpers of the fault-injection tests: a study's driver in the background, and what a study
left behind (MLflow runs and metrics read from the tracking store's SQLite file, Optuna trials,
the MLflow spool)."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
from conftest import study_env
from optuna.trial import TrialState

from search.tracking.sink import SPOOL_FILE
from search.tracking.spool import records

RUN = ["-m", "search.run"]
EPOCH_LINE = re.compile(r"seed \d+: epoch (\d+) step \d+/\d+")


def study_args(tmp: Path, model: Path, tracking_uri: str, name: str, *extra: str) -> list[str]:
    """``python -m search.run``'s arguments for a tiny study: one seed, train/loss as the objective
    (every epoch scores), no finalize or report."""
    return [
        "absa",
        "--preset",
        "smoke",
        "--model",
        str(model),
        "--seeds",
        "1",
        "--metric",
        "train/loss",
        "--mode",
        "min",
        "--tracking-uri",
        tracking_uri,
        "--optuna-storage",
        f"sqlite:///{tmp}/optuna.db",
        "--storage",
        str(tmp / "ray"),
        "--name",
        name,
        "--no-finalize",
        "--no-report",
        *extra,
    ]


class Driver:
    """``python ARGS`` in its own session, its output collected line by line as it comes (and
    written to ``driver-<pid>.log`` in ``cwd``, for a look after a failure)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=cwd,
            env=study_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.log = cwd / f"driver-{self.proc.pid}.log"
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with open(self.log, "w") as log:
            for line in self.proc.stdout:
                self.lines.append((time.time(), line.rstrip("\n")))
                log.write(f"{time.strftime('%H:%M:%S')} {line}")

    @property
    def output(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_for(self, pattern: str, timeout: float = 300, count: int = 1) -> float:
        """Wall time the ``count``-th line matching ``pattern`` appeared."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            hits = [t for t, line in list(self.lines) if re.search(pattern, line)]
            if len(hits) >= count:
                return hits[count - 1]
            assert self.proc.poll() is None or self._reader.is_alive(), f"driver ended early:\n{self.output[-4000:]}"
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} within {timeout}s:\n{self.output[-4000:]}")

    def wait_for_results(self, experiment: Path, count: int, timeout: float = 300) -> None:
        """Until Tune's trials under ``experiment`` have written ``count`` results in all (their
        ``result.json``, on disk as each epoch ends): the workers' log lines reach the driver through
        Ray's log relay, which lags by seconds to tens of seconds on a loaded machine."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if results_written(experiment) >= count:
                return
            assert self.proc.poll() is None, f"driver ended early:\n{self.output[-4000:]}"
            time.sleep(0.2)
        raise AssertionError(f"no {count} results under {experiment} within {timeout}s:\n{self.output[-4000:]}")

    def finish(self, timeout: float = 600) -> int:
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return self.proc.returncode

    def errors(self) -> list[str]:
        return [line for _, line in self.lines if line.startswith("error:")]


# -- what a study left behind ---------------------------------------------------------
def results_written(experiment: Path) -> int:
    """Results Tune's trials under ``experiment`` have written so far (a line of ``result.json`` each)."""
    total = 0
    for path in experiment.glob("trial_*/result.json"):
        with contextlib.suppress(OSError):
            total += sum(1 for line in path.read_text().splitlines() if line.strip())
    return total


def runs(db: Path) -> list[dict]:
    """Every run of the tracking store: name, status and tags."""
    with sqlite3.connect(db, timeout=30) as con:
        rows = con.execute("select run_uuid, name, status from runs").fetchall()
        tags: dict[str, dict[str, str]] = {}
        for run, key, value in con.execute("select run_uuid, key, value from tags"):
            tags.setdefault(run, {})[key] = value
    return [{"run_id": r, "name": n, "status": s, "tags": tags.get(r, {})} for r, n, s in rows]


def values_lost(db: Path, spool: Path) -> tuple[int, int]:
    """(metric values the study spooled, those missing from the tracking store): a value is
    there when its run, key, step, timestamp and value match."""
    everything = runs(db)
    parent = {r["tags"].get("tune_experiment"): r["run_id"] for r in everything if r["tags"].get("kind") == "study"}
    by_trial = {(r["tags"].get("mlflow.parentRunId"), r["tags"].get("trial_id")): r["run_id"] for r in everything}
    with sqlite3.connect(db, timeout=30) as con:
        stored = {
            (run, key, step, stamp): value
            for run, key, step, stamp, value in con.execute("select run_uuid, key, step, timestamp, value from metrics")
        }
    parent_id = parent[spool.parent.name]
    spooled = [(r["trial"], m) for r in records(spool) if r["op"] == "log" for m in r.get("metrics", [])]
    missing = 0
    for trial, (key, value, stamp, step) in spooled:
        run = parent_id if trial is None else by_trial.get((parent_id, trial))
        found = stored.get((run, key, step, stamp))
        missing += found is None or abs(found - value) > 1e-9 * max(1.0, abs(value))
    return len(spooled), missing


def steps_logged(db: Path, run_id: str, key: str = "train/loss/mean") -> list[tuple[int, int]]:
    """(step, timestamp in ms) of each value of ``key`` in the run, by step."""
    with sqlite3.connect(db, timeout=30) as con:
        return sorted(con.execute("select step, timestamp from metrics where run_uuid = ? and key = ?", (run_id, key)))


def optuna_states(tmp: Path, name: str) -> list[TrialState]:
    return [t.state for t in optuna.load_study(study_name=name, storage=f"sqlite:///{tmp}/optuna.db").trials]


def optuna_running(tmp: Path, name: str) -> tuple[list[int], dict]:
    study = optuna.load_study(study_name=name, storage=f"sqlite:///{tmp}/optuna.db")
    return [t.number for t in study.trials if t.state == TrialState.RUNNING], study.user_attrs.get("ended", {})


def spool_of(tmp: Path, name: str) -> Path:
    return tmp / "ray" / name / SPOOL_FILE


def figure(record_property, **counts: int) -> str:
    """The closing figure line of a fault-injection test (printed, and in pytest's summary)."""
    text = ", ".join(f"{k.replace('_', ' ')}={v}" for k, v in counts.items())
    record_property("figure", text)
    print(f"FIGURE {text}")
    return text
