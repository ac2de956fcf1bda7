"""The searcher's bookkeeping, without Ray trials: pruning and canonical deduplication."""

import optuna
import pytest
from optuna.trial import TrialState

from search.study.searcher import CanonicalOptunaSearch
from spaces import apply_choices, baseline_choices, canonical, get_study, run_name
from trainables.config import SamplingConfig, TrainConfig

STUDY = get_study("absa")
BASE = TrainConfig(tasks=("semeval",), primary="semeval", epochs=3)
OBJ = STUDY.objective


def searcher(points=None, sampler=None, storage=None, study=STUDY):
    """``points``: the configs tried first (default: the baseline; ``()``: none, as for a searcher
    about to be restored); ``storage``: an Optuna storage to share (default: in memory)."""
    return CanonicalOptunaSearch(
        study,
        BASE,
        3,
        metric=OBJ,
        mode="max",
        points_to_evaluate=[baseline_choices(study)] if points is None else list(points) or None,
        sampler=sampler or optuna.samplers.RandomSampler(seed=0),
        study_name="t",
        storage=storage,
    )


def states(s):
    return [t.state for t in s._ot_study.get_trials(deepcopy=False)]


def test_early_stopped_trial_is_pruned_not_complete():
    s = searcher()
    for tid in ("a", "b"):
        s.suggest(tid)
    for epoch in (1, 2, 3):
        s.on_trial_result("a", {OBJ: 0.5 + epoch / 10, "training_iteration": epoch, "epoch": epoch})
    s.on_trial_result("b", {OBJ: 0.1, "training_iteration": 1, "epoch": 1})
    s.on_trial_complete("a", {OBJ: 0.8, "epoch": 3, "training_iteration": 3})
    s.on_trial_complete("b", {OBJ: 0.1, "epoch": 1, "training_iteration": 1})  # ASHA stopped it
    trials = s._ot_study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.PRUNED]
    assert trials[0].value == pytest.approx(0.8) and trials[1].intermediate_values == {1: 0.1}


def test_a_trial_stopped_on_its_first_result_shows_it_and_steps_are_whole_epochs_as_in_mlflow():
    """Tune withholds from the searcher the result its scheduler stops a trial on: the complete call reports it.
    A screen point (epoch 0.4, Tune's first report) is step 0, epoch 1 step 1, as MLflow numbers them."""
    s = searcher()
    for tid in ("screened", "stopped", "went on"):
        s.suggest(tid)
    s.on_trial_complete("screened", {OBJ: 0.61, "epoch": 0.4, "training_iteration": 1})
    s.on_trial_result("stopped", {OBJ: 0.62, "epoch": 0.4, "training_iteration": 1})
    s.on_trial_complete("stopped", {OBJ: 0.7, "epoch": 1, "training_iteration": 2})
    for i, epoch in enumerate((0.4, 1, 2, 3), 1):
        s.on_trial_result("went on", {OBJ: 0.6 + epoch / 10, "epoch": epoch, "training_iteration": i})
    s.on_trial_complete("went on", {OBJ: 0.9, "epoch": 3, "training_iteration": 4})
    trials = s._ot_study.get_trials()
    assert [t.intermediate_values for t in trials] == [
        {0: 0.61},
        {0: 0.62, 1: 0.7},
        {0: pytest.approx(0.64), 1: pytest.approx(0.7), 2: pytest.approx(0.8), 3: pytest.approx(0.9)},
    ]
    assert [t.state for t in trials] == [TrialState.PRUNED, TrialState.PRUNED, TrialState.COMPLETE]


def test_failed_trial_is_fail():
    s = searcher()
    s.suggest("a")
    s.on_trial_complete("a", None, error=True)
    assert states(s) == [TrialState.FAIL]


def test_repeated_canonical_config_is_answered_not_trained():
    # the baseline enqueued twice, in two spellings: the second collapses onto the first
    single_square = {**baseline_choices(STUDY), "schema": "square"}
    s = searcher(points=[baseline_choices(STUDY), single_square])
    first = s.suggest("a")
    second = s.suggest("b")  # skips the duplicate, suggests something new
    assert canonical(apply_choices(BASE, first["choices"], STUDY)).tasks == ("semeval",)
    assert second["key"] != first["key"]
    assert s.duplicates == 1
    # the duplicate waits for the original's result, then gets exactly that
    s.on_trial_result("a", {OBJ: 0.7, "training_iteration": 1, "epoch": 1})
    s.on_trial_complete("a", {OBJ: 0.7, "epoch": 3, "training_iteration": 3})
    done = [t for t in s._ot_study.get_trials() if t.state == TrialState.COMPLETE]
    assert len(done) == 2 and all(t.value == pytest.approx(0.7) for t in done)
    assert any(t.user_attrs.get("duplicate_of") == first["key"] for t in done)


def test_suggestion_carries_canonical_train_config():
    s = searcher()
    out = s.suggest("a")
    cfg = TrainConfig.from_dict(out["train"])
    assert cfg.tasks == ("semeval",) and cfg.epochs == 3 and out["label"] == "t00 baseline" and out["number"] == 0
    ot_trial = s._ot_study.trials[0]
    assert ot_trial.user_attrs["run_name"] == "t00 baseline" and ot_trial.user_attrs["canonical_key"] == out["key"]


def test_trials_are_named_by_their_optuna_number():
    single_square = {**baseline_choices(STUDY), "schema": "square"}  # a repeat of the baseline: skipped
    s = searcher(points=[baseline_choices(STUDY), single_square])
    s.suggest("a")
    second = s.suggest("b")
    cfg = TrainConfig.from_dict(second["train"])
    assert second["number"] == 2  # Optuna's number 1 went to the repeat, answered without training
    assert second["label"] == run_name(2, cfg, baseline=False) and second["label"].startswith("t02 ")


def test_run_names():
    three = BASE.with_(tasks=("semeval", "sst2", "pos"))
    assert run_name(3, three.with_(sampling=SamplingConfig("square")), False) == "t03 sst2+pos square"
    two = BASE.with_(tasks=("semeval", "sst2"))
    assert (
        run_name(5, two.with_(sampling=SamplingConfig("anneal", anneal_c=0.7391)), False) == "t05 sst2 anneal(c=0.74)"
    )
    assert run_name(7, two.with_(sampling=SamplingConfig("power", exponent=1.31)), False) == "t07 sst2 power(a=1.3)"
    assert run_name(12, BASE.with_(lr=5e-5), False) == "t12 single"
    assert run_name(0, BASE, True) == "t00 baseline"


@pytest.mark.parametrize("outcome", ["complete", "pruned", "failed", "diverged"])
def test_repeat_of_a_finished_trial_gets_its_outcome_at_once(outcome):
    single_square = {**baseline_choices(STUDY), "schema": "square"}
    s = searcher(points=[baseline_choices(STUDY), single_square])
    s.suggest("a")
    s.on_trial_result("a", {OBJ: 0.6, "training_iteration": 1, "epoch": 1})
    final = {
        "complete": ({OBJ: 0.7, "epoch": 3, "training_iteration": 3}, False),
        "pruned": ({OBJ: 0.6, "epoch": 1, "training_iteration": 1}, False),
        "failed": (None, True),
        "diverged": ({OBJ: float("nan"), "epoch": 2, "training_iteration": 2, "diverged": 1.0}, False),
    }[outcome]
    s.on_trial_complete("a", *final)
    s.suggest("b")  # the repeat is answered from "a" before "b" gets a new config
    expected = {"complete": TrialState.COMPLETE, "pruned": TrialState.PRUNED}.get(outcome, TrialState.FAIL)
    trials = s._ot_study.get_trials()
    assert [t.state for t in trials[:2]] == [expected, expected] and s.duplicates == 1
    assert trials[1].user_attrs["duplicate_of"] == s.key_of["a"]
    last = {3: pytest.approx(0.7)} if outcome == "complete" else {}  # the final result is its last step too
    assert trials[1].intermediate_values == {1: pytest.approx(0.6), **last}
    if outcome == "complete":
        assert trials[1].value == pytest.approx(0.7)


def test_restore_fails_optuna_trials_asked_after_the_save(tmp_path):
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path}/optuna.db")
    s = searcher(storage=storage)
    s.suggest("a")
    s.save(str(tmp_path / "searcher.pkl"))
    s.suggest("b")  # asked, then the driver dies before the next save
    restored = searcher(points=(), sampler=optuna.samplers.RandomSampler(), storage=storage)
    restored.restore(str(tmp_path / "searcher.pkl"))
    states = [t.state for t in optuna.load_study(study_name="t", storage=storage).trials]
    assert states == [TrialState.RUNNING, TrialState.FAIL]  # "a" goes on; "b" is gone for good


def test_rerun_of_a_trial_optuna_already_finished_is_ignored(tmp_path):
    # the driver died after telling Optuna "a" completed but before Tune saved that: Tune reruns "a"
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path}/optuna.db")
    s = searcher(storage=storage)
    s.suggest("a")
    s.save(str(tmp_path / "searcher.pkl"))
    s.on_trial_complete("a", {OBJ: 0.7, "epoch": 3, "training_iteration": 3})
    restored = searcher(points=(), storage=storage)
    restored.restore(str(tmp_path / "searcher.pkl"))
    restored.on_trial_result("a", {OBJ: 0.5, "training_iteration": 1, "epoch": 1})  # no UpdateFinishedTrialError
    restored.on_trial_complete("a", {OBJ: 0.6, "epoch": 3, "training_iteration": 3})
    (trial,) = optuna.load_study(study_name="t", storage=storage).trials
    assert trial.state == TrialState.COMPLETE and trial.value == pytest.approx(0.7)


def test_a_space_with_one_config_is_exhausted_not_interrupted(tmp_path):
    from spaces.studies import Study

    tiny = Study(
        name="tiny", primary="semeval", candidates=(), metric="acc_4way", schemas=("prop",), lr=None, warmup=None
    )
    storage = f"sqlite:///{tmp_path}/optuna.db"
    s = searcher(storage=optuna.storages.RDBStorage(storage), study=tiny)
    assert s.suggest("a")["baseline"]
    assert s.suggest("b") == "FINISHED" and s.exhausted
    from search.study.runner import space_exhausted

    assert space_exhausted(storage, "t") and not space_exhausted(storage, "missing")


def test_the_searchers_own_state_survives_a_restore(tmp_path):
    # OptunaSearch.save pickles __dict__: a repeat parked before the save is still answered after the restore
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path}/optuna.db")
    single_square = {**baseline_choices(STUDY), "schema": "square"}
    s = searcher(points=[baseline_choices(STUDY), single_square], storage=storage)
    s.suggest("a")
    s.suggest("b")  # the repeat of "a" is parked, waiting for a's end
    s.on_trial_result("a", {OBJ: 0.6, "training_iteration": 1, "epoch": 1})
    s.save(str(tmp_path / "searcher.pkl"))
    restored = searcher(points=(), storage=storage)
    restored.restore(str(tmp_path / "searcher.pkl"))
    assert (
        restored.first_trial,
        restored.key_of,
        dict(restored.waiting),
        dict(restored.history),
        restored.duplicates,
    ) == (s.first_trial, s.key_of, dict(s.waiting), dict(s.history), 1)
    restored.on_trial_complete("a", {OBJ: 0.7, "epoch": 3, "training_iteration": 3})
    trials = optuna.load_study(study_name="t", storage=storage).trials
    answered = [t for t in trials if "duplicate_of" in t.user_attrs]
    assert len(answered) == 1 and answered[0].state == TrialState.COMPLETE and answered[0].value == pytest.approx(0.7)
    assert answered[0].intermediate_values == {1: pytest.approx(0.6), 3: pytest.approx(0.7)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_thesis_grid_point_is_trained_as_written(seed):
    """The grid's points name every choice the space asks on their branch ("multitask" included):
    one left out is sampled by Optuna, and a sampled single-task draw turned grid points into repeats
    of the baseline. All 43 configs are trained, each under its own canonical key."""
    from spaces.canonical import thesis_grid

    points = thesis_grid(STUDY, BASE)
    s = searcher(points=points, sampler=optuna.samplers.TPESampler(seed=seed))
    configs = [s.suggest(f"t{i}") for i in range(len(points))]
    wanted = [canonical(apply_choices(BASE, p, STUDY)) for p in points]
    assert len(points) == 43 and [TrainConfig.from_dict(c["train"]) for c in configs] == wanted
    assert configs[0]["baseline"] and s.duplicates == 0


@pytest.mark.parametrize("name", ["absa", "absa-plus"])
def test_the_first_trial_is_the_plain_baseline_whatever_the_study_searches(name):
    """absa-plus searches layer decay and unfreezing on single-task points too: the baseline fixes
    them off (sampled, they made t00 a tuned single-task trial and the study had no baseline)."""
    study = get_study(name)
    for seed in range(5):
        s = searcher(points=None, sampler=optuna.samplers.RandomSampler(seed=seed), study=study)
        first = s.suggest("t0")
        assert first["baseline"] and first["label"] == "t00 baseline"
        assert TrainConfig.from_dict(first["train"]).optim == TrainConfig.from_dict(BASE.to_dict()).optim
