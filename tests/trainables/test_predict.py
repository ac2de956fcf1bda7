import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trainables.cli import run_main
from trainables.config import TrainConfig
from trainables.model import load_tokenizer
from trainables.predict import BAD_INPUT, CONFIG_FILE, MODEL_FILE, TASKS_FILE, Predictor, main, save_model_dir
from trainables.tasks import DataError, get_task

ROOT = Path(__file__).resolve().parents[2]
CONSTRUCTIONS = [f"{name}{c}" for name in ("semeval", "sentihood") for c in ("", ":NLI_B", ":QA_M", ":NLI_M")]


@pytest.fixture(scope="module")
def model_dir(tiny_winner, tmp_path_factory):
    trainer, config, checkpoint = tiny_winner
    return save_model_dir(tmp_path_factory.mktemp("model") / "m", checkpoint, config, load_tokenizer(config.encoder))


def test_model_dir_is_self_contained_and_loads_weights_only(model_dir, tiny_winner):
    import torch

    _, config, _ = tiny_winner
    # the directory records the summary the encoder was read by (the tiny BERT declares none: [CLS])
    recorded = replace(config, encoder=replace(config.encoder, summary="first"))
    assert config.encoder.summary is None
    assert TrainConfig.from_dict(json.loads((model_dir / CONFIG_FILE).read_text())) == recorded
    state = torch.load(model_dir / MODEL_FILE, weights_only=True)
    assert set(state) == set(tiny_winner[0].model.state_dict())
    assert (model_dir / "encoder" / "config.json").is_file() and (model_dir / "encoder" / "tokenizer.json").is_file()


def test_predictions_equal_the_loops_probabilities(model_dir, tiny_winner, monkeypatch):
    trainer, _, _ = tiny_winner
    predictor = Predictor.load(model_dir)
    semeval, pos = trainer.data["semeval"], trainer.data["pos"]
    # semeval (QA_B): the first dev sentence, 25 rows; the loop's scores are what the metrics read
    sentence = semeval.dev_examples[0].text_b
    expected = semeval.task.scores(trainer.predict("semeval", semeval.dev)[:25])[0]  # (5 aspects, 5 polarities)
    [out] = predictor.predict([sentence])
    assert out["input"] == sentence and out["task"] == "semeval"
    assert list(out["aspects"]) == ["price", "anecdotes", "food", "ambience", "service"]
    for i, aspect in enumerate(out["aspects"].values()):
        assert list(aspect["probabilities"].values()) == pytest.approx(expected[i], abs=1e-5)
        probs = aspect["probabilities"]
        assert aspect["polarity"] == max(probs, key=probs.get) and list(probs) == [
            "positive",
            "neutral",
            "negative",
            "conflict",
            "none",
        ]
    # pos: one tag per whitespace word, the loop's argmax
    words = pos.dev_examples[0].text_a.split(" ")
    tags = trainer.predict("pos", pos.dev)[: len(words)].argmax(1)
    [tagged] = predictor.predict(["  ".join(words)], "pos")  # any whitespace separates words
    assert tagged["words"] == words and tagged["tags"] == [pos.task.labels[t] for t in tags]
    # batched, in chunks of 2 inputs: the same as one at a time
    monkeypatch.setattr("trainables.predict.CHUNK", 2)
    many = predictor.predict([sentence, "Service was slow.", sentence] * 2)
    assert len(many) == 6 and [r["input"] for r in many[:3]] == [sentence, "Service was slow.", sentence]
    for record in (many[0], many[-1]):
        for aspect, value in record["aspects"].items():
            assert value["probabilities"] == pytest.approx(out["aspects"][aspect]["probabilities"], abs=1e-6)


@pytest.mark.parametrize("spec", CONSTRUCTIONS)
def test_inputs_are_built_as_the_examples(spec, data_dir):
    task = get_task(spec, data_dir)
    rows = task.examples("dev")[: task.group_size]
    sentence = rows[0].text_a if task.sentence_side == "a" else rows[0].text_b
    raw = sentence.replace("location - 1", "LOCATION1").replace("location - 2", "LOCATION2").upper()
    built = task.inputs(raw if spec.startswith("sentihood") else sentence)
    assert [(r.text_a, r.text_b) for r in built[: task.group_size]] == [(r.text_a, r.text_b) for r in rows]


def test_decode_aggregates_as_the_metrics(data_dir):
    semeval = get_task("semeval", data_dir)
    rows = semeval.inputs("Great food but slow service.")
    p_yes = np.full(25, 0.1)
    p_yes[2 * 5 + 0] = 0.7  # food: positive
    p_yes[4 * 5 + 2] = 0.3  # service: negative, normalised 0.3 / 0.7
    out = semeval.decode(np.column_stack([1 - p_yes, p_yes]), rows)["aspects"]
    assert out["food"]["polarity"] == "positive" and out["service"]["polarity"] == "negative"
    assert out["price"]["polarity"] == "positive"  # a tie goes to the lower class, as in the metrics
    assert out["service"]["probabilities"]["negative"] == pytest.approx(0.3 / 0.7)
    sentihood = get_task("sentihood:NLI_M", data_dir)
    rows = sentihood.inputs("LOCATION2 is cheap, LOCATION1's safe")
    assert rows[0].text_a == "location - 2 is cheap, location - 1's safe" and len(rows) == 8
    probs = np.tile([0.2, 0.7, 0.1], (8, 1))
    out = sentihood.decode(probs, rows)["locations"]
    assert list(out) == ["LOCATION1", "LOCATION2"] and list(out["LOCATION1"]) == [
        "general",
        "price",
        "safety",
        "transit-location",
    ]
    assert out["LOCATION2"]["safety"] == {
        "polarity": "Positive",
        "probabilities": pytest.approx({"None": 0.2, "Positive": 0.7, "Negative": 0.1}),
    }
    with pytest.raises(DataError, match="no location"):
        sentihood.inputs("a nice area")


def cli(monkeypatch, capsys, *args) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["trainables.predict", *map(str, args)])
    with pytest.raises(SystemExit) as exit:
        run_main(main, BAD_INPUT)
    return exit.value.code, (capsys.readouterr().err.strip().splitlines() or [""])[-1]


def test_cli_writes_one_json_line_per_input(model_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "in.txt").write_text("Great food.\n\n  \nEU rejects German call\n", encoding="utf-8")
    code, _ = cli(
        monkeypatch,
        capsys,
        "--model",
        model_dir,
        "--input",
        tmp_path / "in.txt",
        "--out",
        tmp_path / "p.jsonl",
        "--task",
        "pos",
    )
    records = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert code == 0 and [r["input"] for r in records] == ["Great food.", "EU rejects German call"]
    assert records[1]["task"] == "pos" and len(records[1]["tags"]) == 4


def test_bad_input_is_one_line_and_exit_2(model_dir, tmp_path, monkeypatch, capsys):
    good = tmp_path / "in.txt"
    good.write_text("fine\n")
    out = tmp_path / "p.jsonl"
    (tmp_path / "empty.txt").write_text("\n \n")
    (tmp_path / "latin1.txt").write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / CONFIG_FILE).write_text((model_dir / CONFIG_FILE).read_text())
    cases = {
        ("--input", tmp_path / "nope.txt"): "--input",
        ("--input", tmp_path / "empty.txt"): "no non-empty line",
        ("--input", tmp_path / "latin1.txt"): "latin1.txt:2: not UTF-8",
        ("--task", "sst2"): "this model has no task 'sst2': it has semeval, pos",
        ("--model", broken): "missing tasks.json, model.pt, encoder/config.json",
        ("--model", tmp_path / "absent"): "no such directory",
    }
    for change, message in cases.items():
        args = {"--model": model_dir, "--input": good, "--out": out, **dict([change])}
        code, line = cli(monkeypatch, capsys, *[x for kv in args.items() for x in kv])
        assert code == 2 and line.startswith("error: ") and message in line, (change, line)
    assert not out.exists()
    # and as a real process: exactly one line on stderr
    r = subprocess.run(
        [sys.executable, "-m", "trainables.predict", "--model", str(broken), "--input", str(good), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "missing tasks.json" in r.stderr, r.stderr


def test_core_predicts_without_mlflow(model_dir, tmp_path):
    (tmp_path / "in.txt").write_text("Great food.\n")
    args = ["--model", str(model_dir), "--input", str(tmp_path / "in.txt"), "--out", str(tmp_path / "p.jsonl")]
    code = (
        "import sys\n"
        "from trainables.predict import main\n"
        f"assert main({args!r}) == 0\n"
        "print(sorted(m for m in ('mlflow', 'ray') if m in sys.modules))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[-1] == "[]" and len((tmp_path / "p.jsonl").read_text().splitlines()) == 1


def test_a_model_uri_needs_the_orchestration_adapter(model_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "in.txt").write_text("Great food.\n")
    args = ["--input", tmp_path / "in.txt", "--out", tmp_path / "p.jsonl"]
    for uri in ("models:/absa-best/1", "runs:/abc/model", "s3://bucket/model"):
        code, line = cli(monkeypatch, capsys, "--model", uri, *args)
        assert code == 2 and line.startswith(f"error: --model {uri}: an MLflow model URI")
        assert f"python -m search.predict --model {uri} " in line
    assert not (tmp_path / "p.jsonl").exists()
    asked = []

    def resolve(uri: str, tracking_uri: str | None) -> Path:
        asked.append((uri, tracking_uri))
        return model_dir

    argv = ["--model", "models:/absa-best/1", "--tracking-uri", "sqlite:///m.db", *map(str, args)]
    assert main(argv, resolve_model=resolve) == 0
    assert asked == [("models:/absa-best/1", "sqlite:///m.db")]
    assert json.loads((tmp_path / "p.jsonl").read_text())["task"] == "semeval"


def study_tasks(root: Path) -> tuple[str, str, str]:
    """Three ``csv:`` tasks as a study lays them out, each folder's ``task.json`` declaring its name:
    reviews (single texts), tags (tagging) and pairs (text pairs)."""
    files = {
        "reviews": ("id,text_a,label\n1,good film,pos\n2,bad film,neg\n", "sequence", ["neg", "pos"]),
        "tags": ("id,text_a,label\n1,the cat,D N\n2,a dog barks,D N V\n", "tagging", ["D", "N", "V"]),
        "pairs": ("id,text_a,text_b,label\n1,good,film,pos\n2,bad,film,neg\n", "sequence", ["neg", "pos"]),
    }
    for name, (rows, kind, labels) in files.items():
        (root / name).mkdir(parents=True)
        (root / name / "data.csv").write_text(rows)
        split = {"train": "data.csv", "dev": "data.csv", "test": "data.csv"}
        (root / name / "task.json").write_text(json.dumps({"name": name, "kind": kind, "labels": labels, **split}))
    return tuple(f"csv:{root / name / 'task.json'}" for name in files)  # type: ignore[return-value]


def test_csv_tasks_are_known_by_their_declared_names(tiny_bert, tmp_path, monkeypatch, capsys):
    from trainables.config import EncoderConfig
    from trainables.model import build_model

    reviews, tags, pairs = study_tasks(tmp_path / "study")
    config = TrainConfig(tasks=(reviews, tags, pairs), primary=reviews, encoder=EncoderConfig(model=str(tiny_bert)))
    heads = {reviews: (2, "sequence"), tags: (3, "tagging"), pairs: (2, "sequence")}
    state = build_model(config.encoder, heads).state_dict()
    out = save_model_dir(tmp_path / "model", state, config, load_tokenizer(config.encoder))
    assert list(json.loads((out / TASKS_FILE).read_text())) == ["reviews", "tags", "pairs"]
    shutil.rmtree(tmp_path / "study")  # the directory holds copies of the task files
    predictor = Predictor.load(out)
    [first] = predictor.predict(["a good film"])
    assert first["task"] == "reviews" and set(first["probabilities"]) == {"neg", "pos"}
    [tagged] = predictor.predict(["the cat"], "tags")
    assert tagged["task"] == "tags" and tagged["words"] == ["the", "cat"] and set(tagged["tags"]) <= {"D", "N", "V"}
    assert predictor.predict(["good\tfilm"], "pairs")[0]["task"] == "pairs"
    assert predictor.predict(["a good film"], reviews) == [first]  # the spec as trained still names it
    (tmp_path / "in.txt").write_text("good\tfilm\n")
    files = ["--model", out, "--input", tmp_path / "in.txt", "--out", tmp_path / "p.jsonl"]
    assert cli(monkeypatch, capsys, *files, "--task", "pairs")[0] == 0
    assert json.loads((tmp_path / "p.jsonl").read_text())["task"] == "pairs"
    assert cli(monkeypatch, capsys, *files, "--task", "nope") == (
        2,
        "error: this model has no task 'nope': it has reviews, tags, pairs",
    )
    # a directory saved before names its tasks by spec: it loads, and answers by name as well
    copies = json.loads((out / TASKS_FILE).read_text())
    (out / TASKS_FILE).write_text(json.dumps(dict(zip(config.tasks, copies.values()))))
    assert Predictor.load(out).predict(["a good film"], "reviews") == [first]


def test_a_caveat_in_about_json_is_said_once(model_dir, tmp_path, monkeypatch, capsys, caplog):
    # (on stderr: tests/search/tracking/test_registry.py runs search.predict as a process)
    demo = tmp_path / "demo"
    shutil.copytree(model_dir, demo)
    caveat = "this model is not shown to beat a constant predictor; do not use its predictions"
    (demo / "about.json").write_text(json.dumps({"summary": "absa, smoke preset", "caveat": caveat}))
    (tmp_path / "in.txt").write_text("The bread is top notch.\nService was slow.\nPrices are high.\n")
    args = ["--model", demo, "--input", tmp_path / "in.txt", "--out", tmp_path / "o"]
    monkeypatch.setattr(sys, "argv", ["trainables.predict", *map(str, args)])
    with pytest.raises(SystemExit) as exit:
        run_main(main, BAD_INPUT)
    said = [r for r in caplog.records if caveat in r.getMessage()]
    assert exit.value.code == 0 and len(said) == 1 and said[0].levelname == "WARNING", caplog.text
    assert all(caveat not in line for line in (tmp_path / "o").read_text().splitlines())
    assert Predictor.load(model_dir).caveat is None  # no about.json: nothing said
    (demo / "about.json").write_text("[1, 2]")
    code, line = cli(monkeypatch, capsys, *args)
    assert code == 2 and line.startswith("error: model directory") and "expected an object" in line
