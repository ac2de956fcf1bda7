"""``python -m benchmarks.smoke_settings``: one run of the real training core at a candidate smoke setting.

What a smoke preset's trial (or a final run) would train, without Ray: MiniLM on the primary (default
SemEval as NLI_M) and the given auxiliaries, one torch thread (a Ray trial's one CPU), scoring every dev
row each epoch and test after the last. Prints and appends one JSON line: the setting, the primary's
dev ``acc_4way`` after every epoch, test ``acc_4way``, the seconds at each epoch's end (wall, and the
training alone) and the 1-minute load at the start and the end. Compare the scores with the majority
rate (SemEval NLI_M: dev 0.5831 on all 293 sentences, test 0.6639 on the first 1,500 rows): the
verdict counts a final seed at or below it as collapsed. Run two at once to time what a study's two
slots see (issue 30's measurements: benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from trainables.config import EncoderConfig, SamplingConfig, TrainConfig
from trainables.data import resolve_data_dir
from trainables.loop import train


def config(args: argparse.Namespace) -> TrainConfig:
    auxiliary = tuple(a for a in args.aux.split(",") if a)
    return TrainConfig(
        tasks=(args.primary, *auxiliary),
        primary=args.primary,
        sampling=SamplingConfig(schema=args.schema),
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        seed=args.seed,
        max_train_examples=args.rows,
        max_eval_examples=args.eval_rows,
        max_auxiliary_eval_examples=250,
        data_dir=str(resolve_data_dir(None)),
        device="cpu",
        evaluate_test=True,
        encoder=EncoderConfig(max_seq_length=args.tokens),
    )


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.smoke_settings", description=__doc__)
    p.add_argument("--rows", type=int, default=900, help="training rows per task")
    p.add_argument("--eval-rows", type=int, default=1500, help="primary dev and test rows")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--aux", default="", help="comma-separated auxiliary tasks (none: single-task)")
    p.add_argument("--schema", default="prop")
    p.add_argument("--primary", default="semeval:NLI_M")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/smoke_settings.jsonl"))
    args = p.parse_args()
    torch.set_num_threads(1)  # a Ray trial's one CPU
    name = args.primary.split(":")[0]
    load, started, curve, at = os.getloadavg()[0], time.perf_counter(), [], []
    metrics: dict[str, float] = {}
    for metrics in train(config(args)):
        curve.append(round(metrics[f"{name}/dev/acc_4way"], 4))
        at.append((round(time.perf_counter() - started, 1), round(metrics["train/seconds"], 1)))
    line = {
        **{k: v for k, v in vars(args).items() if k != "out"},
        "dev_acc_4way": curve,
        "test_acc_4way": round(metrics[f"{name}/test/acc_4way"], 4),
        "seconds_wall_train": at,
        "load_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(line), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
