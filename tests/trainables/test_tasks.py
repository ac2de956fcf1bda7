import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainables.tasks import DataError, get_task, task_names


def broken_root(tmp_path: Path, data_dir: Path, rel: str, text: str | None = None) -> Path:
    """A data root holding a copy of ``rel`` (or ``text`` in its place)."""
    target = tmp_path / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        shutil.copy(data_dir / rel, target)
    else:
        target.write_text(text)
    return tmp_path


@pytest.mark.parametrize("spec", ["semeval", "semeval:NLI_M", "semeval:QA_M", "semeval:NLI_B", "sentihood",
                                  "sentihood:NLI_M", "sentihood:QA_M", "sentihood:NLI_B", "sst2", "pos"])
def test_every_task_gives_labelled_rows_in_whole_groups(spec, data_dir):
    task = get_task(spec, data_dir)
    for split in ("dev", "test"):
        rows = task.examples(split)
        assert rows and len(rows) % task.group_size == 0
        labels = [t for ex in rows for t in (ex.label if isinstance(ex.label, tuple) else (ex.label,))]
        assert 0 <= min(labels) and max(labels) < task.num_labels
        # uniform predictions score without error
        n = len(labels) if task.kind == "tagging" else len(rows)
        out = task.metrics(np.full((n, task.num_labels), 1.0 / task.num_labels), rows)
        assert task.primary_metric in out


def test_semeval_test_qa_b_matches_sun_et_al(data_dir):
    rows = get_task("semeval", data_dir).examples("test")
    assert len(rows) == 20000
    assert (rows[0].text_a, rows[0].text_b, rows[0].label) == (
        "the polarity of the aspect price is positive .", "The bread is top notch as well.", 0)
    assert (rows[4].text_a, rows[4].label) == ("the polarity of the aspect price is none .", 1)
    assert (rows[12].text_a, rows[12].label) == ("the polarity of the aspect food is negative .", 0)
    assert (rows[10].text_a, rows[10].label) == ("the polarity of the aspect food is positive .", 1)
    assert rows[-1].text_a == "the polarity of the aspect service is none ."
    # 25 rows per sentence: aspects price, anecdotes, food, ambience, service
    assert [r.text_a.split()[5] for r in rows[:25:5]] == ["price", "anecdotes", "food", "ambience", "service"]
    assert sum(r.label for r in rows) == 20000 // 5  # exactly one yes per aspect


def test_semeval_holdout_is_deterministic_disjoint_and_about_ten_percent(data_dir):
    task = get_task("semeval", data_dir)
    train = {r.id.split("/")[0] for r in task.examples("train")}
    dev = {r.id.split("/")[0] for r in task.examples("dev")}
    assert not train & dev
    assert 0.08 < len(dev) / (len(dev) + len(train)) < 0.12
    assert dev == {r.id.split("/")[0] for r in get_task("semeval", data_dir).examples("dev")}


def test_thesis_protocol_selects_on_test(data_dir):
    task = get_task("semeval", data_dir, "thesis")
    assert task.examples("dev") == task.examples("test")
    assert len(task.examples("train")) == 3044 * 25


def test_semeval_repeated_category_keeps_first(data_dir):
    rows = get_task("semeval:NLI_M", data_dir, "thesis").examples("train")
    first = [r for r in rows if r.id in ("3561/anecdotes", "258/anecdotes")]
    assert len(first) == 2
    positives = sum(1 for r in rows if r.label == 0)
    assert positives == 2176  # the data README's count after keeping first occurrences


@pytest.mark.parametrize("split,published", [("dev", "dev_QA_B.tsv"), ("test", "test_QA_B.tsv")])
def test_sentihood_qa_b_equals_published_files(data_dir, split, published):
    rows = get_task("sentihood", data_dir).examples(split)
    with open(data_dir / "sentihood" / "bert-pair" / published, newline="") as f:
        gold = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    assert len(rows) == len(gold) == {"dev": 11244, "test": 22548}[split]
    for ours, theirs in zip(rows, gold):
        assert (ours.text_a, ours.text_b, str(ours.label)) == (theirs[2], theirs[1], theirs[3])


def test_pos_alignment(data_dir):
    task = get_task("pos", data_dir)
    rows = task.examples("train")
    assert len(rows) == 14041 and task.num_labels == 45
    assert all(len(r.text_a.split(" ")) == len(r.label) for r in rows)
    first = rows[0]
    assert first.text_a.startswith("EU rejects German")
    assert [task.labels[i] for i in first.label[:3]] == ["NNP", "VBZ", "JJ"]


def test_sst2_splits(data_dir):
    task = get_task("sst2", data_dir)
    assert len(task.examples("test")) == 872
    assert len(task.examples("train")) + len(task.examples("dev")) == 67349


def test_csv_task(tmp_path):
    (tmp_path / "tr.csv").write_text("id,text_a,text_b,label\n1,good film,,pos\n2,bad film,,neg\n")
    (tmp_path / "tags.csv").write_text("id,text_a,label\n1,the cat,D N\n")
    (tmp_path / "seq.json").write_text(json.dumps(
        {"name": "reviews", "labels": ["neg", "pos"], "train": "tr.csv", "dev": "tr.csv", "test": "tr.csv"}))
    (tmp_path / "tag.json").write_text(json.dumps(
        {"name": "tagger", "kind": "tagging", "labels": ["D", "N"], "train": "tags.csv", "dev": "tags.csv", "test": "tags.csv"}))
    seq = get_task(f"csv:{tmp_path / 'seq.json'}", tmp_path)
    assert seq.name == "reviews" and [r.label for r in seq.examples("train")] == [1, 0]
    tag = get_task(f"csv:{tmp_path / 'tag.json'}", tmp_path)
    assert tag.kind == "tagging" and tag.examples("dev")[0].label == (0, 1)


# -- bad input: one line naming the file, the record and what was expected -------------

def test_unknown_task_name(data_dir):
    with pytest.raises(DataError, match="unknown task 'semevl'.*expected one of"):
        get_task("semevl", data_dir)
    assert "semeval" in task_names()


def test_missing_dataset_names_files_and_source(tmp_path):
    with pytest.raises(DataError, match=r"missing dataset file .*Restaurants_Train.xml.*MTL_DATA_DIR.*github"):
        get_task("semeval", tmp_path).examples("train")


def test_malformed_xml(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "semeval2014/raw/Restaurants_Test_Gold.xml", "<sentences><sentence id='1'><text>x</text>")
    with pytest.raises(DataError, match=r"Restaurants_Test_Gold.xml:1: malformed XML"):
        get_task("semeval", root).examples("test")


def test_unknown_semeval_polarity(tmp_path, data_dir):
    xml = ('<sentences><sentence id="7"><text>ok</text><aspectCategories>'
           '<aspectCategory category="food" polarity="great"/></aspectCategories></sentence></sentences>')
    root = broken_root(tmp_path, data_dir, "semeval2014/raw/Restaurants_Test_Gold.xml", xml)
    with pytest.raises(DataError, match=r"sentence 7: unknown polarity 'great'"):
        get_task("semeval", root).examples("test")


def test_empty_file(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "sst2/dev.tsv", "")
    with pytest.raises(DataError, match=r"dev.tsv: empty file"):
        get_task("sst2", root).examples("test")


def test_malformed_tsv_row(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "sentihood/bert-pair/dev_NLI_M.tsv",
                       "id\tsentence1\tsentence2\tlabel\n0\ta b\tlocation - 1 - general\tNone\n1\ttoo few\n")
    with pytest.raises(DataError, match=r"dev_NLI_M.tsv:3: 2 fields, expected 4"):
        get_task("sentihood", root).examples("dev")


def test_unknown_sentihood_label(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "sentihood/bert-pair/dev_NLI_M.tsv",
                       "id\tsentence1\tsentence2\tlabel\n0\ta b\tlocation - 1 - general\tMaybe\n")
    with pytest.raises(DataError, match=r"dev_NLI_M.tsv:2: unknown label 'Maybe'"):
        get_task("sentihood", root).examples("dev")


def test_unknown_pos_tag_and_bad_line(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "conll2003/valid.txt", "EU NNP B-NP B-ORG\nrejects XYZ B-VP O\n")
    with pytest.raises(DataError, match=r"valid.txt:2: unknown label 'XYZ'"):
        get_task("pos", root).examples("dev")
    root = broken_root(tmp_path, data_dir, "conll2003/valid.txt", "EU NNP B-NP\n")
    with pytest.raises(DataError, match=r"valid.txt:1: 3 fields, expected 4"):
        get_task("pos", root).examples("dev")


def test_bad_csv_task(tmp_path):
    (tmp_path / "a.csv").write_text("id,text_a,label\n1,fine,pos\n2,hmm,meh\n")
    (tmp_path / "t.json").write_text(json.dumps({"name": "x", "labels": ["pos"], "train": "a.csv", "dev": "a.csv", "test": "a.csv"}))
    with pytest.raises(DataError, match=r"a.csv:3: unknown label 'meh'"):
        get_task(f"csv:{tmp_path / 't.json'}", tmp_path).examples("train")
    (tmp_path / "u.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(DataError, match=r"u.json: task config lacks 'labels'"):
        get_task(f"csv:{tmp_path / 'u.json'}", tmp_path)


def test_unknown_construction(data_dir):
    with pytest.raises(DataError, match="construction 'QA_X'"):
        get_task("semeval:QA_X", data_dir)
