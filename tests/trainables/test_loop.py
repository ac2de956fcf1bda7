import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import strip_timing, tiny_config

from spaces.studies import Preset
from trainables.batching import IGNORE, Padding, collate, encode
from trainables.config import ConfigError, EncoderConfig, SamplingConfig, TrainConfig
from trainables.exposure import PRIMARY_PASSES, primary_passes
from trainables.loop import DivergedError, Trainer, prepare_data, train
from trainables.model import DEFAULT_MODEL, build_model, default_summary, load_tokenizer, resolve_model_path, summarize
from trainables.rows import limit_rows, training_sizes
from trainables.tasks import get_task


def test_run_reports_every_epoch_with_distribution(tiny_bert):
    epochs = list(train(tiny_config(tiny_bert)))
    assert [e["epoch"] for e in epochs] == [1.0, 2.0]
    first, last = epochs
    # anneal: a(0) = 1 -> prop over weights (4, 2, 2)
    assert first["sampling/p/semeval"] == pytest.approx(0.5)
    assert last["sampling/p/semeval"] == pytest.approx(4**0.55 / (4**0.55 + 2 * 2**0.55))
    assert "semeval/dev/acc_4way" in first and "semeval/test/acc_4way" not in first
    assert {"semeval/test/acc_4way", "sst2/test/acc", "pos/test/token_acc"} <= set(last)


def test_a_run_reports_when_its_predictions_were_last_constant_and_last_not(tiny_bert, monkeypatch, tmp_path):
    from trainables.results import DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL

    constant = iter([False, True, True])  # learned after epoch 1, one answer after epochs 2 and 3
    monkeypatch.setattr("trainables.loop.is_degenerate", lambda *predicted: next(constant))
    first = Trainer(tiny_config(tiny_bert, epochs=3))
    reports = [first.run_epoch()]
    first.save(tmp_path / "ckpt.pt")  # the flags survive a checkpoint
    second = Trainer(tiny_config(tiny_bert, epochs=3))
    second.load(tmp_path / "ckpt.pt")
    reports += [second.run_epoch(), second.run_epoch()]
    flags = [[r[k] for k in (DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL)] for r in reports]
    assert flags == [[0, 0, 1], [1, 2, 1], [1, 3, 1]]


def test_loss_falls_on_a_tiny_model(tiny_bert):
    config = tiny_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=4, max_train_examples=64, lr=3e-3)
    losses = [e["train/loss"] for e in train(config)]
    assert losses[-1] < 0.8 * losses[0]


def test_same_seed_same_metrics_and_resume_is_exact(tiny_bert, tmp_path):
    config = tiny_config(tiny_bert, epochs=2)
    straight = strip_timing(train(config))
    assert strip_timing(train(config)) == straight
    # stop after one epoch, restore into a fresh trainer, finish
    first = Trainer(config)
    resumed = [first.run_epoch()]
    first.save(tmp_path / "ckpt.pt")
    second = Trainer(config)
    second.load(tmp_path / "ckpt.pt")
    resumed += [second.run_epoch()]
    assert strip_timing(resumed) == straight


def test_a_screen_point_inside_an_epoch_changes_nothing_after_it(tiny_bert, tmp_path):
    """An evaluation half-way through the first epoch, checkpointed and resumed in a fresh trainer, leaves
    every later epoch's metrics as an uninterrupted run has them (the epoch's metrics cover both halves)."""
    config = tiny_config(tiny_bert, epochs=2, max_train_examples=48)
    straight = strip_timing(train(config))
    first = Trainer(config)
    screen = first.run_to(0.5)
    assert screen["epoch"] == 0.5 and 0 < first.step < first.steps_per_epoch and first.epoch == 0
    assert "semeval/dev/acc_4way" in screen and "semeval/test/acc_4way" not in screen
    assert sum(v for k, v in screen.items() if k.startswith("sampling/steps/")) == first.step
    first.save(tmp_path / "screen.pt")
    second = Trainer(config)
    second.load(tmp_path / "screen.pt")
    assert (second.epoch, second.step) == (0, first.step)
    assert strip_timing([second.run_to(1), second.run_to(2)]) == straight
    with pytest.raises(ValueError, match="cannot train to epoch 1.5 from 2"):
        second.run_to(1.5)


def test_a_late_seed_catches_up_to_a_screen_point(tiny_bert):
    """run_to trains the epochs on the way without evaluating them: a seed added late reaches any point."""
    config = tiny_config(tiny_bert, epochs=2, max_train_examples=48)
    straight = strip_timing(train(config))
    late = Trainer(config)
    assert strip_timing([late.run_to(2)]) == straight[1:]


def test_interleaved_seeds_match_standalone_runs(tiny_bert):
    a, b = (tiny_config(tiny_bert, seed=s, epochs=2) for s in (1, 2))
    alone = strip_timing(train(a))
    ta, tb = Trainer(a), Trainer(b)
    mixed = []
    for _ in range(2):
        mixed.append(ta.run_epoch())
        tb.run_epoch()
    assert strip_timing(mixed) == alone


def test_different_seed_differs(tiny_bert):
    a = strip_timing(train(tiny_config(tiny_bert, epochs=1, seed=1)))
    b = strip_timing(train(tiny_config(tiny_bert, epochs=1, seed=2)))
    assert a != b


def test_summary_defaults_to_the_pooling_the_encoder_declares(tiny_bert, tmp_path):
    import shutil

    from transformers import AutoConfig

    declared = tmp_path / "st"
    shutil.copytree(tiny_bert, declared)
    (declared / "1_Pooling").mkdir()
    (declared / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    heads = {"sst2": (2, "sequence")}
    assert build_model(EncoderConfig(str(declared)), heads).summary == "mean"
    assert build_model(EncoderConfig(str(declared), summary="first"), heads).summary == "first"
    assert build_model(EncoderConfig(str(tiny_bert)), heads).summary == "first"
    # the packaged MiniLM is a sentence-transformers folder trained for mean pooling
    minilm = resolve_model_path(DEFAULT_MODEL)
    assert default_summary(AutoConfig.from_pretrained(minilm), minilm) == "mean"


def test_xlnet_left_padding_and_last_token_summary(tiny_xlnet):
    # long enough that rows differ in length (the tiny vocabulary spells most words out)
    config = tiny_config(
        tiny_xlnet, tasks=("semeval", "pos"), epochs=1, encoder=EncoderConfig(str(tiny_xlnet), max_seq_length=256)
    )
    trainer = Trainer(config)
    assert trainer.padding.left and trainer.model.summary == "last"
    # a real XLNet tokenizer: text_a <sep> text_b <sep> <cls>, segments 0 / 1 / 2, pads on the left
    from trainables.batching import collate
    from trainables.model import load_tokenizer

    cls_id = load_tokenizer(config.encoder).cls_token_id
    semeval = trainer.data["semeval"].train
    lengths = semeval.lengths()
    rows = np.array([lengths.argmin(), lengths.argmax(), 0, 1])
    assert lengths[rows[0]] < lengths[rows[1]]
    batch = collate(semeval, rows, trainer.padding, "sequence")
    last = (batch["attention_mask"] * torch.arange(batch["attention_mask"].shape[1])).argmax(1)
    assert (batch["input_ids"][torch.arange(len(rows)), last] == cls_id).all()  # the summarised token is <cls>
    assert (batch["attention_mask"][:, -1] == 1).all() and (batch["attention_mask"][:, 0] == 0).any()
    real = batch["token_type_ids"][batch["attention_mask"] == 1]
    assert set(real.tolist()) == {0, 1, 2}
    metrics = trainer.run_epoch()
    assert 0.0 <= metrics["semeval/dev/acc_4way"] <= 1.0 and 0.0 <= metrics["pos/dev/token_acc"] <= 1.0


@pytest.mark.parametrize(
    "how,right_padded,left_padded",
    [
        # hidden value = position; row 0 has 2 real tokens, row 1 has 4 (no padding)
        ("first", [0, 4], [2, 4]),  # left padding: the first *real* token, not the pad at 0
        ("last", [1, 7], [3, 7]),
        ("mean", [0.5, 5.5], [2.5, 5.5]),
    ],
)
def test_summaries_pick_the_right_positions(how, right_padded, left_padded):
    hidden = torch.arange(2 * 4 * 1, dtype=torch.float32).reshape(2, 4, 1)  # (B, T, H)
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    assert summarize(hidden, right, how).flatten().tolist() == right_padded
    assert summarize(hidden, left, how).flatten().tolist() == left_padded


def test_dynamic_padding_and_first_subtoken_labels(tiny_bert, data_dir):
    tokenizer = load_tokenizer(EncoderConfig(model=str(tiny_bert)))
    task = get_task("pos", data_dir)
    rows = task.examples("dev")[:6]
    data = encode(rows, "tagging", tokenizer, 128)
    batch = collate(data, np.arange(6), Padding.of(tokenizer), "tagging")
    assert batch["input_ids"].shape[1] == data.lengths().max()
    labels = batch["labels"]
    # one label per word, on its first sub-token; [CLS], [SEP], pads and continuations ignored
    for i, ex in enumerate(rows):
        assert (labels[i] != IGNORE).sum().item() == len(ex.label)
        assert labels[i][labels[i] != IGNORE].tolist() == list(ex.label)
    fixed = collate(data, np.arange(6), Padding.of(tokenizer), "tagging", fixed_length=128)
    assert fixed["input_ids"].shape[1] == 128


def test_limits_keep_whole_groups():
    assert limit_rows(100, None, 25, True).tolist() == list(range(100))
    assert limit_rows(100, 60, 25, True).tolist() == list(range(50))
    sample = limit_rows(1000, 60, 25, False)
    assert len(sample) == 50 and (sample.reshape(2, 25) % 25 == np.arange(25)).all()
    assert limit_rows(100, 3, 25, True).tolist() == list(range(25))


def test_auxiliaries_are_scored_on_their_own_limit(tiny_bert):
    config = tiny_config(tiny_bert, tasks=("semeval", "sst2"), max_eval_examples=100, max_auxiliary_eval_examples=20)
    assert (config.eval_limit("semeval"), config.eval_limit("sst2")) == (100, 20)
    data = prepare_data(config, load_tokenizer(config.encoder))
    assert len(data["semeval"].dev_examples) == len(data["semeval"].test_examples) == 100  # 4 groups of 25
    assert len(data["sst2"].dev_examples) == len(data["sst2"].test_examples) == 20
    assert tiny_config(tiny_bert, max_eval_examples=30).eval_limit("sst2") == 30  # unset: as the primary's


def test_tokenization_is_cached(tiny_bert, cache_dir):
    config = tiny_config(tiny_bert, tasks=("sst2",), primary="sst2")
    tokenizer = load_tokenizer(config.encoder)
    prepare_data(config, tokenizer)
    files = set(cache_dir.glob("*.pkl"))
    again = prepare_data(config, tokenizer)
    assert set(cache_dir.glob("*.pkl")) == files and len(again["sst2"].train) == 100


def test_nan_loss_raises_with_location(tiny_bert):
    trainer = Trainer(tiny_config(tiny_bert, epochs=1))
    with torch.no_grad():
        for p in trainer.model.heads["sst2"].parameters():
            p.fill_(float("nan"))
    with pytest.raises(DivergedError, match=r"loss became nan at epoch 1 step \d+ on task sst2"):
        trainer.run_epoch()


def test_core_runs_without_ray_or_mlflow(tiny_bert, data_dir):
    code = (
        "import sys; from trainables.config import *; from trainables.loop import train; "
        f"list(train(TrainConfig(tasks=('sst2',), primary='sst2', epochs=1, max_train_examples=16, "
        f"max_eval_examples=16, encoder=EncoderConfig(model={str(tiny_bert)!r}))));"
        "assert 'ray' not in sys.modules and 'mlflow' not in sys.modules, 'core imported ray/mlflow'"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_train_cli_bad_input_is_one_line(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainables.train",
            "--tasks",
            "semeval,sst2",
            "--primary",
            "pos",
            "--metrics-out",
            str(tmp_path / "m.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.strip() == "error: primary task 'pos' is not among tasks semeval,sst2"
    assert not (tmp_path / "m.json").exists()


def csv_task(root, name: str, pairs: bool) -> str:
    """A ``csv:`` spec (its path holds dots) for a small two-class task, with or without text_b."""
    words = ["good", "great", "fine", "bad", "awful", "poor"]
    rows = ["id,text_a,text_b,label" if pairs else "id,text_a,label"]
    for i in range(48):
        w = words[i % 6]
        b = "" if i % 5 == 0 else f"the {w} one"  # some empty text_b cells
        rows.append(
            f"{i},a {w} film,{b},{'pos' if i % 6 < 3 else 'neg'}"
            if pairs
            else f"{i},a {w} film,{'pos' if i % 6 < 3 else 'neg'}"
        )
    (root / f"{name}.v1.csv").write_text("\n".join(rows) + "\n")
    config = root / f"{name}.task.json"
    config.write_text(
        json.dumps(
            {
                "name": name,
                "labels": ["neg", "pos"],
                "train": f"{name}.v1.csv",
                "dev": f"{name}.v1.csv",
                "test": f"{name}.v1.csv",
            }
        )
    )
    return f"csv:{config}"


def test_csv_tasks_train_through_the_loop(tiny_bert, tmp_path):
    single, pairs = csv_task(tmp_path, "reviews", False), csv_task(tmp_path, "pairs", True)
    config = tiny_config(tiny_bert, tasks=(single, pairs), primary=single, epochs=2, max_train_examples=None)
    trainer = Trainer(config)
    assert set(trainer.model.heads) == {single.replace(".", "%2E"), pairs.replace(".", "%2E")}
    # every pairs row is encoded as a pair (two [SEP]s), the empty text_b ones included
    sep = load_tokenizer(config.encoder).sep_token_id
    train = trainer.data[pairs].train
    assert all((train.ids[s:e] == sep).sum() == 2 for s, e in zip(train.offsets[:-1], train.offsets[1:]))
    first = trainer.run_epoch()
    assert {"reviews/dev/acc", "pairs/dev/acc", "sampling/p/reviews", "sampling/p/pairs"} <= set(first)
    trainer.save(tmp_path / "ckpt.pt")  # the escaped head keys round-trip through a checkpoint
    resumed = Trainer(config)
    resumed.load(tmp_path / "ckpt.pt")
    assert strip_timing([resumed.run_epoch()]) == strip_timing([trainer.run_epoch()])


def test_rows_mixing_pairs_and_single_texts_are_refused(tiny_bert):
    from trainables.tasks import Example

    tokenizer = load_tokenizer(EncoderConfig(model=str(tiny_bert)))
    rows = [Example("a", "good", "film", 1), Example("b", "bad", None, 0)]
    with pytest.raises(ValueError, match=r"1 of 2 rows have a text_b but row 'b' has none"):
        encode(rows, "sequence", tokenizer, 32)


def test_two_tasks_with_one_name_are_refused(tiny_bert, tmp_path):
    tokenizer = load_tokenizer(EncoderConfig(model=str(tiny_bert)))
    config = tiny_config(tiny_bert, tasks=("semeval", "semeval:NLI_M"))
    with pytest.raises(ConfigError, match=r"tasks 'semeval' and 'semeval:NLI_M' are both named 'semeval'"):
        prepare_data(config, tokenizer)
    (tmp_path / "other").mkdir()
    a, b = csv_task(tmp_path, "same", False), csv_task(tmp_path / "other", "same", True)
    with pytest.raises(ConfigError, match=r"are both named 'same'.*expected one task per name"):
        prepare_data(tiny_config(tiny_bert, tasks=(a, b), primary=a), tokenizer)
    r = subprocess.run(
        [sys.executable, "-m", "trainables.train", "--tasks", "sst2,semeval,semeval:QA_M", "--model", str(tiny_bert)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: tasks 'semeval' and 'semeval:QA_M' are both named 'semeval'")


CONSTRUCTIONS = [f"{name}{c}" for name in ("semeval", "sentihood") for c in ("", ":NLI_B", ":QA_M", ":NLI_M")]


@pytest.mark.parametrize("spec", CONSTRUCTIONS)
def test_truncation_cuts_the_sentence_never_the_auxiliary(spec, tiny_bert, data_dir, caplog):
    from trainables.tasks import Example

    tokenizer = load_tokenizer(EncoderConfig(model=str(tiny_bert)))
    task = get_task(spec, data_dir)
    ex = task.examples("dev")[task.group_size - 1]  # the last row of the first group: its longest auxiliary
    sentence, aux = (ex.text_a, ex.text_b) if task.sentence_side == "a" else (ex.text_b, ex.text_a)
    long = " ".join([sentence] * 20)
    row = Example(ex.id, long, aux, ex.label) if task.sentence_side == "a" else Example(ex.id, aux, long, ex.label)
    data = encode([row], task.kind, tokenizer, 32, sentence=task.sentence_side)
    ids = data.ids.tolist()
    aux_ids = tokenizer(aux, add_special_tokens=False)["input_ids"]
    sep = ids.index(tokenizer.sep_token_id)
    first, second = ids[1:sep], ids[sep + 1 : -1]  # [CLS] a [SEP] b [SEP]
    assert len(ids) == 32
    assert (second if task.sentence_side == "a" else first) == aux_ids  # the auxiliary, whole
    kept = first if task.sentence_side == "a" else second
    assert kept == tokenizer(long, add_special_tokens=False)["input_ids"][: len(kept)]  # the sentence, cut at its end
    # an auxiliary longer than max_seq_length alone cannot stay whole: that row falls back, with a warning
    short = encode([row, Example("x", "good", "film", 0)], task.kind, tokenizer, 8, sentence=task.sentence_side)
    assert short.lengths().tolist() == [8, 5]
    assert ("too short for the auxiliary" in caplog.text) == (len(aux_ids) + 3 > 8)


def test_a_cpu_run_never_touches_cuda_even_with_a_gpu_visible(tiny_bert, monkeypatch, tmp_path):
    def touched(*args, **kwargs):
        raise AssertionError("a CPU run touched the CUDA RNG (and so created a CUDA context)")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for name in ("get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all"):
        monkeypatch.setattr(torch.cuda, name, touched)
    trainer = Trainer(tiny_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=1, device="cpu"))
    trainer.run_epoch()
    assert trainer.state_dict()["cuda_rng"] is None
    # a checkpoint written on a GPU node (every visible GPU's state, as before) loads on the CPU
    state = trainer.state_dict()
    state["cuda_rng"] = [torch.zeros(16, dtype=torch.uint8)] * 2
    torch.save(state, tmp_path / "gpu.pt")
    Trainer(tiny_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=1, device="cpu")).load(tmp_path / "gpu.pt")


def test_resume_keeps_this_devices_optimizer_flags(tiny_bert, tmp_path):
    config = tiny_config(tiny_bert, tasks=("sst2",), primary="sst2", epochs=2)
    first = Trainer(config)
    first.run_epoch()
    state = first.state_dict()
    own = [dict(g) for g in first.optimizer.param_groups]
    for group in state["optimizer"]["param_groups"]:  # as written by a node that ran AdamW otherwise
        group.update(foreach=False, fused=False, capturable=True)
    second = Trainer(config)
    second.load_state_dict(state)
    for group, before in zip(second.optimizer.param_groups, own):
        assert {k: group[k] for k in ("foreach", "fused", "capturable")} == {
            k: before[k] for k in ("foreach", "fused", "capturable")
        }
        assert group["lr"] == before["lr"]  # what was learned is still the checkpoint's


def test_compile_wraps_the_shared_encoder_only(tiny_bert):
    trainer = Trainer(tiny_config(tiny_bert, compile=True))
    compiled = trainer.forward.keywords["encoder"]  # compiled lazily: nothing runs here
    assert compiled._orig_mod is trainer.model.encoder
    assert not any("_orig_mod" in key for key in trainer.model.state_dict())  # checkpoints keep their keys


# compiles the tiny encoder on the CPU (10-40 s of CI's 12 minutes on 2 cores): make test-all; CI keeps
# test_compile_wraps_the_shared_encoder_only, and benchmarks.gpu_check compiles on a GPU
@pytest.mark.extended
def test_compiled_training_builds_one_graph_for_every_task(tiny_bert):
    import torch._dynamo
    from torch._dynamo.utils import counters, guard_failures

    torch._dynamo.reset()
    counters.clear()
    guard_failures.clear()
    trainer = Trainer(tiny_config(tiny_bert, compile=True, max_train_examples=64, evaluate_test=False))
    losses, tasks = trainer.train_steps(0, 24)
    assert len(set(tasks.tolist())) == 3 and np.isfinite(losses).all()
    # the whole model compiled guarded on the task name: 3 graphs here, one per task
    assert not any("task" in str(r) for failures in guard_failures.values() for r in failures)
    assert counters["stats"]["unique_graphs"] == 1


# -- exposure: passes over the primary's training rows (trainables.exposure) ----------------------
def exposure_run(tiny_bert, points, **kw) -> tuple[Trainer, list[dict[str, float]]]:
    trainer = Trainer(tiny_config(tiny_bert, max_eval_examples=10, evaluate_test=False, **kw))
    return trainer, [trainer.run_to(p) for p in points]


def test_a_run_reports_the_primary_batches_it_drew_per_pass(tiny_bert):
    """A sampled schema: the primary's batches drawn over its batches per pass, near the expected count."""
    trainer, epochs = exposure_run(
        tiny_bert, (1, 2), sampling=SamplingConfig("prop"), batch_size=2, max_train_examples=50
    )
    config, per_pass = trainer.config, len(trainer.batches[0])  # the primary is the first task
    drawn = np.cumsum([m["sampling/steps/semeval"] for m in epochs])
    assert [m[PRIMARY_PASSES] for m in epochs] == (drawn / per_pass).tolist()
    assert trainer.primary_passes == epochs[-1][PRIMARY_PASSES]
    sizes = training_sizes(config)
    assert sizes == {n: len(trainer.data[n].train) for n in config.tasks}  # the rows prepare_data keeps
    # prop over (4, 2, 2): half the draws are the primary's; binomial spread of the count, in passes
    draws = 2 * trainer.steps_per_epoch
    spread = math.sqrt(draws * 0.5 * 0.5) / per_pass
    assert abs(epochs[-1][PRIMARY_PASSES] - primary_passes(config, sizes, 2)) < 3 * spread


@pytest.mark.parametrize("tasks, schema", [(("semeval",), "prop"), (("semeval", "sst2"), "sequential")])
def test_single_task_and_round_robin_runs_see_exactly_the_expected_passes(tiny_bert, tasks, schema):
    # semeval 25 rows, sst2 40: 4 and 5 batches of 8, 4 steps an epoch (a multiple of 2: round robin is exact)
    trainer, results = exposure_run(
        tiny_bert, (0.5, 1, 2), tasks=tasks, sampling=SamplingConfig(schema), max_train_examples=40
    )
    sizes = training_sizes(trainer.config)
    assert [m[PRIMARY_PASSES] for m in results] == [primary_passes(trainer.config, sizes, p) for p in (0.5, 1, 2)]
    if len(tasks) == 1:
        assert [m[PRIMARY_PASSES] for m in results] == [0.5, 1.0, 2.0]


def test_primary_passes_survive_a_checkpoint(tiny_bert, tmp_path):
    kw = dict(tasks=("semeval", "sst2"), max_train_examples=40, sampling=SamplingConfig("prop"))
    _, straight = exposure_run(tiny_bert, (0.5, 1, 2), **kw)
    first, _ = exposure_run(tiny_bert, (0.5,), **kw)
    first.save(tmp_path / "screen.pt")
    second = Trainer(first.config)
    second.load(tmp_path / "screen.pt")
    assert second.primary_batches == first.primary_batches
    assert [second.run_to(p)[PRIMARY_PASSES] for p in (1, 2)] == [m[PRIMARY_PASSES] for m in straight[1:]]
    # a checkpoint from before exposure was counted: the expected count where it stands (round robin: exact)
    rr, _ = exposure_run(tiny_bert, (1,), **{**kw, "sampling": SamplingConfig("sequential")})
    state = rr.state_dict()
    del state["primary_batches"]
    old = Trainer(rr.config)
    old.load_state_dict(state)
    assert old.primary_batches == rr.primary_batches == 2


def test_train_fraction_keeps_the_tasks_size_ratios(data_dir):
    config = TrainConfig(tasks=("semeval", "sst2", "pos"), primary="semeval", data_dir=str(data_dir))
    whole, tenth = training_sizes(config), training_sizes(config.with_(train_fraction=0.1))
    for task, rows in whole.items():
        assert tenth[task] == pytest.approx(0.1 * rows, abs=25)  # whole groups: semeval's hold 25 rows
    capped = training_sizes(config.with_(train_fraction=0.1, max_train_examples=1000))
    assert capped == {"semeval": 1000, "sst2": 1000, "pos": 1000}  # the cap, where it is the smaller


@pytest.mark.parametrize("fraction", [0.0, -0.5, 1.5])
def test_train_fraction_is_a_fraction(fraction):
    with pytest.raises(ConfigError, match=rf"train_fraction {fraction}: expected a fraction in \(0, 1\]"):
        TrainConfig(tasks=("sst2",), primary="sst2", train_fraction=fraction)
    with pytest.raises(ConfigError, match=rf"train_fraction {fraction}: expected a fraction in \(0, 1\]"):
        Preset(train_fraction=fraction)


def test_train_limit_is_the_fraction_up_to_the_cap():
    config = TrainConfig(tasks=("sst2",), primary="sst2", train_fraction=0.5)
    assert (config.train_limit(11), config.with_(train_fraction=0.001).train_limit(11)) == (6, 1)
    assert config.with_(max_train_examples=4).train_limit(11) == 4
    assert config.with_(train_fraction=None).train_limit(11) is None


def test_layers_keep_the_encoders_first_layers(tiny_bert):
    from trainables.model import load_encoder

    full = load_encoder(EncoderConfig(str(tiny_bert)))
    one = load_encoder(EncoderConfig(str(tiny_bert), layers=1))
    assert (len(full.encoder.layer), len(one.encoder.layer), one.config.num_hidden_layers) == (2, 1, 1)
    kept, first = one.encoder.layer[0].state_dict(), full.encoder.layer[0].state_dict()
    assert all(torch.equal(kept[k], first[k]) for k in first)  # the checkpoint's first layer, not a fresh one
    with pytest.raises(ConfigError, match="layers 0: expected >= 1"):
        EncoderConfig(str(tiny_bert), layers=0)
    with pytest.raises(ConfigError, match="layers 0: expected >= 1"):
        Preset(layers=0)


def test_train_fraction_and_layers_round_trip_through_the_flat_dict(tiny_bert):
    plain = tiny_config(tiny_bert)
    config = plain.with_(train_fraction=0.25, encoder=dataclasses.replace(plain.encoder, layers=1))
    flat = config.to_dict()
    assert (flat["train_fraction"], flat["encoder.layers"]) == (0.25, 1)
    assert TrainConfig.from_dict(flat) == config
    # a trial config written before them: every row, every layer
    older = {k: v for k, v in flat.items() if k not in ("train_fraction", "encoder.layers")}
    assert TrainConfig.from_dict(older) == plain


def test_length_grouped_batches_cover_every_row_once_a_pass_and_pad_less():
    from trainables.batching import LENGTH_WINDOW, TaskBatches

    lengths = np.random.default_rng(0).integers(5, 33, size=1000)
    grouped, plain = TaskBatches(1000, 16, 3, lengths), TaskBatches(1000, 16, 3)
    passes = []
    for _ in range(2):
        batches = [grouped.next() for _ in range(len(grouped))]
        assert sorted(np.concatenate(batches)) == list(range(1000))
        assert [len(b) for b in batches] == [16] * 62 + [8]  # the short batch last
        widths = [lengths[b].max() for b in batches]
        random_widths = [lengths[plain.next()].max() for _ in range(len(plain))]
        assert np.mean(widths) < np.mean(random_widths) - 5
        passes.append({tuple(sorted(b)) for b in batches})
    # sorted within windows of a random order, not over the whole task: each pass forms other batches
    assert LENGTH_WINDOW * 16 < 1000 and not passes[0] & passes[1]
    first_pass = grouped.order.copy()
    state = grouped.state_dict()
    again = TaskBatches(1000, 16, 99, lengths)
    again.load_state_dict(state)
    assert np.array_equal(again.order, first_pass) and again.next().tolist() == grouped.next().tolist()


def test_a_length_grouped_run_is_its_own_config_and_resumes_exactly(tiny_bert, tmp_path):
    from spaces.canonical import canonical_key

    plain = tiny_config(tiny_bert, epochs=2)
    config = plain.with_(group_by_length=True)
    assert canonical_key(config) != canonical_key(plain)
    assert TrainConfig.from_dict(config.to_dict()) == config
    older = {k: v for k, v in config.to_dict().items() if k != "group_by_length"}  # written before the option
    assert TrainConfig.from_dict(older) == plain
    straight = strip_timing(train(config))
    first = Trainer(config)
    resumed = [first.run_epoch()]
    first.save(tmp_path / "ckpt.pt")
    second = Trainer(config)
    second.load(tmp_path / "ckpt.pt")
    resumed.append(second.run_epoch())
    assert strip_timing(resumed) == straight
