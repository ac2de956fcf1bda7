"""A study invocation's plan: the base TrainConfig it builds, the record it leaves in the parent run, what
--resume takes from that record; the flags validated before any of it."""

from dataclasses import replace

import pytest

from search.study.config import SearchConfig, continuing
from search.study.kind import TrainedTrials
from search.study.plan import Site, Started, plan, plan_offline, stores_of
from search.tracking.records import STUDY_FORMAT, Invocation
from spaces import Range, get_study
from spaces.studies import DEFAULT_PRESETS
from trainables.config import ConfigError
from trainables.fidelity import SeedSchedule


def planned(cfg: SearchConfig, path: str = "/x/absa-1"):
    """``cfg``'s plan of trained trials, its Tune experiment at ``path``."""
    root, _, name = path.rpartition("/")
    return plan_offline(replace(cfg, storage=root, name=name), TrainedTrials())


def test_base_config_is_the_preset_scale_with_the_flags_on_top(tmp_path):
    preset = get_study("absa").preset("smoke")
    p = planned(SearchConfig("absa", preset="smoke", data_dir=str(tmp_path)))
    base = p.base
    assert (base.epochs, base.max_train_examples, base.encoder.max_seq_length) == (
        preset.epochs,
        preset.max_train_examples,
        preset.max_seq_length,
    )
    assert base.tasks == (preset.primary,) == (p.study.primary,) and base.data_dir == str(tmp_path.resolve())
    flagged = planned(SearchConfig("absa", preset="smoke", epochs=7, model="tiny-bert", precision="bf16")).base
    assert (flagged.epochs, flagged.encoder.model, flagged.precision) == (7, "tiny-bert", "bf16")


def test_without_a_preset_the_kind_chooses_it_from_the_clusters_gpus_and_says_why():
    stores = stores_of(SearchConfig("absa"))
    gpu = plan(SearchConfig("absa"), TrainedTrials(), Site("1", 2, gpus=4.0), stores)
    cpu = plan(SearchConfig("absa"), TrainedTrials(), Site("1", 2, gpus=0.0), stores)
    assert (gpu.invocation.preset, cpu.invocation.preset) == ("full", "smoke") and gpu.name == "absa-full-1"
    assert gpu.preset_reason.startswith("4 GPU(s) in the cluster") and "no GPU" in cpu.preset_reason
    given = plan(SearchConfig("absa", preset="smoke"), TrainedTrials(), Site("1", 2, gpus=4.0), stores)
    assert given.invocation.preset == "smoke" and given.preset_reason == ""


def test_a_preset_lr_range_is_searched_unless_the_flag_or_the_study_says_otherwise():
    smoke = get_study("absa").preset("smoke")
    assert planned(SearchConfig("absa", preset="smoke")).study.lr == smoke.lr_range == Range(1e-4, 2e-4, log=True)
    assert DEFAULT_PRESETS["smoke"].lr_range is None  # a study file's own lr range stands unless its preset says
    assert planned(SearchConfig("absa", preset="full")).study.lr == get_study("absa").lr  # full: the study's
    flagged = planned(SearchConfig("absa", preset="smoke", lr_range=(1e-5, 3e-5))).study
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
    started = planned(replace(cfg, trials=12), "s3://ann:s3cret@bucket/absa-smoke-1").invocation
    params = started.to_params()
    assert all(isinstance(v, str) for v in params.values())
    assert "s3cret" not in "".join(params.values())
    assert params["seeds"] == "1,2,3" and params["candidates"] == "sst2,pos" and params["trials"] == "12"
    assert params["objective"] == "semeval/dev/acc_3way/mean" and params["mode"] == "max"
    assert Invocation.from_params(params) == started and params["study_format"] == str(STUDY_FORMAT)
    with pytest.raises(ConfigError, match="lack mode, model"):
        Invocation.from_params({k: v for k, v in params.items() if k not in ("mode", "model")})


def test_artifacts_go_beside_a_sqlite_store_or_where_the_flag_says(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    beside = stores_of(SearchConfig("absa", tracking_uri=f"sqlite:///{tmp_path}/db/m.db"))
    assert beside.artifact_root == (tmp_path / "db" / "mlruns").as_uri()
    relative = stores_of(SearchConfig("absa", tracking_uri="sqlite:///db/m.db", artifact_location="art"))
    assert relative.artifact_root == (tmp_path / "art").as_uri()  # absolute: a worker resolves it nowhere else
    given = stores_of(SearchConfig("absa", tracking_uri="http://127.0.0.1:5000", artifact_location="s3://b/absa"))
    assert given.artifact_root == "s3://b/absa"
    assert stores_of(SearchConfig("absa", tracking_uri="http://127.0.0.1:5000")).artifact_root is None  # the server's


def test_resume_continues_with_the_started_data_whatever_the_flags_say():
    first = planned(SearchConfig("absa", preset="smoke", epochs=3, auxiliary=("sst2",), trials=4, seeds=2))
    started = first.invocation
    flags = SearchConfig("absa", resume=True, epochs=9, model="other", trials=30, mode="min")
    resumed = continuing(flags, started)
    assert (resumed.preset, resumed.epochs, resumed.model, resumed.auxiliary) == ("smoke", 3, started.model, ("sst2",))
    assert (
        resumed.search == started.search == first.strategy.name != "default"
    )  # the strategy it resolved when it started
    again = plan(resumed, TrainedTrials(), Site("2", 2), stores_of(flags), Started("absa-1", started, "run-id"))
    assert again.base == first.base and again.invocation.preset == "smoke" and again.name == "absa-1"
    assert (again.trials, again.invocation.seeds, again.invocation.mode, again.invocation.objective) == (
        30,
        (1, 2),
        "max",
        first.invocation.objective,
    )  # --trials adds
    fewer = plan(
        continuing(SearchConfig("absa", resume=True, trials=2), started),
        TrainedTrials(),
        Site("2", 2),
        stores_of(flags),
        Started("absa-1", started, "run-id"),
    )
    assert fewer.trials == 4  # never fewer than it started with
    assert again.resuming and again.invocation == started and again.parent_run_id == "run-id"


def test_first_rung_seeds_is_checked_recorded_and_kept_on_resume():
    cfg = SearchConfig(
        "absa", preset="full", search="tpe", first_rung_seeds=1, grace_period=1, reduction_factor=2, epochs=4
    )
    schedule = planned(cfg).schedule  # K = 3 seeds
    assert (schedule.seeds, schedule.first, schedule.rungs, schedule.growth) == (3, 1, (1, 2), 2)
    assert planned(SearchConfig("absa", preset="full", search="tpe")).schedule is None  # off: every seed throughout
    started = planned(cfg).invocation
    assert started.to_params()["first_rung_seeds"] == "1"
    assert Invocation.from_params(started.to_params()) == started
    assert planned(SearchConfig("absa", preset="full", search="tpe")).invocation.to_params()["first_rung_seeds"] == "0"
    old = {k: v for k, v in started.to_params().items() if k != "first_rung_seeds"}  # a study started before
    assert Invocation.from_params(old).first_rung_seeds == 0
    resumed = continuing(SearchConfig("absa", resume=True, first_rung_seeds=2), started)
    assert resumed.first_rung_seeds == 1 and resumed.seeds == 3
    five = planned(SearchConfig("absa", preset="full", seeds=5, first_rung_seeds=4)).invocation
    assert continuing(SearchConfig("absa", resume=True), five).first_rung_seeds == 4  # K = 5 from the started study


def test_the_default_search_screens_the_cells_where_the_trials_hold_them_and_records_what_it_ran():
    full = planned(SearchConfig("absa", preset="full"))  # 64 trials, absa's grid has 43 cells
    assert (full.strategy.name, full.invocation.search, len(full.points)) == ("cells-halving", "cells-halving", 43)
    assert (full.rungs.reduction_factor, full.schedule.first, full.invocation.seeds) == (
        4,
        1,
        (1, 2),
    )  # the strategy's own
    assert (full.schedule.rungs, full.screen) == ((3,), 0.4)  # one seed until the last rung; the warm-up's end
    assert full.schedule.baseline_first and SeedSchedule.of(full.schedule.to_dict(), True, 2).at(4) == 1
    assert planned(SearchConfig("absa", preset="full", search="tpe")).invocation.seeds == (
        1,
        2,
        3,
    )  # no seeds of its own
    assert planned(SearchConfig("absa", preset="full", seeds=3)).invocation.seeds == (1, 2, 3)  # the flag first
    assert planned(SearchConfig("absa", preset="full", screen_fraction=0)).screen is None
    with pytest.raises(ConfigError, match="--screen-fraction 0.5: --search tpe decides at whole epochs"):
        planned(SearchConfig("absa", preset="full", search="tpe", screen_fraction=0.5))
    with pytest.raises(ConfigError, match="--screen-fraction 1.0: expected a fraction of the first epoch"):
        SearchConfig("absa", screen_fraction=1.0)
    assert full.trials == 43 and "every one of the 43 cells of the grid; 43 trials" in full.search_reason
    more = planned(SearchConfig("absa", preset="full", trials=50))
    assert (more.strategy.name, more.trials, len(more.points)) == ("cells-halving", 50, 43)  # 7 TPE trials after
    flagged = planned(SearchConfig("absa", preset="full", reduction_factor=2, first_rung_seeds=2))
    assert (flagged.rungs.reduction_factor, flagged.schedule.first) == (2, 2)  # flags come first
    smoke = planned(SearchConfig("absa", preset="smoke"))  # 4 trials cannot screen 43 cells
    assert (smoke.strategy.name, smoke.schedule, len(smoke.points)) == ("tpe-tasks", None, 2)
    assert "cannot hold" in smoke.search_reason
    more = planned(SearchConfig("absa", preset="smoke", trials=6))
    # the baseline, then each auxiliary task alone at square (the primary's share of an epoch: 0.8), as many as
    # leave TPE two trials
    assert [sorted(k for k, v in p.items() if k.startswith("aux/") and v) for p in more.points] == [
        [],
        ["aux/sst2"],
        ["aux/pos"],
        ["aux/sentihood"],
    ]
    assert [p["schema"] for p in more.points[1:]] == ["square"] * 3 and more.points[1]["multitask"]
    assert more.points[1]["lr"] == more.points[0]["lr"] == more.base.lr
    assert [p["aux/sst2"] for p in smoke.points] == [False, True]  # 4 trials: the baseline and SST-2 alone
    named = planned(SearchConfig("absa", preset="smoke", search="cells-halving"))  # its budget: every cell
    assert (named.strategy.name, named.search_reason, len(named.points), named.trials) == ("cells-halving", "", 43, 43)
    cut = planned(SearchConfig("absa", preset="smoke", search="cells-halving", trials=6))
    assert (len(cut.points), cut.trials) == (6, 6)  # as asked: the first cells


def test_where_the_slots_hold_every_cell_the_default_trains_each_on_two_seeds_under_asha():
    """The cell screen's wall time is a finalist's chain whatever the slots: past the cells' count, every cell on 2
    seeds takes no more slot-time (docs/search-strategies.md, "Many slots")."""
    wide = planned(SearchConfig("absa", preset="full", max_concurrent=43))
    assert (wide.strategy.name, wide.invocation.search, wide.trials, wide.invocation.seeds) == (
        "grid-k2",
        "grid-k2",
        43,
        (1, 2),
    )
    assert (wide.schedule, wide.screen, wide.rungs.grace_period, wide.rungs.reduction_factor) == (None, None, 1, 2)
    assert "43 slots hold the 43 cells of the grid at once" in wide.search_reason
    assert planned(SearchConfig("absa", preset="full", max_concurrent=42)).strategy.name == "cells-halving"
    assert planned(SearchConfig("absa", preset="full", max_concurrent=64, trials=64)).strategy.name == "cells-halving"
    assert planned(SearchConfig("absa", preset="full", max_concurrent=64, seeds=3)).invocation.seeds == (1, 2, 3)


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
    assert planned(SearchConfig(path, preset="full")).schedule.first == 2
    assert planned(SearchConfig(path, preset="full", first_rung_seeds=1)).schedule.first == 1  # the flag wins
    assert planned(SearchConfig(path, preset="full")).invocation.first_rung_seeds == 2
    with pytest.raises(ConfigError, match="preset full first_rung_seeds 2: expected 1 to 1"):
        SearchConfig(path, preset="full", seeds=1)
    three = str(example_study(tmp_path / "three", readme_study_file() + "\n[presets.full]\nfirst_rung_seeds = 3\n"))
    assert planned(SearchConfig(three, preset="full", search="tpe")).schedule.first == 3  # tpe's K = 3
    with pytest.raises(ConfigError, match="preset full first_rung_seeds 3: expected 1 to 2"):
        planned(SearchConfig(three, preset="full"))  # the default search's K = 2, known once it is resolved
    bad = readme_study_file() + "\n[presets.full]\nseeds = [1, 2, 3]\nfirst_rung_seeds = 4\n"
    with pytest.raises(ConfigError, match="first_rung_seeds 4: expected 1 to 3"):
        get_study(str(example_study(tmp_path / "bad", bad)))


@pytest.mark.parametrize(
    "asked, cluster, gpus, said",
    [
        (None, 2.0, 1.0, "2 GPU(s) in the cluster: each trial asks for one"),
        (0.0, 2.0, 0.0, "--gpus-per-trial 0 on a cluster with 2 GPU(s): trials train on CPUs only"),
        (0.5, 2.0, 0.5, ""),
        (None, 0.0, 0.0, ""),
    ],
)
def test_a_trial_asks_for_one_gpu_where_the_cluster_has_gpus_unless_the_flag_says(asked, cluster, gpus, said):
    cfg = SearchConfig("absa", preset="smoke", gpus_per_trial=asked)
    p = plan(cfg, TrainedTrials(), Site("1", 2, gpus=cluster), stores_of(cfg))
    assert p.resources.gpus_per_trial == p.invocation.gpus_per_trial == gpus
    assert p.gpu_reason.startswith(said) and bool(p.gpu_reason) == bool(said)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(strata=-1), "--strata -1: expected >= 1"),
        (dict(strata=0), "--strata 0: expected >= 1"),
        (dict(hedge=-2), "--hedge -2: expected >= 0 cells"),
    ],
)
def test_bad_strata_and_hedge_are_one_line(kw, message):
    with pytest.raises(ConfigError, match=message) as info:
        SearchConfig("absa", **kw)
    assert "\n" not in str(info.value)


def test_the_plans_rungs_carry_strata_and_hedge_the_flags_else_the_strategys(monkeypatch):
    from search.study import strategy

    flagged = planned(SearchConfig("absa", preset="full", strata=3, hedge=2))
    assert (flagged.strategy.name, flagged.rungs.strata, flagged.rungs.hedge) == ("cells-halving", 3, 2)
    default = planned(SearchConfig("absa", preset="full")).rungs
    own = strategy.strategy_of("cells-halving")
    assert (default.strata, default.hedge) == (own.strata, own.hedge) == (3, 6)  # the default: 3 strata, a hedge of 6
    monkeypatch.setitem(strategy.STRATEGIES, "cells-halving", replace(own, strata=2, hedge=4))
    assert planned(SearchConfig("absa", preset="full")).rungs.strata == 2
    assert planned(SearchConfig("absa", preset="full")).rungs.hedge == 4
    assert planned(SearchConfig("absa", preset="full", strata=1, hedge=0)).rungs.strata == 1  # the flag first
    tpe = planned(SearchConfig("absa", preset="full", search="tpe", strata=1, hedge=0)).rungs  # neutral: allowed
    assert (tpe.strata, tpe.hedge) == (1, 0)


@pytest.mark.parametrize("kw", [dict(hedge=3), dict(strata=2)])
def test_strata_or_a_hedge_without_cohort_halving_is_refused_in_one_line(kw):
    with pytest.raises(ConfigError, match="--strata and --hedge act on cohort halving: --search tpe") as info:
        planned(SearchConfig("absa", preset="full", search="tpe", **kw))
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="--search family has none"):
        planned(SearchConfig("absa", preset="full", search="family", **kw))


def test_a_hedge_where_the_default_resolved_to_tpe_says_why():
    with pytest.raises(ConfigError, match=r"has none \(--search tpe-tasks: 4 trials cannot hold the 43 cells") as info:
        planned(SearchConfig("absa", preset="smoke", hedge=2))
    assert "--search cells-halving has it" in str(info.value)


def test_train_rows_caps_every_task_is_recorded_and_kept_on_resume():
    started = planned(SearchConfig("absa", preset="smoke", train_rows=300, eval_rows=500))
    assert (started.base.max_train_examples, started.base.max_eval_examples) == (300, 500)
    invocation = Invocation.from_params(started.invocation.to_params())
    assert (invocation.train_rows, invocation.eval_rows) == (300, 500)
    again = continuing(SearchConfig("absa", resume=True), invocation)
    assert (again.train_rows, again.eval_rows) == (300, 500)
    assert planned(SearchConfig("absa", preset="smoke")).invocation.train_rows == 0  # the preset's
    with pytest.raises(ConfigError, match="--train-rows 0: expected >= 1"):
        SearchConfig("absa", train_rows=0)


def test_resume_of_a_study_saved_in_another_format_is_refused_in_one_line_before_tune_reads_it(tmp_path):
    """--resume reads the study's format from its parent run before anything unpickles what Tune saved: a run
    that records none (started before the format was recorded) is format 0, and refused as any other format."""
    from search.study.runner import recorded
    from search.tracking.runs import start_parent_run

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    params = planned(SearchConfig("absa", preset="smoke")).invocation.to_params()
    start_parent_run(uri, "absa", "absa-smoke-new", params)
    cfg = SearchConfig("absa", resume=True, tracking_uri=uri, storage=str(tmp_path), name="absa-smoke-new")
    assert recorded(cfg, stores_of(cfg)).invocation.study_format == STUDY_FORMAT
    start_parent_run(uri, "absa", "absa-smoke-old", {k: v for k, v in params.items() if k != "study_format"})
    cfg = replace(cfg, name="absa-smoke-old")
    with pytest.raises(ConfigError) as refused:
        recorded(cfg, stores_of(cfg))
    assert str(refused.value) == (
        f"--resume: study absa-smoke-old was saved in study format 0, this version reads format {STUDY_FORMAT} "
        "only: resume it with the version that started it, or start a new study without --resume (this one's "
        "MLflow runs stay readable by search.report and search.finalize)"
    )
