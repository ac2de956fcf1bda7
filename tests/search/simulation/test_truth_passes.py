"""Truths whose learning curve is over the primary's passes (issue 39): ``[sizes]``, curves over passes,
failed starts that recover (``[[transient]]``), and the built-in ``dilution``; numbers worked by hand.

The small truth here: SemEval 100 training rows, SST-2 300, PoS 200, batch 10, so an epoch is the mean of
10, 30 and 20 batches: 10 steps alone (one pass over the primary), 20 with SST-2 (round robin: 10 of them
the primary's, one pass), 20 with SST-2 and PoS (round robin: 6.67 of them, 2/3 of a pass).
"""

from pathlib import Path

import numpy as np
import pytest

from search.simulation.truth import TruthError, load_truth, resolve_truth
from trainables.config import SamplingConfig, TrainConfig
from trainables.exposure import PRIMARY_PASSES, primary_passes
from trainables.results import DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL
from trainables.rows import training_sizes

SIZES = "[sizes]\nsemeval = 100\nsst2 = 300\npos = 200\n"
# 4, 2 and 0 pp short of converged after 0.5, 1 and 2 passes; the majority (an untrained model) at 0.5
PASSES = '[learning]\nunit = "passes"\npasses = [0.5, 1.0, 2.0]\ndeficit = [0.04, 0.02, 0.0]\n'
QUIET = "[noise]\nseed_sd = 0.0\neval_sd = 0.0\n[majority]\nacc_4way = 0.5\n"
OBJECTIVE = "semeval/dev/acc_4way/mean"
FLAGS = (DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL)


def truth_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "truth.toml"
    path.write_text('name = "t"\nprimary = "semeval"\n' + text + "\n[tasks.semeval]\nacc_4way = 0.8\nacc_3way = 0.85\n")
    return str(path)


def config(*auxiliary: str, schema: str = "sequential", epochs: int = 2, **kw) -> TrainConfig:
    base = dict(tasks=("semeval", *auxiliary), primary="semeval", sampling=SamplingConfig(schema=schema))
    return TrainConfig(**{**base, "lr": 3e-5, "batch_size": 10, "epochs": epochs, **kw})


@pytest.fixture
def passes_truth(tmp_path):
    return load_truth(truth_file(tmp_path, PASSES + SIZES + QUIET + "[auxiliary]\nsst2 = 0.005\npos = 0.005\n"))


def test_a_configs_passes_are_the_exposure_modules_at_the_truths_sizes(passes_truth):
    sizes = {"semeval": 100, "sst2": 300, "pos": 200}
    for c in (config(), config("sst2"), config("sst2", "pos"), config("sst2", schema="square")):
        for point in (0.2, 1, 2):
            assert passes_truth.passes(c, point) == primary_passes(c, {t: sizes[t] for t in c.tasks}, point)
    diluted = config("sst2", "pos")
    assert [passes_truth.passes(diluted, e) for e in (1, 2)] == pytest.approx([2 / 3, 4 / 3])
    assert [passes_truth.passes(config(), e) for e in (1, 2)] == pytest.approx([1.0, 2.0])
    assert passes_truth.passes(config("sst2"), 1) == pytest.approx(1.0)  # half of 20 steps: one pass
    # square's 16:4 of SST-2's 20 steps is 1.6 passes: a schema that favours the primary sees more of it
    assert passes_truth.passes(config("sst2", schema="square"), 1) == pytest.approx(1.6)


def test_the_deficit_interpolates_between_the_points_and_holds_the_last_beyond(passes_truth):
    diluted = config("sst2", "pos", epochs=4)
    # 2/3 of a pass: a third of the way from 0.5 (4 pp) to 1 (2 pp); 4/3: a third from 1 (2 pp) to 2 (0)
    assert passes_truth.deficit(diluted, 1, "acc_4way") == pytest.approx(0.04 - 0.02 / 3)
    assert passes_truth.deficit(diluted, 2, "acc_4way") == pytest.approx(0.02 - 0.02 / 3)
    assert passes_truth.deficit(diluted, 3, "acc_4way") == pytest.approx(0.0)  # 2 passes: the last point
    assert passes_truth.deficit(diluted, 4, "acc_4way") == 0.0  # 8/3 passes: held
    assert [passes_truth.deficit(config(epochs=3), e) for e in (1, 2, 3)] == pytest.approx([0.02, 0.0, 0.0])


def test_below_the_first_point_the_score_rises_linearly_from_the_majoritys(passes_truth):
    alone = config()
    # a screen point a fifth into epoch 1: 2 of 10 batches, 0.2 passes, 0.4 of the way to the first point (0.5)
    assert passes_truth.passes(alone, 0.2) == pytest.approx(0.2)
    at_first = 0.8 - 0.04  # the first point's score
    assert passes_truth.deficit(alone, 0.2, "acc_4way") == pytest.approx(0.8 - (0.5 + 0.4 * (at_first - 0.5)))
    seed = passes_truth.epoch_metrics(alone, "k", 1, 0.2)
    assert seed["semeval/dev/acc_4way"] == pytest.approx(0.5 + 0.4 * 0.26)  # no noise, no luck: 0.604
    assert passes_truth.deficit(alone, 0.2, "acc_3way") == pytest.approx(0.04)  # no majority: the first point's
    assert passes_truth.deficit(alone, 0.2, "") == pytest.approx(0.04)  # an auxiliary's score


def test_the_true_score_counts_the_deficit_left_after_the_last_epoch(tmp_path, passes_truth):
    alone, diluted = config(), config("sst2", "pos")
    assert passes_truth.effect(diluted) == pytest.approx(0.01)  # its gain at convergence
    assert passes_truth.true_score(alone, "acc_4way") == pytest.approx(0.8)  # 2 passes: converged
    # 4/3 passes after its two epochs: 1.33 pp short, which its 1 pp gain does not make up
    assert passes_truth.true_score(diluted, "acc_4way") == pytest.approx(0.81 - 0.04 / 3)
    assert passes_truth.true_score(diluted, "acc_4way") < passes_truth.true_score(alone, "acc_4way")
    assert passes_truth.true_score(diluted.with_(epochs=4), "acc_4way") == pytest.approx(0.81)  # 8/3 passes
    over_epochs = load_truth(truth_file(tmp_path, "[learning]\ngap = 0.04\n[auxiliary]\nsst2 = 0.01\npos = 0.005\n"))
    for c in (alone, diluted, config("sst2", epochs=1)):
        assert over_epochs.true_score(c, "acc_4way") == pytest.approx(0.8 + over_epochs.effect(c))
    assert over_epochs.true_score(diluted, "acc_4way") == pytest.approx(0.815)


def test_a_curve_over_passes_can_be_one_configs_and_over_epochs_anothers(tmp_path):
    text = (
        SIZES
        + QUIET
        + "[learning]\ngap = 0.03\n"  # the shared curve over epochs
        + '[[curve]]\nsingle_task = true\nunit = "passes"\npasses = [1.0, 2.0]\ndeficit = [0.02, 0.0]\n'
    )
    truth = load_truth(truth_file(tmp_path, text))
    assert truth.deficit(config(epochs=4), 1) == pytest.approx(0.02)  # 1 pass
    assert truth.deficit(config(epochs=4), 2) == 0.0
    assert truth.deficit(config("sst2", epochs=4), 1) == pytest.approx(0.03)  # the [learning] gap over epochs
    assert truth.true_score(config(epochs=1), "acc_4way") == pytest.approx(0.78)  # 1 pass of the 2 it needs
    inherited = PASSES + SIZES + QUIET + '[[curve]]\nschemas = ["sequential"]\npasses = [1.0]\ndeficit = [0.01]\n'
    inherited += '[[curve]]\nschemas = ["prop"]\nunit = "epochs"\ndeficit = [0.03]\n'
    truth = load_truth(truth_file(tmp_path, inherited))
    # 2/3 pass, short of its only point: 2/3 of the way up from the majority (0.3 below) to 1 pp below
    assert truth.deficit(config("sst2", "pos"), 1, "acc_4way") == pytest.approx(0.3 / 3 + 0.01 * 2 / 3)
    assert truth.deficit(config("sst2", "pos"), 2) == pytest.approx(0.01)  # held beyond its only point
    assert truth.deficit(config("sst2", schema="prop"), 1) == pytest.approx(0.03)  # its own unit: epochs
    assert truth.deficit(config("sst2", schema="square"), 1) == pytest.approx(0.008)  # 1.6 passes, [learning]'s


def test_every_trial_report_carries_its_passes_once(passes_truth):
    diluted = config("sst2", "pos")
    report = passes_truth.trial_metrics(diluted, "k", [1, 2, 3], 1, OBJECTIVE)
    assert report[PRIMARY_PASSES] == pytest.approx(2 / 3)
    assert not any(k.startswith(PRIMARY_PASSES + "/") for k in report)  # the trial's, not a seed mean
    assert passes_truth.trial_metrics(diluted, "k", [1], 0.2, OBJECTIVE)[PRIMARY_PASSES] == pytest.approx(
        passes_truth.passes(diluted, 0.2)
    )
    assert PRIMARY_PASSES not in passes_truth.epoch_metrics(diluted, "k", 1, 1)  # one seed's: not there


def test_sizes_a_truth_does_not_list_are_read_from_the_studys_data(tmp_path, data_dir):
    truth = load_truth(truth_file(tmp_path, PASSES + "[sizes]\nsemeval = 100\n"))
    c = config("sst2", data_dir=str(data_dir), max_train_examples=200)
    assert truth.sizes_of(c) == {"semeval": 100, "sst2": training_sizes(c)["sst2"]} == {"semeval": 100, "sst2": 200}
    assert truth.passes(c, 1) == pytest.approx(0.75)  # 10 and 20 batches: 15 steps, half of them semeval's
    assert truth.passes(c, 1) == primary_passes(c, {"semeval": 100, "sst2": 200}, 1)


def test_without_sizes_or_data_an_epochs_truth_reports_no_passes_and_a_passes_truth_says_so(tmp_path):
    nowhere = str(tmp_path / "no-data")
    c = config("sst2", data_dir=nowhere)
    over_epochs = load_truth(truth_file(tmp_path, "[learning]\ngap = 0.02\n"))
    report = over_epochs.trial_metrics(c, "k", [1], 1, OBJECTIVE)
    assert OBJECTIVE in report and PRIMARY_PASSES not in report
    over_passes = load_truth(truth_file(tmp_path, PASSES))
    with pytest.raises(TruthError, match=r"truth.toml: sizes: .*semeval, sst2.*no-data") as info:
        over_passes.trial_metrics(c, "k", [1], 1, OBJECTIVE)
    assert "\n" not in str(info.value)
    with pytest.raises(TruthError, match="sizes"):
        over_passes.true_score(c, "acc_4way")
    one_curve = load_truth(truth_file(tmp_path, '[[curve]]\nunit = "passes"\npasses = [1.0]\ndeficit = [0.01]\n'))
    with pytest.raises(TruthError, match="sizes"):  # a [[curve]] over passes needs them as much
        one_curve.trial_metrics(c, "k", [1], 1, OBJECTIVE)


def test_a_transient_failure_scores_under_the_majority_until_it_recovers(tmp_path):
    text = QUIET + '[[transient]]\nschemas = ["prop"]\nprobability = 0.25\nuntil = 1\nbelow_majority = 0.1\n'
    truth = load_truth(truth_file(tmp_path, text))
    prop, other = config("sst2", schema="prop", epochs=3), config("sst2", schema="sequential", epochs=3)

    def scores(c, key, point, metric="acc_4way"):
        return truth.epoch_metrics(c, key, 1, point)[f"semeval/dev/{metric}"]

    keys = [f"k{i}" for i in range(400)]
    failed = [k for k in keys if scores(prop, k, 1) == pytest.approx(0.4)]
    assert abs(len(failed) / len(keys) - 0.25) < 0.06
    assert {round(scores(prop, k, 1), 6) for k in keys} == {0.4, 0.8}  # the majority 0.5 less 0.1, else normal
    assert all(scores(prop, k, 0.5) == pytest.approx(0.4) for k in failed)  # a screen point is up to until too
    assert all(scores(prop, k, e) == pytest.approx(0.8) for k in failed for e in (2, 3))  # recovered
    assert all(scores(prop, k, 1, "acc_3way") == pytest.approx(0.85) for k in failed)  # no majority: untouched
    assert {round(scores(other, k, 1), 6) for k in keys} == {0.8}  # a config no [[transient]] matches: never
    assert {truth.transient_of(prop, k, 1, 1) for k in failed} == {0.1}
    assert truth.true_score(prop, "acc_4way") == pytest.approx(0.8)  # it recovers: not in the true score
    seeds = [truth.transient_of(prop, "k0", s, 1) is not None for s in range(400)]
    assert abs(np.mean(seeds) - 0.25) < 0.06  # a draw per seed of a config, not per config
    # the trainer's flags: degenerate up to ``until`` and never learned there, learned from then on
    flags = [[truth.degeneracy(prop, failed[0], 1, e)[k] for k in FLAGS] for e in (0.5, 1, 2, 3)]
    assert flags == [[1, 0.5, 0], [1, 1, 0], [0, 1, 2], [0, 1, 3]]
    learner = next(k for k in keys if k not in failed)
    assert [truth.degeneracy(prop, learner, 1, 2)[k] for k in FLAGS] == [0, 0, 2]


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[learning]\nunit = "weeks"\n', "learning.unit = 'weeks': expected one of 'epochs', 'passes'"),
        ('[[curve]]\nunit = "weeks"\ndeficit = [0.1]\n', "curve[0].unit = 'weeks': expected one of"),
        (
            '[learning]\nunit = "passes"\npasses = [0.5, 1.0]\ndeficit = [0.02]\n',
            "learning.passes = [0.5, 1.0]: expected one number of the primary's passes per deficit (1)",
        ),
        ('[learning]\nunit = "passes"\ndeficit = [0.02]\n', "learning.passes = None: expected one number"),
        (
            '[learning]\nunit = "passes"\npasses = [1.0, 0.5]\ndeficit = [0.02, 0.01]\n',
            "learning.passes = [1.0, 0.5]: expected positive numbers in increasing order",
        ),
        ('[learning]\nunit = "passes"\npasses = [1, 1]\ndeficit = [0.02, 0.01]\n', "in increasing order"),
        ('[learning]\nunit = "passes"\npasses = [0, 1]\ndeficit = [0.02, 0.01]\n', "expected positive numbers"),
        ("[[curve]]\npasses = [1.0]\ndeficit = [0.02]\n", 'curve[0].passes: expected only with unit = "passes"'),
        ("[learning]\npasses = [1.0]\ndeficit = [0.02]\n", 'learning.deficit: expected only with unit = "passes"'),
        (
            '[learning]\nunit = "passes"\ngap = 0.02\npasses = [1.0]\ndeficit = [0.02]\n',
            'learning.gap: expected passes and deficit with unit = "passes"',
        ),
        ('[learning]\nunit = "passes"\npasses = [1.0]\ndeficit = [0.02]\nspeed = 1\n', "learning.speed: unknown key"),
        (
            "[majority]\nacc_4way = 0.5\n[[transient]]\nprobability = 2\n",
            "transient[0].probability = 2.0: expected in [0, 1]",
        ),
        ("[majority]\nacc_4way = 0.5\n[[transient]]\nuntil = 1\n", "transient[0].probability: missing"),
        (
            "[majority]\nacc_4way = 0.5\n[[transient]]\nprobability = 0.1\nuntil = 0\n",
            "transient[0].until = 0.0: expected > 0 epochs",
        ),
        ("[majority]\nacc_4way = 0.5\n[[transient]]\nprobability = 0.1\nlr = 1\n", "transient[0].lr: unknown key"),
        ("[[transient]]\nprobability = 0.1\n", "majority: expected with [[transient]]"),
        ("[sizes]\nsemeval = 0\n", "sizes.semeval = 0.0: expected a whole number of training rows >= 1"),
        ("[sizes]\nsemeval = 10.5\n", "sizes.semeval = 10.5: expected a whole number"),
        ('[sizes]\nsemeval = "many"\n', "sizes.semeval = 'many': expected a finite number"),
    ],
)
def test_a_bad_passes_key_is_refused_in_one_line_naming_it(tmp_path, text, expected):
    with pytest.raises(TruthError, match="truth.toml") as info:
        load_truth(truth_file(tmp_path, text))
    assert expected in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def dilution_grid(data_dir):
    """The dilution truth and every canonical cell of absa's thesis grid at the full preset (real sizes)."""
    from search.study.config import SearchConfig, study_of
    from search.study.plan import base_config
    from spaces.canonical import apply_choices, canonical, thesis_grid

    cfg = SearchConfig("absa", preset="full", data_dir=str(data_dir))
    study = study_of(cfg, "full")
    base = base_config(cfg, study, study.preset("full"))
    cells = [canonical(apply_choices(base, point, study)) for point in thesis_grid(study, base)]
    return load_truth(resolve_truth("dilution")), cells


def test_dilution_is_won_by_sst2_and_pos_under_square_though_every_multitask_cell_sees_less(dilution_grid):
    truth, cells = dilution_grid
    assert truth.learning.unit == "passes" and not truth.sizes  # read from the study's data
    assert len(cells) == 43 and cells[0].tasks == ("semeval",) and cells[0].epochs == 4
    best = max(cells, key=lambda c: truth.true_score(c, "acc_4way"))
    assert (best.tasks, best.sampling.schema) == (("semeval", "sst2", "pos"), "square")
    alone = cells[0]
    assert truth.passes(alone, 1) == pytest.approx(1.0)
    assert all(truth.passes(c, 1) < truth.passes(alone, 1) for c in cells[1:])
    # the file's comments: +0.8 pp over the single-task config at 1.9 passes after 4 epochs; 3.0 pp and
    # 2.5 pp short of their ends after epoch 1
    score = truth.true_score
    assert score(best, "acc_4way") - score(alone, "acc_4way") == pytest.approx(0.008, abs=5e-4)
    assert truth.passes(best, 4) == pytest.approx(1.93, abs=0.01) and truth.passes(best, 1) == pytest.approx(
        0.48, abs=0.01
    )
    assert truth.deficit(best, 1, "acc_4way") - truth.deficit(best, 4, "acc_4way") == pytest.approx(0.030, abs=5e-4)
    assert truth.deficit(alone, 1, "acc_4way") == pytest.approx(0.025)
    transient = {c.sampling.schema for c in cells if truth.transient and truth.transient[0].match.applies(c)}
    assert transient == {"prop", "anneal"}
