"""The strategies benchmark end to end on the CPU with a tiny encoder."""

from benchmarks import throughput


def test_strategy_costs_come_as_ratios_to_the_plain_loop(tiny_bert, data_dir, tmp_path):
    out = tmp_path / "strategies.json"
    args = ["--model", str(tiny_bert), "--device", "cpu", "--steps", "2", "--rounds", "1", "--batch-size", "4"]
    summary = throughput.main(args + ["--tasks", "sst2,pos", "--strategies", "--out", str(out)])
    assert out.is_file() and summary["strategy_steps_per_block"] == 2
    ratios = summary["strategy_cost_ratio"]
    assert set(ratios) == set(throughput.strategies.OPTIONS) and all(r > 0 for r in ratios.values())
