"""The encoder's attention mask: prebuilt in 4-D where transformers would read the 2-D one on the host."""

import pytest
import torch
from conftest import tiny_config

from trainables.config import EncoderConfig
from trainables.loop import Trainer
from trainables.model import build_model, encoder_mask

HEADS = {"sst2": (2, "sequence"), "pos": (45, "tagging")}


def batch() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0
    mask[2, 2:] = 0
    return {"input_ids": torch.randint(1000, 2000, (3, 9)) * mask, "attention_mask": mask}


def test_bert_gets_a_prebuilt_mask_and_the_same_outputs(tiny_bert):
    model = build_model(EncoderConfig(str(tiny_bert)), HEADS).eval()
    assert model.prebuilt_mask
    inputs = batch()
    padded, unpadded = inputs, {**inputs, "attention_mask": torch.ones_like(inputs["attention_mask"])}
    for b in (padded, unpadded):  # without padding transformers skips its mask; an all-True one changes nothing
        prebuilt = model("sst2", **b)
        model.prebuilt_mask = False
        assert torch.equal(prebuilt, model("sst2", **b))
        model.prebuilt_mask = True
    mask = encoder_mask(inputs["attention_mask"], True)
    assert mask.shape == (3, 1, 9, 9) and mask.dtype == torch.bool
    assert torch.equal(mask[2, 0], inputs["attention_mask"][2].bool().expand(9, 9))  # keys masked, for every query


def test_xlnet_keeps_its_2d_mask(tiny_xlnet):
    assert not build_model(EncoderConfig(str(tiny_xlnet)), HEADS).prebuilt_mask


HOST_READS = ("__bool__", "item", "tolist", "__int__", "__float__", "__index__")


@pytest.mark.parametrize("prebuilt", [True, False])
def test_training_forward_and_backward_read_no_tensor_on_the_host(tiny_bert, monkeypatch, prebuilt):
    """The CPU's stand-in for CUDA's sync debug mode: any tensor read into Python (a host sync on a
    GPU) goes through one of HOST_READS. transformers' 2-D mask path reads ``padding_mask.all()``."""
    trainer = Trainer(tiny_config(tiny_bert, tasks=("sst2", "pos"), primary="sst2", max_train_examples=32))
    trainer.model.prebuilt_mask = prebuilt
    draws = list(trainer.draws(0, 4))
    reads = []
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor, name, lambda self, *a, _n=name, _f=original, **k: reads.append(_n) or _f(self, *a, **k)
        )
    for t, b in draws:
        trainer.backward(t, b)
    monkeypatch.undo()
    assert reads == ([] if prebuilt else ["__bool__"] * 4)
