"""``python -m benchmarks.fault_matrix_ray``: faults injected into simulated studies of the default search through
the Ray path (``python -m search.run absa --simulate``: real Ray Tune, Optuna and MLflow, finalize and its verdict
included), each study compared with the same study not interrupted. The in-process half, with more studies:
:mod:`benchmarks.fault_matrix`.

Faults, each at a random instant within ``--window`` seconds of Tune's start (a seeded generator per study):

- ``retry``: one trial's process is killed (SIGKILL); Tune retries the trial from its checkpoint;
- ``node``: 8 trial processes are killed at once, what losing a node of 8 slots does to its trials (on this one
  machine the node itself, its raylet, stays);
- ``sigint``, ``sigterm``, ``sigkill``: the driver gets the signal (Ctrl-C, a scheduler's stop, a hard kill; after a
  SIGKILL the Ray processes it started are killed too, as the machine's loss would), then ``--resume``;
- ``kill-between-writes``: the driver kills itself (SIGKILL) at a random experiment checkpoint, after Tune wrote the
  trials and before it wrote the searcher's state (which holds the scheduler's), then ``--resume``;
- ``tracking-outage``: the study tracks to a local ``mlflow server``, stopped for ``--outage-seconds`` then started
  again on the same port and store;
- ``disk-full``: Tune's storage is a tmpfs (needs root) filled to the last byte; once the driver has stopped, the
  ballast is deleted and the study resumed.

Checked for each: trials lost (not TERMINATED in Tune's experiment), MLflow runs and Optuna trials left RUNNING,
the selected multitask config, its single-task opponent and the verdict, against the uninterrupted study's. One JSON
line per study to ``--out``; a table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.mlflow_server import LocalMlflowServer, local_mlflow_server

FAULTS = ("retry", "node", "sigint", "sigterm", "sigkill", "kill-between-writes", "tracking-outage", "disk-full")
NODE = 8  # the trials a lost node takes with it
SIGNALS = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}
TUNE_STARTS = "MLflow: trials side by side"  # the driver's last line before Tune starts the trials
# the driver, killing itself after Tune's write of the trials and before the searcher's state (the K-th checkpoint)
BETWEEN_WRITES = """
import os, runpy, signal
from search.infra.ray_compat import SchedulerSavingLimiter
calls, kth, get_state = [0], int(os.environ["FAULT_CHECKPOINT"]), SchedulerSavingLimiter.get_state
def dying(self):
    calls[0] += 1
    if calls[0] == kth:
        os.kill(os.getpid(), signal.SIGKILL)
    return get_state(self)
SchedulerSavingLimiter.get_state = dying
runpy.run_module("search.run", run_name="__main__", alter_sys=True)
"""


class Driver:
    """``python -m search.run ARGS`` in its own session, its console kept (``lines``, each with its time)."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], code: str | None = None) -> None:
        command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "search.run", *args]
        self.proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def started(self, timeout: float) -> float | None:
        """When Tune started the trials (None: not within ``timeout`` seconds, or the driver ended)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            hit = next((t for t, line in list(self.lines) if TUNE_STARTS in line), None)
            if hit is not None:
                return hit
            time.sleep(0.2)
        return None

    def wait(self, timeout: float) -> int | None:
        """The exit code; None, and the whole session killed, after ``timeout`` seconds."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(self.proc.pid)
            code = None
        self.reader.join(timeout=10)
        return code

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (the driver's, and the Ray processes it started)."""
    for pid in session_pids(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def session_pids(sid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # state ppid pgrp session ...
                found.append(int(stat.parent.name))
    return found


def trial_pids(sid: int) -> list[int]:
    """The processes of session ``sid`` running a Tune trial (Ray names them after the trainable's actor)."""
    pids = []
    for pid in session_pids(sid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::ImplicitFunc"):
                pids.append(pid)
    return sorted(pids)


class Study:
    """One study's stores in ``folder`` and its ``search.run`` arguments."""

    def __init__(self, folder: Path, args: argparse.Namespace, seed: int) -> None:
        self.folder, self.seed, self.args = folder, seed, args
        self.name = f"faults-{seed}"
        self.tracking = f"sqlite:///{folder}/mlflow.db"  # the outage's study: its server's URI instead
        self.storage = folder / "ray"
        folder.mkdir(parents=True, exist_ok=True)

    def stores(self) -> list[str]:
        return [
            "--name", self.name, "--tracking-uri", self.tracking, "--optuna-storage",
            f"sqlite:///{self.folder}/optuna.db", "--storage", str(self.storage),
        ]  # fmt: skip

    def start_args(self) -> list[str]:
        a = self.args
        flags = ["--simulate", a.truth, "--max-concurrent", str(a.slots), "--search-seed", str(self.seed)]
        return ["absa", *flags, *self.stores()]

    def resume_args(self) -> list[str]:
        return ["absa", "--resume", *self.stores()]

    def env(self, **extra: str) -> dict[str, str]:
        """The driver's environment: it runs in the study's folder, so the data root is made absolute."""
        data = {"MTL_DATA_DIR": str(Path(os.environ["MTL_DATA_DIR"]).resolve())} if "MTL_DATA_DIR" in os.environ else {}
        return {**os.environ, "PYTHONPATH": str(Path.cwd()), **data, **extra}


def answer(study: Study) -> dict[str, Any]:
    """What the study left: lost and RUNNING counts, its selection and verdict (the parent run's tags)."""
    import optuna
    from ray import tune

    from search.tracking import records as rec
    from search.tracking.runs import client as tracking_client
    from search.tracking.runs import every_run

    path = study.storage / study.name
    trials = tune.ExperimentAnalysis(str(path)).trials if path.exists() else []
    client = tracking_client(study.tracking)
    experiment = client.get_experiment_by_name("absa")
    runs = every_run(client, experiment.experiment_id, "") if experiment else []
    parents = [r for r in runs if r.data.tags.get(rec.KIND_TAG) == "study"]
    tags = parents[0].data.tags if parents else {}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = f"sqlite:///{study.folder}/optuna.db"
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
    optuna_running = sum(
        t.state == optuna.trial.TrialState.RUNNING
        for name in names
        for t in optuna.load_study(study_name=name, storage=storage).trials
    )
    return {
        "trials": len(trials),
        "lost": sum(t.status != "TERMINATED" for t in trials),
        # Tune keeps a trial's failures in its folder: the search's trials and finalize's (an experiment beside it)
        "failed_and_retried": len(list(study.storage.glob("*/trial_*/error.txt"))),
        "mlflow_running": sum(r.info.status == "RUNNING" for r in runs),
        "optuna_running": optuna_running,
        "selected": tags.get(rec.WINNER_TAG),
        "opponent": tags.get(rec.OPPONENT_TAG),
        "verdict": tags.get(rec.VERDICT_TAG),
    }


@contextlib.contextmanager
def tmpfs(folder: Path, megabytes: int):
    """A tmpfs of ``megabytes`` at ``folder`` (unmounted afterwards)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """A ballast file in ``folder`` written until the disk is full."""
    ballast = folder / "ballast"
    with contextlib.suppress(OSError), ballast.open("wb") as f:
        while True:
            f.write(bytes(1 << 20))
            f.flush()
    return ballast


def instant(driver: Driver, fault: str, start: float, window: float, rng: random.Random) -> float:
    """When ``fault`` strikes (monotonic): within ``window`` seconds of Tune's start; a lost node's within 10 s of
    the first moment 8 trials run (the screen's; later, a node of 8 slots would hold fewer than 8 trials)."""
    if fault != "node":
        return start + rng.uniform(0, window)
    running_trials(driver, NODE)
    return time.monotonic() + rng.uniform(0, 10.0)


def running_trials(driver: Driver, least: int) -> list[int]:
    """The driver's trial processes, once at least ``least`` run (fewer, or none, if the driver ends first)."""
    pids = trial_pids(driver.proc.pid)
    while len(pids) < least and driver.proc.poll() is None:
        time.sleep(0.2)
        pids = trial_pids(driver.proc.pid)
    return pids


def strike(
    fault: str, driver: Driver, study: Study, at: float, rng: random.Random, server: LocalMlflowServer | None
) -> dict[str, Any]:
    """Wait until ``at`` (monotonic), then inject ``fault`` into the running study; what was done."""
    time.sleep(max(0.0, at - time.monotonic()))
    if driver.proc.poll() is not None:
        return {"struck": False}
    if fault in ("retry", "node"):
        pids = running_trials(driver, 1)  # between trials (a cohort paused at its rung): the next one
        chosen = rng.sample(pids, min(len(pids), NODE if fault == "node" else 1))
        for pid in chosen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return {"struck": bool(chosen), "killed": len(chosen)}
    if fault in SIGNALS:
        os.kill(driver.proc.pid, SIGNALS[fault])
        if fault == "sigkill":
            time.sleep(1)
            kill_session(driver.proc.pid)
        return {"struck": True}
    if fault == "tracking-outage":
        assert server is not None, "the outage's study tracks to its own server (run_study starts it)"
        server.stop()
        time.sleep(study.args.outage_seconds)
        server.start()
        return {"struck": True, "outage_s": study.args.outage_seconds}
    ballast = fill(study.storage)  # disk-full
    driver.wait(study.args.timeout)
    ballast.unlink()
    return {"struck": True}


def ended(driver: Driver, study: Study, fault: str | None, timeout: float, resumes: int = 0) -> int | None:
    """The driver's exit code once it ended, the Ray processes a hard kill left of it killed, and its console kept
    (``console-FAULT.log``; a resume's ``console-FAULT-resume-N.log``)."""
    code = driver.wait(timeout)
    kill_session(driver.proc.pid)
    suffix = f"-resume-{resumes}" if resumes else ""
    (study.folder / f"console-{fault or 'none'}{suffix}.log").write_text(driver.text())
    return code


def run_study(study: Study, fault: str | None, rng: random.Random) -> dict[str, Any]:
    """The study with ``fault`` (None: uninterrupted), resumed until it finishes; what it left, what was done."""
    a = study.args
    with contextlib.ExitStack() as stack:
        server = None
        if fault == "tracking-outage":
            server = stack.enter_context(local_mlflow_server(study.folder))
            study.tracking = server.uri
        if fault == "disk-full":
            stack.enter_context(tmpfs(study.storage, a.tmpfs_mb))
        code = BETWEEN_WRITES if fault == "kill-between-writes" else None
        checkpoint = rng.randint(2, 12)
        driver = Driver(study.start_args(), study.folder, study.env(FAULT_CHECKPOINT=str(checkpoint)), code)
        first = driver.started(a.timeout)
        done: dict[str, Any] = {"struck": False}
        if fault and code is None and first is not None:
            done = strike(fault, driver, study, instant(driver, fault, first, a.window, rng), rng, server)
        codes = [ended(driver, study, fault, a.timeout)]
        if code is not None:
            done = {"struck": codes[0] == -signal.SIGKILL, "checkpoint": checkpoint}
        while codes[-1] != 0 and len(codes) <= a.resumes:
            resumed = Driver(study.resume_args(), study.folder, study.env())
            codes.append(ended(resumed, study, fault, a.timeout, len(codes)))
        return {**answer(study), **done, "exit_codes": codes}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fault_matrix_ray", description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=2, help="studies per fault (default: %(default)s)")
    p.add_argument("--faults", nargs="+", choices=FAULTS, default=list(FAULTS))
    p.add_argument("--truth", default="late_bloomer", help="a built-in truth or a truth file (default: %(default)s)")
    p.add_argument("--slots", type=int, default=64, help="trials at once (default: %(default)s)")
    p.add_argument(
        "--window", type=float, default=60.0, help="faults strike within this many seconds of the first result"
    )
    p.add_argument("--outage-seconds", type=float, default=60.0, help="how long the tracking server is down")
    p.add_argument("--tmpfs-mb", type=int, default=400, help="the disk-full fault's tmpfs (default: %(default)s MB)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a driver may run before it is killed")
    p.add_argument("--resumes", type=int, default=3, help="--resume calls allowed after a fault")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/fault_matrix_ray.jsonl"))
    p.add_argument("--keep", type=Path, help="keep each study's stores and console under this folder")
    args = p.parse_args()
    if "disk-full" in args.faults and os.geteuid() != 0:
        p.error("the disk-full fault mounts a tmpfs: run as root, or leave it out of --faults")
    table: dict[str, list[int]] = {f: [0, 0, 0, 0, 0] for f in args.faults}  # studies, struck, lost+running, same x2
    with args.out.open("a") as out, tempfile.TemporaryDirectory(prefix="faults-ray-") as tmp:
        root = args.keep or Path(tmp)
        for seed in range(args.studies):
            whole = run_study(Study(root / f"{seed}-none", args, seed), None, random.Random(seed))
            print(f"study {seed}: {whole['selected']} vs {whole['opponent']}: {whole['verdict']}", flush=True)
            for fault in args.faults:
                started = time.monotonic()
                rng = random.Random(f"{fault}-{seed}")
                hit = run_study(Study(root / f"{seed}-{fault}", args, seed), fault, rng)
                same = [hit[k] == whole[k] for k in ("selected", "verdict")]
                row = {"date": time.strftime("%Y-%m-%d %H:%M"), "fault": fault, "seed": seed, "slots": args.slots}
                row |= {"truth": args.truth, "uninterrupted": whole, "faulted": hit, "same_selected": same[0]}
                row |= {"same_verdict": same[1], "wall_s": round(time.monotonic() - started, 1)}
                out.write(json.dumps(row) + "\n")
                out.flush()
                t = table[fault]
                t[0] += 1
                t[1] += bool(hit["struck"])
                t[2] += hit["lost"] + hit["mlflow_running"] + hit["optuna_running"]
                t[3] += same[0]
                t[4] += same[1]
                print(f"  {fault}: {json.dumps(hit)}", flush=True)
    print("| fault | studies | struck | lost or RUNNING | same selected | same verdict |")
    print("|---|---|---|---|---|---|")
    for fault, (n, struck, bad, pick, verdict) in table.items():
        print(f"| {fault} | {n} | {struck} | {bad} | {pick}/{n} | {verdict}/{n} |")


if __name__ == "__main__":
    main()
