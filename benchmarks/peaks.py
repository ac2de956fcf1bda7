"""Peak dense tensor-core throughput of common GPUs, and the model FLOPs, for MFU.

TFLOPS without structured sparsity, from NVIDIA's datasheets. fp32 runs are counted against
the TF32 peak: the trainer enables TF32 matmuls on CUDA.
"""

from __future__ import annotations

from torch import nn

H100_SXM = {"bf16": 989.4, "fp16": 989.4, "fp32": 494.7}
A100 = {"bf16": 312.0, "fp16": 312.0, "fp32": 156.0}  # SXM4 and PCIe alike
A10 = {"bf16": 125.0, "fp16": 125.0, "fp32": 62.5}

# torch.cuda.get_device_name() -> {precision: TFLOPS}, matched on the whole name: a substring
# would give an L40S the L4's peak (MFU 3x too high) and an H100 NVL the SXM's
PEAKS: dict[str, dict[str, float]] = {
    "NVIDIA H100 80GB HBM3": H100_SXM,
    "NVIDIA H100 PCIe": {"bf16": 756.0, "fp16": 756.0, "fp32": 378.0},
    "NVIDIA H200": H100_SXM,  # the H100 SXM's tensor cores with more, faster memory
    "NVIDIA A100-SXM4-40GB": A100,
    "NVIDIA A100-SXM4-80GB": A100,
    "NVIDIA A100-PCIE-40GB": A100,
    "NVIDIA A100 80GB PCIe": A100,
    "NVIDIA A10": A10,
    # AWS's A10G is not published separately: the A10's figures, which it may not reach
    "NVIDIA A10G": A10,
    "NVIDIA L4": {"bf16": 121.0, "fp16": 121.0, "fp32": 60.0},
}


def peak_tflops(device_name: str, precision: str) -> float | None:
    """The table's peak for ``precision`` ("bf16", "fp16" or "fp32") on ``device_name``;
    None for a device or variant not in the table (pass ``--peak-tflops`` then)."""
    peaks = PEAKS.get(" ".join(device_name.split()))
    return peaks[precision] if peaks else None


def non_embedding_parameters(model: nn.Module) -> int:
    """Parameters outside embedding tables: the N of 6·N·D (Kaplan et al. 2020's convention).

    An embedding lookup does no matmul, and in small encoders the tables are half the model
    (all-MiniLM-L6-v2: 11.9 M of 22.7 M), so counting them would double the MFU.
    """
    embedded = {id(p) for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in embedded)


def model_flops(parameters: int, tokens: int) -> float:
    """Training FLOPs: 2 per parameter and token forward, 4 backward (the 6·N·D rule)."""
    return 6.0 * parameters * tokens
