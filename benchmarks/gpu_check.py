"""``python -m benchmarks.gpu_check``: what a GPU machine has to confirm, in one command and one JSON.

Stages (``--stages`` picks some), each recorded as passed, failed or skipped with its figures:

1. ``tests``: the CUDA tests (``pytest -m cuda``), which skip without a GPU.
2. ``training``: the default MiniLM trained on SemEval + SST-2 in bf16 and in fp16 (two epochs
   of about 150 steps), resumed from its first epoch's checkpoint, and compared with an
   uninterrupted run; a second uninterrupted run shows the run-to-run noise of CUDA's
   nondeterministic kernels. Sampling must match exactly, the losses within 2%.
3. ``sync``: training steps of that model under ``torch.cuda.set_sync_debug_mode("error")``.
4. ``throughput``: ``benchmarks.throughput`` (MiniLM, and a random-init bert-base) with MFU.
5. ``sharing``: ``benchmarks.gpu_sharing`` at 1, 2 and 4 trials per GPU.

Each subprocess stage has a time limit, so the whole check ends in under 10 minutes on one GPU
however a stage goes (the limits are an upper bound, never a measured time). ``--device cpu``
runs every stage shortened, as a smoke check of this script; its figures are not GPU figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks import options
from trainables.config import DEFAULT_MODEL, EncoderConfig, TrainConfig
from trainables.data import resolve_data_dir
from trainables.loop import Trainer, train

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("tests", "training", "sync", "throughput", "sharing")
# seconds per subprocess stage on a GPU: 120 + 2 x 80 + 200 = 480 s, leaving two minutes for
# training and sync; the CPU smoke check gets CPU_SLOWER times as long
LIMITS = {"tests": 120, "throughput": 80, "sharing": 200}
CPU_SLOWER = 4
logger = logging.getLogger("benchmarks.gpu_check")


# -- training: resume within tolerance ---------------------------------------------
def training_config(args: argparse.Namespace, precision: str) -> TrainConfig:
    """Two epochs of about 150 steps (3,600 rows per task in batches of 24), or 2 steps on the CPU."""
    rows = 3600 if args.device == "cuda" else 50
    return TrainConfig(
        tasks=("semeval", "sst2"),
        primary="semeval",
        encoder=EncoderConfig(model=args.model),
        epochs=2,
        batch_size=24,
        max_train_examples=rows,
        max_eval_examples=rows // 5,
        evaluate_test=False,
        data_dir=str(resolve_data_dir(args.data_dir)),
        device=args.device,
        precision=precision,
        seed=1,
    )


def resume_check(config: TrainConfig, folder: Path) -> dict[str, Any]:
    """An uninterrupted run twice, and one resumed from its epoch-1 checkpoint; the last epoch compared."""
    straight, again = list(train(config)), list(train(config))
    first = Trainer(config)
    first.run_epoch()
    first.save(folder / "epoch1.pt")
    second = Trainer(config)
    second.load(folder / "epoch1.pt")
    while second.epoch < config.epochs:
        resumed = second.run_epoch()
    a, b, c = straight[-1], again[-1], resumed
    keys = [k for k in a if "second" not in k and k != "epoch"]
    resume_diff = {k: abs(c[k] - a[k]) for k in keys}
    sampling_exact = all(resume_diff[k] == 0 for k in keys if k.startswith("sampling/"))
    loss_close = abs(c["train/loss"] - a["train/loss"]) <= 0.02 * abs(a["train/loss"])
    return {
        "status": "passed" if sampling_exact and loss_close else "failed",
        "train_loss_by_epoch": [m["train/loss"] for m in straight],
        "train_loss_straight_rerun_resumed": [a["train/loss"], b["train/loss"], c["train/loss"]],
        "max_abs_diff_resumed_vs_straight": max(resume_diff.values()),
        "max_abs_diff_rerun_vs_straight": max(abs(b[k] - a[k]) for k in keys),
        "diff_resumed_vs_straight": resume_diff,
        "samples_per_s": straight[-1]["train/samples_per_second"],
    }


def training(args: argparse.Namespace) -> dict[str, Any]:
    precisions = ["bf16", "fp16"] if args.device == "cuda" else ["fp32"]
    if args.device == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False):
        precisions = ["fp16"]  # pre-Ampere: no native bf16
    with tempfile.TemporaryDirectory() as folder:
        runs = {p: resume_check(training_config(args, p), Path(folder)) for p in precisions}
    return {"status": worst(r["status"] for r in runs.values()), "runs": runs}


# -- sync: no host sync between the loop's checks ---------------------------------
def sync(args: argparse.Namespace, steps: int = 20) -> dict[str, Any]:
    if args.device != "cuda":
        return {"status": "skipped", "reason": "no CUDA device"}
    trainer = Trainer(training_config(args, "auto"))
    trainer.model.train()
    draws = list(trainer.draws(0, steps + 1))
    trainer.backward(*draws[0])  # the one-time set-up of the first step may sync
    trainer.optimizer_step()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for t, batch in draws[1:]:
            trainer.backward(t, batch)
            trainer.optimizer_step()
    except RuntimeError as exc:
        return {"status": "failed", "precision": trainer.precision.name, "error": str(exc).splitlines()[0]}
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    return {"status": "passed", "precision": trainer.precision.name, "steps": steps}


# -- subprocess stages: the CUDA tests and both benchmarks ---------------------------
def run_module(argv: list[str], limit: float, data_dir: str) -> tuple[int | None, str]:
    """``python -m argv`` from the repository root: (exit code, or None past ``limit`` seconds; output)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv],
        cwd=ROOT,
        env={**os.environ, "MTL_DATA_DIR": data_dir},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a timeout also ends gpu_sharing's trials
    )
    try:
        output = proc.communicate(timeout=limit)[0]
        return proc.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return None, proc.communicate()[0]


def time_limit(args: argparse.Namespace, stage: str) -> float:
    return LIMITS[stage] * (CPU_SLOWER if args.device == "cpu" else 1)


def failure(code: int | None, output: str, limit: float) -> dict[str, Any]:
    reason = f"ran past its {limit:.0f} s limit" if code is None else f"exited with code {code}"
    return {"status": "failed", "error": reason, "output_tail": output[-3000:]}


def tests(args: argparse.Namespace) -> dict[str, Any]:
    """``pytest -m cuda`` over the suite; each test's outcome (a skip with its reason)."""
    with tempfile.TemporaryDirectory() as folder:
        junit = Path(folder) / "junit.xml"
        argv = ["pytest", "-m", "cuda", "-rs", "-p", "no:cacheprovider", f"--junitxml={junit}", "tests"]
        code, output = run_module(argv, time_limit(args, "tests"), args.data_dir)
        outcomes = junit_outcomes(junit) if junit.is_file() else {}
    if code not in (0, 1) or not outcomes:  # 1: some test failed, reported below
        return failure(code, output, time_limit(args, "tests"))
    statuses = [o.split(":")[0] for o in outcomes.values()]
    return {"status": worst(statuses), "tests": outcomes}


def junit_outcomes(path: Path) -> dict[str, str]:
    """``{test id: "passed" | "failed: message" | "skipped: reason"}`` from pytest's JUnit XML."""
    out = {}
    for case in ET.parse(path).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if bad is not None:
            out[name] = f"failed: {bad.get('message', '')[:500]}"
        elif skipped is not None:
            out[name] = f"skipped: {skipped.get('message', '')}"
        else:
            out[name] = "passed"
    return out


def benchmark(module: str, argv: list[str], limit: float, data_dir: str) -> dict[str, Any]:
    """One benchmark run, its JSON summary under ``result``."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.json"
        code, output = run_module([module, *argv, "--data-dir", data_dir, "--out", str(out)], limit, data_dir)
        if code != 0 or not out.is_file():
            return failure(code, output, limit)
        return {"status": "passed", "result": json.loads(out.read_text())}


def throughput(args: argparse.Namespace) -> dict[str, Any]:
    cpu = args.device == "cpu"
    sizes = ["--steps", "1", "--padding-steps", "1", "--rounds", "1", "--batch-size", "4"] if cpu else []
    encoders = {"default": ["--model", args.model]}
    if not cpu:  # a random bert-base is 440 MB to write and minutes per step on a CPU
        encoders["random-init bert-base"] = ["--random-init", "bert-base"]
    seconds = time_limit(args, "throughput")
    runs = {
        name: benchmark("benchmarks.throughput", [*encoder, "--device", args.device, *sizes], seconds, args.data_dir)
        for name, encoder in encoders.items()
    }
    return {"status": worst(r["status"] for r in runs.values()), "runs": runs}


def sharing(args: argparse.Namespace) -> dict[str, Any]:
    counts, steps = ("1,2", "2") if args.device == "cpu" else ("1,2,4", "50")
    seconds = time_limit(args, "sharing")
    argv = ["--model", args.model, "--device", args.device, "--trials-per-gpu", counts, "--steps", steps]
    return benchmark("benchmarks.gpu_sharing", [*argv, "--timeout", str(seconds - 20)], seconds, args.data_dir)


# -- the check ------------------------------------------------------------------------
RUNNERS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "tests": tests,
    "training": training,
    "sync": sync,
    "throughput": throughput,
    "sharing": sharing,
}


def worst(statuses) -> str:
    """failed if any failed, else passed if any passed, else skipped."""
    statuses = set(statuses)
    return "failed" if "failed" in statuses else "passed" if "passed" in statuses else "skipped"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a shortened smoke check of this script"
    )
    p.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    p.add_argument("--model", default=DEFAULT_MODEL, help="the encoder of the training, sync and benchmark stages")
    p.add_argument("--data-dir")
    p.add_argument("--out", default="gpu_check.json", help="the JSON written (after every stage)")
    args = p.parse_args(argv)
    args.stages = [s for s in args.stages.split(",") if s]
    if unknown := set(args.stages) - set(STAGES):
        p.error(f"--stages: unknown {', '.join(sorted(unknown))}; expected some of {', '.join(STAGES)}")
    args.data_dir = str(resolve_data_dir(args.data_dir))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device is visible to torch: run this on a GPU machine (--device cpu: a smoke check)")
        return 2
    from trainables.cli import setup_logging, write_json

    setup_logging()
    device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    report: dict[str, Any] = {**options.header(), "device": device, "cuda": torch.version.cuda, "stages": {}}
    for stage in args.stages:
        started = time.monotonic()
        try:
            result = RUNNERS[stage](args)
        except Exception as exc:  # one stage's failure is a finding; the others still run
            result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        report["stages"][stage] = {**result, "seconds": round(time.monotonic() - started, 1)}
        report["status"] = worst(r["status"] for r in report["stages"].values())
        write_json(args.out, report)  # so far, should a later stage hang the machine
        logger.info("%s: %s in %.0f s", stage, result["status"], report["stages"][stage]["seconds"])
    stages = ", ".join(f"{name} {result['status']}" for name, result in report["stages"].items())
    print(f"{device}: {report['status']} ({stages}); {args.out}")
    return 1 if report["status"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
