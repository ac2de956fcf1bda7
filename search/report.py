"""``python -m search.report STUDY``: the thesis-style result table of a study, from MLflow.

Top configs by objective (mean ± std over seeds), the single-task baseline,
absolute and relative change against it, test scores of the primary task and
published results; saved as CSV and Markdown plus PNG plots, and logged to the
study's MLflow parent run.
"""

from __future__ import annotations

import logging

from search.answer.report import build_report
from search.study.config import SearchConfig
from spaces import get_study
from trainables.cli import ArgumentParser, run_main, setup_logging
from trainables.config import ConfigError

logger = logging.getLogger("search.report")


def main() -> int:
    p = ArgumentParser(prog="python -m search.report", description=__doc__)
    p.add_argument("study", help="a built-in study or a .toml study file")
    p.add_argument(
        "--tracking-uri",
        default=SearchConfig.tracking_uri,
        help="the MLflow store the study logged to (default: %(default)s)",
    )
    p.add_argument("--name", help="the study invocation (Tune experiment name); default: the latest")
    p.add_argument("--out", default="results", help="directory for report.csv, report.md and plots")
    p.add_argument(
        "--top", type=int, default=10, help="trials shown in the ranking and its plots (default: %(default)s)"
    )
    args = p.parse_args()
    setup_logging()
    from search.tracking.runs import check_tracking_uri

    check_tracking_uri(args.tracking_uri)
    # here, not at the top: the trial kinds import Ray, which importing the report does not (tests/search/
    # test_layout.py); a report run needs its study's kind only for the note that heads it
    from search.simulation.kind import trial_kind

    build_report(get_study(args.study).name, args.tracking_uri, trial_kind, args.name, args.out, args.top)
    return 0


if __name__ == "__main__":
    run_main(main, (ConfigError, ConnectionError, OSError))
