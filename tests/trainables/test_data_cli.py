import csv
import json
import subprocess
import sys

import numpy as np

from trainables.tasks import get_task


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd)


def test_export_semeval_test_is_the_published_qa_b(tmp_path, data_dir):
    out = tmp_path / "semeval_test.csv"
    r = cli("trainables.data", "export", "semeval", "--split", "test", "--out", str(out), "--data-dir", str(data_dir))
    assert r.returncode == 0, r.stderr
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 20000
    assert rows[0]["text_a"] == "the polarity of the aspect price is positive ."
    assert rows[0]["text_b"] == "The bread is top notch as well." and rows[0]["label"] == "0"


def test_export_then_evaluate_round_trip(tmp_path, data_dir):
    task = get_task("semeval", data_dir)
    rows = task.examples("test")
    preds = tmp_path / "p.txt"
    preds.write_text("\n".join("0.9" if ex.label else "0.05" for ex in rows) + "\n")
    r = cli("trainables.evaluate", "semeval", "--split", "test", "--predictions", str(preds), "--data-dir", str(data_dir))
    assert r.returncode == 0, r.stderr
    scores = json.loads(r.stdout)
    assert scores["acc_4way"] == 1.0 and scores["aspect_f1"] == 1.0


def test_evaluate_tagging_rows_are_words(tmp_path, data_dir):
    task = get_task("pos", data_dir)
    gold = [t for ex in task.examples("dev") for t in ex.label]
    probs = np.full((len(gold), 45), 0.01)
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
    r = cli("trainables.data", "export", "sst2", "--split", "test", "--out", str(tmp_path / "y.csv"),
            "--data-dir", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "missing dataset file" in r.stderr
    assert not list(tmp_path.glob("*y.csv*"))
