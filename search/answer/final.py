"""The honest answer at the end of a study (``search.run``'s last step, or ``python -m search.finalize``).

Takes, by the dev objective (seed mean), the best completed trial with an auxiliary task (the
winner) and the best completed single-task trial (the baseline or a single-task trial with searched
lr and warm-up), makes the winner's ablation (its auxiliary tasks removed, every other setting kept),
trains the three to full epochs on K fresh seeds the search never used (through the same Ray Tune +
MLflow machinery; an earlier finalize's completed runs are reused), and answers two claims
(:mod:`search.answer.claims`): (a) winner against the best single-task trial, (b) winner against
its ablation; per primary test metric the means ± std and the paired difference with its interval,
the study's metric one verdict per claim. Each finalize is one look of a group-sequential design
(:mod:`search.answer.looks`). The config with the better dev score over the K seeds is logged as an
MLflow model and registered as ``<study>-best``. Nothing here selects on test.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from search.answer import stats
from search.answer.claims import ABLATION, TUNED, UNTUNED, Contender, Risk, Sides, ablation_config, compare
from search.answer.comparison import FinalResult
from search.answer.config import FinalizeConfig
from search.answer.contenders import (
    ablation_row,
    choose,
    collect,
    complete_finals,
    final_checkpoint,
    final_seeds,
    search_risk,
    trial_config,
)
from search.answer.looks import ABLATION_VERDICT_TAG, check_seeds, design_of, earlier_looks, pairs_before, record_look
from search.answer.register import register
from search.answer.retrain import train_missing
from search.answer.text import fmt
from search.study.kind import Kinds, TrialKind
from search.tracking import records as rec
from search.tracking.records import Invocation, objective_metric_of
from spaces import get_study
from trainables.config import ConfigError

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)


# -- orchestration ----------------------------------------------------------------
def finalize_study(cfg: FinalizeConfig, kinds: Kinds, kind: TrialKind | None = None) -> FinalResult:
    """One look (:func:`finalize`); with ``cfg.until_decided`` more looks, each at the seeds the last one said
    would decide claim (a), until it is decided or the spending plan's most seeds are looked at: every look
    spends only its share of the error (:mod:`search.answer.sequential`), so going on keeps the false "better"
    rate of a single look."""
    result = finalize(cfg, kinds, kind)
    while cfg.until_decided and (more := next_look(result)) is not None:
        row = result.headline
        logger.info(
            "%s undecided at %d final seeds (interval [%+.4f, %+.4f]): the next look at %d seeds",
            row.metric, len(result.seeds), row.diff.low, row.diff.high, more,
        )  # fmt: skip
        cfg = replace(cfg, seeds=more)
        result = finalize(cfg, kinds, kind)
    return result


def next_look(result: FinalResult) -> int | None:
    """The final seeds of the look that would decide claim (a), where it is undecided and the plan can."""
    row = result.headline
    if row.verdict != stats.UNDECIDED or row.needed is None:
        return None
    return max(row.needed, len(result.seeds) + 1)


def finalize(cfg: FinalizeConfig, kinds: Kinds, kind: TrialKind | None = None) -> FinalResult:
    """Choose, train the fresh seeds, compare, register, write; see the module docstring. ``kind``: the study's
    trial kind where the caller has it (``search.run``'s plan); else ``kinds`` chooses it from the truth file the
    study recorded (``search.simulation.kind.trial_kind``)."""
    from search.tracking.runs import client as mlflow_client
    from search.tracking.runs import find_parent, trial_table

    client = mlflow_client(cfg.tracking_uri)
    experiment, parent = find_parent(client, cfg.study, cfg.name)
    invocation = Invocation.from_params(parent.data.params)
    kind = kind or kinds(invocation.simulate)
    name = parent.data.tags.get(rec.TUNE_EXPERIMENT_TAG, parent.info.run_name)
    primary = get_study(cfg.study).primary_name
    table = trial_table(client, experiment.experiment_id, parent)
    if not table:
        raise ConfigError(f"study run {name} has no trials in MLflow yet")
    seeds = final_seeds(invocation.seeds, cfg.seeds)
    finals = trial_table(client, experiment.experiment_id, parent, kind=rec.FINAL_KIND)
    winner_row, opponent_row = choose(table, invocation.mode)
    winner = Contender("winner", winner_row, trial_config(client, winner_row.run_id))
    opponent = Contender("opponent", opponent_row, trial_config(client, opponent_row.run_id))
    ablated = ablation_config(winner.config)
    own = ablation_row(winner.row, ablated).key != opponent.row.key  # else: the opponent is the ablation
    sides = Sides(winner, opponent, Contender(ABLATION, ablation_row(winner.row, ablated), ablated) if own else None)
    contenders = sides.all
    for c in contenders:
        row = c.row
        earlier = [
            replace(
                r,
                checkpoint=final_checkpoint(
                    invocation.tune_path, client.get_run(r.run_id).data.tags.get(rec.TRIAL_ID_TAG)
                ),
            )
            for r in complete_finals(finals, row.run_id, c.config.epochs)
        ]
        collect(c, earlier, primary, seeds)
        shown = {"winner": "multitask", "opponent": "single-task"}.get(c.role, c.role)  # the closing block's words
        logger.info("%s: %s (dev %s)", shown, row.label, fmt(row.objective, row.objective_std))
    missing = {c.role: [s for s in seeds if s not in c.dev] for c in contenders}
    if any(missing.values()):
        train_missing(cfg, parent.info.run_id, invocation, contenders, missing, primary, seeds, kind)
    dev_floor = rec.majority_of(parent.data.metrics).get(objective_metric_of(invocation.objective, primary) or "")
    floor = dev_floor if dev_floor is not None else float("nan")
    risks = {key: search_risk(table, floor, winner.row.key, sides.other(key).row.key) for key in (TUNED, ABLATION)}
    tuned = len({r.key for r in table if r.single_task}) > 1  # else the single-task side is the baseline alone
    return conclude(
        cfg, client, parent_run_id=parent.info.run_id, invocation=invocation, name=name, seeds=seeds, sides=sides,
        risks=risks, kind=kind, single_tuned=tuned,
    )  # fmt: skip


def conclude(
    cfg: FinalizeConfig,
    client: MlflowClient,
    *,
    parent_run_id: str,
    invocation: Invocation,
    name: str,
    seeds: list[int],
    sides: Sides,
    risks: Mapping[str, Risk],
    kind: TrialKind,
    single_tuned: bool = True,
) -> FinalResult:
    """Both claims on test at this look, the model registered, the numbers recorded on the parent run.
    ``single_tuned``: whether the search tried a second single-task config (else: the untuned baseline)."""
    study = get_study(cfg.study)
    metrics = list(dict.fromkeys(m for c in sides.all for m in c.test))
    if not metrics:
        raise ConfigError(f"study run {name}: its final runs logged no per-seed {study.primary_name} test scores")
    objective_metric = objective_metric_of(invocation.objective, study.primary_name)
    majority = kind.majority_on_test(sides.opponent.config)
    tags = client.get_run(parent_run_id).data.tags
    looks = earlier_looks(tags)
    check_seeds(looks, len(seeds))
    design = design_of(tags, cfg.max_seeds, len(seeds))
    named = {TUNED: "" if single_tuned else UNTUNED}  # claim (a)'s other side where the search tuned none
    claims = tuple(
        compare(
            key, sides.winner, sides.other(key), metrics=metrics, seeds=seeds, mode=invocation.mode,
            objective_metric=objective_metric, fallback=study.metric, floor=majority, design=design,
            earlier=pairs_before(looks, key, len(seeds)), risk=risks.get(key, Risk()), other_name=named.get(key, ""),
            margin=cfg.margin,
        )
        for key in (TUNED, ABLATION)
    )  # fmt: skip
    result = FinalResult(
        cfg.study,
        name,
        invocation.objective,
        invocation.mode,
        seeds,
        sides.winner,
        claims,
        majority=majority,
        search_seeds=list(invocation.seeds),
        earlier=[look for look in looks if look["seeds"] < len(seeds)],
    )
    if cfg.register and kind.registers_model:  # a simulated trial trained no model
        register(cfg, parent_run_id, result)
    record(client, parent_run_id, result)
    record_look(client, parent_run_id, looks, result.this_look(), design)
    return result


NOTE_TAG = "mlflow.note.content"  # the run's description in the MLflow UI (Markdown)
NOTE_LIMIT = 8000  # MLflow's longest tag value
ANSWER_HEADING = "## Final test evaluation"


def describe(client, parent_run_id: str, answer: str) -> None:
    """The study run's description in the MLflow UI: its trials view link, then the answer (``final.md``),
    replacing an earlier look's, cut to MLflow's limit with a pointer to the report where it is longer."""
    note = client.get_run(parent_run_id).data.tags.get(NOTE_TAG, "")
    head = note.split(ANSWER_HEADING, 1)[0].rstrip()
    text = f"{head}\n\n{answer}" if head else answer
    if len(text) > NOTE_LIMIT:
        cut = "\n\n(cut here: the whole answer is final.md in the report)"
        text = text[: NOTE_LIMIT - len(cut)] + cut
    client.set_tag(parent_run_id, NOTE_TAG, text)


def record(client, parent_run_id: str, result: FinalResult) -> None:
    """``final/...`` metrics (step: the look, so every look's numbers stay in the history) and the verdicts."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    step = len(result.earlier)
    values = {}
    for claim in result.claims:
        other, diff = ("opponent", "diff") if claim.key == TUNED else ("ablation", "ablation_diff")
        for r in claim.rows:
            d = r.to_dict()
            for side, prefix in (("winner", "winner"), (other, "other")):
                values[rec.final_key(side, r.metric, "mean")] = d[f"{prefix}_mean"]
                values[rec.final_key(side, r.metric, "std")] = d[f"{prefix}_std"]
            for part in ("mean", "std", "low", "high"):
                values[rec.final_key(diff, r.metric, part)] = d[f"diff_{part}"]
            values[rec.final_key(diff, r.metric, "detectable")] = r.detectable
            values[rec.final_key(diff, r.metric, "margin")] = r.margin
            values[rec.final_key(diff, r.metric, "seeds_to_decide")] = d["seeds_to_decide"]
    metrics = [Metric(k, float(v), now, step) for k, v in values.items() if v == v]
    client.log_batch(parent_run_id, metrics=metrics)
    tuned, claims = result.tuned.headline, {c.key: c.headline for c in result.claims}
    client.set_tag(parent_run_id, rec.VERDICT_TAG, f"{tuned.metric}: {tuned.verdict}")
    if ABLATION in claims:
        client.set_tag(parent_run_id, ABLATION_VERDICT_TAG, f"{claims[ABLATION].metric}: {claims[ABLATION].verdict}")
    describe(client, parent_run_id, result.markdown())
    client.set_tag(parent_run_id, rec.WINNER_TAG, str(result.winner.row.label))
    client.set_tag(parent_run_id, rec.OPPONENT_TAG, str(result.opponent.row.label))
    if result.model_uri:
        client.set_tag(parent_run_id, rec.MODEL_TAG, result.model_uri)
