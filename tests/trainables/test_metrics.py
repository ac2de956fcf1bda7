import math

import numpy as np
import pytest

from trainables import metrics as m


def one_hot(classes, n):
    out = np.full((len(classes), n), 0.01)
    out[np.arange(len(classes)), classes] = 0.9
    return out


def test_group_scores_normalise_p_yes_per_group():
    s = m.group_scores(np.array([0.2, 0.2, 0.4, 0.1, 0.1, 0.5, 0.5, 0, 0, 0]), 5)
    np.testing.assert_allclose(s, [[0.2, 0.2, 0.4, 0.1, 0.1], [0.5, 0.5, 0, 0, 0]])


def test_semeval_four_way_skips_none_and_falls_back():
    # gold: positive, none, conflict, negative
    gold = np.array([0, 4, 3, 2])
    score = np.array(
        [
            [0.1, 0.0, 0.0, 0.0, 0.9],  # pred none -> fallback argmax of first 4 = positive: right
            [0.9, 0.0, 0.0, 0.0, 0.1],  # gold none: skipped
            [0.0, 0.0, 0.0, 0.6, 0.4],  # conflict: right
            [0.5, 0.0, 0.4, 0.0, 0.1],  # positive vs gold negative: wrong
        ]
    )
    assert m.semeval_accuracy(score, gold, 4) == pytest.approx(2 / 3)


def test_semeval_three_way_skips_conflict_and_falls_back():
    gold = np.array([1, 3, 2, 0])
    score = np.array(
        [
            [0.1, 0.3, 0.0, 0.6, 0.0],  # pred conflict -> fallback among 0..2 = neutral: right
            [0.0, 0.0, 0.0, 1.0, 0.0],  # gold conflict: skipped
            [0.0, 0.0, 0.2, 0.0, 0.8],  # pred none -> negative: right
            [0.0, 0.6, 0.4, 0.0, 0.0],  # neutral vs positive: wrong
        ]
    )
    assert m.semeval_accuracy(score, gold, 3) == pytest.approx(2 / 3)


def test_semeval_two_way_fallback_and_ties():
    gold = np.array([0, 2, 1, 2])
    score = np.array(
        [
            [0.2, 0.6, 0.2, 0.0, 0.0],  # pred neutral -> tie 0.2 vs 0.2 goes to positive: right
            [0.1, 0.5, 0.4, 0.0, 0.0],  # pred neutral -> negative: right
            [1.0, 0.0, 0.0, 0.0, 0.0],  # gold neutral: skipped
            [0.3, 0.0, 0.3, 0.0, 0.4],  # pred none -> tie goes to positive: wrong
        ]
    )
    assert m.semeval_accuracy(score, gold, 2) == pytest.approx(2 / 3)


def test_semeval_aspect_prf_micro_over_sentences_with_gold():
    # sentence 1: gold {price, food}; pred {price, service}
    # sentence 2: no gold aspect: skipped even though it predicts one
    # sentence 3: gold {ambience}; pred {ambience}
    gold = np.array([0, 4, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1, 4])
    pred = np.array([0, 4, 4, 4, 1, 0, 4, 4, 4, 4, 4, 4, 4, 2, 4])
    p, r, f = m.semeval_aspect_prf(pred, gold)
    assert (p, r) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert f == pytest.approx(2 / 3)


def test_semeval_metrics_perfect():
    gold = np.array([0, 4, 2, 4, 3, 1, 4, 4, 4, 4])
    out = m.semeval_metrics(one_hot(gold, 5), gold)
    assert all(v == 1.0 for v in out.values())


def test_sentihood_strict_needs_all_four_aspects():
    gold = np.array([0, 1, 0, 2, 0, 0, 0, 1])
    pred = np.array([0, 1, 0, 1, 0, 0, 0, 1])  # group 1 wrong only on transit
    assert m.sentihood_strict_accuracy(pred, gold) == 0.5


def test_sentihood_macro_f1_groups_by_four():
    # group 1: gold {price, transit}, pred {price}: p=1, r=1/2
    # group 2: no gold: skipped
    # group 3: gold {general}, pred {safety}: p=r=0
    gold = np.array([0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0])
    pred = np.array([0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0])
    P, R = (1 + 0) / 2, (0.5 + 0) / 2
    assert m.sentihood_macro_f1(pred, gold) == pytest.approx(2 * P * R / (P + R))


def test_sentihood_auc_and_sentiment_accuracy():
    gold = np.array([1, 0, 2, 0, 0, 2, 0, 1])  # every aspect position has a None and a sentiment
    score = np.array(
        [
            [0.1, 0.8, 0.1],
            [0.9, 0.05, 0.05],
            [0.2, 0.3, 0.5],
            [0.6, 0.2, 0.2],
            [0.9, 0.05, 0.05],
            [0.3, 0.4, 0.3],
            [0.7, 0.2, 0.1],
            [0.2, 0.5, 0.3],
        ]
    )
    out = m.sentihood_metrics(score, gold)
    assert out["aspect_auc"] == 1.0  # P(None) ranks the None row first at every aspect
    # sentiment rows: [0] pos s=.11 right, [2] neg s=.625 right, [5] neg s=3/7 wrong, [7] pos s=.375 right
    assert out["sentiment_acc"] == 0.75
    assert out["strict_acc"] == 0.5
    assert math.isnan(out["sentiment_auc"])  # one sentiment row per aspect: no AUC defined


def test_sentihood_sentiment_auc_per_aspect_then_mean():
    # 2 groups; every aspect has a Positive and a Negative row. P(Negative | sentiment):
    # general ranked right (1), price inverted (0), safety tied (0.5), transit right (1)
    gold = np.array([1, 1, 1, 2, 2, 2, 2, 1])
    s_neg = np.array([0.1, 0.9, 0.5, 0.8, 0.9, 0.1, 0.5, 0.2])
    score = np.column_stack([np.zeros(8), 1 - s_neg, s_neg])
    assert m.sentihood_metrics(score, gold)["sentiment_auc"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)


def test_sentihood_macro_auc_is_nan_when_one_aspect_has_one_class():
    """Sun et al. average roc_auc_score over all 4 aspects, which fails on a one-class aspect:
    the macro value is NaN, not the mean of the other three."""

    def scores(gold):
        return m.sentihood_metrics(one_hot(gold, 3), gold)  # perfect predictions: every defined AUC is 1

    # 3 (sentence, location) groups of (general, price, safety, transit); transit always None
    gold = np.array([1, 0, 2, 0, 0, 1, 0, 0, 2, 2, 1, 0])
    out = scores(gold)
    assert math.isnan(out["aspect_auc"]) and math.isnan(out["sentiment_auc"])  # the old code gave 1.0
    gold[11] = 1  # transit: None twice, Positive once
    out = scores(gold)
    assert out["aspect_auc"] == 1.0 and math.isnan(out["sentiment_auc"])  # transit sentiments: one class
    gold[7] = 2  # transit: a Negative too
    out = scores(gold)
    assert out["aspect_auc"] == 1.0 and out["sentiment_auc"] == 1.0


def test_single_class_auc_is_nan_not_an_error():
    gold = np.zeros(4, dtype=int)
    out = m.sentihood_metrics(np.tile([0.8, 0.1, 0.1], (4, 1)), gold)
    assert math.isnan(out["aspect_auc"]) and math.isnan(out["sentiment_auc"])


def test_token_accuracy_counts_every_token():
    probs = one_hot(np.array([1, 2, 3, 3]), 5)
    assert m.token_accuracy(probs, np.array([1, 2, 3, 4])) == 0.75


def test_group_scores_all_zero_group_is_uniform_and_groups_must_be_whole():
    np.testing.assert_allclose(m.group_scores(np.zeros(3), 3), [[1 / 3] * 3])
    with pytest.raises(ValueError, match="7 binary rows do not split into groups of 5"):
        m.group_scores(np.ones(7), 5)


def test_semeval_qa_b_tie_goes_to_the_first_polarity():
    # P(yes) tied between positive and negative for one aspect: Sun's chained >= picks positive
    score = m.group_scores(np.array([0.4, 0.1, 0.4, 0.05, 0.05]), 5)
    assert score.argmax(1).tolist() == [0]
    assert m.semeval_accuracy(score, np.array([0]), 4) == 1.0
    assert m.semeval_accuracy(score, np.array([2]), 4) == 0.0


def test_semeval_four_way_fallback_tie_goes_to_the_first_class():
    score = np.array([[0.2, 0.2, 0.1, 0.0, 0.5]] * 2)  # pred none; positive and neutral tied
    assert m.semeval_accuracy(score, np.array([0, 1]), 4) == 0.5


def test_semeval_accuracy_with_no_eligible_row_is_nan():
    assert math.isnan(m.semeval_accuracy(one_hot(np.array([4, 4]), 5), np.array([4, 4]), 4))
    assert math.isnan(m.semeval_accuracy(one_hot(np.array([3, 1]), 5), np.array([3, 1]), 2))


def test_semeval_aspect_prf_zero_divisions_give_zero():
    gold = np.array([0, 4, 4, 4, 4])
    assert m.semeval_aspect_prf(np.full(5, 4), gold) == (0.0, 0.0, 0.0)  # nothing predicted
    assert m.semeval_aspect_prf(np.full(5, 4), np.full(5, 4)) == (0.0, 0.0, 0.0)  # no sentence counted
    with pytest.raises(ValueError, match="groups of 5"):
        m.semeval_aspect_prf(np.zeros(6), np.zeros(6))


def test_semeval_metrics_keys_and_hand_values():
    # one sentence, gold: price positive, food conflict, rest none
    gold = np.array([0, 4, 3, 4, 4])
    score = np.array(
        [
            [0.1, 0.1, 0.1, 0.1, 0.6],  # price: pred none; 4-way falls back to positive (tie -> first)
            [0.0, 0.0, 0.0, 0.0, 1.0],
            [0.1, 0.0, 0.5, 0.4, 0.0],  # food: pred negative vs conflict
            [0.0, 0.6, 0.0, 0.0, 0.4],  # ambience: predicted, not gold
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ]
    )
    out = m.semeval_metrics(score, gold)
    assert list(out) == ["acc_4way", "acc_3way", "acc_2way", "aspect_precision", "aspect_recall", "aspect_f1"]
    assert out["acc_4way"] == 0.5 and out["acc_3way"] == 1.0 and out["acc_2way"] == 1.0
    # S = {food, ambience}, G = {price, food}
    assert (out["aspect_precision"], out["aspect_recall"], out["aspect_f1"]) == (0.5, 0.5, 0.5)


def test_sentihood_f1_is_not_grouped_by_three():
    # 8 rows = 2 groups of 4; grouping by 3 (the thesis bug) would misalign every set
    gold = np.array([0, 0, 0, 1, 2, 0, 0, 0])
    pred = np.array([0, 0, 0, 1, 2, 0, 0, 0])
    assert m.sentihood_macro_f1(pred, gold) == 1.0
    assert m.sentihood_macro_f1(np.zeros(8, dtype=int), np.zeros(8, dtype=int)) == 0.0  # no group counted
    with pytest.raises(ValueError, match="groups of 4"):
        m.sentihood_strict_accuracy(np.zeros(6), np.zeros(6))


def test_sentihood_binary_scores_group_by_three_then_aspects_by_four():
    gold = np.array([0, 1, 0, 2])  # one (sentence, location): general None, price Positive, ...
    p_yes = np.array([0.9, 0.05, 0.05, 0.1, 0.6, 0.3, 0.7, 0.2, 0.1, 0.2, 0.2, 0.6])
    out = m.sentihood_metrics(m.group_scores(p_yes, 3), gold)
    assert out["strict_acc"] == 1.0 and out["aspect_f1"] == 1.0 and out["sentiment_acc"] == 1.0


def test_roc_auc_hand_cases_and_sklearn():
    assert m.roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == 0.75
    assert m.roc_auc(np.array([0, 1]), np.array([0.5, 0.5])) == 0.5  # a tie counts half
    assert math.isnan(m.roc_auc(np.array([1, 1]), np.array([0.2, 0.3])))
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    s = rng.integers(0, 20, 500) / 20  # many ties
    assert m.roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_accuracy():
    assert m.accuracy(one_hot(np.array([0, 1, 1]), 2), np.array([0, 1, 0])) == pytest.approx(2 / 3)
    assert math.isnan(m.token_accuracy(np.empty((0, 3)), np.array([], dtype=int)))
