"""TODO docstring
"""

from __future__ import annotations

import logging
import time

import pandas as pd

from search.answer.comparison import Contender
from search.answer.config import FinalizeConfig
from search.answer.contenders import collect
from search.answer.text import list_text
from search.tracking.records import FINAL_KIND, Invocation
from trainables.cli import mask_credentials

logger = logging.getLogger(__name__)


def train_missing(
    cfg: FinalizeConfig,
    parent_run_id: str,
    invocation: Invocation,
    contenders: list[Contender],
    missing: dict[str, list[int]],
    primary: str,
    metrics: list[str],
) -> None:
    """Train each contender's missing seeds to full epochs as Tune trials logged to MLflow."""
    objective, tune_path = invocation.objective, invocation.tune_path
    from ray import tune

    from search.infra.ray_connect import connect_address
    from search.infra.resources import check_request
    from search.tracking.sink import spool_path, study_spool
    from search.tracking.tracker import MLflowTracker
    from trainables.loop import prepare_data
    from trainables.model import load_tokenizer
    from trainables.tune import data_signature, multitask_trainable

    connect_address(cfg.address)
    check_request(cfg.cpus_per_trial, cfg.gpus_per_trial, local=cfg.address in (None, "local"))
    everything = contenders[0].config.with_(tasks=tuple(dict.fromkeys(t for c in contenders for t in c.config.tasks)))
    tokenizer = load_tokenizer(everything.encoder)
    data = prepare_data(everything, tokenizer)
    points = []
    for c in contenders:
        seeds = missing[c.role]
        if not seeds:
            continue
        from search.study.searcher import flat_config

        label = f"final {c.role} {c.row.label} seeds {list_text(seeds)}"
        points.append(
            {
                "train": flat_config(c.config),
                "seeds": seeds,
                "key": c.row.canonical_key,
                "label": label,
                "baseline": c.role == "baseline",
                "kind": FINAL_KIND,
                "final_for": c.row.run_id,
                "metric": objective,
            }
        )
        logger.info("finalize trains %s seeds %s to %d epochs", c.row.label, list_text(seeds), c.config.epochs)
    storage, _, study_experiment = tune_path.rstrip("/").rpartition("/")
    trainable = tune.with_resources(
        tune.with_parameters(
            multitask_trainable, data=data, signature=data_signature(everything, tokenizer), metric=objective
        ),
        {"cpu": cfg.cpus_per_trial, "gpu": cfg.gpus_per_trial},
    )
    epochs = max(c.config.epochs for c in contenders)
    # the study's own spool: what the search left unsent goes first, then these runs, in order
    spool = study_spool(spool_path(tune_path), cfg.tracking_uri, parent_run_id)
    tuner = tune.Tuner(
        trainable,
        param_space={"trial": tune.grid_search(points)},
        tune_config=tune.TuneConfig(
            max_concurrent_trials=cfg.max_concurrent, trial_dirname_creator=lambda trial: f"trial_{trial.trial_id}"
        ),
        run_config=tune.RunConfig(
            name=f"{study_experiment}-final-{time.strftime('%Y%m%d-%H%M%S')}",
            storage_path=storage,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            callbacks=[
                MLflowTracker(cfg.tracking_uri, parent_run_id, epochs, [], objective=objective, spool=str(spool.path))
            ],
            verbose=0,
        ),
    )
    results = tuner.fit()
    if not spool.drain(spool.grace_s):
        raise ConnectionError(
            f"MLflow tracking server {mask_credentials(cfg.tracking_uri)} unreachable "
            f"({spool.last_error}): {spool.pending()} records of the final runs wait in {spool.path}"
        )
    by_role = {c.role: c for c in contenders}
    for result in results:
        point = result.config["trial"]
        c = by_role["baseline" if point["baseline"] else "winner"]
        if result.error or not result.metrics or int(result.metrics.get("epoch", 0)) < c.config.epochs:
            if result.error is None:  # stopped, not failed: Ctrl-C or SIGTERM during fit (Tune ends gracefully)
                raise KeyboardInterrupt(
                    f"finalize interrupted; the study itself is complete: rerun "
                    f"python -m search.finalize {cfg.study} --name {study_experiment}"
                )
            raise RuntimeError(f"finalize could not train {point['label']}: {result.error or 'stopped early'}")
        row = pd.Series({k: v for k, v in result.metrics.items()})
        row["objective"] = result.metrics.get(objective)
        for seed in point["seeds"]:
            if f"{objective[: -len('/mean')]}/seed{seed}" in result.metrics:
                row[f"objective/seed{seed}"] = result.metrics[f"{objective[: -len('/mean')]}/seed{seed}"]
        row["checkpoint_dir"] = result.checkpoint.path if result.checkpoint else ""
        collect(c, [row], primary, metrics)
        c.trained = list(point["seeds"])
