"""The truth model of simulated studies: its effects, seed luck, noise and curve; the metric keys of
the real loop; bad truth files refused in one line; no torch."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from search.simulation.truth import TruthError, builtin_truths, load_truth, resolve_truth
from trainables.config import SamplingConfig, TrainConfig

ROOT = Path(__file__).resolve().parents[3]


def config(*auxiliary: str, schema: str = "prop", exponent: float | None = None, **kw) -> TrainConfig:
    sampling = SamplingConfig(schema=schema, exponent=exponent)
    base = dict(tasks=("semeval", *auxiliary), primary="semeval", sampling=sampling, lr=3e-5)
    return TrainConfig(**{**base, **kw})


def truth_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "truth.toml"
    path.write_text('name = "t"\nprimary = "semeval"\n' + text + "\n[tasks.semeval]\nacc_4way = 0.8\n")
    return str(path)


def test_the_null_truth_gives_every_config_the_same_true_score():
    truth = load_truth(resolve_truth("null"))
    configs = [
        config(),
        config("sst2", "pos", schema="square", lr=1e-4, warmup=0.0),
        config("sentihood", schema="anneal", epochs=4),
        config("sst2", schema="power", exponent=2.7),
    ]
    assert {truth.true_score(c, "acc_4way") for c in configs} == {0.85}


def test_three_better_has_exactly_its_three_configs_above_the_rest():
    truth = load_truth(resolve_truth("three_better"))
    assert truth.effect(config("sst2", "pos", schema="square")) == pytest.approx(0.02)
    assert truth.effect(config("sst2", "pos", schema="anneal")) == pytest.approx(0.015)  # at c = 0.9
    assert truth.effect(config("sentihood", schema="prop")) == pytest.approx(0.01)
    assert truth.effect(config("sst2", "pos", "sentihood", schema="square")) == 0.0  # another set: no bonus
    assert truth.effect(config("sst2", "pos", schema="prop")) == 0.0  # another schema: no bonus
    # the lr curve: -1 pp per decade squared from 3e-5, for every config alike
    assert truth.effect(config(lr=3e-4)) == pytest.approx(-0.01)
    assert truth.effect(config("sst2", "pos", schema="square", lr=3e-6)) == pytest.approx(0.01)


def test_a_seeds_luck_is_shared_by_its_epochs_and_by_dev_and_test(tmp_path):
    truth = load_truth(truth_file(tmp_path, "[noise]\nseed_sd = 0.01\neval_sd = 0.0\n[learning]\ngap = 0.04\n"))
    c = config(epochs=3)
    scores = [truth.epoch_metrics(c, "k", 7, e) for e in (1, 2, 3)]
    final = scores[-1]["semeval/dev/acc_4way"]
    assert final == scores[-1]["semeval/test/acc_4way"]  # no evaluation noise: dev and test carry the same luck
    assert [s["semeval/dev/acc_4way"] for s in scores] == pytest.approx([final - 0.04, final - 0.02, final])
    assert final != truth.true_score(c, "acc_4way")  # the luck moved it
    again = load_truth(truth_file(tmp_path, "[noise]\nseed_sd = 0.01\neval_sd = 0.0\n[learning]\ngap = 0.04\n"))
    assert again.epoch_metrics(c, "k", 7, 3) == scores[-1]  # a repeated or resumed trial: the same values


def test_luck_and_noise_have_the_truths_spread():
    truth = load_truth(resolve_truth("null"))
    c = config()
    luck = np.array([truth.luck(f"config {i}", 1) for i in range(2000)])
    assert abs(luck.std() - 0.01) < 0.001 and abs(luck.mean()) < 0.001
    noise = np.array([truth.score(c, f"c{i}", 1, 4, "dev", "semeval", "acc_4way", 0.85) for i in range(2000)])
    noise -= 0.85 + np.array([truth.luck(f"c{i}", 1) for i in range(2000)])
    assert abs(noise.std() - 0.005) < 0.0005  # evaluation noise, on top of the luck


def test_the_reported_keys_are_the_real_loops(data_dir):
    """Every metric name a built-in truth gives is one the real task computes, and the training keys
    are those of ``Trainer.run_epoch``."""
    from trainables.tasks import get_task

    for name in builtin_truths():
        truth = load_truth(resolve_truth(name))
        for task_name, metrics in truth.tasks.items():
            task = get_task(task_name, data_dir, "holdout")
            rows = task.examples("dev")[: task.group_size * 4]
            probs = np.full((len(rows), task.num_labels), 1.0 / task.num_labels)
            if task.kind == "tagging":
                probs = None
            real = set(task.metrics(probs, rows)) if probs is not None else {"token_acc"}
            assert set(metrics) == real, (name, task_name)
    truth = load_truth(resolve_truth("null"))
    keys = set(truth.epoch_metrics(config("sst2", "pos", epochs=2, evaluate_test=True), "k", 1, 2))
    assert {"train/loss", "train/seconds", "train/samples_per_second", "sampling/p/sst2", "sampling/steps/pos"} <= keys
    assert {"train/sst2/loss", "semeval/dev/acc_4way", "semeval/test/acc_4way", "pos/test/token_acc"} <= keys
    first = set(truth.epoch_metrics(config("sst2", epochs=2, evaluate_test=True), "k", 1, 1))
    assert not any("/test/" in k for k in first)  # test only after the last epoch, as the loop does


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[noise]\nseed_sd = -1\n", "noise.seed_sd = -1: expected >= 0"),
        ("[noise]\nsed_sd = 0.1\n", "noise.sed_sd: unknown key"),
        ("colour = 1\n", "colour: unknown key"),
        ("[lr]\npeak = 0\n", "lr.peak = 0.0: expected a positive learning rate"),
        ('[[bonus]]\nauxiliary = ["sst2"]\nschemas = ["cube"]\ngain = 0.1\n', "bonus[0].schemas"),
        ("[[bonus]]\nauxiliary = []\ngain = 0.1\n", "bonus[0].auxiliary: expected a non-empty list"),
        ('[time]\nscale = "fast"\n', "time.scale = 'fast': expected a finite number"),
        ("[learning\n", "not TOML"),
    ],
)
def test_a_bad_truth_file_is_refused_naming_the_key(tmp_path, text, expected):
    with pytest.raises(TruthError, match="truth.toml") as info:
        load_truth(truth_file(tmp_path, text))
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_truth_without_its_primarys_scores_is_refused(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('primary = "semeval"\n[tasks.sst2]\nacc = 0.9\n')
    with pytest.raises(TruthError, match=r"t.toml: tasks.semeval: expected a table"):
        load_truth(str(path))
    with pytest.raises(TruthError, match="--simulate nothing: no such truth file; expected .* null"):
        resolve_truth("nothing")


def test_the_simulated_trainable_imports_no_torch():
    code = (
        "import sys, search.simulation.trainable as t; from search.simulation.truth import load_truth, resolve_truth;"
        "load_truth(resolve_truth('three_better')); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_strategies_of_absa_plus_have_effects_only_where_they_act():
    """Issue 19's dimensions in the truth model: every config the absa-plus space draws scores, and a
    strategy's gain lands only where the canonical config says it acts."""
    import dataclasses

    import optuna

    from search.study.config import SearchConfig
    from search.study.kind import TrainedTrials
    from search.study.plan import plan_offline
    from spaces import apply_choices, canonical, define_space

    truth = load_truth(resolve_truth("strategies"))
    plan = plan_offline(SearchConfig("absa-plus", preset="full"), TrainedTrials())
    study, base = plan.study, plan.base
    sampler = optuna.samplers.RandomSampler(seed=0)
    opt = optuna.create_study(sampler=sampler)
    seen = set()
    for _ in range(60):
        trial = opt.ask()
        constants = define_space(trial, study=study) or {}
        config = canonical(apply_choices(base, {**trial.params, **constants}, study))
        score = truth.true_score(config, "acc_4way")
        assert 0.0 < score < 1.0
        seen.add(config.sampling.schema)
        opt.tell(trial, score)
    assert "bandit" in seen
    multitask = base.with_(tasks=(base.primary, "sst2"), sampling=SamplingConfig(schema="prop"))
    pcgrad = multitask.with_(optim=dataclasses.replace(multitask.optim, gradients="pcgrad", step_mode="all"))
    weighted = multitask.with_(optim=dataclasses.replace(multitask.optim, loss_weighting="uncertainty"))
    assert truth.effect(weighted) - truth.effect(multitask) == pytest.approx(0.005)
    assert truth.effect(pcgrad) - truth.effect(multitask) == pytest.approx(-0.005)  # all tasks per step; pcgrad 0
    decayed = multitask.with_(optim=dataclasses.replace(multitask.optim, layer_decay=0.9))
    assert truth.effect(decayed) - truth.effect(multitask) == pytest.approx(0.005)
    alone = multitask.with_(tasks=(base.primary,))
    single = alone.with_(optim=dataclasses.replace(alone.optim, loss_weighting="uncertainty"))
    assert truth.effect(single) == truth.effect(alone)  # acts beside auxiliaries only


def test_a_bonus_matches_sets_containing_tasks_exponent_and_anneal_c_ranges(tmp_path):
    text = (
        '[[bonus]]\ncontains = ["sst2", "pos"]\ngain = 0.01\n'
        "[[bonus]]\nexponent = [0.5, 1.5]\ngain = 0.002\n"
        '[[bonus]]\ncontains = ["sentihood"]\nexponent = [0.6, 3]\ngain = -0.02\n'
        "[[bonus]]\nanneal_c = [0.5, 0.8]\ngain = 0.004\n"
    )
    truth = load_truth(truth_file(tmp_path, text))
    assert truth.effect(config("sst2", "pos", schema="square")) == pytest.approx(0.01)
    assert truth.effect(config("sst2", "pos", "sentihood", schema="sqrt")) == pytest.approx(0.012)  # 0.5 in range
    assert truth.effect(config("sentihood", schema="power", exponent=0.7)) == pytest.approx(0.002 - 0.02)
    assert truth.effect(config("sentihood", schema="random")) == 0.0  # exponent 0: no range holds
    assert truth.effect(config("sst2", schema="sequential")) == 0.0  # no exponent at all
    annealed = config("pos", schema="anneal").with_(sampling=SamplingConfig(schema="anneal", anneal_c=0.6))
    assert truth.effect(annealed) == pytest.approx(0.004)
    assert truth.effect(config("pos", schema="anneal")) == 0.0  # c 0.9 (the default) is outside
    assert truth.effect(config()) == 0.0  # a bonus never applies to the single-task config


def test_curves_give_each_family_its_own_deficit_interpolated_over_epochs(tmp_path):
    text = (
        '[[curve]]\nschemas = ["anneal"]\ndeficit = [0.03, 0.01, 0.0]\n'
        "[[curve]]\nsingle_task = true\ndeficit = [0.02]\n"
        "[learning]\ngap = 0.04\n"
    )
    truth = load_truth(truth_file(tmp_path, text))
    annealed = config("sst2", schema="anneal", epochs=4)
    assert [truth.deficit(annealed, e) for e in (1, 2, 3, 4)] == pytest.approx([0.03, 0.01, 0.0, 0.0])
    assert truth.deficit(annealed.with_(epochs=2), 1) == pytest.approx(0.01)  # half way: the table's epoch 2
    assert truth.deficit(annealed.with_(epochs=8), 1) == pytest.approx(0.03)  # before its first point
    assert truth.deficit(annealed.with_(epochs=8), 3) == pytest.approx(0.02)  # between its epochs 1 and 2
    assert [truth.deficit(config(epochs=4), e) for e in (1, 3, 4)] == pytest.approx([0.02, 0.01, 0.0])
    assert truth.deficit(config("sst2", epochs=3), 1) == pytest.approx(0.04)  # no table: the [learning] gap


def test_collapse_sends_some_seeds_to_the_majority_and_the_true_score_counts_them(tmp_path):
    text = "[[collapse]]\nlr_above = 1e-4\nprobability = 0.25\n[noise]\nseed_sd = 0.0\neval_sd = 0.0\n"
    text += "[majority]\nacc_4way = 0.5\n"
    truth = load_truth(truth_file(tmp_path, text))
    high, low = config(lr=2e-4), config(lr=5e-5)
    assert truth.true_score(low, "acc_4way") == pytest.approx(0.8)
    assert truth.true_score(high, "acc_4way") == pytest.approx(0.75 * 0.8 + 0.25 * 0.5)
    finals = [truth.epoch_metrics(high, f"k{i}", s, 4)["semeval/dev/acc_4way"] for i in range(50) for s in (1, 2)]
    assert set(np.round(finals, 6)) == {0.5, 0.8} and abs(np.mean(np.array(finals) == 0.5) - 0.25) < 0.1
    a_seed = [truth.epoch_metrics(high, "k0", s, e)["semeval/dev/acc_4way"] for s in range(20) for e in (1, 4)]
    assert all((a_seed[i] == 0.5) == (a_seed[i + 1] == 0.5) for i in range(0, 40, 2))  # every epoch or none
    assert {truth.epoch_metrics(low, f"k{i}", 1, 4)["semeval/dev/acc_4way"] for i in range(50)} == {0.8}


def test_collapse_can_be_a_property_of_some_configs_and_fail_above_the_majority(tmp_path):
    text = '[[collapse]]\ncontains = ["pos"]\nprobability = 0.5\nkeeps = 0.25\n'
    text += "[noise]\nseed_sd = 0.0\neval_sd = 0.0\n[majority]\nacc_4way = 0.5\n"
    truth = load_truth(truth_file(tmp_path, text))
    prone, safe, alone = config("pos", "sst2"), config("sst2"), config()
    assert truth.collapse_chance(prone) == 0.5 and truth.collapse_chance(safe) == truth.collapse_chance(alone) == 0
    clean = truth.true_score(safe, "acc_4way")
    failed = 0.5 + 0.25 * (clean - 0.5)  # keeps a quarter of its gain over the majority
    assert truth.true_score(prone, "acc_4way") == pytest.approx(0.5 * clean + 0.5 * failed)
    finals = {round(truth.epoch_metrics(prone, f"k{i}", 1, 4)["semeval/dev/acc_4way"], 6) for i in range(40)}
    assert finals == {round(clean, 6), round(failed, 6)}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[[bonus]]\ncontains = "sst2"\ngain = 0.1\n', "bonus[0].contains: expected a non-empty list of names"),
        ("[[bonus]]\nexponent = [2, 1]\ngain = 0.1\n", "bonus[0].exponent = [2, 1]: expected low <= high"),
        ("[[bonus]]\nanneal_c = 0.5\ngain = 0.1\n", "bonus[0].anneal_c = 0.5: expected [low, high]"),
        ("[[bonus]]\ncontain = []\ngain = 0.1\n", "bonus[0].contain: unknown key"),
        ('[[bonus]]\ncontains = ["sst2"]\n', "bonus[0].gain: missing"),
        ("[[curve]]\ndeficit = []\n", "curve[0].deficit = []: expected a non-empty list of numbers"),
        ('[[curve]]\ndeficit = ["a"]\n', "curve[0].deficit = 'a': expected a finite number"),
        ('[[curve]]\nsingle_task = true\nschemas = ["prop"]\ndeficit = [0.1]\n', "curve[0].single_task: expected no"),
        ("[[curve]]\nsingle_task = 1\ndeficit = [0.1]\n", "curve[0].single_task = 1: expected true or false"),
        ("[[collapse]]\nlr_above = 1e-4\n", "collapse[0].probability: missing; expected probability = p"),
        ("[[collapse]]\nprobability = 0.1\nkeeps = 1\n", "collapse[0].keeps = 1.0: expected in [0, 1)"),
        ("[[collapse]]\nprobability = 0.1\nlr = 1\n", "collapse[0].lr: unknown key"),
        ("[[collapse]]\nlr_above = 1e-4\nprobability = 2\n[majority]\nacc_4way = 0.5\n", "probability = 2.0"),
        ("[[collapse]]\nlr_above = 0\nprobability = 0.1\n", "collapse[0].lr_above = 0.0: expected a positive"),
        ("[[collapse]]\nlr_above = 1e-4\nprobability = 0.1\n", "majority.acc_4way: expected with [[collapse]]"),
        ("[curve]\ndeficit = [0.1]\n", "curve: expected [[curve]] tables"),
    ],
)
def test_a_bad_new_key_is_refused_naming_the_file_and_key(tmp_path, text, expected):
    with pytest.raises(TruthError, match="truth.toml") as info:
        load_truth(truth_file(tmp_path, text))
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_the_suite_models_what_its_comments_say():
    """additive: marginal gains; late_bloomer: the best anneals and starts slower; divergence: high lr collapses."""
    additive = load_truth(resolve_truth("additive"))
    assert additive.effect(config("sst2", schema="square")) > 0 > additive.effect(config("sentihood", schema="square"))
    late = load_truth(resolve_truth("late_bloomer"))
    best = config("sst2", schema="anneal", epochs=4).with_(sampling=SamplingConfig(schema="anneal", anneal_c=0.8))
    fast = config("sst2", "pos", schema="square", epochs=4)
    assert late.true_score(best, "acc_4way") - late.true_score(fast, "acc_4way") == pytest.approx(0.01)
    first = [late.true_score(c, "acc_4way") - late.deficit(c, 1) for c in (best, fast, config("pos", epochs=4))]
    assert first == pytest.approx([0.825, 0.83, 0.82])  # after epoch 1: 0.5 pp above a null config (2 pp at the end)
    other_anneal = config("pos", schema="anneal", epochs=4)
    assert late.true_score(other_anneal, "acc_4way") - late.deficit(other_anneal, 1) == pytest.approx(0.805, abs=1e-3)
    divergence = load_truth(resolve_truth("divergence"))
    high, low = (divergence.true_score(config(lr=lr), "acc_4way") for lr in (6e-5, 3e-5))
    assert high < low - 0.05
