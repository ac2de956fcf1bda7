"""Where a study's artifacts go, said in its start line: an experiment keeps the root it was created with."""

import logging

import mlflow

from search.tracking.runs import start_parent_run


def test_the_start_line_says_where_artifacts_go_and_when_the_experiment_keeps_others(tmp_path, caplog):
    uri = f"sqlite:///{tmp_path}/m.db"
    caplog.set_level(logging.INFO, logger="search.tracking.runs")
    start_parent_run(uri, "absa", "absa-1", {}, (tmp_path / "mlruns").as_uri())
    assert f"MLflow artifacts: {(tmp_path / 'mlruns').as_uri()}" in caplog.text
    caplog.clear()
    start_parent_run(uri, "absa", "absa-2", {}, (tmp_path / "elsewhere").as_uri())
    assert f"MLflow artifacts: {(tmp_path / 'mlruns').as_uri()}, where experiment absa was created" in caplog.text
    assert mlflow.MlflowClient(uri).get_experiment_by_name("absa").artifact_location.endswith("/mlruns")


def test_a_sqlite_store_named_alone_keeps_its_artifacts_beside_it_not_in_the_working_folder(tmp_path, monkeypatch):
    """Every caller of the tracking layer (a benchmark, a notebook), not only search.run, which names the root."""
    work, store = tmp_path / "work", tmp_path / "store"
    work.mkdir(), store.mkdir()
    monkeypatch.chdir(work)
    uri = f"sqlite:///{store}/m.db"
    start_parent_run(uri, "absa", "absa-1", {})
    assert mlflow.MlflowClient(uri).get_experiment_by_name("absa").artifact_location == (store / "mlruns").as_uri()
    assert not list(work.iterdir())
