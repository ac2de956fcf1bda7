"""The multitask training loop (thesis Algorithm 3) as a resumable Python API.

``train(config)`` yields one metrics dict per epoch. ``Trainer`` holds the whole
state (model, optimiser, scheduler, sampler and batch RNGs, the position inside an epoch) behind
``state_dict``/``load_state_dict`` so a wrapper can checkpoint between evaluations (every epoch's
end, and a screen point inside the first: :meth:`Trainer.run_to`)
and a resumed run continues as an uninterrupted one would: bit for bit on the CPU, within
tolerance on CUDA, whose kernels are not deterministic (no determinism flags are set, and
SDPA's memory-efficient backward with a padding mask accumulates in no fixed order).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from trainables.batching import Encoded, Padding, TaskBatches, ahead, collate, to_device
from trainables.config import TrainConfig
from trainables.degenerate import is_degenerate
from trainables.exposure import PRIMARY_PASSES, primary_passes, screen_step
from trainables.inference import predict_probs
from trainables.model import MultitaskModel, build_model, load_tokenizer
from trainables.precision import configure_cuda_math, padding_multiple, resolve_precision
from trainables.prepare import TaskData, check_distinct_names, prepare_data
from trainables.results import DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL
from trainables.sampling import make_sampler, steps_per_epoch
from trainables.strategy import Strategy
from trainables.tasks import Example

__all__ = ["DivergedError", "TaskData", "Trainer", "predict_probs", "prepare_data", "resolve_device", "train"]

logger = logging.getLogger(__name__)


# how AdamW runs on this device, not what it learned: never taken from a checkpoint
OPTIMIZER_FLAGS = ("foreach", "fused", "capturable", "differentiable")
FUSED_ADAMW = ("cuda", "cpu")  # the devices whose fused AdamW kernel this torch has


class DivergedError(RuntimeError):
    """The loss became NaN or infinite; the message says where."""


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA when available, else the CPU; a CUDA device always with its index."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda" and device.index is None:  # the RNG state saved is this one device's
        device = torch.device("cuda", torch.cuda.current_device())
    return device


class Trainer:
    """One multitask run. Call :meth:`run_epoch` ``config.epochs`` times."""

    def __init__(
        self, config: TrainConfig, data: dict[str, TaskData] | None = None, tokenizer=None, name: str = ""
    ) -> None:
        self.config = config
        self.name = name or f"seed {config.seed}"  # who the progress lines speak of, e.g. "t03 seed 2"
        self.device = resolve_device(config.device)
        torch.manual_seed(config.seed)
        tokenizer = tokenizer or load_tokenizer(config.encoder)
        self.padding = Padding.of(tokenizer)
        self.data = data if data is not None else prepare_data(config, tokenizer)
        self.names = list(config.tasks)
        check_distinct_names({n: self.data[n].task for n in self.names})  # data may come from a caller
        self.kinds = {n: self.data[n].task.kind for n in self.names}
        heads = {n: (self.data[n].task.num_labels, self.kinds[n]) for n in self.names}
        self.model: MultitaskModel = build_model(config.encoder, heads).to(self.device)

        # one stream of seeds: sampler, one per task's batch order, then the strategy's (PCGrad's orders)
        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(config.seed).spawn(len(self.names) + 2)]
        self.batches = [self._task_batches(n, s) for n, s in zip(self.names, seeds[1:-1])]
        self.sampler = make_sampler(config.sampling, config.task_weights(), config.epochs, seeds[0])
        # micro-batches per optimizer step: grad_accum drawn by the sampler, or one of every task
        self.accum = len(self.names) if config.optim.step_mode == "all" else config.grad_accum
        # micro-batches per epoch: the mean task size in batches; with one batch of every task per
        # step, the nearest whole number of steps to it, so an epoch costs about the same either way
        self.steps_per_epoch = steps_per_epoch([len(b) for b in self.batches])
        if config.optim.step_mode == "all":
            self.steps_per_epoch = self.accum * max(1, round(self.steps_per_epoch / self.accum))
        self.strategy = Strategy(config, self.model, self.names, seeds[-1]).to(self.device)
        # precision, shapes and kernels: all no-ops on the CPU in fp32, so results there stay bit-identical
        self.precision = resolve_precision(config.precision, self.device)
        self.scaler = self.precision.scaler()
        self.pad_multiple = padding_multiple(config.pad_to_multiple_of, self.device)
        if self.device.type == "cuda":
            configure_cuda_math()
        self.forward = self._compiled_forward() if config.compile else self.model
        # fused: one kernel for the whole update. On the CPU too: foreach AdamW took a third of MiniLM's step
        # there (0.18 of 0.51 s at batch 16, fused 0.03; benchmarks/results/HISTORY.md); same math
        self.optimizer = torch.optim.AdamW(
            self.strategy.param_groups(), lr=config.lr, fused=self.device.type in FUSED_ADAMW or None
        )
        # the schedule counts optimizer steps; an epoch's last one may take fewer than grad_accum micro-batches
        self.updates_per_epoch = -(-self.steps_per_epoch // self.accum)
        self.scheduler = self._scheduler(self.updates_per_epoch * config.epochs)
        self.epoch = 0  # epochs completed
        self.step = 0  # micro-batches trained of epoch ``self.epoch + 1`` (an evaluation inside an epoch)
        self.partial = Partial()  # what those micro-batches trained: the epoch's metrics cover them
        self.finished = Partial()  # the last whole epoch's
        self.primary_batches = 0  # the primary's micro-batches trained so far (its exposure: primary_passes)
        self.degenerate_until = 0.0  # the last point whose primary dev predictions were constant (0: none)
        self.learned_until = 0.0  # the last point whose primary dev predictions were not (0: none)
        # Each run owns its torch RNG (dropout), so several seeds can interleave epochs in one
        # process and each still matches its standalone run. On CUDA only its own device's
        # generator: a resumed trial may see fewer GPUs, and a CPU run creates no CUDA context.
        self.torch_rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        self.loss_fn = nn.CrossEntropyLoss()  # ignores IGNORE (-100) positions by default

    def _task_batches(self, name: str, seed: int) -> TaskBatches:
        train = self.data[name].train
        lengths = train.lengths() if self.config.group_by_length else None
        return TaskBatches(len(train), self.config.batch_size, seed, lengths)

    def _compiled_forward(self) -> Callable[..., torch.Tensor]:
        # the shared encoder only: a compiled whole model guards on the task name, one graph per
        # task, and past 8 recompiles silently runs eager; the heads are cheap
        encoder = torch.compile(self.model.encoder, dynamic=True)
        return functools.partial(self.model, encoder=encoder)

    def _scheduler(self, total: int) -> torch.optim.lr_scheduler.LambdaLR:
        """Linear warm-up over ``config.warmup`` of the ``total`` optimizer steps, then linear decay to 0."""
        warmup = int(self.config.warmup * total)
        return torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda step: step / max(1, warmup) if step < warmup else max(0.0, (total - step) / max(1, total - warmup)),
        )

    # -- training -----------------------------------------------------------
    def draws(self, epoch: int, steps: int) -> Iterator[tuple[int, dict[str, torch.Tensor]]]:
        """The next ``steps`` (task index, collated host batch) pairs, as the sampler draws them."""
        every_task = self.config.optim.step_mode == "all"
        for step in range(steps):
            t = step % len(self.names) if every_task else self.sampler.sample(epoch)
            name = self.names[t]
            batch = collate(
                self.data[name].train,
                self.batches[t].next(),
                self.padding,
                self.kinds[name],
                multiple=self.pad_multiple,
            )
            if self.device.type == "cuda":
                batch = {k: v.pin_memory() for k, v in batch.items()}
            yield t, batch

    def backward(self, task_index: int, batch: dict[str, torch.Tensor], scale: float = 1.0) -> torch.Tensor:
        """Forward and backward of one micro-batch, gradients added to ``.grad``; returns the
        unscaled loss, still on the device (reading it would wait for the GPU)."""
        batch = to_device(batch, self.device)
        labels = batch.pop("labels")
        with self.precision.autocast():
            logits = self.forward(self.names[task_index], **batch)  # (B, C), or (B, T, C) for tagging
            loss = self.loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        weighted = self.strategy.weigh(task_index, loss)
        self.scaler.scale(weighted if scale == 1.0 else weighted * scale).backward()
        self.strategy.collect(task_index)
        return loss.detach()

    def optimizer_step(self) -> None:
        self.strategy.combine()  # PCGrad: the tasks' gradients, projected and summed, into .grad
        self.scaler.unscale_(self.optimizer)  # clip the true gradients, not the fp16-scaled ones
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        self.scaler.step(self.optimizer)  # skipped (and the scale lowered) when fp16 gradients overflowed
        self.scaler.update()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

    def train_steps(self, epoch: int, steps: int, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Train ``steps`` micro-batches of ``epoch`` from its micro-batch ``start``, one optimizer step per
        ``accum`` of them, the last step taking what is left (``start`` is a multiple of ``accum``: an
        optimizer step never straddles two calls, so an epoch split in two trains as a whole one).

        Returns each micro-batch's loss (float64) and task index. The host waits for the
        device only every ``check_every`` steps, to check the losses are finite and log (and,
        with the bandit sampler, every ``bandit_every`` steps and at ``end`` to reward it).
        """
        accum, every, bandit = self.accum, self.config.check_every, self.config.sampling.bandit_every
        end = start + steps
        losses = torch.zeros(steps, device=self.device)  # (steps,) filled on the device, read at checks
        tasks = np.zeros(steps, dtype=np.int64)
        self.optimizer.zero_grad(set_to_none=True)
        self.strategy.begin(self.sampler, self.held_out_loss)
        draws = self.draws(epoch, steps)
        # an adaptive sampler's next draw depends on the rewards of the steps before it: drawn here
        prefetch = self.config.prefetch and not self.sampler.adaptive
        checked = fed = 0
        with contextlib.closing(ahead(draws) if prefetch else draws) as batches:
            for i, (t, batch) in enumerate(batches):
                step = start + i  # within the epoch: optimizer steps and logs fall where a whole epoch has them
                # sample a task, take its next batch, backpropagate through encoder and head
                tasks[i] = t
                if step % accum == 0:
                    self.strategy.start_update(epoch, self.scheduler.last_epoch)  # unfreezing
                group = min(accum, end - step // accum * accum)  # micro-batches in this optimizer step
                losses[i] = self.backward(t, batch, 1.0 / group)
                if (step + 1) % accum == 0 or step + 1 == end:
                    self.optimizer_step()
                if (step + 1) % bandit == 0 or step + 1 == end:
                    self.strategy.feed(self.sampler, tasks[fed : i + 1], losses[fed : i + 1], self.held_out_loss)
                    fed = i + 1
                if (step + 1) % every == 0 or step + 1 == end:
                    self._check(losses, tasks, checked, i + 1, epoch, start)
                    checked = i + 1
        return losses.cpu().double().numpy(), tasks

    def _check(
        self, losses: torch.Tensor, tasks: np.ndarray, start: int, end: int, epoch: int, offset: int = 0
    ) -> None:
        """Raise :class:`DivergedError` naming the first non-finite loss in ``losses[start:end]``; log.
        ``offset``: the epoch's step of ``losses[0]``."""
        window = losses[start:end]
        bad = torch.nonzero(~torch.isfinite(window)).flatten().tolist()  # the host sync
        if bad:
            i = start + bad[0]
            raise DivergedError(
                f"loss became {losses[i].item()} at epoch {epoch + 1} step {offset + i + 1} "
                f"on task {self.names[tasks[i]]}"
            )
        log_every = max(1, self.steps_per_epoch // 10)
        if (offset + end) // log_every > (offset + start) // log_every:  # a tenth of the epoch passed
            logger.info(
                "%s: epoch %d step %d/%d loss %.4f",
                self.name,
                epoch + 1,
                offset + end,
                self.steps_per_epoch,
                window.mean().item(),
            )

    def held_out_loss(self) -> float:
        """The primary's loss on its first dev batch, dropout off: what the bandit's ``primary`` reward
        watches fall. A fixed batch, so the change between two checks is the model's, not the data's."""
        name = self.config.primary
        data = self.data[name].dev
        rows = np.arange(min(len(data), self.config.batch_size))
        batch = to_device(collate(data, rows, self.padding, self.kinds[name], multiple=self.pad_multiple), self.device)
        labels = batch.pop("labels")
        self.model.eval()
        with torch.inference_mode(), self.precision.autocast():
            logits = self.forward(name, **batch)
            loss = self.loss_fn(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
        self.model.train()
        return float(loss)

    def run_epoch(self) -> dict[str, float]:
        """Train the rest of the current epoch, evaluate on dev (and test after the last epoch); the metrics."""
        return self.run_to(self.epoch + 1)

    def screen_step(self, fraction: float) -> int:
        """The micro-batch of an epoch where an evaluation at ``fraction`` of it falls (a whole number of
        optimizer steps, at least one, and at least one before the epoch's end)."""
        try:
            return screen_step(self.updates_per_epoch, self.accum, fraction)
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from None

    @property
    def primary_passes(self) -> float:
        """Passes over the primary's training rows so far: its micro-batches trained over its batches per pass."""
        return self.primary_batches / len(self.batches[self.names.index(self.config.primary)])

    @property
    def position(self) -> float:
        """Where training stands, in epochs (2.5: half-way through the third)."""
        return self.epoch + self.step / self.steps_per_epoch

    def reached(self, point: float) -> bool:
        """Whether training has passed ``point`` (in epochs, as :meth:`run_to` takes it)."""
        whole, fraction = int(point), point - int(point)
        return (whole, self.screen_step(fraction) if fraction else 0) <= (self.epoch, self.step)

    def run_to(self, point: float, evaluate: bool = True) -> dict[str, float]:
        """Train up to ``point`` epochs (0.5: half of the first; 2: the end of the second) and evaluate dev
        there (test too at the end of the last epoch); the metrics, ``epoch`` = ``point``. Epochs passed on
        the way are trained without evaluation (a seed joining a trial late catches up this way); with
        ``evaluate`` False, nothing is evaluated (empty metrics)."""
        whole, fraction = int(point), point - int(point)
        if self.reached(point) or point > self.config.epochs:
            raise ValueError(f"{self.name}: cannot train to epoch {point:g} from {self.position:g}")
        with torch.random.fork_rng(devices=[self.device] if self.cuda_rng is not None else []):
            torch.set_rng_state(self.torch_rng)
            if self.cuda_rng is not None:
                torch.cuda.set_rng_state(self.cuda_rng, self.device)
            while self.epoch < whole:
                self.train_part(self.steps_per_epoch)  # to the end of the epoch
            if fraction:
                self.train_part(self.screen_step(fraction))
            metrics = self.evaluate(point) if evaluate else {}
            self.torch_rng = torch.get_rng_state()
            if self.cuda_rng is not None:
                self.cuda_rng = torch.cuda.get_rng_state(self.device)
        return metrics

    def train_part(self, end: int) -> None:
        """Train the current epoch from :attr:`step` to micro-batch ``end``; at the epoch's end, move to the next."""
        self.model.train()
        started = time.perf_counter()
        losses, tasks = self.train_steps(self.epoch, end - self.step, self.step)
        self.partial = self.partial.add(losses, tasks, time.perf_counter() - started)
        self.primary_batches += int(np.count_nonzero(tasks == self.names.index(self.config.primary)))
        self.step = end
        if end == self.steps_per_epoch:
            self.finished = self.partial  # the whole epoch's steps, for its metrics
            self.epoch, self.step, self.partial = self.epoch + 1, 0, Partial()

    def evaluate(self, point: float) -> dict[str, float]:
        """The metrics at ``point``: the training of the epoch it falls in so far, dev scores, test at the end."""
        config = self.config
        trained = self.partial if self.step else self.finished
        epoch = self.epoch if self.step else self.epoch - 1  # the epoch ``point`` falls in (0-based)
        # in force at the point: a bandit's has moved during the epoch; one batch of every task per step: uniform
        every_task = config.optim.step_mode == "all"
        probs = np.full(len(self.names), 1 / len(self.names)) if every_task else self.sampler.probabilities(epoch)
        step_losses, step_tasks = trained.arrays()
        losses = {n: step_losses[step_tasks == i].tolist() for i, n in enumerate(self.names)}

        metrics: dict[str, float] = {
            "epoch": float(point),
            PRIMARY_PASSES: self.primary_passes,
            "train/seconds": trained.seconds,
        }
        all_losses = [x for v in losses.values() for x in v]
        metrics["train/loss"] = float(np.mean(all_losses))
        metrics["train/samples_per_second"] = (
            sum(len(v) for v in losses.values()) * config.batch_size / max(trained.seconds, 1e-9)
        )
        for i, n in enumerate(self.names):
            key = self.data[n].task.name
            metrics[f"sampling/p/{key}"] = float(probs[i])
            metrics[f"sampling/steps/{key}"] = float(len(losses[n]))
            if losses[n]:
                metrics[f"train/{key}/loss"] = float(np.mean(losses[n]))
        metrics.update(self.strategy.metrics([self.data[n].task.name for n in self.names]))
        for n in self.names:
            d = self.data[n]
            if n == config.primary:
                metrics.update(self._primary_dev(point))
            else:
                metrics.update(self._scores(n, "dev", d.dev, d.dev_examples))
            if point == config.epochs and d.test is not None:
                metrics.update(self._scores(n, "test", d.test, d.test_examples))  # type: ignore[arg-type]
        return metrics

    # -- evaluation ---------------------------------------------------------
    def predict(self, name: str, data: Encoded) -> np.ndarray:
        """Class probabilities: (rows, C) for sequence tasks, (words, C) for tagging."""
        return predict_probs(
            self.model,
            name,
            data,
            self.padding,
            self.config.eval_batch_size,
            self.device,
            self.pad_multiple,
            self.precision.autocast,
        )

    def _primary_dev(self, point: float) -> dict[str, float]:
        """The primary's dev scores and whether its predictions are constant (:mod:`trainables.degenerate`):
        the evidence a failed run is judged by, recorded where the predictions are."""
        d = self.data[self.config.primary]
        task, probs = d.task, self.predict(self.config.primary, d.dev)
        out = {f"{task.name}/dev/{k}": float(v) for k, v in task.metrics(probs, d.dev_examples).items()}
        degenerate = is_degenerate(*task.predicted(probs)) or not np.isfinite(probs).all()
        if degenerate:
            self.degenerate_until = float(point)
        else:
            self.learned_until = float(point)
        return {
            **out,
            DEGENERATE: float(degenerate),
            DEGENERATE_UNTIL: self.degenerate_until,
            LEARNED_UNTIL: self.learned_until,
        }

    def _scores(self, name: str, split: str, data: Encoded, examples: Sequence[Example]) -> dict[str, float]:
        task = self.data[name].task
        scores = task.metrics(self.predict(name, data), examples)
        return {f"{task.name}/{split}/{k}": float(v) for k, v in scores.items()}

    # -- checkpointing ------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "step": self.step,  # inside epoch ``epoch + 1``: a checkpoint at a screen point
            "partial": self.partial.state_dict(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "sampler": self.sampler.state_dict(),
            "batches": [b.state_dict() for b in self.batches],
            "torch_rng": self.torch_rng,
            "cuda_rng": self.cuda_rng,
            "scaler": self.scaler.state_dict(),  # empty unless fp16
            "strategy": self.strategy.state_dict(),  # empty unless a strategy learns or draws
            "primary_batches": self.primary_batches,
            "degenerate_until": self.degenerate_until,
            "learned_until": self.learned_until,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch = int(state["epoch"])
        self.step = int(state.get("step", 0))  # a checkpoint from before screens: at an epoch's end
        self.partial = Partial.of(state.get("partial"))
        self.model.load_state_dict(state["model"])
        self._load_optimizer(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.sampler.load_state_dict(state["sampler"])
        for b, s in zip(self.batches, state["batches"]):
            b.load_state_dict(s)
        self.torch_rng = state["torch_rng"].cpu()
        cuda_rng = state.get("cuda_rng")
        if cuda_rng is not None and self.cuda_rng is not None:
            if isinstance(cuda_rng, list | tuple):  # written before: one state per visible GPU
                cuda_rng = cuda_rng[min(self.device.index or 0, len(cuda_rng) - 1)]
            self.cuda_rng = cuda_rng.cpu()  # map_location moved it; RNG states live on the host
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        self.strategy.load_state_dict(state.get("strategy", {}))
        # a checkpoint from before exposure was counted: the expected count at its position
        self.primary_batches = int(state.get("primary_batches", round(self.expected_primary_batches())))
        self.degenerate_until = float(state.get("degenerate_until", 0.0))
        self.learned_until = float(state.get("learned_until", 0.0))

    def expected_primary_batches(self) -> float:
        sizes = {n: len(self.data[n].train) for n in self.names}
        point = self.epoch + (self.step / self.steps_per_epoch if self.step else 0.0)
        passes = primary_passes(self.config, sizes, point) if point else 0.0
        return passes * len(self.batches[self.names.index(self.config.primary)])

    def _load_optimizer(self, state: dict[str, Any]) -> None:
        # load_state_dict adopts the saved groups' flags: a checkpoint from a CPU-fallback node would
        # leave a GPU run on unfused AdamW (an .item() per parameter per step). Keep this device's.
        own = [{k: g[k] for k in OPTIMIZER_FLAGS if k in g} for g in self.optimizer.param_groups]
        groups = [{**saved, **flags} for saved, flags in zip(state["param_groups"], own)]
        self.optimizer.load_state_dict({**state, "param_groups": groups})

    def save(self, path: str | Path) -> None:
        torch.save(self.state_dict(), path)

    def load(self, path: str | Path) -> None:
        # weights_only: tensors and plain Python values only, so a writable checkpoint store cannot run code here
        try:
            state = torch.load(path, map_location=self.device, weights_only=True)
        except pickle.UnpicklingError as exc:
            raise ValueError(
                f"checkpoint {path}: not loadable with weights_only=True (written before checkpoints held only "
                f"tensors and plain values, or not a trainer checkpoint): {str(exc).splitlines()[0]}"
            ) from None
        self.load_state_dict(state)


@dataclass(frozen=True)
class Partial:
    """The micro-batches trained so far of one epoch: their losses, task indices and seconds."""

    losses: tuple[np.ndarray, ...] = ()
    tasks: tuple[np.ndarray, ...] = ()
    seconds: float = 0.0

    def add(self, losses: np.ndarray, tasks: np.ndarray, seconds: float) -> Partial:
        return Partial((*self.losses, losses), (*self.tasks, tasks), self.seconds + seconds)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.losses:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        return np.concatenate(self.losses), np.concatenate(self.tasks)

    def state_dict(self) -> dict[str, Any]:
        losses, tasks = self.arrays()  # tensors: a checkpoint loads with weights_only=True
        return {"losses": torch.from_numpy(losses), "tasks": torch.from_numpy(tasks), "seconds": self.seconds}

    @classmethod
    def of(cls, state: dict[str, Any] | None) -> Partial:
        if not state or not len(state["losses"]):
            return cls()
        losses, tasks = state["losses"].cpu().numpy(), state["tasks"].cpu().numpy()
        return cls((losses,), (tasks,), float(state["seconds"]))


def train(config: TrainConfig, data: dict[str, TaskData] | None = None) -> Iterator[dict[str, float]]:
    """Train ``config`` and yield the metrics of every epoch."""
    trainer = Trainer(config, data)
    while trainer.epoch < config.epochs:
        yield trainer.run_epoch()
