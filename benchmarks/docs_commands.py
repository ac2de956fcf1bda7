"""Every command of the README and the guides, checked as written without running it (CI's docs check).

The walk (:mod:`benchmarks.readme_walk`) runs the commands for real, which takes a study's time; this check
takes seconds, so CI runs it on every page, the cluster guide and the benchmarks' index too:

- ``python -m MODULE ARGS``: the module's own ``main`` parses ARGS and stops there (``argparse`` patched to
  stop after a successful parse): a flag that does not exist, a missing required argument or a choice the
  CLI does not offer fails, as a user would see it; nothing is trained, written or served.
- ``make TARGET``: the Makefile has the target (``make -n``: nothing runs).
- anything else (``ray``, ``aws``, ``ssh``, ``curl``, the shell's own ``export``/``mkdir``): not checked, and said
  so (:data:`NOT_CHECKED`); ``python -`` blocks are the walk's.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from benchmarks.readme_walk import blocks

ROOT = Path(__file__).resolve().parents[1]
NOT_CHECKED = ("ray", "aws", "ssh", "curl", "export", "mkdir", "printf", "pip", ".", "python", "mlflow", "cd")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "2>&1", "&", "<"}


def pages(root: Path = ROOT) -> list[Path]:
    """The README, every guide, the benchmarks' index."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "benchmarks" / "README.md"]


def page_commands(page: Path) -> Iterator[tuple[str, str]]:
    """``(section, command)`` for every command of the page's bash blocks."""
    for section, commands in blocks(page.read_text()):
        for command in commands:
            if not command.startswith("python - <<"):
                yield section, command


def words_of(command: str) -> list[str]:
    """The first command of a line, its environment assignments dropped, cut at the first shell operator."""
    command = re.sub(r"\$\([^)]*\)", "VALUE", command.replace("\\\n", " "))  # $(...): the shell's value
    words = shlex.split(command, comments=True)  # a continued line is one command
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    for i, word in enumerate(words):
        if word in SHELL_OPERATORS or word.startswith((">", "2>")):
            return words[:i]
    return words


class Parsed(Exception):
    """Raised by the patched ``parse_args`` once it has parsed: the command is as the CLI expects."""


def parse_only(module: str, args: list[str]) -> str | None:
    """None where ``python -m module args`` parses; else the CLI's own error (its last line)."""
    original = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, *a, **kw):
        original(self, *a, **kw)
        raise Parsed

    err = io.StringIO()
    argparse.ArgumentParser.parse_args = parse_and_stop  # type: ignore[method-assign]
    saved = sys.argv
    sys.argv = [f"python -m {module}", *args]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main = importlib.import_module(module).main
            main()
        return f"{module}: main() returned without parsing its arguments"
    except Parsed:
        return None
    except SystemExit as exc:
        if exc.code in (0, None):
            return None  # --help
        return " ".join((err.getvalue().strip() or str(exc.code)).split())[-300:]
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
        sys.argv = saved


def make_target(words: list[str], root: Path) -> str | None:
    """None where the Makefile has the targets (``make -n``: printed, not run)."""
    targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    r = subprocess.run(["make", "-n", *targets], cwd=root, capture_output=True, text=True, timeout=60)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["make failed"])[-1]


def remote_command(words: list[str]) -> str:
    """The project's command in ``ray job submit ... -- python -m ...`` or ``ray exec C '... && python -m ...'``."""
    if "--" in words:
        return shlex.join(words[words.index("--") + 1 :])
    quoted = [w for w in words if "python -m " in w]
    return quoted[0].split("&&")[-1].strip() if quoted else ""


def check(command: str, root: Path = ROOT) -> str:
    """``ok``, ``not checked: WHY`` or ``FAILED: the error``."""
    words = words_of(command)
    if not words:
        return "not checked: no command"
    if words[0] in ("python", "python3", ".venv/bin/python") and len(words) > 2 and words[1] == "-m":
        error = parse_only(words[2], words[3:])
    elif words[0] == "make":
        error = make_target(words, root)
    elif words[0] == "ray" and (inner := remote_command(words)):
        return check(inner, root)  # the project's command a cluster runs
    else:
        return f"not checked: {words[0]} (outside this project)"
    return "ok" if error is None else f"FAILED: {error}"


def main() -> int:
    failed = 0
    for page in pages():
        for section, command in page_commands(page):
            outcome = check(command)
            failed += outcome.startswith("FAILED")
            print(f"{page.relative_to(ROOT)} [{section}] {command[:90]}: {outcome}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
