import pytest
from torch import nn

from benchmarks.peaks import model_flops, non_embedding_parameters, peak_tflops


@pytest.mark.parametrize(
    "name,precision,peak",
    [
        ("NVIDIA H100 80GB HBM3", "bf16", 989.4),
        ("NVIDIA H100 PCIe", "bf16", 756.0),  # not the SXM figure
        ("NVIDIA H200", "fp16", 989.4),
        ("NVIDIA A100-SXM4-80GB", "fp32", 156.0),  # fp32 counts against TF32
        ("NVIDIA A100 80GB PCIe", "bf16", 312.0),
        ("NVIDIA A10", "bf16", 125.0),  # not mistaken for an A100, nor the other way round
        ("NVIDIA A10G", "bf16", 125.0),
        ("NVIDIA L4", "bf16", 121.0),
        # whole names only: variants not in the table have no peak rather than a wrong one
        ("NVIDIA L40S", "bf16", None),  # a substring match gave it the L4's 121 (MFU ~3x too high)
        ("NVIDIA L40", "bf16", None),
        ("NVIDIA H100 NVL", "bf16", None),  # not the SXM's 989.4
        ("NVIDIA H200 NVL", "bf16", None),
        ("Tesla T4", "fp16", None),
    ],
)
def test_peaks_by_whole_device_name(name, precision, peak):
    assert peak_tflops(name, precision) == peak


def test_model_flops_is_six_per_parameter_and_token():
    assert model_flops(110_000_000, 1_000) == 6.6e11


def test_embedding_tables_are_not_counted():
    model = nn.ModuleDict({"words": nn.Embedding(100, 8), "positions": nn.Embedding(10, 8), "out": nn.Linear(8, 3)})
    assert non_embedding_parameters(model) == 8 * 3 + 3


def test_minilm_counts_about_half_its_parameters():
    from trainables.config import DEFAULT_MODEL, EncoderConfig
    from trainables.model import load_encoder

    encoder = load_encoder(EncoderConfig(DEFAULT_MODEL))
    total = sum(p.numel() for p in encoder.parameters())
    assert total == pytest.approx(22.7e6, rel=0.01)
    assert total - non_embedding_parameters(encoder) == pytest.approx(11.9e6, rel=0.01)
