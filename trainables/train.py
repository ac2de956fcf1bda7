"""``python -m trainables.train``: one multitask fine-tuning run, no Ray or MLflow."""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict

from trainables.cli import ArgumentParser, check_writable, run_main, setup_logging, write_json
from trainables.config import (
    BANDIT_REWARDS,
    GRADIENTS,
    LOSS_WEIGHTINGS,
    PRECISIONS,
    SCHEMAS,
    STEP_MODES,
    SUMMARIES,
    UNFREEZE,
    ConfigError,
    EncoderConfig,
    OptimConfig,
    SamplingConfig,
    TrainConfig,
    parse_weights,
)
from trainables.data import resolve_data_dir
from trainables.loop import DivergedError, train
from trainables.tasks import DataError
from trainables.tasks.base import PROTOCOLS

logger = logging.getLogger("trainables.train")


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="python -m trainables.train", description=__doc__)
    p.add_argument("--tasks", required=True, help="comma-separated task specs, e.g. semeval,sst2,pos")
    p.add_argument("--primary", help="the primary task (default: the first of --tasks)")
    p.add_argument("--sampling", default=SamplingConfig.schema, choices=SCHEMAS, help="task-sampling schema")
    p.add_argument("--exponent", type=float, help="exponent a for --sampling power")
    p.add_argument(
        "--anneal-c", type=float, default=SamplingConfig.anneal_c, help="annealing constant c for --sampling anneal"
    )
    p.add_argument("--weights", default="", help="TASK=TIER|NUMBER,... (default primary 4, others 2)")
    strategies(p)
    p.add_argument("--model", default=EncoderConfig.model, help="encoder: AutoModel name or local path")
    p.add_argument(
        "--summary",
        choices=SUMMARIES,
        help="sequence summary (default: the pooling the encoder declares, else by model type)",
    )
    p.add_argument("--max-seq-length", type=int, default=EncoderConfig.max_seq_length)
    p.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    p.add_argument("--lr", type=float, default=TrainConfig.lr)
    p.add_argument("--warmup", type=float, default=TrainConfig.warmup)
    p.add_argument("--seed", type=int, default=TrainConfig.seed)
    p.add_argument("--max-train-examples", type=int, help="per task (whole evaluation groups)")
    p.add_argument("--max-eval-examples", type=int, help="per task (whole evaluation groups)")
    p.add_argument(
        "--max-auxiliary-eval-examples", type=int, help="per auxiliary task (default: as --max-eval-examples)"
    )
    p.add_argument("--protocol", default=TrainConfig.protocol, choices=PROTOCOLS)
    p.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    p.add_argument("--device", default=TrainConfig.device)
    p.add_argument(
        "--precision",
        default=TrainConfig.precision,
        choices=PRECISIONS,
        help="auto: bf16 on CUDA with native bf16, fp16 with loss scaling on older CUDA, fp32 on CPU",
    )
    p.add_argument(
        "--grad-accum", type=int, default=TrainConfig.grad_accum, metavar="K", help="micro-batches per optimizer step"
    )
    p.add_argument(
        "--check-every", type=int, default=TrainConfig.check_every, metavar="N", help="steps between finite-loss checks"
    )
    p.add_argument(
        "--pad-to-multiple-of", type=int, metavar="M", help="round batch widths up (default: 8 on CUDA, 1 on CPU)"
    )
    p.add_argument("--compile", action="store_true", help="torch.compile the training forward (dynamic shapes)")
    p.add_argument("--no-prefetch", action="store_true", help="collate each batch in the training thread")
    p.add_argument("--group-by-length", action="store_true", help="training batches of similar lengths: less padding")
    p.add_argument("--metrics-out", help="write every epoch's metrics to this JSON file")
    p.add_argument("--verbose", action="store_true")
    return p


def strategies(p: ArgumentParser) -> None:
    """Issue 19's flags: the bandit sampler's, and how an optimizer step is made (all off by default)."""
    s, o = SamplingConfig, OptimConfig
    p.add_argument("--bandit-reward", default=s.bandit_reward, choices=BANDIT_REWARDS, help="--sampling bandit")
    p.add_argument("--bandit-lr", type=float, default=s.bandit_lr, help="EXP3 step size (--sampling bandit)")
    p.add_argument("--bandit-explore", type=float, default=s.bandit_explore, help="EXP3 uniform share γ")
    p.add_argument("--bandit-every", type=int, default=s.bandit_every, metavar="N", help="steps between rewards")
    p.add_argument("--loss-weighting", default=o.loss_weighting, choices=LOSS_WEIGHTINGS)
    p.add_argument("--uncertainty-lr", type=float, default=o.uncertainty_lr, help="lr of the log-variances")
    p.add_argument("--gradients", default=o.gradients, choices=GRADIENTS, help="over the tasks of one step")
    p.add_argument("--step-mode", default=o.step_mode, choices=STEP_MODES, help="all: one batch of every task per step")
    p.add_argument("--layer-decay", type=float, default=o.layer_decay, help="layer-wise lr decay in (0, 1]; 1: off")
    p.add_argument("--unfreeze", default=o.unfreeze, choices=UNFREEZE, help="gradual unfreezing, top layers first")
    p.add_argument("--unfreeze-every", type=int, default=o.unfreeze_every, metavar="M", help="epochs or steps")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    return TrainConfig(
        tasks=tasks,
        primary=args.primary or (tasks[0] if tasks else ""),
        sampling=SamplingConfig(
            schema=args.sampling,
            exponent=args.exponent,
            anneal_c=args.anneal_c,
            weights=parse_weights(args.weights),
            bandit_reward=args.bandit_reward,
            bandit_lr=args.bandit_lr,
            bandit_explore=args.bandit_explore,
            bandit_every=args.bandit_every,
        ),
        optim=OptimConfig(
            loss_weighting=args.loss_weighting,
            uncertainty_lr=args.uncertainty_lr,
            gradients=args.gradients,
            step_mode=args.step_mode,
            layer_decay=args.layer_decay,
            unfreeze=args.unfreeze,
            unfreeze_every=args.unfreeze_every,
        ),
        encoder=EncoderConfig(model=args.model, summary=args.summary, max_seq_length=args.max_seq_length),
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        seed=args.seed,
        max_train_examples=args.max_train_examples,
        max_eval_examples=args.max_eval_examples,
        max_auxiliary_eval_examples=args.max_auxiliary_eval_examples,
        protocol=args.protocol,
        data_dir=str(resolve_data_dir(args.data_dir)),
        device=args.device,
        precision=args.precision,
        grad_accum=args.grad_accum,
        check_every=args.check_every,
        pad_to_multiple_of=args.pad_to_multiple_of,
        compile=args.compile,
        prefetch=not args.no_prefetch,
        group_by_length=args.group_by_length,
    )


def main() -> int:
    args = parser().parse_args()
    setup_logging(args.verbose)
    config = config_from_args(args)
    if args.metrics_out:
        check_writable(args.metrics_out, "--metrics-out")
    epochs: list[dict[str, float]] = []

    def save(**extra: str) -> None:  # after every epoch: a divergence or a kill keeps the epochs before it
        if args.metrics_out:
            write_json(args.metrics_out, {"config": asdict(config), "epochs": epochs, **extra})

    try:
        for metrics in train(config):
            epochs.append(metrics)
            shown = {k: round(v, 4) for k, v in metrics.items() if "/dev/" in k or "/test/" in k or k == "train/loss"}
            logger.info("epoch %d/%d %s", int(metrics["epoch"]), config.epochs, json.dumps(shown))
            save()
    except DivergedError as exc:
        save(diverged=str(exc))
        raise
    if args.metrics_out:
        logger.info("metrics written to %s", args.metrics_out)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, DataError, DivergedError, OSError))
