import json

import pytest

from search.estimate import benchmark_throughput
from trainables.config import ConfigError


def test_throughput_is_read_from_a_benchmark_json(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps(
            {
                "loop_samples_per_s": 412.5,
                "bare_samples_per_s": 420.0,
                "device": "NVIDIA H100 80GB HBM3",
                "model": "random-init bert-base (...)",
                "precision": "bf16",
                "batch_size": 24,
            }
        )
    )
    samples_per_second, measured = benchmark_throughput(path)
    assert samples_per_second == 412.5  # the loop's, not the bare loop's
    assert measured["device"] == "NVIDIA H100 80GB HBM3" and measured["precision"] == "bf16"


@pytest.mark.parametrize("text", ["{}", "not json", '{"loop_samples_per_s": null}'])
def test_a_file_without_the_loop_throughput_is_refused(tmp_path, text):
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"--from-benchmark .*run\.json"):
        benchmark_throughput(path)
