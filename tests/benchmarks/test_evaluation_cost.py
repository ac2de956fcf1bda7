"""The evaluation-cost benchmark end to end on the CPU with a tiny encoder."""

import json

from benchmarks import evaluation_cost


def test_it_times_an_epoch_and_both_splits_of_every_task(tiny_bert, data_dir, tmp_path):
    out = tmp_path / "cost.json"
    result = evaluation_cost.main(["--model", str(tiny_bert), "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert result["tasks"] == ["semeval:NLI_M", "sst2", "pos", "sentihood"]
    assert result["dev_rows"] > 0 and result["test_rows"] > 0
    assert min(result["train_epoch_seconds"], result["dev_scoring_seconds"], result["test_scoring_seconds"]) > 0
    trial = result["epochs"] * (result["train_epoch_seconds"] + result["dev_scoring_seconds"])
    assert result["test_share_of_a_completed_seed"] == result["test_scoring_seconds"] / (
        trial + result["test_scoring_seconds"]
    )
