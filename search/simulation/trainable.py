"""Ray Tune function trainable of a simulated trial: the config's scores from a truth file.

Reports as :func:`trainables.tune.multitask_trainable` does (the seed mean and std of every metric,
per-seed values of the primary's scores and the objective, ``epoch`` and where it ran), after
sleeping the simulated seconds of the epoch times the truth's time scale, and checkpoints the epoch
it reached and its seed count, so a retried or restored trial continues with exactly the results it
would have had. Under a seed schedule (seeds as a fidelity, :mod:`trainables.fidelity`) it reports
the seeds it has and sleeps the catch-up of the seeds it adds. Imports no torch: a simulated trial's
actor is a small process.
"""

from __future__ import annotations

import functools
import json
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import ray
from ray import tune

from search.simulation.truth import Truth, load_truth
from trainables.fidelity import SEED_COUNT, epoch_value
from trainables.trial import TrialConfig

STATE = "state.json"


@functools.lru_cache(maxsize=4)
def cached_truth(path: str) -> Truth:
    return load_truth(path)


def simulated_trainable(config: dict[str, Any], truth: str = "", metric: str | None = None) -> None:
    """Tune entry point: ``config`` as :func:`trainables.tune.multitask_trainable` takes it (a
    :class:`~trainables.trial.TrialConfig` as Tune's dict); ``truth``: the truth file."""
    trial = TrialConfig.of_tune(config)
    model = cached_truth(truth)
    seeds, base, key = list(trial.seeds), trial.train, trial.key
    objective = metric or trial.metric or "objective"
    schedule = trial.schedule()
    state = restored_state()
    where = placement(epoch_value(state["epoch"]))
    # seeds trained so far; a checkpoint from before seed schedules holds every seed
    trained = int(state.get("seeds", len(seeds) if state["epoch"] else 0))

    points = trial.points()  # every epoch's end, and a screen point inside the first
    for before, epoch in zip([0.0, *points], points):
        if epoch <= state["epoch"]:
            continue
        n = max(trained, schedule.at(epoch))
        # the point's training, and the added seeds' catch-up to the point before it, unreported
        time.sleep(model.sleep_s(n) * (epoch - before) + model.sleep_s(n - trained) * before)
        trained = n
        metrics: dict[str, Any] = model.trial_metrics(base, key, seeds[:trained], epoch, objective, points)
        metrics.update(epoch=epoch_value(epoch), **where)
        if trial.fidelity is not None:
            metrics[SEED_COUNT] = trained
        with tempfile.TemporaryDirectory() as directory:
            (Path(directory) / STATE).write_text(json.dumps({"epoch": epoch, "seeds": trained}))
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))


def restored_state() -> dict[str, float]:
    """The epoch Tune's checkpoint of this trial reached and, since seed schedules, its seed count
    (``{"epoch": 0}`` without one)."""
    checkpoint = tune.get_checkpoint()
    if not checkpoint:
        return {"epoch": 0}
    with checkpoint.as_directory() as directory:
        return {k: float(v) for k, v in json.loads((Path(directory) / STATE).read_text()).items()}


def placement(restored_from: float) -> dict[str, Any]:
    """Where the trial ran, under the keys the real trainable reports."""
    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "hostname": socket.gethostname(),
        "device": "simulated",
        "torch_device": "none",
        "gpus_requested": float(tune.get_context().get_trial_resources().required_resources.get("GPU", 0)),
        "cpu_fallback": False,
        "restored_from_epoch": restored_from,
    }
