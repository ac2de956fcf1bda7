"""``python -m benchmarks.default_run``: ``make run``'s study, timed by phase.

Runs ``python -m search.run absa`` (what ``make run`` runs; extra flags after ``--``) in a fresh
temporary folder, with its stores there too, and stamps each line of its output as it arrives. The
phases are cut at the lines that end them:

- ``search``: from the start (Python, data, Ray and the trials) to ``study ... finished``;
- ``final``: from there to the last line of the final comparison (``search.answer.final``,
  ``retrain``, ``register``): both sides trained on fresh seeds, the model registered;
- ``report``: from there to ``report written to``;
- ``rest``: from there to the process's exit (the summary, Ray's shutdown).

Appends one JSON line to ``benchmarks/results/default_run.jsonl``: the phases in seconds, the wall
time, the machine and its load average (1 minute) at the start and at the end, the commit, the exit
code and the verdict line. The load says whether the figure is an idle one: on a shared machine it
is not. Example: ``python -m benchmarks.default_run`` (the real smoke study, minutes), or
``python -m benchmarks.default_run -- --simulate null --preset smoke`` (seconds, no training).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "default_run.jsonl"
# phase -> the text of the line that ends it ("final" ends at the last line of these loggers)
SEARCH_END = "search.study.runner: study "
FINAL_LOGGERS = ("search.answer.final", "search.answer.retrain", "search.answer.register")
REPORT_END = "report written to "
FORECAST = r"; the run: ~(\d+) (min|s) "  # search.study.sizing's start line
SIZED = "keep the 15-minute promise"
SIZED_FORECAST = r"rows \(of \d+\), the run ~(\d+) (min|s) "
VERDICT = " on test "  # the summary's verdict line: "multitask vs single-task on test acc_4way, ..."


def seconds_of(found: re.Match) -> float:
    """``~12 min`` or ``~45 s`` (the number and its unit, as matched) in seconds."""
    return float(found[1]) * (60 if found[2] == "min" else 1)


@dataclass
class Phases:
    """Seconds since the start at which each phase ended (None: its line never came)."""

    search: float | None = None
    final: float | None = None
    report: float | None = None
    exit: float | None = None
    verdict: str = ""
    forecast: float | None = None  # the whole run as the start line forecast it (seconds, to its rounding)
    forecast_at: float | None = None  # when that line came
    sized: str = ""  # the line that sized the preset's training rows to the machine, where one came
    lines: list[str] = field(default_factory=list)

    def see(self, line: str, at: float) -> None:
        if (found := re.search(FORECAST, line)) and self.forecast is None:
            self.forecast, self.forecast_at = seconds_of(found), at
        if SIZED in line:  # the forecast of the run as sized replaces the preset's
            self.sized = line.split(": ", 1)[-1].strip()
            if found := re.search(SIZED_FORECAST, line):
                self.forecast = seconds_of(found)
        if SEARCH_END in line and " finished: " in line:
            self.search = at
        elif any(f" {name}: " in line for name in FINAL_LOGGERS):
            self.final = at
        elif line.startswith(REPORT_END):
            self.report = at
        elif VERDICT in line and line.startswith(("multitask", "no verdict")):
            self.verdict = line.strip()

    def durations(self) -> dict[str, float | None]:
        """Each phase's own seconds: search, final, report, rest."""
        marks = [self.search, self.final, self.report, self.exit]
        out, last = {}, 0.0
        for name, mark in zip(("search", "final", "report", "rest"), marks):
            out[name] = None if mark is None else round(mark - last, 1)
            last = mark if mark is not None else last
        return out


def run(command: list[str], cwd: Path) -> tuple[int, Phases]:
    """``command`` in ``cwd``, its stdout and stderr merged and stamped line by line."""
    phases, start = Phases(), time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        phases.see(line, time.monotonic() - start)
        phases.lines.append(line)
        print(line, end="", flush=True)
    code = proc.wait()
    phases.exit = time.monotonic() - start
    return code, phases


def commit() -> str:
    r = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    )
    return r.stdout.strip() or "unknown"


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.default_run", description=__doc__)
    p.add_argument("--study", default="absa", help="the study make run runs (default: %(default)s)")
    p.add_argument("--out", type=Path, default=RESULTS, help="JSON lines file to append to (default: %(default)s)")
    p.add_argument("extra", nargs="*", help="flags for search.run, after --")
    args = p.parse_args()
    command = [sys.executable, "-m", "search.run", args.study, *args.extra]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="default-run-") as tmp:
        code, phases = run(command, Path(tmp))
    record = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": "python -m search.run " + " ".join([args.study, *args.extra]),
        "exit_code": code,
        "wall_s": round(phases.exit or 0.0, 1),
        "phases_s": phases.durations(),
        "forecast_s": phases.forecast,  # what the start line said (to the minute), and when it said it
        "forecast_at_s": None if phases.forecast_at is None else round(phases.forecast_at, 1),
        "forecast_error": None
        if not phases.forecast or not phases.exit
        else round(phases.forecast / phases.exit - 1, 3),
        "sized": phases.sized,
        "verdict": phases.verdict,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_1min": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
        "commit": commit(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "command"}, indent=1))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
