"""A Tune trial's config as a record: a dict only at the Tune boundary, read back whole."""

import pytest
from conftest import tiny_config

from trainables.config import ConfigError
from trainables.fidelity import FIDELITY, SeedSchedule
from trainables.trial import TrialConfig


def test_a_trial_config_round_trips_through_tunes_dict_and_leaves_out_what_is_unset():
    train = tiny_config("tiny", epochs=3)
    trial = TrialConfig(train=train, seeds=(1, 2, 3), key="k", label="t00 single", baseline=True, number=0)
    tune = trial.to_tune()
    assert tune == {
        "train": train.to_dict(),
        "seeds": [1, 2, 3],
        "key": "k",
        "label": "t00 single",
        "baseline": True,
        "number": 0,
    }
    assert TrialConfig.of_tune(tune) == trial
    # the param space holds only the seeds and the schedule: the suggestion Tune merges over it holds the rest
    schedule = SeedSchedule(3, 1, (1, 2), 2)
    space = TrialConfig(seeds=(1, 2, 3), fidelity=schedule.to_dict()).to_tune()
    assert space == {"seeds": [1, 2, 3], FIDELITY: schedule.to_dict()}
    merged = TrialConfig.of_tune({**space, **TrialConfig(train=train, key="m").to_tune()})
    assert merged.schedule() == schedule and TrialConfig.of_tune({**space, "baseline": True}).schedule().first == 3


def test_finalize_nests_whole_configs_under_trial():
    point = TrialConfig(train=tiny_config("tiny"), seeds=(4, 5), kind="final", final_for="run-1", metric="m/mean")
    read = TrialConfig.of_tune({"trial": point.to_tune()})
    assert read == point and read.schedule() == SeedSchedule.full(2)


def test_a_search_trial_reports_at_its_screen_and_every_epoch_a_final_run_only_at_its_last():
    train = tiny_config("tiny", epochs=3)
    assert TrialConfig(train=train, screen=0.4).points() == (0.4, 1.0, 2.0, 3.0)
    assert TrialConfig(train=train).points() == (1.0, 2.0, 3.0)
    assert TrialConfig(train=train, kind="final", final_for="run-1").points() == (3.0,)


def test_a_bad_trial_config_is_refused_in_one_line_naming_its_keys():

    with pytest.raises(ConfigError, match=r"Tune trial config \['seeds', 'train'\]: not a trial's"):
        TrialConfig.of_tune({"train": {"tasks": ["semeval"]}, "seeds": [1]})  # no primary
    with pytest.raises(ConfigError, match=r"Tune trial config \['number'\]: not a trial's"):
        TrialConfig.of_tune({"number": "three"})
    with pytest.raises(ConfigError, match="unknown config key 'nope'"):
        TrialConfig.of_tune({"train": {"nope": 1}})
    with pytest.raises(ConfigError, match="Tune trial config t01: no 'train'"):
        TrialConfig.of_tune({"label": "t01"}).training()
    assert TrialConfig(train=tiny_config("tiny")).training() == tiny_config("tiny")
