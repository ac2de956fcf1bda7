"""``benchmarks.search_quality`` on a tiny run: the per-study fields, the table, the plot, bad input."""

import json
import subprocess
import sys

from conftest import ROOT, study_env

FIELDS = {"strategy", "family", "study", "trials", "seed_epochs", "trial_epochs", "selected", "selected_true"}
FIELDS |= {"true_best", "regret", "within_0.5pp", "within_1pp", "curve"}


def search_quality(*args: str, timeout: int) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "benchmarks.search_quality", *args]
    return subprocess.run(command, cwd=ROOT, env=study_env(), capture_output=True, text=True, timeout=timeout)


def test_a_tiny_run_writes_a_line_per_study_the_table_and_the_plot(tmp_path):
    out, png = tmp_path / "q.jsonl", tmp_path / "q.png"
    args = ["--studies", "2", "--strategies", "grid", "--out", str(out), "--plot", str(png)]
    r = search_quality(*args, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 2 and all(FIELDS <= set(line) for line in lines)
    grid = lines[0]
    assert grid["trials"] == 43 and grid["seed_epochs"] == grid["trial_epochs"] == 172  # nothing stopped
    assert abs(grid["true_best"] - 0.87) < 1e-9 and abs(grid["regret"] - (0.87 - grid["selected_true"])) < 1e-12
    assert grid["curve"][-1] == [172, round(grid["selected_true"], 6)]
    assert [x["study"] for x in lines] == [0, 1]
    assert "| grid K=1 grace=4 | 2 | 172 (0) | 100% |" in r.stdout and png.stat().st_size > 0


def test_bad_input_is_one_line():
    for args, expected in (
        (["--studies", "0"], "error: --studies 0: expected >= 1"),
        (["--strategies", "grid,nope"], "error: --strategies 'nope': expected"),
    ):
        r = search_quality(*args, timeout=120)
        assert r.returncode == 2 and r.stderr.strip().startswith(expected), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
