"""Randomly initialised encoders of published shapes, for throughput without the model hub.

Training throughput depends on the architecture (layers, widths, vocabulary), not on the
weights, so a random BERT-base measures what ``bert-base-uncased`` would on the same device.
"""

from __future__ import annotations

from pathlib import Path

# transformers BertConfig fields; the vocabulary is the packaged MiniLM tokenizer's (30522
# WordPiece tokens, the same as bert-base-uncased), so embeddings have the published size too
SHAPES: dict[str, dict[str, int]] = {
    "bert-base": {
        "num_hidden_layers": 12,
        "hidden_size": 768,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
}


def describe(shape: str) -> str:
    """``"random-init bert-base (12 layers, 768 hidden, 12 heads, 3072 intermediate)"``."""
    s = SHAPES[shape]
    return (
        f"random-init {shape} ({s['num_hidden_layers']} layers, {s['hidden_size']} hidden, "
        f"{s['num_attention_heads']} heads, {s['intermediate_size']} intermediate, MiniLM tokenizer vocab)"
    )


def save_random_encoder(shape: str, root: Path) -> Path:
    """Save a random BERT of ``shape`` with the MiniLM tokenizer under ``root``; return its path.

    The path is stable (``root/shape``) and reused when present, so the tokenized-data
    cache, keyed on the tokenizer's path, hits on later runs.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from trainables.config import DEFAULT_MODEL
    from trainables.model import resolve_model_path

    path = Path(root) / shape
    if (path / "config.json").is_file() and (path / "tokenizer_config.json").is_file():
        return path
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(DEFAULT_MODEL), use_fast=True)
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=512, **SHAPES[shape]))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
