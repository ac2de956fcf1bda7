"""Each trial kind says how the report heads its study."""

from search.simulation.kind import SimulatedTrials, trial_kind
from search.simulation.truth import resolve_truth
from search.study.kind import TrainedTrials


def test_a_trained_study_keeps_its_presets_note():
    assert trial_kind("").study_note("Smoke preset.") == "Smoke preset."
    assert isinstance(trial_kind(""), TrainedTrials)


def test_a_simulated_study_is_headed_simulated_naming_its_truth():
    truth = resolve_truth("null")
    kind = trial_kind(truth)
    assert isinstance(kind, SimulatedTrials)
    assert kind.study_note("Full preset.") == (
        f"SIMULATED study: every score comes from the truth {truth}, no model trained. Full preset."
    )
