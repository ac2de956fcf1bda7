"""The maths of issue 19's strategies against hand-computed cases (no data, no training)."""

import math

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from trainables.balancing import UncertaintyWeights, uncertainty_loss
from trainables.config import ConfigError, EncoderConfig, OptimConfig, SamplingConfig, TrainConfig
from trainables.gradients import TaskGradients, pcgrad
from trainables.layers import (
    freeze_below,
    lowest_trainable_depth,
    lr_scale,
    parameter_depth,
    unfreeze_stage,
)
from trainables.model import MultitaskModel
from trainables.sampling import BanditSampler, exp3_probabilities, exp3_update, make_sampler
from trainables.strategy import Strategy


# -- PCGrad -------------------------------------------------------------------
def test_pcgrad_of_two_conflicting_gradients():
    g = torch.tensor([[1.0, 0.0], [-1.0, 1.0]])
    # g1·g2 = -1: g1' = g1 - (-1/2) g2 = (0.5, 0.5); g2' = g2 - (-1/1) g1 = (0, 1); sum (0.5, 1.5)
    torch.testing.assert_close(pcgrad(g, [[1], [0]]), torch.tensor([0.5, 1.5]))


def test_pcgrad_of_three_conflicting_gradients():
    g = torch.tensor([[1.0, 0.0], [-1.0, 1.0], [-1.0, -1.0]])  # |g|² = 1, 2, 2
    # task 0: (1,0) off g2 (dot -1): (0.5, 0.5); off g3 (dot -1): (0.5,0.5) + 0.5(-1,-1) = (0, 0)
    # task 1: (-1,1) off g1 (dot -1): (0, 1); off g3 (dot -1): (0,1) + 0.5(-1,-1) = (-0.5, 0.5)
    # task 2: (-1,-1) off g1 (dot -1): (0, -1); off g2 (dot -1): (0,-1) + 0.5(-1,1) = (-0.5, -0.5)
    torch.testing.assert_close(pcgrad(g, [[1, 2], [0, 2], [0, 1]]), torch.tensor([-1.0, 0.0]))
    # the plain sum would be (-1, 0) too here; a case where it differs:
    h = torch.tensor([[1.0, 0.0], [-1.0, 1.0], [0.0, 1.0]])
    # task 0: off g2: (0.5, 0.5); g3·(0.5,0.5) > 0: kept. task 1: off g1: (0, 1); g3: no conflict.
    # task 2: (0,1)·g1 = 0, (0,1)·g2 = 1: kept. Sum (0.5, 2.5), the plain sum (0, 2)
    torch.testing.assert_close(pcgrad(h, [[1, 2], [0, 2], [0, 1]]), torch.tensor([0.5, 2.5]))


def test_pcgrad_leaves_agreeing_and_zero_gradients_alone():
    g = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    torch.testing.assert_close(pcgrad(g, [[1, 2], [0, 2], [0, 1]]), torch.tensor([2.0, 1.0]))


def test_task_gradients_with_one_task_equal_autograd_accumulation():
    torch.manual_seed(0)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    w = torch.nn.Parameter(torch.randn(4))
    (x @ w).sum().backward()
    (y @ w).sum().backward()
    accumulated = w.grad.clone()
    w.grad = None
    surgery = TaskGradients([w], seed=0)
    for batch in (x, y):
        (batch @ w).sum().backward()
        surgery.collect(0)
    assert w.grad is None and surgery.combine() == 1
    assert torch.equal(w.grad, accumulated)  # bit for bit: PCGrad over one task is the sum


def test_task_gradients_project_two_tasks():
    w = torch.nn.Parameter(torch.zeros(2))
    surgery = TaskGradients([w], seed=0)
    for task, g in enumerate(([1.0, 0.0], [-1.0, 1.0])):
        (w * torch.tensor(g)).sum().backward()
        surgery.collect(task)
    assert surgery.combine() == 2
    torch.testing.assert_close(w.grad, torch.tensor([0.5, 1.5]))


def test_task_gradients_with_every_shared_parameter_frozen_leave_none():
    w = torch.nn.Parameter(torch.zeros(2), requires_grad=False)
    surgery = TaskGradients([w], seed=0)
    surgery.collect(0)
    surgery.collect(1)
    assert surgery.combine() == 2 and w.grad is None


# -- EXP3 ---------------------------------------------------------------------
def test_exp3_update_by_hand():
    p = exp3_probabilities(np.zeros(2), explore=0.2)
    np.testing.assert_allclose(p, [0.5, 0.5])
    # task 0 drawn with reward 1: log w0 += 0.5 * 1 / 0.5 = 1
    w = exp3_update(np.zeros(2), [0], [1.0], p, lr=0.5)
    np.testing.assert_allclose(w, [0.0, -1.0])  # shifted so the largest is 0
    e = math.e / (1 + math.e)
    np.testing.assert_allclose(exp3_probabilities(w, 0.2), [0.8 * e + 0.1, 0.8 * (1 - e) + 0.1])


def test_exp3_weights_rewards_by_the_inverse_probability():
    p = np.array([0.8, 0.2])
    w = exp3_update(np.zeros(2), [0, 1], [1.0, 1.0], p, lr=0.1)  # one draw each, equal rewards
    np.testing.assert_allclose(w, [0.125 - 0.5, 0.0])  # the rare task gets 4x the credit


def test_bandit_sampler_moves_towards_rewarded_tasks_and_resumes():
    s = make_sampler(SamplingConfig(schema="bandit", bandit_lr=0.5, bandit_explore=0.1), [4.0, 2.0, 2.0], 3, seed=1)
    assert isinstance(s, BanditSampler) and s.adaptive
    np.testing.assert_allclose(s.probabilities(0), [1 / 3] * 3)  # uniform: weights unused
    s.update([2, 2, 0], [1.0, 1.0, 0.0])
    p = s.probabilities(0)
    assert p[2] > p[1] == p[0] and p.min() >= 0.1 / 3
    clone = make_sampler(SamplingConfig(schema="bandit"), [1.0] * 3, 3, seed=9)
    clone.load_state_dict(s.state_dict())
    np.testing.assert_allclose(clone.probabilities(0), p)
    assert [clone.sample(0) for _ in range(20)] == [s.sample(0) for _ in range(20)]


# -- uncertainty weighting ----------------------------------------------------
@pytest.mark.parametrize(
    "loss,log_var,value,d_loss,d_log_var",
    [
        (2.0, 0.0, 2.0, 1.0, -1.5),  # exp(0) 2 + 0; d/ds = 1/2 - exp(-s) L
        (2.0, math.log(4), 0.5 + 0.5 * math.log(4), 0.25, 0.0),  # s = log 2L: the optimum
        (0.5, math.log(0.5), 1.0 + 0.5 * math.log(0.5), 2.0, 0.5 - 1.0),
    ],
)
def test_uncertainty_loss_and_its_gradient(loss, log_var, value, d_loss, d_log_var):
    L = torch.tensor(loss, dtype=torch.float64, requires_grad=True)
    s = torch.tensor(log_var, dtype=torch.float64, requires_grad=True)
    out = uncertainty_loss(L, s)
    out.backward()
    assert out.item() == pytest.approx(value)
    assert L.grad.item() == pytest.approx(d_loss) and s.grad.item() == pytest.approx(d_log_var, abs=1e-12)


def test_one_task_per_step_moves_only_its_log_variance():
    weights = UncertaintyWeights(3)
    weights(1, torch.tensor(2.0)).backward()
    assert weights.log_vars.grad.tolist() == [0.0, -1.5, 0.0]
    assert weights.weights() == [1.0, 1.0, 1.0]


# -- layers: lr decay and unfreezing ------------------------------------------
def tiny_model(layers: int = 2) -> MultitaskModel:
    encoder = BertModel(
        BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=16)
    )
    return MultitaskModel(encoder, {"sst2": (2, "sequence"), "pos": (3, "tagging")}, "first", 0.1)


def test_parameter_depths():
    assert parameter_depth("encoder.embeddings.word_embeddings.weight", 2) == 0
    assert parameter_depth("encoder.encoder.layer.0.attention.self.query.weight", 2) == 1
    assert parameter_depth("encoder.encoder.layer.1.output.dense.bias", 2) == 2
    assert parameter_depth("encoder.pooler.dense.weight", 2) == 3
    assert parameter_depth("heads.sst2.weight", 2) == 3
    assert parameter_depth("encoder.word_embedding.weight", 12) == 0  # XLNet
    assert parameter_depth("encoder.layer.11.ff.layer_1.weight", 12) == 12


def test_lr_of_each_layer_under_decay():
    model = tiny_model(layers=2)
    config = TrainConfig(tasks=("sst2", "pos"), primary="sst2", lr=1.0, optim=OptimConfig(layer_decay=0.5))
    groups = Strategy(config, model, config.tasks, seed=0).param_groups()
    lr_of = {id(p): g["lr"] for g in groups for p in g["params"]}
    expected = {"embeddings": 0.125, "layer.0.": 0.25, "layer.1.": 0.5, "pooler": 1.0, "heads.": 1.0}
    for name, p in model.named_parameters():
        (part,) = [k for k in expected if k in name]
        assert lr_of[id(p)] == expected[part], name
    assert lr_scale(0, 12, 0.9) == pytest.approx(0.9**13)
    # every parameter once; biases and LayerNorm weights undecayed
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    assert all(g["weight_decay"] == 0.0 for g in groups if g["params"][0].ndim < 2)


def test_no_decay_keeps_the_two_plain_groups():
    model = tiny_model()
    config = TrainConfig(tasks=("sst2",), primary="sst2")
    groups = Strategy(config, model, config.tasks, seed=0).param_groups()
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0] and "lr" not in groups[0]


@pytest.mark.parametrize(
    "unit,every,epoch,updates,lowest",
    [
        ("off", 1, 0, 0, 0),
        ("step", 3, 0, 0, 3),  # stage 0: the heads (and the pooler) only
        ("step", 3, 0, 2, 3),
        ("step", 3, 0, 3, 2),  # + the top layer
        ("step", 3, 1, 6, 1),  # + layer 0
        ("step", 3, 1, 9, 0),  # + the embeddings: everything
        ("step", 3, 2, 99, 0),
        ("epoch", 1, 0, 50, 3),
        ("epoch", 1, 1, 0, 2),
        ("epoch", 2, 3, 0, 2),  # every 2 epochs: epoch 3 is stage 1
    ],
)
def test_which_parameters_are_frozen_at_a_step(unit, every, epoch, updates, lowest):
    depth = lowest_trainable_depth(unfreeze_stage(unit, every, epoch, updates), layers=2)
    assert depth == lowest
    model = tiny_model(layers=2)
    freeze_below(model, depth, layers=2)
    for name, p in model.named_parameters():
        assert p.requires_grad == (parameter_depth(name, 2) >= lowest), name


def test_frozen_parameters_do_not_move():
    model = tiny_model()
    config = TrainConfig(tasks=("sst2",), primary="sst2", optim=OptimConfig(unfreeze="step", unfreeze_every=100))
    strategy = Strategy(config, model, config.tasks, seed=0)
    optimizer = torch.optim.AdamW(strategy.param_groups(), lr=0.1)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    strategy.start_update(epoch=0, updates=0)
    ids = torch.tensor([[1, 5, 7, 2]])
    model("sst2", ids, torch.ones_like(ids)).sum().backward()
    optimizer.step()
    for name, p in model.named_parameters():
        if parameter_depth(name, 2) < 3:  # frozen: no gradient, so no update and no weight decay
            assert p.grad is None and torch.equal(p, before[name]), name
    assert not torch.equal(model.heads["sst2"].weight, before["heads.sst2.weight"])


# -- configs ------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"layer_decay": 0.0}, "layer_decay 0.0: expected in"),
        ({"layer_decay": 1.5}, "layer_decay 1.5"),
        ({"gradients": "mgda"}, "gradients 'mgda': expected one of sum, pcgrad"),
        ({"unfreeze": "layer"}, "unfreeze 'layer'"),
        ({"unfreeze_every": 0}, "unfreeze_every 0"),
        ({"loss_weighting": "gradnorm"}, "loss_weighting 'gradnorm'"),
    ],
)
def test_bad_optim_configs_are_one_line(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        OptimConfig(**kwargs)


def test_bad_bandit_configs_and_all_with_accumulation():
    with pytest.raises(ConfigError, match="bandit_explore 0.0"):
        SamplingConfig(schema="bandit", bandit_explore=0.0)
    with pytest.raises(ConfigError, match="bandit_reward 'gain'"):
        SamplingConfig(schema="bandit", bandit_reward="gain")
    with pytest.raises(ConfigError, match="grad_accum 2 with step_mode 'all'"):
        TrainConfig(tasks=("a", "b"), primary="a", grad_accum=2, optim=OptimConfig(step_mode="all"))


def test_flat_dict_round_trip_carries_the_new_fields():
    config = TrainConfig(
        tasks=("sst2", "pos"),
        primary="sst2",
        sampling=SamplingConfig(schema="bandit", bandit_reward="primary", bandit_lr=0.3, bandit_every=5),
        encoder=EncoderConfig(max_seq_length=32),
        optim=OptimConfig(loss_weighting="uncertainty", gradients="pcgrad", step_mode="all", layer_decay=0.8),
    )
    flat = config.to_dict()
    assert flat["optim.layer_decay"] == 0.8 and flat["sampling.bandit_reward"] == "primary"
    assert TrainConfig.from_dict(flat) == config
    old = {k: v for k, v in flat.items() if not k.startswith("optim.") and "bandit" not in k}
    assert TrainConfig.from_dict(old).optim == OptimConfig()  # trial configs written before issue 19
