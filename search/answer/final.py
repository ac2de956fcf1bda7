"""The honest answer at the end of a study (``search.run``'s last step, or ``python -m search.finalize``).

Does multitask training help the primary task? Takes, by the dev objective (seed mean), the best
completed trial with an auxiliary task and the best completed single-task trial (the baseline or
a single-task trial with searched lr and warm-up), trains both to full epochs on K fresh seeds the
search never used (through the same Ray Tune + MLflow machinery; an earlier finalize's completed
runs are reused), and reports per primary test metric the two means ± std and the paired difference
with its 95% interval (paired t); the study's metric gets the one verdict. The config with the better
dev score over the K seeds is logged as an MLflow model and registered as ``<study>-best``. Nothing
here selects on test.
"""

from __future__ import annotations

import logging
import time

from search.answer.comparison import Contender, FinalResult, compare
from search.answer.config import FinalizeConfig
from search.answer.contenders import (
    choose,
    collect,
    complete_finals,
    final_checkpoint,
    final_seeds,
    objective_metric_of,
    trial_config,
)
from search.answer.register import register
from search.answer.retrain import train_missing
from search.answer.text import fmt
from search.study.kind import Kinds, TrialKind
from search.tracking import records as rec
from search.tracking.records import Invocation
from spaces import get_study
from trainables.config import ConfigError

logger = logging.getLogger(__name__)


# -- orchestration ----------------------------------------------------------------
def finalize(cfg: FinalizeConfig, kinds: Kinds) -> FinalResult:
    """Choose, train the fresh seeds, compare, register, write; see the module docstring. ``kinds``: the
    trial kind of the study's recorded truth file (``search.simulation.kind.trial_kind``)."""
    from search.tracking.runs import client as mlflow_client
    from search.tracking.runs import find_parent, trial_table

    client = mlflow_client(cfg.tracking_uri)
    experiment, parent = find_parent(client, cfg.study, cfg.name)
    invocation = Invocation.from_params(parent.data.params)
    kind = kinds(invocation.simulate)
    name = parent.data.tags.get(rec.TUNE_EXPERIMENT_TAG, parent.info.run_name)
    primary = get_study(cfg.study).primary_name
    table = trial_table(client, experiment.experiment_id, parent)
    if table.empty:
        raise ConfigError(f"study run {name} has no trials in MLflow yet")
    seeds = final_seeds(invocation.seeds, cfg.seeds)
    finals = trial_table(client, experiment.experiment_id, parent, kind=rec.FINAL_KIND)
    contenders = []
    for role, row in zip(("winner", "opponent"), choose(table, invocation.mode)):
        c = Contender(role, row, trial_config(client, row.run_id))
        earlier = complete_finals(finals, row.run_id, c.config.epochs)
        for r in earlier:
            r["checkpoint_dir"] = final_checkpoint(
                invocation.tune_path, client.get_run(r.run_id).data.tags.get(rec.TRIAL_ID_TAG)
            )
        collect(c, earlier, primary, seeds)
        contenders.append(c)
        logger.info("%s on dev: %s (%s)", role, row.label, fmt(row.objective, row.objective_std))
    missing = {c.role: [s for s in seeds if s not in c.dev] for c in contenders}
    if any(missing.values()):
        train_missing(cfg, parent.info.run_id, invocation, contenders, missing, primary, seeds, kind)
    return conclude(cfg, client, parent.info.run_id, invocation, name, seeds, contenders, kind)


def conclude(
    cfg: FinalizeConfig,
    client,
    parent_run_id: str,
    invocation: Invocation,
    name: str,
    seeds,
    contenders,
    kind: TrialKind,
):
    """Compare on test, register the model, record the numbers on the parent run."""
    winner, opponent = contenders
    study = get_study(cfg.study)
    metrics = list(dict.fromkeys(m for c in contenders for m in c.test))
    if not metrics:
        raise ConfigError(f"study run {name}: its final runs logged no per-seed {study.primary_name} test scores")
    objective_metric = objective_metric_of(invocation.objective, study.primary_name)
    rows, headline = compare(winner, opponent, metrics, seeds, invocation.mode, objective_metric, study.metric)
    result = FinalResult(
        cfg.study,
        name,
        invocation.objective,
        invocation.mode,
        seeds,
        winner,
        opponent,
        rows,
        headline,
        majority=kind.majority_on_test(opponent.config),
        search_seeds=list(invocation.seeds),
    )
    if cfg.register and kind.registers_model:  # a simulated trial trained no model
        register(cfg, parent_run_id, result)
    record(client, parent_run_id, result)
    return result


def record(client, parent_run_id: str, result: FinalResult) -> None:
    """``final/...`` metrics and the verdict on the parent run."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    values = {}
    for r in result.rows:
        for side in ("winner", "opponent"):
            values[rec.final_key(side, r["metric"], "mean")] = r[f"{side}_mean"]
            values[rec.final_key(side, r["metric"], "std")] = r[f"{side}_std"]
        for part in ("mean", "low", "high"):
            values[rec.final_key("diff", r["metric"], part)] = r[f"diff_{part}"]
    metrics = [Metric(k, float(v), now, 0) for k, v in values.items() if v == v]
    client.log_batch(parent_run_id, metrics=metrics)
    client.set_tag(parent_run_id, rec.VERDICT_TAG, f"{result.headline['metric']}: {result.headline['verdict']}")
    client.set_tag(parent_run_id, rec.WINNER_TAG, str(result.winner.row.label))
    client.set_tag(parent_run_id, rec.OPPONENT_TAG, str(result.opponent.row.label))
    if result.model_uri:
        client.set_tag(parent_run_id, rec.MODEL_TAG, result.model_uri)
