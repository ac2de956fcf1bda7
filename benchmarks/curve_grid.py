"""The real-curve table: every cell of a study's thesis grid trained on several seeds, scored at every report point.

``python -m benchmarks.learning_curves --grid`` (the study ``absa`` at its ``curves`` preset unless told
otherwise) trains each (cell, seed) with the real training core (``trainables.loop.Trainer``, no Ray), scores
dev at the screen points and after every epoch, and appends one JSON line per (cell, seed) to the build log
(``--log``): a stopped build continues where it stopped. Seed-major: after the first seed every cell has a
curve. When every (cell, seed) is in the log, the table (:mod:`search.simulation.truth.table`) is written to
``--out``. On a GPU the same command at ``--preset full`` builds the table at the study's full scale.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from search.simulation.truth.table import cell_label, nan_or, write_table
from search.study.config import SearchConfig, screen_of, study_of
from search.study.plan import base_config
from search.study.strategy import SCREEN
from spaces.canonical import apply_choices, canonical, thesis_grid
from spaces.studies import Study
from trainables.config import TrainConfig
from trainables.exposure import PRIMARY_PASSES
from trainables.fidelity import report_points
from trainables.tasks import declared_name


@dataclass(frozen=True)
class Job:
    cell: str
    config: TrainConfig  # canonical, seed set
    auxiliary: tuple[str, ...]


def grid_jobs(study: Study, base: TrainConfig, seeds: list[int]) -> list[Job]:
    """Every (cell, seed) of the thesis grid, seed-major."""
    cells = []
    for point in thesis_grid(study, base):
        config = canonical(apply_choices(base, point, study))
        auxiliary = tuple(declared_name(t) for t in config.tasks if t != config.primary)
        anneal = config.sampling.anneal_c if config.sampling.schema == "anneal" else None
        cells.append((cell_label(auxiliary, point["schema"], anneal), config, auxiliary))
    return [Job(label, config.with_(seed=seed), aux) for seed in seeds for label, config, aux in cells]


def run_job(job: Job, points: tuple[float, ...], threads: int) -> dict[str, Any]:
    """Train one (cell, seed) through ``points``; its rows of the table."""
    import torch

    from trainables.loop import Trainer
    from trainables.majority import majority_scores

    torch.set_num_threads(threads)
    started = time.perf_counter()
    trainer = Trainer(job.config.with_(device="cpu"), name=f"{job.cell} seed {job.config.seed}")
    rows, done = [], 0.0  # done: seconds of the whole epochs trained
    for point in points:
        metrics = trainer.run_to(point)
        seconds = done + metrics["train/seconds"]  # an epoch's seconds include its screen part
        done = seconds if point == int(point) else done
        scores = {k: v for k, v in metrics.items() if "/dev/" in k}
        rows.append({"point": point, PRIMARY_PASSES: metrics[PRIMARY_PASSES], "seconds": seconds, **scores})
    primary = trainer.data[job.config.primary]
    majority = majority_scores(primary.task, primary.dev_examples)
    sampling = job.config.sampling
    return {
        "cell": job.cell,
        "auxiliary": "+".join(job.auxiliary),
        "schema": sampling.schema if job.auxiliary else "random",
        "exponent": nan_or(sampling.exponent),
        "anneal_c": sampling.anneal_c if sampling.schema == "anneal" else math.nan,
        "lr": job.config.lr,
        "warmup": job.config.warmup,
        "seed": job.config.seed,
        "rows": rows,
        "majority": majority,
        "wall_seconds": time.perf_counter() - started,
    }


def screens_of(cfg: SearchConfig, base: TrainConfig, screen: float | None) -> set[float]:
    """The screen points to score: ``--screen`` and the default search's own at this preset (a quarter in, or
    the warm-up's end: search.study.config.screen_of), so a replay of the default finds its point."""
    default = screen_of(replace(cfg, search=SCREEN), base.warmup * base.epochs)
    return {p for p in (screen, default) if p}


def done_in(log: Path) -> set[tuple[str, int]]:
    if not log.exists():
        return set()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return {(line["cell"], int(line["seed"])) for line in lines}


def table_rows(log: Path) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The log's runs as table rows, and the dev rows' majority rate of each primary metric."""
    rows, majority = [], {}
    for line in (json.loads(text) for text in log.read_text().splitlines() if text.strip()):
        keys = {k: line[k] for k in ("cell", "auxiliary", "schema", "exponent", "anneal_c", "lr", "warmup", "seed")}
        rows += [{**keys, **row} for row in line["rows"]]
        majority = line["majority"]
    return rows, majority


def build(args: argparse.Namespace) -> int:
    cfg = SearchConfig(study=args.study, preset=args.preset)
    study = study_of(cfg, args.preset)
    preset = study.preset(args.preset)
    base = base_config(cfg, study, preset)
    seeds = list(preset.seeds or (1, 2, 3))[: args.seeds]
    points = tuple(sorted({*screens_of(cfg, base, args.screen), *report_points(base.epochs)}))
    log, out = Path(args.log), Path(args.out)
    log.parent.mkdir(parents=True, exist_ok=True)
    done = done_in(log)
    todo = [j for j in grid_jobs(study, base, seeds) if (j.cell, j.config.seed) not in done]
    total = len(done) + len(todo)
    print(f"grid of {study.name} at preset {args.preset}: {total} runs ({len(done)} in {log}), {args.workers} workers")
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")  # torch and fork do not mix
    with context.Pool(args.workers) as pool:
        results = pool.imap_unordered(_run, [(j, points, args.threads) for j in todo])
        for i, line in enumerate(results, 1):
            with log.open("a") as f:
                f.write(json.dumps(line) + "\n")
            final = line["rows"][-1].get(f"{declared_name(base.primary)}/dev/{study.metric}", math.nan)
            eta = (time.perf_counter() - started) / i * (len(todo) - i) / 60
            print(
                f"[{len(done) + i}/{total}] {line['cell']} seed {line['seed']}: {final:.4f} "
                f"in {line['wall_seconds']:.0f}s, ~{eta:.0f} min to go",
                flush=True,
            )
    if len(done_in(log)) < total:
        return 1
    rows, majority = table_rows(log)
    meta = {
        "study": study.name,
        "primary": declared_name(base.primary),
        "metric": study.metric,
        "epochs": base.epochs,
        "majority": majority,
        "preset": args.preset,
        "train_fraction": base.train_fraction,
        "primary_spec": base.primary,
        "model": base.encoder.model,
        "layers": base.encoder.layers,
        "batch_size": base.batch_size,
        "max_seq_length": base.encoder.max_seq_length,
        "built_by": f"python -m benchmarks.learning_curves --grid --study {args.study} --preset {args.preset}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    write_table(out, rows, meta)
    print(f"table: {out} ({len(rows)} rows)")
    return 0


def _run(arguments: tuple[Job, tuple[float, ...], int]) -> dict[str, Any]:
    import logging

    logging.disable(logging.WARNING)  # the workers' load reports; the driver prints one line a run
    return run_job(*arguments)


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("--grid: the real-curve table")
    g.add_argument("--grid", action="store_true", help="train every cell of the study's thesis grid (this group)")
    g.add_argument("--study", default="absa")
    g.add_argument("--preset", default="curves", help="the study preset that sets the scale (curves; full on a GPU)")
    g.add_argument("--workers", type=int, default=2, help="runs in parallel, each in its own process")
    g.add_argument("--screen", type=float, default=0.25, help="a screen point inside the first epoch (0: none)")
    g.add_argument("--log", default="benchmarks/results/real_curves.jsonl", help="the build log (one line a run)")
    g.add_argument("--table", dest="table_out", default="benchmarks/results/real_curves.parquet")
