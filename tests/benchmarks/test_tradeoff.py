"""The default's selection rule, applied to search-quality results files."""

import json

from benchmarks.tradeoff import table


def write(path, truth, hits):
    """``hits``: strategy -> (seed-epochs, within-1-pp per study)."""
    lines = [
        {"strategy": name, "truth": truth, "study": i, "seed_epochs": cost, "within_1pp": hit}
        for name, (cost, flags) in hits.items()
        for i, hit in enumerate(flags)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_rule_picks_the_cheapest_within_the_bound_else_the_best_worst(tmp_path):
    grid = (100, [True] * 8 + [False] * 2)
    a = write(
        tmp_path / "a.jsonl", "a", {"grid K=1": grid, "cheap": (30, [True] * 6 + [False] * 4), "dear": (50, grid[1])}
    )
    bloom = write(
        tmp_path / "b.jsonl",
        "bloom",
        {"grid K=1": grid, "cheap": (30, [True] * 2 + [False] * 8), "dear": (50, [True] + [False] * 9)},
    )
    out = table([a, bloom], {"bloom"}, "bloom", -0.03, 0.10)
    assert "| cheap | 30% | 0.60 (-0.20 ± 0.13, 10) | 0.20 (-0.60 ± 0.16, 10) | -0.200 |" in out
    assert out.endswith("the rule picks: dear (the cheapest whose worst difference is at least -0.03)")
    # the bloomer's bound rules the cheap one out; with a bound nobody meets, the best worst difference
    assert table([a, bloom], {"bloom"}, "bloom", 0.05, 0.10).endswith(
        "picks: dear (none meets the bound: the best worst difference)"
    )
    assert "picks nothing: none selects within 1 pp in 50% of bloom" in table(
        [a, bloom], {"bloom"}, "bloom", -0.03, 0.5
    )


def test_a_file_that_is_no_results_file_is_one_line(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"strategy": "grid K=1", "study": 0}\n')
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks.tradeoff", str(bad)], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith(f"error: {bad} line 1: no key 'truth' (expected a benchmarks.search_quality")
