"""``python -m benchmarks.search_quality``: search quality against the truth (issue 18 part 3).

Each strategy (``search.simulation.strategies``: the thesis grid, random search and TPE, both with ASHA,
at K seeds and several budgets) runs ``--studies`` simulated absa studies at the full preset on the
in-process backend (``search.simulation``: the real searcher and scheduler on a simulated clock). Study
i of every strategy uses truth seed i (its seed luck and evaluation noise) and Optuna seed i, so the
strategies meet the same luck (common random numbers). Per study it records the config the study
selects (``search.simulation.selection``), its regret against the truth's best over the whole space
(``search.simulation.optimum``), the compute in seed-epochs and trial-epochs, and the selection after
every trial (best-so-far against compute). One JSON line per study goes to ``--out``; the table is
printed and ``--plot`` drawn from the same lines.

Example: ``python -m benchmarks.search_quality --studies 20`` (``--strategies grid,tpe-k3`` for some).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from search.simulation.strategies import Strategy
    from search.simulation.truth.model import Truth

HERE = Path(__file__).resolve().parent / "results"  # what the benchmarks write (benchmarks/README.md links them)
EPSILONS = (0.005, 0.01)  # 0.5 pp and 1 pp (the truths' seed sd is 1 pp)


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"


def one_study(strategy: Strategy, truth_path: str, truth: Truth, i: int, slots: int, best: float) -> dict[str, Any]:
    """One study of ``strategy`` on truth seed ``i``: its JSON line."""
    from search.simulation.scoring import regret, within
    from search.simulation.selection import final_verdict, selections
    from search.simulation.study import simulate

    started = time.perf_counter()
    cfg = strategy.config(truth_path, i, slots)
    seeded = replace(truth, seed=i)
    study = simulate(cfg, seeded, strategy.scheduler, strategy.seed_count, strategy.multivariate)
    picks = selections(study, truth)
    last = picks[-1]
    r = float(regret(best, [last.true])[0])
    wall = study.wall
    chosen = next(t for t in study.trials if t.trial_id == last.trial_id).trial_config.training()
    return {
        "strategy": strategy.name,
        "family": strategy.group,
        "search": strategy.search,
        "seeds": strategy.seeds,
        "budget": strategy.trials,
        "grace_period": strategy.grace_period,
        "reduction_factor": strategy.reduction_factor,
        "slots": slots,
        "truth": truth.name,
        "study": i,
        "trials": len(study.trials),
        "completed": sum(t.epoch >= study.plan.base.epochs for t in study.trials),
        "seed_epochs": study.seed_epochs,
        "trial_epochs": study.trial_epochs,
        "wall": round(wall, 3),  # in seed-epochs of one slot: first trial's start to last trial's end
        "slot_time": round(slots * wall, 3),  # what a cluster bills: slots held over the wall time
        "slot_use": round(study.seed_epochs / (slots * wall), 4) if wall else None,
        "selected": last.label,
        "selected_schema": chosen.sampling.schema if len(chosen.tasks) > 1 else "single-task",
        "selected_lr": chosen.lr,
        "selected_dev": float(last.dev),
        "selected_true": last.true,
        "true_best": best,
        "regret": r,
        **{f"within_{e * 100:g}pp": bool(within([r], e)[0]) for e in EPSILONS},
        "verdict": final_verdict(study, seeded),  # finalize's, on 5 fresh seeds
        "curve": [[p.spent, round(p.true, 6)] for p in picks],
        "seconds": round(time.perf_counter() - started, 3),
    }


def summary(lines: list[dict[str, Any]], grid_compute: float) -> list[dict[str, Any]]:
    """Per strategy and slot count: means with their Monte Carlo SE over studies."""
    from search.simulation.scoring import mean_se, proportion_se

    out = []
    grid = {(line["study"], line["slots"]): line for line in lines if line["family"] == "grid K=1"}  # the thesis grid
    for name, slots in dict.fromkeys((line["strategy"], line["slots"]) for line in lines):
        mine = [line for line in lines if line["strategy"] == name and line["slots"] == slots]
        compute = np.array([line["seed_epochs"] for line in mine], dtype=float)
        row = {"strategy": name, "slots": slots, "family": mine[0]["family"], "studies": len(mine)}
        row["seed_epochs"], row["seed_epochs_sd"] = (
            float(compute.mean()),
            float(compute.std(ddof=1)) if len(mine) > 1 else math.nan,
        )
        row["of_grid"] = row["seed_epochs"] / grid_compute
        row["trial_epochs"] = float(np.mean([line["trial_epochs"] for line in mine]))
        for key in ("wall", "slot_time", "slot_use"):  # lines written before slot-time have none
            row[key] = float(np.mean([line[key] for line in mine])) if all(line.get(key) for line in mine) else math.nan
        row["regret_pp"], row["regret_se_pp"] = (100 * v for v in mean_se([line["regret"] for line in mine]))
        for e in EPSILONS:
            key = f"within_{e * 100:g}pp"
            row[key], row[key + "_se"] = proportion_se([line[key] for line in mine])
        row["anneal"], row["anneal_se"] = proportion_se([line.get("selected_schema") == "anneal" for line in mine])
        row["better"], row["better_se"] = proportion_se([line.get("verdict", "").startswith("better") for line in mine])
        row["paired_pp"], row["paired_se_pp"] = paired(mine, grid)
        out.append(row)
    return out


def paired(mine: list[dict[str, Any]], grid: dict[tuple[int, int], dict[str, Any]]) -> tuple[float, float]:
    """Regret minus the grid's on the same studies (same truth and Optuna seeds) and slots, pp, mean ± SE."""
    from search.simulation.scoring import mean_se

    shared = [line for line in mine if (line["study"], line["slots"]) in grid]
    if not shared:
        return math.nan, math.nan
    diffs = [line["regret"] - grid[line["study"], line["slots"]]["regret"] for line in shared]
    return tuple(100 * v for v in mean_se(diffs))


HEAD = ("strategy", "slots", "studies", "seed-epochs (sd)", "of grid", "trial-epochs", "wall", "slot-time", "slot use")
HEAD += ("P(≤0.5 pp) ± SE", "P(≤1 pp) ± SE")
HEAD += ("regret pp ± SE", "vs grid, paired pp ± SE", "P(anneal) ± SE", 'P("better") ± SE')


SLOT_FORMATS = (("wall", ".1f"), ("slot_time", ".0f"), ("slot_use", ".2f"))


def table(rows: list[dict[str, Any]]) -> str:
    """The summary as Markdown (benchmarks/README.md's table)."""
    lines = ["| " + " | ".join(HEAD) + " |", "|---" * len(HEAD) + "|"]
    for r in rows:
        cells = [r["strategy"], r["slots"], r["studies"], f"{r['seed_epochs']:.0f} ({r['seed_epochs_sd']:.0f})"]
        cells += [f"{r['of_grid']:.0%}", f"{r['trial_epochs']:.0f}"]
        cells += ["–" if math.isnan(r[k]) else f"{r[k]:{f}}" for k, f in SLOT_FORMATS]
        cells += [f"{r[k]:.2f} ± {r[k + '_se']:.2f}" for k in ("within_0.5pp", "within_1pp")]
        cells.append(f"{r['regret_pp']:.2f} ± {r['regret_se_pp']:.2f}")
        cells.append("–" if math.isnan(r["paired_pp"]) else f"{r['paired_pp']:+.2f} ± {r['paired_se_pp']:.2f}")
        cells.append(f"{r['anneal']:.2f} ± {r['anneal_se']:.2f}")
        cells.append(f"{r['better']:.3f} ± {r['better_se']:.3f}")
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def plot(lines: list[dict[str, Any]], out: Path, grid_compute: float) -> None:
    """Left: regret of the selection so far against compute (each family's largest budget: mean ± SE over
    studies), with every budget's final regret (mean ± SE). Right: P(within ε) of every budget's selection."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from search.simulation.scoring import step_at

    rows = summary(lines, grid_compute)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    families = list(dict.fromkeys(line["family"] for line in lines))
    for colour, family in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], families):
        mine = [line for line in lines if line["family"] == family]
        biggest = max((line["seed_epochs"], line["strategy"]) for line in mine)[1]
        curves = [line for line in mine if line["strategy"] == biggest]
        xs = np.linspace(0, max(line["seed_epochs"] for line in curves), 200)
        ys = np.array([100 * (c["true_best"] - step_at(xs, *zip(*c["curve"]))) for c in curves])
        enough = np.sum(np.isfinite(ys), axis=0) >= len(curves) / 2  # most studies have selected something
        ys = ys[:, enough]
        mean, se = np.nanmean(ys, axis=0), np.nanstd(ys, axis=0, ddof=1) / np.sqrt(np.sum(np.isfinite(ys), axis=0))
        left.plot(xs[enough], mean, color=colour, label=f"{family} (curve: {biggest})")
        left.fill_between(xs[enough], mean - se, mean + se, color=colour, alpha=0.15)
        ends = [r for r in rows if r["family"] == family]
        x = [r["seed_epochs"] for r in ends]
        left.errorbar(
            x, [r["regret_pp"] for r in ends], yerr=[r["regret_se_pp"] for r in ends], fmt="o", color=colour, ms=4
        )
        for key, style in (("within_1pp", "-o"), ("within_0.5pp", ":s")):
            right.errorbar(
                x,
                [r[key] for r in ends],
                yerr=[r[key + "_se"] for r in ends],
                fmt=style,
                color=colour,
                ms=4,
                label=f"{family}, {key.split('_')[1]}" if len(families) < 8 else None,
            )
    for ax in (left, right):
        ax.axvline(grid_compute, color="grey", lw=0.8)
        ax.axvline(0.3 * grid_compute, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("compute (seed-epochs; grid = 172, dashed: 30% of it)")
    left.set_ylabel("regret of the selected config (pp of acc_4way)")
    left.set_title(
        f"regret of the selection so far: mean ± SE over {max(r['studies'] for r in rows)} studies; dots: final"
    )
    right.set_ylabel("P(selected within ε of the true best) ± SE")
    right.set_title("ε = 1 pp (solid), 0.5 pp (dotted)")
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def parser() -> argparse.ArgumentParser:
    from search.simulation.strategies import DEFAULT, FAMILIES
    from trainables.cli import ArgumentParser

    p = ArgumentParser(prog="python -m benchmarks.search_quality", description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=20, help="simulated studies per strategy")
    p.add_argument(
        "--first-study",
        type=int,
        default=0,
        help="the first study's number (truth and Optuna seed): 100 with --studies 100 adds studies 100-199 to a "
        "run of 100 (--out is appended to where this is above 0)",
    )
    p.add_argument("--truth", default="three_better", help="a built-in truth or a truth .toml file")
    p.add_argument("--strategies", default=",".join(DEFAULT), help="comma-separated families: " + ", ".join(FAMILIES))
    p.add_argument(
        "--slots",
        default="4",
        help="trials running at once in each study; several (4,8,32,64) run every study at each: wall and slot-time "
        "are in seed-epochs of one slot",
    )
    p.add_argument("--out", type=Path, default=HERE / "search_quality.jsonl")
    p.add_argument("--plot", default=str(HERE / "search_quality.png"), help="the figure ('' for none)")
    p.add_argument("--table", action="store_true", help="only print the table of the lines already in --out")
    return p


def slots_of(text: str) -> list[int]:
    """``--slots 4,8,32,64``: the slot counts, each >= 1."""
    from trainables.config import ConfigError

    try:
        counts = [int(v) for v in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise ConfigError(f"--slots {text!r}: expected slot counts >= 1, comma-separated (4 or 4,8,32,64)")
    return counts


def setting(truth_name: str, slots: int):
    """The truth file, the truth, its best config over the space, and the grid's compute (nothing stopped)."""
    from search.simulation.optimum import true_best
    from search.simulation.strategies import GRID
    from search.simulation.study import simulated_plan
    from search.simulation.truth import load_truth, resolve_truth
    from search.tracking.records import objective_metric_of
    from spaces import thesis_grid

    path = resolve_truth(truth_name)
    truth, prep = load_truth(path), simulated_plan(GRID[0].config(path, 0, slots))
    best = true_best(truth, prep.study, prep.base, objective_metric_of(prep.invocation.objective, truth.primary) or "")
    return path, truth, best, len(thesis_grid(prep.study, prep.base)) * prep.base.epochs * GRID[0].seeds


def quiet() -> None:
    """Warnings only: a study's Optuna and searcher lines, thousands per run, would bury the progress."""
    import optuna

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("search").setLevel(logging.WARNING)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # multivariate TPE


def main() -> int:
    from search.simulation.strategies import chosen
    from trainables.config import ConfigError

    args = parser().parse_args()
    if args.first_study < 0:
        raise ConfigError(f"--first-study {args.first_study}: expected >= 0")
    slot_counts = slots_of(args.slots)
    if args.studies < 1:
        raise ConfigError(f"--studies {args.studies}: expected >= 1")
    strategies = chosen(args.strategies)
    quiet()
    path, truth, best, grid_compute = setting(args.truth, slot_counts[0])
    if args.table:
        print(table(summary([json.loads(line) for line in args.out.read_text().splitlines()], grid_compute)))
        return 0
    where = f"{best.config.tasks}, {best.config.sampling.schema}, lr {best.config.lr:.3g}"
    print(f"{machine()}; truth {truth.name}: true best {best.score:.4f} ({where})", flush=True)
    lines: list[dict[str, Any]] = []
    started = time.monotonic()
    with args.out.open("a" if args.first_study else "w") as f:
        for n, strategy in enumerate(strategies, 1):
            for slots in slot_counts:
                for i in range(args.first_study, args.first_study + args.studies):
                    lines.append(one_study(strategy, path, truth, i, slots, best.score))
                    f.write(json.dumps(lines[-1]) + "\n")
                    f.flush()
                mine = [line for line in lines if line["strategy"] == strategy.name and line["slots"] == slots]
                (row,) = summary(mine, grid_compute)
                print(
                    f"[{n}/{len(strategies)} {time.monotonic() - started:.0f}s] {strategy.name} at {slots} slots: "
                    f"{row['seed_epochs']:.0f} seed-epochs, slot use {row['slot_use']:.2f}, "
                    f"regret {row['regret_pp']:.2f} ± {row['regret_se_pp']:.2f} pp, P(≤1 pp) {row['within_1pp']:.2f}",
                    flush=True,
                )
    print(table(summary(lines, grid_compute)))
    print(f"{machine()} at the end; {time.monotonic() - started:.0f}s")
    if args.plot:
        plot(lines, Path(args.plot), grid_compute)
    return 0


if __name__ == "__main__":
    from trainables.cli import run_main
    from trainables.config import ConfigError

    run_main(main, (ConfigError,))
