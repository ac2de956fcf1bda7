"""python -m search.run STUDY: search a study's multitask schemas on a Ray cluster.

Example: python -m search.run absa --preset smoke (a local Ray, the MLflow store ./mlflow.db,
the Optuna store ./optuna.db, the packaged MiniLM encoder), or python -m search.run my-study.toml
for a study file (docs/study-files.md); --list shows the built-in studies.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from search.answer.stats import margin_arg
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
    add_budget(p.add_argument_group("budget and search", "how much is trained, and how trials are chosen"))
    add_space(p.add_argument_group("space", "what is searched"))
    add_resources(p.add_argument_group("resources", "where and how trials run"))
    add_stores(p.add_argument_group("stores and resuming", "where a study keeps things; continuing one"))
    add_answer(p.add_argument_group("the answer", "after the search: final comparison and report"))
    add_run_options(p.add_argument_group("data and output"))
    return p


def add_budget(g: argparse._ArgumentGroup) -> None:
    """How much is trained (preset, trials, seeds, epochs), the objective, the searcher and ASHA."""
    g.add_argument(
        "--preset",
        help="smoke (2 CPU cores, minutes) or full (thesis scale, GPUs) "
        "(default: full where the cluster has GPUs, else smoke; a simulated study: full)",
    )
    g.add_argument(
        "--trials",
        type=int,
        metavar="N",
        help="trials in all; with --resume, extends a study to N (default: the preset's; cells-halving: its cells)",
    )
    g.add_argument(
        "--seeds",
        type=int,
        metavar="K",
        help="seeds per trial, the same for every config (default: the preset's, else the strategy's: 2 under "
        "cells-halving, else 3)",
    )
    g.add_argument(
        "--first-rung-seeds",
        type=int,
        metavar="N",
        help="seeds as a fidelity: trials train N of the K seeds up to ASHA's first rung, times the reduction "
        "factor per rung passed, all K past the last; the baseline all K, or N under cells-halving (finalize "
        "compares it on fresh seeds) (default: the preset's, else the strategy's: 1 under cells-halving, else all K)",
    )
    g.add_argument("--metric", help="objective: a metric of the primary task's dev split (default: the study's)")
    g.add_argument("--mode", choices=("max", "min"), help="(default: the study's)")
    g.add_argument(
        "--search",
        default=SearchConfig.search,
        choices=SEARCHES,
        help=search_help(),
    )
    g.add_argument(
        "--search-seed", type=int, default=SearchConfig.search_seed, help="seed of the sampler (default: %(default)s)"
    )
    g.add_argument("--epochs", type=int, help="epochs per trial, ASHA's max_t (default: preset's)")
    g.add_argument("--grace-period", type=int, help="ASHA: epochs before a trial can be stopped (default: preset's)")
    g.add_argument(
        "--screen-fraction",
        type=float,
        metavar="F",
        help="a first rung after F of the first epoch (0 < F < 1): every search trial evaluates dev and checkpoints "
        "there, and the halving rungs compare every cell at F of an epoch's compute; 0: none (default: the "
        "strategy's: under cells-halving the end of the lr warm-up, at least 0.25: 0.4 at the full preset; else none)",
    )
    g.add_argument(
        "--reduction-factor",
        type=int,
        help="ASHA reduction factor (default: the preset's, else the strategy's: 4 under cells-halving, else 2)",
    )
    add_halving(g)


def search_help() -> str:
    """--search's help, its numbers read from the default strategy."""
    from search.study.strategy import FALLBACK, SCREEN, STRATEGIES

    own = STRATEGIES[SCREEN]
    return (
        f"strategy (docs/search-strategies.md). default: {SCREEN} (every auxiliary set x schema cell of the "
        "thesis grid, ranked once its first epoch's warm-up is over and at every epoch, where the top "
        f"1/{own.reduction_factor} of each of {own.strata} strata of equal exposure to the primary goes on "
        f"({own.hedge} cells drawn at random go on past every rung but the last), one seed until the last rung; "
        "without --trials the study is its cells) where the trials hold every cell, else "
        f"{FALLBACK} (the baseline, then each auxiliary task alone at the schema that trains the primary most, "
        "then TPE); grid-k2 (every cell "
        "on 2 seeds under ASHA) where --max-concurrent holds every cell and there is no --trials; also the grid, "
        "random, ASHA variants (default: %(default)s)"
    )


def add_halving(g: argparse._ArgumentGroup) -> None:
    """Cohort halving's exposure strata and hedge (search.study.cohort_rule); the defaults named from the strategy."""
    from search.study.strategy import SCREEN, STRATEGIES

    own = STRATEGIES[SCREEN]
    g.add_argument(
        "--strata",
        type=int,
        metavar="N",
        help="cohort halving: rank a rung's cells within N strata of equal exposure to the primary (passes over its "
        f"training rows), so a diluted cell meets cells as diluted as it (default: the strategy's: {own.strata} under "
        f"{SCREEN}; 1: one ranking)",
    )
    g.add_argument(
        "--hedge",
        type=int,
        metavar="N",
        help="cohort halving: N cells, drawn before any result, go on past every rung below the last, where they "
        "meet the rest: a late bloomer no early score distinguishes reaches the end in that share of studies "
        f"(default: the strategy's: {own.hedge} under {SCREEN}, else 0)",
    )


def add_space(g: argparse._ArgumentGroup) -> None:
    """The study's space, narrowed or moved: candidates, ranges, encoder."""
    g.add_argument("--auxiliary", metavar="TASKS", help="comma-separated auxiliary candidates (default: the study's)")
    for name, what in (
        ("exponent", "power exponent a"),
        ("anneal", "annealing constant c"),
        ("lr", "learning rate (log scale)"),
        ("warmup", "warm-up fraction"),
    ):
        g.add_argument(
            f"--{name}-range",
            type=parse_range,
            metavar="LOW,HIGH",
            help=f"search range of the {what} (default: the study's)",
        )
    g.add_argument("--model", help="encoder: AutoModel name or local path (default: preset's)")
    g.add_argument(
        "--train-rows",
        type=int,
        metavar="N",
        help="at most N training rows per task (default: the preset's; the smoke preset on this machine's CPU: "
        "fewer where the measured pace says the run would not fit 15 minutes)",
    )
    g.add_argument(
        "--eval-rows",
        type=int,
        metavar="N",
        help="at most N dev and N test rows of the primary task (default: the preset's; sized with --train-rows)",
    )


def add_resources(g: argparse._ArgumentGroup) -> None:
    """Ray: the cluster, each trial's request, concurrency, retries, precision."""
    g.add_argument("--address", help="Ray cluster address, auto on a cluster (default: a private local Ray)")
    g.add_argument(
        "--max-concurrent",
        type=int,
        metavar="M",
        default=SearchConfig.max_concurrent,
        help="trials running at once (default: %(default)s)",
    )
    g.add_argument(
        "--gpus-per-trial",
        type=float,
        metavar="F",
        default=SearchConfig.gpus_per_trial,
        help="GPUs per trial; fractions share a GPU (default: 1 where the cluster has GPUs, else 0)",
    )
    g.add_argument(
        "--cpus-per-trial",
        type=float,
        metavar="F",
        default=SearchConfig.cpus_per_trial,
        help="CPUs per trial (default: %(default)g)",
    )
    g.add_argument(
        "--max-failures",
        type=int,
        default=SearchConfig.max_failures,
        help="retries of a crashed trial from its checkpoint (default: %(default)s)",
    )
    g.add_argument(
        "--precision", choices=PRECISIONS, help="training precision (default: preset's, auto: bf16/fp16 on CUDA)"
    )


def add_stores(g: argparse._ArgumentGroup) -> None:
    """Where a study keeps things: MLflow, Tune's storage, Optuna; its name; resuming."""
    g.add_argument(
        "--tracking-uri",
        default=SearchConfig.tracking_uri,
        metavar="URI",
        help="MLflow tracking URI (default: %(default)s)",
    )
    g.add_argument(
        "--artifact-location",
        metavar="PATH_OR_URI",
        help="where a new MLflow experiment keeps its artifacts (default: an mlruns folder beside a SQLite "
        "tracking store, else the tracking server's)",
    )
    g.add_argument(
        "--tracking-grace",
        type=float,
        default=SearchConfig.tracking_grace,
        metavar="SECONDS",
        help="how long the tracking server may be unreachable (training goes on, records wait on disk) "
        "before the study stops, resumable with --resume (default: %(default)g)",
    )
    g.add_argument(
        "--storage",
        default=SearchConfig.storage,
        metavar="PATH_OR_URI",
        help="Tune storage: a shared path or an s3://, gs:// URI (default: ./ray_results)",
    )
    g.add_argument(
        "--optuna-storage",
        default=SearchConfig.optuna_storage,
        metavar="URL",
        help="Optuna RDB storage URL (default: optuna.db in a local --storage, else ./optuna.db)",
    )
    g.add_argument("--name", help="experiment name (default: STUDY-PRESET-TIMESTAMP; with --resume: the latest)")
    g.add_argument("--resume", action="store_true", help="continue the study --name names (or the latest)")


def add_answer(g: argparse._ArgumentGroup) -> None:
    """The end of the study: finalize and the report."""
    g.add_argument(
        "--no-finalize",
        action="store_true",
        help="skip the final test, best multitask vs best single-task trial (search.finalize runs it later)",
    )
    g.add_argument("--final-seeds", type=int, metavar="K", help="seeds of the final comparison (default: preset's)")
    g.add_argument(
        "--margin",
        type=margin_arg,
        help="the smallest gain worth having (0.01: 1 pp): 'no significant difference' only where the final "
        "interval rules it out, else 'undecided' (default: the look's detectable gain)",
    )
    g.add_argument(
        "--until-decided",
        action="store_true",
        help="while the final verdict is 'undecided', add the seeds it says would decide it (search.finalize)",
    )
    g.add_argument("--no-report", action="store_true", help="skip the report (results/STUDY/RUN/) at the end")


def add_run_options(g: argparse._ArgumentGroup) -> None:
    """Data, simulation and verbosity."""
    g.add_argument("--data-dir", help="data root (default: $MTL_DATA_DIR, else ./data)")
    g.add_argument(
        "--protocol",
        default=SearchConfig.protocol,
        choices=PROTOCOLS,
        help="holdout: dev carved from train; thesis: select on test (default: %(default)s)",
    )
    g.add_argument(
        "--simulate",
        metavar="TRUTH",
        help="simulated trials scored by a truth file (.toml, a .parquet real-curve table replayed, or a built-in: "
        f"{', '.join(builtin_truths())}): no torch, no data; the rest of the stack is real "
        "(docs/simulated-studies.md; default: none, real training)",
    )
    g.add_argument("--verbose", action="store_true", help="debug logging, and the notices of Ray, Tune, Optuna, MLflow")


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
        study_file=None if args.study in builtin_studies() else str(Path(args.study).resolve()),
        preset=args.preset,
        trials=args.trials,
        seeds=args.seeds,
        max_concurrent=args.max_concurrent,
        gpus_per_trial=args.gpus_per_trial,
        cpus_per_trial=args.cpus_per_trial,
        metric=args.metric,
        mode=args.mode,
        tracking_uri=args.tracking_uri,
        artifact_location=args.artifact_location,
        storage=args.storage,
        optuna_storage=args.optuna_storage,
        resume=args.resume,
        name=args.name,
        address=args.address,
        search=args.search,
        model=args.model,
        epochs=args.epochs,
        train_rows=args.train_rows,
        eval_rows=args.eval_rows,
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
        screen_fraction=args.screen_fraction,
        strata=args.strata,
        hedge=args.hedge,
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
    # here, not at the top: they import Ray, MLflow and Optuna, which --help, --list and a flag error need not
    # wait for (importing search.run takes 0.3 s, with these 2.7 s: 2026-11-25, 2 loaded cores, /usr/bin/time)
    from search.answer.config import FinalizeConfig
    from search.answer.final import finalize_study
    from search.answer.report import build_report
    from search.answer.summary import gather
    from search.simulation.kind import trial_kind
    from search.study.ending import TrackingUnavailable
    from search.study.runner import run

    try:
        study = run(cfg, trial_kind)
    except TrackingUnavailable as exc:
        fail(str(exc), EX_TEMPFAIL)
    plan = study.plan
    logger.info("Tune results: %s", study.path)
    if study.interrupted:
        return 130
    final, why = None, "--no-finalize"
    if plan.finalize:
        try:
            final_cfg = FinalizeConfig(
                plan.study.name,
                study.name,
                plan.final_seeds,
                plan.stores.tracking_uri,
                resources=plan.resources,
                expected_s=study.final_expected_s(),
                margin=args.margin,
                until_decided=args.until_decided,
            )
            final = finalize_study(final_cfg, trial_kind, kind=plan.kind)
        except ConfigError as exc:  # e.g. ASHA stopped every multitask (or single-task) trial: the search itself stands
            logger.warning("no final comparison: %s", exc)
            why = str(exc)
    report = None
    if plan.report:
        report = build_report(
            plan.study.name, plan.stores.tracking_uri, trial_kind, run_name=study.name, final=final, echo=False
        )
        report = report["markdown"]
    elif final is not None:
        print(final.markdown())
    print("\n" + gather(study, final, report, why), flush=True)  # the last lines: the answer and where it is
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, DataError, ConnectionError, OSError))
