"""The result dict one simulated trial epoch reports, as Tune hands it to the scheduler and searcher.

The metrics are exactly :func:`trainables.simulated.tune.simulated_trainable`'s (the truth's per-seed
metrics, :func:`trainables.results.aggregate` over the seeds, ``epoch``, the placement keys); Tune
then adds ``training_iteration`` (the number of results so far), ``trial_id`` and ``done``. That
trainable's loop body is not a function of its own, so its three lines are repeated here.
"""

from __future__ import annotations

from typing import Any

from trainables.config import TrainConfig
from trainables.results import aggregate, seed_values_kept
from trainables.simulated.truth import Truth, task_name

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
    truth: Truth, config: TrainConfig, key: str, seeds: list[int], epoch: int, objective: str, trial_id: str
) -> dict[str, Any]:
    """What Tune's scheduler and searcher receive after epoch ``epoch`` (1-based) of ``seeds``."""
    primary = task_name(config.primary)
    per_seed = [truth.epoch_metrics(config, key, s, epoch) for s in seeds]
    metrics: dict[str, Any] = aggregate(per_seed, seeds, lambda k: seed_values_kept(k, primary, objective))
    metrics.update(epoch=epoch, **PLACEMENT)
    metrics.update(training_iteration=epoch, trial_id=trial_id, done=False)  # one report per epoch, no restore
    return metrics
