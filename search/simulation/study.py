"""One simulated study from a :class:`SearchConfig`: the searcher, scheduler and first points built as
``search.run`` builds them (``search.study.tuner``), run on the :class:`Backend`'s simulated clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ray.tune.schedulers import TrialScheduler

from search.simulation.backend import Backend, Event, SeedCount, all_seeds
from search.simulation.trial import SimTrial
from search.simulation.truth.model import Truth
from search.study.config import SearchConfig
from search.study.prepare import Prepared, prepare_simulated
from search.study.strategy import strategy_of
from search.study.tuner import first_points, rungs_of, sampler_of, scheduler_of, searcher_of
from trainables.fidelity import FIDELITY, SeedSchedule


@dataclass(frozen=True)
class SimulatedStudy:
    """What one simulated study did: its trials (creation order), its events, and its setting."""

    cfg: SearchConfig
    prep: Prepared
    mode: str
    trials: list[SimTrial]
    events: list[Event]
    searcher: Any  # the CanonicalOptunaSearch it drove (its Optuna study: ``searcher._ot_study``)

    @property
    def seed_epochs(self) -> int:
        return sum(t.seed_epochs for t in self.trials)

    @property
    def trial_epochs(self) -> int:
        return sum(t.epoch for t in self.trials)


def searcher_for(
    cfg: SearchConfig, prep: Prepared, mode: str, points: list[dict[str, Any]], multivariate: bool = False
):
    """``search.study.tuner.searcher_of``'s searcher in an in-memory Optuna storage: an RDB's commits
    would cost more than the rest of a simulated trial. ``multivariate``: see ``sampler_of``."""
    import optuna

    name = f"simulated-{cfg.search}-{cfg.search_seed}"
    storage = optuna.storages.InMemoryStorage()
    return searcher_of(cfg, prep, name, mode, points, storage=storage, sampler=sampler_of(cfg, multivariate))


SchedulerOf = Callable[[SearchConfig, Prepared], TrialScheduler]  # what search.study.tuner.scheduler_of is


def scheduled_seeds(cfg: SearchConfig, prep: Prepared) -> SeedCount:
    """Seeds a trial's epoch reports, as ``trainables.tune`` counts them: the study's seed schedule
    (``--first-rung-seeds``; the baseline every seed), else every seed."""
    schedule = cfg.seed_schedule(*rungs_of(cfg, prep))
    if schedule is None:
        return all_seeds

    def count(trial: SimTrial, epoch: int) -> int:
        return SeedSchedule.of_trial({**trial.config, FIDELITY: schedule.to_dict()}, len(trial.seeds)).at(epoch)

    return count


def simulate(
    cfg: SearchConfig,
    truth: Truth,
    scheduler: SchedulerOf = scheduler_of,
    seed_count: SeedCount | None = None,
    multivariate: bool = False,
) -> SimulatedStudy:
    """Run ``cfg``'s study against ``truth`` (``cfg.simulate`` names the truth file; ``truth`` may be
    that file with another ``seed``), with ``cfg.max_concurrent`` slots. ``scheduler`` builds the
    scheduler from the study (another scheduler class plugs in here); ``seed_count``: how many of a
    trial's seeds report each epoch (:mod:`search.simulation.backend`); None: the study's own (every
    seed, or its seed schedule with ``--first-rung-seeds``); ``multivariate``: see :func:`searcher_for`."""
    prep = prepare_simulated(cfg)
    mode = cfg.mode or prep.study.mode
    points = first_points(cfg, prep)
    trials = len(points) if strategy_of(cfg.search).only_first else (cfg.trials or prep.preset.trials)
    asha = scheduler(cfg, prep)
    asha.set_search_properties(prep.objective, mode)  # as tune.run does
    searcher = searcher_for(cfg, prep, mode, points, multivariate)
    backend = Backend(
        searcher,
        asha,
        truth,
        prep.objective,
        prep.base.epochs,
        cfg.seed_list(),
        trials,
        cfg.max_concurrent,
        seconds_per_epoch=truth.time.seconds_per_epoch or 1.0,  # 0 in a truth means "no sleep"; any unit will do
        seed_count=seed_count or scheduled_seeds(cfg, prep),
    )
    found = backend.run()
    return SimulatedStudy(cfg, prep, mode, found, backend.events, searcher)
