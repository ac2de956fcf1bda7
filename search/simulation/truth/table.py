"""A real-curve table: measured scores of a grid's cells, per seed and report point, in one parquet file.

The layout (docs/truth-files.md, "Tables"): one row per (cell, seed, point), columns

    cell            the cell's label, ``single-task`` or ``<aux>+<aux> <schema>`` (``sst2+pos square``)
    auxiliary       the auxiliary tasks, ``+``-joined (``""``: single-task)
    schema          the sampling schema (``random`` for single-task, where every schema is one)
    exponent        power's exponent (NaN elsewhere)
    anneal_c        anneal's c (NaN elsewhere)
    lr, warmup      the cell's learning rate and warm-up
    seed            the training seed
    point           where the scores were taken, in epochs (0.25: a screen point inside the first)
    primary_passes  passes over the primary's training rows by then (trainables.exposure; NaN: not recorded)
    seconds         training seconds of this seed to reach the point (cumulative)
    <metric>...     every dev score recorded, under the trainer's keys (``semeval/dev/acc_4way``)

and file metadata (``meta``: the study, its primary and objective metric, epochs, the dev rows' majority
rate of each primary metric, how it was built). ``python -m benchmarks.learning_curves --grid`` builds one
by training; ``python -m search.export_table`` writes one from a finished grid study in MLflow. A table is
a truth: ``--simulate table.parquet`` replays it (:mod:`search.simulation.truth.replay`).

A config's cell (:func:`cell_of`) is what matches it to its rows: its auxiliary tasks, schema and the
schema's parameter, with no adaptive strategy on.

Pure: pandas and pyarrow, and the config's own functions (no Ray, MLflow or torch).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spaces.canonical import strategy_params
from trainables.config import ConfigError, TrainConfig
from trainables.tasks import declared_name

KEYS = ("cell", "auxiliary", "schema", "exponent", "anneal_c", "lr", "warmup", "seed", "point")
COLUMNS = KEYS + ("primary_passes", "seconds")
META = b"curve_table"  # the parquet metadata key holding ``meta`` as JSON
REQUIRED_META = ("study", "primary", "metric", "epochs")


class TableError(ConfigError):
    """A bad table file: ``str()`` names the file, the column or key, and what was expected."""


@dataclass(frozen=True)
class CurveTable:
    """A loaded table: ``frame`` (the rows, sorted by cell, seed and point) and ``meta``."""

    frame: pd.DataFrame
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def metric_columns(self) -> list[str]:
        return [c for c in self.frame.columns if c not in COLUMNS]

    @property
    def objective(self) -> str:
        """The column the study maximises: ``<primary>/dev/<metric>``."""
        return f"{self.meta['primary']}/dev/{self.meta['metric']}"

    @property
    def seeds(self) -> list[int]:
        return sorted(int(s) for s in self.frame["seed"].unique())

    @property
    def points(self) -> list[float]:
        return sorted(float(p) for p in self.frame["point"].unique())

    def final_means(self) -> pd.Series:
        """Each cell's objective after the last epoch, mean over the table's seeds (the true score of a replay)."""
        last = self.frame[self.frame["point"] == float(self.meta["epochs"])]
        return last.groupby("cell")[self.objective].mean().sort_values(ascending=False)


@dataclass(frozen=True)
class Cell:
    """A cell of a study's thesis grid as a table names it: the auxiliary tasks (declared names, the
    study's order), the schema (``random`` for single-task) and the schema's own parameter."""

    auxiliary: tuple[str, ...]
    schema: str
    exponent: float | None = None  # power only
    anneal_c: float | None = None  # anneal only

    @property
    def key(self) -> tuple[Any, ...]:
        """What matches a config to a table's cell: task order and float noise aside."""
        return tuple(sorted(self.auxiliary)), self.schema, rounded(self.exponent), rounded(self.anneal_c)

    @property
    def label(self) -> str:
        return cell_label(self.auxiliary, self.schema, self.anneal_c)

    def columns(self) -> dict[str, Any]:
        """The cell's columns of a table row."""
        aux, exponent, anneal_c = "+".join(self.auxiliary), nan_or(self.exponent), nan_or(self.anneal_c)
        return {"cell": self.label, "auxiliary": aux, "schema": self.schema, "exponent": exponent, "anneal_c": anneal_c}

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Cell:
        aux = tuple(t for t in str(row["auxiliary"]).split("+") if t)
        return cls(aux, str(row["schema"]), none_or(row["exponent"]), none_or(row["anneal_c"]))


def cell_of(config: TrainConfig) -> Cell | None:
    """The cell of a canonical config (``spaces.canonical.canonical``); None where an adaptive strategy is on
    (PCGrad, uncertainty weights, every task each step...: no cell of the thesis grid has one)."""
    if strategy_params(config):
        return None
    aux = tuple(declared_name(t) for t in config.tasks if t != config.primary)
    s = config.sampling
    schema = s.schema if aux else "random"
    return Cell(aux, schema, s.exponent if schema == "power" else None, s.anneal_c if schema == "anneal" else None)


def cell_label(auxiliary: Iterable[str], schema: str, anneal_c: float | None = None) -> str:
    aux = "+".join(auxiliary)
    if not aux:
        return "single-task"
    return f"{aux} {schema}" + (f"(c={anneal_c:g})" if schema == "anneal" and anneal_c is not None else "")


def write_table(path: str | Path, rows: Iterable[Mapping[str, Any]], meta: Mapping[str, Any]) -> CurveTable:
    """Check ``rows`` and ``meta`` and write them to ``path`` whole (a temporary file renamed: never half-written)."""
    frame = pd.DataFrame(list(rows))
    table = check(CurveTable(frame, dict(meta), str(path)))
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(table.frame, preserve_index=False)
    arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), META: json.dumps(table.meta).encode()})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    pq.write_table(arrow, partial)
    os.replace(partial, path)
    return table


def read_table(path: str | Path) -> CurveTable:
    """Read and check a table; every mistake names the file, the column or key, and what was expected."""
    import pyarrow.parquet as pq

    try:
        arrow = pq.read_table(path)
    except OSError as exc:
        raise TableError(f"{path}: cannot read the table ({exc})") from None
    raw = (arrow.schema.metadata or {}).get(META)
    if raw is None:
        raise TableError(f"{path}: no curve_table metadata; expected a table written by write_table")
    return check(CurveTable(arrow.to_pandas(), json.loads(raw), str(path)))


def check(table: CurveTable) -> CurveTable:
    """The table sorted, or :class:`TableError` on the first thing wrong with it."""
    path, frame, meta = table.path or "table", table.frame, table.meta
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise TableError(f"{path}: meta.{missing[0]}: missing; expected {', '.join(REQUIRED_META)}")
    absent = [c for c in COLUMNS if c not in frame.columns]
    if absent:
        raise TableError(f"{path}: column {absent[0]!r}: missing; expected {', '.join(COLUMNS)} and metric columns")
    if frame.empty:
        raise TableError(f"{path}: no rows; expected one per (cell, seed, point)")
    objective = f"{meta['primary']}/dev/{meta['metric']}"
    if objective not in frame.columns:
        expected = "expected the study's objective (meta primary, metric)"
        raise TableError(f"{path}: column {objective!r}: missing; {expected}")
    for column in ("point", "primary_passes", objective):
        bad = pd.to_numeric(frame[column], errors="coerce").isna()
        if column == "primary_passes":
            bad &= frame[column].notna()  # NaN: not recorded (exported from a study that did not log it)
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise TableError(f"{path}: row {row}, {column} = {frame[column].iloc[row]!r}: expected a number")
    duplicated = frame.duplicated(["cell", "seed", "point"])
    if duplicated.any():
        row = frame[duplicated].iloc[0]
        raise TableError(f"{path}: cell {row['cell']!r} seed {row['seed']} point {row['point']}: listed twice")
    epochs = int(meta["epochs"])
    finals = frame[frame["point"] == float(epochs)].groupby("cell")["seed"].nunique()
    short = sorted(set(frame["cell"]) - set(finals.index))
    if short:
        raise TableError(f"{path}: cell {short[0]!r}: no score at the last epoch ({epochs}); expected every cell's")
    frame = frame.sort_values(["cell", "seed", "point"]).reset_index(drop=True)
    return CurveTable(frame, meta, table.path)


def nan_or(value: float | None) -> float:
    return math.nan if value is None else float(value)


def none_or(value: Any) -> float | None:
    """A table's float, None where it is NaN (or missing)."""
    return None if value is None or pd.isna(value) else float(value)


def rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 9)
