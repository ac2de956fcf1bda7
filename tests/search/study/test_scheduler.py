"""ASHA keeps the baseline and each side's leader to the last epoch; everything else is ASHA as usual."""

import pickle
from types import SimpleNamespace

from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from search.study.scheduler import MULTITASK, SINGLE_TASK, BaselineKeepingASHA, ContenderKeepingASHA, side_of

METRIC = "semeval/dev/acc_4way/mean"
CONTINUE, STOP = TrialScheduler.CONTINUE, TrialScheduler.STOP


def trial(name: str, tasks: tuple[str, ...] | None = None, baseline: bool = False) -> SimpleNamespace:
    config: dict = {"baseline": baseline}
    if tasks is not None:
        config["train"] = {"tasks": list(tasks)}
    return SimpleNamespace(trial_id=name, config=config)


def new(scheduler_class, max_t: int = 4):
    return scheduler_class(
        metric=METRIC, mode="max", time_attr="training_iteration", max_t=max_t, grace_period=1, reduction_factor=2
    )


def rung(scheduler, results, epoch: int = 1) -> dict[str, str]:
    """Each (trial, value) reaches the rung at ``epoch`` in order; the action for each."""
    for t, _ in results:
        if t.trial_id not in scheduler._trial_info:
            scheduler.on_trial_add(None, t)
    return {
        t.trial_id: scheduler.on_trial_result(None, t, {"training_iteration": epoch, METRIC: v}) for t, v in results
    }


def run_rung(scheduler_class):
    # the good trial reaches the first rung first and sets a high bar; no trial's tasks are known
    good, base, weak = trial("good"), trial("base", baseline=True), trial("weak")
    return rung(new(scheduler_class), ((good, 0.9), (base, 0.5), (weak, 0.4)))


def test_stock_asha_would_stop_the_baseline():
    assert run_rung(ASHAScheduler)["base"] == STOP


def test_baseline_continues_and_others_are_still_stopped():
    assert run_rung(ContenderKeepingASHA) == {"good": CONTINUE, "base": CONTINUE, "weak": STOP}


def test_sides_are_read_from_the_trial_config():
    assert side_of({"baseline": True}) == SINGLE_TASK
    assert side_of({"train": {"tasks": ["semeval"]}, "baseline": False}) == SINGLE_TASK
    assert side_of({"train": {"tasks": ["semeval", "sst2"]}, "baseline": False}) == MULTITASK
    assert side_of({"baseline": False}) is None


def test_the_first_multitask_trial_at_a_rung_survives_a_single_task_bar():
    """The default smoke run ended with every multitask trial stopped at epoch 1 and no verdict:
    single-task trials set the bar. The multitask side's leader is promoted; a worse one is not."""
    base = trial("base", ("semeval",), baseline=True)
    tuned = trial("tuned", ("semeval",))
    mt1, mt2, mt3 = (trial(f"mt{i}", ("semeval", "sst2")) for i in (1, 2, 3))
    actions = rung(new(ContenderKeepingASHA), ((base, 0.70), (tuned, 0.72), (mt1, 0.58), (mt2, 0.57), (mt3, 0.60)))
    assert actions == {"base": CONTINUE, "tuned": CONTINUE, "mt1": CONTINUE, "mt2": STOP, "mt3": CONTINUE}
    stock = rung(new(ASHAScheduler), ((base, 0.70), (tuned, 0.72), (mt1, 0.58), (mt2, 0.57), (mt3, 0.60)))
    assert stock["mt1"] == stock["mt3"] == STOP


def test_a_single_task_leader_is_kept_the_same_way():
    mts = [trial(f"mt{i}", ("semeval", "pos")) for i in range(3)]
    lone = trial("lone", ("semeval",))
    actions = rung(new(ContenderKeepingASHA), [(t, 0.8 + i / 100) for i, t in enumerate(mts)] + [(lone, 0.5)])
    assert actions["lone"] == CONTINUE


def test_a_leader_is_promoted_but_not_run_past_the_last_epoch():
    s = new(ContenderKeepingASHA, max_t=2)
    leader = trial("mt", ("semeval", "sst2"))
    rung(s, ((trial("base", ("semeval",), baseline=True), 0.9),))
    assert rung(s, ((leader, 0.5),)) == {"mt": CONTINUE}
    # at max_t stock ASHA stops every trial (it is finished); nothing is overridden there
    assert rung(s, ((leader, 0.5),), epoch=2) == {"mt": STOP}


def test_overridden_stops_are_not_counted_as_stopped():
    s = new(ContenderKeepingASHA)
    rung(s, ((trial("a", ("semeval",)), 0.9), (trial("b", ("semeval", "pos")), 0.1), (trial("c", ("semeval",)), 0.2)))
    assert s._num_stopped == 1  # only c: b leads the multitask side


def test_leaders_survive_asha_save_and_restore(tmp_path):
    s = new(ContenderKeepingASHA)
    rung(s, ((trial("mt", ("semeval", "sst2")), 0.6),))
    s.save(str(tmp_path / "s.pkl"))
    restored = new(ContenderKeepingASHA)
    restored.restore(str(tmp_path / "s.pkl"))
    later = trial("mt2", ("semeval", "pos"))
    assert rung(restored, ((trial("base", ("semeval",), baseline=True), 0.9), (later, 0.55))) == {
        "base": CONTINUE,
        "mt2": STOP,  # 0.55 does not lead: the restored record 0.6 does
    }


def test_a_scheduler_pickled_before_leaders_existed_still_runs():
    old = new(ContenderKeepingASHA)
    old.__dict__.pop("leaders", None)
    loaded = pickle.loads(pickle.dumps(old))
    assert rung(loaded, ((trial("mt", ("semeval", "sst2")), 0.6),)) == {"mt": CONTINUE}
    assert BaselineKeepingASHA is ContenderKeepingASHA  # the name older studies pickled
