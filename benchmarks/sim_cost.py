"""``python -m benchmarks.sim_cost``: what the search stack costs as trials and slots grow.

Runs simulated studies (``search.run --simulate``, the real Optuna, ASHA, Tune and MLflow spool;
finalize and the report off) in this process, so that the driver's own CPU time and peak memory
are measured, with each trial epoch sleeping ``--epoch-seconds`` of real time. Per run it records:

- wall time; slot utilisation = trial-epochs x epoch seconds / (slots x the window from the first
  trial's start to the last one's end): the share of slot time a trial was doing its (simulated) work;
  and the same while trials waited for slots (``steady_utilisation``: no ramp, no tail);
- driver CPU seconds per reported result, and the driver's peak resident memory;
- Optuna's suggest time per trial against trials so far (the searcher's ``suggest``, timed);
- MLflow records the spool actually sent, per second of sending, to ``sqlite:///`` or to a local
  ``mlflow server`` (``--tracking server``);
- Tune's experiment-state saves (count, seconds).

Example: ``python -m benchmarks.sim_cost --trials 100 --slots 8 --epoch-seconds 2``; each run
appends one JSON line to ``--out`` (default ``benchmarks/results/sim_cost.jsonl``). ``--plot`` draws the
recorded runs (``benchmarks/results/sim_cost.png``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.mlflow_server import local_mlflow_server

if TYPE_CHECKING:
    from search.study.runner import StudyOutcome

HERE = Path(__file__).resolve().parent / "results"  # what the benchmarks write (benchmarks/README.md links them)
SEEDS = 3  # the full preset's: a trial epoch is three seed-epochs


class Meter:
    """Wraps a method to time each call: ``calls`` as (calls so far, seconds); ``cpu_after``: the process's CPU
    clock as each call returned."""

    def __init__(self, owner: type, name: str) -> None:
        self.owner, self.name, self.calls, self.cpu_after = owner, name, [], []
        self.original = getattr(owner, name)
        meter = self

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return meter.original(*args, **kwargs)
            finally:
                meter.calls.append((len(meter.calls), time.perf_counter() - started))
                meter.cpu_after.append(time.process_time())

        setattr(owner, name, timed)

    def restore(self) -> None:
        setattr(self.owner, self.name, self.original)


def truth_file(folder: Path, truth: str, epoch_seconds: float) -> Path:
    """The truth with ``[time]`` set so that a trial epoch (three seeds) sleeps ``epoch_seconds``."""
    import tomllib

    from search.simulation.truth import resolve_truth

    raw = Path(resolve_truth(truth)).read_text()
    per_seed = tomllib.loads(raw).get("time", {}).get("seconds_per_epoch", 60.0)
    scale = epoch_seconds / (SEEDS * per_seed)
    lines = [line for line in raw.splitlines() if not line.strip().startswith("scale")]
    text = "\n".join(lines).replace("[time]\n", f"[time]\nscale = {scale!r}\n")
    path = folder / f"{truth}-{epoch_seconds:g}s.toml"
    path.write_text(text + "\n")
    return path


@contextlib.contextmanager
def tracking_store(kind: str, folder: Path):
    """A ``sqlite:///`` store, or a local ``mlflow server`` on a SQLite store (stopped afterwards)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder}/mlflow.db"
        return
    with local_mlflow_server(folder) as server:
        yield server.uri


def study_args(args: argparse.Namespace, folder: Path, truth: Path, uri: str) -> list[str]:
    return [
        "absa",
        "--simulate",
        str(truth),
        "--trials",
        str(args.trials),
        "--max-concurrent",
        str(args.slots),
        "--tracking-uri",
        uri,
        "--optuna-storage",
        f"sqlite:///{folder}/optuna.db",
        "--storage",
        str(folder / "ray"),
        "--no-finalize",
        "--no-report",
        "--search-seed",
        str(args.seed),
    ]


def meters() -> dict[str, Meter]:
    from ray.tune.execution.tune_controller import TuneController

    from search.study.searcher import CanonicalOptunaSearch
    from search.tracking.sink import MlflowSink

    return {
        "suggest": Meter(CanonicalOptunaSearch, "suggest"),
        "send": Meter(MlflowSink, "send"),
        "state_save": Meter(TuneController, "save_to_dir"),
    }


def run_study(args: argparse.Namespace, folder: Path, uri: str) -> tuple[StudyOutcome, dict[str, Meter], float]:
    """The study, in this process: what ``search.run`` returns, the meters, and its wall seconds."""
    from search.run import config_from_args, parser, quick_tracking_client
    from search.simulation.kind import trial_kind
    from search.study.runner import run

    truth = truth_file(folder, args.truth, args.epoch_seconds)
    cfg = config_from_args(parser().parse_args(study_args(args, folder, truth, uri)))
    quick_tracking_client()
    meter = meters()
    started = time.perf_counter()
    try:
        study = run(cfg, trial_kind)
    finally:
        for m in meter.values():
            m.restore()
    return study, meter, time.perf_counter() - started


def trial_windows(path: str) -> tuple[list[tuple[float, float, int]], int, int]:
    """Each trial's (start, end, epochs) from the trials Tune saved, the trials, and the trial
    processes (Tune's ``pid``: a process runs several trials where Tune reuses actors)."""
    from ray import tune

    trials = tune.ExperimentAnalysis(path).trials
    spans, pids = [], set()
    for t in trials:
        last = t.last_result or {}
        if "timestamp" in last:
            end = float(last["timestamp"])
            spans.append((end - float(last.get("time_total_s", 0.0)), end, int(last.get("training_iteration", 0))))
            pids.add((last.get("hostname"), last.get("pid")))
    return spans, len(trials), len(pids)


def steady_utilisation(spans: list[tuple[float, float, int]], slots: int, epoch_seconds: float) -> float | None:
    """Slot utilisation while a trial always waited for a free slot: from the start of the
    ``slots``-th trial (every slot busy) to the start of the last one (none left to start). It
    leaves out the ramp (starting the first processes) and the tail (slots idle while the last
    trials finish), which depend on the study's shape, not on the per-trial cost of the stack.
    A trial's work (epochs x epoch seconds) is spread evenly over its span."""
    starts = sorted(start for start, _, _ in spans)
    if len(starts) <= slots:
        return None
    low, high = starts[slots - 1], starts[-1]
    work = 0.0
    for start, end, epochs in spans:
        overlap = min(end, high) - max(start, low)
        if overlap > 0 and end > start:
            work += epochs * epoch_seconds * overlap / (end - start)
    return work / (slots * (high - low))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One study at ``args.trials`` x ``args.slots``; its cost figures."""
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    with tempfile.TemporaryDirectory(prefix="sim-cost-") as tmp, tracking_store(args.tracking, Path(tmp)) as uri:
        study, meter, wall = run_study(args, Path(tmp), uri)
        spans, trials, processes = trial_windows(study.path)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    driver_cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    results = sum(epochs for _, _, epochs in spans)
    window = max(end for _, end, _ in spans) - min(start for start, _, _ in spans)
    steady = steady_utilisation(spans, args.slots, args.epoch_seconds)
    sends = [s for _, s in meter["send"].calls]
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the end",
        "trials": trials,
        "trial_processes": processes,
        "slots": args.slots,
        "tracking": args.tracking,
        "epoch_seconds": args.epoch_seconds,
        "wall_s": round(wall, 1),
        "trial_window_s": round(window, 1),
        "results": results,
        "utilisation": round(results * args.epoch_seconds / (args.slots * window), 4),
        "steady_utilisation": None if steady is None else round(steady, 4),
        "driver_cpu_s": round(driver_cpu, 1),
        "driver_cpu_ms_per_result": round(1000 * driver_cpu / max(1, results), 1),
        "driver_peak_rss_mb": round(cpu1.ru_maxrss / 1024, 1),
        "suggest_s": [round(s, 4) for _, s in meter["suggest"].calls],
        "mlflow_records": len(sends),
        "mlflow_records_per_s": round(len(sends) / max(sum(sends), 1e-9), 1),
        "state_saves": len(meter["state_save"].calls),
        "state_save_s": round(sum(s for _, s in meter["state_save"].calls), 2),
        "interrupted": study.interrupted,
        "spans": [[round(a, 2), round(b, 2), e] for a, b, e in spans],
    }


def suggest_curve(n: int, folder: Path, seed: int = 0) -> list[float]:
    """Seconds of each of ``n`` TPE suggestions of the absa space in a SQLite study, with no Ray: each
    trial told a random score (completed) or pruned at even odds, as a search's are."""
    import random

    import optuna

    from spaces import define_space, get_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = get_study("absa")
    storage = optuna.storages.RDBStorage(f"sqlite:///{folder}/suggest.db")
    ot = optuna.create_study(storage=storage, sampler=optuna.samplers.TPESampler(seed=seed), direction="maximize")
    rng, times = random.Random(seed), []
    for _ in range(n):
        started = time.perf_counter()
        trial = ot.ask()
        define_space(trial, study=study)
        times.append(time.perf_counter() - started)
        for step in (1, 2):
            trial.report(0.8 + rng.gauss(0, 0.01), step)
        pruned = rng.random() < 0.5
        ot.tell(
            trial,
            None if pruned else 0.8 + rng.gauss(0, 0.01),
            state=optuna.trial.TrialState.PRUNED if pruned else None,
        )
    return times


def plot(lines: list[dict[str, Any]], out: Path) -> None:
    """Suggest time against trials so far, per run; utilisation and CPU per result against slots, one
    line per (code version, trials, epoch seconds): ``code`` is what a line says it measured
    ("before"/"after" a change; absent: the current code)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4.2))
    for r in lines:
        label = f"{r.get('code', '')} {r['trials']} trials, {r['slots']} slots, {r['tracking']}".strip()
        a.plot(range(len(r["suggest_s"])), [1000 * s for s in r["suggest_s"]], ".", ms=2, label=label)
    a.set(xlabel="suggestions so far", ylabel="suggest ms", title="Optuna suggest (TPE, SQLite)")
    a.legend(fontsize=7)
    groups = sorted({(r.get("code", ""), r["trials"], r.get("epoch_seconds", 0)) for r in lines}, key=str)
    for code, trials, epoch in groups:
        runs = [
            r for r in lines if (r.get("code", ""), r["trials"], r.get("epoch_seconds", 0)) == (code, trials, epoch)
        ]
        runs.sort(key=lambda r: r["slots"])
        label = f"{code} {trials} trials, {epoch:g} s epochs".strip()
        slots = [r["slots"] for r in runs]
        b.plot(slots, [r["utilisation"] for r in runs], "o", label=label)
        c.plot(slots, [r["driver_cpu_ms_per_result"] for r in runs], "o", label=label)
    steady = [r for r in lines if r.get("steady_utilisation") is not None]
    b.plot([r["slots"] for r in steady], [r["steady_utilisation"] for r in steady], "k^", ms=5, label="steady")
    b.axhline(0.9, ls="--", c="grey")
    b.set(xlabel="slots", ylabel="slot utilisation", title="share of slot time in trial work", ylim=(0, 1.05))
    c.set(xlabel="slots", ylabel="driver CPU ms per result", title="driver CPU per reported result")
    b.legend(fontsize=7)
    c.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.sim_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--epoch-seconds", type=float, default=2.0, help="real seconds a trial epoch (3 seeds) sleeps")
    p.add_argument("--tracking", choices=("sqlite", "server"), default="sqlite")
    p.add_argument("--truth", default="null")
    p.add_argument("--seed", type=int, default=0, help="the Optuna sampler's seed")
    p.add_argument("--out", type=Path, default=HERE / "sim_cost.jsonl")
    p.add_argument("--plot", action="store_true", help="only draw the runs recorded in --out")
    p.add_argument("--suggest-only", type=int, metavar="N", help="time N suggestions without Ray (suggest_curve)")
    args = p.parse_args()
    if args.plot:
        lines = [json.loads(x) for x in args.out.read_text().splitlines() if x.strip()]
        plot(lines, args.out.with_suffix(".png"))
        return 0
    if args.suggest_only:
        with tempfile.TemporaryDirectory() as tmp:
            times = suggest_curve(args.suggest_only, Path(tmp), args.seed)
        line = {"date": time.strftime("%Y-%m-%d %H:%M"), "suggest_only": len(times), "suggest_s": times}
        line["load"] = round(os.getloadavg()[0], 1)
        with open(args.out.with_name("sim_suggest.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")
        chunks = [times[i : i + 100] for i in range(0, len(times), 100)]
        print("mean suggest ms per 100 trials:", [round(1000 * sum(c) / len(c), 1) for c in chunks])
        return 0
    if args.trials < 1 or args.slots < 1 or args.epoch_seconds < 0:
        p.error("--trials and --slots >= 1, --epoch-seconds >= 0 expected")
    from trainables.cli import setup_logging

    setup_logging(False)
    figures = measure(args)
    with open(args.out, "a") as f:
        f.write(json.dumps(figures) + "\n")
    summary = {k: v for k, v in figures.items() if k not in ("suggest_s", "spans")}
    suggest = figures["suggest_s"]
    summary["suggest_ms_first_last_10"] = [
        round(1000 * sum(suggest[:10]) / max(1, len(suggest[:10])), 1),
        round(1000 * sum(suggest[-10:]) / max(1, len(suggest[-10:])), 1),
    ]
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
