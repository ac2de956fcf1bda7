"""``python -m benchmarks.curve_runs JOBS``: train the real-curve table's runs listed in a jobs file.

The training half of ``python -m benchmarks.learning_curves --grid`` (:mod:`benchmarks.curve_grid`), with the
core alone (``trainables``: torch and transformers, no Ray, Optuna or MLflow), so a GPU machine that has only
those trains the table: ``--grid --jobs-out jobs.json`` writes the runs still missing from the build log; this
command trains them on ``--device`` and appends one JSON line a run to ``--log``; ``--grid`` with that log
then writes the table. The data root is the running machine's (``MTL_DATA_DIR``), not the planner's.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainables.config import TrainConfig
from trainables.exposure import PRIMARY_PASSES

JOBS_FORMAT = "mtl-curve-jobs/1"


@dataclass(frozen=True)
class Job:
    cell: str
    config: TrainConfig  # canonical, seed set
    auxiliary: tuple[str, ...]


def run_job(
    job: Job, points: tuple[float, ...], threads: int, device: str, points_log: Path | None = None
) -> dict[str, Any]:
    """Train one (cell, seed) through ``points`` on ``device``; its rows of the table. ``points_log``: each row
    is also appended there as it is reached (one line, with the cell and seed), so a run cut short by a machine's
    time limit leaves its curve so far."""
    import torch

    from trainables.data import resolve_data_dir
    from trainables.loop import Trainer
    from trainables.majority import majority_scores

    torch.set_num_threads(threads)
    started = time.perf_counter()
    config = job.config.with_(device=device, data_dir=str(resolve_data_dir(None)))
    trainer = Trainer(config, name=f"{job.cell} seed {config.seed}")
    rows, done = [], 0.0  # done: seconds of the whole epochs trained
    for point in points:
        metrics = trainer.run_to(point)
        seconds = done + metrics["train/seconds"]  # an epoch's seconds include its screen part
        done = seconds if point == int(point) else done
        scores = {k: v for k, v in metrics.items() if "/dev/" in k}
        rows.append({"point": point, PRIMARY_PASSES: metrics[PRIMARY_PASSES], "seconds": seconds, **scores})
        if points_log is not None:
            line = {"cell": job.cell, "seed": config.seed, **rows[-1], "wall": time.perf_counter() - started}
            with points_log.open("a") as f:  # one short write a line: the workers' lines do not interleave
                f.write(json.dumps(line) + "\n")
    primary = trainer.data[config.primary]
    sampling = config.sampling
    return {
        "cell": job.cell,
        "auxiliary": "+".join(job.auxiliary),
        "schema": sampling.schema if job.auxiliary else "random",
        "exponent": math.nan if sampling.exponent is None else sampling.exponent,
        "anneal_c": sampling.anneal_c if sampling.schema == "anneal" else math.nan,
        "lr": config.lr,
        "warmup": config.warmup,
        "seed": config.seed,
        "rows": rows,
        "majority": majority_scores(primary.task, primary.dev_examples),
        "wall_seconds": time.perf_counter() - started,
        "device": device_name(trainer.device),
        "precision": trainer.precision.name,
    }


def device_name(device: Any) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def write_jobs(path: Path, jobs: list[Job], points: tuple[float, ...], metric: str) -> None:
    lines = [{"cell": j.cell, "auxiliary": list(j.auxiliary), "config": j.config.to_dict()} for j in jobs]
    path.write_text(json.dumps({"format": JOBS_FORMAT, "points": list(points), "metric": metric, "jobs": lines}))


def read_jobs(path: Path) -> tuple[list[Job], tuple[float, ...], str]:
    """The jobs file's runs, report points and primary metric key; one line naming the file when it is not one."""
    try:
        data = json.loads(path.read_text())
        if data.get("format") != JOBS_FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {JOBS_FORMAT!r}")
        jobs = [Job(j["cell"], TrainConfig.from_dict(j["config"]), tuple(j["auxiliary"])) for j in data["jobs"]]
        return jobs, tuple(float(p) for p in data["points"]), str(data["metric"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"error: jobs file {path}: {e} (expected the output of --grid --jobs-out)") from None


def done_in(log: Path) -> set[tuple[str, int]]:
    if not log.exists():
        return set()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return {(line["cell"], int(line["seed"])) for line in lines}


def run_jobs(jobs: list[Job], points: tuple[float, ...], metric: str, log: Path, options: argparse.Namespace) -> int:
    """Train the jobs not yet in ``log``, ``options.workers`` at a time, appending each run's line as it ends;
    0 when every job is in the log."""
    done = done_in(log)
    wanted = getattr(options, "auxiliary", None)
    if wanted is not None:  # a part of the jobs, e.g. what one call of a GPU machine's time limit trains
        jobs = [j for j in jobs if "+".join(j.auxiliary) in wanted]
    todo = [j for j in jobs if (j.cell, j.config.seed) not in done]
    in_log = len(jobs) - len(todo)
    print(f"{len(todo)} runs to train ({in_log} in {log}), {options.workers} workers on {options.device}")
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")  # torch and fork do not mix
    with context.Pool(options.workers) as pool:
        points_log = getattr(options, "points_log", None)
        arguments = [(j, points, options.threads, options.device, points_log) for j in todo]
        for i, line in enumerate(pool.imap_unordered(_run, arguments), 1):
            with log.open("a") as f:
                f.write(json.dumps(line) + "\n")
            final = line["rows"][-1].get(metric, math.nan)
            eta = (time.perf_counter() - started) / i * (len(todo) - i) / 60
            print(
                f"[{i}/{len(todo)}] {line['cell']} seed {line['seed']}: {final:.4f} "
                f"in {line['wall_seconds']:.0f}s, ~{eta:.0f} min to go",
                flush=True,
            )
    return 0 if {(j.cell, j.config.seed) for j in jobs} <= done_in(log) else 1


def _run(arguments: tuple[Job, tuple[float, ...], int, str, Path | None]) -> dict[str, Any]:
    import logging

    logging.disable(logging.WARNING)  # the workers' load reports; the driver prints one line a run
    return run_job(*arguments)


def add_run_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup, threads: bool = True) -> None:
    """The training flags (``threads``: with ``--threads``, which ``benchmarks.learning_curves`` has of its own)."""
    p.add_argument("--workers", type=int, default=2, help="runs in parallel, each in its own process")
    if threads:
        p.add_argument("--threads", type=int, default=1, help="torch threads per run")
    p.add_argument("--device", default="cpu", help="cpu (fp32), cuda or auto (a GPU trains in bf16 autocast)")


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.curve_runs", description=__doc__)
    p.add_argument("jobs", type=Path, help="a jobs file from --grid --jobs-out")
    p.add_argument("--log", type=Path, default=Path("benchmarks/results/real_curves.jsonl"), help="the build log")
    p.add_argument(
        "--auxiliary",
        type=lambda text: set(text.split(",")),
        help="train only the cells of these auxiliary sets, comma-separated, e.g. sst2,sst2+pos ('' the baseline)",
    )
    p.add_argument("--points-log", type=Path, help="also append every report point as it is reached")
    add_run_arguments(p)
    args = p.parse_args()
    jobs, points, metric = read_jobs(args.jobs)
    raise SystemExit(run_jobs(jobs, points, metric, args.log, args))


if __name__ == "__main__":
    main()
