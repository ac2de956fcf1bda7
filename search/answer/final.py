"""``python -m search.finalize STUDY``: the honest answer at the end of a study.

Takes the best completed multitask config by the dev objective (seed mean) and the
single-task baseline, gets their test scores over K seeds (the search's own test
evaluations where a trial ran that seed to its last epoch; the missing seeds are
trained to full epochs through the same Ray Tune + MLflow machinery), and reports
per primary test metric the two means ± std, the paired difference over the same
seeds with its 95% interval (paired t) and a plain verdict. The config with the
better dev score over the K seeds is logged as an MLflow model and registered as
``<study>-best``. Nothing here selects on test.
"""

from __future__ import annotations

import logging
import time

from search.answer.comparison import Contender, FinalResult, compare
from search.answer.config import FinalizeConfig
from search.answer.contenders import (
    choose,
    collect,
    majority_on_test,
    objective_metric_of,
    primary_test_metrics,
    trial_checkpoint,
    trial_config,
)
from search.answer.register import register
from search.answer.retrain import train_missing
from search.answer.text import fmt
from search.tracking import records as rec
from search.tracking.records import Invocation
from spaces import get_study
from trainables.config import ConfigError

logger = logging.getLogger(__name__)


# -- orchestration ----------------------------------------------------------------
def finalize(cfg: FinalizeConfig) -> FinalResult:
    """Choose, complete the seeds, compare, register, write; see the module docstring."""
    from search.tracking.runs import client as mlflow_client
    from search.tracking.runs import find_parent, trial_table

    client = mlflow_client(cfg.tracking_uri)
    experiment, parent = find_parent(client, cfg.study, cfg.name)
    invocation = Invocation.from_params(parent.data.params)
    objective, mode = invocation.objective, invocation.mode
    name = parent.data.tags.get(rec.TUNE_EXPERIMENT_TAG, parent.info.run_name)
    study = get_study(cfg.study)
    table = trial_table(client, experiment.experiment_id, parent)
    if table.empty:
        raise ConfigError(f"study run {name} has no trials in MLflow yet")
    winner_row, baseline_row = choose(table, mode)
    metrics = primary_test_metrics(table, study.primary_name)
    if not metrics:
        raise ConfigError(f"study run {name}: its trials logged no per-seed {study.primary_name} test scores")
    objective_metric = objective_metric_of(objective, study.primary_name)
    seeds = list(range(1, cfg.seeds + 1))
    finals = trial_table(client, experiment.experiment_id, parent, kind=rec.FINAL_KIND)
    contenders = []
    for role, row in (("winner", winner_row), ("baseline", baseline_row)):
        row = row.copy()
        row["checkpoint_dir"] = trial_checkpoint(
            invocation.tune_path, client.get_run(row.run_id).data.tags.get(rec.TRIAL_ID_TAG)
        )
        c = Contender(role, row, trial_config(client, row.run_id))
        earlier = [r for _, r in finals.iterrows() if r.get("final_for") == row.run_id] if len(finals) else []
        collect(c, [row, *earlier], study.primary_name, metrics)
        contenders.append(c)
    winner, baseline = contenders
    logger.info(
        "winner on dev: %s (%s); baseline: %s (%s)",
        winner.row.label,
        fmt(winner.row.objective, winner.row.objective_std),
        baseline.row.label,
        fmt(baseline.row.objective, baseline.row.objective_std),
    )
    missing = {c.role: [s for s in seeds if s not in c.dev] for c in contenders}
    if any(missing.values()):
        train_missing(cfg, parent.info.run_id, invocation, contenders, missing, study.primary_name, metrics)
    majority = majority_on_test(baseline.config)
    rows, headline = compare(winner, baseline, metrics, seeds, mode, objective_metric, study.metric)
    result = FinalResult(cfg.study, name, objective, mode, seeds, winner, baseline, rows, headline, majority=majority)
    if cfg.register:
        register(cfg, parent.info.run_id, result)
    record(client, parent.info.run_id, result)
    return result


def record(client, parent_run_id: str, result: FinalResult) -> None:
    """``final/...`` metrics and the verdict on the parent run."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    values = {}
    for r in result.rows:
        for side in ("winner", "baseline"):
            values[rec.final_key(side, r["metric"], "mean")] = r[f"{side}_mean"]
            values[rec.final_key(side, r["metric"], "std")] = r[f"{side}_std"]
        for part in ("mean", "low", "high"):
            values[rec.final_key("diff", r["metric"], part)] = r[f"diff_{part}"]
    metrics = [Metric(k, float(v), now, 0) for k, v in values.items() if v == v]
    client.log_batch(parent_run_id, metrics=metrics)
    client.set_tag(parent_run_id, rec.VERDICT_TAG, f"{result.headline['metric']}: {result.headline['verdict']}")
    client.set_tag(parent_run_id, rec.WINNER_TAG, str(result.winner.row.label))
    if result.model_uri:
        client.set_tag(parent_run_id, rec.MODEL_TAG, result.model_uri)
