from benchmarks.default_run import Phases

LINES = [
    (3.0, "13:00:01 INFO search.study.prepare: smoke preset: ..."),
    (400.0, "13:06:40 INFO search.study.runner: study absa-smoke-1 finished: 6 trials, 0 failed"),
    (401.0, "13:06:41 INFO search.answer.final: winner on dev: t02 sentihood power(a=2.4) (0.6127 ± 0.0139)"),
    (560.0, "13:09:20 INFO search.answer.retrain: finalize trains t01 single seeds 3,4,5 to 2 epochs"),
    (590.0, "13:09:50 INFO search.answer.register: registered t01 single, seed 4 as models:/absa-best/1"),
    (600.0, "report written to /tmp/x/results/absa/absa-smoke-1: best_so_far.png, ..."),
    (601.0, "multitask vs single-task on test acc_4way, 3 fresh seeds: no significant difference (Δ ...)"),
]


def test_phases_end_at_the_lines_that_end_them():
    phases = Phases()
    for at, line in LINES:
        phases.see(line, at)
    phases.exit = 605.0
    assert phases.durations() == {"search": 400.0, "final": 190.0, "report": 10.0, "rest": 5.0}
    assert phases.verdict.startswith("multitask vs single-task on test acc_4way")


def test_a_phase_whose_line_never_came_is_none():
    phases = Phases()
    phases.see(LINES[1][1], 400.0)
    phases.exit = 410.0
    assert phases.durations() == {"search": 400.0, "final": None, "report": None, "rest": 10.0}
