"""How the MLflow UI (checked against 3.17.2) opens a study: model-training pages, and a view
of one invocation's trials, best first, with the columns that tell them apart.

Both rest on UI conventions rather than a documented API: the experiment kind tag its
kind selector writes, and the shared view state its "share" button writes (an
experiment tag the runs page loads from ``?viewStateShareKey=KEY``).
"""

from __future__ import annotations

import json

# 3.17's pages follow the ``workflowType`` URL parameter (else the browser's last choice, GenAI by
# default); the tag is what its kind selector writes, and what older UIs read
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


SHARED_VIEW_PREFIX = "mlflow.sharedViewState."


def training_experiment(c, name: str, artifact_root: str | None = None) -> str:
    """The study's experiment (created on first use, its artifacts under ``artifact_root``, else where the
    tracking store says), marked as model training, not GenAI."""
    found = c.get_experiment_by_name(name)
    experiment = found.experiment_id if found else c.create_experiment(name, artifact_location=artifact_root)
    if not found or found.tags.get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
        c.set_experiment_tag(experiment, *EXPERIMENT_KIND)
    return experiment


FINAL_VIEW_SUFFIX = "-final"  # the final runs' view key: the invocation's name and this


def trial_view_url(experiment: str, name: str) -> str:
    """The UI address (after ``http://HOST:PORT/``) of an invocation's trials, best first."""
    return f"#/experiments/{experiment}/runs?workflowType=machine_learning&viewStateShareKey={name}"


def final_view_url(experiment: str, name: str) -> str:
    """The UI address of an invocation's final runs (finalize's fresh seeds), by contender."""
    return trial_view_url(experiment, name + FINAL_VIEW_SUFFIX)


def share_trial_view(c, experiment: str, name: str, parent_run_id: str, mode: str) -> None:
    """This invocation's trials sorted by the objective, with the columns that tell them apart; and a second
    view of its final runs (empty until finalize trains them)."""
    columns = {  # column -> width in pixels (the UI's default cuts run names at ~14 characters)
        "attributes.`Run Name`": 240,
        "metrics.`objective`": 100,
        "metrics.`objective_std`": 110,
        "tags.`status`": 90,
        "params.`schema`": 80,
        "params.`aux`": 130,
        "params.`exponent`": 80,
        "params.`anneal_c`": 80,
        "params.`lr`": 80,
        "params.`warmup`": 70,
        "tags.`epochs_trained`": 120,
    }
    view = {
        # the search's trials only: finalize's single-seed runs (kind "final") would rank among them
        "searchFilter": f"tags.`mlflow.parentRunId` = '{parent_run_id}' and tags.kind = 'trial'",
        "orderByKey": "metrics.`objective`",
        "orderByAsc": mode == "min",
        "selectedColumns": [k for k in columns if not k.startswith("attributes.")],
        "columnOrder": list(columns),
        "columnWidths": columns,
        "runsExpanded": {parent_run_id: True},
    }
    c.set_experiment_tag(experiment, SHARED_VIEW_PREFIX + name, json.dumps(view))
    # the final runs apart: they score test and fresh seeds, so a rank among the trials would mislead; by name,
    # "final multitask ...", "final opponent ...", each with the seeds it trained
    final_columns = {k: w for k, w in columns.items() if k != "tags.`epochs_trained`"}
    final_columns["attributes.`Run Name`"] = 360
    final = view | {
        "searchFilter": f"tags.`mlflow.parentRunId` = '{parent_run_id}' and tags.kind = 'final'",
        "orderByKey": "tags.`mlflow.runName`",
        "orderByAsc": True,
        "selectedColumns": [k for k in final_columns if not k.startswith("attributes.")],
        "columnOrder": list(final_columns),
        "columnWidths": final_columns,
    }
    c.set_experiment_tag(experiment, SHARED_VIEW_PREFIX + name + FINAL_VIEW_SUFFIX, json.dumps(final))
