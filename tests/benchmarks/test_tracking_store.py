"""benchmarks.tracking_store: the records it sends are a study's (start, one log per result, end), a replayed
spool keeps its records and makes each copy's trials its own, and a measure sends them all into a real store."""

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.tracking_store import measure, parse, replayed, synthetic_study


def test_a_synthetic_study_is_each_trials_start_results_and_end():
    records = synthetic_study(trials=2, results=3, metrics=10)
    assert [r["op"] for r in records] == ["start", "log", "log", "log", "end"] * 2
    assert {len(r["metrics"]) for r in records if r["op"] == "log"} == {10}
    assert len({r["trial"] for r in records}) == 2


def test_a_replayed_spool_drops_the_parents_records_and_makes_each_copys_trials_its_own(tmp_path):
    spool = tmp_path / "mlflow-spool.jsonl"
    lines = [
        {"op": "start", "trial": None, "clear_tags": []},
        {"op": "start", "trial": "abc", "name": "t00", "tags": {"trial_id": "abc"}},
        {"op": "log", "trial": "abc", "metrics": [["m", 1.0, 1, 1]], "tags": {}},
    ]
    spool.write_text("".join(json.dumps(line) + "\n" for line in lines))
    copy = replayed(spool, 2)
    assert [r["trial"] for r in copy] == ["abc-2", "abc-2"] and copy[0]["tags"]["trial_id"] == "abc-2"


def test_a_measure_sends_every_record_into_the_store(tmp_path):
    from search.tracking.runs import client

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    figures = measure(uri, [synthetic_study(2, 2, 5), synthetic_study(2, 2, 5)])
    assert figures["records"] == 16 and figures["metric_values"] == 40 and figures["records_per_s"] > 0
    runs = client(uri).search_runs([client(uri).get_experiment_by_name("tracking-store").experiment_id])
    trials = [r for r in runs if r.data.tags.get("trial_id")]
    assert len(trials) == 4 and all(r.info.status == "FINISHED" and len(r.data.metrics) == 5 for r in trials)


def test_the_arguments_are_checked(capsys):
    with pytest.raises(SystemExit):
        parse(["--senders", "0"])
    assert "1 or more" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(["--spool", "/nonexistent/mlflow-spool.jsonl"])
    assert "no such file" in capsys.readouterr().err


@pytest.mark.extended
@pytest.mark.skipif(
    not shutil.which("pg_ctl") and not list(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")),
    reason="no PostgreSQL server binaries",
)
def test_a_local_postgres_takes_a_studys_records_through_an_mlflow_server(tmp_path):
    pytest.importorskip("psycopg", reason="pip install -e '.[postgres]'")
    from benchmarks.tracking_store import store

    with store("postgres", tmp_path, workers=1) as uri:
        figures = measure(uri, [synthetic_study(2, 2, 5)])
    assert figures["records"] == 8


def test_a_failed_postgres_setup_step_is_one_line_naming_it():
    from benchmarks.postgres import step

    with pytest.raises(SystemExit, match=r"^error: local PostgreSQL: initdb failed \(exit 3\): no room$"):
        step("initdb", ["sh", "-c", "echo starting; echo no room >&2; exit 3"])
