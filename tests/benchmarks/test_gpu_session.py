"""The one device script's CPU dry run: both steps pass and their files come back under --out."""

import json

import pytest

from benchmarks import gpu_session


@pytest.mark.extended
def test_the_dry_run_checks_the_gpu_path_and_runs_a_study_to_its_report(tmp_path):
    out = tmp_path / "out"
    assert gpu_session.main(["--dry-run", "--out", str(out)]) == 0
    summary = json.loads((out / "session.json").read_text())
    assert summary["device"] == "cpu" and summary["dry_run"]
    assert {s["status"] for s in summary["steps"].values()} == {"passed"}
    assert {"gpu_check.json", "study.log", "report.md", "mlflow.db"} <= {p.name for p in out.iterdir()}
    assert "verdict" in summary and "model" in summary  # finalize's tags, None where it gave no verdict


def test_the_study_shares_the_gpu_by_quarters_and_keeps_its_stores_under_work(tmp_path):
    args = gpu_session.parse_args(["--out", str(tmp_path / "o")])
    argv = gpu_session.study_argv(args)
    assert argv[:2] == ["search.run", "absa"] and argv[argv.index("--gpus-per-trial") + 1] == "0.25"
    assert all(str(args.work) in argv[argv.index(flag) + 1] for flag in ("--tracking-uri", "--storage"))
