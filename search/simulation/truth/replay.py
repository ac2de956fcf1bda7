"""A real-curve table as a truth (``--simulate table.parquet``): every score a replayed trial reports is one
the table measured (:mod:`search.simulation.truth.table`), looked up by the config's cell, the seed and the
report point. It offers what the simulation asks of a :class:`~search.simulation.truth.model.Truth`.

- Cells. A config is matched to its cell (:func:`~search.simulation.truth.table.cell_of`: its auxiliary
  tasks, its schema and the schema's parameter). Lr, warm-up and batch size are not matched: a table's cells
  share the grid's, and a replay at another preset scores its cells as the table measured them. A config
  that is no cell of the table (a TPE point after the cells, an adaptive strategy) is refused in one line.
- Seeds. A seed the table holds for the cell is itself; any other is drawn from the cell's seeds by a hash
  of the seed (and of the truth's ``seed``: a benchmark's study i > 0, ``replace(truth, seed=i)``, draws
  every seed so) and of the cell, the same draw at every point and for both splits, each cell its own. More
  seeds than the table holds repeat its seeds: they add no information, and a paired test over them counts
  a repeated pair twice.
- Points. A point (epochs; 0.25 a screen point) the table does not hold is refused in one line; a config
  must train the table's epochs (a replayed study runs at them, ``search.simulation.kind.ReplayedTrials``).
- Test. A table holds dev scores only: a run that scores test (finalize's) reports, as its test scores
  at the last epoch, its dev scores there (the drawn seed's). Finalize's verdict on a replay is the dev
  ranking of fresh seed draws, not a held-out test.
- Truth. A config's true score is its cell's mean over the table's seeds after the last epoch, on dev and
  on test alike; the true best is the cell with the best one (:meth:`TableTruth.best_cell`).

Pure: no Ray, no torch, no data.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search.simulation.truth.model import Timing
from search.simulation.truth.table import Cell, CurveTable, TableError, cell_of, read_table
from spaces.canonical import config_label
from trainables.config import TrainConfig
from trainables.exposure import PRIMARY_PASSES
from trainables.results import DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL, aggregate, seed_values_kept

Key = tuple[Any, ...]  # Cell.key
SECONDS = "train/seconds"  # what the trainer reports: the seconds of the epoch the point falls in, up to it


def point_key(point: float) -> float:
    return round(float(point), 6)


@dataclass(frozen=True, eq=False)  # eq: a frame has no truth value
class TableTruth:
    """A table, indexed for lookups (:meth:`of`); ``seed``: 0 keeps the table's seeds, another draws every seed."""

    name: str
    primary: str
    table: CurveTable = field(repr=False)
    cells: Mapping[Key, Cell] = field(repr=False)
    seeds: Mapping[Key, tuple[int, ...]] = field(repr=False)  # a cell's seeds that reached the last epoch
    rows: Mapping[tuple[Key, int, float], Mapping[str, float]] = field(repr=False)
    tasks: Mapping[str, Mapping[str, float]]  # task -> dev metric -> its mean after the last epoch
    majority: Mapping[str, float]  # primary metric -> the constant predictor's score on the dev rows
    time: Timing = Timing()
    path: str = ""
    seed: int = 0

    @classmethod
    def of(cls, table: CurveTable, seed: int = 0) -> TableTruth:
        frame, meta, epochs = table.frame, table.meta, int(table.meta["epochs"])
        cells, rows, seeds = {}, {}, {}
        for record in frame.to_dict("records"):
            cell, at = Cell.of_row(record), point_key(record["point"])
            cells.setdefault(cell.key, cell)
            values = {k: float(record[k]) for k in (*table.metric_columns, PRIMARY_PASSES, "seconds")}
            rows[(cell.key, int(record["seed"]), at)] = values
            if at == epochs:  # a seed that reached the last epoch: one a replay may draw
                seeds.setdefault(cell.key, []).append(int(record["seed"]))
        last = frame[frame["point"] == float(epochs)]
        tasks: dict[str, dict[str, float]] = {}
        for column in table.metric_columns:
            parts = column.split("/", 2)  # task/split/metric
            if len(parts) == 3 and parts[1] == "dev" and last[column].notna().any():
                tasks.setdefault(parts[0], {})[parts[2]] = float(last[column].mean())
        per_epoch = float((last["seconds"] / epochs).mean())
        name = str(meta.get("name") or Path(table.path).stem or meta["study"])
        return cls(
            name=name,
            primary=str(meta["primary"]),
            table=table,
            cells=cells,
            seeds={key: tuple(sorted(found)) for key, found in seeds.items()},
            rows=rows,
            tasks=tasks,
            majority={k: float(v) for k, v in dict(meta.get("majority") or {}).items()},
            time=Timing(seconds_per_epoch=per_epoch if math.isfinite(per_epoch) else 0.0),  # scale 0: no sleep
            path=table.path,
            seed=seed,
        )

    @property
    def epochs(self) -> int:
        """The epochs every run of the table trained (a replayed study's)."""
        return int(self.table.meta["epochs"])

    @property
    def points(self) -> list[float]:
        return self.table.points

    # -- lookups ------------------------------------------------------------------
    def cell(self, config: TrainConfig) -> Cell:
        """The table's cell of a canonical ``config``; one line where it has none or trains other epochs."""
        cell = cell_of(config)
        if cell is None or cell.key not in self.cells:
            raise TableError(
                f"{self.path}: {config_label(config)} is not a cell of this table; a table replays only the grid's "
                f"{len(self.cells)} cells (--search grid, or cells-halving without --trials beyond the cells)"
            )
        if config.epochs != self.epochs:
            raise TableError(
                f"{self.path}: {config_label(config)} trains {config.epochs} epochs, the table's runs {self.epochs}; "
                "a replay runs at the table's epochs"
            )
        return self.cells[cell.key]

    def table_seed(self, cell: Cell, seed: int) -> int:
        """The table's seed that ``seed`` replays in ``cell`` (module docstring)."""
        seeds = self.seeds[cell.key]
        if not self.seed and seed in seeds:
            return seed
        # drawn per cell: cells are trained apart, so one seed's luck in one cell says nothing of another's, and a
        # benchmark's studies meet every combination of the cells' seeds, not as many outcomes as the table has seeds
        digest = hashlib.blake2b(f"{self.seed}\x1f{cell.key}\x1f{seed}".encode(), digest_size=8).digest()
        return seeds[int.from_bytes(digest, "little") % len(seeds)]

    def row(self, config: TrainConfig, seed: int, point: float) -> Mapping[str, float]:
        """The table's row that seed ``seed`` of ``config`` replays at ``point``."""
        cell = self.cell(config)
        drawn = self.table_seed(cell, seed)
        found = self.rows.get((cell.key, drawn, point_key(point)))
        if found is None:
            held = ", ".join(f"{p:g}" for p in self.points)
            where = f"{self.path}: cell {cell.label!r} seed {drawn}"
            raise TableError(f"{where}: no point {point:g}; the table holds points {held}")
        return found

    # -- what a trial reports -----------------------------------------------------
    def epoch_metrics(
        self, config: TrainConfig, key: str, seed: int, epoch: float, points: Sequence[float] | None = None
    ) -> dict[str, float]:
        """One seed's metrics at ``epoch`` (0.25: a screen point) under the trainer's keys: every dev score the
        table holds for the cell, ``train/seconds``, and test (= dev) after the last epoch of a config that
        scores test; ``points``: where the trial reports (:meth:`degeneracy`)."""
        row = self.row(config, seed, epoch)
        out = {k: v for k, v in row.items() if "/dev/" in k and math.isfinite(v)}
        out.update(self.degeneracy(config, seed, epoch, points))
        # the table's seconds are cumulative; the trainer reports those of the epoch the point falls in
        before = self.row(config, seed, math.ceil(epoch) - 1)["seconds"] if epoch > 1 else 0.0
        out[SECONDS] = row["seconds"] - before
        if config.evaluate_test and epoch == self.epochs:
            prefix = f"{self.primary}/dev/"
            out.update({f"{self.primary}/test/{k[len(prefix) :]}": v for k, v in out.items() if k.startswith(prefix)})
        return out

    def degenerate_at(self, config: TrainConfig, seed: int, point: float) -> bool:
        """Whether the run replayed is degenerate at ``point``: the table's ``degenerate`` column where it has
        one (the trainer's flag, 1.0), else no better than the constant predictor on the objective (at or below
        the majority rate: a table trained before the flag was recorded), or a score that is not finite."""
        row = self.row(config, seed, point)
        if DEGENERATE in row and math.isfinite(row[DEGENERATE]):
            return row[DEGENERATE] > 0
        metric = str(self.table.meta["metric"])
        value, floor = row.get(f"{self.primary}/dev/{metric}", math.nan), self.majority.get(metric, math.nan)
        return not math.isfinite(value) or (math.isfinite(floor) and value <= floor + 1e-9)

    def degeneracy(
        self, config: TrainConfig, seed: int, point: float, points: Sequence[float] | None = None
    ) -> dict[str, float]:
        """The trainer's three flags at ``point``: degenerate there, the last point up to it that was, and the last
        that was not, over the points the trial reported up to ``point`` (``points``, its screen and epochs, as
        the trainer saw them; None: the table's whole epochs, which every trial reports)."""
        if points is None:
            points = [p for p in self.points if p == int(p)]
        seen = {p: self.degenerate_at(config, seed, p) for p in [*(p for p in points if p < point), point]}
        until = max((p for p, d in seen.items() if d), default=0.0)
        learned = max((p for p, d in seen.items() if not d), default=0.0)
        return {
            DEGENERATE: float(seen[point]),
            DEGENERATE_UNTIL: float(until),
            LEARNED_UNTIL: float(learned),
        }

    def trial_metrics(
        self,
        config: TrainConfig,
        key: str,
        seeds: Sequence[int],
        epoch: float,
        objective: str,
        points: Sequence[float] | None = None,
    ) -> dict[str, float]:
        """A trial's report of ``epoch`` over ``seeds``, as ``trainables.tune`` aggregates it (seed means and
        stds, per-seed values of the primary's scores and of ``objective``), and beside them one
        ``primary_passes``, the seeds' mean (left out where the table did not record it); ``points``: where
        the trial reports (:meth:`degeneracy`)."""
        per_seed = [self.epoch_metrics(config, key, s, epoch, points) for s in seeds]
        out = aggregate(per_seed, seeds, lambda k: seed_values_kept(k, self.primary, objective))
        passes = [self.row(config, s, epoch)[PRIMARY_PASSES] for s in seeds]
        if passes and all(math.isfinite(p) for p in passes):
            out[PRIMARY_PASSES] = sum(passes) / len(passes)
        return out

    def sleep_s(self, seeds: int) -> float:
        """A replayed trial does not sleep: its scores are looked up."""
        return 0.0

    # -- the truth ----------------------------------------------------------------
    def final_mean(self, cell: Cell, metric: str) -> float:
        """``cell``'s primary dev ``metric`` after the last epoch, mean over the table's seeds."""
        column = f"{self.primary}/dev/{metric}"
        values = [self.rows[(cell.key, s, point_key(self.epochs))].get(column, math.nan) for s in self.seeds[cell.key]]
        return sum(values) / len(values)

    def true_score(self, config: TrainConfig, metric: str, split: str = "dev") -> float:
        """The final mean of ``config``'s cell (test: the same, a table has no test scores)."""
        return self.final_mean(self.cell(config), metric)

    def best_cell(self, metric: str | None = None) -> Cell:
        """The cell with the best final mean of ``metric`` (default: the table's objective metric)."""
        metric = metric or str(self.table.meta["metric"])
        return max(self.cells.values(), key=lambda c: self.final_mean(c, metric))


def load_table_truth(path: str) -> TableTruth:
    """Read and check a table (:func:`~search.simulation.truth.table.read_table`) and index it."""
    return TableTruth.of(read_table(path))
