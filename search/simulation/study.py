"""One simulated study from a :class:`SearchConfig`: planned as ``search.run`` plans it (:func:`search.study.plan.
plan`), its searcher, scheduler and first points built from the plan as ``search.study.tuner`` builds them, run
on the :class:`Backend`'s simulated clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import optuna
from ray.tune.schedulers import TrialScheduler

from search.simulation.backend import Backend, Event, SeedCount, all_seeds
from search.simulation.kind import SimulatedTrials, trial_kind
from search.simulation.trial import SimTrial
from search.simulation.truth.model import Truth
from search.study.config import SearchConfig
from search.study.plan import StudyPlan, plan_offline
from search.study.recent import RECENT_TRIALS
from search.study.tuner import optuna_searcher, param_space_of, sampler_of, scheduler_of
from trainables.fidelity import SeedSchedule, epoch_value


@dataclass(frozen=True)
class SimulatedStudy:
    """What one simulated study did: its trials (creation order), its events, and its plan."""

    plan: StudyPlan
    trials: list[SimTrial]
    events: list[Event]
    searcher: Any  # the CanonicalOptunaSearch it drove (its Optuna study: ``searcher._ot_study``)
    seconds_per_epoch: float = 1.0  # simulated seconds of one seed-epoch (the clock's unit)

    @property
    def wall(self) -> float:
        """Its wall time in seed-epochs of one slot: the first trial's start to the last one's end."""
        return max((t.ended_at for t in self.trials if t.ended_at is not None), default=0.0) / self.seconds_per_epoch

    @property
    def seed_epochs(self) -> float:
        return epoch_value(sum(t.seed_epochs for t in self.trials))  # 14, or 10.75 with screen points

    @property
    def trial_epochs(self) -> float:
        return epoch_value(sum(t.epoch for t in self.trials))


def simulated_plan(cfg: SearchConfig) -> StudyPlan:
    """``cfg``'s plan with simulated trials (``cfg.simulate``: the truth file): what ``search.run`` would run."""
    return plan_offline(cfg, trial_kind(cfg.simulate) if cfg.simulate else SimulatedTrials(""))  # "": refused


def searcher_for(study_plan: StudyPlan, multivariate: bool = False, window: int = RECENT_TRIALS):
    """``search.study.tuner.optuna_searcher``'s searcher in an in-memory Optuna storage: an RDB's commits
    would cost more than the rest of a simulated trial. ``multivariate``, ``window``: see ``sampler_of``."""
    name = f"simulated-{study_plan.strategy.name}-{study_plan.search_seed}"
    storage = optuna.storages.InMemoryStorage()
    sampler = sampler_of(study_plan, multivariate, window)
    return optuna_searcher(study_plan, storage=storage, sampler=sampler, name=name)


# what search.study.tuner.scheduler_of is: the plan, and the primary's dev majority rate per metric
SchedulerOf = Callable[[StudyPlan, Mapping[str, float]], TrialScheduler]


def scheduled_seeds(study_plan: StudyPlan) -> SeedCount:
    """Seeds a trial's epoch reports, as ``trainables.tune`` counts them: the study's seed schedule
    (``--first-rung-seeds``; the baseline every seed, or the first rung's), else every seed."""
    schedule = study_plan.schedule
    if schedule is None:
        return all_seeds

    def count(trial: SimTrial, epoch: int) -> int:
        return SeedSchedule.of(schedule.to_dict(), trial.trial_config.baseline, len(trial.seeds)).at(epoch)

    return count


def simulate(
    cfg: SearchConfig,
    truth: Truth,
    scheduler: SchedulerOf = scheduler_of,
    seed_count: SeedCount | None = None,
    multivariate: bool = False,
    interrupt_after: int | None = None,
    state_lag: int = 0,
    fail_after: dict[int, int] | None = None,
    window: int = RECENT_TRIALS,
    extensions: tuple[int, ...] = (),
) -> SimulatedStudy:
    """Run ``cfg``'s study against ``truth`` (``cfg.simulate`` names the truth file; ``truth`` may be
    that file with another ``seed``), with ``cfg.max_concurrent`` slots. ``scheduler`` builds the
    scheduler from the plan (another scheduler class plugs in here); ``seed_count``: how many of a
    trial's seeds report each epoch (:mod:`search.simulation.backend`); None: the study's own (every
    seed, or its seed schedule with ``--first-rung-seeds``); ``multivariate``: see :func:`searcher_for`;
    ``interrupt_after``/``state_lag``: a Ctrl-C and ``--resume`` after that many results, the scheduler's saved
    state that many results older than the trials'; ``fail_after``: how many running trials fail (and are retried)
    after that many results (:class:`search.simulation.backend.Backend`); ``window``: the finished trials TPE
    models (:mod:`search.study.recent`); ``extensions``: ``--resume --trials N`` in turn, at the interrupt and after
    the end."""
    study_plan = simulated_plan(cfg)
    asha = scheduler(study_plan, dict(truth.majority))
    asha.set_search_properties(study_plan.invocation.objective, study_plan.invocation.mode)  # as tune.run does
    searcher = searcher_for(study_plan, multivariate, window)
    backend = Backend(
        searcher,
        asha,
        truth,
        study_plan.invocation.objective,
        study_plan.base.epochs,
        list(study_plan.invocation.seeds),
        study_plan.trials,
        study_plan.resources.max_concurrent,
        seconds_per_epoch=truth.time.seconds_per_epoch or 1.0,  # 0 in a truth means "no sleep"; any unit will do
        seed_count=seed_count or scheduled_seeds(study_plan),
        param_space=param_space_of(study_plan),
        interrupt_after=interrupt_after,
        state_lag=state_lag,
        fail_after=dict(fail_after or {}),
        extensions=extensions,
    )
    found = backend.run()
    return SimulatedStudy(study_plan, found, backend.events, searcher, backend.seconds_per_epoch)
