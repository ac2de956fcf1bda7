"""The real-curve table's training half: a jobs file any machine with the core alone trains."""

import json
import subprocess
import sys

from tests.conftest import ROOT, tiny_config


def test_a_jobs_file_is_trained_into_the_build_log_and_a_second_call_trains_nothing(tmp_path, tiny_bert):
    from benchmarks.curve_runs import Job, read_jobs, write_jobs

    config = tiny_config(tiny_bert, epochs=1, max_train_examples=24, max_eval_examples=16)
    jobs = [Job("sst2+pos anneal c0.9", config.with_(seed=s), ("sst2", "pos")) for s in (1, 2)]
    jobs.append(Job("sst2 anneal c0.9", config.with_(seed=1), ("sst2",)))  # not of the part trained here
    path, log, points = tmp_path / "jobs.json", tmp_path / "log.jsonl", tmp_path / "points.jsonl"
    write_jobs(path, jobs, (0.5, 1.0), "semeval/dev/acc_4way")
    assert read_jobs(path) == (jobs, (0.5, 1.0), "semeval/dev/acc_4way")
    command = [sys.executable, "-m", "benchmarks.curve_runs", str(path), "--log", str(log), "--workers", "1"]
    command += ["--auxiliary", "sst2+pos", "--points-log", str(points)]
    r = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(line["seed"] for line in lines) == [1, 2] and {line["device"] for line in lines} == {"cpu"}
    assert [row["point"] for row in lines[0]["rows"]] == [0.5, 1.0] and "primary_passes" in lines[0]["rows"][0]
    assert "semeval/dev/acc_4way" in lines[0]["rows"][-1] and lines[0]["precision"] == "fp32"
    reached = [json.loads(line) for line in points.read_text().splitlines()]  # every point as it was reached
    assert sorted((r["seed"], r["point"]) for r in reached) == [(1, 0.5), (1, 1.0), (2, 0.5), (2, 1.0)]
    assert {r["cell"] for r in reached} == {"sst2+pos anneal c0.9"} and "semeval/dev/acc_4way" in reached[-1]
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "0 runs to train (2 in" in again.stdout
    assert len(log.read_text().splitlines()) == 2


def test_a_file_that_is_not_a_jobs_file_is_one_line(tmp_path):
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps({"format": "something else"}))
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks.curve_runs", str(path)], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith(f"error: jobs file {path}: format 'something else'")
