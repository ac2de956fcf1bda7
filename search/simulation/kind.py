"""The simulated trial kind (``--simulate``): scores from a truth file, no torch, no data; and the chooser
the command lines hand down, the one place that tells the two kinds apart."""

from __future__ import annotations

import logging
import math
from typing import Any

from search.simulation.trainable import cached_truth, simulated_trainable
from search.study.kind import TrainedTrials, TrialData, TrialKind, with_resources
from spaces import Study
from trainables.config import ConfigError, TrainConfig

logger = logging.getLogger(__name__)


class SimulatedTrials(TrialKind):
    """Trials scored by the truth file ``truth`` (an absolute path; loaded and checked on construction, so a
    bad one fails before Ray). A simulated study stands for a GPU study: its default preset is ``full``; its
    trials only sleep, so a local Ray gets a logical CPU per slot; its checkpoints hold a few bytes; it
    trains no model to register."""

    registers_model = False
    model_bytes = 0
    counts_gpus = False

    def __init__(self, truth: str) -> None:
        self.truth = truth
        self.model = cached_truth(truth)

    def flags(self) -> list[str]:
        return ["--simulate", self.truth]

    def study_note(self, note: str) -> str:
        return f"SIMULATED study: every score comes from the truth {self.truth}, no model trained. {note}"

    def check(self, study: Study) -> None:
        if self.model.primary != study.primary_name:
            raise ConfigError(
                f"--simulate {self.truth}: its primary is {self.model.primary!r}, study {study.name}'s "
                f"{study.primary_name!r}"
            )

    def default_preset(self, gpus: float) -> tuple[str, str]:
        return "full", "a simulated study simulates the full (thesis-scale) preset"

    def ray_cpus(self, max_concurrent: int, cpus_per_trial: float, machine_cpus: int) -> int | None:
        return max(machine_cpus, math.ceil(max_concurrent * cpus_per_trial))

    def prepare(self, study: Study, base: TrainConfig, objective: str) -> TrialData:
        """The objective checked against the truth's metrics; no data, no tokenizer."""
        truth = self.model
        known = {f"{truth.primary}/dev/{m}/mean" for m in truth.tasks[truth.primary]} | {"train/loss/mean"}
        if objective not in known:
            raise ConfigError(
                f"--metric {objective!r}: expected one of {', '.join(sorted(known))} (truth {self.truth})"
            )
        logger.info("simulated study: trials scored by truth %s (%s), no training", truth.name, self.truth)
        return TrialData({}, "", dict(truth.majority))

    def trainable(self, data: TrialData, objective: str, cpus: float, gpus: float) -> Any:
        return with_resources(simulated_trainable, cpus, gpus, truth=self.truth, metric=objective)

    def final_trainable(self, configs: list[TrainConfig], objective: str, cpus: float, gpus: float) -> Any:
        return self.trainable(TrialData({}, "", {}), objective, cpus, gpus)  # the truth scores test too

    def majority_on_test(self, config: TrainConfig) -> dict[str, float]:
        return dict(self.model.majority)  # the truth's floor


def trial_kind(truth: str) -> TrialKind:
    """The kind of a study's trials: simulated by the truth file ``truth``, trained where it is ""."""
    return SimulatedTrials(truth) if truth else TrainedTrials()
