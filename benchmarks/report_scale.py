"""``python -m benchmarks.report_scale``: the report and the final comparison of a study of many trials.

A study of ``--trials`` trial runs for the readers at the end of a study (``search.report``, ``search.finalize``):
one real study of ``--seed-trials`` simulated trials through Ray Tune, Optuna and MLflow (``search.run --simulate``)
in a fresh folder, then its search trials' MLflow records (its spool, as the tracker wrote them) sent again through
the project's own sink (:class:`search.tracking.sink.MlflowSink`) under the same study run, each copy with its own
Tune trial ids, trial numbers and canonical keys, until the study holds ``--trials`` trial runs. Then, each in a
fresh process, ``search.report`` and ``search.finalize`` on that store: the wall time and peak memory of each,
before (at the seed study's size) and after. The copies score as their originals did, so the final comparison
chooses the seed study's configs and takes back its final seeds: it measures the reading and choosing at that
size, not the training. Example: ``python -m benchmarks.report_scale --trials 10000``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.rows import append_row

HERE = Path(__file__).resolve().parent / "results"


def copies(records: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    """The search trials' records (not the study run's, not finalize's), copied after the originals until there
    are ``total`` trials: copy ``c`` of trial number ``n`` is number ``n + c * trials``, its own trial id and key,
    and not the baseline (a study has one)."""
    finals = {r["trial"] for r in records if r["op"] == "start" and r["tags"].get("kind") != "trial"}
    trials = [r for r in records if r.get("trial") is not None and r["trial"] not in finals]
    count = sum(r["op"] == "start" for r in trials)
    out: list[dict[str, Any]] = []
    for copy in range(1, max(0, total - 1) // max(1, count) + 1):
        skipped = set()
        for original in trials:
            r = json.loads(json.dumps(original))
            r["trial"] = f"{r['trial']}-copy{copy}"
            if r["trial"] in skipped:
                continue
            if r["op"] == "start":
                number = int(r["tags"]["trial"]) + copy * count
                if number >= total:
                    skipped.add(r["trial"])
                    continue
                r["tags"].update(trial_id=r["trial"], trial=str(number), baseline="false")
                r["tags"]["canonical_key"] = f"{r['tags'].get('canonical_key', '')} copy{copy}"
                r["name"] = re.sub(r"^t\d+", f"t{number:05d}", r["name"])
            elif "trial_id" in r.get("tags", {}):
                r["tags"]["trial_id"] = r["trial"]
            out.append(r)
    return out


def timed(command: list[str], cwd: Path) -> dict[str, Any]:
    """A command's wall time and peak memory (its process tree's largest), in a fresh process; fails loudly."""
    started = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *command], cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"error: {' '.join(command[2:4])} failed: {out.stderr.strip().splitlines()[-3:]}")
    return {"wall_s": round(wall, 1), "peak_mb": round(int(out.stderr.strip().splitlines()[-1]) / 1024)}


def readers(folder: Path, uri: str) -> dict[str, Any]:
    """``search.report`` and ``search.finalize`` on the study in ``uri``."""
    python = sys.executable
    report = timed([python, "-m", "search.report", "absa", "--tracking-uri", uri, "--out", "report"], folder)
    final = timed([python, "-m", "search.finalize", "absa", "--tracking-uri", uri], folder)
    return {"report": report, "finalize": final}


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from search.tracking.sink import MlflowSink

    folder = Path(tempfile.mkdtemp(prefix="report-scale-"))
    try:
        run = [sys.executable, "-m", "search.run", "absa", "--simulate", args.truth, "--no-report"]
        run += ["--trials", str(args.seed_trials), "--max-concurrent", str(args.slots)]
        seed_study = timed(run, folder)
        spool = next(folder.glob("ray_results/*/mlflow-spool.jsonl"))
        records = [json.loads(line) for line in spool.read_text().splitlines()]
        uri = f"sqlite:///{folder}/mlflow.db"
        before = readers(folder, uri)
        added = copies(records, args.trials)
        parent = next(r["tags"]["mlflow.parentRunId"] for r in records if r["op"] == "start")
        sink, started = MlflowSink(uri, parent), time.perf_counter()
        for i, record in enumerate(added, 1):
            sink.send(record)
            if i % 5000 == 0:
                print(f"{i} of {len(added)} records sent", file=sys.stderr, flush=True)
        sent = time.perf_counter() - started
        after = readers(folder, uri)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    row = {"trials": args.trials, "seed_trials": args.seed_trials, "truth": args.truth, "seed_study": seed_study}
    row |= {"records_sent": len(added), "records_per_s": round(len(added) / sent, 1)}
    append_row(args.out, {**row, "before": before, "after": after})


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.report_scale", description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10000, help="trial runs the study holds at the end")
    p.add_argument("--seed-trials", type=int, default=300, help="trials of the real study copied")
    p.add_argument("--slots", type=int, default=32, help="the real study's --max-concurrent")
    p.add_argument("--truth", default="null", help="the real study's --simulate truth")
    p.add_argument("--out", type=Path, default=HERE / "report_scale.jsonl")
    args = p.parse_args(argv)
    if args.trials < args.seed_trials:
        p.error(f"--trials {args.trials}: expected at least --seed-trials ({args.seed_trials})")
    return args


if __name__ == "__main__":
    main()
