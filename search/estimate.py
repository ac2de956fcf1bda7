"""python -m search.estimate STUDY --preset P: the compute a study needs, from real data sizes.

Counts the training and evaluation rows every trial processes (steps per epoch as the
loop computes them, every seed, every epoch), averaged over the study's auxiliary subsets,
with and without ASHA's early stops, plus the final comparison's runs on the final seeds; with a
measured throughput (--samples-per-second, or --from-benchmark the JSON that
python -m benchmarks.throughput --out wrote on the target machine) it turns them into device-hours
and, with --usd-per-hour, cost. It also prints what the study's driver costs at --trials and --max-concurrent
(CPU minutes, peak memory) and what its slots' trial processes hold, from measurements
(search/study/driver_cost.py), and the search's schedule at --max-concurrent (or each of --slots): its wall
time and slot-time (slots x wall, what a cluster bills), from the study's real searcher and scheduler on a
simulated clock where every config scores alike (search/simulation/schedule.py).

A study that searches the adaptive strategies (absa-plus: an EXP3 bandit schema, PCGrad, uncertainty
weights, layer-wise lr decay) costs more per training row: the expected cost factor over its space
multiplies the training rows, from the cost ratios python -m benchmarks.throughput --strategies
measured (--strategy-costs FILE; by default the CPU run recorded in benchmarks/README.md).

--plan GAIN answers another question: how many final seeds (search.finalize --seeds) a true
gain of GAIN (accuracy units: 0.02 = 2 pp) needs to be found 80% of the time, from the spread of the
paired differences given with --spread SD or recorded by a finished study's finalize
(--from-study, with --name and --tracking-uri; the ablation claim's spread where present,
planned at its 70% upper bound over the pairs it was observed on: an observed spread is optimistic).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from search.study.config import SearchConfig
from search.study.driver_cost import driver_cost
from search.study.kind import TrainedTrials
from search.study.plan import cohort_families, plan_offline
from spaces import get_study
from spaces.canonical import apply_choices, schema_label, task_label, thesis_grid
from trainables.cli import ArgumentParser, run_main, setup_logging
from trainables.config import ConfigError, TrainConfig
from trainables.exposure import primary_passes
from trainables.fidelity import SeedSchedule, halving_survivors
from trainables.rows import limit_rows
from trainables.sampling import steps_per_epoch
from trainables.tasks import DataError, get_task

logger = logging.getLogger("search.estimate")


EVAL_SPEEDUP = 3.0  # a forward pass costs about a third of forward + backward
# Cost per micro-batch relative to the plain loop: benchmarks/results/last_run_strategies.json (2026-11-25, MiniLM,
# 2-core CPU; benchmarks/README.md). Unfreezing is not counted: its saving shrinks as layers thaw.
MEASURED_STRATEGY_COST: dict[str, float] = {
    "accum2-pcgrad": 1.146,
    "accum2-sum": 0.941,
    "all-pcgrad": 1.262,
    "all-sum": 1.034,
    "bandit-loss": 1.030,
    "bandit-primary": 0.970,
    "layer-decay": 1.004,
    "uncertainty": 0.937,
    "unfreeze-epoch-0": 0.340,
}


def benchmark_throughput(path: str | Path) -> tuple[float, dict[str, Any]]:
    """The loop's samples/s from a ``benchmarks.throughput`` JSON, and what it was measured on."""
    try:
        summary = json.loads(Path(path).read_text())
        samples_per_second = float(summary["loop_samples_per_s"])
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--from-benchmark {path}: not JSON ({exc})") from None
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"--from-benchmark {path}: no loop_samples_per_s; expected the JSON that "
            "python -m benchmarks.throughput --out writes"
        ) from None
    keys = ("date", "device", "model", "precision", "batch_size", "pad_to_multiple_of")
    return samples_per_second, {k: summary.get(k) for k in keys} | {"file": str(path)}


def check_measured(measured: dict[str, Any], model: str, batch_size: int) -> None:
    """Warn when the benchmark did not measure what the preset trains."""
    if measured.get("device") == "cpu":
        logger.warning("the benchmark ran on the CPU: the hours are CPU-hours")
    if measured.get("batch_size") not in (None, batch_size):
        logger.warning("the benchmark used batch %s, the preset trains batch %d", measured["batch_size"], batch_size)
    shape = "bert-base" if model == "bert-base-uncased" else model  # the random-init shape of the same architecture
    if shape not in str(measured.get("model")):
        logger.warning("the benchmark measured %s, the preset trains %s", measured.get("model"), model)


def strategy_costs(path: str | Path | None) -> dict[str, float]:
    """The per-option cost ratios of a ``benchmarks.throughput --strategies`` JSON (else the recorded ones)."""
    if path is None:
        return MEASURED_STRATEGY_COST
    try:
        return {k: float(v) for k, v in json.loads(Path(path).read_text())["strategy_cost_ratio"].items()}
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        raise ConfigError(
            f"--strategy-costs {path}: no strategy_cost_ratio; expected the JSON that "
            "python -m benchmarks.throughput --strategies --out writes"
        ) from None


def strategy_cost(study, measured: dict[str, float]) -> float:
    """Expected cost per training row of a trial of ``study`` relative to the plain loop: half the
    trials are multitask (the space's first choice), every choice of a dimension equally likely (the
    prior of the searchers), and the options' extra costs add up. 1 for a study without strategies.
    A ratio below 1 is counted as 1: these options add work, so a faster block is the machine's noise."""
    ratios = {k: max(1.0, v) for k, v in measured.items()}
    extra = 0.0
    if "bandit" in study.schemas:
        reward = float(np.mean([ratios[f"bandit-{r}"] for r in study.bandit_reward]))
        extra += 0.5 * (reward - 1) / len(study.schemas)
    if "uncertainty" in study.loss_weighting:
        extra += 0.5 * (ratios["uncertainty"] - 1) / len(study.loss_weighting)
    if "all" in study.step_modes:  # PCGrad is searched where a step holds one batch of every task
        every = study.step_modes.count("all") / len(study.step_modes)
        pcgrad = study.gradients.count("pcgrad") / len(study.gradients)
        extra += 0.5 * every * ((1 - pcgrad) * ratios["all-sum"] + pcgrad * ratios["all-pcgrad"] - 1)
    if study.layer_decay is not None:
        extra += ratios["layer-decay"] - 1
    return 1.0 + extra


def asha_epoch_fraction(max_t: int, grace: int, rf: int) -> float:
    """Expected share of ``max_t`` epochs a trial trains under ASHA when results are exchangeable."""
    rungs = []
    r = grace
    while r < max_t:
        rungs.append(r)
        r *= rf
    expected, alive, last = 0.0, 1.0, 0
    for rung in rungs:
        expected += alive * (rung - last)  # everyone alive trains up to this rung
        alive /= rf
        last = rung
    expected += alive * (max_t - last)
    return expected / max_t


def asha_seed_epoch_fraction(schedule: SeedSchedule, reduction_factor: int, max_t: int) -> float:
    """Expected share of ``max_t`` epochs x K seeds a trial trains under ASHA with a seed schedule
    (``--first-rung-seeds``), results exchangeable: a trial stopped at a rung trained ``seed_epochs``
    of it, catch-up included. With every seed throughout it equals :func:`asha_epoch_fraction`."""
    expected, alive = 0.0, 1.0
    for rung in schedule.rungs:
        expected += alive * (1 - 1 / reduction_factor) * schedule.seed_epochs(rung)  # stopped at this rung
        alive /= reduction_factor
    expected += alive * schedule.seed_epochs(max_t)
    return expected / (max_t * schedule.seeds)


def halving_seed_epochs(
    cells: int,
    families: int,
    screen: float | None,
    grace: int,
    reduction_factor: int,
    schedule: SeedSchedule | None,
    max_t: int,
    seeds: int,
    hedge: int = 0,
    strata: int = 1,
) -> float:
    """Expected seed-epochs of a cohort of ``cells`` trials under cohort halving (``search/study/halving.py``),
    results exchangeable (:func:`~trainables.fidelity.halving_survivors`). A trial stopped at a point
    trained ``schedule.seed_epochs`` of it (catch-up included; all ``seeds`` throughout without a schedule).
    Checked against simulated studies on the null truth (tests/search/test_estimate.py)."""

    trial = schedule or SeedSchedule.full(seeds)
    # the baseline is always a finalist: every seed, or the first rung's under a schedule that says so
    baseline = SeedSchedule.of(trial.to_dict() if schedule else None, True, seeds)
    course = halving_survivors(cells, families, screen, grace, reduction_factor, max_t, hedge, strata)
    stopped = sum((alive - going) * trial.seed_epochs(point) for point, alive, going in course)
    finalists = (course[-1][2] if course else cells) - 1  # the baseline apart
    return stopped + finalists * trial.seed_epochs(max_t) + baseline.seed_epochs(max_t)


def split_sizes(study, base) -> dict[str, dict[str, int]]:
    """Rows per split of every task of the study, after the preset's limits."""
    data = Path(base.data_dir)
    sizes = {}
    for name in (study.primary,) + tuple(study.candidates):
        task = get_task(name, data, base.protocol)
        sizes[name] = {
            s: len(
                limit_rows(
                    len(task.examples(s)),
                    base.train_limit(len(task.examples(s))) if s == "train" else base.eval_limit(name),
                    task.group_size,
                    s != "train",
                )
            )
            for s in ("train", "dev", "test")
        }
    return sizes


def seed_rows(
    tasks: tuple[str, ...], sizes: dict[str, dict[str, int]], base, cost: float = 1.0, test: str = ""
) -> float:
    """Train-equivalent rows of one seed of ``tasks`` to full epochs, dev scored every epoch (and ``test``'s
    test rows once, at the end); ``cost``: the strategies' factor on the training rows."""
    steps = steps_per_epoch([math.ceil(sizes[t]["train"] / base.batch_size) for t in tasks])
    evals = sum(sizes[t]["dev"] for t in tasks) * base.epochs + (sizes[test]["test"] if test else 0)
    return steps * base.batch_size * base.epochs * cost + evals / EVAL_SPEEDUP


def rows_per_trial(study, base, sizes: dict[str, dict[str, int]], seeds: int, cost: float = 1.0) -> float:
    """Train-equivalent rows of one trial to full epochs, averaged over the auxiliary subsets; ``cost``:
    the strategies' factor on the training rows. A search trial scores no test."""
    per_subset = []
    for r in range(len(study.candidates) + 1):
        for subset in itertools.combinations(study.candidates, r):
            per_subset.append(seed_rows((study.primary,) + subset, sizes, base, cost) * seeds)
    return sum(per_subset) / len(per_subset)


def finalize_rows(study, base, sizes: dict[str, dict[str, int]], final_seeds: int, single_arms: int) -> float:
    """Train-equivalent rows of the final comparison: the winner (a multitask config, averaged over the
    auxiliary subsets) and ``single_arms`` single-task configs (the opponent, and the ablation where it is
    another config), each to full epochs on every final seed, scoring dev every epoch and test at the end."""

    def per_seed(tasks: tuple[str, ...]) -> float:
        return seed_rows(tasks, sizes, base, test=study.primary)

    subsets = [s for r in range(1, len(study.candidates) + 1) for s in itertools.combinations(study.candidates, r)]
    winner = sum(per_seed((study.primary, *s)) for s in subsets) / len(subsets) if subsets else 0.0
    return (winner + single_arms * per_seed((study.primary,))) * final_seeds


def single_arms_of(plan) -> int:
    """Single-task configs finalize trains: 1 where every trial is a grid cell at the baseline's lr and
    warm-up (the winner's ablation is the baseline), else 2 (the opponent and the ablation, at most)."""
    fixed = {(pt.get("lr"), pt.get("warmup")) for pt in plan.points}
    return 1 if plan.points and plan.trials == len(plan.points) and len(fixed) == 1 else 2


@dataclass(frozen=True)
class Exposure:
    """The primary's passes over its training rows per epoch across a study's grid: the single-task
    baseline's, and the multitask cells' range with the cell at either end (an epoch is the mean task size
    and the schema sets the primary's share of it, so a cell whose auxiliaries are large sees less)."""

    single: float
    low: float
    high: float
    lowest: str  # the cell with the fewest passes: ``sst2+pos+sentihood random``
    highest: str

    def line(self) -> str:
        multitask = f", {self.low:.2f}-{self.high:.2f} multitask ({self.lowest} .. {self.highest})"
        return f"{self.single:.2f} single-task" + (multitask if self.lowest else "")


def grid_exposure(study, base: TrainConfig, sizes: dict[str, dict[str, int]]) -> Exposure:
    """The passes per epoch (their mean over the preset's epochs: anneal's share moves) of every cell of the
    study's grid at the preset, from the training rows :func:`split_sizes` read."""
    rows = {t: split["train"] for t, split in sizes.items()}
    single, cells = 1.0, {}
    for point in thesis_grid(study, base):
        config = apply_choices(base, point, study)
        passes = primary_passes(config, rows, config.epochs) / config.epochs
        if len(config.tasks) == 1:
            single = passes
        else:
            aux = "+".join(task_label(t) for t in config.tasks if t != config.primary)
            cells[f"{aux} {schema_label(config, 2)}"] = passes
    if not cells:
        return Exposure(single, math.nan, math.nan, "", "")
    lowest, highest = min(cells, key=cells.get), max(cells, key=cells.get)
    return Exposure(single, cells[lowest], cells[highest], lowest, highest)


def trained_fraction(p) -> float:
    """The share of every trial's epochs x seeds the plan's early stopping trains, as expected."""
    base, seeds = p.base, len(p.invocation.seeds)
    grace, factor, schedule = p.rungs.grace_period, p.rungs.reduction_factor, p.schedule
    if p.strategy.cohort:  # the cohort: the study's first points, decided together
        cells, families = len(p.points), cohort_families(p.points)
        spent = halving_seed_epochs(
            cells, families, p.screen, grace, factor, schedule, base.epochs, seeds, p.rungs.hedge, p.rungs.strata
        )
        return spent / (cells * base.epochs * seeds)
    if schedule is None:
        return asha_epoch_fraction(base.epochs, grace, factor)
    return asha_seed_epoch_fraction(schedule, factor, base.epochs)


def estimate(
    cfg: SearchConfig,
    samples_per_second: float | None,
    usd_per_hour: float | None,
    measured: dict[str, Any] | None = None,
    ratios: dict[str, float] | None = None,
    slots: tuple[int, ...] = (),
) -> dict:
    """The study's compute and cost (the module docstring); ``slots``: the slot counts to give the schedule at
    (default: ``cfg.max_concurrent``)."""
    p = plan_offline(cfg, TrainedTrials())
    study, base, seeds, trials = p.study, p.base, len(p.invocation.seeds), p.trials
    sizes = split_sizes(study, base)
    cost = strategy_cost(study, MEASURED_STRATEGY_COST if ratios is None else ratios)
    per_trial = rows_per_trial(study, base, sizes, seeds, cost)
    schedule, fraction = p.schedule, trained_fraction(p)
    arms = single_arms_of(p)
    out = {
        "study": study.name,
        "preset": p.invocation.preset,
        "model": base.encoder.model,
        "epochs": base.epochs,
        "seeds": seeds,
        "trials": trials,
        "rows": sizes,
        "strategy_cost_factor": round(cost, 3),
        "train_equivalent_rows_per_trial": round(per_trial),
        "total_rows_without_pruning": round(per_trial * trials),
        "first_rung_seeds": schedule.first if schedule else seeds,
        "asha_epoch_fraction": round(fraction, 3),  # of epochs x seeds, with --first-rung-seeds
        "total_rows_with_asha": round(per_trial * trials * fraction),
        "final_seeds": p.final_seeds,
        "final_single_task_arms": arms,
        "finalize_rows": round(finalize_rows(study, base, sizes, p.final_seeds, arms)),
        "primary_passes_per_epoch": grid_exposure(study, base, sizes).line(),
        "max_concurrent": p.resources.max_concurrent,
        "driver": driver_cost(trials, p.resources.max_concurrent).to_dict(),
    }
    out["total_rows_with_finalize"] = out["total_rows_with_asha"] + out["finalize_rows"]
    seed_epoch_rows = per_trial / (base.epochs * seeds)  # one seed's epoch, averaged over the study's configs
    at = slots or (p.resources.max_concurrent,)
    out["schedule"] = schedules(cfg, p, at, seed_epoch_rows, samples_per_second, usd_per_hour)
    if measured is not None:
        check_measured(measured, base.encoder.model, base.batch_size)
        out["benchmark"] = measured
    if samples_per_second:
        hours = per_trial * trials * fraction / samples_per_second / 3600
        total = out["total_rows_with_finalize"] / samples_per_second / 3600
        out["samples_per_second"] = samples_per_second
        out["device_hours_with_asha"] = round(hours, 2)
        out["device_hours_with_finalize"] = round(total, 2)  # what a study costs, its answer included
        if usd_per_hour:
            out["usd_with_asha"] = round(hours * usd_per_hour, 2)
            out["usd_with_finalize"] = round(total * usd_per_hour, 2)
    return out


SCHEDULE_MOST = 500  # trials: a bigger study's schedule takes minutes to simulate (search.simulation.schedule)


def schedules(
    cfg: SearchConfig, p, slots: tuple[int, ...], seed_epoch_rows: float, sps: float | None, usd: float | None
) -> list | str:
    """The search's wall time and slot-time at each slot count (:mod:`search.simulation.schedule`, a flat truth),
    in seed-epochs of one slot, and in hours (and dollars: a cluster bills slot-hours) with a throughput."""
    from search.simulation.schedule import schedule
    from search.tracking.records import objective_metric_of

    if p.trials > SCHEDULE_MOST:
        return f"not simulated: over {SCHEDULE_MOST} trials (minutes of simulation); price a smaller --trials"
    metric = objective_metric_of(p.invocation.objective, p.study.primary_name)
    if metric is None:
        return f"not simulated: the objective {p.invocation.objective} is no dev metric of the primary"
    out = []
    for n in slots:
        row: dict[str, Any] = schedule(replace(cfg, max_concurrent=n), p.study.primary_name, metric).to_dict()
        if sps:
            hours = seed_epoch_rows / sps / 3600
            row |= {"wall_hours": round(row["wall_seed_epochs"] * hours, 2)}
            row |= {"slot_hours": round(row["slot_seed_epochs"] * hours, 2)}
            if usd:
                row["usd_slot_hours"] = round(row["slot_hours"] * usd, 2)
        out.append(row)
    return out


def planned(args: argparse.Namespace) -> dict:
    """``--plan``: the seeds a gain needs, from ``--spread`` or the study's recorded spread."""
    from search.answer.looks import earlier_looks, recorded_spread
    from search.answer.power import plan, spread_bound

    study = get_study(args.study)
    if not args.plan > 0:
        raise ConfigError(f"--plan {args.plan}: expected a gain > 0 in the metric's units (0.02 = 2 pp)")
    if args.spread is not None:
        sd, source = args.spread, "--spread"
    elif args.from_study:
        from search.tracking.runs import client, find_parent

        _, parent = find_parent(client(args.tracking_uri), study.name, args.name)
        spreads = recorded_spread(parent.data.metrics, study.metric)
        if not spreads:
            raise ConfigError(f"study run {parent.info.run_name}: no finalize recorded a spread of {study.metric}")
        claim = "ablation" if "ablation" in spreads else "tuned"
        looks = earlier_looks(parent.data.tags)
        pairs = looks[-1]["claims"].get(claim, {}).get("pairs", 0) if looks else 0
        observed = spreads[claim]
        # an observed spread is below the true one more often than not: plan at its 70% upper bound
        sd = spread_bound(pairs, observed) if pairs >= 2 else observed
        source = f"study {parent.info.run_name}, claim {claim}: observed {observed:.4f} over {pairs} pairs" + (
            f", planned at its 70% upper bound {sd:.4f}" if pairs >= 2 else ""
        )
    else:
        raise ConfigError("--plan needs the spread: --spread SD, or --from-study for a finished study's")
    if not sd > 0:
        raise ConfigError(f"spread {sd} ({source}): expected > 0")
    return {"study": study.name, "metric": study.metric, "spread_from": source, **plan(args.plan, sd)}


def planning_arguments(p: argparse.ArgumentParser) -> None:
    """``--plan`` and where its spread comes from."""
    planning = p.add_argument_group("planning final seeds (--plan)")
    planning.add_argument("--plan", type=float, metavar="GAIN", help="the true gain to find (0.02 = 2 pp)")
    spread = planning.add_mutually_exclusive_group()
    spread.add_argument("--spread", type=float, metavar="SD", help="sd of the paired per-seed differences")
    spread.add_argument("--from-study", action="store_true", help="the spread a finished study's finalize recorded")
    planning.add_argument("--name", help="with --from-study: the study invocation (default: the latest)")
    planning.add_argument(
        "--tracking-uri",
        default="sqlite:///mlflow.db",
        help="with --from-study: the MLflow store the study logged to (default: %(default)s)",
    )


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m search.estimate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("study", help="a built-in study or a .toml study file")
    p.add_argument("--preset", default="full", help="the study's preset to price (default: %(default)s)")
    p.add_argument("--trials", type=int, help="trials of the search (default: the preset's, or the grid's cells)")
    p.add_argument("--search", default=SearchConfig.search, help="the search strategy (search.run's flag)")
    p.add_argument("--seeds", type=int, help="seeds per trial (default: the search strategy's)")
    p.add_argument("--first-rung-seeds", type=int, metavar="N", help="seeds as a fidelity (search.run's flag)")
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=SearchConfig.max_concurrent,
        metavar="S",
        help="trials at once (search.run's flag), for the driver's cost and the schedule (default: %(default)s)",
    )
    p.add_argument(
        "--slots",
        type=int,
        nargs="+",
        metavar="S",
        help="slot counts to give the search's wall time and slot-time at (default: --max-concurrent)",
    )
    measured = p.add_mutually_exclusive_group()
    measured.add_argument("--samples-per-second", type=float, help="measured training throughput of one trial's device")
    measured.add_argument(
        "--from-benchmark",
        metavar="FILE",
        help="take the throughput from this benchmarks.throughput JSON (its loop_samples_per_s)",
    )
    p.add_argument(
        "--usd-per-hour", "--price-per-gpu-hour", type=float, help="price of one such device per hour, in US dollars"
    )
    p.add_argument(
        "--strategy-costs",
        metavar="FILE",
        help="cost ratios of the strategies: a benchmarks.throughput --strategies JSON",
    )
    p.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    planning_arguments(p)
    return p


def main() -> int:
    args = parser().parse_args()
    setup_logging()
    if args.plan is not None:
        print(json.dumps(planned(args), indent=2))
        return 0
    cfg = SearchConfig(
        study=get_study(args.study).name,
        preset=args.preset,
        trials=args.trials,
        seeds=args.seeds,
        search=args.search,
        data_dir=args.data_dir,
        first_rung_seeds=args.first_rung_seeds,
        max_concurrent=args.max_concurrent,
    )
    samples_per_second, measured = args.samples_per_second, None
    if args.from_benchmark:
        samples_per_second, measured = benchmark_throughput(args.from_benchmark)
    ratios = strategy_costs(args.strategy_costs)
    if any(n < 1 for n in args.slots or ()):
        raise ConfigError(f"--slots {' '.join(map(str, args.slots))}: expected slot counts >= 1")
    out = estimate(cfg, samples_per_second, args.usd_per_hour, measured, ratios, tuple(args.slots or ()))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, DataError, OSError))
