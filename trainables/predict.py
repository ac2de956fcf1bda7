"""A trained multitask model as a self-contained directory, and predictions on raw text.

``save_model_dir`` writes what :class:`Predictor` needs and nothing else: the flat
training config (``train_config.json``), the encoder's ``transformers`` config and
tokenizer (``encoder/``), the model's weights (``model.pt``, a plain state dict that
loads with ``weights_only=True``), the model's tasks by their declared names
(``tasks.json``: name -> the spec to build the task from) and copies of task config files
(``tasks/``, e.g. a ``csv:`` task's JSON), and optionally what the model is (``about.json``,
written by whoever saved it: a ``summary`` line and a ``caveat`` line, the latter only where
the model should not be used, e.g. a smoke study's that does not beat a constant predictor;
:func:`main` says the caveat once on stderr). Loading rebuilds the encoder from its config, so
no hub access and no pretrained weights are needed.

``python -m trainables.predict --model MODEL_DIR --input sentences.txt --out predictions.jsonl``
predicts one JSON object per non-empty input line. Only a local directory is read here (the
core runs without MLflow); ``python -m search.predict`` takes an MLflow model URI
(``models:/absa-best/1``, ``runs:/<run>/model``), downloads it and calls :func:`main` with its
resolver.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import pickle
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainables.batching import Padding, encode
from trainables.cli import ArgumentParser, atomic_write, run_main, setup_logging
from trainables.config import ConfigError, TrainConfig
from trainables.loop import predict_probs, resolve_device
from trainables.model import MultitaskModel, default_summary, resolve_model_path
from trainables.tasks import DataError, Example, Task, declared_name, get_task

logger = logging.getLogger(__name__)
CONFIG_FILE = "train_config.json"
TASKS_FILE = "tasks.json"  # task name -> the spec to build it from (task files copied under tasks/)
MODEL_FILE = "model.pt"
ENCODER_DIR = "encoder"
ABOUT_FILE = "about.json"  # optional: {"summary": one line, "caveat": one line or null, ...}
REQUIRED = (CONFIG_FILE, TASKS_FILE, MODEL_FILE, f"{ENCODER_DIR}/config.json")
CHUNK = 256  # raw inputs encoded together


class ModelError(ValueError):
    """A model directory or URI that cannot be used; ``str()`` is one line."""


BAD_INPUT = (DataError, ModelError, ConfigError)  # the CLI's one-line, exit-2 errors


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The state dict of a checkpoint file, ``Trainer.save``'s (``state["model"]``) or a bare one."""
    # weights_only: a checkpoint holds tensors and plain values only, so loading one cannot run code
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ModelError(
            f"checkpoint {path}: not loadable with weights_only=True ({str(exc).splitlines()[0]})"
        ) from None
    return state["model"] if "model" in state else state


def save_model_dir(
    out_dir: str | Path, checkpoint: Path | dict, config: TrainConfig, tokenizer, about: dict[str, Any] | None = None
) -> Path:
    """Write a self-contained model directory from a checkpoint (file or state dict); ``about``, what the
    model is (``summary``, ``caveat``), goes to ``about.json``."""
    from transformers import AutoConfig

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = load_checkpoint(Path(checkpoint)) if not isinstance(checkpoint, dict) else checkpoint
    state = state.get("model", state)
    torch.save({k: v.detach().cpu() for k, v in state.items()}, out / MODEL_FILE)
    model_path = resolve_model_path(config.encoder.model)
    encoder_config = AutoConfig.from_pretrained(model_path)
    # the directory's copy of the encoder has no sentence-transformers files: record the summary it used
    summary = config.encoder.summary or default_summary(encoder_config, model_path)
    config = replace(config, encoder=replace(config.encoder, summary=summary))
    (out / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2, sort_keys=True) + "\n")
    (out / TASKS_FILE).write_text(json.dumps(copy_task_files(config.tasks, out), indent=2) + "\n")
    encoder_config.save_pretrained(out / ENCODER_DIR)
    tokenizer.save_pretrained(out / ENCODER_DIR)
    if about is not None:
        (out / ABOUT_FILE).write_text(json.dumps(about, indent=2) + "\n")
    return out


def copy_task_files(specs: Sequence[str], out: Path) -> dict[str, str]:
    """Declared name -> spec to load the task by, in ``specs``' order; an option naming a file
    (``csv:task.json``) points at a copy."""
    loadable = {}
    for spec in specs:
        base, _, option = spec.partition(":")
        if option and Path(option).is_file():
            target = Path("tasks") / f"{hashlib.sha1(option.encode()).hexdigest()[:12]}-{Path(option).name}"
            (out / target).parent.mkdir(exist_ok=True)
            shutil.copy(option, out / target)
            loadable[declared_name(spec)] = f"{base}:{target.as_posix()}"  # relative to the model directory
        else:
            loadable[declared_name(spec)] = spec
    return loadable


class Predictor:
    """A loaded model directory: raw text in, one prediction dict per input out.

    ``tasks`` are keyed by their declared names (``semeval``, a ``csv:`` task's ``name``);
    ``specs`` maps each name to its spec as trained, which keys the model's head.
    """

    def __init__(
        self,
        model: MultitaskModel,
        tasks: dict[str, Task],
        specs: dict[str, str],
        tokenizer,
        config: TrainConfig,
        device: torch.device,
    ) -> None:
        self.model, self.tasks, self.specs, self.tokenizer = model, tasks, specs, tokenizer
        self.config, self.device = config, device
        self.about: dict[str, Any] = {}  # the directory's about.json, where it has one
        self.padding = Padding.of(tokenizer)
        self.names = {spec: name for name, spec in specs.items()}
        self.primary = self.names[config.primary]

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu") -> Predictor:
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        root = Path(path)
        missing = [f for f in REQUIRED if not (root / f).is_file()]
        if missing:
            raise ModelError(
                f"model directory {root}: missing {', '.join(missing)} "
                f"(expected {', '.join(REQUIRED)}, as trainables.predict.save_model_dir writes)"
            )
        config = TrainConfig.from_dict(json.loads((root / CONFIG_FILE).read_text()))
        tasks, specs = load_tasks(root, config)
        encoder = AutoModel.from_config(AutoConfig.from_pretrained(root / ENCODER_DIR))
        heads = {specs[name]: (task.num_labels, task.kind) for name, task in tasks.items()}
        # save_model_dir records the summary it trained with; older directories hold None there
        model = MultitaskModel(
            encoder, heads, config.encoder.summary or default_summary(encoder.config), config.encoder.dropout
        )
        model.load_state_dict(torch.load(root / MODEL_FILE, map_location="cpu", weights_only=True))
        target = resolve_device(device)
        tokenizer = AutoTokenizer.from_pretrained(root / ENCODER_DIR, use_fast=True)
        predictor = cls(model.to(target).eval(), tasks, specs, tokenizer, config, target)
        predictor.about = read_about(root)
        return predictor

    @property
    def caveat(self) -> str | None:
        """One line where whoever saved the model said not to use it (``about.json``), else None."""
        return self.about.get("caveat") or None

    def predict(self, texts: Sequence[str], task: str | None = None) -> list[dict[str, Any]]:
        """One ``{"input", "task", ...prediction}`` per text; ``task``, a task's name (or its spec
        as trained), defaults to the primary."""
        name = self.names.get(task, task) if task else self.primary
        if name not in self.tasks:
            raise ModelError(f"this model has no task {name!r}: it has {', '.join(self.tasks)}")
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), CHUNK):
                out += self._predict_chunk(texts[start : start + CHUNK], name, start)
        return out

    def _predict_chunk(self, texts: Sequence[str], name: str, offset: int) -> list[dict[str, Any]]:
        task = self.tasks[name]
        rows: list[list[Example]] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise DataError(f"input {offset + i + 1}: {text!r}, expected non-empty text")
            try:
                rows.append(task.inputs(text))
            except DataError as exc:
                raise DataError(f"input {offset + i + 1}: {exc}") from None
        flat = [ex for group in rows for ex in group]
        probs = self._row_probs(name, task, flat)
        out, at = [], 0
        for text, group in zip(texts, rows):
            p = np.concatenate(probs[at : at + len(group)])
            at += len(group)
            out.append({"input": text, "task": name, **task.decode(p, group)})
        return out

    def _row_probs(self, name: str, task: Task, rows: list[Example]) -> list[np.ndarray]:
        """Probabilities per row: (1, C) for sequence rows, (words, C) for a tagging row."""
        out: list[np.ndarray] = [np.empty(0)] * len(rows)
        for pair in (False, True):  # a batch is all pairs or all single texts
            index = [i for i, ex in enumerate(rows) if (ex.text_b is not None) == pair]
            if not index:
                continue
            data = encode(
                [rows[i] for i in index],
                task.kind,
                self.tokenizer,
                self.config.encoder.max_seq_length,
                None,
                task.sentence_side,
            )
            head = self.specs[name]
            p = predict_probs(self.model, head, data, self.padding, self.config.eval_batch_size, self.device)
            sizes = [len(rows[i].label) if task.kind == "tagging" else 1 for i in index]  # type: ignore[arg-type]
            for i, part in zip(index, np.split(p, np.cumsum(sizes)[:-1])):
                out[i] = part
        return out


def read_about(root: Path) -> dict[str, Any]:
    """``about.json`` of a model directory; ``{}`` where there is none."""
    path = root / ABOUT_FILE
    if not path.is_file():
        return {}
    try:
        about = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"model directory {root}: {ABOUT_FILE} is not JSON ({exc}), expected an object") from None
    if not isinstance(about, dict):
        raise ModelError(f"model directory {root}: {ABOUT_FILE} holds {type(about).__name__}, expected an object")
    return about


def load_tasks(root: Path, config: TrainConfig) -> tuple[dict[str, Task], dict[str, str]]:
    """The model directory's tasks by declared name, and each name's spec as trained.

    ``tasks.json`` lists the tasks in ``config.tasks``' order, keyed by name; directories saved
    before named them by spec.
    """
    entries = json.loads((root / TASKS_FILE).read_text())
    by_spec = set(entries) <= set(config.tasks)  # older directories (or every name its spec)
    if not by_spec and len(entries) != len(config.tasks):
        raise ModelError(
            f"model directory {root}: {TASKS_FILE} lists {len(entries)} tasks, {CONFIG_FILE} {len(config.tasks)}; "
            "expected one entry per task, in the same order"
        )
    if by_spec:
        rows = [(spec, spec, entries.get(spec, spec)) for spec in config.tasks]
    else:
        rows = [(spec, name, loadable) for spec, (name, loadable) in zip(config.tasks, entries.items())]
    tasks, specs = {}, {}
    for spec, key, loadable in rows:
        task = load_task(spec, loadable, root, config)
        if key not in (spec, task.name):
            raise ModelError(
                f"model directory {root}: {TASKS_FILE} entry {key!r} builds task {task.name!r}; "
                f"expected its entries in the order of the tasks in {CONFIG_FILE}"
            )
        tasks[task.name], specs[task.name] = task, spec
    return tasks, specs


def load_task(spec: str, loadable: str, root: Path, config: TrainConfig) -> Task:
    base, _, option = loadable.partition(":")
    if option and (root / option).is_file():
        loadable = f"{base}:{root / option}"
    try:
        return get_task(loadable, Path(config.data_dir), config.protocol)
    except DataError as exc:
        raise ModelError(f"model directory {root}: task {spec!r} cannot be rebuilt ({exc})") from None


# command line


Resolver = Callable[[str, str | None], Path]  # (model URI, tracking URI) -> a local model directory


def is_model_uri(model: str) -> bool:
    """An MLflow model URI (``models:/absa-best/1``, ``runs:/ID/model``, ``s3://...``), not a path."""
    return "://" in model or model.startswith(("models:/", "runs:/"))


def model_dir(model: str, tracking_uri: str | None = None, resolve_model: Resolver | None = None) -> Path:
    """The local model directory ``--model`` names: a directory itself, or a URI passed to ``resolve_model``
    (``python -m search.predict`` passes MLflow's; the core has none)."""
    if is_model_uri(model):
        if resolve_model is None:
            raise ModelError(
                f"--model {model}: an MLflow model URI, but trainables.predict reads a model directory only; "
                f"run python -m search.predict --model {model} --input ... --out ... (it downloads the model first)"
            )
        return resolve_model(model, tracking_uri)
    root = Path(model)
    if not root.is_dir():
        raise ModelError(
            f"--model {model}: no such directory, expected a model directory (an MLflow URI: python -m search.predict)"
        )
    return root


def read_inputs(path: Path) -> list[str]:
    """Non-empty lines of a UTF-8 file."""
    if not path.is_file():
        raise DataError(f"--input {path}: no such file, expected UTF-8 text, one input per line")
    out = []
    for n, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}:{n}: not UTF-8 ({exc.reason} at byte {exc.start}), expected UTF-8 text") from None
        if line.strip():
            out.append(line.rstrip("\r"))
    if not out:
        raise DataError(f"--input {path}: no non-empty line, expected one input per line")
    return out


def write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> None:
    with atomic_write(path, encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


USAGE = """Predict with a trained multitask model: one JSON object per non-empty line of --input, written to --out
(the input, the task and its prediction: a label with every label's probability, a tag per word, or a
polarity per aspect, as the task predicts). --model is a model directory saved
by a study (or, through python -m search.predict, an MLflow model URI such as models:/absa-best/1). Loading
needs no model hub: the directory holds the encoder's config, tokenizer and weights."""


def parse_args(argv: Sequence[str] | None, prog: str) -> argparse.Namespace:
    p = ArgumentParser(prog=prog, description=USAGE)
    p.add_argument(
        "--model",
        required=True,
        help="model directory (python -m search.predict: also an MLflow URI, models:/absa-best/1, runs:/ID/model)",
    )
    p.add_argument("--input", required=True, type=Path, help="UTF-8 text, one input per non-empty line")
    p.add_argument("--out", required=True, type=Path, help="JSON lines, one prediction per input")
    p.add_argument("--task", help="a task of the model, by its name (default: its primary task)")
    p.add_argument(
        "--tracking-uri", help="MLflow tracking URI for models:/ and runs:/ URIs (default: $MLFLOW_TRACKING_URI)"
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: %(default)s)")
    return p.parse_args(argv)


def main(
    argv: Sequence[str] | None = None,
    resolve_model: Resolver | None = None,
    prog: str = "python -m trainables.predict",
) -> int:
    """Predict from ``argv`` (default: the command line); ``resolve_model`` turns a model URI into a
    local directory (an orchestration-side adapter supplies it, with its ``prog`` for messages)."""
    args = parse_args(argv, prog)
    setup_logging()
    texts = read_inputs(args.input)
    predictor = Predictor.load(model_dir(args.model, args.tracking_uri, resolve_model), args.device)
    if predictor.caveat:
        logger.warning("%s", predictor.caveat)  # once per run, not in every line
    records = predictor.predict(texts, args.task)
    write_jsonl(args.out, records)
    logger.info("wrote %d predictions of task %s to %s", len(records), records[0]["task"], args.out)
    return 0


if __name__ == "__main__":
    run_main(main, BAD_INPUT)
