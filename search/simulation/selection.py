"""The config a simulated study recommends, chosen by the code a real study's answer uses, and its true score.

A real study ends with ``search.finalize``: :func:`search.answer.contenders.choose` takes, on dev (seed
mean), the best completed multitask trial and the best completed single-task trial; finalize trains
both on fresh seeds and registers the better. Before those fresh seeds exist, what the study tells
its user to use is the better of the two on the search's own dev means: that is the selected config
here. A study with no completed multitask trial (``choose`` refuses it) selects its best completed
trial, the baseline at least (ASHA never stops it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from search.answer.claims import TUNED, Contender, compare
from search.answer.contenders import choose, collect, final_seeds, search_risk
from search.simulation.study import SimulatedStudy
from search.simulation.truth.model import Truth
from search.tracking.outcome import COMPLETED
from search.tracking.records import objective_metric_of
from search.tracking.trial_record import TrialRecord
from trainables.config import ConfigError
from trainables.results import seed_key


def selected(table: Sequence[TrialRecord], mode: str) -> TrialRecord | None:
    """The trial the study recommends (module docstring); None before any trial completed."""
    done = [r for r in table if r.status == COMPLETED]
    if not done:
        return None
    try:
        winner, opponent = choose(table, mode)
    except ConfigError:  # one side has no completed trial: the other side's best (ties: the first)
        sign = -1.0 if mode == "max" else 1.0
        return min(done, key=lambda r: (math.isnan(r.objective), sign * r.objective))
    better = winner.objective >= opponent.objective if mode == "max" else winner.objective <= opponent.objective
    return winner if better else opponent


@dataclass(frozen=True)
class Pick:
    """The selection after ``spent`` seed-epochs: which trial, and its config's true score."""

    spent: int
    time: float
    trial_id: str
    label: str
    dev: float  # the search's dev seed mean of it
    true: float  # Truth.true_score of its config


def selections(study: SimulatedStudy, truth: Truth) -> list[Pick]:
    """The selection after every trial's end, in time order: the study's best-so-far curve (the last is
    what the study recommends when it ends)."""
    metric = objective_metric_of(study.plan.invocation.objective, truth.primary)
    if metric is None:
        raise ConfigError(
            f"objective {study.plan.invocation.objective}: not a dev metric of {truth.primary}, no true score"
        )
    by_id = {t.trial_id: t for t in study.trials}
    rows: list[TrialRecord] = []
    picks: list[Pick] = []
    for event in study.events:
        if event.kind != "end":
            continue
        rows.append(
            TrialRecord.of_ended(by_id[event.trial_id], study.plan.invocation.objective, study.plan.base.epochs)
        )
        if rows[-1].status != COMPLETED and picks:
            continue  # a stopped trial changes no selection
        row = selected(rows, study.plan.invocation.mode)
        if row is None:
            continue
        config = by_id[row.run_id].trial_config.training()
        picks.append(
            Pick(event.spent, event.time, row.run_id, row.label, row.objective, truth.true_score(config, metric))
        )
    return picks


def final_verdict(study: SimulatedStudy, truth: Truth, k: int = 5) -> str:
    """What ``search.finalize`` would say: the two sides ``choose`` picks, each scored by the truth on
    ``k`` seeds the search never trained (the simulated trainable's scores), through finalize's own
    ``collect`` and ``compare``, with the search's failed runs as its risk (``search_risk``, as finalize
    passes it); the headline verdict, or ``no comparison`` where a side has no completed trial."""
    metric = objective_metric_of(study.plan.invocation.objective, truth.primary) or ""
    epochs = study.plan.base.epochs
    by_id = {t.trial_id: t for t in study.trials}
    table = [TrialRecord.of_ended(t, study.plan.invocation.objective, epochs) for t in study.trials]
    try:
        sides = choose(table, study.plan.invocation.mode)
    except ConfigError:
        return "no comparison"
    seeds = final_seeds(list(study.plan.invocation.seeds), k)
    contenders = []
    for role, row in zip(("winner", "opponent"), sides):
        trial = by_id[row.run_id]
        config = trial.trial_config.training().with_(evaluate_test=True)
        dev, scores = f"{truth.primary}/dev/{metric}", {}
        for s in seeds:
            m = truth.epoch_metrics(config, trial.trial_config.key, s, epochs)
            scores[seed_key(dev, s)] = m[dev]
            scores[seed_key(f"{truth.primary}/test/{metric}", s)] = m[f"{truth.primary}/test/{metric}"]
        contender = Contender(role, row, config)
        final = TrialRecord(run_id=row.run_id, label=row.label, objective_metric=dev, metrics=scores)
        collect(contender, [final], truth.primary, seeds)
        contenders.append(contender)
    claim = compare(
        TUNED,
        contenders[0],
        contenders[1],
        metrics=[metric],
        seeds=seeds,
        mode=study.plan.invocation.mode,
        objective_metric=metric,
        fallback=None,
        floor=dict(truth.majority),
        risk=search_risk(table, truth.majority.get(metric, math.nan), sides[0].key, sides[1].key),  # finalize's
    )
    return claim.headline.verdict
