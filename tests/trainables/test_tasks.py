import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainables.tasks import SPLITS, DataError, declared_name, get_task, task_names


def broken_root(tmp_path: Path, data_dir: Path, rel: str, text: str | None = None) -> Path:
    """A data root holding a copy of ``rel`` (or ``text`` in its place)."""
    target = tmp_path / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        shutil.copy(data_dir / rel, target)
    else:
        target.write_text(text)
    return tmp_path


def write_csv_task(root: Path, kind: str = "sequence") -> Path:
    """A tiny ``csv:`` task config (and its files) under ``root``."""
    if kind == "tagging":
        (root / "tags.csv").write_text("id,text_a,label\n1,the cat,D N\n2,a dog barks,D N V\n")
        spec = {
            "name": "tagger",
            "kind": "tagging",
            "labels": ["D", "N", "V"],
            "train": "tags.csv",
            "dev": "tags.csv",
            "test": "tags.csv",
        }
    else:
        (root / "tr.csv").write_text("id,text_a,text_b,label\n1,good film,,pos\n2,bad film,,neg\n")
        spec = {"name": "reviews", "labels": ["neg", "pos"], "train": "tr.csv", "dev": "tr.csv", "test": "tr.csv"}
    config = root / f"{kind}.json"
    config.write_text(json.dumps(spec))
    return config


SPECS = [
    "semeval",
    "semeval:NLI_M",
    "semeval:QA_M",
    "semeval:NLI_B",
    "sentihood",
    "sentihood:NLI_M",
    "sentihood:QA_M",
    "sentihood:NLI_B",
    "sst2",
    "pos",
    "csv:sequence",
    "csv:tagging",
]


def test_specs_cover_every_registered_task():
    assert {s.partition(":")[0] for s in SPECS} == set(task_names())


@pytest.mark.parametrize("spec", SPECS)
def test_every_task_gives_labelled_rows_in_whole_groups(spec, data_dir, tmp_path):
    if spec.startswith("csv:"):
        spec = f"csv:{write_csv_task(tmp_path, spec.partition(':')[2])}"
    task = get_task(spec, data_dir)
    assert task.kind in ("sequence", "tagging") and task.source and task.num_labels == len(task.labels)
    for split in SPLITS:
        rows = task.examples(split)
        assert rows and len(rows) % task.group_size == 0
        assert all(isinstance(ex.label, tuple if task.kind == "tagging" else int) for ex in rows)
        labels = [t for ex in rows for t in (ex.label if isinstance(ex.label, tuple) else (ex.label,))]
        assert 0 <= min(labels) and max(labels) < task.num_labels
        # uniform predictions score without error
        n = len(labels) if task.kind == "tagging" else len(rows)
        out = task.metrics(np.full((n, task.num_labels), 1.0 / task.num_labels), rows)
        assert out and all(isinstance(v, float) for v in out.values()), out


def test_semeval_test_qa_b_matches_sun_et_al(data_dir):
    rows = get_task("semeval", data_dir).examples("test")
    assert len(rows) == 20000
    assert (rows[0].text_a, rows[0].text_b, rows[0].label) == (
        "the polarity of the aspect price is positive .",
        "The bread is top notch as well.",
        0,
    )
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
    (tmp_path / "seq.json").write_text(
        json.dumps({"name": "reviews", "labels": ["neg", "pos"], "train": "tr.csv", "dev": "tr.csv", "test": "tr.csv"})
    )
    (tmp_path / "tag.json").write_text(
        json.dumps(
            {
                "name": "tagger",
                "kind": "tagging",
                "labels": ["D", "N"],
                "train": "tags.csv",
                "dev": "tags.csv",
                "test": "tags.csv",
            }
        )
    )
    seq = get_task(f"csv:{tmp_path / 'seq.json'}", tmp_path)
    assert seq.name == "reviews" and [r.label for r in seq.examples("train")] == [1, 0]
    tag = get_task(f"csv:{tmp_path / 'tag.json'}", tmp_path)
    assert tag.kind == "tagging" and tag.examples("dev")[0].label == (0, 1)


def test_declared_name_reads_no_data(tmp_path, monkeypatch):
    assert [declared_name(s) for s in ("semeval", "semeval:NLI_M", "sentihood:QA_M", "sst2", "pos")] == [
        "semeval",
        "semeval",
        "sentihood",
        "sst2",
        "pos",
    ]
    assert declared_name(f"csv:{write_csv_task(tmp_path, 'tagging')}") == "tagger"
    for name in ("reviews", "tags"):  # same relative file, read from each working directory
        (tmp_path / name).mkdir()
        config = {"name": name, "labels": ["a"], "train": "absent.csv", "dev": "absent.csv", "test": "absent.csv"}
        (tmp_path / name / "task.json").write_text(json.dumps(config))
        monkeypatch.chdir(tmp_path / name)
        assert declared_name("csv:task.json") == name  # its CSV files need not exist
    with pytest.raises(DataError, match="unknown task 'sst3'"):
        declared_name("sst3")
    with pytest.raises(DataError, match="none.json: cannot read task config"):
        declared_name(f"csv:{tmp_path / 'none.json'}")


def test_semeval_other_constructions(data_dir):
    first = {c: get_task(f"semeval:{c}", data_dir).examples("test")[:6] for c in ("NLI_M", "QA_M", "NLI_B")}
    assert [(r.text_b, r.label) for r in first["NLI_M"][:3]] == [("price", 4), ("anecdotes", 4), ("food", 0)]
    assert first["NLI_M"][0].text_a == "The bread is top notch as well."
    assert first["QA_M"][0].text_b == "what do you think of the price of it ?"
    # Sun et al.'s generate_semeval_NLI_B_QA_B.py: label + " - " + aspect
    assert [(r.text_a, r.label) for r in first["NLI_B"][3:6]] == [
        ("conflict - price", 0),
        ("none - price", 1),
        ("positive - anecdotes", 0),
    ]
    assert get_task("semeval:QA_M", data_dir).group_size == 5 and get_task("semeval:NLI_B", data_dir).group_size == 25


def test_sentihood_other_constructions_and_train(data_dir):
    nli = get_task("sentihood:NLI_M", data_dir).examples("dev")
    assert (nli[0].text_a, nli[0].text_b, nli[0].label) == (
        "i stayed in location - 1 and loved the area",
        "location - 1 - general",
        1,
    )
    assert nli[3].text_b == "location - 1 - transit location"
    # Sun et al.'s generate_sentihood_QA_M.py and generate_sentihood_NLI_B_QA_B.py
    qa_m = get_task("sentihood:QA_M", data_dir).examples("dev")
    assert [r.text_b for r in qa_m[1:4]] == [
        "what do you think of the price of location - 1 ?",
        "what do you think of the safety of location - 1 ?",
        "what do you think of the transit location of location - 1 ?",
    ]
    nli_b = get_task("sentihood:NLI_B", data_dir).examples("dev")
    assert [r.text_a for r in nli_b[:3]] == [
        "None - location - 1 - general",
        "Positive - location - 1 - general",
        "Negative - location - 1 - general",
    ]
    assert nli_b[-1].text_a == "Negative - location - 2 - transit location"
    task = get_task("sentihood", data_dir)
    train = task.examples("train")
    assert len(train) == 3 * 15008 and task.group_size == 12
    assert train == get_task("sentihood", data_dir, "thesis").examples("train")  # official splits under both protocols


@pytest.mark.parametrize("name,classes", [("semeval", 5), ("sentihood", 3)])
def test_binary_and_multiclass_constructions_score_alike(data_dir, name, classes):
    """The same per-aspect scores, fed as QA_B P(yes) or as NLI_M probabilities, give the same metrics."""
    multi = get_task(f"{name}:NLI_M", data_dir).examples("dev")
    binary = get_task(name, data_dir).examples("dev")
    score = np.random.default_rng(0).dirichlet(np.ones(classes), len(multi))  # (aspect rows, classes)
    p_yes = score.reshape(-1)  # one QA_B row per (aspect row, polarity), polarities in class order
    qa_b = get_task(name, data_dir).metrics(np.column_stack([1 - p_yes, p_yes]), binary)
    nli_m = get_task(f"{name}:NLI_M", data_dir).metrics(score, multi)
    assert qa_b == pytest.approx(nli_m)


def test_sst2_holdout_and_thesis(data_dir):
    holdout, thesis = get_task("sst2", data_dir), get_task("sst2", data_dir, "thesis")
    train, dev = holdout.examples("train"), holdout.examples("dev")
    assert {r.text_a for r in train}.isdisjoint({r.text_a for r in dev})
    assert 0.008 < len(dev) / (len(train) + len(dev)) < 0.012
    assert dev == get_task("sst2", data_dir).examples("dev")
    assert thesis.examples("dev") == thesis.examples("test") == holdout.examples("test")
    assert len(thesis.examples("train")) == 67349
    first = thesis.examples("train")[0]
    assert (first.text_a, first.label) == ("hide new secretions from the parental units", 0)


def test_pos_tags_are_those_of_train(data_dir):
    from trainables.tasks.pos import TAGS

    seen = {
        line.split()[1]
        for line in (data_dir / "conll2003" / "train.txt").read_text().splitlines()
        if line.strip() and not line.startswith("-DOCSTART-")
    }
    assert TAGS == tuple(sorted(seen)) and "NN|SYM" in TAGS and len(TAGS) == 45
    task = get_task("pos", data_dir)
    for split, sentences, tokens in (("dev", 3250, 51362), ("test", 3453, 46435)):
        rows = task.examples(split)
        assert len(rows) == sentences and sum(len(r.label) for r in rows) == tokens
        assert all(len(r.text_a.split(" ")) == len(r.label) and r.text_b is None for r in rows)


# -- bad input: one line naming the file, the record and what was expected -------------


def test_unknown_task_name(data_dir):
    with pytest.raises(DataError, match="unknown task 'semevl'.*expected one of"):
        get_task("semevl", data_dir)
    assert "semeval" in task_names()


def test_missing_dataset_names_files_and_source(tmp_path, data_dir):
    with pytest.raises(DataError, match=r"missing dataset file.*Restaurants_Train.xml.*MTL_DATA_DIR.*github") as err:
        get_task("semeval", tmp_path).examples("train")
    assert "Restaurants_Test_Gold.xml" in str(err.value) and "\n" not in str(err.value)
    # every file the task reads is named, and each missing one, not only the first
    broken_root(tmp_path, data_dir, "sentihood/bert-pair/dev_NLI_M.tsv")  # dev is there; train and test are not
    with pytest.raises(DataError) as err:
        get_task("sentihood", tmp_path).examples("test")
    message = str(err.value)
    assert message.startswith(
        "sentihood: missing dataset file(s) sentihood/bert-pair/train_NLI_M.tsv, "
        "sentihood/bert-pair/test_NLI_M.tsv under data root"
    )
    assert "expected sentihood/bert-pair/train_NLI_M.tsv, sentihood/bert-pair/dev_NLI_M.tsv, " in message
    assert "github.com/Drdajie/QA-B" in message
    for name, files in (("pos", ("train.txt", "valid.txt", "test.txt")), ("sst2", ("train.tsv", "dev.tsv"))):
        with pytest.raises(DataError) as err:
            get_task(name, tmp_path).examples("test")
        assert all(f in str(err.value) for f in files), str(err.value)


def test_malformed_xml(tmp_path, data_dir):
    root = broken_root(
        tmp_path, data_dir, "semeval2014/raw/Restaurants_Test_Gold.xml", "<sentences><sentence id='1'><text>x</text>"
    )
    with pytest.raises(DataError, match=r"Restaurants_Test_Gold.xml:1: malformed XML"):
        get_task("semeval", root).examples("test")


def test_unknown_semeval_polarity(tmp_path, data_dir):
    xml = (
        '<sentences><sentence id="7"><text>ok</text><aspectCategories>'
        '<aspectCategory category="food" polarity="great"/></aspectCategories></sentence></sentences>'
    )
    root = broken_root(tmp_path, data_dir, "semeval2014/raw/Restaurants_Test_Gold.xml", xml)
    with pytest.raises(DataError, match=r"sentence 7: unknown polarity 'great'"):
        get_task("semeval", root).examples("test")


def test_empty_file(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "sst2/dev.tsv", "")
    with pytest.raises(DataError, match=r"dev.tsv: empty file"):
        get_task("sst2", root).examples("test")


def test_malformed_tsv_row(tmp_path, data_dir):
    root = broken_root(
        tmp_path,
        data_dir,
        "sentihood/bert-pair/dev_NLI_M.tsv",
        "id\tsentence1\tsentence2\tlabel\n0\ta b\tlocation - 1 - general\tNone\n1\ttoo few\n",
    )
    with pytest.raises(DataError, match=r"dev_NLI_M.tsv:3: 2 fields, expected 4"):
        get_task("sentihood", root).examples("dev")


def test_unknown_sentihood_label(tmp_path, data_dir):
    root = broken_root(
        tmp_path,
        data_dir,
        "sentihood/bert-pair/dev_NLI_M.tsv",
        "id\tsentence1\tsentence2\tlabel\n0\ta b\tlocation - 1 - general\tMaybe\n",
    )
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
    (tmp_path / "t.json").write_text(
        json.dumps({"name": "x", "labels": ["pos"], "train": "a.csv", "dev": "a.csv", "test": "a.csv"})
    )
    with pytest.raises(DataError, match=r"a.csv:3: unknown label 'meh'"):
        get_task(f"csv:{tmp_path / 't.json'}", tmp_path).examples("train")
    (tmp_path / "u.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(DataError, match=r"u.json: task config lacks 'labels'"):
        get_task(f"csv:{tmp_path / 'u.json'}", tmp_path)


def test_unknown_construction(data_dir):
    with pytest.raises(DataError, match="construction 'QA_X'"):
        get_task("semeval:QA_X", data_dir)


def test_unknown_semeval_category_and_missing_id(tmp_path, data_dir):
    rel = "semeval2014/raw/Restaurants_Test_Gold.xml"
    xml = (
        '<sentences><sentence id="9"><text>ok</text><aspectCategories>'
        '<aspectCategory category="drinks" polarity="positive"/></aspectCategories></sentence></sentences>'
    )
    with pytest.raises(DataError, match=r"Restaurants_Test_Gold.xml: sentence 9: unknown category 'drinks'"):
        get_task("semeval", broken_root(tmp_path, data_dir, rel, xml)).examples("test")
    xml = "<sentences><sentence><text>ok</text></sentence></sentences>"
    with pytest.raises(DataError, match=r"sentence #1 lacks an id"):
        get_task("semeval", broken_root(tmp_path, data_dir, rel, xml)).examples("test")
    with pytest.raises(DataError, match=r"no <sentence> elements"):
        get_task("semeval", broken_root(tmp_path, data_dir, rel, "<sentences/>")).examples("test")


def test_bad_sentihood_target(tmp_path, data_dir):
    root = broken_root(
        tmp_path,
        data_dir,
        "sentihood/bert-pair/test_NLI_M.tsv",
        "id\tsentence1\tsentence2\tlabel\n0\ta b\tlocation - 3 - general\tNone\n",
    )
    with pytest.raises(DataError, match=r"test_NLI_M.tsv:2: target 'location - 3 - general'"):
        get_task("sentihood", root).examples("test")


def test_header_only_and_missing_column(tmp_path, data_dir):
    root = broken_root(tmp_path, data_dir, "sst2/train.tsv", "sentence\tlabel\n")
    with pytest.raises(DataError, match=r"train.tsv: no rows"):
        get_task("sst2", root).examples("train")
    root = broken_root(tmp_path, data_dir, "sst2/train.tsv", "text\tlabel\nfine\t1\n")
    with pytest.raises(DataError, match=r"train.tsv:1: header .* lacks column\(s\) sentence"):
        get_task("sst2", root).examples("train")


def test_bad_csv_task_files(tmp_path):
    def config(train: str, kind: str = "sequence", **extra) -> str:
        path = tmp_path / f"{kind}.json"
        path.write_text(
            json.dumps(
                {"name": "x", "kind": kind, "labels": ["a", "b"], "train": train, "dev": train, "test": train, **extra}
            )
        )
        return f"csv:{path}"

    cases = {
        "nolabel.csv": ("id,text_a\n1,hi\n", "sequence", r"nolabel.csv:1: header .* lacks column\(s\) label"),
        "short.csv": ("id,text_a,label\n1,hi\n", "sequence", r"short.csv:2: 2 fields, expected 3"),
        "quote.csv": ('id,text_a,label\n1,"hi,a\n', "sequence", r"quote.csv:\d+: unreadable row"),
        "empty.csv": ("", "sequence", r"empty.csv: missing or empty"),
        "header.csv": ("id,text_a,label\n", "sequence", r"header.csv: no rows"),
        "tags.csv": ("id,text_a,label\n1,the big cat,a b\n", "tagging", r"tags.csv:2: 3 words but 2 labels"),
        "badtag.csv": ("id,text_a,label\n1,the cat,a c\n", "tagging", r"badtag.csv:2: unknown label 'c'"),
    }
    for name, (text, kind, error) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(DataError, match=error):
            get_task(config(name, kind), tmp_path).examples("train")
    with pytest.raises(DataError, match=r"gone.csv: missing or empty"):
        get_task(config("gone.csv"), tmp_path).examples("dev")
    with pytest.raises(DataError, match=r"kind 'graph', expected sequence or tagging"):
        get_task(config("tags.csv", "graph"), tmp_path)
    with pytest.raises(DataError, match=r"labels must be a non-empty list of distinct"):
        get_task(config("tags.csv", labels=["a", "a"]), tmp_path)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(DataError, match=r"broken.json: cannot read task config"):
        get_task(f"csv:{tmp_path / 'broken.json'}", tmp_path)
    with pytest.raises(DataError, match=r"needs its config file"):
        get_task("csv", tmp_path)


def test_unknown_split_protocol_and_option(data_dir):
    with pytest.raises(DataError, match=r"unknown split 'valid'"):
        get_task("pos", data_dir).examples("valid")
    with pytest.raises(DataError, match=r"protocol 'loose'"):
        get_task("sst2", data_dir, "loose")
    with pytest.raises(DataError, match=r"task 'pos' takes no option"):
        get_task("pos:QA_B", data_dir)


def nli_m(rows: list[tuple[str, str, str]]) -> str:
    """A Sentihood NLI_M file from (id, target, label) rows."""
    return "id\tsentence1\tsentence2\tlabel\n" + "".join(f"{i}\ta b\t{t}\t{y}\n" for i, t, y in rows)


ASPECTS4 = ("general", "price", "safety", "transit location")


@pytest.mark.parametrize(
    "rows,error",
    [
        # aspects out of order: the metrics would pair each score with the wrong aspect
        (
            [("0", f"location - 1 - {a}", "None") for a in ("general", "safety", "price", "transit location")],
            r"dev_NLI_M.tsv:3: aspect 'safety' of id 0 location - 1, expected 'price'",
        ),
        # a run that switches sentence half way
        (
            [
                ("0", "location - 1 - general", "None"),
                ("0", "location - 1 - price", "None"),
                ("1", "location - 1 - safety", "None"),
                ("1", "location - 1 - transit location", "None"),
            ],
            r"dev_NLI_M.tsv:4: id 1 location - 1 - safety, expected id 0 location - 1 - safety .*began on line 2",
        ),
        # ... or location
        (
            [("0", f"location - {k} - {a}", "None") for k, a in zip("1112", ASPECTS4)],
            r"dev_NLI_M.tsv:5: id 0 location - 2 - transit location, expected id 0 location - 1 - transit location",
        ),
        # a file that stops inside a run
        (
            [("0", f"location - 1 - {a}", "None") for a in ASPECTS4] + [("1", "location - 1 - general", "None")],
            r"dev_NLI_M.tsv: ends inside the run of id 1 location - 1 begun on line 6, expected runs of 4 rows",
        ),
    ],
)
def test_sentihood_rows_must_come_in_runs_of_four_aspects(tmp_path, data_dir, rows, error):
    root = broken_root(tmp_path, data_dir, "sentihood/bert-pair/dev_NLI_M.tsv", nli_m(rows))
    with pytest.raises(DataError, match=error):
        get_task("sentihood:NLI_M", root).examples("dev")


def test_sentihood_well_formed_runs_read(tmp_path, data_dir):
    rows = [(i, f"location - {k} - {a}", "None") for i, k in (("0", "1"), ("0", "2"), ("1", "1")) for a in ASPECTS4]
    root = broken_root(tmp_path, data_dir, "sentihood/bert-pair/dev_NLI_M.tsv", nli_m(rows))
    assert len(get_task("sentihood", root).examples("dev")) == 12 * 3


def test_semeval_sentence_without_categories(tmp_path, data_dir):
    rel = "semeval2014/raw/Restaurants_Test_Gold.xml"
    ok = (
        '<sentence id="1"><text>ok</text><aspectCategories>'
        '<aspectCategory category="food" polarity="positive"/></aspectCategories></sentence>'
    )
    for missing in (
        '<sentence id="2:7"><text>no categories</text></sentence>',
        '<sentence id="2:7"><text>empty</text><aspectCategories></aspectCategories></sentence>',
    ):
        root = broken_root(tmp_path, data_dir, rel, f"<sentences>{ok}{missing}</sentences>")
        with pytest.raises(DataError, match=r"Restaurants_Test_Gold.xml: sentence 2:7: no <aspectCategories>"):
            get_task("semeval", root).examples("test")


def test_csv_text_b_is_kept_for_every_row(tmp_path):
    """An empty text_b cell is an empty second text, never a reason to drop the other rows' text_b."""
    (tmp_path / "pairs.csv").write_text("id,text_a,text_b,label\n1,good film,loved it,pos\n2,bad film,,neg\n")
    (tmp_path / "single.csv").write_text("id,text_a,label\n1,good film,pos\n")
    (tmp_path / "exported.csv").write_text("id,text_a,text_b,label\n1,good film,,pos\n")  # as sst2 exports write
    for name in ("pairs", "single", "exported"):
        (tmp_path / f"{name}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "labels": ["neg", "pos"],
                    "train": f"{name}.csv",
                    "dev": f"{name}.csv",
                    "test": f"{name}.csv",
                }
            )
        )
    pairs = get_task(f"csv:{tmp_path / 'pairs.json'}", tmp_path).examples("train")
    assert [r.text_b for r in pairs] == ["loved it", ""]
    assert [r.text_b for r in get_task(f"csv:{tmp_path / 'single.json'}", tmp_path).examples("train")] == [None]
    assert [r.text_b for r in get_task(f"csv:{tmp_path / 'exported.json'}", tmp_path).examples("train")] == [None]
    (tmp_path / "tags.csv").write_text("id,text_a,text_b,label\n1,the cat,,a b\n2,a dog,extra,a b\n")
    (tmp_path / "tags.json").write_text(
        json.dumps(
            {
                "name": "t",
                "kind": "tagging",
                "labels": ["a", "b"],
                "train": "tags.csv",
                "dev": "tags.csv",
                "test": "tags.csv",
            }
        )
    )
    with pytest.raises(DataError, match=r"tags.csv:3: text_b 'extra' in a tagging task, expected it empty"):
        get_task(f"csv:{tmp_path / 'tags.json'}", tmp_path).examples("train")


def test_csv_byte_that_is_not_utf8_is_named_on_its_own_line(tmp_path):
    # the decoder reads in 8 KiB chunks: its position is not the file's, so the line is counted from the bytes
    rows = b"".join(b"%d,film number %d is fine,pos\n" % (i, i) for i in range(1, 3000))
    (tmp_path / "big.csv").write_bytes(b"id,text_a,label\n" + rows + b"3000,caf\xe9 au lait,pos\n" + rows)
    (tmp_path / "big.json").write_text(
        json.dumps({"name": "big", "labels": ["neg", "pos"], "train": "big.csv", "dev": "big.csv", "test": "big.csv"})
    )
    with pytest.raises(DataError, match=r"big.csv:3001: byte 0xe9 at column 9 is not UTF-8"):
        get_task(f"csv:{tmp_path / 'big.json'}", tmp_path).examples("train")
