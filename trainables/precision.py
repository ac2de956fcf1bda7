"""Numeric precision of a run: autocast dtype, loss scaling, and the CUDA math settings.

``Trainer`` resolves its config's ``precision`` once with :func:`resolve_precision`, wraps
every forward pass (training and evaluation) in :meth:`Precision.autocast`, and routes
backward and optimizer steps through the :class:`torch.amp.GradScaler` from
:meth:`Precision.scaler`, which is a no-op unless the run trains in fp16.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Precision:
    name: str  # "fp32", "bf16" or "fp16", never "auto"
    device_type: str  # "cuda" or "cpu"

    @property
    def dtype(self) -> torch.dtype | None:
        """The autocast dtype; None for fp32 (no autocast)."""
        return DTYPES[self.name]

    def autocast(self) -> AbstractContextManager:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def scaler(self) -> torch.amp.GradScaler:
        # fp16's 5 exponent bits underflow small gradients; bf16 has fp32's range and needs no scaling
        return torch.amp.GradScaler(self.device_type, enabled=self.name == "fp16")


def resolve_precision(name: str, device: torch.device) -> Precision:
    """``auto``: bf16 on CUDA devices with native bf16 (Ampere and later), fp16 on older CUDA
    devices, fp32 on the CPU. An explicit choice is taken as given (bf16 on the CPU is CPU autocast)."""
    if name == "auto":
        if device.type != "cuda":
            name = "fp32"
        else:
            # without the flag, torch also reports bf16 on pre-Ampere GPUs, where it is emulated and slow
            name = "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"
    if name not in DTYPES:
        raise ValueError(f"precision {name!r}: expected auto or one of {', '.join(DTYPES)}")
    return Precision(name, device.type)


def configure_cuda_math() -> None:
    """TF32 tensor cores for the fp32 matmuls left outside autocast (and for all of an fp32 run):
    10 mantissa bits instead of 23, the PyTorch default for convolutions and most training recipes."""
    torch.set_float32_matmul_precision("high")


def padding_multiple(configured: int | None, device: torch.device) -> int:
    """Batch widths are rounded up to this: 8 keeps CUDA tensor-core shapes, 1 keeps CPU results
    bit-identical to padding each batch to its longest row."""
    if configured is not None:
        return configured
    return 8 if device.type == "cuda" else 1
