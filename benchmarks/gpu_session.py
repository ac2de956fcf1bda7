"""``python -m benchmarks.gpu_session --out DIR``: the one script a lent GPU runs, end to end, in <= 9 minutes.

Steps, each a subprocess under its own time limit (an upper bound, never a measured time), what they write kept
under ``--work`` and the files worth reading copied to ``--out`` (a few small files: the device tool returns at
most 8):

1. ``check``: ``benchmarks.gpu_check`` (training in bf16 and fp16 resumed from a checkpoint; the loop's share of
   bare training steps and MFU for MiniLM and a randomly initialised bert-base, padded to 128 tokens; the
   device's name) -> ``gpu_check.json``.
2. ``study``: ``python -m search.run absa`` through a private Ray, Optuna and MLflow, sized for one GPU: the
   smoke preset's recipe on more rows, trials sharing the GPU by fractional GPUs (``--gpus-per-trial``), ending
   with the final comparison, the report and the registered model -> ``study.log``, ``report.md``, ``final.md``
   and ``mlflow.db`` (the tracking store; artifacts stay under ``--work``). Stopped at its limit with SIGINT, as
   Ctrl-C stops a study: it ends resumable, and the summary says so.
3. ``session.json``: the device, each step's status, seconds and exit code, the verdict line and the model.

``--dry-run`` runs the same steps on the CPU at tiny sizes (a smoke check of this script, in the extended
tests); its figures are not GPU figures and say so (``device``: ``cpu``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("torch", "transformers", "ray", "optuna", "mlflow", "pandas", "pyarrow")  # what the study imports
LIMITS = {"check": 240, "study": 270}  # seconds on a GPU: 510 in all, under 9 minutes with Ray's start
DRY_LIMITS = {"check": 300, "study": 600}  # the CPU's tiny run


@dataclass(frozen=True)
class Step:
    name: str
    argv: list[str]
    limit: float
    log: str  # the file under --out that holds its output


def check_step(args: argparse.Namespace) -> Step:
    out = args.work / "gpu_check.json"
    argv = ["benchmarks.gpu_check", "--out", str(out), "--data-dir", args.data_dir]
    if args.dry_run:
        argv += ["--device", "cpu", "--stages", "training,throughput"]
    else:
        argv += ["--stages", "training,sync,throughput"]
    if args.model:
        argv += ["--model", args.model]
    return Step("check", argv, (DRY_LIMITS if args.dry_run else LIMITS)["check"], "check.log")


def study_argv(args: argparse.Namespace) -> list[str]:
    """``search.run absa`` with its stores under ``--work``: 8 trials of the smoke recipe on four times its rows,
    four at once on the GPU's quarters (dry run: 2 trials of one epoch on 32 rows, on the CPU)."""
    stores = [
        "--tracking-uri",
        f"sqlite:///{args.work / 'mlflow.db'}",
        "--storage",
        str(args.work / "ray_results"),
        "--optuna-storage",
        f"sqlite:///{args.work / 'optuna.db'}",
        "--data-dir",
        args.data_dir,
    ]
    if args.dry_run:
        size = ["--trials", "2", "--epochs", "1", "--train-rows", "32", "--eval-rows", "32", "--final-seeds", "3"]
        size += ["--max-concurrent", "2", "--gpus-per-trial", "0"]
    else:
        size = ["--trials", "8", "--train-rows", "3600", "--max-concurrent", "4", "--gpus-per-trial", "0.25"]
        size += ["--cpus-per-trial", "3"]
    model = ["--model", args.model] if args.model else []
    return ["search.run", "absa", "--preset", "smoke", *size, *model, *stores]


def run_step(step: Step, env: dict[str, str], cwd: Path, out: Path) -> dict[str, Any]:
    """``python -m step.argv`` in its own process group, its output in ``out/step.log``; past its limit it gets
    SIGINT (a study ends resumable), then SIGKILL after 60 s more."""
    started = time.monotonic()
    with open(out / step.log, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", *step.argv],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stopped = False
        try:
            code = proc.wait(timeout=step.limit)
        except subprocess.TimeoutExpired:
            stopped = True
            os.killpg(proc.pid, signal.SIGINT)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
    seconds = round(time.monotonic() - started, 1)
    status = "stopped at its limit" if stopped else "passed" if code == 0 else "failed"
    print(f"{step.name}: {status} in {seconds:.0f} s (exit {code}); {out / step.log}", flush=True)
    return {"status": status, "exit_code": code, "seconds": seconds, "limit_s": step.limit, "log": step.log}


def answer(args: argparse.Namespace) -> dict[str, str | None]:
    """The study's verdict and registered model as finalize tagged them on its parent run (None: not reached)."""
    from search.tracking import records as rec
    from search.tracking import runs
    from trainables.config import ConfigError

    store = args.work / "mlflow.db"
    if not store.is_file():  # the study stopped before its stores (reading would create an empty one)
        return {"verdict": None, "model": None}
    try:
        _, parent = runs.find_parent(runs.client(f"sqlite:///{store}"), "absa", None)
    except ConfigError:  # the study stopped before its parent run
        return {"verdict": None, "model": None}
    return {"verdict": parent.data.tags.get(rec.VERDICT_TAG), "model": parent.data.tags.get(rec.MODEL_TAG)}


def collect(args: argparse.Namespace) -> dict[str, str]:
    """The check's JSON, the study's report, final comparison and tracking store, copied to ``--out``."""
    copied = {}
    wanted = {"gpu_check.json": args.work / "gpu_check.json", "mlflow.db": args.work / "mlflow.db"}
    for kind in ("report.md", "final.md"):
        found = sorted(args.work.glob(f"**/{kind}"), key=os.path.getmtime)  # results/ or MLflow's artifacts
        if found:
            wanted[kind] = found[-1]
    for name, path in wanted.items():
        if path.is_file():
            shutil.copyfile(path, args.out / name)
            copied[name] = str(path)
    return copied


def missing_packages() -> list[str]:
    return [name for name in NEEDED if importlib.util.find_spec(name) is None]


def device_name(dry_run: bool) -> str:
    import torch

    return "cpu" if dry_run else torch.cuda.get_device_name()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu_session",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu_session")), help="the files to read")
    p.add_argument("--work", type=Path, help="the study's stores and checkpoints (default: --out/../gpu_session_work)")
    p.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    p.add_argument("--model", help="the encoder of every step (default: the packaged MiniLM)")
    p.add_argument("--dry-run", action="store_true", help="on the CPU at tiny sizes: a smoke check of this script")
    args = p.parse_args(argv)
    args.out = args.out.resolve()
    args.work = (args.work or args.out.parent / f"{args.out.name}_work").resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from trainables.data import resolve_data_dir

    args.data_dir = str(resolve_data_dir(args.data_dir))
    if missing := missing_packages():
        print(f"error: gpu_session needs {', '.join(missing)}: install the project (pip install -e .) first")
        return 2
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        print("error: no CUDA device is visible to torch: run this on a GPU machine (--dry-run: on the CPU)")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # wheels carried there too
    env = {**os.environ, "MTL_DATA_DIR": args.data_dir, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    study = Step("study", study_argv(args), (DRY_LIMITS if args.dry_run else LIMITS)["study"], "study.log")
    summary: dict[str, Any] = {"device": device_name(args.dry_run), "dry_run": args.dry_run, "steps": {}}
    summary["torch"], summary["cuda"] = torch.__version__, torch.version.cuda
    for step in (check_step(args), study):
        summary["steps"][step.name] = {**run_step(step, env, args.work, args.out), "command": step.argv}
        (args.out / "session.json").write_text(json.dumps(summary, indent=2) + "\n")  # so far, should one hang
    summary |= answer(args)
    summary["copied"] = collect(args)
    (args.out / "session.json").write_text(json.dumps(summary, indent=2) + "\n")
    statuses = {name: s["status"] for name, s in summary["steps"].items()}
    print(f"{summary['device']}: {', '.join(f'{k} {v}' for k, v in statuses.items())}; {args.out / 'session.json'}")
    return 0 if all(s == "passed" for s in statuses.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
