"""The whole run's forecast from a measured pace (arithmetic on known rows and seconds), and the default run
sized to its promise: fewer training rows where the forecast says it would not fit, nothing else changed."""

import logging
from dataclasses import replace
from types import SimpleNamespace

import pytest

from search.study import sizing
from search.study.config import SearchConfig
from search.study.forecast import FIXED_S, Forecast, forecast, parallel, seed_epoch_s
from search.study.kind import TrainedTrials, TrialData
from search.study.plan import plan_offline
from search.study.sizing import FEWEST_SHARE, TARGET_S, fitting_share, sized
from trainables.pace import Pace

TASKS = ("semeval:NLI_M", "sst2", "pos", "sentihood")


def rows(train: int, dev: int) -> SimpleNamespace:
    return SimpleNamespace(train=range(train), dev=range(dev), test=None)


DATA = {t: rows(900, 1465 if t == TASKS[0] else 250) for t in TASKS}


def pace(step: float = 1.0, row: float = 0.01) -> Pace:
    return Pace({t: step for t in TASKS}, {t: row for t in TASKS}, build_s=1.0, threads=1)


def smoke_plan(**kw):
    return plan_offline(SearchConfig("absa", preset="smoke", **kw), TrainedTrials())


def test_a_seed_epoch_is_its_steps_at_the_mean_step_and_its_dev_rows():
    # 900 rows at batch 16: 57 batches a task; the primary's 1465 dev rows and sst2's 250 at 0.01 s
    assert seed_epoch_s((TASKS[0], "sst2"), DATA, 16, pace()) == pytest.approx(57 * 1.0 + 17.15)
    assert seed_epoch_s((TASKS[0],), DATA, 16, pace(), scale=0.5) == pytest.approx(29 + 7.325)  # dev halved too


def test_trials_at_once_are_the_slots_the_cores_hold():
    assert (parallel(2, 1, 2), parallel(3, 1, 2), parallel(4, 2, 2), parallel(1, 1, 16)) == (2, 2, 1, 1)


def test_the_forecast_grows_with_the_pace_and_the_rows_and_shrinks_with_fewer_arms():
    made = smoke_plan()
    base = forecast(made, DATA, pace(), cpus=2)
    assert base.search_s > 0 and base.final_s > base.search_s  # smoke: 4 trials on 1 seed, 3 arms on 3 seeds
    slower = forecast(made, DATA, pace(step=2.0), cpus=2)
    assert 1.5 * base.search_s < slower.search_s < 2 * base.search_s  # training doubles, scoring stays
    assert forecast(made, DATA, pace(), cpus=2, scale=0.5).total_s < base.total_s
    assert forecast(made, DATA, pace(), cpus=2, final_arms=2).final_s < base.final_s
    one_core = forecast(made, DATA, pace(), cpus=1).search_s - FIXED_S / 2
    assert one_core == pytest.approx(2 * (base.search_s - FIXED_S / 2))  # the trials one after the other


def test_the_share_is_the_largest_that_fits_and_never_below_the_floor():
    assert fitting_share(lambda s: Forecast(0, TARGET_S * s / 0.75, 1, report_s=0)) == 0.75
    assert fitting_share(lambda s: Forecast(0, 100 * TARGET_S, 1)) == FEWEST_SHARE
    assert fitting_share(lambda s: Forecast(0, TARGET_S / 2, 1)) == 1.0


class PacedKind(TrainedTrials):
    """Trained trials whose data and pace are given: no tokenizer, no model."""

    def __init__(self, step: float) -> None:
        self.step = step

    def prepare(self, study, base, objective):
        return TrialData(DATA, "", {})

    def pace(self, base, data, threads, at_once=1):
        return pace(step=self.step)


def test_a_slow_machine_gets_fewer_rows_a_fast_one_the_preset(caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="search.study.sizing")
    monkeypatch.setattr(sizing, "process_age_s", lambda: 20.0)  # the run's start (not this test process's age)
    asked = []

    def replan(train: int, evaluated: int):
        asked.append((train, evaluated))
        return smoke_plan(train_rows=train, eval_rows=evaluated)

    fast = replace(smoke_plan(), kind=PacedKind(step=0.05))
    assert sized(fast, False, replan).base.max_train_examples == 900 and not asked
    slow = replace(smoke_plan(), kind=PacedKind(step=0.4))
    fitted = sized(slow, False, replan)
    ((train, evaluated),) = asked
    assert train < 900 and evaluated < 1500 and train / 900 == pytest.approx(evaluated / 1500, abs=0.01)
    assert (fitted.base.max_train_examples, fitted.base.max_eval_examples) == (train, evaluated)
    assert (fitted.invocation.train_rows, fitted.invocation.eval_rows) == (train, evaluated)
    assert fitted.forecast.total_s <= TARGET_S and fitted.invocation.seeds == slow.invocation.seeds
    assert f"each task trains at most {train} rows (of 900)" in caplog.text
    assert "--train-rows 900 --eval-rows 1500 keep the preset's" in caplog.text
    assert sized(slow, True, replan).base.max_train_examples == 900  # rows given: the user's
    assert sized(replace(slow, resuming=True), False, replan).forecast is None  # a resume keeps what it recorded
    cluster = replace(slow, resources=replace(slow.resources, gpus_per_trial=1.0))
    assert sized(cluster, False, replan).forecast is None and len(asked) == 1  # not this CPU's pace


def test_the_run_started_before_the_forecast():
    assert 0.0 < sizing.process_age_s() < 7 * 24 * 3600  # this process's age, from /proc
