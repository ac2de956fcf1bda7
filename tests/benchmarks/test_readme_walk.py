"""The README walk reads the README's shell blocks as a user would type them."""

from pathlib import Path

from benchmarks.readme_walk import SERVERS, SKIPPED, blocks, commands

ROOT = Path(__file__).resolve().parents[2]


def test_continued_lines_stay_one_command_and_comments_go():
    lines = ["# a comment", "curl -s URL \\", "  -d '{}'", "", "make ui   # server"]
    assert commands(lines) == ["curl -s URL \\\n  -d '{}'", "make ui   # server"]


def test_every_skip_and_server_names_a_command_of_the_readme():
    walked = [c for _, block in blocks((ROOT / "README.md").read_text()) for c in block]
    # a renamed command must not be skipped or waited on unnoticed, nor a whole family by a loose prefix
    assert all(any(c.startswith(prefix) for c in walked) for prefix in [*SKIPPED, *SERVERS])
    assert "python -m search.run --list" in {c.split("#")[0].strip() for c in walked}
    skipped = [c for c in walked if any(c.startswith(p) for p in SKIPPED)]
    assert len(skipped) < len(walked) / 3, skipped
