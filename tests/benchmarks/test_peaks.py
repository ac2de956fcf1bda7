import pytest

from benchmarks.peaks import model_flops, peak_tflops


@pytest.mark.parametrize(
    "name,precision,peak",
    [
        ("NVIDIA H100 80GB HBM3", "bf16", 989.4),
        ("NVIDIA H100 PCIe", "bf16", 756.0),  # not the SXM figure
        ("NVIDIA H200", "fp16", 989.4),
        ("NVIDIA A100-SXM4-80GB", "fp32", 156.0),  # fp32 counts against TF32
        ("NVIDIA A10", "bf16", 125.0),  # not mistaken for an A100, nor the other way round
        ("NVIDIA L4", "bf16", 121.0),
        ("Tesla T4", "fp16", None),
    ],
)
def test_peaks_by_device_name(name, precision, peak):
    assert peak_tflops(name, precision) == peak


def test_model_flops_is_six_per_parameter_and_token():
    assert model_flops(110_000_000, 1_000) == 6.6e11
