"""A trial's record made from a simulated study's ended trial, and refused where a field is bad (the record
made from an MLflow run: test_tracker.py, in a real sqlite store)."""

import math

import pytest

from search.simulation.trial import SimTrial
from search.tracking.trial_record import TrialRecord
from spaces import canonical, run_name
from trainables.config import ConfigError, SamplingConfig, TrainConfig
from trainables.trial import TrialConfig

OBJECTIVE = "semeval/dev/acc_4way/mean"
MULTI = canonical(
    TrainConfig(tasks=("semeval", "sst2"), primary="semeval", sampling=SamplingConfig("power", exponent=1.31))
)


def ended(epoch: int, last_result: dict, config: TrainConfig = MULTI, **fields) -> SimTrial:
    trial = TrialConfig(train=config, seeds=(1, 2), key="k-3", label=run_name(3, config, False), number=3, **fields)
    return SimTrial("abc_00003", trial.to_tune(), number=3, last_result=last_result, epoch=epoch)


def test_a_simulated_trial_is_recorded_with_its_params_status_and_seed_scores():
    result = {
        OBJECTIVE: 0.75,
        "semeval/dev/acc_4way/seed1": 0.74,
        "semeval/dev/acc_4way/seed2": 0.76,
        "semeval/dev/acc_4way/std": 0.014,
        "epoch": 4,
        "primary_passes": 1.6,  # the truth's exposure, as the trained trainable reports it
        "done": True,  # Tune's flags and names are no scores
        "node_ip": "10.0.0.1",
    }
    r = TrialRecord.of_ended(ended(4, result), OBJECTIVE, max_epochs=4)
    assert (r.run_id, r.label, r.number, r.key) == ("abc_00003", "t03 sst2 power(a=1.3)", 3, "k-3")
    assert r.status == "completed"
    assert (r.auxiliary, r.schema, r.exponent, r.seeds, r.epochs, r.baseline) == (
        "sst2",
        "power",
        1.31,
        "1,2",
        4,
        False,
    )
    assert r.objective == 0.75 and r.objective_seeds == {1: 0.74, 2: 0.76} and not r.single_task
    assert r.mean("semeval/dev/acc_4way") == 0.75 and r.std("semeval/dev/acc_4way") == 0.014
    assert "done" not in r.metrics and "node_ip" not in r.metrics and math.isnan(r.anneal_c)
    assert r.columns()["primary_passes"] == 1.6
    stopped = TrialRecord.of_ended(ended(1, {**result, "epoch": 1}), OBJECTIVE, max_epochs=4)
    assert stopped.status == "pruned" and stopped.epochs == 1
    unscored = TrialRecord.of_ended(ended(0, {}), OBJECTIVE, max_epochs=4)
    assert math.isnan(unscored.objective) and unscored.objective_seeds == {}
    assert math.isnan(unscored.columns()["primary_passes"])  # a study from before exposure was counted


def test_a_baseline_is_single_task_and_named_by_its_label():
    single = canonical(TrainConfig(tasks=("semeval",), primary="semeval"))
    r = TrialRecord.of_ended(ended(4, {"epoch": 4}, single, baseline=True), OBJECTIVE, max_epochs=4)
    assert r.baseline and r.single_task and r.auxiliary == "none" and r.schema == "single"


def test_a_bad_or_missing_field_is_refused_in_one_line():
    no_train = SimTrial("abc_00004", {"seeds": [1], "label": "t04 x"}, number=4, epoch=1)
    with pytest.raises(ConfigError, match="Tune trial config t04 x: no 'train'"):
        TrialRecord.of_ended(no_train, OBJECTIVE, max_epochs=4)
    with pytest.raises(ConfigError, match="trial t05: status 'done', expected one of"):
        TrialRecord(run_id="r5", label="t05", status="done")
    with pytest.raises(ConfigError, match=r"trial t06: epochs 2.5 is no integer"):
        TrialRecord(run_id="r6", label="t06", epochs=2.5)
