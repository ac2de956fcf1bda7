"""The simulated-study benchmarks' pieces that need no Ray: the truth's time scale, the seeded truth
copies, the suggest timer and the plot."""

import json

from benchmarks.sim_calibration import truth_copy
from benchmarks.sim_cost import plot, suggest_curve, truth_file
from search.simulation.truth import load_truth


def test_a_trial_epoch_sleeps_the_asked_seconds(tmp_path):
    truth = load_truth(str(truth_file(tmp_path, "null", 4.0)))
    assert abs(truth.sleep_s(3) - 4.0) < 1e-9  # three seeds per trial epoch


def test_each_calibration_study_gets_its_own_luck(tmp_path):
    a, b = (load_truth(str(truth_copy(tmp_path, "null", i))) for i in (1, 2))
    assert (a.seed, b.seed) == (1, 2) and a.luck("k", 1) != b.luck("k", 1)


def test_suggestions_are_timed_and_plotted(tmp_path):
    times = suggest_curve(5, tmp_path)
    assert len(times) == 5 and all(t > 0 for t in times)
    line = {"trials": 5, "slots": 2, "tracking": "sqlite", "suggest_s": times, "utilisation": 0.5}
    plot([json.loads(json.dumps({**line, "driver_cpu_ms_per_result": 10.0}))], tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_steady_utilisation_counts_the_slots_busy_while_trials_waited():
    from benchmarks.sim_cost import steady_utilisation

    back_to_back = [(0, 10, 1), (0, 10, 1), (10, 20, 1), (10, 20, 1), (20, 30, 1)]
    assert steady_utilisation(back_to_back, slots=2, epoch_seconds=10) == 1.0
    gaps = [(0, 10, 1), (0, 10, 1), (12, 22, 1), (12, 22, 1), (24, 34, 1)]  # 2 s between trials
    assert abs(steady_utilisation(gaps, slots=2, epoch_seconds=10) - 40 / 48) < 1e-12
    assert steady_utilisation(gaps[:2], slots=2, epoch_seconds=10) is None  # no trial ever waited
