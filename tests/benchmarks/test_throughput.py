"""The throughput benchmark end to end on the CPU with a tiny encoder: it runs, and warms up every task."""

import pytest

from benchmarks import throughput
from trainables.loop import Trainer


def test_warm_up_trains_every_task_before_the_timed_blocks(tiny_bert, data_dir, monkeypatch):
    args = throughput.parse_args(["--model", str(tiny_bert), "--device", "cpu", "--tasks", "semeval,sst2,pos"])
    trainer = Trainer(throughput.benchmark_config(args, str(tiny_bert)).with_(max_train_examples=100))
    seen = []
    bare = throughput.bare_steps
    monkeypatch.setattr(
        throughput, "bare_steps", lambda t, batches: seen.extend(n for n, _ in batches) or bare(t, batches)
    )
    before = throughput.iterator_state(trainer)
    throughput.warm_up(trainer)
    assert seen == ["semeval"] * 2 + ["sst2"] * 2 + ["pos"] * 2  # a task the sampler may not draw included
    assert throughput.iterator_state(trainer) != before  # then the loop's own steps


def test_a_short_cpu_run_reports_throughput_without_mfu(tiny_bert, data_dir, tmp_path):
    out = tmp_path / "run.json"
    summary = throughput.main(
        ["--model", str(tiny_bert), "--device", "cpu", "--steps", "1", "--padding-steps", "1", "--rounds", "1"]
        + ["--batch-size", "4", "--out", str(out)]
    )
    assert out.is_file() and summary["device"] == "cpu" and summary["precision"] == "fp32"
    assert summary["loop_samples_per_s"] > 0 and summary["loop_mfu"] is None  # no peak for a CPU
    assert sum(summary["loop_steps_per_task"].values()) == 2  # one block of each order
    assert 0 < summary["non_embedding_parameters"] < summary["parameters"]
    assert summary["loop_model_tflops_per_s"] == pytest.approx(
        6 * summary["non_embedding_parameters"] * summary["loop_tokens_per_s"] / 1e12
    )
