"""Evaluation metrics as pure functions on arrays, with Sun et al. 2019's exact semantics.

The task classes turn model outputs into the arrays these functions take:
``score`` is (rows, classes) with one row per (sentence, aspect), ``gold`` the
gold class per row.

SemEval classes: 0 positive, 1 neutral, 2 negative, 3 conflict, 4 none; 5
aspect rows per sentence (price, anecdotes, food, ambience, service).
Sentihood classes: 0 None, 1 Positive, 2 Negative; 4 aspect rows per
(sentence, location) (general, price, safety, transit).
Ties go to the lower class index, as in Sun et al.'s chained ``>=``
comparisons (``np.argmax`` does the same).
Undefined values: a zero division in precision, recall or F1 gives 0.0 (as
the formula's limit); an accuracy or AUC with no row to score gives NaN, and a
Sentihood macro AUC is NaN when any of its 4 aspects has one class only.
"""

from __future__ import annotations

import math

import numpy as np

NONE = 4  # SemEval "none"
SEMEVAL_ASPECTS = 5
SENTIHOOD_ASPECTS = 4


def group_scores(p_yes: np.ndarray, classes: int) -> np.ndarray:
    """P(yes) of consecutive QA_B/NLI_B rows -> (groups, classes) scores normalised per group.

    A group whose P(yes) are all 0 gets the uniform score (Sun et al. would divide by zero).
    """
    p = _grouped(np.asarray(p_yes, dtype=np.float64), classes, "binary rows")
    total = p.sum(axis=1, keepdims=True)
    return np.divide(p, total, out=np.full_like(p, 1.0 / classes), where=total > 0)


def accuracy(probs: np.ndarray, gold: np.ndarray) -> float:
    """Share of rows whose argmax class is the gold class (NaN with no rows)."""
    gold = np.asarray(gold)
    if len(gold) == 0:
        return math.nan
    return float((np.asarray(probs).argmax(1) == gold).mean())


def token_accuracy(probs: np.ndarray, gold: np.ndarray) -> float:
    """Correct tokens / labelled tokens; ``probs`` has one row per labelled word (NaN with none)."""
    return accuracy(probs, gold)


def roc_auc(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the ROC curve of binary ``y`` scored by ``s`` (= sklearn's ``roc_auc_score``).

    Computed as the Mann-Whitney statistic with tied scores counted half, which
    keeps this module free of the 3-second sklearn import. NaN unless both classes occur.
    """
    y, s = np.asarray(y).astype(bool), np.asarray(s, dtype=np.float64)
    pos, neg = int(y.sum()), int((~y).sum())
    if pos == 0 or neg == 0:
        return math.nan
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse]  # 1-based, ties share the mean rank
    return float((ranks[y].sum() - pos * (pos + 1) / 2) / (pos * neg))


def _grouped(values: np.ndarray, size: int, what: str) -> np.ndarray:
    if len(values) % size:
        raise ValueError(f"{len(values)} {what} do not split into groups of {size}")
    return values.reshape(-1, size, *values.shape[1:])


# SemEval-2014 aspect categories


def semeval_accuracy(score: np.ndarray, gold: np.ndarray, ways: int) -> float:
    """4-way (positive, neutral, negative, conflict), 3-way (no conflict), 2-way (positive, negative).

    Only rows whose gold class is among the ``ways`` classes count; a prediction
    outside them falls back to the highest-scoring class among them.
    """
    allowed = {4: [0, 1, 2, 3], 3: [0, 1, 2], 2: [0, 2]}[ways]
    score, gold = np.asarray(score, dtype=np.float64), np.asarray(gold)
    rows = np.isin(gold, allowed)
    if not rows.any():
        return math.nan
    pred = score.argmax(1)
    fallback = np.asarray(allowed)[score[:, allowed].argmax(1)]
    pred = np.where(np.isin(pred, allowed), pred, fallback)
    return float((pred[rows] == gold[rows]).mean())


def semeval_aspect_prf(pred: np.ndarray, gold: np.ndarray) -> tuple[float, float, float]:
    """Micro P/R/F of aspect detection (class != none) over sentences with a gold aspect."""
    pred = _grouped(np.asarray(pred), SEMEVAL_ASPECTS, "aspect rows") != NONE  # (sentences, 5)
    gold = _grouped(np.asarray(gold), SEMEVAL_ASPECTS, "aspect rows") != NONE
    keep = gold.any(1)
    pred, gold = pred[keep], gold[keep]
    hits, predicted, relevant = int((pred & gold).sum()), int(pred.sum()), int(gold.sum())
    p = hits / predicted if predicted else 0.0
    r = hits / relevant if relevant else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def semeval_metrics(score: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """All SemEval metrics from (rows, 5) scores and the gold class per (sentence, aspect) row."""
    score, gold = np.asarray(score, dtype=np.float64), np.asarray(gold)
    p, r, f = semeval_aspect_prf(score.argmax(1), gold)
    return {
        "acc_4way": semeval_accuracy(score, gold, 4),
        "acc_3way": semeval_accuracy(score, gold, 3),
        "acc_2way": semeval_accuracy(score, gold, 2),
        "aspect_precision": p,
        "aspect_recall": r,
        "aspect_f1": f,
    }


# Sentihood


def sentihood_strict_accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    """Share of (sentence, location) groups with all 4 aspects right (NaN with no groups)."""
    right = _grouped(np.asarray(pred) == np.asarray(gold), SENTIHOOD_ASPECTS, "aspect rows")
    return float(right.all(1).mean()) if len(right) else math.nan


def sentihood_macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    """Sun et al.'s aspect "macro F1": per group of 4 with a gold aspect, P and R of the
    detected aspects (0 and 0 when none is right); F1 of their averages."""
    pred = _grouped(np.asarray(pred), SENTIHOOD_ASPECTS, "aspect rows") != 0  # (groups, 4)
    gold = _grouped(np.asarray(gold), SENTIHOOD_ASPECTS, "aspect rows") != 0
    keep = gold.any(1)
    pred, gold = pred[keep], gold[keep]
    if not len(gold):
        return 0.0
    hits = (pred & gold).sum(1)
    p = np.where(hits > 0, hits / np.maximum(pred.sum(1), 1), 0.0).mean()
    r = np.where(hits > 0, hits / gold.sum(1), 0.0).mean()
    return float(2 * p * r / (p + r)) if p + r else 0.0


def _aspect_mean_auc(y: np.ndarray, s: np.ndarray, aspect: np.ndarray) -> float:
    """Mean ROC AUC over the 4 aspect positions, as Sun et al.'s ``np.mean`` of 4 AUCs.

    NaN when any position has one class only (or no row): Sun's ``roc_auc_score``
    fails there, and a mean over the other aspects would be a different metric.
    """
    aucs = [roc_auc(y[aspect == j], s[aspect == j]) for j in range(SENTIHOOD_ASPECTS)]
    return math.nan if any(math.isnan(a) for a in aucs) else float(np.mean(aucs))


def sentihood_metrics(score: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """All Sentihood metrics from (rows, 3) scores and the gold class per (sentence, location, aspect) row."""
    score, gold = np.asarray(score, dtype=np.float64), np.asarray(gold)
    pred = score.argmax(1)
    aspect = np.arange(len(gold)) % SENTIHOOD_ASPECTS
    # aspect detection: is the aspect absent ("None")? scored by P(None)
    aspect_auc = _aspect_mean_auc((gold == 0).astype(int), score[:, 0], aspect)
    # sentiment over rows with a gold sentiment: P(Negative | not None)
    has = gold > 0
    y = gold[has] - 1  # Positive 0, Negative 1
    pos_neg = score[has, 1] + score[has, 2]
    s = np.divide(score[has, 2], pos_neg, out=np.full(len(y), 0.5), where=pos_neg > 0)
    return {
        "strict_acc": sentihood_strict_accuracy(pred, gold),
        "aspect_f1": sentihood_macro_f1(pred, gold),
        "aspect_auc": aspect_auc,
        "sentiment_acc": float(((s > 0.5) == y).mean()) if len(y) else math.nan,
        "sentiment_auc": _aspect_mean_auc(y, s, aspect[has]),
    }
