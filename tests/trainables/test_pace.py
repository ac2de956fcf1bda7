"""The pace probe: real steps of every task on the tiny encoder, timed; a split's first rows as their own split."""

import math

import numpy as np
from conftest import tiny_config

from trainables.loop import prepare_data
from trainables.model import load_tokenizer
from trainables.pace import first_rows, measure_pace


def test_the_probe_times_every_task_and_restores_the_threads(tiny_bert):
    import torch

    config = tiny_config(tiny_bert)
    data = prepare_data(config, load_tokenizer(config.encoder))
    threads = torch.get_num_threads()
    pace = measure_pace(config, data, threads=1, steps=2, rows=8)
    assert torch.get_num_threads() == threads
    assert set(pace.step_s) == set(pace.eval_row_s) == set(config.tasks) and pace.threads == 1
    values = [*pace.step_s.values(), *pace.eval_row_s.values(), pace.build_s]
    assert all(math.isfinite(v) and v > 0 for v in values), pace


def test_first_rows_cuts_sequence_and_tagging_splits_alike(tiny_bert):
    config = tiny_config(tiny_bert)
    data = prepare_data(config, load_tokenizer(config.encoder))
    for name in ("semeval", "pos"):  # sentence pairs (a label a row), tagging (a label a token)
        whole, head = data[name].dev, first_rows(data[name].dev, 3)
        assert len(head) == 3 and np.array_equal(head.offsets, whole.offsets[:4])
        assert np.array_equal(head.ids, whole.ids[: whole.offsets[3]])
        per_token = len(whole.labels) == len(whole.ids)
        assert len(head.labels) == (head.offsets[-1] if per_token else 3)
    assert len(first_rows(data["sst2"].dev, 10_000)) == len(data["sst2"].dev)
