"""CI's docs check: every command of the README, the guides and the benchmarks' index parses as its CLI expects
(``benchmarks.docs_commands``: parsed, not run), and the check fails where a user would."""

import subprocess
import sys

from benchmarks.docs_commands import ROOT, check, pages, words_of


def test_every_command_of_every_page_parses():
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks.docs_commands"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    failed = [line for line in r.stdout.splitlines() if ": FAILED" in line]
    assert r.returncode == 0 and failed == [], "\n".join(failed) or r.stderr[-2000:]
    checked = [line for line in r.stdout.splitlines() if line.endswith(": ok")]
    assert len(checked) >= 50, r.stdout[-2000:]  # the pages' own commands, not a parser that skipped them
    assert {p.name for p in pages()} >= {"README.md", "gpu-cluster.md", "verdict.md", "search-strategies.md"}


def test_a_wrong_flag_a_missing_argument_and_a_missing_target_fail_as_a_user_sees_them():
    assert check("python -m search.run absa --preset smoke") == "ok"
    assert "unrecognized arguments: --bogus" in check("python -m search.run absa --bogus 1")
    assert "required: --out" in check("python -m search.predict --model models:/absa-best/1 --input s.txt")
    assert "invalid choice: 'huge'" in check("MTL_DATA_DIR=d python -m search.run absa --search huge | tee log")
    assert check("make ui") == "ok" and check("make no-such-target").startswith("FAILED")
    assert check("ray job submit --address A -- python -m search.run absa --bogus") != "ok"
    assert check("ray up cluster.yaml -y").startswith("not checked: ray")


def test_a_command_is_its_first_words_without_the_shells_parts():
    assert words_of("A=1 B=2 python -m x --a $(cat f) \\\n  --b 2>&1 | tee log  # why") == [
        "python",
        "-m",
        "x",
        "--a",
        "VALUE",
        "--b",
    ]
