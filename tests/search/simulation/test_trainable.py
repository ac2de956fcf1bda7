"""The simulated trainable under a seed schedule (seeds as a fidelity): the seeds each epoch reports,
the catch-up of added seeds (same-epoch means, its simulated time), a restore mid-schedule that
continues with exactly the results it would have had, and the baseline on every seed."""

import types
from pathlib import Path

import pytest
from fake_tune import FakeTune

import search.simulation.trainable as sim
from search.simulation.truth import load_truth, resolve_truth
from trainables.config import SamplingConfig, TrainConfig
from trainables.results import aggregate

SCHEDULE = {"first": 1, "rungs": [1, 3], "growth": 3}  # K = 3, ASHA grace 1, factor 3, 4 epochs
OBJECTIVE = "semeval/dev/acc_4way/mean"


@pytest.fixture
def truth(tmp_path) -> str:
    """three_better, with a simulated minute per seed-epoch slept at scale 1 (the sleeps are recorded)."""
    path = tmp_path / "truth.toml"
    path.write_text(Path(resolve_truth("three_better")).read_text().replace("scale = 0.0", "scale = 1.0"))
    return str(path)


@pytest.fixture
def slept(monkeypatch) -> list[float]:
    seconds: list[float] = []
    # the trainable's own ``time``, not the process's: another test's leftover thread may sleep meanwhile
    monkeypatch.setattr(sim, "time", types.SimpleNamespace(sleep=seconds.append))
    monkeypatch.setattr(sim, "placement", lambda epoch: {"restored_from_epoch": epoch})  # no Ray
    return seconds


def trial(baseline: bool = False, fidelity: dict | None = SCHEDULE) -> dict:
    train = TrainConfig(
        tasks=("semeval", "sst2", "pos"), primary="semeval", sampling=SamplingConfig(schema="square"), epochs=4
    )
    config = {"train": train.to_dict(), "seeds": [1, 2, 3], "key": "k", "baseline": baseline}
    return {**config, "fidelity": fidelity} if fidelity else config


def run(tmp_path: Path, monkeypatch, config: dict, truth: str, **kw) -> tuple[FakeTune, list[dict]]:
    fake = FakeTune(tmp_path, **kw)
    monkeypatch.setattr(sim, "tune", fake)
    return fake, fake.run(sim.simulated_trainable, config, truth=truth, metric=OBJECTIVE)


def test_the_first_rung_reports_one_seed_and_added_seeds_catch_up(tmp_path, monkeypatch, truth, slept):
    _, results = run(tmp_path, monkeypatch, trial(), truth)
    assert [r["seeds/trained"] for r in results] == [1, 3, 3, 3]
    assert [r["epoch"] for r in results] == [1, 2, 3, 4]
    assert "semeval/dev/acc_4way/seed1" in results[0] and "semeval/dev/acc_4way/seed2" not in results[0]
    assert "semeval/dev/acc_4way/std" not in results[0]  # one seed has no spread
    # epoch 2 is a mean over three seeds at epoch 2: the added seeds caught up on epoch 1 unreported
    model, config = load_truth(truth), TrainConfig.from_dict(trial()["train"])
    expected = aggregate([model.epoch_metrics(config, "k", s, 2) for s in (1, 2, 3)], [1, 2, 3])
    assert results[1][OBJECTIVE] == expected[OBJECTIVE]
    # simulated time: 1 seed-epoch, then 3 + the 2 added seeds' catch-up of epoch 1, then 3 and 3
    assert slept == [60.0, 300.0, 180.0, 180.0] and sum(slept) / 60 == 12  # = SeedSchedule.seed_epochs(4)


def test_a_trial_stopped_at_the_first_rung_trained_one_seed_epoch(tmp_path, monkeypatch, truth, slept):
    _, results = run(tmp_path, monkeypatch, trial(), truth, stop_after=1)
    assert len(results) == 1 and sum(slept) == 60.0


def test_a_restore_mid_schedule_continues_with_the_results_it_would_have_had(tmp_path, monkeypatch, truth, slept):
    _, whole = run(tmp_path / "whole", monkeypatch, trial(), truth)
    first, head = run(tmp_path / "first", monkeypatch, trial(), truth, stop_after=1)  # checkpoint: epoch 1, 1 seed
    _, rest = run(tmp_path / "second", monkeypatch, trial(), truth, checkpoint=first.checkpoint)
    strip = lambda r: {k: v for k, v in r.items() if k != "restored_from_epoch"}  # noqa: E731
    assert [strip(r) for r in head + rest] == [strip(r) for r in whole]
    assert rest[0]["restored_from_epoch"] == 1


def test_the_baseline_trains_every_seed_and_no_schedule_is_todays_trial(tmp_path, monkeypatch, truth, slept):
    _, baseline = run(tmp_path / "b", monkeypatch, trial(baseline=True), truth)
    assert [r["seeds/trained"] for r in baseline] == [3, 3, 3, 3]
    _, plain = run(tmp_path / "p", monkeypatch, trial(fidelity=None), truth)
    assert "seeds/trained" not in plain[0] and "semeval/dev/acc_4way/seed3" in plain[0]
    assert {k: v for k, v in baseline[0].items() if k != "seeds/trained"} == plain[0]
