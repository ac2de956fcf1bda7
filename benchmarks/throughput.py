"""``python -m benchmarks.throughput``: training throughput, measured as ratios in one run.

1. The multitask loop (``Trainer.step``: sampling, batch iteration, collate,
   clipping, scheduler) against a bare PyTorch loop over the *same* batches,
   pre-collated, on the same model. Goal: ratio >= 0.95.
2. Dynamic padding (each batch to its longest row) against fixed 128-token
   padding, on SemEval QA_B rows. Goal: speed-up >= 1.5x.

Blocks of the contenders alternate so drift in machine load hits both alike.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import time

import numpy as np
import torch

from trainables.batching import collate
from trainables.cli import setup_logging
from trainables.config import DEFAULT_MODEL, EncoderConfig, SamplingConfig, TrainConfig
from trainables.data import resolve_data_dir
from trainables.loop import Trainer


def bare_steps(trainer: Trainer, batches: list[dict[str, torch.Tensor]]) -> float:
    """Forward, backward, AdamW step over pre-built batches; returns seconds."""
    model, optimizer, loss_fn = trainer.model, trainer.optimizer, torch.nn.CrossEntropyLoss()
    name = trainer.names[0]
    model.train()
    started = time.perf_counter()
    for batch in batches:
        batch = dict(batch)
        labels = batch.pop("labels")
        logits = model(name, **batch)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return time.perf_counter() - started


def loop_steps(trainer: Trainer, n: int) -> float:
    trainer.model.train()
    started = time.perf_counter()
    for _ in range(n):
        trainer.step(trainer.sampler.sample(0))
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__)
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--steps", type=int, default=3, help="steps per timed block")
    p.add_argument("--rounds", type=int, default=5, help="ABBA rounds; the summary takes medians")
    p.add_argument("--batch-size", type=int, default=24)
    p.add_argument("--data-dir")
    p.add_argument("--out", help="also write the JSON summary here")
    args = p.parse_args()
    setup_logging()
    torch.manual_seed(0)
    config = TrainConfig(
        tasks=("semeval",), primary="semeval", sampling=SamplingConfig(schema="random"),
        encoder=EncoderConfig(model=args.model, max_seq_length=128), batch_size=args.batch_size,
        max_train_examples=args.batch_size * args.steps * args.rounds * 8, max_eval_examples=25,
        data_dir=str(resolve_data_dir(args.data_dir)), evaluate_test=False, device="cpu",
        lr=1e-5, epochs=100,  # no warm-up cliff inside the benchmark
    )
    trainer = Trainer(config)
    data, padding = trainer.data["semeval"].train, trainer.padding

    # the same batches the loop will draw next, pre-collated for the bare loop
    def upcoming(n: int, fixed: int | None = None) -> list[dict[str, torch.Tensor]]:
        twin = copy.deepcopy(trainer.batches[0])
        return [collate(data, twin.next(), padding, "sequence", fixed) for _ in range(n)]

    bare_steps(trainer, upcoming(2))  # warm-up: allocator, kernels
    loop_steps(trainer, 2)
    # ABBA order within each round cancels linear drift; the median of per-round
    # ratios resists bursts of load from elsewhere on the machine
    loop_ratios, pad_ratios, totals = [], [], {"loop": 0.0, "bare": 0.0, "dynamic": 0.0, "fixed128": 0.0}
    for _ in range(args.rounds):
        bare = bare_steps(trainer, upcoming(args.steps))
        loop = loop_steps(trainer, args.steps)
        loop += loop_steps(trainer, args.steps)
        bare += bare_steps(trainer, upcoming(args.steps))
        dynamic = bare_steps(trainer, upcoming(args.steps))
        fixed = bare_steps(trainer, upcoming(args.steps, fixed=128))
        fixed += bare_steps(trainer, upcoming(args.steps, fixed=128))
        dynamic += bare_steps(trainer, upcoming(args.steps))
        loop_ratios.append(bare / loop)
        pad_ratios.append(fixed / dynamic)
        for key, value in (("loop", loop), ("bare", bare), ("dynamic", dynamic), ("fixed128", fixed)):
            totals[key] += value
    samples = 2 * args.rounds * args.steps * args.batch_size
    lengths = data.lengths()
    summary = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, threads {torch.get_num_threads()}",
        "model": args.model,
        "batch_size": args.batch_size,
        "steps_per_block": args.steps,
        "rounds": args.rounds,
        "semeval_qa_b_tokens_mean": float(lengths.mean()),
        "semeval_qa_b_tokens_max": int(lengths.max()),
        **{f"{k}_samples_per_s": samples / v for k, v in totals.items()},
        "loop_vs_bare_ratio": float(np.median(loop_ratios)),
        "loop_vs_bare_per_round": loop_ratios,
        "dynamic_padding_speedup": float(np.median(pad_ratios)),
        "dynamic_padding_per_round": pad_ratios,
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        from trainables.cli import write_json

        write_json(args.out, summary)


if __name__ == "__main__":
    main()
