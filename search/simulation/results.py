"""The result dict one simulated trial epoch reports, as Tune hands it to the scheduler and searcher.

The metrics are :func:`search.simulation.trainable.simulated_trainable`'s (``Truth.trial_metrics``,
``epoch``, the placement keys); Tune then adds ``training_iteration`` (the number of results so
far), ``trial_id`` and ``done``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from search.simulation.truth.model import Truth
from trainables.config import TrainConfig
from trainables.fidelity import epoch_value

PLACEMENT = {  # where a simulated trial "ran", under the real trainable's keys
    "node_id": "simulated",
    "node_ip": "",
    "hostname": "simulated",
    "device": "simulated",
    "torch_device": "none",
    "gpus_requested": 0.0,
    "cpu_fallback": False,
    "restored_from_epoch": 0,
}


def epoch_result(
    truth: Truth,
    config: TrainConfig,
    key: str,
    seeds: list[int],
    epoch: float,
    objective: str,
    trial_id: str,
    iteration: int,
    points: Sequence[float] | None = None,
) -> dict[str, Any]:
    """What Tune's scheduler and searcher receive after epoch ``epoch`` (1-based; 0.5: a screen point) of
    ``seeds``, the trial's ``iteration``-th result (Tune's ``training_iteration``: one more after a screen);
    ``points``: where the trial reports."""
    metrics: dict[str, Any] = truth.trial_metrics(config, key, seeds, epoch, objective, points)
    metrics.update(epoch=epoch_value(epoch), **PLACEMENT)
    metrics.update(training_iteration=iteration, trial_id=trial_id, done=False)
    return metrics
