"""``python -m search.report STUDY``: the thesis-style result table of a study, from MLflow.

Top configs by objective (mean ± std over seeds), the single-task baseline,
absolute and relative change against it, test scores of the primary task and
published results; saved as CSV and Markdown plus PNG plots, and logged to the
study's MLflow parent run.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from search import stats
from search.config import Invocation, SearchConfig
from search.tracking import find_parent, trial_table
from spaces import get_study
from trainables.cli import ArgumentParser, run_main, setup_logging
from trainables.config import ConfigError, TrainConfig

logger = logging.getLogger("search.report")


def fmt(mean: float, std: float) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean:.4f} ± {std:.4f}" if std == std else f"{mean:.4f}"


@dataclass(frozen=True)
class Context:
    """What the ranking is read against: the preset's scope, the majority floor, the final table."""

    preset_note: str = ""
    majority: dict[str, float] = field(default_factory=dict)  # dev metric -> constant predictor's score
    final_markdown: str = ""
    preset_lr: float | None = None  # the baseline's lr unless the study's lr range moved it


def versus_baseline(done: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Δ against the baseline per trial: absolute, relative (withheld near zero) and paired over seeds."""
    from search.finalize import per_seed

    done = done.copy()
    baseline = done[done.baseline]
    base = float(baseline.objective.iloc[0]) if len(baseline) else math.nan
    base_seeds = per_seed(baseline.iloc[0], "objective") if len(baseline) else {}
    done["delta"] = done.objective - base
    done["delta_rel_%"] = [100 * stats.relative_change(d, base) for d in done.delta]
    lows, highs, beyond = [], [], []
    for _, r in done.iterrows():
        mine = per_seed(r, "objective")
        shared = sorted(set(mine) & set(base_seeds))
        d = stats.paired_difference([mine[s] for s in shared], [base_seeds[s] for s in shared])
        lows.append(d.low)
        highs.append(d.high)
        beyond.append(
            "–"
            if r.baseline
            else f"n={d.n}: too few"
            if d.n < stats.MIN_PAIRS
            else "yes"
            if stats.exceeds_noise(d, mode)
            else "no"
        )
    done["delta_low"], done["delta_high"], done["beyond_noise"] = lows, highs, beyond
    return done


def baseline_lr(lr: float, preset_lr: float | None) -> str:
    """The baseline's learning rate and where it comes from: the thesis, the preset, or the lr range."""
    thesis = TrainConfig.lr
    if preset_lr is not None and not math.isclose(lr, preset_lr, rel_tol=1e-3):  # the table holds 4 digits
        source = "the thesis's" if math.isclose(preset_lr, thesis, rel_tol=1e-3) else f"the thesis's is {thesis:g}"
        return (
            f"The baseline trains with lr {lr:g}: moved into the study's lr range from the preset's "
            f"{preset_lr:g} ({source})."
        )
    if math.isclose(lr, thesis, rel_tol=1e-3):
        return f"The baseline trains with lr {lr:g} (the thesis's)."
    return f"The baseline trains with lr {lr:g}, the preset's, not the thesis's {thesis:g}."


def summarise(
    table: pd.DataFrame, study_name: str, objective: str, mode: str, top: int, context: Context = Context()
) -> tuple[pd.DataFrame, str]:
    """The ranked table (top configs, the baseline, published results) as a frame and as Markdown."""
    study = get_study(study_name)
    done = versus_baseline(table[table.status == "completed"], mode).sort_values("objective", ascending=(mode == "min"))
    baseline = done[done.baseline]
    # "semeval/dev/acc_4way/mean" -> dev acc_4way, scored on test too; "train/loss/mean" -> train/loss
    name = objective[: -len("/mean")] if objective.endswith("/mean") else objective
    on_dev = name.startswith(f"{study.primary_name}/dev/")
    metric = name[len(f"{study.primary_name}/dev/") :] if on_dev else name
    test_key = f"{study.primary_name}/test/{metric}"
    seeds = int(table.seeds.map(lambda s: len(str(s).split(","))).max()) if len(table) else 0
    lines = [f"# Study `{study_name}`: objective `{objective}` ({mode})", ""]
    if context.preset_note:
        lines += [f"*{context.preset_note}*", ""]
    lines += [context.final_markdown, ""] if context.final_markdown else []
    lines += [
        "## Search ranking (dev)",
        "",
        f"{len(table)} trials: {int((table.status == 'completed').sum())} completed, "
        f"{int((table.status == 'pruned').sum())} pruned by ASHA, {int((table.status == 'failed').sum())} failed. "
        f"Scores are mean ± sample std over {seeds} seeds; Δ is against the single-task baseline on dev, with the "
        f'{stats.METHOD} interval of the per-seed differences; "beyond noise" says whether that interval excludes '
        f"zero (it takes {stats.MIN_PAIRS} seeds or more). Relative Δ is not shown where the baseline is near zero.",
    ]
    # the floor of the objective's metric, or of the study's own where the objective is not a dev score
    floor_metric = metric if on_dev else study.metric
    if len(baseline) and context.majority.get(floor_metric) is not None:
        floor = context.majority[floor_metric]
        base = float(baseline.iloc[0].get(f"{study.primary_name}/dev/{floor_metric}", math.nan))
        where = "above" if base > floor else "NOT above"
        lines += [
            "",
            f"Majority rate (a constant predictor: each aspect's most frequent polarity) on this dev set: "
            f"{floor_metric} = {floor:.4f}; the baseline's dev {floor_metric} {base:.4f} is {where} it.",
        ]
    if len(baseline):
        lines += ["", baseline_lr(float(baseline.lr.iloc[0]), context.preset_lr)]
    lines += [
        "",
        f"| rank | trial | {'dev ' if on_dev else ''}{metric} | Δ abs [95% CI] | beyond noise | Δ rel "
        f"| test {metric if on_dev else ''} | epochs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    shown = pd.concat([done.head(top), baseline]).drop_duplicates("canonical_key") if len(baseline) else done.head(top)
    csv_rows = []
    for _, r in shown.iterrows():
        rank = int(done.index.get_loc(r.name)) + 1 if r.name in done.index else "-"
        label = f"**{r.label}**" if r.baseline else r.label
        interval = "" if r.delta_low != r.delta_low else f" [{r.delta_low:+.4f}, {r.delta_high:+.4f}]"
        rel = "–" if r["delta_rel_%"] != r["delta_rel_%"] else f"{r['delta_rel_%']:+.2f}%"
        lines.append(
            f"| {rank} | {label} | {fmt(r.objective, r.objective_std)} | {r.delta:+.4f}{interval} | {r.beyond_noise} | "
            f"{rel} | {fmt(r.get(test_key, math.nan), r.get(test_key + ' std', math.nan))} | {int(r.epochs)} |"
        )
        csv_rows.append(
            {
                "rank": rank,
                "source": "baseline" if r.baseline else "search",
                "config": r.label,
                "canonical_key": r.canonical_key,
                "objective": objective,
                "objective_mean": r.objective,
                "objective_std": r.objective_std,
                "delta_abs": r.delta,
                "delta_low": r.delta_low,
                "delta_high": r.delta_high,
                "beyond_noise": r.beyond_noise,
                "delta_rel_%": r["delta_rel_%"],
                "test_metric": test_key,
                "test_mean": r.get(test_key, math.nan),
                "test_std": r.get(test_key + " std", math.nan),
                "epochs": int(r.epochs),
                "seeds": r.seeds,
            }
        )
    if study.published:
        keys = sorted({k for v in study.published.values() for k in v})
        lines += [
            "",
            f"Published results on {study.primary_name} test (single runs, selected as their authors did):",
            "",
            "| source | " + " | ".join(keys) + " |",
            "|---|" + "---|" * len(keys),
        ]
        for source, values in study.published.items():
            lines.append(f"| {source} | " + " | ".join(f"{values[k]:.4f}" if k in values else "–" for k in keys) + " |")
            if metric in values:
                csv_rows.append(
                    {
                        "rank": "-",
                        "source": "published",
                        "config": source,
                        "test_metric": test_key,
                        "test_mean": values[metric],
                    }
                )
    return pd.DataFrame(csv_rows), "\n".join(lines) + "\n"


def error_bars(means: pd.Series, stds: pd.Series, bounded: bool) -> list[list[float]]:
    """Asymmetric ± std bars that never leave a score's range [0, 1] (losses: [0, inf))."""
    stds = stds.fillna(0.0).clip(lower=0.0)
    low = [min(s, m) for m, s in zip(means, stds)]
    high = [min(s, 1.0 - m) if bounded else s for m, s in zip(means, stds)]
    return [[max(0.0, x) for x in low], [max(0.0, x) for x in high]]


def plots(
    table: pd.DataFrame, out: Path, objective: str, mode: str, seeds: int, majority: float | None = None
) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    bounded = "loss" not in objective  # accuracies, F1s and AUCs live in [0, 1]
    scored = table[table.status.isin(["completed", "pruned"]) & table.objective.notna()]
    base = table[table.baseline & (table.status == "completed")].objective
    for column, title in (("schema", "objective per sampling schema"), ("auxiliary", "objective per auxiliary subset")):
        fig, ax = plt.subplots(figsize=(8, 4))
        groups = sorted(scored[column].dropna().unique())
        for status, marker, color in (("completed", "o", "C0"), ("pruned", "x", "C3")):
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
        if len(base):
            ax.axhline(float(base.iloc[0]), color="0.4", linestyle="--", label="baseline (single task)")
        if majority is not None:
            ax.axhline(majority, color="C2", linestyle=":", label="majority rate (constant predictor)")
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
        ax.set_ylabel(objective)
        ax.set_title(title + f" (mean ± std over {seeds} seeds)")
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
    ax.step(compute, best, where="post", label="best completed trial")
    if len(base):
        ax.axhline(float(base.iloc[0]), color="0.4", linestyle="--", label="baseline (single task)")
    ax.set_xlabel("compute (seed-epochs trained)")
    ax.set_ylabel(f"best completed {objective}")
    ax.set_title("best so far vs compute")
    ax.legend()
    fig.tight_layout()
    path = out / "best_so_far.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return paths + [path]


def context_of(client, study: str, parent, final=None) -> Context:
    """The preset's scope, the majority floor (parent metrics ``majority/dev/...``) and the final table
    (given, or the one an earlier finalize logged as ``report/final.md``)."""
    metrics = parent.data.metrics
    try:
        preset = get_study(study).preset(Invocation.from_params(parent.data.params).preset)
        note, preset_lr = preset.note, preset.lr or TrainConfig.lr
    except ConfigError:
        note, preset_lr = "", None
    majority = {k[len("majority/dev/") :]: v for k, v in metrics.items() if k.startswith("majority/dev/")}
    final_markdown = final.markdown() if final is not None else ""
    if not final_markdown and "final_verdict" in parent.data.tags:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            try:
                final_markdown = Path(client.download_artifacts(parent.info.run_id, "report/final.md", tmp)).read_text()
            except Exception:  # an older study, or finalize interrupted before writing it
                final_markdown = ""
    return Context(note, majority, final_markdown, preset_lr)


def build_report(
    study: str,
    tracking_uri: str,
    run_name: str | None = None,
    out_dir: str = "results",
    top: int = 10,
    final=None,
    echo: bool = True,
) -> dict[str, Path]:
    from search.tracking import client as mlflow_client

    get_study(study)
    client = mlflow_client(tracking_uri)
    experiment, parent = find_parent(client, study, run_name)
    invocation = Invocation.from_params(parent.data.params)
    objective, mode = invocation.objective, invocation.mode
    table = trial_table(client, experiment.experiment_id, parent)
    if table.empty:
        raise ConfigError(f"study run {parent.info.run_name} has no trials in MLflow yet")
    out = Path(out_dir) / study / parent.info.run_name
    out.mkdir(parents=True, exist_ok=True)
    context = context_of(client, study, parent, final)
    ranked, markdown = summarise(table, study, objective, mode, top, context)
    seeds = len(invocation.seeds)
    paths = {"csv": out / "report.csv", "markdown": out / "report.md", "trials": out / "trials.csv"}
    study_metric = objective[: -len("/mean")].rpartition("/")[2] if objective.endswith("/mean") else ""
    figures = plots(
        table, out, objective, mode, seeds, context.majority.get(study_metric) if "/dev/" in objective else None
    )
    markdown += "\n## Plots\n\n" + "\n".join(f"![{p.stem.replace('_', ' ')}]({p.name})" for p in figures) + "\n"
    ranked.to_csv(paths["csv"], index=False)  # the table of report.md
    table.drop(columns=["start_time"]).to_csv(paths["trials"], index=False)  # every trial, every metric
    paths["markdown"].write_text(markdown)
    if final is not None:
        from search.finalize import final_frame

        paths["final"] = out / "final.csv"
        final_frame(final).to_csv(paths["final"], index=False)
        paths["final_markdown"] = out / "final.md"
        paths["final_markdown"].write_text(final.markdown())
    for p in figures:
        paths[p.stem] = p
    for p in paths.values():
        client.log_artifact(parent.info.run_id, str(p), artifact_path="report")
    if parent.info.status == "RUNNING":
        client.set_terminated(parent.info.run_id, "FINISHED")
    if echo:
        print(markdown)
    print(f"report written to {out.resolve()}: {', '.join(sorted(p.name for p in paths.values()))}")
    return paths


def main() -> int:
    p = ArgumentParser(prog="python -m search.report", description=__doc__)
    p.add_argument("study", help="a built-in study or a .toml study file")
    p.add_argument("--tracking-uri", default=SearchConfig.tracking_uri)
    p.add_argument("--name", help="the study invocation (Tune experiment name); default: the latest")
    p.add_argument("--out", default="results", help="directory for report.csv, report.md and plots")
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args()
    setup_logging()
    from search.tracking import check_tracking_uri

    check_tracking_uri(args.tracking_uri)
    build_report(get_study(args.study).name, args.tracking_uri, args.name, args.out, args.top)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, ConnectionError, OSError))
