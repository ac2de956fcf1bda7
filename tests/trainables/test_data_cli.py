import csv
import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from trainables.data import export
from trainables.tasks import DataError, get_task


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd)


def exported(task: str, tmp_path, data_dir) -> list[dict]:
    """The test split's rows as ``python -m trainables.data export`` writes them."""
    out = tmp_path / f"{task}_test.csv"
    r = cli("trainables.data", "export", task, "--split", "test", "--out", str(out), "--data-dir", str(data_dir))
    assert r.returncode == 0, r.stderr
    with out.open(newline="") as f:
        return list(csv.DictReader(f))


def test_export_semeval_test_is_the_published_qa_b(tmp_path, data_dir):
    rows = exported("semeval", tmp_path, data_dir)
    assert len(rows) == 20000
    assert rows[0]["text_a"] == "the polarity of the aspect price is positive ."
    assert rows[0]["text_b"] == "The bread is top notch as well." and rows[0]["label"] == "0"
    assert (rows[-1]["id"], rows[-1]["text_a"], rows[-1]["text_b"], rows[-1]["label"]) == (
        "11351628#404492#3/service/none",
        "the polarity of the aspect service is none .",
        "Creamy appetizers--taramasalata, eggplant salad, and Greek yogurt (with cuccumber, dill, and garlic) "
        "taste excellent when on warm pitas.",
        "1",
    )
    # every row, in order: equal to Sun et al.'s NLI_M -> QA_B scripts run on the XML (text right-stripped)
    digest = hashlib.sha1("".join(f"{r['text_a']}\t{r['text_b']}\t{r['label']}\n" for r in rows).encode())
    assert digest.hexdigest() == "a635186e2e12709694155ab3c3135382982d42d9"


def test_export_sentihood_test_is_the_published_qa_b(tmp_path, data_dir):
    ours = exported("sentihood", tmp_path, data_dir)
    with (data_dir / "sentihood" / "bert-pair" / "test_QA_B.tsv").open(newline="") as f:
        published = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert len(ours) == len(published) == 22548
    assert [(r["id"].split("/")[0], r["text_a"], r["text_b"], r["label"]) for r in ours] == [
        (r["id"], r["sentence2"], r["sentence1"], r["label"]) for r in published
    ]


def test_export_then_evaluate_round_trip(tmp_path, data_dir):
    task = get_task("semeval", data_dir)
    rows = task.examples("test")
    preds = tmp_path / "p.txt"
    preds.write_text("\n".join("0.9" if ex.label else "0.05" for ex in rows) + "\n")
    r = cli(
        "trainables.evaluate", "semeval", "--split", "test", "--predictions", str(preds), "--data-dir", str(data_dir)
    )
    assert r.returncode == 0, r.stderr
    scores = json.loads(r.stdout)
    assert scores["acc_4way"] == 1.0 and scores["aspect_f1"] == 1.0


def test_evaluate_tagging_rows_are_words(tmp_path, data_dir):
    task = get_task("pos", data_dir)
    gold = [t for ex in task.examples("dev") for t in ex.label]
    probs = np.full((len(gold), 45), 0.5 / 44)  # rows are distributions: each sums to 1
    probs[np.arange(len(gold)), gold] = 0.5
    probs[::2] = 1 / 45  # every other word: uniform -> class 0, mostly wrong
    np.savetxt(tmp_path / "p.txt", probs, fmt="%.4f")
    r = cli("trainables.evaluate", "pos", "--split", "dev", "--predictions", str(tmp_path / "p.txt"))
    assert r.returncode == 0, r.stderr
    expected = np.mean(np.where(np.arange(len(gold)) % 2 == 0, np.array(gold) == 0, True))
    assert abs(json.loads(r.stdout)["token_acc"] - expected) < 1e-9


def test_bad_inputs_fail_with_one_line(tmp_path, data_dir):
    short = tmp_path / "short.txt"
    short.write_text("0.5\n0.5\n")
    r = cli("trainables.evaluate", "semeval", "--split", "test", "--predictions", str(short))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "2 prediction lines, expected 20000" in r.stderr
    r = cli("trainables.data", "export", "semevl", "--split", "test", "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 2 and "unknown task 'semevl'" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "x.csv").exists()
    r = cli(
        "trainables.data",
        "export",
        "sst2",
        "--split",
        "test",
        "--out",
        str(tmp_path / "y.csv"),
        "--data-dir",
        str(tmp_path / "nowhere"),
    )
    assert r.returncode == 2 and "missing dataset file" in r.stderr
    assert not list(tmp_path.glob("*y.csv*"))


def one_line_error(r, *parts):
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    for part in parts:
        assert part in r.stderr, r.stderr


def test_export_tagging_and_multiclass_labels_are_names(tmp_path, data_dir):
    out = tmp_path / "pos.csv"
    r = cli("trainables.data", "export", "pos", "--split", "test", "--out", str(out), "--data-dir", str(data_dir))
    assert r.returncode == 0 and r.stderr == f"wrote 3453 rows of pos test to {out}\n"
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(len(row["text_a"].split(" ")) == len(row["label"].split(" ")) for row in rows)
    assert rows[0]["label"].split(" ")[:2] == ["NN", ":"] and rows[0]["text_b"] == ""
    assert not [p for p in tmp_path.iterdir() if p.name != "pos.csv"]  # no temp file left behind


def test_export_is_a_csv_task(tmp_path, data_dir):
    """An export of a multiclass construction reads back, row for row, as a ``csv:`` task."""
    from trainables.data import export

    task = get_task("sentihood:NLI_M", data_dir, "thesis")
    assert export(task, "dev", tmp_path / "dev.csv") == 3748
    (tmp_path / "t.json").write_text(
        json.dumps({"name": "sh", "labels": list(task.labels), "train": "dev.csv", "dev": "dev.csv", "test": "dev.csv"})
    )
    back = get_task(f"csv:{tmp_path / 't.json'}", tmp_path).examples("dev")
    assert back == task.examples("dev")


def test_bad_arguments_fail_with_one_line(tmp_path):
    one_line_error(
        cli("trainables.data", "export", "pos", "--split", "valid", "--out", "x.csv"), "invalid choice: 'valid'"
    )
    one_line_error(cli("trainables.data"), "required: command")
    one_line_error(cli("trainables.evaluate", "pos", "--split", "dev"), "--predictions")
    one_line_error(
        cli("trainables.evaluate", "pos", "--split", "dev", "--predictions", str(tmp_path / "none.txt")), "none.txt"
    )


def test_evaluate_multiclass_and_two_class_files(tmp_path, data_dir):
    # semeval:NLI_M takes 5 probabilities per line; one line too narrow is named
    rows = get_task("semeval:NLI_M", data_dir).examples("test")
    probs = np.full((len(rows), 5), 0.1)
    probs[np.arange(len(rows)), [ex.label for ex in rows]] = 0.6
    np.savetxt(tmp_path / "m.csv", probs, delimiter=",", fmt="%.2f")
    r = cli("trainables.evaluate", "semeval:NLI_M", "--split", "test", "--predictions", str(tmp_path / "m.csv"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "acc_4way": 1.0,
        "acc_3way": 1.0,
        "acc_2way": 1.0,
        "aspect_precision": 1.0,
        "aspect_recall": 1.0,
        "aspect_f1": 1.0,
    }
    lines = (tmp_path / "m.csv").read_text().splitlines()
    lines[6] = "0.5,0.5"
    (tmp_path / "m.csv").write_text("\n".join(lines) + "\n")
    r = cli("trainables.evaluate", "semeval:NLI_M", "--split", "test", "--predictions", str(tmp_path / "m.csv"))
    one_line_error(r, "m.csv:7: 2 values, expected 5 per line")
    # a two-class task takes P(class 1) alone or both columns, with the same result
    from trainables.evaluate import evaluate

    task = get_task("sst2", data_dir)
    p1 = np.random.default_rng(0).random(872)
    np.savetxt(tmp_path / "one.txt", p1)
    np.savetxt(tmp_path / "two.txt", np.column_stack([1 - p1, p1]))
    assert evaluate(task, "test", tmp_path / "one.txt") == evaluate(task, "test", tmp_path / "two.txt")


def evaluate_sentihood_dev(tmp_path, aspects):
    """``trainables.evaluate`` on a Sentihood dev file of one sentence and location, one row per
    aspect in ``aspects`` (all None), with predictions that say None for each."""
    root = tmp_path / "data"
    (root / "sentihood" / "bert-pair").mkdir(parents=True)
    (root / "sentihood" / "bert-pair" / "dev_NLI_M.tsv").write_text(
        "id\tsentence1\tsentence2\tlabel\n" + "".join(f"0\tnice\tlocation - 1 - {a}\tNone\n" for a in aspects)
    )
    (tmp_path / "p.txt").write_text("0.9\n0.05\n0.05\n" * len(aspects))
    return cli(
        "trainables.evaluate",
        "sentihood",
        "--split",
        "dev",
        "--predictions",
        str(tmp_path / "p.txt"),
        "--data-dir",
        str(root),
    )


def test_evaluate_prints_undefined_metrics_as_null(tmp_path, data_dir):
    # one (sentence, location) with every aspect None: no AUC is defined
    r = evaluate_sentihood_dev(tmp_path, ("general", "price", "safety", "transit location"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["strict_acc"] == 1.0 and out["aspect_auc"] is None and out["sentiment_acc"] is None


def test_download_checks_blobs_and_fails_in_one_line_offline(tmp_path, data_dir, monkeypatch, capsys):
    import urllib.error

    from trainables import data
    from trainables.cli import run_main

    def offline(url, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(data.urllib.request, "urlopen", offline)
    assert data.download(data_dir) == 0  # every file present with its README blob: nothing fetched
    monkeypatch.setattr(sys, "argv", ["trainables.data", "download", "--data-dir", str(tmp_path)])
    with pytest.raises(SystemExit) as exit_:
        run_main(data.main, (DataError, OSError))
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: cannot fetch https://raw.githubusercontent.com/") and "no network" in err
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_train_bad_arguments_fail_with_one_line():
    one_line_error(cli("trainables.train"), "required: --tasks", "python -m trainables.train --help")
    one_line_error(
        cli("trainables.train", "--tasks", "sst2", "--epochs", "two"), "--epochs", "invalid int value: 'two'"
    )
    one_line_error(cli("trainables.train", "--tasks", "sst2", "--sampling", "cubic"), "invalid choice: 'cubic'")


@pytest.mark.parametrize(
    "value,shown", [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("1.5", "1.5"), ("-0.1", "-0.1")]
)
def test_evaluate_rejects_non_finite_and_out_of_range_values(tmp_path, data_dir, value, shown):
    p1 = np.full(872, 0.5)
    lines = [f"{x:.2f}" for x in p1]
    lines[9] = value
    (tmp_path / "p.txt").write_text("\n".join(lines) + "\n")
    r = cli("trainables.evaluate", "sst2", "--split", "test", "--predictions", str(tmp_path / "p.txt"))
    one_line_error(r, f"p.txt:10: value {shown}, expected a finite probability in [0, 1]")
    # the same inside a row of class probabilities
    (tmp_path / "q.txt").write_text("0.5 0.5\n" * 3 + f"0.5 {value}\n" + "0.5 0.5\n" * 868)
    r = cli("trainables.evaluate", "sst2", "--split", "test", "--predictions", str(tmp_path / "q.txt"))
    one_line_error(r, f"q.txt:4: value {shown}, expected a finite probability in [0, 1]")


def test_evaluate_refuses_bytes_that_are_not_utf8_and_rows_that_are_no_distribution(
    tmp_path, data_dir, monkeypatch, capsys
):
    from trainables import evaluate
    from trainables.cli import run_main

    def error(predictions: str, text: bytes) -> str:
        (tmp_path / predictions).write_bytes(text)
        monkeypatch.setattr(
            sys,
            "argv",
            [
                "trainables.evaluate",
                "sst2",
                "--split",
                "test",
                "--predictions",
                str(tmp_path / predictions),
                "--data-dir",
                str(data_dir),
            ],
        )
        with pytest.raises(SystemExit) as exit_:
            run_main(evaluate.main, (DataError, OSError))
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
        return err

    assert "p.txt:3: byte 0xff at column 2 is not UTF-8" in error("p.txt", b"0.5\n0.5\n0\xff.5\n" + b"0.5\n" * 869)
    assert "q.txt:2: values sum to 1.8, expected a distribution" in error("q.txt", b"0.1 0.9\n0.9 0.9\n" * 436)
    assert "r.txt:1: values sum to 0.9" in error("r.txt", b"0.5 0.4\n" * 872)
    (tmp_path / "s.txt").write_text("0.3333 0.6667\n" * 872)  # rounded rows still are distributions
    assert evaluate.evaluate(get_task("sst2", data_dir), "test", tmp_path / "s.txt")["acc"] >= 0


def test_evaluate_metric_shape_errors_are_one_line(tmp_path, data_dir, monkeypatch):
    # a Sentihood file whose rows do not form runs of 4 aspects fails on read, naming the line ...
    r = evaluate_sentihood_dev(tmp_path, ("general", "price", "safety"))
    one_line_error(r, "dev_NLI_M.tsv: ends inside the run of id 0 location - 1 begun on line 2")
    # ... and any shape error a task's metrics still raise becomes a DataError naming the predictions
    from trainables.evaluate import evaluate
    from trainables.tasks.sst2 import SST2

    def broken(self, probs, examples):
        raise ValueError("7 aspect rows do not split into groups of 4")

    monkeypatch.setattr(SST2, "metrics", broken)
    np.savetxt(tmp_path / "s.txt", np.full(872, 0.5))
    with pytest.raises(DataError, match=r"s.txt: cannot score sst2 test: 7 aspect rows do not split into groups of 4"):
        evaluate(get_task("sst2", data_dir), "test", tmp_path / "s.txt")


SEMEVAL_FIRST = "The bread is top notch as well."
SENTIHOOD_FIRST = "if you want to go out drinking where the cool kids go head to location - 1"
# Sun et al.'s processor.py: the B processors feed the auxiliary sentence as text_a, the M ones
# (Semeval_/Sentihood_{NLI,QA}_M_Processor) the sentence as text_a: [CLS] sentence [SEP] auxiliary [SEP]
FIRST_ROWS = {
    "semeval": ("the polarity of the aspect price is positive .", SEMEVAL_FIRST),
    "semeval:NLI_B": ("positive - price", SEMEVAL_FIRST),
    "semeval:QA_M": (SEMEVAL_FIRST, "what do you think of the price of it ?"),
    "semeval:NLI_M": (SEMEVAL_FIRST, "price"),
    "sentihood": ("the polarity of the aspect general of location - 1 - is None .", SENTIHOOD_FIRST),
    "sentihood:NLI_B": ("None - location - 1 - general", SENTIHOOD_FIRST),
    "sentihood:QA_M": (SENTIHOOD_FIRST, "what do you think of the general of location - 1 ?"),
    "sentihood:NLI_M": (SENTIHOOD_FIRST, "location - 1 - general"),
}


@pytest.mark.parametrize("spec", sorted(FIRST_ROWS))
def test_export_puts_each_construction_in_sun_et_als_order(spec, tmp_path, data_dir):
    out = tmp_path / "rows.csv"
    export(get_task(spec, data_dir), "test", out)
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert (rows[0]["text_a"], rows[0]["text_b"]) == FIRST_ROWS[spec]
    sentence_first = spec.endswith("_M")
    assert get_task(spec, data_dir).sentence_side == ("a" if sentence_first else "b")
    if spec == "sentihood:NLI_M":  # the published file, column for column: sentence1 = text_a
        with (data_dir / "sentihood" / "bert-pair" / "test_NLI_M.tsv").open(newline="") as f:
            published = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        assert [(r["text_a"], r["text_b"], r["label"]) for r in rows] == [
            (r["sentence1"], r["sentence2"], r["label"]) for r in published
        ]
