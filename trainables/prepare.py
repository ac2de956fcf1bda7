"""Every task's splits, read, limited and tokenized once for a run (or a whole study)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trainables.batching import Encoded, encode
from trainables.cli import default_cache_dir
from trainables.config import ConfigError, TrainConfig
from trainables.rows import limit_rows
from trainables.tasks import Example, Task, get_task

logger = logging.getLogger(__name__)


@dataclass
class TaskData:
    task: Task
    train: Encoded
    dev: Encoded
    dev_examples: list[Example]
    test: Encoded | None
    test_examples: list[Example] | None


def prepare_data(config: TrainConfig, tokenizer, cache_dir: Path | None = None) -> dict[str, TaskData]:
    """Read, limit and tokenize every task's splits (cached on disk across runs and trials)."""
    cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
    max_len = config.encoder.max_seq_length
    tasks = {spec: get_task(spec, Path(config.data_dir), config.protocol) for spec in config.tasks}
    check_distinct_names(tasks)
    out = {}

    def load(task: Task, split: str, limit: Callable[[int], int | None], first: bool) -> tuple[list[Example], Encoded]:
        examples = task.examples(split)
        rows = limit_rows(len(examples), limit(len(examples)), task.group_size, first)
        examples = [examples[i] for i in rows]
        return examples, encode(examples, task.kind, tokenizer, max_len, cache_dir, task.sentence_side)

    for spec, task in tasks.items():
        started = time.perf_counter()
        _, train = load(task, "train", config.train_limit, first=False)
        evaluated = functools.partial(lambda limit, rows: limit, config.eval_limit(spec))  # whatever the split's size
        dev_examples, dev = load(task, "dev", evaluated, first=True)
        test_examples, test = load(task, "test", evaluated, first=True) if config.evaluate_test else (None, None)
        out[spec] = TaskData(task, train, dev, dev_examples, test, test_examples)
        logger.info(
            "%s: %d train / %d dev rows ready in %.1fs", spec, len(train), len(dev), time.perf_counter() - started
        )
    return out


def check_distinct_names(tasks: dict[str, Task]) -> None:
    """Metric and sampling keys use ``task.name``: two specs with one name would overwrite each other."""
    seen: dict[str, str] = {}
    for spec, task in tasks.items():
        if task.name in seen:
            raise ConfigError(
                f"tasks {seen[task.name]!r} and {spec!r} are both named {task.name!r} (metric and sampling "
                "keys would collide): expected one task per name in a run"
            )
        seen[task.name] = spec
