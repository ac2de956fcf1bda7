"""A study invocation: the base TrainConfig it builds and the record it leaves in the parent run."""

import pytest

from search.study.config import SearchConfig
from search.tracking.records import Invocation
from spaces import Range, get_study
from spaces.studies import DEFAULT_PRESETS
from trainables.config import ConfigError


def test_base_config_is_the_preset_scale_with_the_flags_on_top(tmp_path):
    preset = get_study("absa").preset("smoke")
    cfg = SearchConfig("absa", preset="smoke", data_dir=str(tmp_path))
    base = cfg.base_config()
    assert (base.epochs, base.max_train_examples, base.encoder.max_seq_length) == (
        preset.epochs,
        preset.max_train_examples,
        preset.max_seq_length,
    )
    assert base.tasks == (preset.primary,) == (cfg.resolved_study().primary,) and base.data_dir == str(
        tmp_path.resolve()
    )
    flagged = SearchConfig("absa", preset="smoke", epochs=7, model="tiny-bert", precision="bf16").base_config()
    assert (flagged.epochs, flagged.encoder.model, flagged.precision) == (7, "tiny-bert", "bf16")
    with pytest.raises(ConfigError, match="no preset"):
        SearchConfig("absa").base_config()


def test_a_preset_lr_range_is_searched_unless_the_flag_or_the_study_says_otherwise():
    smoke = get_study("absa").preset("smoke")
    assert SearchConfig("absa", preset="smoke").resolved_study().lr == smoke.lr_range == Range(5e-5, 2e-4, log=True)
    assert DEFAULT_PRESETS["smoke"].lr_range is None  # a study file's own lr range stands unless its preset says
    assert SearchConfig("absa", preset="full").resolved_study().lr == get_study("absa").lr  # full: the study's
    flagged = SearchConfig("absa", preset="smoke", lr_range=(1e-5, 3e-5)).resolved_study()
    assert flagged.lr == Range(1e-5, 3e-5, log=True)


def test_invocation_round_trips_through_mlflow_params_and_masks_credentials():
    cfg = SearchConfig(
        "absa",
        preset="smoke",
        seeds=3,
        auxiliary=("sst2", "pos"),
        metric="acc_3way",
        optuna_storage="postgresql://ann:s3cret@db.example/optuna",
        gpus_per_trial=0.25,
    )
    started = cfg.invocation("s3://ann:s3cret@bucket/absa-smoke-1", 12)
    params = started.to_params()
    assert all(isinstance(v, str) for v in params.values())
    assert "s3cret" not in "".join(params.values())
    assert params["seeds"] == "1,2,3" and params["candidates"] == "sst2,pos" and params["trials"] == "12"
    assert params["objective"] == "semeval/dev/acc_3way/mean" and params["mode"] == "max"
    assert Invocation.from_params(params) == started
    with pytest.raises(ConfigError, match="lack mode, model"):
        Invocation.from_params({k: v for k, v in params.items() if k not in ("mode", "model")})


def test_resume_continues_with_the_started_data_whatever_the_flags_say():
    started = SearchConfig("absa", preset="smoke", epochs=3, auxiliary=("sst2",)).invocation("/x/absa-1", 4)
    resumed = SearchConfig("absa", resume=True, epochs=9, model="other").continuing(started)
    assert (resumed.preset, resumed.epochs, resumed.model, resumed.auxiliary) == ("smoke", 3, started.model, ("sst2",))
    assert resumed.base_config() == SearchConfig("absa", preset="smoke", epochs=3, auxiliary=("sst2",)).base_config()


def test_first_rung_seeds_is_checked_recorded_and_kept_on_resume():
    cfg = SearchConfig("absa", preset="full", first_rung_seeds=1)  # K = 3 seeds
    schedule = cfg.seed_schedule(grace_period=1, reduction_factor=2, max_t=4)
    assert (schedule.seeds, schedule.first, schedule.rungs, schedule.growth) == (3, 1, (1, 2), 2)
    assert SearchConfig("absa", preset="full").seed_schedule(1, 2, 4) is None  # off: every seed throughout
    started = cfg.invocation("/x/absa-1", 8)
    assert started.to_params()["first_rung_seeds"] == "1"
    assert Invocation.from_params(started.to_params()) == started
    assert SearchConfig("absa", preset="full").invocation("/x", 8).to_params()["first_rung_seeds"] == "0"
    old = {k: v for k, v in started.to_params().items() if k != "first_rung_seeds"}  # a study started before
    assert Invocation.from_params(old).first_rung_seeds == 0
    resumed = SearchConfig("absa", resume=True, first_rung_seeds=2).continuing(started)
    assert resumed.first_rung_seeds == 1 and len(resumed.seed_list()) == 3
    five = SearchConfig("absa", preset="full", seeds=5, first_rung_seeds=4).invocation("/x", 8)
    assert SearchConfig("absa", resume=True).continuing(five).first_rung_seeds == 4  # K = 5 from the started study


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(preset="full", first_rung_seeds=4), "--first-rung-seeds 4: expected 1 to 3"),
        (dict(seeds=2, first_rung_seeds=3), "--first-rung-seeds 3: expected 1 to 2"),
        (dict(first_rung_seeds=0), "--first-rung-seeds 0: expected >= 1"),
        (dict(preset="full", first_rung_seeds=1, metric="semeval/dev/acc_4way/std"), "is no seed mean to pair"),
    ],
)
def test_bad_first_rung_seeds_are_one_line(kw, message):
    with pytest.raises(ConfigError, match=message) as info:
        SearchConfig("absa", **kw)
    assert "\n" not in str(info.value)


def test_a_study_files_preset_can_set_first_rung_seeds(tmp_path):
    from conftest import example_study, readme_study_file

    path = str(example_study(tmp_path, readme_study_file() + "\n[presets.full]\nfirst_rung_seeds = 2\n"))
    assert SearchConfig(path, preset="full").seed_schedule(1, 2, 4).first == 2
    assert SearchConfig(path, preset="full", first_rung_seeds=1).seed_schedule(1, 2, 4).first == 1  # the flag wins
    assert SearchConfig(path, preset="full").invocation("/x", 4).first_rung_seeds == 2
    with pytest.raises(ConfigError, match="preset full first_rung_seeds 2: expected 1 to 1"):
        SearchConfig(path, preset="full", seeds=1)
    with pytest.raises(ConfigError, match="first_rung_seeds 4: expected 1 to 3"):
        get_study(
            str(example_study(tmp_path / "bad", readme_study_file() + "\n[presets.full]\nfirst_rung_seeds = 4\n"))
        )
