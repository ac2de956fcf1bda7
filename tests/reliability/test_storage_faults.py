"""A full storage disk stops the study, resumably: no retry into the full disk, the experiment
state loadable, and a restore continues once there is space.

The checks at unit level (free space up front, a trial's ENOSPC, the driver's poll), then one
Tune run whose toy trainable fills a real small disk (a 20 MB tmpfs; where this machine does not
let the test mount one, an injected ENOSPC), restored after the disk has grown.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from search.infra import disk
from search.infra.disk import SpaceNeed, StorageFull, StorageGuard

MB = 10**6
NEED = SpaceNeed(checkpoint=100 * MB, first=200 * MB, total=600 * MB)
RESUME = "python -m search.run absa --resume --name fill"


def figure(capsys, text: str) -> None:
    with capsys.disabled():
        print(f"\n[reliability] {text}")


def test_a_storage_too_small_for_the_first_checkpoints_is_refused_up_front(monkeypatch, caplog):
    monkeypatch.setattr(disk, "free_bytes", lambda storage: 150 * MB)
    with pytest.raises(StorageFull) as refused:
        disk.check_space("/data/ray", NEED, "free space or choose another --storage")
    assert str(refused.value) == (
        "--storage /data/ray: 150 MB free, the study needs at least 208 MB to start (~100 MB "
        "per trial checkpoint, ~600 MB for the whole study): free space or choose another "
        "--storage"
    )
    monkeypatch.setattr(disk, "free_bytes", lambda storage: 400 * MB)
    with caplog.at_level(logging.WARNING, "search.infra.disk"):
        disk.check_space("/data/ray", NEED, "")  # enough to start: said, not refused
    assert "400 MB free, the study may need 608 MB" in caplog.text
    monkeypatch.undo()
    assert disk.free_bytes("s3://bucket/ray") is None  # object stores: nothing to check


def test_a_checkpoint_is_estimated_from_the_model_before_any_training(tiny_winner):
    _, config, checkpoint = tiny_winner  # one seed's checkpoint, written by Trainer.save
    estimate = SpaceNeed.of(config, seeds=1, trials=4, concurrent=2)
    assert checkpoint.stat().st_size <= estimate.checkpoint <= 1.3 * checkpoint.stat().st_size
    assert (estimate.first, estimate.total) == (2 * estimate.checkpoint, 10 * estimate.checkpoint)  # 2 kept per trial


def failed_trial(folder: Path, error: str) -> SimpleNamespace:
    """A Tune trial that failed with ``error`` (its error file), with its registered checkpoint
    ``checkpoint_000000`` and the half-written ``checkpoint_000001`` of the failed save."""
    for name in ("checkpoint_000000", "checkpoint_000001"):
        (folder / name).mkdir(parents=True)
        (folder / name / "seed-1.pt").write_bytes(b"x" * 1000)
    (folder / "error.txt").write_text(f"Failure # 1 (occurred at 2026-11-23_10-00-00)\n{error}\n")
    return SimpleNamespace(
        trial_id="ab12",
        config={"label": "t01 sst2 prop"},
        status="PENDING",
        error_file=str(folder / "error.txt"),
        path=str(folder),
        checkpoint=SimpleNamespace(path=str(folder / "checkpoint_000000")),
    )


def test_a_trial_that_hits_a_full_disk_stops_the_study_instead_of_a_retry(tmp_path, monkeypatch, capsys):
    stops = []
    monkeypatch.setattr(disk, "interrupt_tune", lambda: stops.append(1) or True)
    guard = StorageGuard(str(tmp_path), "fill", NEED, RESUME)
    guard.setup()
    assert (tmp_path / "fill" / ".reserve").stat().st_size == disk.RESERVE
    other = failed_trial(tmp_path / "fill" / "trial_cd34", "RayTaskError(ValueError): a bug")
    guard.on_trial_recover(0, [], other)  # any other failure is Tune's to retry
    assert not stops and guard.reason is None
    full = failed_trial(
        tmp_path / "fill" / "trial_ab12",
        "RayTaskError(OSError): ray::multitask_trainable() "
        "OSError: [Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device",
    )
    guard.on_trial_recover(0, [], full)
    guard.on_trial_error(0, [], full)  # once is enough
    assert stops == [1]
    assert disk.stop_reason(str(tmp_path), "fill") == guard.reason
    assert guard.reason.startswith(
        f"--storage {tmp_path} is full: trial t01 sst2 prop could not write its checkpoint (no space left on device)"
    )
    assert guard.reason.endswith(
        f"~100 MB per trial checkpoint, ~600 MB for the whole study. Free space, then continue with: {RESUME}"
    )
    # room for the experiment state Tune writes as it stops: the reserve and the half-written checkpoint
    assert not (tmp_path / "fill" / ".reserve").exists()
    assert sorted(p.name for p in Path(full.path).glob("checkpoint_*")) == ["checkpoint_000000"]
    assert len(list(Path(other.path).glob("checkpoint_*"))) == 2
    # a later failure for another reason is the one the file's last section holds
    (Path(full.path) / "error.txt").write_text("Failure # 1\nNo space left on device\nFailure # 2\nValueError: x\n")
    assert not disk.disk_full(full)
    figure(
        capsys,
        "ENOSPC in a trial (injected): faults injected 1, studies stopped for it 1, retries into the full disk 0",
    )


def test_the_driver_stops_before_the_running_trials_next_checkpoints_cannot_fit(tmp_path, monkeypatch):
    stops = []
    monkeypatch.setattr(disk, "interrupt_tune", lambda: stops.append(1) or True)
    running = [SimpleNamespace(status="RUNNING"), SimpleNamespace(status="RUNNING"), SimpleNamespace(status="PENDING")]
    guard = StorageGuard(str(tmp_path), "fill", NEED, RESUME)
    monkeypatch.setattr(disk, "free_bytes", lambda storage: 250 * MB)  # two running trials need 200 MB
    guard.on_step_begin(0, running)
    assert not stops
    monkeypatch.setattr(disk, "free_bytes", lambda storage: 150 * MB)
    guard.on_step_begin(1, running)  # checked at most every POLL_S seconds
    assert not stops
    guard._checked = 0.0
    guard.on_step_begin(2, running)
    assert stops == [1]
    assert "150 MB free, the 2 running trial(s) need ~200 MB for their next checkpoints" in guard.reason


@pytest.fixture
def small_disk(tmp_path):
    """A 20 MB tmpfs (None where this machine does not let the test mount one: then ENOSPC is injected)."""
    path = tmp_path / "disk"
    path.mkdir()
    mounted = (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(path)], capture_output=True).returncode
        == 0
    )
    yield path if mounted else None
    if mounted:
        subprocess.run(["umount", str(path)], check=False)


@pytest.mark.slow
def test_a_full_disk_stops_tune_resumably_and_a_restore_finishes(tmp_path, small_disk, monkeypatch, capsys):
    import ray
    from ray import tune

    def filling(config):  # three steps, each checkpointing config["size"] bytes (defined here: pickled by value)
        import errno
        import os
        import tempfile
        from pathlib import Path

        from ray import tune

        start = 0
        if tune.get_checkpoint():
            with tune.get_checkpoint().as_directory() as folder:
                start = int(Path(folder, "step").read_text())
        for step in range(start + 1, 4):
            if step == 2 and config["inject"] and os.path.exists(config["inject"]):
                raise OSError(errno.ENOSPC, "No space left on device")
            with tempfile.TemporaryDirectory() as folder:
                Path(folder, "step").write_text(str(step))
                Path(folder, "state.bin").write_bytes(bytes(config["size"]))
                tune.report({"step": step}, checkpoint=tune.Checkpoint.from_directory(folder))

    storage = small_disk or tmp_path / "storage"
    inject = None if small_disk else tmp_path / "disk-is-full"
    if inject:
        inject.touch()
    monkeypatch.setattr(disk, "RESERVE", 2 * MB)
    # a second 10 MB checkpoint cannot fit beside the first and the reserve; the poll is left out
    # (a 1-byte estimate), so the trial's own ENOSPC stops the run
    guard = StorageGuard(str(storage), "fill", SpaceNeed(checkpoint=1, first=1, total=1), RESUME)
    path = storage / "fill"
    ray.init(address="local", num_cpus=1, include_dashboard=False)  # never join another cluster
    try:
        tune.Tuner(
            filling,
            param_space={"size": 10 * MB, "inject": str(inject or "")},
            run_config=tune.RunConfig(
                name="fill",
                storage_path=str(storage),
                callbacks=[guard],
                verbose=0,
                checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
                failure_config=tune.FailureConfig(max_failures=2),
            ),
        ).fit()
        reason = disk.stop_reason(str(storage), "fill")
        # the trial's own ENOSPC, or (on a loaded machine, where the trial writes late) the guard's poll seeing the
        # full disk first: either stops the study resumably
        full = ("could not write its checkpoint (no space left on device)", "is full: 0 MB free")
        assert reason and any(words in reason for words in full), reason
        # the experiment state written as it stopped is whole, and holds the trial as unfinished
        assert tune.Tuner.can_restore(str(path))
        (state_file,) = path.glob("experiment_state-*.json")
        ((trial_state, _),) = json.loads(state_file.read_text())["trial_data"]
        assert json.loads(trial_state)["status"] in ("PENDING", "RUNNING")

        if small_disk:  # space freed
            subprocess.run(["mount", "-o", "remount,size=60m", str(small_disk)], check=True)
        else:
            inject.unlink()
        disk.STOPPED.clear()
        restored = tune.Tuner.restore(str(path), trainable=filling, resume_unfinished=True, resume_errored=False)
        (result,) = restored.fit()
    finally:
        ray.shutdown()
    assert result.error is None and result.metrics["step"] == 3 and disk.stop_reason(str(storage), "fill") is None
    steps = [json.loads(line)["step"] for line in (Path(result.path) / "result.json").read_text().splitlines()]
    assert steps == [1, 2, 3], steps  # across the stop: nothing lost, nothing twice
    how = "a 20 MB tmpfs" if small_disk else "an injected ENOSPC"
    figure(
        capsys,
        f"full disk ({how}): faults injected 1, studies ended cleanly 2/2 (stopped, restored), "
        f"values lost {3 - len(set(steps))}",
    )
