"""Peak dense tensor-core throughput of common GPUs, for model FLOPs utilization (MFU).

TFLOPS without structured sparsity, from NVIDIA's datasheets (SXM unless named). fp32 runs
are counted against the TF32 peak: the trainer enables TF32 matmuls on CUDA.
"""

from __future__ import annotations

# (substring of torch.cuda.get_device_name(), {precision: TFLOPS}); the first match wins
PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"bf16": 756.0, "fp16": 756.0, "fp32": 378.0}),
    ("H100", {"bf16": 989.4, "fp16": 989.4, "fp32": 494.7}),
    ("H200", {"bf16": 989.4, "fp16": 989.4, "fp32": 494.7}),
    ("A100", {"bf16": 312.0, "fp16": 312.0, "fp32": 156.0}),
    # the A10 datasheet's figures; AWS's A10G variant is not published separately and may run lower
    ("A10G", {"bf16": 125.0, "fp16": 125.0, "fp32": 62.5}),
    ("A10", {"bf16": 125.0, "fp16": 125.0, "fp32": 62.5}),  # after A100, which also contains "A10"
    ("L4", {"bf16": 121.0, "fp16": 121.0, "fp32": 60.0}),
)


def peak_tflops(device_name: str, precision: str) -> float | None:
    """The table's peak for ``precision`` ("bf16", "fp16" or "fp32") on ``device_name``; None if unknown."""
    for key, peaks in PEAKS:
        if key in device_name:
            return peaks[precision]
    return None


def model_flops(parameters: int, tokens: int) -> float:
    """Training FLOPs: 2 per parameter and token forward, 4 backward (the 6·N·D rule)."""
    return 6.0 * parameters * tokens
