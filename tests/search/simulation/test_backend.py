"""The backend's event order on a hand-worked schedule, and the plug points for seeds as a fidelity
(a scheduler that pauses, a per-epoch seed count): real searcher, real Tune schedulers, no Ray actors."""

from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from search.simulation.backend import Backend
from search.simulation.study import searcher_for, simulated_plan
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig


def backend(scheduler, trials: int, slots: int, seeds: int, **kw) -> Backend:
    """The thesis grid's first ``trials`` points (a fixed order), 2 epochs, 60 s per seed-epoch."""
    path = resolve_truth("three_better")
    cfg = SearchConfig("absa", preset="full", simulate=path, search="grid", seeds=seeds, epochs=2)
    plan = simulated_plan(cfg)
    searcher = searcher_for(plan)
    scheduler.set_search_properties(plan.invocation.objective, "max")
    return Backend(
        searcher,
        scheduler,
        load_truth(path),
        plan.invocation.objective,
        2,
        list(plan.invocation.seeds),
        trials,
        slots,
        60.0,
        **kw,
    )


def test_two_slots_three_trials_in_the_hand_worked_order():
    b = backend(FIFOScheduler(), trials=3, slots=2, seeds=1)
    trials = b.run()
    got = [(e.time, e.spent, e.trial_id[-1], e.kind, e.epoch) for e in b.events]
    assert got == [
        (0.0, 0, "0", "start", 1),
        (0.0, 0, "1", "start", 1),
        (60.0, 1, "0", "result", 1),
        (60.0, 2, "1", "result", 1),  # same time: in the order the epochs started
        (120.0, 3, "0", "result", 2),
        (120.0, 3, "0", "end", 2),
        (120.0, 3, "2", "start", 1),  # the freed slot is filled before the next result is handled
        (120.0, 4, "1", "result", 2),
        (120.0, 4, "1", "end", 2),
        (180.0, 5, "2", "result", 1),
        (240.0, 6, "2", "result", 2),
        (240.0, 6, "2", "end", 2),
    ]
    assert [t.config["label"] for t in trials] == ["t00 baseline", "t01 sst2 sequential", "t02 sst2 random"]
    assert all(t.decisions == [TrialScheduler.CONTINUE] * 2 and t.status == "TERMINATED" for t in trials)
    assert b.searcher._ot_study.trials[0].state.name == "COMPLETE"  # the searcher heard every end


class PauseAfterFirstEpoch(FIFOScheduler):
    """A stand-in for seeds as a fidelity: every trial pauses once after epoch 1 and is resumed later."""

    def on_trial_result(self, tune_controller, trial, result):
        return TrialScheduler.PAUSE if result["training_iteration"] == 1 else TrialScheduler.CONTINUE


def test_a_pausing_scheduler_and_seeds_added_at_promotion():
    def seed_count(trial, epoch: int) -> int:
        return 1 if epoch == 1 else len(trial.seeds)

    b = backend(PauseAfterFirstEpoch(), trials=2, slots=1, seeds=3, seed_count=seed_count)
    t0, t1 = b.run()
    # t0 trains 1 seed-epoch and pauses at 60 s. A paused trial is still live to Tune's ConcurrencyLimiter,
    # so with one slot no new trial is suggested: t0 resumes (choose_trial_to_run: no PENDING, one PAUSED)
    # and trains seed 1's 2nd epoch and seeds 2-3 from scratch, 5 seed-epochs = 300 s; then t1 alike
    assert [(e.time, e.trial_id[-1], e.kind, e.decision) for e in b.events if e.kind != "start"] == [
        (60.0, "0", "result", TrialScheduler.PAUSE),
        (360.0, "0", "result", TrialScheduler.CONTINUE),
        (360.0, "0", "end", ""),
        (420.0, "1", "result", TrialScheduler.PAUSE),
        (720.0, "1", "result", TrialScheduler.CONTINUE),
        (720.0, "1", "end", ""),
    ]
    assert t0.seed_epochs == t1.seed_epochs == 6 and b.spent == 12  # 3 seeds x 2 epochs, none twice
    assert {f"semeval/dev/acc_4way/seed{s}" for s in (1, 2, 3)} <= set(t0.last_result)
