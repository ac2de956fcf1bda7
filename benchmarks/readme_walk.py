"""``python -m benchmarks.readme_walk``: the README's and the guides' commands, run as written, in order.

What a new user does after the set-up commands (``make run``, ``make test``) on a fresh clone:
every ```` ```bash ```` block of the README and of the guide pages (:data:`PAGES`, in that order),
line by line (a line ending in ``\\`` continues), and every ```` ```python ```` block as one
``python -`` script, in the checkout this is started in. The GPU cluster guide is not walked
(:data:`NOT_WALKED`: it needs AWS or machines of your own). The shell's exported state carries from
one command to the next, as in one terminal (``. .venv/bin/activate``, ``export ...``). A server
(:data:`SERVERS`) starts in the background, is waited on until its URL answers, and is stopped when
its block ends. A command that starts a study, or reads a file only its user has, is skipped with the
reason (:data:`SKIPPED`). Every relative link of every page (walked or not) must lead to a file and,
with a ``#fragment``, to one of its headings. Prints
one line per command and per broken link, and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PAGES = (
    "README.md",
    "docs/study-files.md",
    "docs/results.md",
    "docs/simulated-studies.md",
    "docs/python-api.md",
    "docs/reference.md",
)
NOT_WALKED = {"docs/gpu-cluster.md": "needs AWS or machines of your own"}
# pages the guides link to that other issues add (issues 28 and 29): a missing one is said, not failed

# command prefix -> why the walk does not run it
SKIPPED = {
    "make run": "the set-up command this walk follows (a study)",
    "make test": "the set-up command this walk follows (the test suite)",
    "python -m search.run reviews.toml": "starts a study of a file you write; make run walked one",
    "python -m search.estimate reviews.toml": "reads the CSV files of a study you write",
}

# command prefix -> the URL that answers once the server is up
SERVERS = {
    "make ui": "http://127.0.0.1:5000/",
    "make serve": "http://127.0.0.1:5001/ping",
    "make dashboard": "http://127.0.0.1:8080/",
    "python -m search.serve": "http://127.0.0.1:5001/ping",
}


@dataclass
class Step:
    section: str
    command: str
    outcome: str = ""  # ok | FAILED | skipped: why | server up
    seconds: float = 0.0
    output: str = ""


def blocks(page: str) -> list[tuple[str, list[str]]]:
    """``(section, commands)`` per bash block of ``page``; a python block is one ``python -`` command."""
    out, section, inside, lines = [], "", None, []
    for line in page.splitlines():
        if line.startswith("#") and inside is None:
            section = line.lstrip("# ").strip()
        elif line.strip() in ("```bash", "```python") and inside is None:
            inside, lines = line.strip()[3:], []
        elif line.strip() == "```" and inside is not None:
            if inside in ("bash", "python"):
                out.append((section, commands(lines) if inside == "bash" else [python_script(lines)]))
            inside = None
        elif line.startswith("```") and inside is None:
            inside = "other"  # output, TOML, ...: read, not run
        elif inside is not None:
            lines.append(line)
    return [(section, block) for section, block in out if block]


def python_script(lines: list[str]) -> str:
    """A python block as a shell command: the project's python reading it from a here-document."""
    return "python - <<'PYTHON'\n" + "\n".join(lines) + "\nPYTHON"


def commands(lines: list[str]) -> list[str]:
    """Lines joined at a trailing ``\\``; blank lines and comment lines dropped."""
    out, pending = [], ""
    for line in lines:
        pending += line + "\n" if line.endswith("\\") else line
        if not line.endswith("\\"):
            if pending.strip() and not pending.lstrip().startswith("#"):
                out.append(pending)
            pending = ""
    return out


def shell(command: str, state: Path) -> list[str]:
    """bash running ``command`` after the exported state so far, then saving it again."""
    script = f"source {state}\n{command}\nrc=$?\nexport -p > {state}\nexit $rc\n"
    return ["bash", "-c", script]


def run(step: Step, state: Path, timeout: float) -> None:
    started = time.monotonic()
    try:
        r = subprocess.run(shell(step.command, state), capture_output=True, text=True, timeout=timeout)
        step.outcome = "ok" if r.returncode == 0 else f"FAILED (exit {r.returncode})"
        step.output = (r.stdout + r.stderr)[-1500:]
    except subprocess.TimeoutExpired:
        step.outcome = f"FAILED (still running after {timeout:.0f}s)"
    step.seconds = time.monotonic() - started


def start_server(step: Step, url: str, state: Path, log: Path, timeout: float) -> subprocess.Popen:
    """The server in its own process group, its output in ``log``; waits until ``url`` answers."""
    started = time.monotonic()
    server = subprocess.Popen(
        ["bash", "-c", f"source {state}\nexec {step.command}"],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    while time.monotonic() - started < timeout and server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5):
                step.outcome = f"server up ({url})"
                break
        except OSError:
            time.sleep(1)
    else:
        step.outcome = f"FAILED (server {'exited' if server.poll() is not None else 'not up'}, {url})"
        step.output = log.read_text()[-1500:]
    step.seconds = time.monotonic() - started
    return server


def stop(servers: list[subprocess.Popen]) -> None:
    for server in servers:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)


def walk(pages: list[Path], timeout: float) -> list[Step]:
    """Every page's blocks in order, in one shell state; each block's servers stopped at its end."""
    steps: list[Step] = []
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "exported.sh"
        subprocess.run(["bash", "-c", f"export -p > {state}"], check=True)
        for page in pages:
            for section, block in blocks(page.read_text()):
                servers = []
                for command in block:
                    step = Step(f"{page.name}: {section}", command)
                    steps.append(step)
                    skip = next((why for prefix, why in SKIPPED.items() if command.startswith(prefix)), None)
                    url = next((u for prefix, u in SERVERS.items() if command.startswith(prefix)), None)
                    if skip:
                        step.outcome = f"skipped: {skip}"
                    elif url:
                        log = Path(tmp) / f"server{len(steps)}.log"
                        servers.append(start_server(step, url, state, log, timeout))
                    else:
                        run(step, state, timeout)
                    first = step.command.splitlines()[0]
                    print(f"[{step.section}] {step.outcome} {step.seconds:.0f}s: {first}", flush=True)
                    if step.outcome.startswith("FAILED") or command.startswith(("curl", "python -")):
                        print(step.output, flush=True)
                stop(servers)
    return steps


def anchor(heading: str) -> str:
    """A heading's ``#fragment`` as GitHub writes it: lower case, punctuation dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links(root: Path, pages: list[str]) -> list[str]:
    """``page: target (why)`` for each relative link that leads to no file, or to no heading of it."""
    broken = []
    for page in pages:
        text = (root / page).read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, fragment = target.partition("#")
            file = (root / page).parent / path if path else root / page
            name = os.path.relpath(file.resolve(), root.resolve())
            if not file.exists():
                broken.append(f"{page}: {target} (no such file)")
            elif fragment and file.suffix == ".md" and fragment not in headings(file):
                broken.append(f"{page}: {target} (no heading #{fragment} in {name})")
    return broken


def headings(page: Path) -> set[str]:
    return {anchor(line.lstrip("#")) for line in page.read_text().splitlines() if line.startswith("#")}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.readme_walk", description=__doc__)
    p.add_argument("--root", type=Path, default=Path("."), help="the checkout (default: the current folder)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per command (a server: until it answers)")
    p.add_argument("--links-only", action="store_true", help="check the links, run nothing")
    args = p.parse_args()
    links = broken_links(args.root, [*PAGES, *NOT_WALKED])
    for line in links:
        print(f"link: {line}")
    bad_links = links
    for page, why in NOT_WALKED.items():
        print(f"[{page}] not walked: {why}")
    steps = [] if args.links_only else walk([args.root / page for page in PAGES], args.timeout)
    failed = [s for s in steps if s.outcome.startswith("FAILED")]
    ran = [s for s in steps if not s.outcome.startswith("skipped")]
    print(
        f"readme walk: {len(ran)} commands run, {len(failed)} failed, {len(steps) - len(ran)} skipped; "
        f"{len(bad_links)} broken links"
    )
    return 1 if failed or bad_links else 0


if __name__ == "__main__":
    raise SystemExit(main())
