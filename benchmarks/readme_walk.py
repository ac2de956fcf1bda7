"""``python -m benchmarks.readme_walk``: the README's shell blocks, run as written, in order.

What a new user does after the set-up commands (``make run``, ``make test``) on a fresh clone:
every ```` ```bash ```` block from "## Quick start" up to "## Run on a GPU cluster" (which needs
AWS or machines of your own), line by line (a line ending in ``\\`` continues), in the checkout
this is started in. The shell's exported state carries from one command to the next, as in one
terminal (``. .venv/bin/activate``, ``export ...``). A server (:data:`SERVERS`) starts in the
background, is waited on until its URL answers, and is stopped when its block ends. A command
that starts a study, or reads a file only its user has, is skipped with the reason
(:data:`SKIPPED`). Prints one line per command and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

FIRST, LAST = "## Quick start", "## Run on a GPU cluster"

# command prefix -> why the walk does not run it
SKIPPED = {
    "make run": "the set-up command this walk follows (a study)",
    "make test-all": "the extended tests (~5 min more than make test)",
    "make test": "the set-up command this walk follows (the test suite)",
    "python -m search.run my-study.toml": "starts a study of a file you write (next section); make run walked one",
    "python -m search.finalize": "trains the final seeds again and registers another version",
    "python -m trainables.evaluate": "scores a predictions file you bring (p_yes.txt)",
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


def blocks(readme: str) -> list[tuple[str, list[str]]]:
    """``(section, commands)`` per bash block between :data:`FIRST` and :data:`LAST`."""
    text = readme[readme.index(FIRST) : readme.index(LAST)]
    out, section, inside, lines = [], "", False, []
    for line in text.splitlines():
        if line.startswith("#") and not inside:
            section = line.lstrip("# ").strip()
        elif line.strip() == "```bash":
            inside, lines = True, []
        elif line.strip() == "```" and inside:
            inside = False
            out.append((section, commands(lines)))
        elif inside:
            lines.append(line)
    return out


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


def walk(readme: Path, timeout: float) -> list[Step]:
    steps: list[Step] = []
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "exported.sh"
        subprocess.run(["bash", "-c", f"export -p > {state}"], check=True)
        for section, block in blocks(readme.read_text()):
            servers = []
            for command in block:
                step = Step(section, command)
                steps.append(step)
                skip = next((why for prefix, why in SKIPPED.items() if command.startswith(prefix)), None)
                url = next((u for prefix, u in SERVERS.items() if command.startswith(prefix)), None)
                if skip:
                    step.outcome = f"skipped: {skip}"
                elif url:
                    servers.append(start_server(step, url, state, Path(tmp) / f"server{len(steps)}.log", timeout))
                else:
                    run(step, state, timeout)
                print(
                    f"[{step.section}] {step.outcome} {step.seconds:.0f}s: {step.command.splitlines()[0]}", flush=True
                )
                if step.outcome.startswith("FAILED") or command.startswith("curl"):
                    print(step.output, flush=True)
            stop(servers)
    return steps


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.readme_walk", description=__doc__)
    p.add_argument("--readme", type=Path, default=Path("README.md"))
    p.add_argument("--timeout", type=float, default=600, help="seconds per command (a server: until it answers)")
    args = p.parse_args()
    steps = walk(args.readme, args.timeout)
    failed = [s for s in steps if s.outcome.startswith("FAILED")]
    ran = [s for s in steps if not s.outcome.startswith("skipped")]
    print(f"readme walk: {len(ran)} commands run, {len(failed)} failed, {len(steps) - len(ran)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
