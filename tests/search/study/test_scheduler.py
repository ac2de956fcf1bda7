"""ASHA keeps the baseline to the last epoch; everything else is ASHA as usual."""

from types import SimpleNamespace

from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from search.study.scheduler import BaselineKeepingASHA

METRIC = "semeval/dev/acc_4way/mean"


def run_rung(scheduler_class):
    s = scheduler_class(
        metric=METRIC, mode="max", time_attr="training_iteration", max_t=4, grace_period=1, reduction_factor=2
    )
    good = SimpleNamespace(trial_id="good", config={"baseline": False})
    base = SimpleNamespace(trial_id="base", config={"baseline": True})
    weak = SimpleNamespace(trial_id="weak", config={"baseline": False})
    for t in (good, base, weak):
        s.on_trial_add(None, t)
    actions = {}
    # the good trial reaches the first rung first and sets a high bar
    for t, value in ((good, 0.9), (base, 0.5), (weak, 0.4)):
        actions[t.trial_id] = s.on_trial_result(None, t, {"training_iteration": 1, METRIC: value})
    return actions


def test_stock_asha_would_stop_the_baseline():
    assert run_rung(ASHAScheduler)["base"] == TrialScheduler.STOP


def test_baseline_continues_and_others_are_still_stopped():
    actions = run_rung(BaselineKeepingASHA)
    assert actions == {"good": TrialScheduler.CONTINUE, "base": TrialScheduler.CONTINUE, "weak": TrialScheduler.STOP}
