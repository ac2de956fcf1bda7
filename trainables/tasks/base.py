"""The task interface and its registry.

A task is one dataset with one head. It knows how to read its splits from the
data root into :class:`Example` rows in *model order* (the order the metrics
expect), how many output classes its head has, and how to score predictions.

Who calls what:
- ``trainables.data`` and the training loop call :meth:`Task.examples` once per
  split and cache the tokenized result.
- The loop calls :meth:`Task.metrics` after each evaluation pass with one row of
  class probabilities per example (per labelled token for tagging tasks).
- ``trainables.predict`` calls :meth:`Task.inputs` on one raw input (a line of text) to
  build the rows the model sees, constructed as :meth:`Task.examples` builds them, then
  :meth:`Task.decode` on those rows' probabilities to get one JSON-able prediction. The
  defaults serve single-text sequence tasks (label + probabilities) and tagging tasks (a
  tag per whitespace word); tasks with constructed rows override both.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

SPLITS = ("train", "dev", "test")
# Model-selection protocols: "holdout" keeps test unseen (dev is carved from
# train where a task has no dev split); "thesis" reproduces the thesis, which
# trained on all of train and selected on test.
PROTOCOLS = ("holdout", "thesis")


class DataError(ValueError):
    """Bad or missing input data; ``str()`` is one line naming file, record and expectation."""


@dataclass(frozen=True)
class Example:
    """One model input. ``label`` is an int (sequence tasks) or a list of ints (tagging).

    For tagging tasks ``text_a`` holds the words joined by single spaces and
    ``text_b`` is None.
    """

    id: str
    text_a: str
    text_b: str | None
    label: int | tuple[int, ...]


class Task(abc.ABC):
    """A dataset plus how to read, label and score it.

    Subclasses declare ``name``, ``labels`` and ``kind`` as class attributes
    (or instance attributes for configurable tasks) and implement
    :meth:`examples` and :meth:`metrics`.
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "sequence"  # "sequence" (one label per row) or "tagging"
    labels: Sequence[str] = ()
    # Rows that belong together for evaluation (e.g. 25 QA_B rows per SemEval
    # sentence); example limits keep whole groups so metrics stay well defined.
    group_size: int = 1
    # Which text of a pair holds the sentence ("a" or "b"): the encoder truncates that one
    # only, so an auxiliary sentence (an aspect, a question) is never cut. None: the longer.
    sentence_side: str | None = None

    def __init__(self, data_dir: Path, protocol: str = PROTOCOLS[0], option: str | None = None) -> None:
        if protocol not in PROTOCOLS:
            raise DataError(f"protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        self.data_dir = Path(data_dir)
        self.protocol = protocol
        self.option = option
        self.configure(option)

    def configure(self, option: str | None) -> None:
        """Apply the part after ``:`` in a task spec (``semeval:NLI_M``); default: none allowed.

        Called by ``__init__``; reads no data (a task config file at most): :func:`declared_name`
        builds a task only to learn its name.
        """
        if option:
            raise DataError(f"task {self.name!r} takes no option, got {option!r}")

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    @abc.abstractmethod
    def examples(self, split: str) -> list[Example]:
        """Rows of ``split`` (one of :data:`SPLITS`) in model order."""

    @abc.abstractmethod
    def metrics(self, probs: np.ndarray, examples: Sequence[Example]) -> dict[str, float]:
        """Score ``probs`` (rows x classes, model order) against ``examples``' labels."""

    def predicted(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The class each scored unit is given and its position within an evaluation group (the
        evidence :mod:`trainables.degenerate` reads): by default a row's argmax at ``row % group_size``
        (tagging: every word at position 0)."""
        labels = np.asarray(probs).argmax(1)
        positions = np.zeros(len(labels), int) if self.kind == "tagging" else np.arange(len(labels)) % self.group_size
        return labels, positions

    def inputs(self, text: str) -> list[Example]:
        """The rows the model sees for one raw input, labels dummy (0)."""
        if self.kind == "tagging":
            words = text.split()
            return [Example("input", " ".join(words), None, (0,) * len(words))]
        return [Example("input", text, None, 0)]

    def decode(self, probs: np.ndarray, rows: Sequence[Example]) -> dict[str, Any]:
        """One prediction from ``probs`` of :meth:`inputs`' ``rows`` (rows x classes; words x
        classes for tagging)."""
        if self.kind == "tagging":
            return {"words": rows[0].text_a.split(" "), "tags": [self.labels[i] for i in probs.argmax(1)]}
        return label_probabilities(probs[0], self.labels)

    def path(self, *parts: str) -> Path:
        """A file under the data root, or a :class:`DataError` naming every missing file of
        the task (not just this one), all it expects and where the public copies live."""
        p = self.data_dir.joinpath(*parts)
        if not p.is_file():
            expected = list(self.files) or ["/".join(parts)]
            missing = [f for f in expected if not (self.data_dir / f).is_file()] or ["/".join(parts)]
            raise DataError(
                f"{self.name}: missing dataset file(s) {', '.join(missing)} under data root {self.data_dir} "
                f"(expected {', '.join(expected)}; set --data-dir or MTL_DATA_DIR, or run "
                f"python -m trainables.data download; public copies: {self.source})"
            )
        if p.stat().st_size == 0:
            raise DataError(f"{p}: empty file, expected {self.name} data")
        return p

    source: ClassVar[str] = "see README"
    # Every file the task reads, relative to the data root (named all at once when any is missing).
    files: ClassVar[tuple[str, ...]] = ()


def label_probabilities(probs: np.ndarray, labels: Sequence[str], key: str = "label") -> dict[str, Any]:
    """``{key: argmax class, "probabilities": {class: p}}`` (ties to the lower class, as the metrics)."""
    return {key: labels[int(np.argmax(probs))], "probabilities": {name: float(p) for name, p in zip(labels, probs)}}


TaskFactory = Callable[..., Task]
_REGISTRY: dict[str, TaskFactory] = {}


def register(name: str) -> Callable[[TaskFactory], TaskFactory]:
    """Class decorator: make ``name`` resolvable by :func:`get_task`."""

    def wrap(factory: TaskFactory) -> TaskFactory:
        _REGISTRY[name] = factory
        return factory

    return wrap


def task_names() -> list[str]:
    return sorted(_REGISTRY)


def get_task(name: str, data_dir: Path, protocol: str = PROTOCOLS[0]) -> Task:
    """Instantiate a task from its spec ``NAME[:OPTION]``.

    The option selects a construction (``semeval:NLI_M``) or, for ``csv``, the
    task's config file (``csv:my_task.json``).
    """
    base, _, option = name.partition(":")
    if base not in _REGISTRY:
        raise DataError(f"unknown task {name!r}: expected one of {', '.join(task_names())}")
    return _REGISTRY[base](Path(data_dir), protocol, option or None)


def declared_name(spec: str) -> str:
    """The name a task spec's task declares: ``semeval:NLI_M`` -> ``semeval``; ``csv:reviews/task.json``
    -> the ``name`` in that file. Metric keys (``reviews/dev/acc``), labels and a model's tasks use it.

    Reads no data; cached per spec and working directory (a relative file is read from there).
    """
    return _declared_name(spec, Path.cwd())


@functools.lru_cache(maxsize=1024)
def _declared_name(spec: str, cwd: Path) -> str:
    return get_task(spec, cwd).name  # the data root is never read: configure reads the spec only
