"""``python -m search.run STUDY``: search a study's multitask schemas on a Ray cluster.

Example: ``python -m search.run absa --preset smoke`` (local Ray, SQLite MLflow
store ``./mlflow.db``, Optuna store ``./optuna.db``, packaged MiniLM encoder), or
``python -m search.run my-study.toml`` for a study file (README, "Study files");
``--list`` shows the built-in studies.
"""

from __future__ import annotations

import argparse
import logging
import os

from search.infra.quiet import quiet_console
from search.simulation.truth import builtin_truths, resolve_truth
from search.study.config import SEARCHES, SearchConfig
from spaces import builtin_studies, get_study
from spaces.study_file import listing
from trainables.cli import ArgumentParser, fail, run_main, setup_logging
from trainables.config import PRECISIONS, ConfigError
from trainables.tasks import DataError
from trainables.tasks.base import PROTOCOLS

logger = logging.getLogger("search.run")


EX_TEMPFAIL = 75  # sysexits.h: a temporary failure, try again later (the tracking server stayed down)


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="python -m search.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("study", nargs="?", help=f"a built-in study ({', '.join(builtin_studies())}) or a .toml study file")
    p.add_argument("--list", action="store_true", help="print the built-in studies and exit")
    add_search_space(p)
    add_stores(p)
    add_run_options(p)
    return p


def add_search_space(p: ArgumentParser) -> None:
    """What is searched and how: preset, trials, seeds, objective, searcher, ASHA, ranges."""
    p.add_argument(
        "--preset",
        help="smoke (2 CPU cores, minutes) or full (thesis scale, GPUs); "
        "default: full where the cluster has GPUs, else smoke",
    )
    p.add_argument("--trials", type=int, help="trials to train (default: the preset's)")
    p.add_argument("--seeds", type=int, help="seeds per trial, the same for every config (default: the preset's)")
    p.add_argument("--max-concurrent", type=int, default=SearchConfig.max_concurrent, help="trials running at once")
    p.add_argument(
        "--gpus-per-trial",
        type=float,
        default=SearchConfig.gpus_per_trial,
        help="GPUs per trial; fractions share a GPU",
    )
    p.add_argument("--cpus-per-trial", type=float, default=SearchConfig.cpus_per_trial)
    p.add_argument("--metric", help="objective: a metric of the primary task's dev split (default: the study's)")
    p.add_argument("--mode", choices=("max", "min"))
    p.add_argument(
        "--search",
        default=SearchConfig.search,
        choices=SEARCHES,
        help="strategy (docs/search-strategies.md); default: every cell first, then multivariate TPE, with ASHA",
    )
    p.add_argument("--model", help="encoder: AutoModel name or local path (default: the preset's)")
    p.add_argument("--epochs", type=int, help="epochs per trial (ASHA's max_t)")
    p.add_argument("--grace-period", type=int, help="ASHA: epochs before a trial can be stopped")
    p.add_argument("--reduction-factor", type=int, help="ASHA reduction factor")
    p.add_argument(
        "--first-rung-seeds",
        type=int,
        metavar="N",
        help="seeds as a fidelity: trials train N of the K seeds up to ASHA's first rung, times the reduction "
        "factor per rung passed, all K past the last (the baseline always all K; default: all K throughout)",
    )
    p.add_argument("--auxiliary", help="comma-separated auxiliary candidates (default: the study's)")
    for name, what in (
        ("exponent", "power exponent a"),
        ("anneal", "annealing constant c"),
        ("lr", "learning rate (log scale)"),
        ("warmup", "warm-up fraction"),
    ):
        p.add_argument(f"--{name}-range", type=parse_range, metavar="LOW,HIGH", help=f"search range of the {what}")


def add_stores(p: ArgumentParser) -> None:
    """Where a study keeps things: MLflow, Tune's storage, Optuna; resuming and joining a cluster."""
    p.add_argument("--tracking-uri", default=SearchConfig.tracking_uri, help="MLflow tracking URI")
    p.add_argument(
        "--tracking-grace",
        type=float,
        default=SearchConfig.tracking_grace,
        metavar="SECONDS",
        help="how long the tracking server may be unreachable (training goes on, records wait on disk) "
        "before the study stops, resumable with --resume (default: %(default)g)",
    )
    p.add_argument("--storage", default=SearchConfig.storage, help="Tune storage: shared path or s3://, gs:// URI")
    p.add_argument("--optuna-storage", default=SearchConfig.optuna_storage, help="Optuna RDB storage URL")
    p.add_argument("--name", help="experiment name (default: STUDY-PRESET-TIMESTAMP; --resume: the latest)")
    p.add_argument("--resume", action="store_true", help="restore an interrupted study")
    p.add_argument("--address", help="Ray cluster address (auto on a cluster; default: a local Ray)")
    p.add_argument(
        "--max-failures",
        type=int,
        default=SearchConfig.max_failures,
        help="retries of a failed trial from its checkpoint",
    )


def add_run_options(p: ArgumentParser) -> None:
    """Data, precision, the end of the study (finalize, report) and verbosity."""
    p.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    p.add_argument("--protocol", default=SearchConfig.protocol, choices=PROTOCOLS)
    p.add_argument("--precision", choices=PRECISIONS, help="auto, fp32, bf16 or fp16 (default: the preset's, auto)")
    p.add_argument("--search-seed", type=int, default=SearchConfig.search_seed, help="seed of the Optuna sampler")
    p.add_argument("--no-report", action="store_true", help="skip the result table at the end")
    p.add_argument(
        "--no-finalize",
        action="store_true",
        help="skip the final test, best multitask vs best single-task trial (search.finalize runs it later)",
    )
    p.add_argument("--final-seeds", type=int, help="seeds of the final comparison (default: the preset's)")
    p.add_argument("--verbose", action="store_true", help="debug logging, and the notices of Ray, Tune, Optuna, MLflow")
    p.add_argument(
        "--simulate",
        metavar="TRUTH",
        help="simulated trials scored by a truth file (.toml, or a built-in: "
        f"{', '.join(builtin_truths())}): no torch, no data; the rest of the stack is real "
        "(default preset: full; README, 'Simulated studies')",
    )


def quick_tracking_client() -> None:
    """MLflow's REST client retries an unreachable server for minutes per call; the study's
    spool retries on its own (search.tracking.spool), so each call gives up in seconds instead."""
    for key, value in (
        ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2"),
        ("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1"),
        ("MLFLOW_HTTP_REQUEST_TIMEOUT", "30"),
    ):
        os.environ.setdefault(key, value)


def parse_range(text: str) -> tuple[float, float]:
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LOW,HIGH (two numbers)") from None
    return low, high


def config_from_args(args: argparse.Namespace) -> SearchConfig:
    auxiliary = None if args.auxiliary is None else tuple(t.strip() for t in args.auxiliary.split(",") if t.strip())
    return SearchConfig(
        study=get_study(args.study).name,
        preset=args.preset,
        trials=args.trials,
        seeds=args.seeds,
        max_concurrent=args.max_concurrent,
        gpus_per_trial=args.gpus_per_trial,
        cpus_per_trial=args.cpus_per_trial,
        metric=args.metric,
        mode=args.mode,
        tracking_uri=args.tracking_uri,
        storage=args.storage,
        optuna_storage=args.optuna_storage,
        resume=args.resume,
        name=args.name,
        address=args.address,
        search=args.search,
        model=args.model,
        epochs=args.epochs,
        grace_period=args.grace_period,
        reduction_factor=args.reduction_factor,
        max_failures=args.max_failures,
        auxiliary=auxiliary,
        data_dir=args.data_dir,
        protocol=args.protocol,
        search_seed=args.search_seed,
        report=not args.no_report,
        finalize=not args.no_finalize,
        final_seeds=args.final_seeds,
        exponent_range=args.exponent_range,
        anneal_range=args.anneal_range,
        lr_range=args.lr_range,
        warmup_range=args.warmup_range,
        precision=args.precision,
        tracking_grace=args.tracking_grace,
        simulate=resolve_truth(args.simulate) if args.simulate else None,
        first_rung_seeds=args.first_rung_seeds,
    )


def main() -> int:
    args = parser().parse_args()
    if args.list:
        print(listing(builtin_studies()))
        return 0
    if args.study is None:
        raise ConfigError("expected a STUDY: a built-in study or a .toml study file (--list shows the built-ins)")
    cfg = config_from_args(args)  # the study (file), its tasks and ranges checked: before Ray is even imported
    setup_logging(args.verbose)
    quiet_console(args.verbose)
    quick_tracking_client()
    from search.study.ending import TrackingUnavailable
    from search.study.runner import run

    try:
        study = run(cfg)
    except TrackingUnavailable as exc:
        fail(str(exc), EX_TEMPFAIL)
    logger.info("Tune results: %s", study["path"])
    if study["interrupted"]:
        return 130
    final = None
    if cfg.finalize:
        from search.answer.config import FinalizeConfig
        from search.answer.final import finalize

        seeds = cfg.final_seeds or get_study(cfg.study).preset(study["preset"]).final_seeds
        try:
            final = finalize(
                FinalizeConfig(
                    cfg.study,
                    study["name"],
                    seeds,
                    study["tracking_uri"],
                    cpus_per_trial=cfg.cpus_per_trial,
                    gpus_per_trial=cfg.gpus_per_trial,
                    max_concurrent=cfg.max_concurrent,
                    address=cfg.address,
                )
            )
        except ConfigError as exc:  # e.g. ASHA stopped every multitask (or single-task) trial: the search itself stands
            logger.warning("no final comparison: %s", exc)
    if cfg.report:
        from search.answer.report import build_report

        paths = build_report(cfg.study, study["tracking_uri"], run_name=study["name"], final=final)
        logger.info("report: %s", paths["markdown"])
    elif final is not None:
        print(final.markdown())
    logger.info("compare trials: mlflow ui --backend-store-uri %s  (experiment %s)", study["tracking_uri"], cfg.study)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, DataError, ConnectionError, OSError))
