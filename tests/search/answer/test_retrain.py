"""Finalize's runs share the CPUs its slots would hold: no arm trains alone while a core waits."""

from dataclasses import replace

from search.answer.config import FINAL_RESOURCES, FinalizeConfig
from search.answer.retrain import final_slots


def test_three_arms_on_two_cpu_slots_run_at_once_on_the_same_cpus():
    cfg = FinalizeConfig("absa", resources=replace(FINAL_RESOURCES, max_concurrent=2, cpus_per_trial=1.0))
    cpus, concurrent = final_slots(cfg, 3)
    assert concurrent == 3 and cpus * 3 <= 2.0 and cpus > 0.66  # what two slots held, in Ray's 1e-4 units


def test_with_gpus_or_enough_slots_nothing_changes():
    assert final_slots(FinalizeConfig("absa", resources=replace(FINAL_RESOURCES, max_concurrent=4)), 3) == (1.0, 4)
    assert final_slots(
        FinalizeConfig("absa", resources=replace(FINAL_RESOURCES, max_concurrent=2, gpus_per_trial=1.0)), 3
    ) == (1.0, 2)


# -- an interrupt during the final runs: one line, no run left RUNNING ---------------------------------
def test_a_final_run_counts_as_finished_only_at_its_contenders_last_epoch():
    from types import SimpleNamespace

    from search.answer.retrain import finished
    from trainables.config import TrainConfig
    from trainables.trial import TrialConfig

    config = TrainConfig(tasks=("semeval",), primary="semeval", epochs=4)
    by_run = {"r1": SimpleNamespace(config=config)}
    point = TrialConfig(train=config, seeds=(3,), key="k", final_for="r1").to_tune()
    assert finished(SimpleNamespace(config=point, metrics={"epoch": 4}), by_run)
    assert not finished(SimpleNamespace(config=point, metrics={"epoch": 2}), by_run)
    assert not finished(SimpleNamespace(config=None, metrics={}), by_run)  # stopped before it started


def test_the_continue_command_names_what_is_not_a_default_and_masks_a_password():
    from search.answer.retrain import finalize_command

    assert finalize_command(FinalizeConfig("absa"), "absa-1") == "python -m search.finalize absa --name absa-1"
    cfg = FinalizeConfig("absa", seeds=7, tracking_uri="http://u:s3cret@host:5000")
    assert finalize_command(cfg, "absa-1") == (
        "python -m search.finalize absa --name absa-1 --tracking-uri http://u:***@host:5000 --seeds 7"
    )


def test_the_final_runs_open_at_an_interrupt_end_killed_with_the_command_that_trains_them(tmp_path):
    import mlflow

    from search.answer.retrain import end_open_runs
    from search.tracking.runs import start_parent_run
    from search.tracking.sink import MlflowSink
    from search.tracking.spool import Spool

    uri = f"sqlite:///{tmp_path}/m.db"
    parent = start_parent_run(uri, "absa", "absa-1", {})
    spool = Spool(tmp_path / "spool.jsonl", MlflowSink(uri, parent))
    for trial in ("done", "open"):
        spool.put({"op": "start", "trial": trial, "name": f"final {trial}", "tags": {"kind": "final"}})
    spool.put({"op": "end", "trial": "done", "state": "FINISHED", "tags": {}})
    end_open_runs(spool, "interrupted (Ctrl-C or SIGTERM)", "python -m search.finalize absa --name absa-1")
    runs = {
        r.info.run_name: r
        for r in mlflow.MlflowClient(uri).search_runs(
            [mlflow.MlflowClient(uri).get_experiment_by_name("absa").experiment_id], "tags.kind = 'final'"
        )
    }
    assert {name: r.info.status for name, r in runs.items()} == {"final done": "FINISHED", "final open": "KILLED"}
    assert runs["final open"].data.tags["resume"] == "python -m search.finalize absa --name absa-1"
    assert runs["final open"].data.tags["status"] == "interrupted"
