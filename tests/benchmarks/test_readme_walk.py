"""The README walk reads the README's and the guides' blocks as a user would type them, and their links."""

from pathlib import Path

from benchmarks.readme_walk import PAGES, SERVERS, SKIPPED, anchor, blocks, broken_links, commands

ROOT = Path(__file__).resolve().parents[2]


def test_continued_lines_stay_one_command_and_comments_go():
    lines = ["# a comment", "curl -s URL \\", "  -d '{}'", "", "make ui   # server"]
    assert commands(lines) == ["curl -s URL \\\n  -d '{}'", "make ui   # server"]


def test_python_blocks_run_as_one_script_and_output_blocks_not_at_all():
    page = "# A\n```python\nx = 1\nprint(x)\n```\n```\n1\n```\n```toml\nname = 'x'\n```\n```bash\nls\n```\n"
    assert blocks(page) == [("A", ["python - <<'PYTHON'\nx = 1\nprint(x)\nPYTHON"]), ("A", ["ls"])]


def test_every_skip_and_server_names_a_command_of_the_pages():
    walked = [c for page in PAGES for _, block in blocks((ROOT / page).read_text()) for c in block]
    # a renamed command must not be skipped or waited on unnoticed, nor a whole family by a loose prefix
    assert all(any(c.startswith(prefix) for c in walked) for prefix in [*SKIPPED, *SERVERS])
    assert "python -m search.run --list" in {c.split("#")[0].strip() for c in walked}
    skipped = [c for c in walked if any(c.startswith(p) for p in SKIPPED)]
    assert len(skipped) < len(walked) / 4, skipped


def test_links_lead_to_files_and_headings(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "[a](docs/a.md#the-flags) [b](docs/a.md#nope) [c](docs/gone.md) [v](docs/verdict.md)"
    )
    (tmp_path / "docs" / "a.md").write_text("# Guide\n## The `--flags`, all\n[up](../README.md)\n")
    assert anchor(" The `--flags`, all") == "the---flags-all"
    (tmp_path / "docs" / "a.md").write_text("# Guide\n## The flags\n[up](../README.md)\n")
    assert broken_links(tmp_path, ["README.md", "docs/a.md"]) == [
        "README.md: docs/a.md#nope (no heading #nope in docs/a.md)",
        "README.md: docs/gone.md (no such file)",
        "README.md: docs/verdict.md (no such file)",
    ]


def test_the_pages_links_hold():
    from benchmarks.docs_commands import pages

    every = [str(p.relative_to(ROOT)) for p in pages(ROOT)]  # the README, every guide, the benchmarks' index
    assert set(PAGES) <= set(every) and broken_links(ROOT, every) == []


def test_the_references_help_block_is_search_runs_own(monkeypatch):
    """docs/reference.md quotes ``python -m search.run --help`` whole: every flag, default and number in it is
    the code's (regenerate it with ``COLUMNS=112 python -m search.run --help`` when this fails)."""
    from search.run import parser

    monkeypatch.setenv("COLUMNS", "112")
    shown = parser().format_help()
    shown = shown[shown.index("positional arguments:") :]
    reference = (ROOT / "docs" / "reference.md").read_text()
    block = reference[reference.index("```\npositional arguments:") + 4 :]
    block = block[: block.index("\n```")]
    assert " ".join(block.split()) == " ".join(shown.split())


def test_the_guides_name_every_built_in_truth():
    shipped = sorted(p.stem for p in (ROOT / "search/simulation/truth/builtin").glob("*.toml"))
    for page in ("docs/simulated-studies.md", "docs/truth-files.md"):
        text = (ROOT / page).read_text()
        assert [t for t in shipped if f"`{t}`" not in text] == [], page


def test_the_benchmarks_index_is_short_and_names_modules_that_exist():
    """benchmarks/README.md is an index (the dated history is results/HISTORY.md): at most 400 lines, and every
    ``python -m benchmarks.X`` it shows is a module of the package."""
    import re

    index = (ROOT / "benchmarks" / "README.md").read_text()
    assert len(index.splitlines()) <= 400
    named = set(re.findall(r"python -m benchmarks\.(\w+)", index))
    assert named and all((ROOT / "benchmarks" / f"{name}.py").is_file() for name in named), named
    assert (ROOT / "benchmarks" / "results" / "HISTORY.md").is_file()


def test_the_reference_states_the_default_searchs_settings_as_the_code_has_them():
    """The numbers docs/reference.md gives for the default search are the strategy's own (a default changed in
    the code must change the page)."""
    from search.study.strategy import SCREEN, STRATEGIES

    own = STRATEGIES[SCREEN]
    text = " ".join((ROOT / "docs" / "reference.md").read_text().split())  # help text wraps anywhere
    for stated in (f"{own.strata} under {SCREEN}", f"{own.hedge} under {SCREEN}"):
        assert stated in text.replace("cells- halving", "cells-halving"), stated
    assert f"{own.reduction_factor} under cells- halving" in text or f"{own.reduction_factor} under {SCREEN}" in text


def test_the_readme_states_the_default_searchs_settings_as_the_code_has_them():
    """The README's sentence on the default search (a quarter, the strata, the hedge) is the strategy's own."""
    from search.study.strategy import SCREEN, STRATEGIES

    own = STRATEGIES[SCREEN]
    text = " ".join((ROOT / "README.md").read_text().split())
    share = {2: "half", 3: "third", 4: "quarter"}[int(own.reduction_factor)]
    for stated in (f"keeps a {share}", f"{own.strata} strata of exposure", f"and {own.hedge} cells drawn"):
        assert stated in text, stated
