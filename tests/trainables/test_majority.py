import numpy as np
import pytest

from trainables.majority import majority_probs, majority_scores
from trainables.tasks import get_task


def test_semeval_majority_is_each_aspects_most_frequent_polarity(data_dir):
    task = get_task("semeval", data_dir)
    rows = task.examples("dev")[: 25 * 40]
    gold = task.gold(rows).reshape(-1, 5)  # (sentences, aspects): polarity index, 4 = none
    scores = majority_scores(task, rows)
    # by hand: acc_4way over gold aspects when every aspect gets its most frequent real polarity
    hits = total = 0
    for aspect in range(5):
        present = gold[:, aspect][gold[:, aspect] != 4]
        if len(present):
            hits += np.bincount(present, minlength=4).max()
            total += len(present)
    assert scores["acc_4way"] == pytest.approx(hits / total)


def test_majority_of_a_sentence_task_is_the_frequent_label(data_dir):
    task = get_task("sst2", data_dir)
    rows = task.examples("dev")[:200]
    labels = np.array([r.label for r in rows])
    assert majority_scores(task, rows)["acc"] == pytest.approx(np.bincount(labels).max() / len(labels))
    assert majority_probs(get_task("pos", data_dir), get_task("pos", data_dir).examples("dev")[:5]) is None
