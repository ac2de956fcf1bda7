"""How much of the primary's training data a config has seen (trainables.exposure), on hand-worked cases.

Sizes throughout: primary 100 rows, ``a`` 300, ``b`` 200, batch 10: 10, 30 and 20 batches per pass, so an
epoch is their mean, 20 micro-batches."""

import pytest

from trainables.config import OptimConfig, SamplingConfig, TrainConfig
from trainables.exposure import batches_per_pass, epoch_steps, primary_passes, primary_share, screen_step

SIZES = {"semeval": 100, "sst2": 300, "pos": 200}
MULTI = ("semeval", "sst2", "pos")


def config(tasks=MULTI, schema="prop", **kw) -> TrainConfig:
    return TrainConfig(tasks=tasks, primary="semeval", sampling=SamplingConfig(schema), batch_size=10, **kw)


def test_a_pass_counts_the_last_short_batch():
    assert [batches_per_pass(rows, 10) for rows in (100, 101, 9, 0)] == [10, 11, 1, 1]


def test_single_task_passes_are_epochs():
    single = config(tasks=("semeval",), epochs=3)
    assert epoch_steps(single, SIZES) == 10 and primary_share(single, 0) == 1.0
    assert [primary_passes(single, SIZES, e) for e in (1, 2, 3)] == [1.0, 2.0, 3.0]


def test_round_robin_gives_the_primary_one_step_in_n():
    rr = config(schema="sequential", epochs=3)
    assert epoch_steps(rr, SIZES) == 20  # mean of 10, 30, 20 batches
    # 20 steps / 3 tasks = 6.67 primary batches an epoch, of 10 per pass
    assert primary_passes(rr, SIZES, 1) == pytest.approx(2 / 3)
    assert primary_passes(rr, SIZES, 3) == pytest.approx(2.0)
    two = config(tasks=("semeval", "sst2"), schema="sequential")  # mean of 10, 30: 20 steps, 10 of them the primary's
    assert primary_passes(two, SIZES, 1) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "schema, share",
    [
        ("random", 1 / 3),
        ("prop", 4 / 8),  # tier weights: primary 4, auxiliaries 2 each
        ("sqrt", 2 / (2 + 2 * 2**0.5)),
        ("square", 16 / 24),
    ],
)
def test_a_power_schema_gives_the_primary_its_weight_share(schema, share):
    c = config(schema=schema, epochs=2)
    assert primary_share(c, 0) == pytest.approx(share)
    assert primary_passes(c, SIZES, 2) == pytest.approx(2 * 20 * share / 10)


def test_anneal_moves_the_share_over_epochs():
    c = config(schema="anneal", epochs=2)  # a(e) = 1 - 0.9 e / 2: 1, then 0.55
    later = 4**0.55 / (4**0.55 + 2 * 2**0.55)
    assert (primary_share(c, 0), primary_share(c, 1)) == pytest.approx((0.5, later))
    assert primary_passes(c, SIZES, 1) == pytest.approx(20 * 0.5 / 10)
    assert primary_passes(c, SIZES, 2) == pytest.approx((20 * 0.5 + 20 * later) / 10)


def test_one_batch_of_every_task_per_step():
    c = config(schema="random", optim=OptimConfig(step_mode="all"))
    assert epoch_steps(c, SIZES) == 21  # 3 x round(20 / 3): whole steps of one batch per task
    assert primary_passes(c, SIZES, 1) == pytest.approx(7 / 10)


def test_a_screen_point_falls_on_a_whole_optimizer_step():
    assert screen_step(20, 1, 0.4) == 8
    assert screen_step(7, 3, 0.4) == 9  # round(2.8) = 3 optimizer steps of 3 micro-batches
    assert (screen_step(20, 1, 0.01), screen_step(20, 1, 0.99)) == (1, 19)  # at least one step, and one left
    with pytest.raises(ValueError, match="an epoch of one optimizer step has no point inside it"):
        screen_step(1, 1, 0.5)


def test_a_screen_point_counts_the_micro_batches_the_trainer_stops_at():
    c = config(epochs=2, grad_accum=3)  # 20 micro-batches: 7 optimizer steps, the last of 2
    # 0.4 of an epoch: 3 steps = 9 micro-batches, half of them the primary's (prop), of 10 per pass
    assert primary_passes(c, SIZES, 0.4) == pytest.approx(0.45)
    assert primary_passes(c, SIZES, 1.4) == pytest.approx(1.0 + 0.45)
    assert primary_passes(config(epochs=2), SIZES, 0.4) == pytest.approx(8 * 0.5 / 10)


def test_a_task_without_a_size_is_named():
    with pytest.raises(KeyError, match="no size for task 'pos'"):
        primary_passes(config(), {"semeval": 100, "sst2": 300}, 1)
