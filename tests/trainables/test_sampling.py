import numpy as np
import pytest

from trainables.config import SCHEMAS, ConfigError, SamplingConfig, TrainConfig, parse_weights
from trainables.sampling import SAMPLERS, AnnealSampler, make_sampler, power_distribution, steps_per_epoch

FIXED = {"random": 0.0, "sqrt": 0.5, "prop": 1.0, "square": 2.0}


def config(schema: str, **kw) -> SamplingConfig:
    if schema == "power":
        kw.setdefault("exponent", 1.5)
    return SamplingConfig(schema=schema, **kw)


@pytest.mark.parametrize("schema,a", FIXED.items())
def test_fixed_exponents_match_thesis_formula(schema, a):
    w = np.array([4.0, 2.0, 1.0])
    p = make_sampler(config(schema), w, epochs=4, seed=0).probabilities(0)
    np.testing.assert_allclose(p, w**a / (w**a).sum())


def test_every_schema_has_a_sampler():
    assert sorted(SAMPLERS) == sorted(SCHEMAS)


def test_hand_worked_distributions():
    w = [4.0, 2.0, 1.0]
    np.testing.assert_allclose(power_distribution(np.array(w), 1.0), [4 / 7, 2 / 7, 1 / 7])
    np.testing.assert_allclose(power_distribution(np.array(w), 2.0), [16 / 21, 4 / 21, 1 / 21])
    np.testing.assert_allclose(power_distribution(np.array(w), 0.0), [1 / 3] * 3)


def test_large_exponent_does_not_overflow():
    p = power_distribution(np.array([4.0, 2.0]), 2000.0)
    np.testing.assert_allclose(p, [1.0, 0.0])


def test_anneal_exponent_schedule():
    s = AnnealSampler([4.0, 2.0], epochs=4, seed=0, anneal_c=0.9)
    assert [s.exponent(e) for e in range(4)] == pytest.approx([1.0, 0.775, 0.55, 0.325])
    np.testing.assert_allclose(s.probabilities(0), [2 / 3, 1 / 3])
    np.testing.assert_allclose(s.probabilities(2), power_distribution(np.array([4.0, 2.0]), 0.55))


def test_anneal_with_c_zero_is_prop():
    a = make_sampler(config("anneal", anneal_c=0.0), [4.0, 2.0, 1.0], 4, 0)
    p = make_sampler(config("prop"), [4.0, 2.0, 1.0], 4, 0)
    for e in range(4):
        np.testing.assert_allclose(a.probabilities(e), p.probabilities(e))


@pytest.mark.parametrize("schema", sorted(SAMPLERS))
@pytest.mark.parametrize("epoch", [0, 1, 3])
def test_two_equal_weights_give_one_half(schema, epoch):
    p = make_sampler(config(schema), [2.0, 2.0], epochs=4, seed=0).probabilities(epoch)
    np.testing.assert_allclose(p, [0.5, 0.5])


@pytest.mark.parametrize("a", [0.0, 0.3, 1.0, 2.0, 2.9])
def test_equal_weights_uniform_for_every_exponent(a):
    np.testing.assert_allclose(power_distribution(np.full(3, 2.0), a), [1 / 3] * 3)


@pytest.mark.parametrize("schema", sorted(SAMPLERS))
def test_one_task_makes_all_schemas_equal(schema):
    s = make_sampler(config(schema), [4.0], epochs=3, seed=5)
    assert [s.sample(e) for e in range(3) for _ in range(10)] == [0] * 30
    np.testing.assert_allclose(s.probabilities(1), [1.0])


def test_sequential_is_round_robin():
    s = make_sampler(config("sequential"), [4.0, 2.0, 1.0], 2, 0)
    assert [s.sample(0) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize("schema", sorted(SAMPLERS))
def test_seeded_and_resumable(schema):
    a = make_sampler(config(schema), [4.0, 2.0, 1.0], 4, seed=7)
    b = make_sampler(config(schema), [4.0, 2.0, 1.0], 4, seed=7)
    first = [a.sample(1) for _ in range(50)]
    assert first == [b.sample(1) for _ in range(50)]
    state = a.state_dict()
    rest = [a.sample(2) for _ in range(50)]
    c = make_sampler(config(schema), [4.0, 2.0, 1.0], 4, seed=999)
    c.load_state_dict(state)
    assert [c.sample(2) for _ in range(50)] == rest


def test_empirical_frequencies_follow_distribution():
    s = make_sampler(config("square"), [4.0, 2.0, 1.0], 1, seed=0)
    counts = np.bincount([s.sample(0) for _ in range(20000)], minlength=3) / 20000
    np.testing.assert_allclose(counts, [16 / 21, 4 / 21, 1 / 21], atol=0.01)


def test_steps_per_epoch_is_mean_of_batches():
    assert steps_per_epoch([10, 20, 30]) == 20
    assert steps_per_epoch([7]) == 7


def test_tier_weights_and_parsing():
    c = TrainConfig(
        tasks=("semeval", "sst2", "pos"),
        primary="semeval",
        sampling=SamplingConfig(weights=parse_weights("pos=tertiary")),
    )
    assert c.task_weights() == (4.0, 2.0, 1.0)
    assert parse_weights("sst2=1.5, pos=secondary") == (("sst2", 1.5), ("pos", 2.0))


@pytest.mark.parametrize(
    "bad",
    [
        lambda: SamplingConfig(schema="cubic"),
        lambda: SamplingConfig(schema="power"),
        lambda: SamplingConfig(schema="prop", exponent=2.0),
        lambda: SamplingConfig(schema="anneal", anneal_c=1.5),
        lambda: SamplingConfig(weights=(("pos", -1.0),)),
        lambda: parse_weights("pos"),
        lambda: parse_weights("pos=big"),
        lambda: TrainConfig(tasks=("sst2",), primary="semeval"),
        lambda: TrainConfig(tasks=(), primary="semeval"),
        lambda: TrainConfig(tasks=("sst2", "sst2"), primary="sst2"),
        lambda: TrainConfig(tasks=("sst2",), primary="sst2", warmup=1.0),
        lambda: TrainConfig(tasks=("sst2",), primary="sst2", lr=0.0),
    ],
)
def test_bad_config_is_rejected(bad):
    with pytest.raises(ConfigError):
        bad()
