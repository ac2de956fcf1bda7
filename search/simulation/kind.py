"""The simulated trial kind (``--simulate``): scores from a truth file, no torch, no data, or replayed from a
real-curve table; and the chooser the command lines hand down, the one place that tells the kinds apart."""

from __future__ import annotations

import logging
import math
from typing import Any

from search.simulation.trainable import cached_truth, simulated_trainable
from search.simulation.truth import is_table
from search.study.kind import TrainedTrials, TrialData, TrialKind, with_resources
from spaces import Study, apply_choices, canonical
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


class ReplayedTrials(SimulatedTrials):
    """Trials replayed from a real-curve table (``--simulate table.parquet``, :mod:`search.simulation.truth.
    replay`): at the table's epochs, its screen point, and only the grid's cells, each looked up, not scored."""

    def study_note(self, note: str) -> str:
        return f"REPLAYED study: every score is one the table {self.truth} measured, no model trained. {note}"

    def epochs(self, asked: int | None) -> int:
        if asked is not None and asked != self.model.epochs:
            held = f"the table {self.truth} holds runs of {self.model.epochs} epochs"
            raise ConfigError(f"--epochs {asked}: {held}; a replay runs at the table's epochs (leave --epochs out)")
        return self.model.epochs

    def checked(self, plan: Any) -> Any:
        """Only a study whose trials are the grid's cells (``--search grid``, ``cells-halving`` without
        ``--trials`` beyond the cells), each in the table, at a screen point and on a metric the table holds."""
        flag, cells, table = f"--simulate {self.truth}", len(plan.points), self.model
        if plan.strategy.first != "cells":
            why = f" ({plan.search_reason})" if plan.search_reason else ""
            raise ConfigError(
                f"{flag}: --search {plan.strategy.name}{why} tries configs beyond the grid's cells; {ONLY}"
            )
        if plan.trials > cells:
            extra = f"{plan.trials - cells} configs after the grid's {cells} cells"
            raise ConfigError(f"{flag}: --search {plan.strategy.name} with {plan.trials} trials tries {extra}; {ONLY}")
        if plan.screen and plan.screen not in table.points:
            held = [p for p in table.points if p < 1]
            fix = f"--screen-fraction {held[0]:g} replays its screen point" if held else "it holds none"
            raise ConfigError(f"{flag}: the screen point {plan.screen:g} is not in the table ({fix}; 0: none)")
        known = [f"{table.primary}/dev/{m}/mean" for m in table.tasks[table.primary]]
        if plan.invocation.objective not in known:
            raise ConfigError(
                f"--metric {plan.invocation.objective}: not in the table {self.truth}; expected one of {known}"
            )
        for point in plan.points:  # a cell the table lacks is refused here, not when its trial runs
            table.cell(canonical(apply_choices(plan.base, point, plan.study)))
        return plan


ONLY = "a table replays only its cells (--search grid, or cells-halving without --trials)"


def trial_kind(truth: str) -> TrialKind:
    """The kind of a study's trials: simulated by the truth file ``truth`` (replayed from it where it is a
    real-curve table), trained where it is ""."""
    if not truth:
        return TrainedTrials()
    return ReplayedTrials(truth) if is_table(truth) else SimulatedTrials(truth)
