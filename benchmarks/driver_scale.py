"""``python -m benchmarks.driver_scale``: the driver's cost of a study as its trials grow, in process.

The in-process backend (:mod:`search.simulation.backend`) drives the study's real searcher (Optuna, in memory) and
real scheduler through the calls Ray Tune's controller makes, on a simulated clock, with no Ray actors and no
MLflow: what is left is the driver's own work per trial (suggesting, scheduling, bookkeeping). Each size runs in a
fresh process, so its peak memory is its own. Per size it records:

- driver CPU seconds, per trial, and the process's peak resident memory;
- the searcher's suggest time (mean of the first and of the last 100 suggestions);
- slot use in simulated time: seed-epochs x seconds per seed-epoch / (slots x the study's makespan), and both
  sides of it (the seed-epochs, the makespan in seed-epochs of one slot): a strategy that trains more per trial
  fills more of its slots and still takes longer.

``--window`` sets how many finished trials TPE models (:mod:`search.study.recent`; 0: every one, TPE alone).
``--quality N`` instead runs N studies of each size twice, with that window and without, each study's truth and
search seed the same in both, and records what the window costs: the mean true score of the selected config (and
the paired difference with its standard error), and the driver CPU of each.
What it cannot tell: the cost of Ray's actors, Tune's experiment-state saves and MLflow's writes, which
``benchmarks.sim_cost`` measures through the real stack (at the sizes this machine can hold).
Example: ``python -m benchmarks.driver_scale --trials 1000 3000 10000 --slots 256``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.rows import append_row
from search.study.recent import RECENT_TRIALS

HERE = Path(__file__).resolve().parent / "results"
UNBOUNDED = 10**9  # a window no study fills: TPE over every finished trial (--window 0)


def last_tenth(cpu_after_suggestions: list[float], cpu_end: float, trials: int) -> float | None:
    """ms of driver CPU a trial over the study's last tenth of trials (from the suggestion that created the first
    of them to the study's end): what a trial costs at the study's size, without the first trials (a window not
    yet full, cells with nothing to model) in the average. One suggestion a trial (the searcher's, metered)."""
    first = int(0.9 * trials)
    if trials < 10 or len(cpu_after_suggestions) <= first:
        return None
    return round(1000 * (cpu_end - cpu_after_suggestions[first]) / (trials - first), 1)


def one(trials: int, slots: int, truth: str, search: str, window: int, seed: int) -> dict[str, Any]:
    """One study in this process: its figures."""
    from benchmarks.sim_cost import Meter
    from search.simulation.study import simulate
    from search.simulation.truth import load_truth, resolve_truth
    from search.study.config import SearchConfig
    from search.study.searcher import CanonicalOptunaSearch

    path = resolve_truth(truth)
    cfg = SearchConfig("absa", simulate=str(path), trials=trials, max_concurrent=slots, search=search, search_seed=seed)
    suggest = Meter(CanonicalOptunaSearch, "suggest")
    cpu0, started = time.process_time(), time.perf_counter()
    model = load_truth(path)
    study = simulate(cfg, model, window=window or UNBOUNDED)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - started
    calls = [seconds for _, seconds in suggest.calls]
    return {
        "trials": len(study.trials),
        "slots": slots,
        "search": study.plan.strategy.name,
        "window": window,
        "driver_cpu_s": round(cpu, 1),
        "cpu_ms_per_trial": round(1000 * cpu / len(study.trials), 1),
        "cpu_ms_per_trial_last_tenth": last_tenth(suggest.cpu_after, cpu0 + cpu, len(study.trials)),
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "suggest_ms_first_100": round(1000 * sum(calls[:100]) / max(1, len(calls[:100])), 1),
        "suggest_ms_last_100": round(1000 * sum(calls[-100:]) / max(1, len(calls[-100:])), 1),
        "slot_use": round(study.seed_epochs / (slots * study.wall), 3) if study.wall else None,
        # what the slot use is a ratio of: the compute, and the wall time in seed-epochs of one slot (slot-time:
        # slots x wall, what a cluster bills)
        "seed_epochs": round(study.seed_epochs, 1),
        "wall_seed_epochs": round(study.wall, 2),
    }


def quality(trials: int, slots: int, truth: str, search: str, window: int, studies: int) -> dict[str, Any]:
    """``studies`` paired studies with ``window`` and without: the selected config's true score, the CPU."""
    from dataclasses import replace

    import numpy as np

    from search.simulation.selection import selections
    from search.simulation.study import simulate
    from search.simulation.truth import load_truth, resolve_truth
    from search.study.config import SearchConfig

    path = resolve_truth(truth)
    scores: dict[int, list[float]] = {window: [], UNBOUNDED: []}
    cpu: dict[int, float] = {window: 0.0, UNBOUNDED: 0.0}
    for i in range(studies):
        seeded = replace(load_truth(path), seed=i)
        cfg = SearchConfig(
            "absa", simulate=str(path), trials=trials, max_concurrent=slots, search=search, search_seed=i
        )
        for w in scores:
            started = time.process_time()
            study = simulate(cfg, seeded, window=w)
            cpu[w] += time.process_time() - started
            scores[w].append(selections(study, seeded)[-1].true)
    diff = np.array(scores[window]) - np.array(scores[UNBOUNDED])
    return {
        "trials": trials,
        "slots": slots,
        "search": search,
        "window": window,
        "studies": studies,
        "true_windowed": round(float(np.mean(scores[window])), 4),
        "true_unbounded": round(float(np.mean(scores[UNBOUNDED])), 4),
        "paired_diff": round(float(diff.mean()), 4),
        "paired_diff_se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 4) if len(diff) > 1 else None,
        "same_selection": int(np.sum(diff == 0)),
        "cpu_s_windowed": round(cpu[window], 1),
        "cpu_s_unbounded": round(cpu[UNBOUNDED], 1),
    }


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.quality:
        for trials in args.trials:
            row = quality(trials, args.slots, args.truth, args.search, args.window, args.quality)
            append_row(args.out, {**row, "truth": args.truth})
        return
    if args.one:
        print(json.dumps(one(args.one, args.slots, args.truth, args.search, args.window, args.seed)))
        return
    for trials in args.trials:
        command = [sys.executable, "-m", "benchmarks.driver_scale", "--one", str(trials)]
        command += ["--slots", str(args.slots), "--truth", args.truth, "--search", args.search]
        command += ["--window", str(args.window), "--seed", str(args.seed)]
        out = subprocess.run(command, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"error: the study of {trials} trials failed: {out.stderr.strip().splitlines()[-1:]}")
        append_row(args.out, {**json.loads(out.stdout.strip().splitlines()[-1]), "truth": args.truth})


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.driver_scale", description=__doc__.splitlines()[0])
    p.add_argument("--trials", nargs="+", type=int, default=[1000, 3000, 10000])
    p.add_argument("--slots", type=int, default=256)
    p.add_argument("--truth", default="late_bloomer", help="a built-in truth or a truth file")
    p.add_argument("--search", default="default")
    p.add_argument("--window", type=int, default=RECENT_TRIALS, help="finished trials TPE models (0: every one)")
    p.add_argument("--seed", type=int, default=0, help="the search seed")
    p.add_argument("--out", type=Path, default=HERE / "driver_scale.jsonl")
    p.add_argument("--quality", type=int, default=0, metavar="N", help="N paired studies: the window's cost")
    p.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)  # one size, in this process
    args = p.parse_args(argv)
    if min(args.trials) < 1 or args.slots < 1 or args.window < 0:
        p.error("--trials and --slots take whole numbers of 1 or more, --window 0 or more")
    if args.quality and not args.window:
        p.error("--quality compares a window with none: give --window 1 or more")
    return args


if __name__ == "__main__":
    main()
