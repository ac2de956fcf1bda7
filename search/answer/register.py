"""The model a study hands over: of the best multitask and the best single-task trial, the one with the
better dev mean over the final seeds, from its best-dev seed's checkpoint, logged and registered as ``<study>-best``.
"""

from __future__ import annotations

import logging
import math
import tempfile
from pathlib import Path

from search.answer import stats
from search.answer.claims import Contender
from search.answer.comparison import FinalResult
from search.answer.config import FinalizeConfig
from search.tracking import records as rec
from search.tracking.records import Invocation, ModelCard, objective_metric_of
from spaces import get_study

logger = logging.getLogger(__name__)


def register(cfg: FinalizeConfig, parent_run_id: str, result: FinalResult) -> None:
    """Log and register the config with the better dev score over the K final seeds (its best seed)."""
    from search.tracking.registry import log_winner
    from trainables.model import load_tokenizer

    def dev_mean(c: Contender) -> float:
        return stats.mean_std([c.dev.get(s, math.nan) for s in result.seeds])[0]

    w, b = result.winner, result.opponent
    better_w = dev_mean(w) >= dev_mean(b) if result.mode == "max" else dev_mean(w) <= dev_mean(b)
    chosen = w if better_w else b
    usable = {s: v for s, v in chosen.dev.items() if s in chosen.checkpoints}
    if not usable:
        logger.warning("no checkpoint of %s is reachable: no model registered", chosen.row.label)
        return
    seed = (max if result.mode == "max" else min)(usable, key=usable.get)
    card = model_card(cfg, parent_run_id, result, chosen)
    logger.info("model card: %s", card.summary())
    if card.caveat():
        logger.warning("%s", card.caveat())
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = fetch(chosen.checkpoints[seed], Path(tmp))
        scores = {
            f"dev/{result.objective}": usable[seed],
            **{f"test/{m}": chosen.test[m][seed] for m in chosen.test if seed in chosen.test[m]},
        }
        result.model_uri = log_winner(
            cfg.tracking_uri,
            parent_run_id,
            cfg.study,
            checkpoint,
            chosen.config.with_(seed=seed),
            load_tokenizer(chosen.config.encoder),
            scores,
            {
                "trial": str(chosen.row.label),
                "role": chosen.role,
                "seed": str(seed),
                "canonical_key": chosen.row.key,
                "verdict": result.verdicts(),
            },
            card,
        )
    role = "multitask side" if better_w else "single-task side"
    result.model_of = f"{chosen.row.label}, seed {seed}, the {role}: higher dev score over {len(result.seeds)} seeds"
    logger.info("registered %s as %s", result.model_of, result.model_uri)


def model_card(cfg: FinalizeConfig, parent_run_id: str, result: FinalResult, chosen: Contender) -> ModelCard:
    """What the registered model is: the study's preset (the parent run's params), the chosen config's
    dev score over the final seeds against the majority rate on the same dev rows (the parent run's
    ``majority/dev/<metric>``; ``dev - majority`` with its t interval), and the study's two verdicts."""
    from search.tracking.runs import client as mlflow_client

    parent = mlflow_client(cfg.tracking_uri).get_run(parent_run_id)
    invocation = Invocation.from_params(parent.data.params)
    metric = objective_metric_of(result.objective, get_study(cfg.study).primary_name)
    majority = rec.majority_of(parent.data.metrics).get(metric, math.nan) if metric else math.nan
    scores = [chosen.dev.get(s, math.nan) for s in result.seeds]
    mean, std, _ = stats.mean_std(scores)
    diff = stats.against_constant(scores, majority)
    return ModelCard(
        study=cfg.study,
        preset=invocation.preset,
        metric=metric or result.objective,
        dev_mean=mean,
        dev_std=std,
        seeds=tuple(result.seeds),
        majority=majority,
        low=diff.low,
        high=diff.high,
        above_majority=stats.beats_constant(diff, result.mode),
        verdict=result.verdicts(),  # both claims: (a) against the best single-task trial, (b) the ablation
    )


def fetch(location: str, folder: Path) -> Path:
    """A checkpoint file from local disk or any URI pyarrow reads (s3://, gs://) into ``folder``."""
    import pyarrow.fs as pafs

    if "://" not in location:
        return Path(location)
    fs, path = pafs.FileSystem.from_uri(location)
    target = folder / Path(path).name
    pafs.copy_files(path, str(target), source_filesystem=fs, destination_filesystem=pafs.LocalFileSystem())
    return target
