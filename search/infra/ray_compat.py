"""The one adapter between the project and Ray 2.60's internals: each part works around one Ray behaviour, and
goes when Ray changes it. Nothing else in the package reads Ray's private modules or attributes, or the searcher
Tune wraps (``tests/search/test_layout.py`` holds that). The schedulers subclass Ray's and use their base
classes' protected fields (``_metric``, ASHA's ``_brackets``) as Ray's own subclasses do; that is not counted here.

Ray Tune:

- **Ray saves no scheduler** (ray-project/ray#30838). ``TuneController.save_to_dir`` writes the trials and the
  searcher at every experiment checkpoint, and ``Tuner.restore`` brings the scheduler back as it was pickled when
  the study started, empty. A scheduler that decides from what it recorded (ASHA's rungs, the sides' leaders,
  cohort halving's decisions and the trials paused at a rung) would decide again from whatever the restored trials
  show. Its state travels in the limiter's saved state instead (:class:`SchedulerSavingLimiter`): written in the
  same call as the trials, given back before the first restored trial is added (``TuneController.resume``
  restores the searcher first: :func:`adopt_saved_state`). The same call writes the trials first and the
  searcher's state second: a hard kill between the two resumes trials newer than the scheduler's state, and
  cohort halving takes in what the trials show (``search.study.cohort_rungs.CohortRungs.reconcile``, from the
  last 10 values of each metric Ray keeps with a trial) so its rungs decide as they did.
- **A paused trial holds a slot in Ray's limiter** (``ConcurrencyLimiter`` counts every live trial): with every
  slot's trial paused at a cohort rung the rest of the cohort would never start (:class:`PauseAwareLimiter`,
  told through ``Searcher.on_pause``/``on_unpause``, the hooks HyperBandForBOHB calls).
- **No public way from a scheduler to the searcher**: :func:`searcher_of` reaches it as HyperBandForBOHB does
  (``tune_controller.search_alg.searcher``).
- **A stopped paused trial is not saved as stopped**: Ray 2.60 saves a trial's state only when marked, and
  ``stop_trial`` marks only a trial with an actor (:func:`mark_to_save`, the private
  ``TuneController._mark_trial_to_checkpoint``).

- **A saved experiment can name a checkpoint Tune has deleted since**: Tune deletes a trial's checkpoints beyond
  ``num_to_keep`` as it registers new ones, and syncs its saved state to the storage at intervals, in the
  background; a driver killed before a sync lands (measured: a SIGKILL during the sync Tune forces after
  ``num_to_keep`` checkpoints, on a loaded machine) resumes a trial at a checkpoint that is gone, and Tune fails
  each restore ("does not exist on storage anymore") until the trial errors. :func:`drop_missing_checkpoint`
  starts such a trial again from its first epoch instead, when Tune adds it (a resume, or a retry).

Restored trials come back PENDING and Tune starts every PENDING trial (``_requeue_restored_trials``): cohort
halving marks the ones its saved state holds paused (``search.study.halving.CohortHalving.requeued``).

Ray core:

- **No switch to keep a local Ray on loopback**: ``ray_constants.ENABLE_RAY_CLUSTER``, read once when Ray is
  imported (:func:`no_cluster`, for ``search.infra.local_ray``).
- **Ray caches its config when imported**: an auth mode set after that is seen only once the config is read
  again (:func:`reread_config`, what Ray's own ``_enable_token_auth`` does).
- **No public read of the autoscaler's node types**: :func:`autoscaler_node_groups` reads the GCS's cluster
  config as Ray Train's worker group does (``ray._private.state``).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from ray.tune.search import ConcurrencyLimiter, Searcher

logger = logging.getLogger(__name__)

SCHEDULER_STATE = "scheduler_state"  # the key of the scheduler's state in the limiter's saved state


class SchedulerSavingLimiter(ConcurrencyLimiter):
    """``ConcurrencyLimiter`` whose saved state holds the state of the scheduler linked to it
    (``scheduler``, set by the scheduler itself when Tune adds a trial: the link is not pickled)."""

    def __init__(self, searcher: Searcher, max_concurrent: int) -> None:
        super().__init__(searcher, max_concurrent=max_concurrent)
        self.scheduler: Any = None

    def get_state(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("searcher", "scheduler", SCHEDULER_STATE)}
        state = copy.deepcopy(state)
        if self.scheduler is not None:
            state[SCHEDULER_STATE] = self.scheduler.saved_state()
        return state

    def set_state(self, state: dict) -> None:
        self.__dict__.update(state)  # the scheduler's state stays under SCHEDULER_STATE until taken

    def take_scheduler_state(self) -> dict | None:
        """The scheduler state a resumed study saved, once (None in a new study or once taken)."""
        return self.__dict__.pop(SCHEDULER_STATE, None)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "scheduler": None}  # tuner.pkl holds the scheduler on its own


class PauseAwareLimiter(SchedulerSavingLimiter):
    """Counts only the live trials that are not paused: a cohort trial waiting at its rung holds no
    slot (Ray's own limiter would count it and, with every slot's trial paused, never let the rest of
    the cohort start)."""

    def __init__(self, searcher: Searcher, max_concurrent: int) -> None:
        super().__init__(searcher, max_concurrent=max_concurrent)
        self.paused: set[str] = set()

    def suggest(self, trial_id: str) -> dict | None:
        if len(self.live_trials - self.paused) >= self.max_concurrent:
            return None
        suggestion = self.searcher.suggest(trial_id)
        if suggestion not in (None, Searcher.FINISHED):
            self.live_trials.add(trial_id)
            self.num_unfinished_live_trials += 1
        return suggestion

    def on_pause(self, trial_id: str) -> None:
        self.paused.add(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.paused.discard(trial_id)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self.paused.discard(trial_id)
        super().on_trial_complete(trial_id, result=result, error=error)


def adopt_saved_state(scheduler: Any, tune_controller: Any) -> bool:
    """Link ``scheduler`` to the limiter that saves its state and, in a resumed study, take the saved state
    back (once: the first trial Tune adds). Whether it took a saved state now."""
    limiter = getattr(getattr(tune_controller, "search_alg", None), "searcher", None)  # searcher_of, if any
    if not isinstance(limiter, SchedulerSavingLimiter):
        return False  # a test's controller
    saved = limiter.take_scheduler_state()
    if saved is not None:
        scheduler.take_back(saved)
    limiter.scheduler = scheduler
    return saved is not None


def drop_missing_checkpoint(trial: Any) -> bool:
    """Forget ``trial``'s checkpoints when the latest one is gone from the storage (module docstring), so that Tune
    starts it again from its first epoch instead of failing to restore it. Whether it did."""
    manager = getattr(getattr(trial, "run_metadata", None), "checkpoint_manager", None)
    latest = getattr(manager, "latest_checkpoint_result", None)
    checkpoint = getattr(latest, "checkpoint", None)
    if checkpoint is None:
        return False
    import pyarrow.fs

    if checkpoint.filesystem.get_file_info(checkpoint.path).type != pyarrow.fs.FileType.NotFound:
        return False
    manager._latest_checkpoint_result = None
    manager._checkpoint_results = []
    trial.run_metadata.invalidate_cache()
    return True


def searcher_of(tune_controller) -> Searcher:
    """The searcher Tune wraps (``SearchGenerator.searcher``: the limiter), as HyperBandForBOHB reaches it."""
    return tune_controller.search_alg.searcher


def mark_to_save(tune_controller, trial) -> None:
    """Have Tune save ``trial``'s state at its next experiment checkpoint (a paused trial stopped by the scheduler
    would otherwise read PAUSED in the saved experiment: unfinished to ``--resume``)."""
    mark = getattr(tune_controller, "_mark_trial_to_checkpoint", None)
    if mark is not None:
        mark(trial)


def no_cluster() -> None:
    """A Ray started by this process binds 127.0.0.1 only (``services.get_node_ip_address``, checked in Ray 2.60)."""
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def reread_config() -> None:
    """Have this process see ``RAY_AUTH_MODE`` set after Ray was imported."""
    from ray._raylet import Config

    Config.initialize("")


def autoscaler_node_groups() -> dict[str, dict[str, float] | None]:
    """The node groups the GCS's cluster config lets the autoscaler start (``max_count`` not 0): name ->
    resources (None: detected at start). Empty without an autoscaler, or with a GCS too old to say."""
    types: dict[str, dict[str, float] | None] = {}
    try:
        from ray._private.state import state

        config = state.get_cluster_config()
        for group in getattr(config, "node_group_configs", []) or []:
            if group.max_count != 0:
                types[group.name] = dict(group.resources) or None
    except Exception as exc:  # an older GCS, or no autoscaler
        logger.debug("no cluster config in the GCS: %s", exc)
    return types
