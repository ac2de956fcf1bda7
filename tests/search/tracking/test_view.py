"""What a person sees in the MLflow UI after a study: a finished tiny study, ``mlflow server``
on its store, and the pages rendered by headless Chromium (the UI is a JavaScript app:
only a browser shows what its tables hold)."""

import json
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import mlflow
import pytest
from conftest import mlflow_server, study_env, study_stores

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="no headless Chromium (chromium on PATH): the UI check needs a browser"
    ),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_bert):
    tmp = tmp_path_factory.mktemp("ui-study")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "search.run",
            "absa",
            "--model",
            str(tiny_bert),
            "--trials",
            "2",
            "--epochs",
            "1",
            "--seeds",
            "2",
            "--no-report",
            "--no-finalize",
            "--name",
            "ui-study",
            *study_stores(tmp),
        ],
        cwd=tmp,
        env=study_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return tmp, r


@pytest.fixture(scope="module")
def server(study):
    tmp, _ = study
    with mlflow_server(tmp, f"sqlite:///{tmp}/mlflow.db") as url:
        yield url + "/"


def render(url: str, tmp: Path) -> str:
    """The page's DOM once its scripts have run, as headless Chromium sees it."""
    profile = tmp / f"chromium-{time.time_ns()}"
    r = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1920,1200",
            "--virtual-time-budget=15000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def records(study):
    tmp, _ = study
    client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    experiment = client.get_experiment_by_name("absa")
    trials = client.search_runs([experiment.experiment_id], "tags.kind = 'trial'")
    return experiment, trials


def test_console_names_trials_and_keeps_library_notices_out(study):
    _, r = study
    out = r.stdout + r.stderr
    assert "[t00] completed  objective=" in r.stdout and "t00 baseline" in r.stdout
    # the status line, not Tune's table with its "Current best trial" of any epoch
    assert "best completed: t0" in r.stdout and "Current best trial" not in out, r.stdout[-3000:]
    for chatter in (
        "Started a local Ray instance",
        "Checkpoint successfully created",
        "snapshotting",
        "A new study created",
        "Creating initial MLflow database tables",
        "tensorboardx",
        "INFO trainables.loop",  # the workers' step lines: the study's own lines say where training stands
    ):
        assert chatter not in out, chatter


def test_trials_view_shows_objective_schema_and_names(study, server):
    tmp, _ = study
    experiment, trials = records(study)
    from search.tracking.view import trial_view_url

    page = render(server + trial_view_url(experiment.experiment_id, "ui-study"), tmp)
    assert "Detect Issues" not in page and "Runs" in page  # the training runs page, not GenAI's overview
    assert "shared view" in page  # the study's view was found and applied
    for text in ("objective", "objective_std", "schema", "status", "t00 baseline"):
        assert text in page, text
    for trial in trials:
        assert trial.info.run_name in page  # whole, not cut to ~14 characters
    # best first: the objective column sorted, high to low (the study maximises)
    order = sorted(trials, key=lambda t: -t.data.metrics["objective"])
    if order[0].data.metrics["objective"] != order[-1].data.metrics["objective"]:
        assert page.index(order[0].info.run_name) < page.index(order[-1].info.run_name)


def test_experiment_page_opens_on_runs_for_model_training(study, server):
    tmp, _ = study
    experiment, trials = records(study)
    page = render(f"{server}#/experiments/{experiment.experiment_id}?workflowType=machine_learning", tmp)
    assert "Detect Issues" not in page and "Runs" in page and "ui-study" in page  # the parent run
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"


def test_compare_runs_shows_objective_and_schema(study, server):
    tmp, _ = study
    experiment, trials = records(study)
    query = urllib.parse.urlencode(
        {
            "runs": json.dumps([t.info.run_id for t in trials]),
            "experiments": json.dumps([experiment.experiment_id]),
            "workflowType": "machine_learning",
        }
    )
    page = render(f"{server}#/compare-runs?{query}", tmp)
    assert f"Comparing {len(trials)} Runs" in page
    for text in ("objective", "schema", "aux", *(t.info.run_name for t in trials)):
        assert text in page, text
    assert "epoch/mean" not in page and "epoch/seed1" not in page
