"""What a search holds of a cluster: its wall time and slot-time (slots x wall) at a slot count, from its schedule.

A search's compute (seed-epochs) is what its trials train; a cluster bills its slots over the wall time, and a
search whose rungs wait, or whose finalists train alone at the end, holds slots it does not use. The schedule
comes from the in-process simulator (:func:`search.simulation.study.simulate`: the study's real searcher and
scheduler on a simulated clock) on a **flat truth**: every config of the study has the same true score, seeds and
evaluation differ as in the ``null`` truth (1 pp and 0.5 pp), and every seed-epoch takes the same time. So the
schedule is the strategy's shape (rungs, cohorts, seed schedules, the trial budget), not a prediction of which
configs a real study promotes; configs whose epochs cost more than others' (more auxiliary rows) are averaged
into one seed-epoch time by the caller.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import optuna

from search.study.config import SearchConfig

FLAT_SCORE = 0.8  # any score: only differences between trials steer a search
NOISE = "[noise]\nseed_sd = 0.01\neval_sd = 0.005\n"  # the null truth's


@dataclass(frozen=True)
class Schedule:
    """One study's schedule at ``slots``: ``wall`` in seed-epochs of one slot, ``spent`` the seed-epochs trained."""

    slots: int
    trials: int
    spent: float
    wall: float
    search: str = ""  # the strategy it ran (``--search default`` resolves by the slots)

    @property
    def slot_time(self) -> float:
        """Slots held over the wall time, in seed-epochs: what a cluster bills."""
        return self.slots * self.wall

    @property
    def slot_use(self) -> float:
        """The share of the slot-time a trial trained in."""
        return self.spent / self.slot_time if self.wall else float("nan")

    def to_dict(self) -> dict[str, float]:
        return {
            "search": self.search,
            "slots": self.slots,
            "trials": self.trials,
            "seed_epochs": round(self.spent, 2),
            "wall_seed_epochs": round(self.wall, 2),
            "slot_seed_epochs": round(self.slot_time, 2),
            "slot_use": round(self.slot_use, 3),
        }


def flat_truth(primary: str, metric: str) -> str:
    """A truth file's text where every config scores the same on ``primary``'s ``metric``."""
    return (
        f'name = "flat"\nprimary = "{primary}"\n{NOISE}'
        f"[time]\nseconds_per_epoch = 1.0\n[tasks.{primary}]\n{metric} = {FLAT_SCORE}\n"
    )


def schedule(cfg: SearchConfig, primary: str, metric: str, seed: int = 0) -> Schedule:
    """``cfg``'s study (its strategy, trials and ``max_concurrent`` slots) on the flat truth of ``primary``'s dev
    ``metric`` (``acc_4way``), search seed ``seed``."""
    from search.simulation.study import simulate
    from search.simulation.truth import load_truth

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a simulated study's "study created" is no news here
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "flat.toml"
            path.write_text(flat_truth(primary, metric))
            study = simulate(replace(cfg, simulate=str(path), search_seed=seed), load_truth(str(path)))
    finally:
        optuna.logging.set_verbosity(verbosity)
    return Schedule(cfg.max_concurrent, len(study.trials), study.seed_epochs, study.wall, study.plan.strategy.name)
