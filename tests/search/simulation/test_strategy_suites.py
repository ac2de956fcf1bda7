"""Every search strategy of ``search.run --search``, run on the simulator: each stopped trial reaches Optuna
as PRUNED, never COMPLETE, and each trial that trained every epoch as COMPLETE."""

import pytest
from optuna.trial import TrialState

from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig
from search.study.strategy import STRATEGIES


@pytest.mark.parametrize("search", sorted(STRATEGIES))
def test_stopped_trials_are_pruned_in_optuna_never_complete(search):
    path = resolve_truth("late_bloomer")
    cfg = SearchConfig("absa", preset="full", simulate=path, search=search, seeds=1, trials=50, max_concurrent=4)
    study = simulate(cfg, load_truth(path))
    states = {t.user_attrs.get("canonical_key"): t.state for t in study.searcher._ot_study.get_trials()}
    stopped = [t for t in study.trials if t.epoch < 4]
    finished = [t for t in study.trials if t.epoch == 4]
    assert stopped and finished, search  # ASHA stopped some and let some through
    keys = {t.trial_id: study.searcher.key_of[t.trial_id] for t in study.trials}
    assert {states[keys[t.trial_id]] for t in stopped} == {TrialState.PRUNED}, search
    assert {states[keys[t.trial_id]] for t in finished} == {TrialState.COMPLETE}, search
