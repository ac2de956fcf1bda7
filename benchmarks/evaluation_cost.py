"""``python -m benchmarks.evaluation_cost``: what scoring test in every search trial used to cost.

Search trials no longer score test (issue 17): only finalize's runs do. Before that, every seed
of every trial that reached the last epoch scored each task's test split once. This measures,
in one run on one seed of one multitask trial at a preset's scale (every candidate task, the
``prop`` schema), the seconds of one training epoch, of scoring every task's dev split (done each
epoch) and of scoring every task's test split (done once, after the last), and prints the share
of a completed trial's time that test scoring took. A trial stopped by ASHA never scored test.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from search.study.config import SearchConfig
from search.study.kind import TrainedTrials
from search.study.plan import plan_offline
from trainables.cli import setup_logging
from trainables.config import SamplingConfig
from trainables.loop import Trainer, prepare_data
from trainables.model import load_tokenizer


def measure(study: str, preset: str, data_dir: str | None, model: str | None = None) -> dict:
    cfg = SearchConfig(study, preset=preset, data_dir=data_dir, model=model)
    p = plan_offline(cfg, TrainedTrials())
    s, base = p.study, p.base
    config = base.with_(
        tasks=(s.primary, *s.candidates), sampling=SamplingConfig(schema="prop"), seed=1, evaluate_test=True
    )
    tokenizer = load_tokenizer(config.encoder)
    trainer = Trainer(config, prepare_data(config, tokenizer), tokenizer, name="evaluation-cost benchmark")
    trainer.model.train()
    started = time.perf_counter()
    trainer.train_steps(0, trainer.steps_per_epoch)
    train = time.perf_counter() - started
    seconds, rows = {}, {}
    for split in ("dev", "test"):
        started = time.perf_counter()
        for name, d in trainer.data.items():
            encoded, examples = (d.dev, d.dev_examples) if split == "dev" else (d.test, d.test_examples)
            if encoded is not None:
                trainer._scores(name, split, encoded, examples)
                rows[split] = rows.get(split, 0) + len(examples)
        seconds[split] = time.perf_counter() - started
    epochs = config.epochs
    trial = epochs * (train + seconds["dev"]) + seconds["test"]
    return {
        "study": study,
        "preset": preset,
        "model": config.encoder.model,
        "tasks": list(config.tasks),
        "epochs": epochs,
        "train_epoch_seconds": train,
        "dev_scoring_seconds": seconds["dev"],
        "test_scoring_seconds": seconds["test"],
        "dev_rows": rows.get("dev", 0),
        "test_rows": rows.get("test", 0),
        "completed_seed_seconds_before": trial,
        "test_share_of_a_completed_seed": seconds["test"] / trial,
        "machine": ", ".join(
            filter(None, (platform.machine(), f"{torch.get_num_threads()} torch threads", platform.processor()))
        ),
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.evaluation_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--study", default="absa")
    p.add_argument("--preset", default="smoke")
    p.add_argument("--data-dir", default=None, help="data root (default: $MTL_DATA_DIR)")
    p.add_argument("--model", default=None, help="encoder (default: the preset's)")
    p.add_argument("--out", default=None, help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    setup_logging()
    result = measure(args.study, args.preset, args.data_dir, args.model)
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
