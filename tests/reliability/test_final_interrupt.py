"""Ctrl-C during the final comparison, end to end: one line that says how to continue, exit 130, no run left
RUNNING (the final runs open at the interrupt KILLED, tagged with the command), and that command finishes it.
Simulated trials (a truth that sleeps), so a final run lasts long enough to be interrupted."""

import shlex
import signal
import time
from pathlib import Path

import pytest
from faults import RUN, Driver, runs

from search.simulation.truth import resolve_truth

# about a minute: the search, a final run cut, the command that continues it
pytestmark = [pytest.mark.slow, pytest.mark.reliability, pytest.mark.extended]


def test_ctrl_c_during_finalize_ends_in_one_line_and_its_command_finishes_it(tmp_path):
    text = Path(resolve_truth("null")).read_text().replace("scale = 0.0 ", "scale = 0.02 ")  # 1.2 s a seed-epoch
    assert "scale = 0.02" in text
    (tmp_path / "slow.toml").write_text(text.replace('name = "null"', 'name = "null-slow"'))
    db = tmp_path / "mlflow.db"
    stores = ["--tracking-uri", f"sqlite:///{db}", "--optuna-storage", f"sqlite:///{tmp_path}/optuna.db"]
    stores += ["--storage", str(tmp_path / "ray")]
    args = [*RUN, "absa", "--simulate", str(tmp_path / "slow.toml"), "--search", "tpe", "--trials", "6"]
    driver = Driver([*args, "--max-concurrent", "6", "--name", "fin", "--no-report", *stores], tmp_path)
    driver.wait_for("finalize trains .* baseline", timeout=400)
    deadline = time.time() + 120
    while not any(r["tags"].get("kind") == "final" and r["status"] == "RUNNING" for r in runs(db)):
        assert time.time() < deadline and driver.proc.poll() is None, driver.output[-3000:]
        time.sleep(0.5)  # until a final run is under way in MLflow
    driver.proc.send_signal(signal.SIGINT)
    assert driver.finish() == 130, driver.output[-3000:]
    (line,) = driver.errors()
    assert line.startswith("error: finalize interrupted with ") and "the search itself is complete" in line, line
    everything = runs(db)
    assert [r["name"] for r in everything if r["status"] == "RUNNING"] == [], everything
    command = line.partition("continue with ")[2]
    killed = [r for r in everything if r["tags"].get("kind") == "final" and r["status"] == "KILLED"]
    assert killed and all(r["tags"]["resume"] == command for r in killed), everything
    assert command.startswith("python -m search.finalize absa --name fin --tracking-uri ")
    again = Driver([*shlex.split(command)[1:]], tmp_path)
    assert again.finish() == 0, again.output[-3000:]
    finals = [r for r in runs(db) if r["tags"].get("kind") == "final"]
    # every arm trained again to its end (2 or 3: the winner, the opponent, the winner's ablation), none RUNNING
    assert sum(r["status"] == "FINISHED" for r in finals) >= 2, finals
    assert sorted({r["status"] for r in finals}) == ["FINISHED", "KILLED"], finals
