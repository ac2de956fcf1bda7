import json
from pathlib import Path

import optuna
import pytest

from spaces import (
    apply_choices,
    baseline_choices,
    canonical,
    canonical_key,
    config_label,
    define_space,
    get_study,
    run_name,
    thesis_grid,
)
from spaces.studies import Range, Study
from trainables.config import ConfigError, SamplingConfig, TrainConfig

ABSA = get_study("absa")
BASE = TrainConfig(tasks=("semeval",), primary="semeval", epochs=2)


def point(aux=(), schema="prop", **extra):
    return {**{f"aux/{t}": t in aux for t in ABSA.candidates}, "schema": schema, **extra}


def key(aux=(), schema="prop", **extra):
    return canonical_key(apply_choices(BASE, point(aux, schema, **extra), ABSA))


def test_single_task_collapses_every_schema():
    keys = {
        key((), s, **({"exponent": 1.7} if s == "power" else {"anneal_c": 0.3} if s == "anneal" else {}))
        for s in ABSA.schemas
    }
    assert len(keys) == 1
    assert "semeval single" in keys.pop()


def test_anneal_c_zero_is_prop_and_named_exponents():
    assert key(("sst2",), "anneal", anneal_c=0.0) == key(("sst2",), "prop")
    assert key(("sst2",), "power", exponent=2.0) == key(("sst2",), "square")
    assert key(("sst2",), "power", exponent=0.0) == key(("sst2",), "random")
    assert key(("sst2",), "anneal", anneal_c=0.5) != key(("sst2",), "prop")
    assert key(("sst2",), "sequential") != key(("sst2",), "random")


def test_equal_weights_make_every_exponent_uniform():
    equal = TrainConfig(
        tasks=("semeval", "sst2"),
        primary="semeval",
        sampling=SamplingConfig(schema="square", weights=(("semeval", 2.0),)),
    )
    assert canonical(equal).sampling.schema == "random"
    for schema in ("prop", "sqrt", "anneal"):
        c = TrainConfig(
            tasks=equal.tasks, primary="semeval", sampling=SamplingConfig(schema=schema, weights=(("semeval", 2.0),))
        )
        assert canonical_key(c) == canonical_key(equal)
    seq = TrainConfig(tasks=equal.tasks, primary="semeval", sampling=SamplingConfig(schema="sequential"))
    assert canonical_key(seq) != canonical_key(equal)


def test_builtin_keys_are_as_recorded():
    # studies recorded these keys: a resumed study deduplicates against them
    assert key(("sst2",), "sequential") == "semeval+sst2 sequential lr=2e-05 wu=0.1 bs=24 #e5945b99e5"
    assert (
        key(("pos", "sentihood"), "anneal", anneal_c=0.4, lr=3e-5)
        == "semeval+pos+sentihood anneal(c=0.4) lr=3e-05 wu=0.1 bs=24 #9690b82800"
    )
    nli = TrainConfig(
        tasks=("semeval:NLI_M", "sst2", "sentihood:NLI_M"),
        primary="semeval:NLI_M",
        sampling=SamplingConfig(schema="power", exponent=1.3),
    )
    assert canonical_key(nli) == "semeval:NLI_M+sst2+sentihood:NLI_M power(a=1.3) lr=2e-05 wu=0.1 bs=24 #fdca6cb611"
    assert canonical_key(nli).startswith(config_label(canonical(nli)) + " #")


def csv_task(folder: Path, name: str) -> str:
    """The spec of a ``csv:`` task declared as ``name`` in ``folder/task.json`` (its data is never read)."""
    folder.mkdir()
    config = {"name": name, "labels": ["a", "b"], "train": "train.csv", "dev": "dev.csv", "test": "test.csv"}
    (folder / "task.json").write_text(json.dumps(config))
    return f"csv:{folder / 'task.json'}"


def test_csv_tasks_are_labelled_by_their_declared_names(tmp_path):
    # a study of three task files that share a file name: only the names they declare tell them apart
    reviews, tags, pairs = (csv_task(tmp_path / name, name) for name in ("reviews", "tags", "pairs"))
    study = Study("mine", reviews, (tags, pairs), "acc")
    base = TrainConfig(tasks=(reviews,), primary=reviews, epochs=2)
    both = canonical(
        apply_choices(base, {f"aux/{tags}": True, f"aux/{pairs}": True, "schema": "power", "exponent": 5.2}, study)
    )
    one = canonical(apply_choices(base, {f"aux/{tags}": False, f"aux/{pairs}": True, "schema": "sqrt"}, study))
    assert run_name(2, both, False) == "t02 tags+pairs power(a=5.2)"
    assert run_name(3, one, False) == "t03 pairs sqrt"
    assert run_name(0, base, True) == "t00 baseline"
    assert config_label(both) == "reviews+tags+pairs power(a=5.2) lr=2e-05 wu=0.1 bs=24"
    assert canonical_key(both).startswith("reviews+tags+pairs power(a=5.2) lr=2e-05 wu=0.1 bs=24 #")
    assert both.tasks == (reviews, tags, pairs)  # the config keeps the specs: they name the files
    assert study.primary_name == "reviews" and study.objective == "reviews/dev/acc/mean"


def test_anneal_over_one_epoch_is_prop():
    one = BASE.with_(epochs=1)
    anneal = canonical_key(apply_choices(one, point(("sst2",), "anneal", anneal_c=0.7), ABSA))
    assert anneal == canonical_key(apply_choices(one, point(("sst2",), "prop"), ABSA))
    assert key(("sst2",), "anneal", anneal_c=0.7) != key(("sst2",), "prop")  # two epochs: a(1) = 0.65


def test_weights_count_relative_to_each_other():
    tasks = ("semeval", "sst2", "pos")
    implicit = TrainConfig(tasks=tasks, primary="semeval", sampling=SamplingConfig(schema="sqrt"))
    spelled = TrainConfig(
        tasks=tasks,
        primary="semeval",
        sampling=SamplingConfig(schema="sqrt", weights=(("semeval", 4.0), ("sst2", 2.0), ("pos", 2.0))),
    )
    scaled = TrainConfig(
        tasks=tasks,
        primary="semeval",
        sampling=SamplingConfig(schema="sqrt", weights=(("semeval", 8.0), ("sst2", 4.0), ("pos", 4.0))),
    )
    other = TrainConfig(tasks=tasks, primary="semeval", sampling=SamplingConfig(schema="sqrt", weights=(("pos", 1.0),)))
    assert canonical_key(implicit) == canonical_key(spelled) == canonical_key(scaled) != canonical_key(other)
    # and the canonical config trains with the same distribution
    from trainables.sampling import make_sampler

    p = [make_sampler(c.sampling, c.task_weights(), 2, 0).probabilities(0) for c in (implicit, canonical(scaled))]
    assert p[0] == pytest.approx(p[1])


def test_key_ignores_seed_but_not_training_fields():
    c = apply_choices(BASE, point(("pos",), "sqrt"), ABSA)
    assert canonical_key(c) == canonical_key(c.with_(seed=7, data_dir="/elsewhere"))
    assert canonical_key(c) != canonical_key(c.with_(lr=3e-5))
    assert canonical_key(c) != canonical_key(c.with_(epochs=3))


def test_thesis_grid_is_deduplicated_with_baseline_first():
    grid = thesis_grid(ABSA, BASE)
    # 8 subsets containing the primary x 6 schemas; the single-task subset collapses to 1
    assert len(grid) == 1 + 7 * 6
    keys = [canonical_key(apply_choices(BASE, p, ABSA)) for p in grid]
    assert keys[0] == canonical_key(apply_choices(BASE, baseline_choices(ABSA), ABSA))
    assert len(set(keys)) == len(keys)


def test_define_by_run_space_is_conditional():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen, singles = set(), 0
    for _ in range(100):
        trial = study.ask()
        assert define_space(trial, ABSA) is None
        p = trial.params
        if not p["multitask"]:  # single task: no auxiliary, no schema; lr and warm-up still searched
            assert not any(k.startswith(("aux/", "weight/")) or k == "schema" for k in p) and "lr" in p
            singles += 1
            study.tell(trial, 0.5)
            continue
        assert ("exponent" in p) == (p["schema"] == "power")
        assert ("anneal_c" in p) == (p["schema"] == "anneal")
        if "exponent" in p:
            assert 0.0 <= p["exponent"] <= 3.0
        assert 1e-5 <= p["lr"] <= 1e-4
        assert not any(k.startswith("weight/") for k in p)  # fixed weights: not a dimension
        seen.add(p["schema"])
        study.tell(trial, 0.5)
    assert seen == set(ABSA.schemas)
    assert 35 <= singles <= 65  # even odds: the single-task side gets half the tuning


@pytest.mark.parametrize("candidates", [("sst2",), ("sst2", "pos", "sentihood")])
def test_multitask_points_always_train_an_auxiliary_at_even_odds(candidates):
    study_def = Study("odds", "semeval", candidates, "acc_4way")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    trained = []
    for _ in range(400):
        trial = study.ask()
        define_space(trial, study_def)
        config = apply_choices(BASE, trial.params, study_def)
        assert (len(config.tasks) > 1) == trial.params["multitask"]  # no empty multitask draw
        trained.append(len(config.tasks) > 1)
        study.tell(trial, 0.5)
    assert 0.43 <= sum(trained) / len(trained) <= 0.57  # even odds: 400 draws, sd 0.025


def test_old_multitask_points_without_an_auxiliary_still_train_single_task():
    # configs of experiments started before aux_only: multitask with every flag off trained the primary alone
    old = {"multitask": True, **{f"aux/{t}": False for t in ABSA.candidates}, "schema": "square", "lr": 3e-5}
    assert apply_choices(BASE, old, ABSA).tasks == ("semeval",)
    assert apply_choices(BASE, {**old, "aux_only": "pos"}, ABSA).tasks == ("semeval", "pos")


def test_apply_choices_keeps_candidate_order():
    c = apply_choices(BASE, point(("sentihood", "sst2"), "anneal", anneal_c=0.4, lr=3e-5), ABSA)
    assert c.tasks == ("semeval", "sst2", "sentihood")
    assert c.sampling.anneal_c == 0.4 and c.lr == 3e-5


@pytest.mark.parametrize(
    "bad",
    [
        lambda: Study("x", "semeval", ("sst2",), "acc_4way", exponent=Range(2.0, 1.0)),
        lambda: Study("x", "semeval", ("sst2",), "acc_4way", anneal_c=Range(0.0, 1.5)),
        lambda: Study("x", "semeval", ("semeval",), "acc_4way"),
        lambda: Study("x", "semeval", ("sst2",), "acc_4way", schemas=("cubic",)),
        lambda: Study("x", "semeval", ("sst2",), "acc_4way", lr=Range(0.0, 1e-4, log=True)),
        lambda: get_study("nope"),
    ],
)
def test_bad_study_rejected(bad):
    with pytest.raises(ConfigError):
        bad()


SEARCHED = Study("w", "semeval", ("sst2", "pos"), "acc_4way", weight=Range(0.125, 8.0, log=True))


def weighted(schema, weights, **extra):
    """A point of ``SEARCHED``: auxiliaries with their weights relative to the primary."""
    return apply_choices(
        BASE,
        {
            **{f"aux/{t}": t in weights for t in SEARCHED.candidates},
            "schema": schema,
            **{f"weight/{t}": w for t, w in weights.items()},
            **extra,
        },
        SEARCHED,
    )


def test_searched_weights_collapse_with_the_exponent():
    # w with exponent a and w**a with exponent 1 give one distribution: one key
    assert canonical_key(weighted("power", {"sst2": 0.3}, exponent=1.7)) == canonical_key(
        weighted("prop", {"sst2": 0.3**1.7})
    )
    assert (
        canonical_key(weighted("square", {"sst2": 0.3, "pos": 2.5}))
        == canonical_key(weighted("prop", {"sst2": 0.09, "pos": 6.25}))
        == canonical_key(weighted("power", {"sst2": 0.3, "pos": 2.5}, exponent=2.0))
    )
    # ... and with the tier weights (primary 4, auxiliaries 2) of a study that does not search them
    assert canonical_key(weighted("prop", {"sst2": 0.25})) == key(("sst2",), "square")
    assert canonical_key(weighted("sqrt", {"sst2": 0.25})) == key(("sst2",), "prop")
    assert canonical(weighted("prop", {"sst2": 0.25})).sampling.schema == "square"  # the tier form keeps its name
    # weights equal to the primary's: uniform, whatever the exponent
    assert canonical_key(weighted("power", {"sst2": 1.0, "pos": 1.0}, exponent=2.6)) == key(("sst2", "pos"), "random")
    # what does differ stays apart: other weights, and anneal (its exponent changes per epoch)
    assert canonical_key(weighted("prop", {"sst2": 0.3})) != canonical_key(weighted("prop", {"sst2": 0.4}))
    assert canonical_key(weighted("anneal", {"sst2": 0.3}, anneal_c=0.5)) != canonical_key(
        weighted("anneal", {"sst2": 0.09}, anneal_c=0.5)
    )


@pytest.mark.parametrize(
    "schema,weights,extra",
    [
        ("power", {"sst2": 0.3}, {"exponent": 1.7}),
        ("sqrt", {"sst2": 0.2, "pos": 3.0}, {}),
        ("power", {"sst2": 5.0, "pos": 0.7}, {"exponent": 0.35}),
        ("anneal", {"sst2": 0.6, "pos": 0.2}, {"anneal_c": 0.8}),
    ],
)
def test_canonical_config_trains_the_same_distribution_every_epoch(schema, weights, extra):
    from trainables.sampling import make_sampler

    c = weighted(schema, weights, **extra)
    for epoch in range(c.epochs):
        p = [make_sampler(x.sampling, x.task_weights(), x.epochs, 0).probabilities(epoch) for x in (c, canonical(c))]
        assert p[0] == pytest.approx(p[1], rel=1e-9)


def test_space_searches_the_weights_of_chosen_auxiliaries():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    searched = 0
    for _ in range(60):
        trial = study.ask()
        define_space(trial, SEARCHED)
        p = trial.params
        for task in SEARCHED.candidates:
            chosen = p.get(f"aux/{task}", False) or p.get("aux_only") == task
            reads = chosen and p["schema"] not in ("sequential", "random")
            assert (f"weight/{task}" in p) == reads
            if reads:
                assert 0.125 <= p[f"weight/{task}"] <= 8.0
                searched += 1
        study.tell(trial, 0.5)
    assert searched
