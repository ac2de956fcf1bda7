"""Precision, gradient accumulation, the deferred loss check and safe checkpoints (CPU)."""

import json

import numpy as np
import pytest
import torch
from conftest import strip_timing, tiny_config

from trainables.batching import Padding, collate, encode
from trainables.config import ConfigError, EncoderConfig, TrainConfig
from trainables.loop import DivergedError, Trainer, train
from trainables.model import load_tokenizer, save_tiny_encoder
from trainables.precision import padding_multiple, resolve_precision
from trainables.tasks import get_task


def config(model, **kw) -> TrainConfig:
    """The loop tests' tiny config, smaller and without a test split."""
    return tiny_config(model, **{"max_train_examples": 64, "max_eval_examples": 32, "evaluate_test": False, **kw})


@pytest.fixture(scope="module")
def no_dropout_bert(tmp_path_factory):
    """The tiny BERT without dropout, so runs that batch the same rows differently agree."""
    path = save_tiny_encoder(tmp_path_factory.mktemp("tiny-bert-nodrop"), "bert")
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def test_precision_and_padding_resolve_by_device():
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu).name == "fp32" and resolve_precision("auto", cpu).dtype is None
    assert resolve_precision("bf16", cpu).dtype == torch.bfloat16
    assert not resolve_precision("bf16", cpu).scaler().is_enabled()
    assert resolve_precision("fp16", cpu).scaler().is_enabled()
    assert padding_multiple(None, cpu) == 1 and padding_multiple(None, torch.device("cuda")) == 8
    assert padding_multiple(4, torch.device("cuda")) == 4
    with pytest.raises(ConfigError, match=r"precision 'fp8': expected one of auto, fp32, bf16, fp16"):
        config("m", precision="fp8")
    with pytest.raises(ConfigError, match=r"grad_accum 0: expected >= 1"):
        config("m", grad_accum=0)


def test_padding_rounds_widths_up(tiny_bert, data_dir):
    tokenizer = load_tokenizer(EncoderConfig(model=str(tiny_bert)))
    data = encode(get_task("sst2", data_dir).examples("dev")[:16], "sequence", tokenizer, 128)
    rows = np.arange(16)
    longest = int(data.lengths().max())
    plain = collate(data, rows, Padding.of(tokenizer), "sequence")
    rounded = collate(data, rows, Padding.of(tokenizer), "sequence", multiple=8)
    assert plain["input_ids"].shape[1] == longest
    assert rounded["input_ids"].shape[1] == -(-longest // 8) * 8
    # the extra columns are padding only
    assert torch.equal(rounded["attention_mask"][:, :longest], plain["attention_mask"])
    assert rounded["attention_mask"][:, longest:].sum() == 0


def test_bf16_autocast_on_cpu_trains_close_to_fp32(tiny_bert):
    base = config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=3, lr=3e-3)
    fp32 = [e["train/loss"] for e in train(base)]
    bf16 = [e["train/loss"] for e in train(base.with_(precision="bf16"))]
    assert bf16 != fp32  # autocast changed the arithmetic...
    assert bf16 == pytest.approx(fp32, rel=0.05)  # ...but not the training
    assert bf16[-1] < 0.9 * bf16[0]


def test_prefetch_keeps_the_batch_order(tiny_bert):
    a = config(tiny_bert, epochs=1)
    assert strip_timing(train(a)) == strip_timing(train(a.with_(prefetch=False)))


def test_accumulation_steps_the_optimizer_once_per_group(tiny_bert):
    for accum in (1, 3):
        trainer = Trainer(config(tiny_bert, epochs=1, grad_accum=accum))
        updates = -(-trainer.steps_per_epoch // accum)  # the last group of an epoch may be short
        assert trainer.updates_per_epoch == updates
        trainer.run_epoch()
        assert trainer.scheduler.last_epoch == updates
        assert all(p.grad is None for p in trainer.model.parameters())  # no gradient leaks into the next epoch


def test_half_batches_accumulated_twice_match_full_batches(no_dropout_bert):
    full = config(
        no_dropout_bert,
        tasks=("sst2",),
        primary="sst2",
        encoder=EncoderConfig(model=str(no_dropout_bert), max_seq_length=48, dropout=0.0),
        batch_size=8,
    )
    half = full.with_(batch_size=4, grad_accum=2)

    # gradients of one optimizer step: the same 8 rows, as one batch or as two halves
    a, b = Trainer(full), Trainer(half)
    ((ta, batch),) = a.draws(0, 1)
    a.backward(ta, batch)
    for tb, batch in b.draws(0, 2):
        b.backward(tb, batch, 0.5)
    for (name, pa), pb in zip(a.model.named_parameters(), b.model.parameters()):
        assert (pa.grad is None) == (pb.grad is None), name
        if pa.grad is not None:
            torch.testing.assert_close(pb.grad, pa.grad, rtol=1e-4, atol=1e-6, msg=name)

    # whole runs: same schedule (optimizer steps), same losses and dev scores
    ta, tb = Trainer(full), Trainer(half)
    assert tb.steps_per_epoch == 2 * ta.steps_per_epoch and tb.updates_per_epoch == ta.updates_per_epoch
    for _ in range(full.epochs):
        ma, mb = ta.run_epoch(), tb.run_epoch()
        assert mb["train/loss"] == pytest.approx(ma["train/loss"], rel=1e-4)
        assert mb["sst2/dev/acc"] == pytest.approx(ma["sst2/dev/acc"], abs=1 / 32)


@pytest.mark.parametrize("check_every", [1, 4, 1000])  # seed 3 draws sst2 first at step 9 of 13
def test_nan_is_reported_at_its_step_whenever_checked(tiny_bert, check_every):
    cfg = config(tiny_bert, epochs=1, check_every=check_every, max_train_examples=100)
    replay = Trainer(cfg)
    first = next(s for s in range(replay.steps_per_epoch) if replay.names[replay.sampler.sample(0)] == "sst2") + 1
    assert first > 1  # the run has trained some steps before sst2 is drawn
    trainer = Trainer(cfg)
    with torch.no_grad():
        for p in trainer.model.heads["sst2"].parameters():
            p.fill_(float("nan"))
    with pytest.raises(DivergedError, match=rf"^loss became nan at epoch 1 step {first} on task sst2$"):
        trainer.run_epoch()


def test_checkpoint_loads_weights_only_and_resumes_fp16_exactly(tiny_bert, tmp_path):
    cfg = config(tiny_bert, tasks=("semeval", "sst2"), precision="fp16", epochs=2)
    straight = strip_timing(train(cfg))
    first = Trainer(cfg)
    resumed = [first.run_epoch()]
    first.save(tmp_path / "ckpt.pt")
    state = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert state["scaler"]["_growth_tracker"] > 0  # steps since the last overflow: a fresh scaler has 0
    assert isinstance(state["batches"][0]["order"], torch.Tensor)
    second = Trainer(cfg)
    second.load(tmp_path / "ckpt.pt")
    assert second.scaler.state_dict() == first.scaler.state_dict()
    resumed.append(second.run_epoch())
    assert strip_timing(resumed) == straight


def test_checkpoint_with_arbitrary_objects_is_refused(tiny_bert, tmp_path):
    trainer = Trainer(config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=1))
    state = trainer.state_dict()
    state["batches"][0]["order"] = np.arange(4)  # a numpy array: unpickling it would need numpy's globals
    torch.save(state, tmp_path / "old.pt")
    with pytest.raises(ValueError, match=r"not loadable with weights_only=True"):
        trainer.load(tmp_path / "old.pt")
