"""``python -m benchmarks.learning_curves``: each schema family's real learning curve, on the CPU.

``--grid``: the real-curve table instead, every cell of the thesis grid on several seeds
(:mod:`benchmarks.curve_grid`).

Trains MiniLM on the smoke data (the absa study's smoke preset: SemEval as NLI_M, SST-2 and PoS as
the auxiliaries, 32 tokens) for ``--epochs`` epochs and ``--seeds`` seeds per family, with the real
training core (``trainables.loop.train``, no Ray), and records the primary's dev metric after every
epoch: one JSON line per (family, seed) in ``--out``. ``--summary`` reads such a file and prints each
family's mean deficit after each epoch relative to the last (in pp) with its seed SD: what the
truths' ``[[curve]]`` tables should be compared with (docs/truth-files.md).

``--screens 0.25,0.5`` also scores dev at those fractions of the first epoch (``Trainer.run_to``, as a screen
point of a search trial does; the epochs after them train exactly as without) and records them with the
dev rows' majority rate: what the truths' rule inside the first epoch (linear from the majority rate to the
epoch-1 score) should be compared with; ``--summary`` prints that table too (scores minus the majority rate).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks import curve_grid
from trainables.config import EncoderConfig, SamplingConfig, TrainConfig
from trainables.data import resolve_data_dir
from trainables.loop import Trainer
from trainables.majority import majority_scores

PRIMARY, METRIC = "semeval:NLI_M", "semeval/dev/acc_4way"
AUXILIARY = ("sst2", "pos")  # the thesis's best auxiliary set
# family -> its sampling (None: single-task). anneal_c 0.9 is the trainable's default; power's
# exponent 2 is the thesis's "square", the far end of the static schemas from prop
FAMILIES: dict[str, SamplingConfig | None] = {
    "single": None,
    "prop": SamplingConfig(schema="prop"),
    "anneal": SamplingConfig(schema="anneal", anneal_c=0.9),
    "power": SamplingConfig(schema="power", exponent=2.0),
    "sequential": SamplingConfig(schema="sequential"),
}


def config(family: str, seed: int, args: argparse.Namespace) -> TrainConfig:
    sampling = FAMILIES[family]
    tasks = (PRIMARY,) if sampling is None else (PRIMARY, *AUXILIARY)
    return TrainConfig(
        tasks=tasks,
        primary=PRIMARY,
        sampling=sampling or SamplingConfig(),
        epochs=args.epochs,
        batch_size=16,
        lr=args.lr,
        seed=seed,
        max_train_examples=args.train_rows,
        max_eval_examples=args.eval_rows,
        max_auxiliary_eval_examples=8,  # auxiliaries' scores are not recorded here
        data_dir=str(resolve_data_dir(None)),
        device="cpu",
        evaluate_test=False,
        encoder=EncoderConfig(max_seq_length=32),
    )


def run(family: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    cfg = config(family, seed, args)
    trainer = Trainer(cfg)
    screens = [[f, trainer.run_to(f)[METRIC]] for f in args.screens]  # inside the first epoch
    curve, seconds = [], []
    for epoch in range(1, cfg.epochs + 1):
        metrics = trainer.run_to(epoch)
        curve.append(metrics[METRIC])
        seconds.append(metrics["train/seconds"])
    primary = trainer.data[PRIMARY]
    majority = majority_scores(primary.task, primary.dev_examples)[METRIC.rsplit("/", 1)[1]]
    return {
        "family": family,
        "seed": seed,
        "metric": METRIC,
        "curve": curve,
        "train_seconds": seconds,
        "seconds": time.perf_counter() - started,
        "train_rows": args.train_rows,
        "eval_rows": args.eval_rows,
        "lr": args.lr,
        "screens": screens,  # [fraction of epoch 1, dev score]
        "majority": majority,  # the dev rows' majority rate (the truths' score of an untrained model)
    }


def summary(path: Path) -> str:
    """Markdown: per family, the mean deficit (pp) after each epoch below the last, ± seed SD."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    families = list(dict.fromkeys(line["family"] for line in lines))
    epochs = len(lines[0]["curve"])
    head = " | ".join(f"deficit after {e}" for e in range(1, epochs)) + f" | final ({epochs})"
    out = [f"| family | seeds | {head} |", "|---" * (epochs + 2) + "|"]
    for family in families:
        curves = np.array([line["curve"] for line in lines if line["family"] == family]) * 100
        deficit = curves[:, -1:] - curves[:, :-1]  # (seeds, epochs - 1), positive: below the final score
        cells = [f"{d.mean():+.1f} ± {d.std(ddof=1) if len(d) > 1 else float('nan'):.1f}" for d in deficit.T]
        final = curves[:, -1]
        sd = final.std(ddof=1) if len(final) > 1 else float("nan")
        out.append(f"| {family} | {len(curves)} | {' | '.join(cells)} | {final.mean():.1f} ± {sd:.1f} |")
    return "\n".join(out + screen_summary(lines))


def screen_summary(lines: list[dict[str, Any]]) -> list[str]:
    """Markdown: per family, the dev score at each screen point and after epoch 1, each minus the dev rows'
    majority rate (pp, mean ± seed SD): the truths' rule puts a config at F of its epoch-1 distance from it."""
    lines = [line for line in lines if line.get("screens")]
    if not lines:
        return []
    fractions = [f for f, _ in lines[0]["screens"]]
    head = " | ".join(f"at {f:g} of epoch 1" for f in fractions)
    out = ["", f"| family | seeds | majority | {head} | after epoch 1 |", "|---" * (len(fractions) + 4) + "|"]
    for family in dict.fromkeys(line["family"] for line in lines):
        mine = [line for line in lines if line["family"] == family]
        majority = np.array([line["majority"] for line in mine]) * 100
        scores = [np.array([line["screens"][i][1] for line in mine]) * 100 for i in range(len(fractions))]
        scores.append(np.array([line["curve"][0] for line in mine]) * 100)
        cells = [f"{(x - majority).mean():+.1f} ± {sd(x):.1f}" for x in scores]
        out.append(f"| {family} | {len(mine)} | {majority.mean():.1f} | {' | '.join(cells)} |")
    return out


def sd(values: np.ndarray) -> float:
    return float(values.std(ddof=1)) if len(values) > 1 else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.learning_curves", description=__doc__)
    p.add_argument("--out", default="benchmarks/results/learning_curves.jsonl")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, of " + ",".join(FAMILIES))
    p.add_argument("--seeds", type=int, default=3, help="seeds per family (--grid: per cell, the preset's then on)")
    p.add_argument("--first-seed", type=int, default=1, help="seeds first-seed .. first-seed + seeds - 1")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--train-rows", type=int, default=300, help="training rows per task")
    p.add_argument("--eval-rows", type=int, default=500, help="primary dev rows")
    p.add_argument("--lr", type=float, default=1e-4, help="the smoke preset's baseline lr")
    p.add_argument(
        "--screens",
        type=lambda v: [float(f) for f in v.split(",") if f.strip()],
        default=[],
        help="comma-separated fractions of the first epoch to score dev at too (0.25,0.5)",
    )
    p.add_argument("--summary", action="store_true", help="only print the table of --out")
    curve_grid.add_arguments(p)
    args = p.parse_args()
    if args.grid:
        args.out, args.threads, args.screen = args.table_out, args.threads or 1, args.screen or None
        raise SystemExit(curve_grid.build(args))
    out = Path(args.out)
    if args.summary:
        print(summary(out))
        return
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise SystemExit(f"error: --families {','.join(unknown)}: expected some of {','.join(FAMILIES)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.threads:  # on a loaded machine one thread per process wastes no time spinning
        torch.set_num_threads(args.threads)
    for seed in range(args.first_seed, args.first_seed + args.seeds):  # seed-major: a stop keeps every family
        for family in families:
            line = run(family, seed, args)
            with out.open("a") as f:
                f.write(json.dumps(line) + "\n")
            print(f"{family} seed {seed}: {[round(c, 4) for c in line['curve']]} in {line['seconds']:.0f}s", flush=True)


if __name__ == "__main__":
    main()
