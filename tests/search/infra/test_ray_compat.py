"""The limiter saves the scheduler's state with the experiment, through Ray's own save and restore of a
searcher (``SearchGenerator.save_to_dir``/``restore_from_dir``), and the scheduler takes it back once."""

import pickle
from types import SimpleNamespace

from ray.tune.search import Searcher, SearchGenerator

from search.infra.ray_compat import PauseAwareLimiter, SchedulerSavingLimiter
from search.study.halving import CohortHalving, limiter_of
from search.study.scheduler import ContenderKeepingASHA

METRIC = "semeval/dev/acc_4way/mean"


class Trial:
    def __init__(self, trial_id):
        self.trial_id, self.status, self.last_result = trial_id, "RUNNING", {}
        self.config = {"baseline": False, "train": {"primary": "semeval", "tasks": ["semeval", "sst2"]}}


class Saved(Searcher):
    """A searcher Ray can save and restore (the study's is Optuna's)."""

    def save(self, checkpoint_path):
        with open(checkpoint_path, "wb") as f:
            pickle.dump({}, f)

    def restore(self, checkpoint_path):
        pass


def asha() -> ContenderKeepingASHA:
    return ContenderKeepingASHA(metric=METRIC, mode="max", time_attr="training_iteration", max_t=4, grace_period=1)


def test_each_scheduler_gets_a_limiter_that_saves_it():
    halving = CohortHalving(metric=METRIC, mode="max", time_attr="epoch", max_t=4, cohort=2)
    assert type(limiter_of(Searcher(), halving, 2)) is PauseAwareLimiter
    assert type(limiter_of(Searcher(), asha(), 2)) is SchedulerSavingLimiter


def test_a_resumed_scheduler_takes_back_the_rungs_and_leaders_ray_saved_with_the_searcher(tmp_path):
    scheduler, limiter = asha(), SchedulerSavingLimiter(Saved(), max_concurrent=2)
    controller = SimpleNamespace(search_alg=SearchGenerator(limiter), get_trials=lambda: [])
    trial = Trial("a")
    scheduler.on_trial_add(controller, trial)
    scheduler.on_trial_result(controller, trial, {"training_iteration": 1, METRIC: 0.8})
    controller.search_alg.save_to_dir(str(tmp_path), session_str="s")  # what TuneController.save_to_dir calls

    fresh, restored = asha(), SchedulerSavingLimiter(Saved(), max_concurrent=2)  # as tuner.pkl holds them
    generator = SearchGenerator(restored)
    generator.restore_from_dir(str(tmp_path))
    again = SimpleNamespace(search_alg=generator, get_trials=lambda: [])
    fresh.on_trial_add(again, trial)
    assert fresh.leaders == {(1, "multitask"): 0.8}
    assert fresh._brackets[0]._rungs == scheduler._brackets[0]._rungs  # ASHA's rung records
    assert restored.scheduler is fresh and restored.take_scheduler_state() is None  # taken once


def test_the_link_to_the_scheduler_is_not_pickled_with_the_limiter():
    """tuner.pkl pickles the searcher and the scheduler each as created; the link is made again at run time."""
    scheduler, limiter = asha(), SchedulerSavingLimiter(Searcher(), max_concurrent=2)
    scheduler.on_trial_add(SimpleNamespace(search_alg=SimpleNamespace(searcher=limiter)), Trial("a"))
    assert limiter.scheduler is scheduler
    assert pickle.loads(pickle.dumps(limiter)).scheduler is None


def test_a_trial_whose_last_checkpoint_is_gone_starts_again_and_one_whose_checkpoint_exists_is_kept(tmp_path):
    # Ray's own checkpoint manager and checkpoint: a saved experiment can name a checkpoint Tune deleted since
    from ray.train import Checkpoint, CheckpointConfig
    from ray.train._internal.checkpoint_manager import _CheckpointManager
    from ray.train._internal.session import _TrainingResult
    from ray.tune.trainable.metadata import _TrainingRunMetadata

    from search.infra.ray_compat import drop_missing_checkpoint

    def trial_at(folder):
        folder.mkdir()
        metadata = _TrainingRunMetadata()
        metadata.checkpoint_manager = _CheckpointManager(CheckpointConfig(num_to_keep=2))
        result = _TrainingResult(checkpoint=Checkpoint(str(folder)), metrics={"epoch": 1})
        metadata.checkpoint_manager.register_checkpoint(result)
        return SimpleNamespace(trial_id=folder.name, run_metadata=metadata)

    kept, gone = trial_at(tmp_path / "checkpoint_000001"), trial_at(tmp_path / "checkpoint_000002")
    (tmp_path / "checkpoint_000002").rmdir()
    assert drop_missing_checkpoint(kept) is False
    assert kept.run_metadata.checkpoint_manager.latest_checkpoint_result is not None
    assert drop_missing_checkpoint(gone) is True
    assert gone.run_metadata.checkpoint_manager.latest_checkpoint_result is None
    assert gone.run_metadata.checkpoint_manager.best_checkpoint_results == []
    assert drop_missing_checkpoint(gone) is False and drop_missing_checkpoint(Trial("a")) is False  # nothing to drop
