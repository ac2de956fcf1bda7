"""Tokenize once, cache on disk, and pad each batch only to its own longest row."""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch

from trainables.tasks.base import Example

logger = logging.getLogger(__name__)
T = TypeVar("T")
IGNORE = -100  # label of padding and non-first sub-tokens, skipped by the loss
# 2: text_b keyed by repr (None and "None" differ); 3, 4: XLNet, ALBERT segment ids; 5: only the sentence truncated
CACHE_VERSION = 5
TRUNCATION = {"a": "only_first", "b": "only_second", None: "longest_first"}  # by the side holding the sentence


@dataclass
class Encoded:
    """One tokenized split, stored flat: row i is ``ids[offsets[i]:offsets[i+1]]``."""

    ids: np.ndarray  # (total_tokens,) int32
    type_ids: np.ndarray | None  # (total_tokens,) int8, absent for encoders without segments
    offsets: np.ndarray  # (rows + 1,) int64
    labels: np.ndarray  # (rows,) for sequence tasks; (total_tokens,) with IGNORE for tagging
    words: np.ndarray | None  # (rows,) words per row for tagging (some may be truncated away)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def tokenizer_identity(tokenizer) -> str:
    return f"{type(tokenizer).__name__}|{tokenizer.name_or_path}|{len(tokenizer)}|{tokenizer.padding_side}"


def cache_key(examples: Sequence[Example], kind: str, tokenizer, max_len: int, sentence: str | None = None) -> str:
    digest = hashlib.sha1(f"{CACHE_VERSION}|{kind}|{max_len}|{sentence}|{tokenizer_identity(tokenizer)}".encode())
    for ex in examples:
        digest.update(f"{ex.text_a}\x1f{ex.text_b!r}\x1f{ex.label}\x1e".encode())
    return digest.hexdigest()


def segment_ids_wanted(tokenizer) -> bool:
    """Whether to feed segment (token type) ids. transformers 5 leaves them out of XLNet's and
    ALBERT's ``model_input_names``, yet both models read them (XLNet: relative segment
    encoding of text_a, text_b and its trailing <cls>, as in the thesis's XLNet runs)."""
    return "token_type_ids" in tokenizer.model_input_names or type(tokenizer).__name__.startswith(("XLNet", "Albert"))


def encode(
    examples: Sequence[Example],
    kind: str,
    tokenizer,
    max_len: int,
    cache_dir: Path | None = None,
    sentence: str | None = None,
) -> Encoded:
    """Tokenize ``examples`` (or load the identical earlier result from ``cache_dir``).

    ``sentence`` ("a", "b" or None, a task's ``sentence_side``) names the text of a pair that
    truncation may cut; None cuts the longer one.
    """
    if sentence not in TRUNCATION:
        raise ValueError(f"sentence side {sentence!r}: expected 'a', 'b' or None")
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"{cache_key(examples, kind, tokenizer, max_len, sentence)}.pkl"
        if path.is_file():
            with path.open("rb") as f:
                return pickle.load(f)
    encoded = (
        _encode_tagging(examples, tokenizer, max_len)
        if kind == "tagging"
        else _encode_pairs(examples, tokenizer, max_len, sentence)
    )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # write then rename, so concurrent trials never read a half-written file
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(encoded, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    return encoded


def _flatten(rows: list[list[int]], dtype) -> np.ndarray:
    return np.fromiter((t for row in rows for t in row), dtype=dtype, count=sum(map(len, rows)))


def _encode_pairs(examples: Sequence[Example], tokenizer, max_len: int, sentence: str | None) -> Encoded:
    a = [ex.text_a for ex in examples]
    b = [ex.text_b for ex in examples]
    pairs = sum(t is not None for t in b)
    if 0 < pairs < len(b):  # never drop some rows' text_b silently: tasks give all pairs or none
        single = next(ex.id for ex in examples if ex.text_b is None)
        raise ValueError(f"{pairs} of {len(b)} rows have a text_b but row {single!r} has none; expected all or none")
    ids, type_ids = _tokenize_pairs(
        a, b if pairs else None, tokenizer, max_len, TRUNCATION[sentence if pairs else None]
    )
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in ids], out=offsets[1:])
    types = _flatten(type_ids, np.int8) if type_ids is not None else None
    labels = np.asarray([ex.label for ex in examples], dtype=np.int64)
    return Encoded(_flatten(ids, np.int32), types, offsets, labels, None)


def _tokenize_pairs(
    a: list[str], b: list[str | None] | None, tokenizer, max_len: int, truncation: str
) -> tuple[list[list[int]], list[list[int]] | None]:
    """Token ids (and segment ids) per row, cutting only the sentence's side where it can.

    A row whose auxiliary text alone exceeds ``max_len`` cannot keep it whole; that row (only)
    falls back to cutting the longer text, with a warning.
    """
    kwargs = {"max_length": max_len, "return_token_type_ids": segment_ids_wanted(tokenizer) or None}
    try:
        out = tokenizer(a, b, truncation=truncation, **kwargs)
        return out["input_ids"], out.get("token_type_ids")
    except Exception:  # the tokenizers library raises a bare Exception ("Truncation error: ...")
        if truncation == "longest_first":
            raise
    ids, types, cut = [], [], 0
    for i in range(len(a)):
        pair = (a[i], b[i]) if b is not None else (a[i],)
        try:
            out = tokenizer(*pair, truncation=truncation, **kwargs)
        except Exception:
            out, cut = tokenizer(*pair, truncation="longest_first", **kwargs), cut + 1
        ids.append(out["input_ids"])
        types.append(out.get("token_type_ids"))
    logger.warning(
        "%d of %d rows: max_seq_length %d is too short for the auxiliary text alone, so it was cut too",
        cut,
        len(a),
        max_len,
    )
    return ids, (types if types[0] is not None else None)


def _encode_tagging(examples: Sequence[Example], tokenizer, max_len: int) -> Encoded:
    words = [ex.text_a.split(" ") for ex in examples]
    out = tokenizer(
        words,
        is_split_into_words=True,
        truncation=True,
        max_length=max_len,
        return_token_type_ids=segment_ids_wanted(tokenizer) or None,
    )
    rows, label_rows = out["input_ids"], []
    for i, ex in enumerate(examples):
        tags, previous, row = ex.label, None, []
        for w in out.word_ids(i):
            # label a word on its first sub-token only
            row.append(IGNORE if w is None or w == previous else tags[w])  # type: ignore[index]
            previous = w
        label_rows.append(row)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    type_ids = _flatten(out["token_type_ids"], np.int8) if "token_type_ids" in out else None
    return Encoded(
        _flatten(rows, np.int32),
        type_ids,
        offsets,
        _flatten(label_rows, np.int64),
        np.asarray([len(w) for w in words], dtype=np.int64),
    )


@dataclass(frozen=True)
class Padding:
    pad_id: int
    pad_type_id: int
    left: bool  # XLNet pads on the left so its <cls> stays last

    @classmethod
    def of(cls, tokenizer) -> Padding:
        return cls(
            int(tokenizer.pad_token_id or 0),
            int(getattr(tokenizer, "pad_token_type_id", 0) or 0),
            tokenizer.padding_side == "left",
        )


def collate(
    data: Encoded,
    rows: np.ndarray,
    padding: Padding,
    kind: str,
    fixed_length: int | None = None,
    multiple: int = 1,
) -> dict[str, torch.Tensor]:
    """Tensors for ``rows``, padded to their longest row rounded up to ``multiple`` (or to ``fixed_length``)."""
    starts, ends = data.offsets[rows], data.offsets[rows + 1]
    lengths = ends - starts
    width = int(fixed_length or -(-int(lengths.max()) // multiple) * multiple)
    ids = np.full((len(rows), width), padding.pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    types = np.full((len(rows), width), padding.pad_type_id, dtype=np.int64) if data.type_ids is not None else None
    tags = np.full((len(rows), width), IGNORE, dtype=np.int64) if kind == "tagging" else None
    for i, (s, e, n) in enumerate(zip(starts, ends, lengths)):
        cols = slice(width - n, width) if padding.left else slice(0, n)
        ids[i, cols] = data.ids[s:e]
        mask[i, cols] = 1
        if types is not None:
            types[i, cols] = data.type_ids[s:e]  # type: ignore[index]
        if tags is not None:
            tags[i, cols] = data.labels[s:e]
    batch = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
    if types is not None:
        batch["token_type_ids"] = torch.from_numpy(types)
    batch["labels"] = torch.from_numpy(tags) if tags is not None else torch.from_numpy(data.labels[rows])
    return batch


# length grouping: rows sorted by length within windows of this many batches of a random order. At 8 (128 rows
# at batch 16) MiniLM's batches pad to 21 tokens of SemEval NLI_M (mean row 20; 32 in a random order) and 15 of
# SST-2 (mean 13; 30), while each batch is still drawn from a random eighth of ~1,000 rows.
LENGTH_WINDOW = 8


class TaskBatches:
    """Endless batches over one task's training rows, reshuffled at every pass. With ``lengths`` (tokens per row),
    grouped by length: each pass sorts windows of a random order by length, cuts them into batches and trains the
    full batches in a random order, the short one last; a batch then pads to little more than its rows' length."""

    def __init__(self, n_rows: int, batch_size: int, seed: int, lengths: np.ndarray | None = None) -> None:
        self.n_rows, self.batch_size = n_rows, batch_size
        self.lengths = None if lengths is None else np.asarray(lengths)
        if self.lengths is not None and len(self.lengths) != n_rows:
            raise ValueError(f"lengths: {len(self.lengths)} for {n_rows} rows")
        self.rng = np.random.default_rng(seed)
        self.order = self._pass()
        self.position = 0

    def _pass(self) -> np.ndarray:
        order = self.rng.permutation(self.n_rows)
        if self.lengths is None:
            return order
        window = LENGTH_WINDOW * self.batch_size
        order = np.concatenate(
            [w[np.argsort(self.lengths[w], kind="stable")] for w in np.split(order, range(window, self.n_rows, window))]
        )
        full = self.n_rows // self.batch_size
        batches = order[: full * self.batch_size].reshape(full, self.batch_size)[self.rng.permutation(full)]
        return np.concatenate([batches.ravel(), order[full * self.batch_size :]])

    def __len__(self) -> int:
        """Batches per pass (the last one may be short)."""
        return -(-self.n_rows // self.batch_size)

    def next(self) -> np.ndarray:
        if self.position >= self.n_rows:
            self.order, self.position = self._pass(), 0
        rows = self.order[self.position : self.position + self.batch_size]
        self.position += len(rows)
        return rows

    def state_dict(self) -> dict:
        # a tensor and plain Python types only, so checkpoints load with torch.load(weights_only=True)
        return {
            "rng": self.rng.bit_generator.state,
            "order": torch.from_numpy(self.order.copy()),
            "position": self.position,
        }

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.order = torch.as_tensor(state["order"]).cpu().numpy().astype(np.int64, copy=False)
        self.position = int(state["position"])


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """Move a collated batch; on CUDA from pinned memory, so the copy runs asynchronously."""
    if device.type != "cuda":
        return {k: v.to(device) for k, v in batch.items()}
    return {k: (v if v.is_pinned() else v.pin_memory()).to(device, non_blocking=True) for k, v in batch.items()}


def ahead(items: Iterator[T]) -> Iterator[T]:
    """``items``, each produced in a background thread while the consumer works on the previous one.

    Items are drawn one at a time, in order, by a single thread, so whatever RNGs ``items``
    uses advance exactly as they would in the caller's thread, and no further than consumed + 1.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="collate") as pool:
        upcoming = pool.submit(next, items, _END)
        while (item := upcoming.result()) is not _END:
            upcoming = pool.submit(next, items, _END)
            yield item


_END = object()
