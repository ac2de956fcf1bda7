"""python -m search.finalize STUDY: a study's answer, on fresh seeds.

Takes, by the dev objective (seed mean), the best completed trial with an auxiliary task (the best
multitask trial), the best completed single-task trial and the multitask trial without its auxiliary
tasks (its ablation), trains them to full epochs on K fresh seeds the search never used (numbered
after its own), and answers two claims: (a) is the multitask trial better than the best plain
fine-tuning the search found (tuned, or the untuned baseline where the search tried no other
single-task config); (b) do its auxiliary tasks help it. Per primary test metric: the means ± sample
std and the paired difference with its interval; the study's metric gets one verdict per claim, the
others are exploratory. Run it again with more --seeds to add seeds: each run is one look of a
group-sequential test; --until-decided takes the looks an undecided verdict asks for. Of the two
sides, the one with the better dev score over the K seeds is logged as an MLflow model and
registered as <study>-best. Nothing here selects on test.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace

from search.answer.config import FINAL_RESOURCES, FinalizeConfig
from search.answer.final import finalize_study
from search.answer.report import build_report
from search.answer.stats import margin_arg
from search.infra.storage import absolute_sqlite
from search.simulation.kind import trial_kind
from search.tracking.runs import check_tracking_uri
from spaces import get_study
from trainables.cli import ArgumentParser, run_main, setup_logging
from trainables.config import ConfigError
from trainables.tasks import DataError

logger = logging.getLogger("search.finalize")


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="python -m search.finalize", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("study", help="a built-in study or a .toml study file")
    p.add_argument("--name", help="the study invocation (Tune experiment name); default: the latest")
    p.add_argument(
        "--seeds",
        type=int,
        default=FinalizeConfig.seeds,
        help="K fresh seeds per side (at least 3), numbered after the search's (default: %(default)s)",
    )
    p.add_argument(
        "--max-seeds",
        type=int,
        help="the most seeds this study may ever add (fixed by its first finalize; default 2K, at least 10): "
        "each look spends part of the error of a 'better'",
    )
    p.add_argument(
        "--margin",
        type=margin_arg,
        help="the smallest gain worth having, in the objective's units (0.01: 1 pp of accuracy): 'no significant "
        "difference' only where the interval rules it out, else 'undecided' (default: each look's detectable gain)",
    )
    p.add_argument(
        "--until-decided",
        action="store_true",
        help="while the verdict is 'undecided', look again at the seeds it says would decide it, up to --max-seeds",
    )
    p.add_argument(
        "--tracking-uri",
        default=FinalizeConfig.tracking_uri,
        help="the MLflow store the study logged to (default: %(default)s)",
    )
    p.add_argument("--out", default=FinalizeConfig.out_dir, help="directory of the report (default: %(default)s)")
    p.add_argument("--cpus-per-trial", type=float, default=FINAL_RESOURCES.cpus_per_trial, help="default: %(default)s")
    p.add_argument("--gpus-per-trial", type=float, default=FINAL_RESOURCES.gpus_per_trial, help="default: %(default)s")
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=FINAL_RESOURCES.max_concurrent,
        help="final runs at once (default: %(default)s)",
    )
    p.add_argument("--address", help="Ray cluster address (default: a private local Ray)")
    p.add_argument("--no-register", action="store_true", help="do not log or register the model")
    p.add_argument("--verbose", action="store_true", help="debug logging")
    return p


def main() -> int:
    args = parser().parse_args()
    setup_logging(args.verbose)
    cfg = FinalizeConfig(
        get_study(args.study).name,
        args.name,
        args.seeds,
        absolute_sqlite(args.tracking_uri),
        args.out,
        replace(
            FINAL_RESOURCES,
            cpus_per_trial=args.cpus_per_trial,
            gpus_per_trial=args.gpus_per_trial,
            max_concurrent=args.max_concurrent,
            address=args.address,
        ),
        not args.no_register,
        args.max_seeds,
        margin=args.margin,
        until_decided=args.until_decided,
    )
    check_tracking_uri(cfg.tracking_uri)
    result = finalize_study(cfg, trial_kind)
    build_report(cfg.study, cfg.tracking_uri, trial_kind, run_name=result.name, out_dir=cfg.out_dir, final=result)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, DataError, ConnectionError, OSError))
