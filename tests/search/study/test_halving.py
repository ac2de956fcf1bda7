"""Cohort halving: the first points are decided together at each rung, each family's leader kept at every
epoch rung but the last; stopped trials are pruned and nothing waits forever
(tests/search/simulation/test_halving_against_ray.py: the Ray path takes the same decisions)."""

import pickle
from types import SimpleNamespace

import optuna
import pytest
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from search.infra.ray_compat import PauseAwareLimiter, SchedulerSavingLimiter
from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig
from search.study.halving import CohortHalving
from search.study.scheduler import family_of, is_baseline
from trainables.exposure import PRIMARY_PASSES

METRIC = "semeval/dev/acc_4way/mean"


def study(truth: str = "late_bloomer", trials: int = 43, interrupt_after: int | None = None, state_lag: int = 0, **kw):
    """A simulated cells-halving study (no screen point unless ``screen_fraction`` says, no hedge unless ``hedge``
    does), interrupted after ``interrupt_after`` results and resumed as Ray does it where that is given, the
    scheduler's saved state ``state_lag`` results older than the trials'."""
    kw.setdefault("screen_fraction", 0)
    kw.setdefault("hedge", 0)  # the rule's own mechanics; the hedge has tests of its own below
    path = resolve_truth(truth)
    cfg = SearchConfig(
        "absa", preset="full", simulate=path, search="cells-halving", trials=trials, seeds=1, max_concurrent=4, **kw
    )
    return simulate(cfg, load_truth(path), interrupt_after=interrupt_after, state_lag=state_lag)


def completed(found) -> list[str]:
    return [t.trial_id for t in found.trials if t.epoch == found.plan.base.epochs]


def epoch_results(found, epoch: float) -> list:
    return [e for e in found.events if e.kind == "result" and e.epoch == epoch]


def test_no_cell_goes_past_a_rung_before_every_cell_reached_it():
    found = study()
    last_at_1 = max(e.time for e in epoch_results(found, 1))
    assert all(e.time > last_at_1 for e in epoch_results(found, 2))  # one decision, after the whole screen
    assert len(epoch_results(found, 1)) == 43  # every cell screened


def test_each_familys_leader_at_the_first_rung_goes_on_and_the_baseline_completes():
    found = study()
    families: dict[str, list] = {}
    for t in found.trials:
        families.setdefault(family_of(t.config), []).append(t)
    assert len(families) == 7  # the six schemas and single-task
    for family, members in families.items():
        assert any(t.epoch >= 2 for t in members), family  # someone of every family reached epoch 2
    baseline = next(t for t in found.trials if is_baseline(t.config))
    assert baseline.epoch == found.plan.base.epochs


def test_stopped_cells_are_pruned_in_optuna_and_nothing_is_left_waiting():
    found = study()
    states = {t.state for t in found.searcher._ot_study.trials}
    assert states == {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    assert all(t.status == "TERMINATED" for t in found.trials)
    by_number = {t.number: t for t in found.searcher._ot_study.trials}
    for t in found.trials:
        complete = t.epoch == found.plan.base.epochs
        assert (by_number[t.number].state == optuna.trial.TrialState.COMPLETE) == complete


def test_it_costs_less_than_the_grid_and_trials_after_the_cohort_are_decided_as_they_come():
    found = study(trials=60)
    assert len(found.trials) == 60 and all(t.status == "TERMINATED" for t in found.trials)
    assert found.seed_epochs < 43 * 4
    late = found.trials[43:]
    assert {TrialScheduler.STOP, TrialScheduler.CONTINUE} & {t.decisions[0] for t in late}
    assert TrialScheduler.PAUSE not in {d for t in late for d in t.decisions}  # only the cohort waits


class Controller:
    def __init__(self, trials):
        self.trials, self.stopped = trials, []
        self.search_alg = SimpleNamespace(searcher=PauseAwareLimiter(Searcher(), max_concurrent=1))

    def get_trials(self):
        return self.trials

    def stop_trial(self, trial):
        self.stopped.append(trial.trial_id)
        trial.status = "TERMINATED"


class Trial:
    def __init__(self, trial_id, schema="prop", baseline=False):
        self.trial_id, self.status, self.last_result = trial_id, "RUNNING", {}
        tasks = ["semeval"] if baseline else ["semeval", "sst2"]
        self.config = {"baseline": baseline, "train": {"primary": "semeval", "tasks": tasks, "sampling.schema": schema}}

    def set_status(self, status):
        self.status = status


def scheduler(cohort: int) -> CohortHalving:
    s = CohortHalving(
        metric=METRIC, mode="max", time_attr="training_iteration", max_t=4, grace_period=1, reduction_factor=3
    )
    s.cohort = cohort
    return s


def report(s, controller, trial, epoch, value):
    action = s.on_trial_result(controller, trial, {"training_iteration": epoch, METRIC: value})
    trial.status = {"PAUSE": "PAUSED", "STOP": "TERMINATED"}.get(action, "RUNNING")
    return action


def test_a_cohort_trial_that_fails_releases_the_rung():
    trials = [Trial("base", baseline=True), Trial("a"), Trial("b"), Trial("c", schema="anneal")]
    controller, s = Controller(trials), scheduler(4)
    for t in trials:
        s.on_trial_add(controller, t)
    assert report(s, controller, trials[0], 1, 0.80) == "PAUSE"
    assert report(s, controller, trials[1], 1, 0.85) == "PAUSE"
    assert report(s, controller, trials[3], 1, 0.70) == "PAUSE"
    trials[2].status = "ERROR"
    s.on_trial_error(controller, trials[2])  # the last one the rung waited for
    assert controller.stopped == []  # base (baseline), a (top), c (anneal's leader): all go on
    assert s.choose_trial_to_run(controller) is not None
    assert {t.trial_id for t in trials if t.status == "PAUSED"} == s.state.resume


def test_a_loser_paused_at_the_rung_is_stopped_when_the_last_cell_arrives():
    trials = [Trial("base", baseline=True)] + [Trial(f"p{i}") for i in range(5)]
    controller, s = Controller(trials), scheduler(6)
    for t in trials:
        s.on_trial_add(controller, t)
    actions = [report(s, controller, t, 1, v) for t, v in zip(trials, (0.80, 0.70, 0.71, 0.72, 0.73, 0.90))]
    assert actions[:-1] == ["PAUSE"] * 5 and actions[-1] == "CONTINUE"  # p4 (0.90): the top third and leader
    assert sorted(controller.stopped) == ["p0", "p1", "p2", "p3"]
    assert s.state.resume == {"base"}  # the baseline goes on whatever it scored


def test_a_rung_waits_for_the_cohort_trials_not_started_yet_and_paused_ones_free_their_slot():
    trials = [Trial("base", baseline=True), Trial("a")]
    controller, s = Controller(trials[:1]), scheduler(2)
    limiter = controller.search_alg.searcher
    limiter.live_trials.add("base")
    s.on_trial_add(controller, trials[0])
    assert report(s, controller, trials[0], 1, 0.80) == "PAUSE"  # "a" is part of the cohort: not decided alone
    assert limiter.paused == {"base"} and len(limiter.live_trials - limiter.paused) == 0  # a slot is free
    controller.trials.append(trials[1])
    s.on_trial_add(controller, trials[1])
    assert report(s, controller, trials[1], 1, 0.85) == "CONTINUE"
    assert s.state.resume == {"base"} and limiter.paused == set()


@pytest.mark.parametrize("screen", [0.0, None])  # none; the strategy's screen point
def test_a_study_interrupted_anywhere_and_resumed_as_ray_does_it_decides_as_if_never_interrupted(screen):
    """Ray restores the scheduler as created and every unfinished trial PENDING, and starts every PENDING trial:
    with its state saved in the limiter's, a study of the 43 cells interrupted after any result (every fifth
    here) and resumed completes the trials the uninterrupted study completes, and ends every trial."""
    whole = study(screen_fraction=screen)
    results = sum(e.kind == "result" for e in whole.events)
    for k in range(1, results, 5):
        resumed = study(screen_fraction=screen, interrupt_after=k)
        assert completed(resumed) == completed(whole), k
        assert {t.status for t in resumed.trials} == {"TERMINATED"}, k


@pytest.mark.parametrize("screen", [0.0, None])
def test_a_state_saved_before_the_trials_resumes_to_the_same_decisions(screen):
    """Tune writes the trials, then the searcher's state (the scheduler's inside): a hard kill between the two
    leaves the scheduler's state some results older than the trials. Resumed from such a state (1 to 8 results
    older, at every third interrupt point), the study takes in what the trials show (Ray keeps each metric's
    last 10 values with a trial) and ends every trial with the completed trials of the study not interrupted."""
    whole = study(screen_fraction=screen)
    results = sum(e.kind == "result" for e in whole.events)
    for lag in (1, 3, 8):
        for k in range(lag + 1, results, 3):
            resumed = study(screen_fraction=screen, interrupt_after=k, state_lag=lag)
            assert {t.status for t in resumed.trials} == {"TERMINATED"}, (lag, k)
            assert completed(resumed) == completed(whole), (lag, k)


def test_without_reconciling_a_stale_state_trials_are_left_waiting(monkeypatch):
    """What the reconciling is for (and that the emulated kill can tell): a state older than the trials, taken
    back as it is, leaves trials waiting at rungs whose results it never saw."""
    monkeypatch.setattr(CohortHalving, "reconcile", lambda self, trial: None)
    results = sum(e.kind == "result" for e in study().events)
    left = [
        k
        for k in range(3, results, 5)
        if {t.status for t in study(interrupt_after=k, state_lag=2).trials} != {"TERMINATED"}
    ]
    assert left, "every stale resume ended its trials without reconciling"


def test_without_its_saved_state_a_resumed_study_changes_its_answer(monkeypatch):
    """What the saved state is for (and that the emulated resume can tell): a scheduler restored empty, left to
    rebuild its rungs from the trials, completes other trials than the uninterrupted study at some interrupt."""
    monkeypatch.setattr(SchedulerSavingLimiter, "take_scheduler_state", lambda self: None)
    whole = completed(study())
    assert any(completed(study(interrupt_after=k)) != whole for k in range(40, 70, 3))


def test_trials_after_the_cohort_resume_too_and_the_cohorts_answer_stands():
    """Past the cohort the searcher's proposals depend on when trials end, which an interrupt moves; the
    cohort's decisions do not."""
    whole = study(trials=60)
    cohort = {t.trial_id for t in whole.trials[:43]}
    for k in (20, 50, 80):
        resumed = study(trials=60, interrupt_after=k)
        assert len(resumed.trials) == 60 and {t.status for t in resumed.trials} == {"TERMINATED"}
        assert set(completed(resumed)) & cohort == set(completed(whole)) & cohort


def test_a_cohort_trial_reporting_again_at_a_decided_rung_gets_that_decision():
    """A trial retried after a failure (or resumed from a checkpoint before its rung) reports at a rung again:
    a promoted one goes on (not paused for a decision already taken), a stopped one stops."""
    trials = [Trial("base", baseline=True), Trial("a"), Trial("b"), Trial("c")]
    controller, s = Controller(trials), scheduler(4)
    for t in trials:
        s.on_trial_add(controller, t)
    for t, value in zip(trials, (0.80, 0.85, 0.70, 0.71)):
        report(s, controller, t, 1, value)
    assert s.state.going_on[1] == {"base", "a"} and "b" in s.state.ended
    assert report(s, controller, trials[1], 1, 0.85) == "CONTINUE" and "a" not in s.state.waiting
    assert report(s, controller, trials[2], 1, 0.70) == "STOP"


def test_a_cohort_trial_retried_after_a_failure_is_live_again_in_a_new_and_in_a_resumed_study():
    """Tune retries a failed trial (max_failures) with ``on_trial_error`` then ``on_trial_add``, the trial filed
    PENDING already: it is not stopped as ended at its next rung (the baseline least of all), and in a resumed
    study it is not taken for a restored trial (marked PAUSED behind Tune's back)."""
    for resumed in (False, True):
        trials = [Trial("base", baseline=True), Trial("a"), Trial("b")]
        controller, s = Controller(trials), scheduler(3)
        for t in trials:
            s.on_trial_add(controller, t)
        actions = [report(s, controller, t, 1, value) for t, value in zip(trials, (0.80, 0.85, 0.70))]
        assert actions == ["PAUSE", "PAUSE", "STOP"] and s.state.going_on[1] == {"base", "a"}
        if resumed:  # the saved state taken back, the restored trials added, Tune's first step
            s.state_taken_back()
            s.choose_trial_to_run(controller)
        for t in trials[:2]:
            t.status = "ERROR"
            s.on_trial_error(controller, t)
            t.status = "PENDING"  # _requeue_trial files it before on_trial_add
            s.on_trial_add(controller, t)
            assert t.status == "PENDING" and t.trial_id not in s.state.ended
        assert report(s, controller, trials[0], 2, 0.81) == "PAUSE"  # waits for a at rung 2: not stopped
        assert report(s, controller, trials[1], 2, 0.86) == "CONTINUE"
        assert s.state.going_on[2] == {"base", "a"} and "b" in s.state.ended and controller.stopped == []


def test_each_familys_leader_goes_on_at_every_epoch_rung_but_the_last():
    """Of 4 epochs, rungs 1 and 2 keep a family's leader however far behind; rung 3 chooses the finalists
    by score alone (the baseline and each side's leader kept, as at every rung)."""
    trials = [Trial("base", baseline=True), Trial("a"), Trial("b"), Trial("c"), Trial("slow", schema="anneal")]
    controller, s = Controller(trials), scheduler(5)
    for t in trials:
        s.on_trial_add(controller, t)
    ids = [t.trial_id for t in trials]
    for rung in (1.0, 2.0, 3.0):
        s.state.records[rung] = {"base": 0.80, "a": 0.86, "b": 0.85, "c": 0.84, "slow": 0.70}
    assert s.rungs_of().promoted(1.0, ids) == s.rungs_of().promoted(2.0, ids) == {"base", "a", "b", "slow"}
    assert s.rungs_of().promoted(3.0, ids) == {"base", "a", "b"}


def test_the_screen_compares_every_cell_inside_the_first_epoch_within_its_family():
    """With a screen point at half the first epoch: every cell reports there before any goes on; each family
    keeps its own top 1/reduction_factor (a slow-starting family is never ranked against a fast one there); a
    cell stopped there cost half a seed-epoch, and is pruned in Optuna."""
    found = study(screen_fraction=0.5)
    screened = epoch_results(found, 0.5)
    assert len(screened) == 43
    assert all(e.time > max(s.time for s in screened) for e in epoch_results(found, 1))
    families: dict[str, list] = {}
    for t in found.trials:
        families.setdefault(family_of(t.config), []).append(t)
    for family, members in families.items():
        on = [t for t in members if t.epoch > 0.5]
        rf = found.plan.rungs.reduction_factor
        ceiling = -(-len(members) // rf) + (family == "single-task")  # the baseline goes on beside its family's
        assert 1 <= len(on) <= ceiling + 1, family  # + the side's leader, where it is not among them
    stopped = [t for t in found.trials if t.epoch == 0.5]
    assert stopped and all(t.seed_epochs == 0.5 for t in stopped)
    by_number = {t.number: t for t in found.searcher._ot_study.trials}
    assert {by_number[t.number].state for t in stopped} == {optuna.trial.TrialState.PRUNED}
    assert found.seed_epochs < study(screen_fraction=0).seed_epochs  # cheaper than a first rung at epoch 1


def test_under_the_default_the_finalists_train_both_seeds_and_the_baseline_one():
    """The default search at the full preset: K = 2 and reduction factor 4 (the strategy's own); one seed until
    the last rung, both for the finalists past it, and one for the baseline throughout (finalize compares it with
    the winner on fresh seeds)."""
    path = resolve_truth("late_bloomer")
    found = simulate(SearchConfig("absa", preset="full", simulate=path, max_concurrent=4), load_truth(path))
    assert (found.plan.strategy.name, found.plan.invocation.seeds, found.plan.rungs.reduction_factor) == (
        "cells-halving",
        (1, 2),
        4,
    )
    done = completed(found)
    baseline = next(t for t in found.trials if is_baseline(t.config))
    assert baseline.trial_id in done and baseline.trained == {1: 4}
    finalists = [t for t in found.trials if t.trial_id in done and t is not baseline]
    assert finalists and all(t.trained == {1: 4, 2: 4} for t in finalists)
    assert all(list(t.trained) == [1] for t in found.trials if t.trial_id not in done)
    expected = 4 + 8 * len(finalists) + sum(t.epoch for t in found.trials if t.trial_id not in done)
    assert found.seed_epochs == pytest.approx(expected)  # screen points (0.4) sum inexactly


def halving(trials: list, max_t: int = 4, **kw) -> tuple[Controller, CohortHalving]:
    """A cohort halving scheduler (reduction factor 3) with ``trials`` as its cohort, every one added."""
    s = CohortHalving(
        metric=METRIC,
        mode="max",
        time_attr="training_iteration",
        max_t=max_t,
        grace_period=1,
        reduction_factor=3,
        cohort=len(trials),
        **kw,
    )
    controller = Controller(trials)
    for t in trials:
        s.on_trial_add(controller, t)
    return controller, s


def rung(s, controller, trials, epoch, values, passes=None) -> set[str]:
    """Every live trial of ``trials`` reports ``values`` (and its ``passes``) at ``epoch``: who went on."""
    for t in trials:
        if t.trial_id in s.rungs_of().alive_at(epoch):
            result = {"training_iteration": epoch, METRIC: values[t.trial_id]}
            if passes is not None:
                result[PRIMARY_PASSES] = passes[t.trial_id]
            action = s.on_trial_result(controller, t, result)
            t.status = {"PAUSE": "PAUSED", "STOP": "TERMINATED"}.get(action, "RUNNING")
    return s.state.going_on[epoch]


def test_the_passes_a_result_carries_are_recorded_per_rung_and_rank_within_strata():
    """Six prop cells, the more diluted the lower at the rung: in three strata of exposure the least exposed
    stratum's best (p3) goes on where one ranking (p4, p5, p6) would stop it."""
    passes = {"base": 1.2, "p1": 0.2, "p2": 0.3, "p3": 0.5, "p4": 0.6, "p5": 0.9, "p6": 1.0}
    values = {"base": 0.75, "p1": 0.70, "p2": 0.72, "p3": 0.80, "p4": 0.81, "p5": 0.85, "p6": 0.86}

    def cohort():
        return [Trial("base", baseline=True)] + [Trial(f"p{i}") for i in range(1, 7)]

    trials = cohort()
    controller, s = halving(trials, max_t=2, strata=3)  # one rung, at epoch 1
    # p1 p2 p3 | p4 p5 | p6 base (7 / 3 per stratum, by passes): each stratum's top, and the baseline
    assert rung(s, controller, trials, 1.0, values, passes) == {"p3", "p5", "p6", "base"}
    assert s.state.exposure == {1.0: passes}
    assert sorted(controller.stopped) == ["p1", "p2", "p4"]
    trials = cohort()
    controller, s = halving(trials, max_t=2)
    assert rung(s, controller, trials, 1.0, values, passes) == {"p4", "p5", "p6", "base"}  # strata 1: one ranking
    trials = cohort()
    controller, s = halving(trials, max_t=2, strata=3)
    assert rung(s, controller, trials, 1.0, values) == {"p4", "p5", "p6", "base"}  # no passes reported: one too
    assert s.state.exposure == {}


def test_a_hedged_cohort_member_goes_on_past_every_rung_but_the_last_whatever_it_scores():
    values = {"base": 0.80, "t1": 0.86, "t2": 0.85, "t3": 0.84, "t4": 0.83, "h": 0.60}
    for seed in range(3):
        probe = CohortHalving(metric=METRIC, mode="max", max_t=4, cohort=6, hedge=1, hedge_seed=seed)
        (position,) = probe.hedged_at
        names = ["base", "t1", "t2", "t3", "t4"]
        names.insert(position, "h")  # the hedged position holds the worst cell of its family
        trials = [Trial(n, baseline=n == "base") for n in names]
        controller, s = halving(trials, hedge=1, hedge_seed=seed)
        assert s.hedged_at == {position} and s.state.members[position] == "h"
        assert "h" in rung(s, controller, trials, 1.0, values)
        assert "h" in rung(s, controller, trials, 2.0, values)
        assert "h" not in rung(s, controller, trials, 3.0, values)  # the last rung: the top alone
        assert trials[position].status == "TERMINATED"
    trials = [Trial(n, baseline=n == "base") for n in values]
    controller, s = halving(trials)  # no hedge: it stops at the first rung
    assert "h" not in rung(s, controller, trials, 1.0, values) and trials[-1].status == "TERMINATED"


def test_a_failed_start_at_the_floor_goes_on_once_and_is_remembered():
    trials = [Trial("base", baseline=True), Trial("a"), Trial("b"), Trial("c"), Trial("failed")]
    controller, s = halving(trials, floor=0.58)  # the majority rate of the objective
    first = {"base": 0.80, "a": 0.86, "b": 0.85, "c": 0.84, "failed": 0.58}
    assert rung(s, controller, trials, 1.0, first) == {"base", "a", "b", "failed"}
    assert s.state.failed == {"failed"}
    second = {**first, "failed": 0.57}  # still at the floor: judged as any other now
    assert rung(s, controller, trials, 2.0, second) == {"base", "a", "b"}
    assert trials[-1].status == "TERMINATED" and "failed" in s.state.ended and s.state.failed == {"failed"}
    trials = [Trial(t.trial_id, baseline=t.trial_id == "base") for t in trials]
    controller, s = halving(trials)  # no floor (a metric without a majority rate): no pass
    assert rung(s, controller, trials, 1.0, first) == {"base", "a", "b"} and s.state.failed == set()
    low = CohortHalving(metric=METRIC, mode="min", max_t=4, floor=0.58)
    assert low.rule().floor == -0.58  # the rule's values are in the maximising sign


def test_a_pickled_scheduler_keeps_its_strata_hedge_and_floor():
    """Tune's tuner.pkl holds the scheduler as the study created it: unpickled, it decides with the same rule."""
    trials = [Trial("base", baseline=True), Trial("a"), Trial("b"), Trial("c"), Trial("slow", schema="anneal")]
    new = pickle.loads(pickle.dumps(halving(trials, strata=3, hedge=2, hedge_seed=1, floor=0.9)[1]))
    assert (new.strata, len(new.hedged_at), new.floor) == (3, 2, 0.9)
