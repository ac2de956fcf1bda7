"""Seeds as a fidelity: the schedule on hand cases, ASHA's own rung epochs, the paired prefix mean."""

import pytest
from ray.tune.schedulers.async_hyperband import _Bracket

from trainables.config import ConfigError
from trainables.fidelity import SeedSchedule, asha_rungs, prefix_mean


def test_one_seed_at_the_first_rung_then_all_three():
    # the measured setting: K = 3, first rung 1 seed, ASHA grace 1, reduction factor 3, 4 epochs
    s = SeedSchedule(seeds=3, first=1, rungs=asha_rungs(1, 3, 4), growth=3)
    assert s.rungs == (1, 3)
    assert [s.at(e) for e in (1, 2, 3, 4)] == [1, 3, 3, 3]
    assert [s.seed_epochs(e) for e in (0, 1, 2, 4)] == [0, 1, 6, 12]  # the 2 added seeds caught up epoch 1


def test_seeds_grow_by_the_factor_per_rung_and_all_past_the_last():
    s = SeedSchedule(seeds=5, first=1, rungs=(1, 2), growth=2)  # grace 1, factor 2, 4 epochs
    assert [s.at(e) for e in (1, 2, 3, 4)] == [1, 2, 5, 5]
    s = SeedSchedule(seeds=8, first=2, rungs=(1, 2, 4), growth=2)  # 8 epochs
    assert [s.at(e) for e in range(1, 9)] == [2, 4, 8, 8, 8, 8, 8, 8]  # capped at K
    s = SeedSchedule(seeds=9, first=1, rungs=(2, 6), growth=3)  # grace 2, 9 epochs
    assert [s.at(e) for e in range(1, 10)] == [1, 1, 3, 3, 3, 3, 9, 9, 9]


def test_no_rung_or_all_seeds_first_is_fixed_k():
    assert [SeedSchedule(seeds=3, first=1).at(e) for e in (1, 2)] == [3, 3]  # no decision below max_t
    assert {SeedSchedule(seeds=3, first=3, rungs=(1, 2)).at(e) for e in (1, 2, 3)} == {3}
    assert SeedSchedule.full(4).at(1) == 4


def test_the_baseline_and_a_study_without_the_option_train_every_seed():
    spec = {"first": 1, "rungs": [1], "growth": 3}
    assert SeedSchedule.of_trial({"fidelity": spec}, 3).at(1) == 1
    assert SeedSchedule.of_trial({"fidelity": spec, "baseline": True}, 3).at(1) == 3
    assert SeedSchedule.of_trial({}, 3) == SeedSchedule.full(3)


def test_where_only_the_finalists_train_every_seed_the_baseline_trains_the_first_seeds_throughout():
    finalists = SeedSchedule(seeds=2, first=1, rungs=(3,), growth=4, baseline_first=True)
    spec = finalists.to_dict()
    assert spec["baseline"] == "first"
    assert [SeedSchedule.of_trial({"fidelity": spec}, 2).at(e) for e in (0.4, 1, 3, 4)] == [1, 1, 1, 2]
    baseline = SeedSchedule.of_trial({"fidelity": spec, "baseline": True}, 2)
    assert [baseline.at(e) for e in (0.4, 1, 3, 4)] == [1, 1, 1, 1] and baseline.seed_epochs(4) == 4
    before = {k: v for k, v in spec.items() if k != "baseline"}  # a study started before the key: every seed
    assert SeedSchedule.of_trial({"fidelity": before, "baseline": True}, 2).at(4) == 2


@pytest.mark.parametrize(
    "kw",
    [
        dict(seeds=3, first=0),
        dict(seeds=3, first=4),
        dict(seeds=3, first=1, growth=1),
        dict(seeds=3, first=1, rungs=(2, 1)),
    ],
)
def test_bad_schedules_are_refused_in_one_line(kw):
    with pytest.raises(ConfigError, match="expected"):
        SeedSchedule(**kw)


@pytest.mark.parametrize("grace", [1, 2, 3])
@pytest.mark.parametrize("factor", [2, 3, 4, 1.5])
@pytest.mark.parametrize("max_t", [1, 2, 3, 4, 8, 9, 10, 27, 100])
def test_rungs_are_the_epochs_where_ray_asha_records(grace, factor, max_t):
    if grace > max_t:
        return
    bracket = _Bracket(grace, max_t, factor, 0)  # Ray's own milestones
    epochs = {next(e for e in range(1, max_t + 1) if e >= m) for m, _ in bracket._rungs if m < max_t}
    assert asha_rungs(grace, factor, max_t) == tuple(sorted(e for e in epochs if e < max_t))


def test_prefix_mean_is_over_the_named_seeds_only():
    result = {"a/dev/acc/mean": 0.6, "a/dev/acc/seed1": 0.5, "a/dev/acc/seed2": 0.7, "a/dev/acc/seed3": 0.6}
    assert prefix_mean(result, "a/dev/acc/mean", [1]) == 0.5
    assert prefix_mean(result, "a/dev/acc/mean", [1, 2]) == pytest.approx(0.6)
    assert prefix_mean(result, "a/dev/acc/mean", [1, 4]) is None  # seed 4 not trained
    assert prefix_mean({**result, "a/dev/acc/seed1": float("nan")}, "a/dev/acc/mean", [1]) is None
    assert prefix_mean(result, "a/dev/acc/std", [1]) is None  # no per-seed values of a std
