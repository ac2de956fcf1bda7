"""``python -m search.export_table STUDY --out FILE.parquet``: a finished grid study as a real-curve table.

Reads the study's parent run (``--name``, else the latest) and its trial runs from MLflow and writes the
table (:mod:`search.simulation.truth.table`) that ``--simulate FILE.parquet`` replays. Every trial must be a
cell of the study's thesis grid (its params those of one of the grid's configs, the grid rebuilt from the
invocation the parent run recorded, as ``--resume`` rebuilds it) that trained every epoch: a study of
``--search grid`` whose scheduler stopped nothing (``--grace-period`` = its epochs). Per trial, every seed
and point it reported: the primary's dev scores from their history (``<key>/seed<S>``, step = epoch; step 0
is a screen point, its epoch in ``screen/epoch``), ``primary_passes`` where logged (NaN where not), and the
seconds to reach the point from ``train/seconds/mean``, the seeds' mean (a seed's own are not logged).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from search.simulation.truth.table import Cell, CurveTable, cell_of, none_or, write_table
from search.study.config import SearchConfig, continuing, study_of
from search.study.plan import base_config
from search.tracking import records as rec
from search.tracking.outcome import COMPLETED
from search.tracking.records import Invocation, TrialParams, objective_metric_of
from search.tracking.trial_record import TrialRecord, config_fields
from spaces import apply_choices, canonical, get_study, thesis_grid
from trainables.cli import ArgumentParser, run_main, setup_logging
from trainables.config import ConfigError, TrainConfig
from trainables.exposure import PRIMARY_PASSES
from trainables.results import parse_seed_key, seed_key

logger = logging.getLogger("search.export_table")

SECONDS = "train/seconds/mean"  # each epoch's training seconds (the screen's: its part), the seeds' mean
History = Mapping[str, Sequence[Any]]  # metric key -> MLflow's history (``.step``, ``.value``, ``.timestamp``)


def export(study: str, tracking_uri: str, out: str, name: str | None = None) -> CurveTable:
    """Write the table of ``study``'s finished grid study ``name`` (default: the latest) to ``out``."""
    from search.tracking.runs import client as mlflow_client
    from search.tracking.runs import find_parent, trial_table

    if Path(out).suffix != ".parquet":
        raise ConfigError(f"--out {out}: expected a .parquet file (what --simulate replays)")
    spec, client = get_study(study), mlflow_client(tracking_uri)
    experiment, parent = find_parent(client, spec.name, name)
    run = parent.data.tags.get(rec.TUNE_EXPERIMENT_TAG, parent.info.run_name)
    if parent.info.status != "FINISHED":
        raise ConfigError(f"study run {run}: {parent.info.status}, not finished; a table needs a finished study")
    invocation = Invocation.from_params(parent.data.params)
    primary = spec.primary_name
    metric = objective_metric_of(invocation.objective, primary)
    if metric is None:
        raise ConfigError(f"study run {run}: objective {invocation.objective} is no dev metric of {primary}")
    cells = grid_cells(study, invocation)
    trials = trial_table(client, experiment.experiment_id, parent)
    if not trials:
        raise ConfigError(f"study run {run} has no trials in MLflow")
    rows = []
    for trial in trials:
        cell, config = cell_of_trial(trial, cells, run, invocation.epochs)
        history = histories(client, trial, primary)
        base = {**cell.columns(), "lr": config.lr, "warmup": config.warmup}
        rows += [{**base, **row} for row in seed_rows(history, seeds_of(trial), primary, invocation.screen)]
    meta = {
        "study": spec.name,
        "primary": primary,
        "metric": metric,
        "epochs": invocation.epochs,
        "majority": rec.majority_of(parent.data.metrics),
        "preset": invocation.preset,
        "model": invocation.model,
        "search": invocation.search,
        "seeds": list(invocation.seeds),
        "simulate": invocation.simulate,  # a simulated study's truth: the table replays that truth's draws
        "run": run,
        "built_by": f"python -m search.export_table {study} --name {run}",
    }
    return write_table(out, rows, meta)


# -- the grid and its trials -----------------------------------------------------------
def identity(fields: Mapping[str, Any]) -> tuple[Any, ...]:
    """What tells a trial's config apart in its params (``config_fields``): NaN-free, comparable."""
    keys = ("auxiliary", "schema", "exponent", "anneal_c", "lr", "warmup", "batch_size")
    return tuple(none_or(fields[k]) if k in ("exponent", "anneal_c") else fields[k] for k in keys)


def grid_cells(study: str, invocation: Invocation) -> dict[tuple[Any, ...], tuple[Cell, TrainConfig]]:
    """The study's thesis grid as its invocation rebuilds it: each cell's params identity -> (cell, config)."""
    cfg = continuing(SearchConfig(get_study(study).name), invocation)
    spec = study_of(cfg, cfg.preset)
    base = base_config(cfg, spec, spec.preset(cfg.preset or ""))
    out = {}
    for point in thesis_grid(spec, base):
        config = canonical(apply_choices(base, point, spec))
        cell = cell_of(config)
        if cell is not None:
            out[identity(config_fields(TrialParams.of(config, ())))] = (cell, config)
    return out


def cell_of_trial(
    trial: TrialRecord, cells: Mapping[tuple[Any, ...], tuple[Cell, TrainConfig]], run: str, epochs: int
) -> tuple[Cell, TrainConfig]:
    """The grid cell ``trial`` trained, which it trained to the last epoch; one line where it did not."""
    found = cells.get(identity(vars(trial)))
    if found is None:
        raise ConfigError(
            f"study run {run}: trial {trial.label} is not a cell of the study's thesis grid; a table holds only "
            "the grid's cells (export a --search grid study)"
        )
    if trial.status != COMPLETED or trial.epochs < epochs:
        raise ConfigError(
            f"study run {run}: trial {trial.label} is {trial.status or 'unfinished'} after {trial.epochs} of {epochs} "
            f"epochs; a table needs every cell's every epoch (a grid study whose scheduler stopped none: "
            f"--grace-period {epochs})"
        )
    return found


def seeds_of(trial: TrialRecord) -> list[int]:
    return [int(s) for s in trial.seeds.split(",") if s]


def histories(client, trial: TrialRecord, primary: str) -> dict[str, list[Any]]:
    """Every step of the trial's metrics a table row reads: per-seed primary dev scores, the screen's epoch,
    ``primary_passes`` and the seconds."""
    keys = [k for k in trial.metrics if seeded_score(k, primary)]
    keys += [k for k in (rec.SCREEN_EPOCH, PRIMARY_PASSES, SECONDS) if k in trial.metrics]
    return {k: client.get_metric_history(trial.run_id, k) for k in keys}


# -- rows (pure) -------------------------------------------------------------------------
def seeded_score(key: str, primary: str) -> str | None:
    """``semeval/dev/acc_4way/seed2`` -> ``semeval/dev/acc_4way``; None for any other key."""
    parsed = parse_seed_key(key)
    return parsed[0] if parsed and parsed[0].startswith(f"{primary}/dev/") else None


def by_step(history: Sequence[Any]) -> dict[int, float]:
    """``{step: value}``, the latest value of a step logged twice (an epoch a resumed trial trained again)."""
    return {m.step: float(m.value) for m in sorted(history, key=lambda m: (m.step, m.timestamp))}


def seed_rows(history: History, seeds: Sequence[int], primary: str, screen: float = 0.0) -> list[dict[str, Any]]:
    """One trial's rows: per seed, per point it reported (step 0: the screen point, logged in ``screen/epoch``,
    else the invocation's ``screen``), the primary's dev scores, ``primary_passes`` (NaN where not logged)
    and the cumulative seconds (the screen's own; at an epoch's end, the whole epochs' up to it)."""
    values = {k: by_step(v) for k, v in history.items()}
    screen = values.get(rec.SCREEN_EPOCH, {}).get(0, screen)
    names = sorted({name for k in values if (name := seeded_score(k, primary))})
    passes, seconds = values.get(PRIMARY_PASSES, {}), values.get(SECONDS, {})
    rows = []
    for seed in seeds:
        scores = {name: values.get(seed_key(name, seed), {}) for name in names}
        for step in sorted({step for steps in scores.values() for step in steps}):
            if step == 0 and not screen:
                continue  # step 0 of a study without a screen point: nothing a table can place
            spent = [seconds.get(e, math.nan) for e in ([0] if step == 0 else range(1, step + 1))]
            row = {"seed": seed, "point": float(screen) if step == 0 else float(step), "seconds": sum(spent)}
            row[PRIMARY_PASSES] = passes.get(step, math.nan)
            rows.append({**row, **{name: steps[step] for name, steps in scores.items() if step in steps}})
    return rows


# -- the command line ----------------------------------------------------------------------
def main() -> int:
    p = ArgumentParser(prog="python -m search.export_table", description=__doc__)
    p.add_argument("study", help="a built-in study or a .toml study file")
    p.add_argument("--name", help="the study invocation (Tune experiment name); default: the latest")
    p.add_argument("--tracking-uri", default=SearchConfig.tracking_uri)
    p.add_argument("--out", required=True, help="the table to write, a .parquet file")
    args = p.parse_args()
    setup_logging()
    from search.tracking.runs import check_tracking_uri

    check_tracking_uri(args.tracking_uri)
    table = export(args.study, args.tracking_uri, args.out, args.name)
    cells, seeds = table.frame["cell"].nunique(), ",".join(map(str, table.seeds))
    points = ", ".join(f"{p:g}" for p in table.points)
    print(f"table: {args.out} ({len(table.frame)} rows: {cells} cells, seeds {seeds}, points {points})")
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, ConnectionError, OSError))
