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
    args = ["--studies", "2", "--strategies", "grid", "--slots", "4,43", "--out", str(out), "--plot", str(png)]
    r = search_quality(*args, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 4 and all(FIELDS <= set(line) for line in lines)
    grid, wide = lines[0], lines[2]
    # 43 cells of 4 one-seed epochs: 11 rounds on 4 slots (the last one 3 cells), one round on 43
    assert (grid["slots"], grid["wall"], grid["slot_time"], grid["slot_use"]) == (4, 44.0, 176.0, round(172 / 176, 4))
    assert (wide["slots"], wide["wall"], wide["slot_time"], wide["slot_use"]) == (43, 4.0, 172.0, 1.0)
    assert grid["trials"] == 43 and grid["seed_epochs"] == grid["trial_epochs"] == 172  # nothing stopped
    assert abs(grid["true_best"] - 0.87) < 1e-9 and abs(grid["regret"] - (0.87 - grid["selected_true"])) < 1e-12
    assert grid["curve"][-1] == [172, round(grid["selected_true"], 6)]
    assert [x["study"] for x in lines] == [0, 1, 0, 1]
    assert "| grid K=1 grace=4 | 4 | 2 | 172 (0) | 100% | 172 | 44.0 | 176 | 0.98 |" in r.stdout
    assert "| grid K=1 grace=4 | 43 | 2 | 172 (0) | 100% | 172 | 4.0 | 172 | 1.00 |" in r.stdout
    assert png.stat().st_size > 0


def test_bad_input_is_one_line():
    for args, expected in (
        (["--studies", "0"], "error: --studies 0: expected >= 1"),
        (["--strategies", "grid,nope"], "error: --strategies 'nope': expected"),
        (["--slots", "4,0"], "error: --slots '4,0': expected slot counts >= 1"),
    ):
        r = search_quality(*args, timeout=120)
        assert r.returncode == 2 and r.stderr.strip().startswith(expected), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_any_truth_file_and_the_default_strategy_paired_against_the_grid(tmp_path):
    """``--truth FILE``, ``--strategies default,grid``: the default is search.run's --search; each line has the
    selected schema and finalize's verdict; the table pairs every strategy with the grid's studies."""
    from search.simulation.truth import resolve_truth
    from search.study.config import SearchConfig

    truth = tmp_path / "mine.toml"
    truth.write_text(open(resolve_truth("late_bloomer")).read().replace('name = "late_bloomer"', 'name = "mine"'))
    out = tmp_path / "q.jsonl"
    args = ["--studies", "2", "--truth", str(truth), "--strategies", "grid,default", "--out", str(out), "--plot", ""]
    r = search_quality(*args, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {line["truth"] for line in lines} == {"mine"} and len(lines) == 4
    default = [line for line in lines if line["family"].startswith("default")]
    assert {line["search"] for line in default} == {SearchConfig.search} and len(default) == 2
    assert all({"selected_schema", "verdict", "regret", "within_1pp", "seed_epochs"} <= set(line) for line in lines)
    assert "vs grid, paired pp ± SE" in r.stdout and "| grid K=1 grace=4 | 4 | 2 | 172 (0) | 100% |" in r.stdout


def test_the_learning_curve_summary_is_each_familys_deficit_below_its_last_epoch(tmp_path):
    from benchmarks.learning_curves import summary

    path = tmp_path / "c.jsonl"
    rows = [("single", [0.6, 0.7, 0.72]), ("single", [0.62, 0.7, 0.74]), ("anneal", [0.5, 0.6, 0.7])]
    path.write_text("".join(json.dumps({"family": f, "seed": i, "curve": c}) + "\n" for i, (f, c) in enumerate(rows)))
    table = summary(path).splitlines()
    assert table[2].startswith("| single | 2 | +12.0 ± 0.0 | +3.0 ± 1.4 | 73.0 ± 1.4 |")
    assert table[3].startswith("| anneal | 1 | +20.0 ± nan | +10.0 ± nan | 70.0 ± nan |")
