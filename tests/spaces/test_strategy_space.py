"""Issue 19's strategies as study dimensions: the space, canonical keys, the study file."""

import dataclasses
import re

import optuna
import pytest
from conftest import example_study, readme_study_file

from spaces import apply_choices, canonical, canonical_key, define_space, get_study, run_name
from spaces.studies import Range
from spaces.study_file import StudyFileError, load_study
from trainables.config import OptimConfig, SamplingConfig, TrainConfig

PLUS = get_study("absa-plus")
BASE = TrainConfig(tasks=("semeval",), primary="semeval", epochs=2)
TWO = ("semeval", "sst2")


def config(tasks=TWO, sampling=None, **optim):
    return TrainConfig(
        tasks=tasks, primary="semeval", epochs=2, sampling=sampling or SamplingConfig(), optim=OptimConfig(**optim)
    )


def test_absa_space_is_unchanged_by_the_new_dimensions():
    absa = get_study("absa")
    assert absa.strategy_dimensions() == ()
    names = set()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(30):
        trial = study.ask()
        define_space(trial, absa)
        names |= set(trial.params)
        study.tell(trial, 0.0)
    assert names == {"multitask", "aux/sst2", "aux/pos", "aux/sentihood", "schema", "exponent", "anneal_c", "lr"} | {
        "warmup",
        "aux_only",  # the one auxiliary of a multitask point whose flags all came out off
    }


def test_absa_plus_searches_every_strategy_and_every_point_builds():
    assert set(PLUS.strategy_dimensions()) == {
        "loss_weighting",
        "step_modes",
        "gradients",
        "unfreeze",
        "layer_decay",
        "bandit",
    }
    names, configs = set(), []
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(80):
        trial = study.ask()
        define_space(trial, PLUS)
        names |= set(trial.params)
        configs.append((trial.params["multitask"], apply_choices(BASE, trial.params, PLUS)))
        canonical_key(configs[-1][1])
        study.tell(trial, 0.0)
    assert {"bandit_reward", "bandit_lr", "bandit_explore", "loss_weighting", "step_mode", "gradients"} <= names
    assert {"layer_decay", "unfreeze", "unfreeze_every"} <= names
    assert any(c.sampling.schema == "bandit" and c.sampling.bandit_every == 10 for _, c in configs)
    assert any(c.optim.step_mode == "all" and c.optim.gradients == "pcgrad" for _, c in configs)
    singles = [c for multitask, c in configs if not multitask]  # single-task points: no multitask strategy
    assert singles and all(c.optim.loss_weighting == "none" and c.optim.step_mode == "sampled" for c in singles)


def test_baseline_stays_plain_fine_tuning():
    from spaces import baseline_choices

    baseline = apply_choices(BASE, baseline_choices(PLUS), PLUS)
    assert baseline.optim == OptimConfig() and baseline.sampling.schema == "prop"


def test_keys_of_configs_with_every_strategy_off_are_as_recorded():
    # the key test_spaces.py records for absa: a config built with the new fields at their defaults
    c = TrainConfig(tasks=TWO, primary="semeval", epochs=2, sampling=SamplingConfig(schema="sequential"))
    assert canonical_key(c) == "semeval+sst2 sequential lr=2e-05 wu=0.1 bs=24 #e5945b99e5"


def test_pcgrad_with_one_task_per_step_is_the_sum():
    assert canonical_key(config(gradients="pcgrad")) == canonical_key(config())  # one micro-batch per step
    assert canonical_key(config(tasks=("semeval",), gradients="pcgrad", step_mode="all")) == canonical_key(
        config(tasks=("semeval",))
    )
    # two micro-batches per step, or every task each step: PCGrad acts
    accum = dataclasses.replace(config(gradients="pcgrad"), grad_accum=2)
    assert canonical(accum).optim.gradients == "pcgrad"
    assert canonical_key(accum) != canonical_key(dataclasses.replace(config(), grad_accum=2))
    assert canonical(config(gradients="pcgrad", step_mode="all")).optim.gradients == "pcgrad"


def test_every_task_per_step_makes_the_schema_moot():
    a = config(sampling=SamplingConfig(schema="square"), step_mode="all")
    b = config(sampling=SamplingConfig(schema="bandit", bandit_lr=0.3), step_mode="all")
    assert canonical_key(a) == canonical_key(b) and "all-tasks" in canonical_key(a)
    assert canonical_key(a) != canonical_key(config(sampling=SamplingConfig(schema="square")))


def test_bandit_parameters_count_only_for_the_bandit():
    plain = config(sampling=SamplingConfig(schema="sequential"))
    tuned = config(sampling=SamplingConfig(schema="sequential", bandit_lr=0.7, bandit_every=3))
    assert canonical_key(plain) == canonical_key(tuned)
    b1 = config(sampling=SamplingConfig(schema="bandit", bandit_lr=0.1))
    b2 = config(sampling=SamplingConfig(schema="bandit", bandit_lr=0.2))
    assert canonical_key(b1) != canonical_key(b2) and "bandit(loss η=0.1 γ=0.1)" in canonical_key(b1)
    # one task: a bandit over it is plain fine-tuning
    one = config(tasks=("semeval",), sampling=SamplingConfig(schema="bandit", bandit_lr=0.2))
    assert canonical_key(one) == canonical_key(config(tasks=("semeval",)))


def test_off_options_drop_their_parameters_and_on_ones_are_labelled():
    assert canonical_key(config(uncertainty_lr=0.5)) == canonical_key(config())
    assert canonical_key(config(unfreeze_every=7)) == canonical_key(config())
    on = config(loss_weighting="uncertainty", layer_decay=0.8, unfreeze="step", unfreeze_every=50)
    assert canonical_key(on).startswith("semeval+sst2 prop lr=2e-05 wu=0.1 bs=24 uw lld=0.8 unfreeze/50steps #")
    assert run_name(4, canonical(on), False) == "t04 sst2 prop uw lld=0.8 unfreeze/50steps"


def test_strategy_keys_of_a_study_file(tmp_path):
    text = readme_study_file().replace(
        'schemas = ["sequential", "random", "prop", "power", "anneal"]',
        'schemas = ["prop", "bandit"]\nbandit_reward = "primary"\nbandit_lr = 0.2\nbandit_every = 5\n'
        'gradients = ["sum", "pcgrad"]\nlayer_decay = [0.6, 0.9]\nunfreeze = ["off", "step"]\n'
        "unfreeze_every = [20, 200]",
    )
    study = load_study(example_study(tmp_path, text))
    assert study.schemas == ("prop", "bandit") and study.bandit_reward == ("primary",)
    assert study.bandit_lr == Range(0.2, 0.2, log=True) and study.bandit_every == 5
    assert study.gradients == ("sum", "pcgrad") and study.layer_decay == Range(0.6, 0.9)
    assert study.unfreeze_every == Range(20, 200, log=True)


@pytest.mark.parametrize(
    "line,message",
    [
        ('gradients = ["sum", "mgda"]', "gradients ['sum', 'mgda']: expected distinct choices among sum, pcgrad"),
        ("layer_decay = [0.5, 1.5]", "layer_decay range [0.5, 1.5]: expected within"),
        ("bandit_every = 2.5", "bandit_every: expected a whole number of steps, got 2.5"),
        ("unfreeze = 3", "unfreeze: expected a list of choices (searched) or one choice (fixed), got 3"),
    ],
)
def test_bad_strategy_keys_are_one_line(tmp_path, line, message):
    path = example_study(tmp_path, line + "\n" + readme_study_file())  # a top-level key: before any table
    with pytest.raises(StudyFileError, match=re.escape(message)):
        load_study(path)


def test_mlflow_params_only_where_they_apply():
    from search.tracking.records import TrialParams
    from spaces.canonical import strategy_params

    assert strategy_params(config()) == {} and strategy_params(config(uncertainty_lr=0.5, unfreeze_every=9)) == {}
    bandit = config(sampling=SamplingConfig(schema="bandit", bandit_reward="primary"), loss_weighting="uncertainty")
    assert strategy_params(bandit) == {
        "bandit_reward": "primary",
        "bandit_lr": "0.1",
        "bandit_explore": "0.1",
        "bandit_every": "10",
        "loss_weighting": "uncertainty",
        "uncertainty_lr": "0.01",
    }
    surgery = config(step_mode="all", gradients="pcgrad", layer_decay=0.75, unfreeze="epoch")
    expected = {"step_mode": "all", "gradients": "pcgrad", "layer_decay": "0.75", "unfreeze": "epoch"}
    assert strategy_params(surgery) == expected | {"unfreeze_every": "1"}
    assert strategy_params(config(gradients="pcgrad")) == {}  # one task per step: the sum
    params = TrialParams.of(surgery, [1, 2]).to_params()
    assert params["gradients"] == "pcgrad" and TrialParams.from_params(params).to_params() == params
    assert "gradients" not in TrialParams.of(config(), [1]).to_params()
