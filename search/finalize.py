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

import argparse
import json
import logging
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from search import stats
from search.config import Invocation
from spaces import get_study
from trainables.cli import ArgumentParser, mask_credentials, run_main, setup_logging
from trainables.config import ConfigError, TrainConfig
from trainables.tasks import DataError

logger = logging.getLogger("search.finalize")
FINAL_KIND = "final"  # tag kind of the runs finalize trains


@dataclass(frozen=True)
class FinalizeConfig:
    study: str
    name: str | None = None  # the study invocation (Tune experiment name); None: the latest
    seeds: int = 5
    tracking_uri: str = "sqlite:///mlflow.db"
    out_dir: str = "results"
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    max_concurrent: int = 2
    address: str | None = None
    register: bool = True

    def __post_init__(self) -> None:
        get_study(self.study)
        if self.seeds < 2:
            raise ConfigError(f"--seeds {self.seeds}: expected >= 2 (one seed says nothing about noise)")
        if self.cpus_per_trial <= 0 or self.gpus_per_trial < 0 or self.max_concurrent < 1:
            raise ConfigError("--cpus-per-trial > 0, --gpus-per-trial >= 0 and --max-concurrent >= 1 expected")


@dataclass
class Contender:
    """One side of the final comparison: a trial's config and its scores per seed."""

    role: str  # "winner" or "baseline"
    row: pd.Series  # the trial's row of tracking.trial_table
    config: TrainConfig
    dev: dict[int, float] = field(default_factory=dict)  # seed -> dev objective
    test: dict[str, dict[int, float]] = field(default_factory=dict)  # metric -> seed -> test score
    checkpoints: dict[int, str] = field(default_factory=dict)  # seed -> checkpoint file (local or URI)
    trained: list[int] = field(default_factory=list)  # seeds finalize trained itself


@dataclass
class FinalResult:
    study: str
    name: str
    objective: str
    mode: str
    seeds: list[int]
    winner: Contender
    baseline: Contender
    rows: list[dict[str, Any]]  # one per primary test metric
    headline: dict[str, Any]  # the row of the objective's metric
    model_uri: str | None = None
    model_of: str | None = None
    majority: dict[str, float] = field(default_factory=dict)

    def markdown(self) -> str:
        w, b = self.winner, self.baseline
        seeds = f"{self.seeds[0]}-{self.seeds[-1]}"
        reused = sorted(set(self.seeds) - set(w.trained)), sorted(set(self.seeds) - set(b.trained))
        lines = [
            f"## Final test evaluation: {len(self.seeds)} seeds ({seeds}), {stats.METHOD} interval",
            "",
            f"Chosen on dev (no test score was used to choose): winner **{w.row.label}** "
            f"(dev {fmt(w.row.objective, w.row.objective_std)}), baseline **{b.row.label}** "
            f"(dev {fmt(b.row.objective, b.row.objective_std)}).",
            f"Test scores of seeds {list_text(reused[0])} (winner) and {list_text(reused[1])} (baseline) come from "
            "the search's own last epochs; the others were trained to full epochs by finalize.",
            "",
            "| test metric | winner | baseline | Δ winner − baseline [95% CI] | verdict |",
            "|---|---|---|---|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r['metric']} | {fmt(r['winner_mean'], r['winner_std'])} "
                f"| {fmt(r['baseline_mean'], r['baseline_std'])} "
                f"| {signed(r['diff_mean'])} [{signed(r['diff_low'])}, {signed(r['diff_high'])}] | {r['verdict']} |"
            )
        published = get_study(self.study).published
        for source, values in published.items():
            shown = [f"{r['metric']}={values[r['metric']]:.4f}" for r in self.rows if r["metric"] in values]
            if shown:
                lines.append(f"| *published: {source}* (one run, chosen on test) | " + ", ".join(shown) + " | | | |")
        if self.majority:
            lines += [
                "",
                "Majority (a constant predictor, the floor any model must beat) on the same test rows: "
                + ", ".join(f"{k}={v:.4f}" for k, v in self.majority.items() if not math.isnan(v))
                + ".",
            ]
        h = self.headline
        lines += [
            "",
            f"**Verdict on test {h['metric']}, winner against baseline: {h['verdict']}** "
            f"(Δ {signed(h['diff_mean'])}, 95% CI [{signed(h['diff_low'])}, {signed(h['diff_high'])}], "
            f"n = {h['n']} paired seeds).",
        ]
        if self.model_uri:
            lines += [
                "",
                f"Model: `{self.model_uri}` ({self.model_of}); "
                f"`python -m trainables.predict --model {self.model_uri} --input sentences.txt "
                "--out predictions.jsonl`.",
            ]
        return "\n".join(lines) + "\n"


def fmt(mean: float, std: float) -> str:
    if mean is None or mean != mean:
        return "–"
    return f"{mean:.4f} ± {std:.4f}" if std == std else f"{mean:.4f}"


def signed(x: float) -> str:
    return "–" if x != x else f"{x:+.4f}"


def list_text(seeds: list[int]) -> str:
    return ",".join(map(str, seeds)) if seeds else "none"


# -- choosing ---------------------------------------------------------------------
def choose(table: pd.DataFrame, mode: str) -> tuple[pd.Series, pd.Series]:
    """The best completed multitask trial by dev objective (seed mean), and the baseline."""
    done = table[(table.status == "completed") & table.objective.notna()]
    baseline = done[done.baseline]
    if baseline.empty:
        raise ConfigError("the study has no completed baseline trial yet: continue it with --resume first")
    others = done[~done.baseline].sort_values("objective", ascending=(mode == "min"))
    if others.empty:
        raise ConfigError("the study has no completed multitask trial yet: continue it with --resume first")
    return others.iloc[0], baseline.iloc[0]


def per_seed(row: pd.Series, prefix: str) -> dict[int, float]:
    """``{seed: value}`` from a trial row's ``{prefix}/seed{S}`` columns."""
    out = {}
    for column, value in row.items():
        if isinstance(column, str) and column.startswith(prefix + "/seed") and value == value:
            out[int(column[len(prefix) + len("/seed") :])] = float(value)
    return out


def primary_test_metrics(table: pd.DataFrame, primary: str) -> list[str]:
    """The primary task's test metrics that hold per-seed values, in first-seen order."""
    names = []
    for column in table.columns:
        if isinstance(column, str) and column.startswith(f"{primary}/test/") and "/seed" in column:
            name = column[len(f"{primary}/test/") :].rsplit("/seed", 1)[0]
            if name not in names:
                names.append(name)
    return names


def collect(contender: Contender, rows: list[pd.Series], primary: str, metrics: list[str]) -> None:
    """Per-seed dev objective and test scores of ``rows`` (the trial, then earlier finalize runs)."""
    for row in rows:
        for seed, value in per_seed(row, "objective").items():
            tests = {m: per_seed(row, f"{primary}/test/{m}").get(seed) for m in metrics}
            if seed in contender.dev or any(v is None for v in tests.values()):
                continue  # a seed counts once, and only with every test score
            contender.dev[seed] = value
            for m, v in tests.items():
                contender.test.setdefault(m, {})[seed] = float(v)  # type: ignore[arg-type]
            checkpoint = row.get("checkpoint_dir")
            if isinstance(checkpoint, str) and checkpoint:
                contender.checkpoints[seed] = f"{checkpoint.rstrip('/')}/seed-{seed}.pt"


# -- comparing --------------------------------------------------------------------
def compare(
    winner: Contender,
    baseline: Contender,
    metrics: list[str],
    seeds: list[int],
    mode: str,
    objective_metric: str | None,
    fallback: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per metric the paired comparison; the headline is the objective's metric (where the objective
    is a primary dev metric), else ``fallback`` (the study's metric), else the first."""
    rows = []
    for m in metrics:
        w = [winner.test.get(m, {}).get(s, math.nan) for s in seeds]
        b = [baseline.test.get(m, {}).get(s, math.nan) for s in seeds]
        # each metric's own direction: only the objective may be minimised
        direction = mode if m == objective_metric else "max"
        d = stats.paired_difference(w, b)
        wm, ws, _ = stats.mean_std(w)
        bm, bs, _ = stats.mean_std(b)
        rows.append(
            {
                "metric": m,
                "winner_mean": wm,
                "winner_std": ws,
                "baseline_mean": bm,
                "baseline_std": bs,
                "diff_mean": d.mean,
                "diff_std": d.std,
                "diff_low": d.low,
                "diff_high": d.high,
                "n": d.n,
                "method": d.method,
                "verdict": stats.verdict(d, direction),
            }
        )
    wanted = objective_metric or fallback
    headline = next((r for r in rows if r["metric"] == wanted), rows[0])
    return rows, headline


# -- orchestration ----------------------------------------------------------------
def finalize(cfg: FinalizeConfig) -> FinalResult:
    """Choose, complete the seeds, compare, register, write; see the module docstring."""
    from search.tracking import client as mlflow_client
    from search.tracking import find_parent, trial_table

    client = mlflow_client(cfg.tracking_uri)
    experiment, parent = find_parent(client, cfg.study, cfg.name)
    invocation = Invocation.from_params(parent.data.params)
    objective, mode = invocation.objective, invocation.mode
    name = parent.data.tags.get("tune_experiment", parent.info.run_name)
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
    finals = trial_table(client, experiment.experiment_id, parent, kind=FINAL_KIND)
    contenders = []
    for role, row in (("winner", winner_row), ("baseline", baseline_row)):
        row = row.copy()
        row["checkpoint_dir"] = trial_checkpoint(
            invocation.tune_path, client.get_run(row.run_id).data.tags.get("trial_id")
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
    majority = test_majority(baseline.config)
    rows, headline = compare(winner, baseline, metrics, seeds, mode, objective_metric, study.metric)
    result = FinalResult(cfg.study, name, objective, mode, seeds, winner, baseline, rows, headline, majority=majority)
    if cfg.register:
        register(cfg, parent.info.run_id, result)
    record(client, parent.info.run_id, result)
    return result


def objective_metric_of(objective: str, primary: str) -> str | None:
    """``semeval/dev/acc_4way/mean`` -> ``acc_4way``; None for objectives off the primary's dev split."""
    name = objective[: -len("/mean")] if objective.endswith("/mean") else objective
    prefix = f"{primary}/dev/"
    return name[len(prefix) :] if name.startswith(prefix) else None


def trial_config(client, run_id: str) -> TrainConfig:
    """The exact TrainConfig a trial trained (its ``trial_config.json`` artifact)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run_id, "trial_config.json", tmp)
        return TrainConfig.from_dict(json.loads(Path(path).read_text()))


def test_majority(config: TrainConfig) -> dict[str, float]:
    """The constant predictor's scores on the primary's test rows as the trials saw them (same limit)."""
    from trainables.batching import limit_rows
    from trainables.majority import majority_scores
    from trainables.tasks import get_task

    task = get_task(config.primary, Path(config.data_dir), config.protocol)
    rows = task.examples("test")
    return majority_scores(
        task, [rows[i] for i in limit_rows(len(rows), config.max_eval_examples, task.group_size, first=True)]
    )


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

    from search.mlflow_spool import spool_path, study_spool
    from search.ray_connect import connect_address
    from search.resources import check_request
    from search.tracking import MLflowTracker
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
        from search.searcher import flat_config

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


def register(cfg: FinalizeConfig, parent_run_id: str, result: FinalResult) -> None:
    """Log and register the config with the better dev score over the K seeds (its best seed)."""
    from search.model import log_winner
    from trainables.model import load_tokenizer

    def dev_mean(c: Contender) -> float:
        return stats.mean_std([c.dev.get(s, math.nan) for s in result.seeds])[0]

    w, b = result.winner, result.baseline
    better_w = dev_mean(w) >= dev_mean(b) if result.mode == "max" else dev_mean(w) <= dev_mean(b)
    chosen = w if better_w else b
    usable = {s: v for s, v in chosen.dev.items() if s in chosen.checkpoints}
    if not usable:
        logger.warning("no checkpoint of %s is reachable: no model registered", chosen.row.label)
        return
    seed = (max if result.mode == "max" else min)(usable, key=usable.get)
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
                "canonical_key": str(chosen.row.canonical_key),
                "verdict": result.headline["verdict"],
            },
        )
    role = "winner" if better_w else "baseline"
    result.model_of = f"{chosen.row.label}, seed {seed}, the {role}: higher dev score over {len(result.seeds)} seeds"
    logger.info("registered %s as %s", result.model_of, result.model_uri)


def trial_checkpoint(tune_path: str, trial_id: str | None) -> str:
    """The last checkpoint folder of a study trial (``trial_<id>/checkpoint_*``), local or URI; "" if none."""
    import pyarrow.fs as pafs

    if not trial_id:
        return ""
    fs, root = pafs.FileSystem.from_uri(tune_path) if "://" in tune_path else (pafs.LocalFileSystem(), tune_path)
    try:
        found = fs.get_file_info(pafs.FileSelector(f"{root.rstrip('/')}/trial_{trial_id}", allow_not_found=True))
    except OSError:
        return ""
    folders = sorted(
        i.path for i in found if i.type == pafs.FileType.Directory and i.base_name.startswith("checkpoint_")
    )
    if not folders:
        return ""
    prefix = tune_path.split("://", 1)[0] + "://" if "://" in tune_path else ""
    return prefix + folders[-1]


def fetch(location: str, folder: Path) -> Path:
    """A checkpoint file from local disk or any URI pyarrow reads (s3://, gs://) into ``folder``."""
    import pyarrow.fs as pafs

    if "://" not in location:
        return Path(location)
    fs, path = pafs.FileSystem.from_uri(location)
    target = folder / Path(path).name
    pafs.copy_files(path, str(target), source_filesystem=fs, destination_filesystem=pafs.LocalFileSystem())
    return target


def record(client, parent_run_id: str, result: FinalResult) -> None:
    """``final/...`` metrics and the verdict on the parent run."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    values = {}
    for r in result.rows:
        for side in ("winner", "baseline"):
            values[f"final/{side}/{r['metric']}/mean"] = r[f"{side}_mean"]
            values[f"final/{side}/{r['metric']}/std"] = r[f"{side}_std"]
        for part in ("mean", "low", "high"):
            values[f"final/diff/{r['metric']}/{part}"] = r[f"diff_{part}"]
    metrics = [Metric(k, float(v), now, 0) for k, v in values.items() if v == v]
    client.log_batch(parent_run_id, metrics=metrics)
    client.set_tag(parent_run_id, "final_verdict", f"{result.headline['metric']}: {result.headline['verdict']}")
    client.set_tag(parent_run_id, "final_winner", str(result.winner.row.label))
    if result.model_uri:
        client.set_tag(parent_run_id, "final_model", result.model_uri)


def final_frame(result: FinalResult) -> pd.DataFrame:
    """``final.csv``: one row per primary test metric, then the published single runs beside them."""
    rows = [
        {
            "source": "final",
            **r,
            "winner": result.winner.row.label,
            "baseline": result.baseline.row.label,
            "seeds": list_text(result.seeds),
        }
        for r in result.rows
    ]
    for source, values in get_study(result.study).published.items():
        rows += [
            {"source": f"published: {source}", "metric": r["metric"], "winner_mean": values[r["metric"]]}
            for r in result.rows
            if r["metric"] in values
        ]
    rows += [
        {"source": "majority (constant predictor)", "metric": k, "winner_mean": v} for k, v in result.majority.items()
    ]
    return pd.DataFrame(rows)


def main() -> int:
    p = ArgumentParser(
        prog="python -m search.finalize", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("study", help="a built-in study or a .toml study file")
    p.add_argument("--name", help="the study invocation (Tune experiment name); default: the latest")
    p.add_argument("--seeds", type=int, default=FinalizeConfig.seeds, help="seeds 1..K per contender")
    p.add_argument("--tracking-uri", default=FinalizeConfig.tracking_uri)
    p.add_argument("--out", default=FinalizeConfig.out_dir, help="directory of the report")
    p.add_argument("--cpus-per-trial", type=float, default=FinalizeConfig.cpus_per_trial)
    p.add_argument("--gpus-per-trial", type=float, default=FinalizeConfig.gpus_per_trial)
    p.add_argument("--max-concurrent", type=int, default=FinalizeConfig.max_concurrent)
    p.add_argument("--address", help="Ray cluster address (default: a private local Ray)")
    p.add_argument("--no-register", action="store_true", help="do not log or register the model")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    setup_logging(args.verbose)
    from search.report import build_report
    from search.storage import absolute_sqlite
    from search.tracking import check_tracking_uri

    cfg = FinalizeConfig(
        get_study(args.study).name,
        args.name,
        args.seeds,
        absolute_sqlite(args.tracking_uri),
        args.out,
        args.cpus_per_trial,
        args.gpus_per_trial,
        args.max_concurrent,
        args.address,
        not args.no_register,
    )
    check_tracking_uri(cfg.tracking_uri)
    result = finalize(cfg)
    build_report(cfg.study, cfg.tracking_uri, run_name=result.name, out_dir=cfg.out_dir, final=result)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, DataError, ConnectionError, OSError))
