"""The report's plots, as PNG files beside ``report.md`` (matplotlib, headless): the objective per
schema and per auxiliary subset, the best so far against compute, and what optuna-dashboard and Tune
users look at first: parameter importances (Optuna's fANOVA), parallel coordinates of the completed
trials, and every trial's learning curve (per epoch, and per pass over the primary's training rows where
the study logged them).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import optuna
import pandas as pd

from search.tracking import records as rec
from search.tracking.outcome import COMPLETED, FAILED, PRUNED

logger = logging.getLogger(__name__)


def error_bars(means: pd.Series, stds: pd.Series, bounded: bool) -> list[list[float]]:
    """Asymmetric ± std bars that never leave a score's range [0, 1] (losses: [0, inf))."""
    stds = stds.fillna(0.0).clip(lower=0.0)
    low = [min(s, m) for m, s in zip(means, stds)]
    high = [min(s, 1.0 - m) if bounded else s for m, s in zip(means, stds)]
    return [[max(0.0, x) for x in low], [max(0.0, x) for x in high]]


# a trial's dimensions as the trial table holds them: (column, log scale); categorical where text
DIMENSIONS = (("auxiliary", False), ("schema", False), ("exponent", False), ("anneal_c", False), ("lr", True))
DIMENSIONS += (("warmup", False), ("batch_size", False))


def plots(
    table: pd.DataFrame,
    out: Path,
    objective: str,
    mode: str,
    seeds: int,
    majority: float | None = None,
    curves: dict[str, list[Point]] | None = None,
) -> list[Path]:
    """The report's PNGs: the objective per schema and per auxiliary subset, best so far vs compute,
    parameter importances, parallel coordinates, and (given ``curves``) the learning curves."""
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
    paths.append(best_so_far(table, objective, mode, seeds, baseline, out))
    completed = table[(table.status == COMPLETED) & table.objective.notna()]
    left = len(table) - len(completed)  # stopped early or failed: no final score to compare
    of = f" of {len(table)} ({left} stopped or failed left out)" if left else ""
    made = (importances(completed, objective, mode, out, of), parallel(completed, objective, out, of))
    paths += [p for p in made if p]
    if curves:
        paths.append(learning_curves(table, curves, objective, out))
    return paths


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
    ax.set_title(title + (f" (mean ± std over {seeds} seeds)" if seeds > 1 else " (one seed per trial)"))
    return save(fig, ax, out / f"objective_per_{column}.png")


def best_so_far(table: pd.DataFrame, objective: str, mode: str, seeds: int, baseline: float | None, out: Path) -> Path:
    """The best completed trial's objective against the seed-epochs trained so far (each trial's own: a seed
    schedule's and a screen point's; a table written without them: epochs x seeds)."""
    import matplotlib.pyplot as plt

    ordered = table.sort_values("start_time")
    spent = ordered.seed_epochs if "seed_epochs" in ordered else ordered.epochs * max(seeds, 1)
    compute = spent.cumsum()
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


def varying(trials: pd.DataFrame) -> list[tuple[str, bool]]:
    """The dimensions every one of ``trials`` has a value of, and that differ between them."""
    return [
        (c, log)
        for c, log in DIMENSIONS
        if c in trials and trials[c].notna().all() and trials[c].astype(str).nunique() > 1
    ]


def importances(completed: pd.DataFrame, objective: str, mode: str, out: Path, of: str = "") -> Path | None:
    """fANOVA importances (Optuna's evaluator) of the dimensions the completed trials differ in; the
    table's columns, so a single-task trial counts as schema ``single`` and auxiliary ``none``. ``of``: what the
    title adds about the trials left out (a stopped trial's last value is no final score to compare)."""
    import matplotlib.pyplot as plt

    dims = varying(completed)
    if len(completed) < 3 or not dims:
        logger.info("no importance plot: %d completed trials differ in %d dimensions", len(completed), len(dims))
        return None
    study = optuna.create_study(direction="maximize" if mode == "max" else "minimize")
    distributions = {
        c: optuna.distributions.CategoricalDistribution(sorted(completed[c].astype(str).unique()))
        if not pd.api.types.is_numeric_dtype(completed[c])
        else optuna.distributions.FloatDistribution(float(completed[c].min()), float(completed[c].max()), log=log)
        for c, log in dims
    }
    for _, row in completed.iterrows():
        params = {c: float(row[c]) if pd.api.types.is_numeric_dtype(completed[c]) else str(row[c]) for c, _ in dims}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions, value=row.objective))
    evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)
    found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(found) + 1.5))
    names = list(found)[::-1]
    ax.barh(names, [found[n] for n in names], color="C0")
    ax.set_xlabel("importance (share of the objective's variance, fANOVA)")
    ax.set_title(f"parameter importances over {len(completed)} completed trials{of}", fontsize=9)
    ax.set_xlim(0, 1)
    return save(fig, ax, out / "param_importances.png", legend=False)


def parallel(completed: pd.DataFrame, objective: str, out: Path, of: str = "") -> Path | None:
    """Parallel coordinates of the completed trials: an axis per dimension they differ in (log10 of
    log-scale ones; categories in sorted order), then the objective; lines coloured by the objective."""
    import matplotlib.pyplot as plt

    dims = varying(completed)
    if len(completed) < 2 or not dims:
        return None
    axes, ticks = [], []
    for c, log in dims:
        values = completed[c]
        if not pd.api.types.is_numeric_dtype(values):
            levels = sorted(values.astype(str).unique())
            axes.append(values.astype(str).map(levels.index).astype(float).to_numpy())
            ticks.append(levels)
        else:
            axes.append(np.log10(values.to_numpy(float)) if log else values.to_numpy(float))
            ticks.append(None)
    axes.append(completed.objective.to_numpy(float))
    ticks.append(None)
    names = [c + (" (log10)" if log else "") for c, log in dims] + ["objective"]
    data = np.vstack(axes)  # (dimensions, trials)
    low, high = data.min(axis=1, keepdims=True), data.max(axis=1, keepdims=True)
    scaled = (data - low) / np.where(high > low, high - low, 1.0)
    fig, ax = plt.subplots(figsize=(2.2 * len(names) + 1, 4.5))
    colours = plt.cm.viridis(scaled[-1])
    for i in range(scaled.shape[1]):
        ax.plot(range(len(names)), scaled[:, i], color=colours[i], alpha=0.8)
    for x, (levels, lo, hi) in enumerate(zip(ticks, low[:, 0], high[:, 0])):
        ax.axvline(x, color="0.6", linewidth=0.8)
        labels = levels if levels is not None else [f"{lo:.3g}", f"{hi:.3g}"]
        positions = np.linspace(0, 1, len(labels)) if levels is not None else [0, 1]
        for y, label in zip(positions, labels):
            ax.annotate(str(label), (x, y), xytext=(3, 0), textcoords="offset points", fontsize=7, va="center")
    ax.set_xticks(range(len(names)), names, rotation=15)
    ax.set_yticks([])
    ax.set_title(f"parallel coordinates of {scaled.shape[1]} completed trials{of} (colour: {objective})", fontsize=9)
    return save(fig, ax, out / "parallel_coordinates.png", legend=False)


class Point(NamedTuple):
    """One result on a trial's learning curve: where it fell (epochs), its objective, and the passes over the
    primary's training rows the trial had made there (NaN in a study from before they were logged)."""

    epoch: float
    value: float
    passes: float = math.nan


def learning_curves(
    table: pd.DataFrame, curves: dict[str, list[Point]], objective: str, out: Path, named: int = 8
) -> Path:
    """Every trial's objective per epoch (``curves``: run id -> its points) and, where the results carry
    them, beside it per pass over the primary's training rows: at equal epochs a multitask trial has seen a
    fraction of the primary's data the single-task baseline has (``trainables.exposure``). Completed trials
    in colour (each named in the legend where there are at most ``named``, else one colour), pruned ones
    faded, the baseline dashed; failed trials left out."""
    import matplotlib.pyplot as plt

    shown = table[(table.status != FAILED) & table.run_id.isin(list(curves))]
    points = {run: sorted(Point(*p) for p in curve) for run, curve in curves.items()}
    exposed = any(not math.isnan(p.passes) for run in shown.run_id for p in points[run])
    panels = ("epoch", "passes") if exposed else ("epoch",)
    fig, axes = plt.subplots(1, len(panels), figsize=(8 + 5 * (len(panels) - 1), 4.5), sharey=True, squeeze=False)
    each = (shown.status == COMPLETED).sum() <= named
    for ax, x in zip(axes[0], panels):
        curve_panel(ax, shown, points, x, each)
    axes[0][0].set_xlabel("epoch")
    axes[0][0].set_ylabel(objective)
    axes[0][0].xaxis.get_major_locator().set_params(integer=True)
    axes[0][0].set_title(f"learning curves of {len(shown)} trials: objective per epoch")
    if exposed:
        axes[0][1].set_xlabel("passes over the primary's training rows")
        axes[0][1].set_title("the same, per pass over the primary's data")
    ax = axes[0][-1]
    if not each:
        ax.plot([], [], color="C0", marker="o", label="completed")
    ax.plot([], [], color="0.5", alpha=0.3, marker=".", label="stopped early (pruned)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, ax, out / "learning_curves.png", legend=False)


def curve_panel(ax, shown: pd.DataFrame, points: dict[str, list[Point]], x: str, each: bool) -> None:
    """The trials' curves against ``x`` (``epoch`` or ``passes``; a point without passes is left out there)."""
    for _, row in shown.iterrows():
        drawn = [(getattr(p, x), p.value) for p in points[row.run_id] if not math.isnan(getattr(p, x))]
        if not drawn:
            continue
        xs, values = zip(*drawn)
        if row.baseline:
            ax.plot(xs, values, "k--", marker="o", label=row.label, zorder=3)
        elif row.status == COMPLETED:
            style = {"label": row.label} if each else {"color": "C0", "alpha": 0.7}
            ax.plot(xs, values, marker="o", **style)
        else:
            ax.plot(xs, values, color="0.5", alpha=0.3, marker=".")


def objective_curves(client, table: pd.DataFrame) -> dict[str, list[Point]]:
    """Each trial run's ``objective`` per epoch, from the MLflow ``client`` (the step is the epoch; a result at
    step 0 is a screen point inside the first epoch, placed where ``screen/epoch`` says), with the
    ``primary_passes`` logged at the same step where there are any."""
    curves = {}
    for run_id in table.run_id:
        points = [(float(m.step), float(m.value)) for m in client.get_metric_history(run_id, rec.OBJECTIVE)]
        passes = {float(m.step): float(m.value) for m in client.get_metric_history(run_id, rec.PASSES)}
        screened = any(step == 0 for step, _ in points)
        screen = [m.value for m in client.get_metric_history(run_id, rec.SCREEN_EPOCH)] if screened else []
        curves[run_id] = [
            Point(screen[-1] if step == 0 and screen else step, value, passes.get(step, math.nan))
            for step, value in points
        ]
    return curves


def save(fig, ax, path: Path, legend: bool = True) -> Path:
    import matplotlib.pyplot as plt

    if legend:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
