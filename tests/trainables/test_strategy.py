"""Issue 19's strategies through the real loop: each lowers the loss, and each resumes exactly."""

import pytest
from conftest import strip_timing, tiny_config

from trainables.config import OptimConfig, SamplingConfig
from trainables.loop import Trainer, train

OPTIONS = {
    "bandit-loss": {"sampling": SamplingConfig(schema="bandit", bandit_lr=0.05, bandit_every=4)},
    "bandit-primary": {
        "sampling": SamplingConfig(schema="bandit", bandit_reward="primary", bandit_lr=0.5, bandit_every=4)
    },
    "uncertainty": {"optim": OptimConfig(loss_weighting="uncertainty", uncertainty_lr=0.05)},
    "pcgrad-all": {"optim": OptimConfig(gradients="pcgrad", step_mode="all")},
    "pcgrad-accum": {"optim": OptimConfig(gradients="pcgrad"), "grad_accum": 2},
    "all-sum": {"optim": OptimConfig(step_mode="all")},
    "layer-decay": {"optim": OptimConfig(layer_decay=0.8)},
    "unfreeze-step": {"optim": OptimConfig(unfreeze="step", unfreeze_every=3)},
    "unfreeze-epoch": {"optim": OptimConfig(unfreeze="epoch")},
}


def config(model, option: str, **kw):
    base = dict(
        tasks=("sst2", "pos"),
        primary="sst2",
        sampling=SamplingConfig(schema="random"),
        epochs=3,
        max_train_examples=64,
        max_eval_examples=16,
        evaluate_test=False,
        lr=3e-3,
    )
    return tiny_config(model, **{**base, **OPTIONS[option], **kw})


def task_losses(epochs: list[dict]) -> list[float]:
    """Per epoch, the sum of the mean training losses of the tasks every epoch trained: a bandit
    moves the mix of tasks, and with it ``train/loss``, and may leave a task out of an epoch."""
    tasks = [t for t in ("sst2", "pos") if all(f"train/{t}/loss" in e for e in epochs)]
    return [sum(e[f"train/{t}/loss"] for t in tasks) for e in epochs]


def check_logged(option: str, epochs: list[dict]) -> None:
    """What each option adds to the epoch's metrics."""
    last = epochs[-1]
    if option.startswith("bandit"):
        assert (last["sampling/p/sst2"], last["sampling/p/pos"]) != (0.5, 0.5)  # moved from uniform
        assert last["sampling/p/sst2"] + last["sampling/p/pos"] == pytest.approx(1.0)
    if option == "uncertainty":
        assert last["loss/weight/sst2"] != 1.0 and last["loss/weight/pos"] != 1.0
    if option == "unfreeze-epoch":  # a 2-layer encoder: the heads only, then + the top layer, + layer 0
        assert [e["optim/frozen_layers"] for e in epochs] == [3.0, 2.0, 1.0]
    if option in ("all-sum", "pcgrad-all"):  # one batch of each task per step
        assert last["sampling/steps/sst2"] == last["sampling/steps/pos"] and last["sampling/p/sst2"] == 0.5


@pytest.mark.parametrize("option", OPTIONS)
def test_each_option_lowers_the_loss_and_resumes_exactly(option, tiny_bert, tmp_path):
    cfg = config(tiny_bert, option)
    straight = strip_timing(train(cfg))
    losses = task_losses(straight)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses  # lower every epoch
    check_logged(option, straight)
    # stop after epoch 1, restore into a fresh trainer, finish
    first = Trainer(cfg)
    resumed = [first.run_epoch()]
    first.save(tmp_path / "ckpt.pt")
    second = Trainer(cfg)
    second.load(tmp_path / "ckpt.pt")
    resumed += [second.run_epoch(), second.run_epoch()]
    assert strip_timing(resumed) == straight


def test_a_bandit_draws_the_same_with_and_without_prefetch(tiny_bert):
    a = strip_timing(train(config(tiny_bert, "bandit-primary", epochs=1)))
    b = strip_timing(train(config(tiny_bert, "bandit-primary", epochs=1, prefetch=False)))
    assert a == b


def test_all_tasks_mode_counts_steps_as_the_sampled_mode_does(tiny_bert):
    sampled = Trainer(config(tiny_bert, "layer-decay"))
    every = Trainer(config(tiny_bert, "all-sum"))
    # 64 rows of each task in batches of 8: 8 micro-batches per epoch either way, 4 optimizer steps of 2
    assert sampled.steps_per_epoch == every.steps_per_epoch == 8
    assert (sampled.updates_per_epoch, every.updates_per_epoch) == (8, 4)
