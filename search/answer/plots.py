"""The report's plots, as PNG files beside ``report.md`` (matplotlib, headless)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pandas as pd

from search.tracking.outcome import COMPLETED, PRUNED

logger = logging.getLogger(__name__)


def error_bars(means: pd.Series, stds: pd.Series, bounded: bool) -> list[list[float]]:
    """Asymmetric ± std bars that never leave a score's range [0, 1] (losses: [0, inf))."""
    stds = stds.fillna(0.0).clip(lower=0.0)
    low = [min(s, m) for m, s in zip(means, stds)]
    high = [min(s, 1.0 - m) if bounded else s for m, s in zip(means, stds)]
    return [[max(0.0, x) for x in low], [max(0.0, x) for x in high]]


def plots(
    table: pd.DataFrame, out: Path, objective: str, mode: str, seeds: int, majority: float | None = None
) -> list[Path]:
    """The report's PNGs: the objective per schema and per auxiliary subset, and best so far vs compute."""
    import matplotlib

    matplotlib.use("Agg")
    scored = table[table.status.isin([COMPLETED, PRUNED]) & table.objective.notna()]
    base = table[table.baseline & (table.status == COMPLETED)].objective
    baseline = float(base.iloc[0]) if len(base) else None
    paths = [
        per_group(scored, column, title, objective, seeds, baseline, majority, out)
        for column, title in (
            ("schema", "objective per sampling schema"),
            ("auxiliary", "objective per auxiliary subset"),
        )
    ]
    return paths + [best_so_far(table, objective, mode, seeds, baseline, out)]


def per_group(
    scored: pd.DataFrame,
    column: str,
    title: str,
    objective: str,
    seeds: int,
    baseline: float | None,
    majority: float | None,
    out: Path,
) -> Path:
    """Each scored trial's objective (mean ± std over seeds) by the group in ``column``."""
    import matplotlib.pyplot as plt

    bounded = "loss" not in objective  # accuracies, F1s and AUCs live in [0, 1]
    fig, ax = plt.subplots(figsize=(8, 4))
    groups = sorted(scored[column].dropna().unique())
    for status, marker, color in ((COMPLETED, "o", "C0"), (PRUNED, "x", "C3")):
        part = scored[scored.status == status]
        x = [groups.index(g) for g in part[column]]
        # mean over seeds with its sample std; pruned trials at the epoch ASHA stopped them
        ax.errorbar(
            x,
            part.objective,
            yerr=error_bars(part.objective, part.objective_std, bounded),
            fmt=marker,
            color=color,
            capsize=3,
            label=status if len(part) else None,
        )
    if baseline is not None:
        ax.axhline(baseline, color="0.4", linestyle="--", label="baseline (single task)")
    if majority is not None:
        ax.axhline(majority, color="C2", linestyle=":", label="majority rate (constant predictor)")
    ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
    ax.set_ylabel(objective)
    ax.set_title(title + f" (mean ± std over {seeds} seeds)")
    return save(fig, ax, out / f"objective_per_{column}.png")


def best_so_far(table: pd.DataFrame, objective: str, mode: str, seeds: int, baseline: float | None, out: Path) -> Path:
    """The best completed trial's objective against the seed-epochs trained so far."""
    import matplotlib.pyplot as plt

    ordered = table.sort_values("start_time")
    compute = (ordered.epochs * max(seeds, 1)).cumsum()
    best, so_far = [], -math.inf if mode == "max" else math.inf
    for status, value in zip(ordered.status, ordered.objective):
        if status == COMPLETED and value == value:
            so_far = max(so_far, value) if mode == "max" else min(so_far, value)
        best.append(so_far if math.isfinite(so_far) else math.nan)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step(compute, best, where="post", label="best completed trial")
    if baseline is not None:
        ax.axhline(baseline, color="0.4", linestyle="--", label="baseline (single task)")
    ax.set_xlabel("compute (seed-epochs trained)")
    ax.set_ylabel(f"best completed {objective}")
    ax.set_title("best so far vs compute")
    return save(fig, ax, out / "best_so_far.png")


def save(fig, ax, path: Path) -> Path:
    import matplotlib.pyplot as plt

    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
