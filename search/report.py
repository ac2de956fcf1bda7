"""``python -m search.report STUDY``: the thesis-style result table of a study, from MLflow.

Top configs by objective (mean ± std over seeds), the single-task baseline,
absolute and relative change against it, test scores of the primary task and
published results; saved as CSV and Markdown plus PNG plots, and logged to the
study's MLflow parent run.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

import pandas as pd

from search.tracking import find_parent, trial_table
from spaces import get_study
from trainables.cli import run_main, setup_logging
from trainables.config import ConfigError

logger = logging.getLogger("search.report")


def fmt(mean: float, std: float) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean:.4f} ± {std:.4f}" if std == std else f"{mean:.4f}"


def summarise(table: pd.DataFrame, study_name: str, objective: str, mode: str, top: int) -> tuple[pd.DataFrame, str]:
    """The ranked table (top configs, the baseline, published results) as a frame and as Markdown."""
    study = get_study(study_name)
    done = table[table.status == "completed"].copy()
    done = done.sort_values("objective", ascending=(mode == "min"))
    baseline = done[done.baseline]
    base = float(baseline.objective.iloc[0]) if len(baseline) else math.nan
    done["delta"] = done.objective - base
    done["delta_rel_%"] = 100 * done.delta / base if base == base and base else math.nan
    # "semeval/dev/acc_4way/mean" -> dev acc_4way, scored on test too; "train/loss/mean" -> train/loss
    name = objective[: -len("/mean")] if objective.endswith("/mean") else objective
    on_dev = name.startswith(f"{study.primary}/dev/")
    metric = name[len(f"{study.primary}/dev/"):] if on_dev else name
    test_key = f"{study.primary}/test/{metric}"
    lines = [
        f"# Study `{study_name}`: objective `{objective}` ({mode})", "",
        f"{len(table)} trials: {int((table.status == 'completed').sum())} completed, "
        f"{int((table.status == 'pruned').sum())} pruned by ASHA, {int((table.status == 'failed').sum())} failed. "
        "Scores are mean ± sample std over seeds; Δ is against the single-task baseline on dev.", "",
        f"| rank | config | {'dev ' if on_dev else ''}{metric} | Δ abs | Δ rel | test {metric if on_dev else ''} | epochs |",
        "|---|---|---|---|---|---|---|",
    ]
    shown = pd.concat([done.head(top), baseline]).drop_duplicates("canonical_key") if len(baseline) else done.head(top)
    csv_rows = []
    for _, r in shown.iterrows():
        rank = int(done.index.get_loc(r.name)) + 1 if r.name in done.index else "-"
        name = f"**baseline** {r.label}" if r.baseline else r.label
        lines.append(
            f"| {rank} | {name} | {fmt(r.objective, r.objective_std)} | {r.delta:+.4f} | {r['delta_rel_%']:+.2f}% | "
            f"{fmt(r.get(test_key, math.nan), r.get(test_key + ' std', math.nan))} | {int(r.epochs)} |"
        )
        csv_rows.append({
            "rank": rank, "source": "baseline" if r.baseline else "search", "config": r.label,
            "canonical_key": r.canonical_key, "objective": objective, "objective_mean": r.objective,
            "objective_std": r.objective_std, "delta_abs": r.delta, "delta_rel_%": r["delta_rel_%"],
            "test_metric": test_key, "test_mean": r.get(test_key, math.nan),
            "test_std": r.get(test_key + " std", math.nan), "epochs": int(r.epochs), "seeds": r.seeds,
        })
    if study.published:
        lines += ["", f"Published results on {study.primary} test (single runs, selected as their authors did):", "",
                  "| source | " + " | ".join(sorted({k for v in study.published.values() for k in v})) + " |"]
        keys = sorted({k for v in study.published.values() for k in v})
        lines.append("|---|" + "---|" * len(keys))
        for source, values in study.published.items():
            lines.append(f"| {source} | " + " | ".join(f"{values[k]:.4f}" if k in values else "–" for k in keys) + " |")
            if metric in values:
                csv_rows.append({"rank": "-", "source": "published", "config": source, "test_metric": test_key,
                                 "test_mean": values[metric]})
        if len(done):
            best = done.iloc[0]
            lines += ["", "Best config here on test: " + ", ".join(
                f"{k}={fmt(best.get(f'{study.primary}/test/{k}', math.nan), best.get(f'{study.primary}/test/{k} std', math.nan))}"
                for k in keys)]
    return pd.DataFrame(csv_rows), "\n".join(lines) + "\n"


def plots(table: pd.DataFrame, out: Path, objective: str, mode: str, seeds: int) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    scored = table[table.status.isin(["completed", "pruned"]) & table.objective.notna()]
    for column, title in (("schema", "objective per sampling schema"), ("auxiliary", "objective per auxiliary subset")):
        fig, ax = plt.subplots(figsize=(8, 4))
        groups = sorted(scored[column].dropna().unique())
        for status, marker, color in (("completed", "o", "C0"), ("pruned", "x", "C3")):
            part = scored[scored.status == status]
            x = [groups.index(g) for g in part[column]]
            # mean over seeds with its sample std; pruned trials at the epoch ASHA stopped them
            ax.errorbar(x, part.objective, yerr=part.objective_std.fillna(0), fmt=marker, color=color,
                        capsize=3, label=status if len(part) else None)
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
        ax.set_ylabel(objective)
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
        path = out / f"objective_per_{column}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    ordered = table.sort_values("start_time")
    compute = (ordered.epochs * max(seeds, 1)).cumsum()
    best, so_far = [], -math.inf if mode == "max" else math.inf
    for status, value in zip(ordered.status, ordered.objective):
        if status == "completed" and value == value:
            so_far = max(so_far, value) if mode == "max" else min(so_far, value)
        best.append(so_far if math.isfinite(so_far) else math.nan)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step(compute, best, where="post")
    ax.set_xlabel("compute (seed-epochs trained)")
    ax.set_ylabel(f"best completed {objective}")
    ax.set_title("best so far vs compute")
    fig.tight_layout()
    path = out / "best_so_far.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return paths + [path]


def build_report(study: str, tracking_uri: str, run_name: str | None = None, out_dir: str = "results",
                 top: int = 10) -> dict[str, Path]:
    from search.tracking import client as mlflow_client

    get_study(study)
    client = mlflow_client(tracking_uri)
    experiment, parent = find_parent(client, study, run_name)
    objective, mode = parent.data.params["objective"], parent.data.params.get("mode", "max")
    table = trial_table(client, experiment.experiment_id, parent)
    if table.empty:
        raise ConfigError(f"study run {parent.info.run_name} has no trials in MLflow yet")
    out = Path(out_dir) / study / parent.info.run_name
    out.mkdir(parents=True, exist_ok=True)
    ranked, markdown = summarise(table, study, objective, mode, top)
    seeds = len(parent.data.params.get("seeds", "").strip("[]").split(","))
    paths = {"csv": out / "report.csv", "markdown": out / "report.md", "trials": out / "trials.csv"}
    ranked.to_csv(paths["csv"], index=False)  # the table of report.md
    table.drop(columns=["start_time"]).to_csv(paths["trials"], index=False)  # every trial, every metric
    paths["markdown"].write_text(markdown)
    for p in plots(table, out, objective, mode, seeds):
        paths[p.stem] = p
    for p in paths.values():
        client.log_artifact(parent.info.run_id, str(p), artifact_path="report")
    if parent.info.status == "RUNNING":
        client.set_terminated(parent.info.run_id, "FINISHED")
    print(markdown)
    return paths


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m search.report", description=__doc__)
    p.add_argument("study")
    p.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    p.add_argument("--name", help="the study invocation (Tune experiment name); default: the latest")
    p.add_argument("--out", default="results", help="directory for report.csv, report.md and plots")
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args()
    setup_logging()
    from search.tracking import check_tracking_uri

    check_tracking_uri(args.tracking_uri)
    build_report(args.study, args.tracking_uri, args.name, args.out, args.top)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, ConnectionError, OSError))
