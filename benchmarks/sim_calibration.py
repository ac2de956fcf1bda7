"""``python -m benchmarks.sim_calibration``: finalize's false "better" rate, end to end, on simulated null studies.

``--table`` measures instead the calibration table of ``docs/verdict.md``: every regime of
``search.simulation.calibration.REGIMES`` (``--studies`` each) and whole studies through the in-process
simulator on the null truth and on ``benchmarks/truths/lr_matters.toml`` (``--search-studies`` each, at
30 and 64 trials, one look at 5 seeds and the looks 3 -> 5 -> 10), one JSON line per claim to ``--out``.

Each study is a whole simulated study (``search.run --simulate`` with the ``null`` truth, its own truth
seed, so each has its own seed luck and noise, and its own Optuna seed) followed by ``finalize`` on 5
fresh seeds, through Ray Tune, Optuna and MLflow, as many as ``--minutes`` allow, all in one process
and one Ray session. Both rates have the same shape (``--trials`` trials, 3 search seeds, 5 final seeds,
every trial completed: grace period = epochs), so they stand side by side: the end-to-end one here,
the pure-function one (``search.simulation.calibration``) computed beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "results"  # what the benchmarks write (benchmarks/README.md links them)


def quiet() -> None:
    """Warnings only: every simulated study's Optuna lines would bury the table."""
    import logging

    import optuna

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("search").setLevel(logging.WARNING)
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def truth_copy(folder: Path, truth: str, seed: int) -> Path:
    """The truth file with its ``seed`` (its luck and noise draws) set to ``seed``."""
    from search.simulation.truth import resolve_truth

    lines = Path(resolve_truth(truth)).read_text().splitlines()
    text = "\n".join(f"seed = {seed}" if line.startswith("seed =") else line for line in lines)
    path = folder / f"{truth}-{seed}.toml"
    path.write_text(text + "\n")
    return path


def one_study(folder: Path, truth: str, i: int, args: argparse.Namespace) -> str:
    """Search and finalize one simulated study; its headline verdict."""
    from search.answer.config import FinalizeConfig
    from search.answer.final import finalize
    from search.run import config_from_args, parser
    from search.simulation.kind import trial_kind
    from search.study.runner import run
    from trainables.config import ConfigError

    argv = ["absa", "--simulate", str(truth_copy(folder, truth, i)), "--trials", str(args.trials), "--seeds", "3"]
    argv += ["--epochs", "2", "--grace-period", "2", "--max-concurrent", str(args.slots), "--search-seed", str(i)]
    argv += ["--tracking-uri", f"sqlite:///{folder}/mlflow.db", "--optuna-storage", f"sqlite:///{folder}/optuna.db"]
    argv += ["--storage", str(folder / "ray"), "--name", f"cal-{i}", "--no-finalize", "--no-report"]
    cfg = config_from_args(parser().parse_args(argv))
    study = run(cfg, trial_kind)
    final = FinalizeConfig(
        "absa",
        study.name,
        5,
        study.plan.stores.tracking_uri,
        str(folder / "results"),
        resources=study.plan.resources,
    )
    try:
        return finalize(final, trial_kind, kind=study.plan.kind).headline.verdict
    except ConfigError as exc:  # e.g. no completed multitask trial: finalize has no comparison, no verdict
        return f"no comparison ({exc})"


TRUTHS = Path(__file__).resolve().parent / "truths"
TOP = 10  # the report's rows: the top trials by dev, and the baseline


def screen_study(i: int, trials: int) -> tuple[bool, bool]:
    """One null study through the simulator (ASHA stopping early): does its report's dev screen show
    at least one "above" among the rows shown, with Holm's step-down, and without it (each row at 5%)?"""
    from dataclasses import replace

    from search.answer import stats
    from search.answer.ranking import by_objective, versus_baseline
    from search.simulation.calibration import search_table
    from search.simulation.study import simulate
    from search.simulation.truth import load_truth, resolve_truth
    from search.study.config import SearchConfig
    from search.tracking.outcome import COMPLETED

    path = resolve_truth("null")
    cfg = SearchConfig("absa", preset="full", simulate=path, trials=trials, seeds=3, max_concurrent=8, search_seed=i)
    study = simulate(cfg, replace(load_truth(path), seed=i))
    table = search_table(study.trials, study.plan.invocation.objective, study.plan.base.epochs)
    family = sum(not r.baseline for r in table)
    done = by_objective(
        versus_baseline([r for r in table if r.status == COMPLETED], study.plan.invocation.mode, family), "max"
    )
    shown = done[:TOP]
    base = next(x.trial for x in done if x.trial.baseline).objective_seeds
    unadjusted = False
    for r in (x.trial for x in shown if not x.trial.baseline):
        mine = r.objective_seeds
        seeds = sorted(set(mine) & set(base))
        unadjusted |= stats.verdict(stats.paired_difference([mine[s] for s in seeds], [base[s] for s in seeds])) == (
            stats.BETTER
        )
    return any(x.beyond_noise == "above" for x in shown), unadjusted


def screen(args: argparse.Namespace) -> int:
    """The share of null reports with at least one false "above" at 30 and 64 trials, one JSON line each."""
    import os

    with args.out.open("a") as f:
        for trials in (30, 64):
            started = time.monotonic()
            found = [screen_study(args.first_study + i, trials) for i in range(args.search_studies)]
            n = len(found)
            line = {"screen": "holm", "trials": trials, "studies": n, "date": time.strftime("%Y-%m-%d %H:%M")}
            for name, hits in (("holm", sum(h for h, _ in found)), ("unadjusted", sum(u for _, u in found))):
                rate = hits / n
                line |= {f"{name}_any_above": hits, f"{name}_rate": round(rate, 4)}
                line[f"{name}_se"] = round(math.sqrt(max(rate * (1 - rate), 0.05 * 0.95 / n) / n), 4)
            line |= {"seconds": round(time.monotonic() - started), "load": round(os.getloadavg()[0], 1)}
            f.write(json.dumps(line) + "\n")
            print(json.dumps(line), flush=True)
    return 0


def table(args: argparse.Namespace) -> int:
    """The calibration table: one JSON line per regime and claim, appended to ``args.out`` as measured."""
    import os

    from search.simulation.calibration import REGIMES, regime_rates, truth_rates

    regimes = [r for r in REGIMES if not args.only or r in args.only.split(",")]
    with args.out.open("a") as f:
        for name in regimes:
            started = time.monotonic()
            for line in regime_rates(name, args.studies, seed=args.first_study):
                line |= {"date": time.strftime("%Y-%m-%d %H:%M"), "seconds": round(time.monotonic() - started)}
                line["load"] = round(os.getloadavg()[0], 1)
                f.write(json.dumps(line) + "\n")
                f.flush()
                print(json.dumps(line), flush=True)
        for truth in ("null", str(TRUTHS / "lr_matters.toml")) if args.search_studies else ():
            for trials, looks in ((30, (5,)), (64, (5,)), (30, (3, 5, 10)), (12, (5,))):
                started = time.monotonic()
                for line in truth_rates(truth, args.search_studies, looks, trials, args.first_study):
                    line |= {"trials": trials, "looks": list(looks), "date": time.strftime("%Y-%m-%d %H:%M")}
                    line |= {"seconds": round(time.monotonic() - started), "load": round(os.getloadavg()[0], 1)}
                    f.write(json.dumps(line) + "\n")
                    f.flush()
                    print(json.dumps(line), flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.sim_calibration", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="start no study after this long")
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--slots", type=int, default=16)
    p.add_argument("--truth", default="null")
    p.add_argument(
        "--first-study", type=int, default=0, help="truth and Optuna seed of the first study: a later run goes on"
    )
    p.add_argument("--out", type=Path, default=None, help="default: results/sim_calibration.json (--table: .jsonl)")
    p.add_argument("--table", action="store_true", help="the calibration table of docs/verdict.md instead")
    p.add_argument("--studies", type=int, default=5000, help="--table: simulated studies per regime")
    p.add_argument("--search-studies", type=int, default=300, help="--table: studies through the search per row")
    p.add_argument("--only", default="", help="--table: these regimes only (comma-separated)")
    p.add_argument("--screen", action="store_true", help="the ranking's dev screen on null reports instead")
    args = p.parse_args()
    if args.screen:
        quiet()
        args.out = args.out or HERE / "sim_screen.jsonl"
        return screen(args)
    if args.table:
        quiet()
        args.out = args.out or HERE / "sim_calibration_table.jsonl"
        return table(args)
    args.out = args.out or HERE / "sim_calibration.json"
    from search.answer.stats import BETTER
    from search.simulation.calibration import regime_rates
    from trainables.cli import setup_logging

    setup_logging(False)
    verdicts: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sim-cal-") as tmp:
        while time.monotonic() - started < 60 * args.minutes:
            verdicts.append(one_study(Path(tmp), args.truth, args.first_study + len(verdicts), args))
            print(f"study {len(verdicts)}: {verdicts[-1]}", flush=True)
    n, hits = len(verdicts), sum(v == BETTER for v in verdicts)
    rate = hits / n
    se = math.sqrt(max(rate * (1 - rate), 0.025 * 0.975) / n)  # at 0 hits, the SE a 2.5% rate would have
    pure_line = regime_rates("null", 2000)[0]  # claim (a), 30 trials per study
    pure, pure_se = pure_line["rate"], pure_line["se"]
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "studies": n,
        "first_study": args.first_study,
        "minutes": round((time.monotonic() - started) / 60, 1),
        "better": hits,
        "end_to_end_rate": rate,
        "end_to_end_se": round(se, 4),
        "pure_function_rate": pure,
        "pure_function_se": round(pure_se, 4),
        "verdicts": verdicts,
    }
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f'null studies end to end: "better" in {hits}/{n} = {rate:.3f} ± {se:.3f} (MC SE); '
        f"pure-function calibration ({args.trials} trials per study): {pure:.4f} ± {pure_se:.4f} over 2000"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
