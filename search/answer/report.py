"""``python -m search.report STUDY``: the thesis-style result table of a study, from MLflow.

Top configs by objective (mean ± std over seeds), the single-task baseline,
absolute and relative change against it, test scores of the primary task and
published results; saved as CSV and Markdown plus PNG plots, and logged to the
study's MLflow parent run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from search.answer.plots import objective_curves, plots
from search.answer.ranking import Context, ranking
from search.tracking import records as rec
from search.tracking.records import Invocation
from search.tracking.runs import find_parent, trial_table
from spaces import get_study
from trainables.config import ConfigError, TrainConfig

if TYPE_CHECKING:
    from search.study.kind import Kinds  # the kinds import Ray, which the report does not (test_layout)

logger = logging.getLogger(__name__)


def context_of(client, study: str, parent, kinds: Kinds, final=None) -> Context:
    """The preset's scope as the study's trial kind heads it, the majority floor (parent metrics
    ``majority/dev/...``) and the final table (given, or the one an earlier finalize logged as
    ``report/final.md``)."""
    try:
        invocation = Invocation.from_params(parent.data.params)
        preset = get_study(study).preset(invocation.preset)
        note, preset_lr = kinds(invocation.simulate).study_note(preset.note), preset.lr or TrainConfig.lr
    except ConfigError:
        note, preset_lr = "", None
    majority = rec.majority_of(parent.data.metrics)
    final_markdown = final.markdown() if final is not None else ""
    if not final_markdown and rec.VERDICT_TAG in parent.data.tags:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            try:
                final_markdown = Path(client.download_artifacts(parent.info.run_id, rec.FINAL_REPORT, tmp)).read_text()
            except Exception:  # an older study, or finalize interrupted before writing it
                final_markdown = ""
    return Context(note, majority, final_markdown, preset_lr)


def build_report(
    study: str,
    tracking_uri: str,
    kinds: Kinds,
    run_name: str | None = None,
    out_dir: str = "results",
    top: int = 10,
    final=None,
    echo: bool = True,
) -> dict[str, Path]:
    from search.tracking.runs import client as mlflow_client

    get_study(study)
    client = mlflow_client(tracking_uri)
    experiment, parent = find_parent(client, study, run_name)
    invocation = Invocation.from_params(parent.data.params)
    objective, mode = invocation.objective, invocation.mode
    table = trial_table(client, experiment.experiment_id, parent)
    if not table:
        raise ConfigError(f"study run {parent.info.run_name} has no trials in MLflow yet")
    out = Path(out_dir) / study / parent.info.run_name
    out.mkdir(parents=True, exist_ok=True)
    context = context_of(client, study, parent, kinds, final)
    ranked, markdown = ranking(table, study, objective, mode, top, context)
    seeds = len(invocation.seeds)
    paths = {"csv": out / "report.csv", "markdown": out / "report.md", "trials": out / "trials.csv"}
    study_metric = objective[: -len("/mean")].rpartition("/")[2] if objective.endswith("/mean") else ""
    majority = context.majority.get(study_metric) if "/dev/" in objective else None
    frame = pd.DataFrame([r.columns() for r in table])  # the plots' and trials.csv's table
    # two or three reads a trial: about a minute at 10,000 trials on a local sqlite:/// store
    logger.info("report of %s: %d trials; reading their learning curves from MLflow", parent.info.run_name, len(table))
    figures = plots(frame, out, objective, mode, seeds, majority, curves=objective_curves(client, frame))
    markdown += "\n## Plots\n\n" + "\n".join(f"![{p.stem.replace('_', ' ')}]({p.name})" for p in figures) + "\n"
    ranked.to_csv(paths["csv"], index=False)  # the table of report.md
    frame.drop(columns=["start_time"]).to_csv(paths["trials"], index=False)  # every trial, every metric
    paths["markdown"].write_text(markdown)
    if final is not None:
        from search.answer.comparison import final_frame

        paths["final"] = out / "final.csv"
        final_frame(final).to_csv(paths["final"], index=False)
        paths["final_markdown"] = out / "final.md"
        paths["final_markdown"].write_text(final.markdown())
    for p in figures:
        paths[p.stem] = p
    for p in paths.values():
        client.log_artifact(parent.info.run_id, str(p), artifact_path=rec.REPORT_FOLDER)
    if parent.info.status == "RUNNING":
        client.set_terminated(parent.info.run_id, "FINISHED")
    if echo:
        print(markdown)
    print(f"report written to {out.resolve()}: {', '.join(sorted(p.name for p in paths.values()))}")
    return paths
