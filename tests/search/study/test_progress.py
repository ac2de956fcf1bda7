"""The status line's expected remaining work under cohort halving (the default search): every epoch a rung,
each family's leader kept, the finalists alone on every seed, trials paused at a rung until its decision."""

import re
from types import SimpleNamespace

from search.simulation import backend
from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig
from search.study.progress import Work, status_line, work_text
from search.study.tuner import work_of

OBJECTIVE = "semeval/dev/acc_4way/mean"


def test_the_expected_total_of_a_halving_study_stays_near_what_it_trains(monkeypatch):
    """Spent + to go, read off the trials as the status line does at every tenth result of a simulated study of
    the 43 cells, stays within a quarter of the seed-epochs the study trains in the end (it read twice that
    while paused trials and the finalists' seed schedule were not counted)."""
    seen = []
    report = backend.Backend.report

    def recorded(self, trial, epoch, seeds, cost):
        report(self, trial, epoch, seeds, cost)
        seen.append(
            [SimpleNamespace(status=t.status, config=t.config, last_result=dict(t.last_result)) for t in self._all]
        )

    monkeypatch.setattr(backend.Backend, "report", recorded)
    path = resolve_truth("late_bloomer")
    found = simulate(SearchConfig("absa", preset="full", simulate=path, search="cells-halving"), load_truth(path))
    work = work_of(found.plan)
    assert work.rungs == (found.plan.screen, 1.0, 2.0, 3.0)
    for trials in seen[::10]:
        running = [t for t in trials if t.status == "RUNNING"]
        text = work_text(trials, running, found.plan.trials - len(trials), work)
        spent, to_go = map(float, re.search(r"([\d.]+) seed-epochs spent, ~(\d+) to go", text).groups())
        assert abs(spent + to_go - found.seed_epochs) <= 0.25 * found.seed_epochs, (text, found.seed_epochs)


def test_a_paused_trial_is_neither_running_nor_left_and_its_rung_is_still_ahead():
    config = {"train": {"primary": "semeval", "tasks": ["semeval", "sst2"]}, "number": 1}
    paused = SimpleNamespace(status="PAUSED", config=config, last_result={"epoch": 1, "time_total_s": 10.0})
    work = Work(seeds=1, max_t=2, rungs=(1,), reduction_factor=2)
    line = status_line([paused], OBJECTIVE, 2, "max", 30, total=2, work=work)
    # paused at rung 1 (1 spent): half go on to epoch 2 (+1): 0.5 to go; the trial left: 1 + 0.5
    assert "0 running, 1 paused, 1 left | 1 seed-epochs spent, ~2 to go" in line
    assert work.expected(work.schedule(config), 1, decided=False) == 1.5
    assert work.expected(work.schedule(config), 1) == 2.0


def test_a_final_run_says_each_epoch_once_and_nothing_at_a_screen_point():
    import io

    from search.study.progress import FinalLines
    from trainables.trial import TrialConfig

    out = io.StringIO()
    lines = FinalLines("semeval/dev/acc_4way/mean", 3, stream=out)
    trial = SimpleNamespace(trial_id="x", config=TrialConfig(label="final winner t01 sqrt seeds 2,3").to_tune())
    for epoch, score in ((0.25, 0.5), (1, 0.61), (2, 0.66)):
        result = {"epoch": epoch, "semeval/dev/acc_4way/mean": score, "semeval/dev/acc_4way/std": 0.01}
        lines.on_trial_result(0, [], trial, result)
    assert out.getvalue().splitlines() == [
        "final winner t01 sqrt seeds 2,3: epoch 1 of 3, dev 0.6100 ± 0.0100",
        "final winner t01 sqrt seeds 2,3: epoch 2 of 3, dev 0.6600 ± 0.0100",
    ]


def test_the_status_line_carries_the_answers_eta_at_the_pace_the_search_shows():
    from search.study.forecast import Forecast

    config = {"train": {"primary": "semeval", "tasks": ["semeval", "sst2"]}, "number": 1}
    running = SimpleNamespace(status="RUNNING", config=config, last_result={"epoch": 1, "time_total_s": 20.0})
    work = Work(seeds=1, max_t=2, rungs=(), reduction_factor=2)
    forecast = Forecast(search_s=100.0, final_s=200.0, seed_epoch_s=10.0, report_s=10.0)
    line = status_line([running], OBJECTIVE, 2, "max", 30, total=1, work=work, forecast=forecast)
    # the search shows 20 s a seed-epoch against the forecast's 10: finalize and the report take twice theirs
    assert "ETA 20 s (20.0 s per seed-epoch, 1 at a time), the answer in ~7 min" in line  # 20 + 420 s
    fresh = SimpleNamespace(status="RUNNING", config=config, last_result={})
    line = status_line([fresh], OBJECTIVE, 2, "max", 30, total=1, work=work, forecast=forecast)
    assert "ETA after the first epoch, the answer in ~5 min" in line  # 310 s forecast, 30 s gone: 280 s


def test_finalize_says_where_it_stands_a_minute_with_the_forecast_until_a_run_ends():
    import io
    import time

    from search.study.progress import FinalStatus
    from trainables.trial import TrialConfig

    out = io.StringIO()
    status = FinalStatus(3, expected_s=300.0, stream=out)
    status.setup(start_time=1000.0)
    config = TrialConfig(seeds=(4, 5, 6), label="final").to_tune()
    runs = [SimpleNamespace(config=config, status="RUNNING", last_result={}) for _ in range(3)]
    status.start = time.time() - 120.4  # two minutes in
    status.report(runs, False)
    runs[0] = SimpleNamespace(config=config, status="TERMINATED", last_result={"epoch": 3, "time_total_s": 180.0})
    status.report(runs, False)
    first, second = out.getvalue().splitlines()
    assert first.startswith("[finalize 02:00] final runs: 0 done, 3 running; ETA ~3 min (forecast)"), first
    # one ended after 180 s, 120 s gone: the others, started with it, ~60 s more
    assert second.endswith("final runs: 1 done, 2 running; ETA ~60 s (as the runs that ended took)"), second
