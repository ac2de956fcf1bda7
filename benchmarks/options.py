"""What both benchmarks take from the command line, and the training run they measure.

``benchmarks.throughput`` and ``benchmarks.gpu_sharing`` share their flags (encoder, device,
precision, tasks, batch size, data, output), the encoder they resolve from them and the
:class:`TrainConfig` they train; each adds its own flags.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from typing import Any

import torch

from benchmarks.random_encoder import SHAPES, describe, save_random_encoder
from trainables.cli import default_cache_dir
from trainables.config import DEFAULT_MODEL, PRECISIONS, EncoderConfig, SamplingConfig, TrainConfig
from trainables.data import resolve_data_dir

FIXED_LENGTH = 128  # the longest row trained (max_seq_length), and throughput's fixed padding


def parser(prog: str, description: str | None, devices: tuple[str, ...]) -> argparse.ArgumentParser:
    """The shared flags; ``devices``: ``--device``'s choices, the first the default."""
    p = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default=DEFAULT_MODEL, help="any AutoModel name or local path")
    p.add_argument(
        "--random-init",
        choices=sorted(SHAPES),
        metavar="SHAPE",
        help="instead of --model's weights, a randomly initialised encoder of this shape ("
        + "; ".join(describe(s) for s in SHAPES)
        + "); throughput depends on the architecture, not the weights",
    )
    p.add_argument("--device", choices=devices, default=devices[0], help="auto: CUDA when available")
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="auto: bf16 on CUDA with native bf16, fp16 on older CUDA, fp32 on CPU",
    )
    p.add_argument(
        "--tasks",
        default="semeval,sst2",
        help="tasks of the multitask loop, sampled uniformly; throughput's padding comparison uses the first",
    )
    p.add_argument("--batch-size", type=int, default=24)
    p.add_argument("--data-dir")
    p.add_argument("--out", help="also write the JSON summary here")
    return p


def parse(p: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: no CUDA device is visible to torch (--device cpu for a smoke check)")
    return args


def encoder(args: argparse.Namespace) -> tuple[str, str]:
    """``(model path, label)``: ``--model``, or the ``--random-init`` encoder saved once in the cache."""
    if not args.random_init:
        return args.model, args.model
    path = save_random_encoder(args.random_init, default_cache_dir() / "random-encoders")
    return str(path), describe(args.random_init)


def benchmark_config(args: argparse.Namespace, model: str, seed: int = 0, **options: Any) -> TrainConfig:
    """What both benchmarks train: ``--tasks`` sampled at random, batches of ``--batch-size``
    at up to FIXED_LENGTH tokens, with ``--device`` and ``--precision``, plus ``options``."""
    tasks = tuple(t for t in args.tasks.split(",") if t)
    return TrainConfig(
        tasks=tasks,
        primary=tasks[0],
        sampling=SamplingConfig(schema="random"),
        encoder=EncoderConfig(model=model, max_seq_length=FIXED_LENGTH),
        batch_size=args.batch_size,
        max_train_examples=2400,
        max_eval_examples=25,
        data_dir=str(resolve_data_dir(args.data_dir)),
        evaluate_test=False,
        device=args.device,
        seed=seed,
        precision=args.precision,
        lr=1e-5,
        epochs=100,  # a long schedule: no warm-up cliff or decay to zero inside the benchmark
        **options,
    )


def header(threads: bool = True) -> dict[str, str]:
    """The date and the machine, first in every benchmark's JSON."""
    machine = f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}"
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine + (f", threads {torch.get_num_threads()}" if threads else ""),
    }


def report(summary: dict[str, Any], out: str | None) -> None:
    """Print the summary; also write it to ``out``."""
    print(json.dumps(summary, indent=2))
    if out:
        from trainables.cli import write_json

        write_json(out, summary)
