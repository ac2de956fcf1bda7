import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trainables.cli import run_main
from trainables.config import TrainConfig
from trainables.model import load_tokenizer
from trainables.predict import BAD_INPUT, CONFIG_FILE, MODEL_FILE, Predictor, main, save_model_dir
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
