"""``search.export_table``: a finished grid study in MLflow as a real-curve table (every cell, seed and point it
reported), what is no finished grid study refused in one line; end to end, a simulated grid study through the
real stack exported and replayed picks the study's own best cell."""

import subprocess
import sys
from types import SimpleNamespace

import mlflow
import optuna
import pytest
from conftest import study_env, study_stores
from mlflow.entities import Metric, Param

from search.export_table import export, seed_rows
from search.simulation.selection import selections
from search.simulation.study import simulate, simulated_plan
from search.simulation.truth import load_truth, resolve_truth
from search.simulation.truth.table import cell_of, read_table
from search.study.config import SearchConfig
from search.tracking import records as rec
from search.tracking.records import TrialParams
from spaces import apply_choices, canonical
from trainables.config import ConfigError
from trainables.exposure import PRIMARY_PASSES

OBJECTIVE = "semeval/dev/acc_4way"
FLAGS = {"search": "grid", "auxiliary": ("sentihood",), "seeds": 2, "epochs": 2, "grace_period": 2}


def step(value: float, at: int, timestamp: int = 0) -> SimpleNamespace:
    return SimpleNamespace(step=at, value=value, timestamp=timestamp)


def test_a_trials_history_becomes_a_row_per_seed_and_point():
    history = {
        f"{OBJECTIVE}/seed1": [step(0.6, 0), step(0.7, 1), step(0.71, 1, timestamp=5), step(0.8, 2)],
        f"{OBJECTIVE}/seed2": [step(0.65, 0), step(0.75, 1), step(0.85, 2)],
        rec.SCREEN_EPOCH: [step(0.25, 0)],
        "train/seconds/mean": [step(3.0, 0), step(10.0, 1), step(12.0, 2)],
        PRIMARY_PASSES: [step(0.5, 1), step(1.0, 2)],
    }
    rows = seed_rows(history, [1, 2], "semeval")
    assert [(r["seed"], r["point"]) for r in rows] == [(s, p) for s in (1, 2) for p in (0.25, 1.0, 2.0)]
    first = {r["point"]: r for r in rows if r["seed"] == 1}
    assert first[1.0][OBJECTIVE] == 0.71  # an epoch logged twice (a resumed trial): the latest
    assert [first[p]["seconds"] for p in (0.25, 1.0, 2.0)] == [3.0, 10.0, 22.0]  # the screen's own; epochs summed
    assert first[2.0][PRIMARY_PASSES] == 1.0 and first[0.25][PRIMARY_PASSES] != first[0.25][PRIMARY_PASSES]  # NaN
    without_screen = {k: v for k, v in history.items() if k != rec.SCREEN_EPOCH}
    assert [r["point"] for r in seed_rows(without_screen, [2], "semeval", screen=0.5)] == [0.5, 1.0, 2.0]
    assert [r["point"] for r in seed_rows(without_screen, [2], "semeval")] == [1.0, 2.0]


# -- studies written to MLflow as the tracker writes them (no Ray) ------------------------------
def score(i: int, seed: int, epoch: int) -> float:
    return 0.8 + (0.03 if i == 3 else 0.001 * i) + 0.01 * seed - 0.02 * (2 - epoch)


def add_study(client, experiment: str, name: str, finished: bool = True, lr: float | None = None, pruned: int = -1):
    """A grid study ``name`` of FLAGS: its parent run and its trials' runs, each seed's acc_4way, the passes
    and the seconds at a screen point and both epochs (trial ``pruned`` stopped after epoch 1; ``lr``: trial 2
    at another lr)."""
    plan = simulated_plan(SearchConfig("absa", simulate=resolve_truth("null"), **FLAGS))
    parent = client.create_run(experiment, run_name=name, tags={rec.KIND_TAG: "study", rec.TUNE_EXPERIMENT_TAG: name})
    params = [Param(k, v) for k, v in plan.invocation.to_params().items()]
    client.log_batch(parent.info.run_id, params=params, metrics=[Metric("majority/dev/acc_4way", 0.58, 0, 0)])
    for i, point in enumerate(plan.points):
        config = canonical(apply_choices(plan.base, point, plan.study))
        config = config.with_(lr=lr) if lr and i == 2 else config
        epochs = 1 if i == pruned else 2
        tags = {rec.PARENT_TAG: parent.info.run_id, rec.KIND_TAG: "trial", rec.EPOCHS_TAG: str(epochs)}
        tags[rec.STATUS_TAG] = "pruned" if i == pruned else "completed"
        run = client.create_run(experiment, run_name=f"t{i:02d}", tags=tags).info.run_id
        metrics = [Metric(rec.SCREEN_EPOCH, 0.25, 0, 0)]
        for e in range(epochs + 1):
            metrics += [Metric(f"{OBJECTIVE}/seed{s}", score(i, s, e), e, e) for s in plan.invocation.seeds]
            metrics += [Metric("train/seconds/mean", 60.0, e, e), Metric(PRIMARY_PASSES, e / 2 or 0.125, e, e)]
        params = [Param(k, v) for k, v in TrialParams.of(config, plan.invocation.seeds).to_params().items()]
        client.log_batch(run, metrics=metrics, params=params)
        client.set_terminated(run)
    if finished:
        client.set_terminated(parent.info.run_id)
    return plan


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> str:
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("absa")
    add_study(client, experiment, "grid")
    add_study(client, experiment, "running", finished=False)
    add_study(client, experiment, "tpe", lr=7e-5)
    add_study(client, experiment, "asha", pruned=4)
    return uri


def test_a_finished_grid_study_is_exported_cell_seed_and_point(studies, tmp_path):
    table = export("absa", studies, str(tmp_path / "grid.parquet"), "grid")
    plan = simulated_plan(SearchConfig("absa", simulate=resolve_truth("null"), **FLAGS))
    assert len(table.frame) == len(plan.points) * 2 * 3 and table.points == [0.25, 1.0, 2.0] and table.seeds == [1, 2]
    meta = read_table(tmp_path / "grid.parquet").meta
    assert (meta["study"], meta["primary"], meta["metric"], meta["epochs"]) == ("absa", "semeval", "acc_4way", 2)
    assert meta["majority"] == {"acc_4way": 0.58} and meta["run"] == "grid"
    assert sorted(table.frame.groupby("point")[PRIMARY_PASSES].first()) == [0.125, 0.5, 1.0]  # as logged
    assert sorted(table.frame.groupby("point")["seconds"].first()) == [60.0, 60.0, 120.0]
    truth = load_truth(str(tmp_path / "grid.parquet"))
    for i, point in enumerate(plan.points):
        config = canonical(apply_choices(plan.base, point, plan.study))
        assert truth.epoch_metrics(config, "k", 2, 1)[OBJECTIVE] == pytest.approx(score(i, 2, 1))
        assert truth.epoch_metrics(config, "k", 1, 0.25)[OBJECTIVE] == pytest.approx(score(i, 1, 0))
    assert truth.best_cell() == cell_of(canonical(apply_choices(plan.base, plan.points[3], plan.study)))


@pytest.mark.parametrize(
    "name, refusal",
    [
        ("running", r"study run running: RUNNING, not finished; a table needs a finished study"),
        ("tpe", r"study run tpe: trial t02 is not a cell of the study's thesis grid"),
        ("asha", r"study run asha: trial t04 is pruned after 1 of 2 epochs; a table needs every cell's every epoch"),
    ],
)
def test_what_is_no_finished_grid_study_is_refused_in_one_line(studies, tmp_path, name, refusal):
    with pytest.raises(ConfigError, match=refusal) as refused:
        export("absa", studies, str(tmp_path / "t.parquet"), name)
    assert "\n" not in str(refused.value) and not (tmp_path / "t.parquet").exists()


def test_a_table_is_written_as_parquet_only(studies, tmp_path):
    with pytest.raises(ConfigError, match=r"--out .*t.csv: expected a .parquet file"):
        export("absa", studies, str(tmp_path / "t.csv"), "grid")


def test_the_command_says_what_it_does():
    out = subprocess.run([sys.executable, "-m", "search.export_table", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "a finished grid study as a real-curve table" in " ".join(out.stdout.split())


# -- end to end ------------------------------------------------------------------------------
@pytest.mark.extended  # a Ray study (~1 min): make test-all; the store above covers export in CI's time
def test_a_simulated_grid_study_exported_and_replayed_picks_the_studys_best_cell(tmp_path):
    argv = ["--simulate", "three_better", "--search", "grid", "--auxiliary", "sentihood", "--seeds", "2"]
    argv += ["--epochs", "2", "--grace-period", "2", "--max-concurrent", "4", "--no-finalize", "--no-report"]
    run = [sys.executable, "-m", "search.run", "absa", *argv, *study_stores(tmp_path)]
    done = subprocess.run(run, cwd=tmp_path, env=study_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    uri, out = f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "grid.parquet"
    command = [sys.executable, "-m", "search.export_table", "absa", "--tracking-uri", uri, "--out", str(out)]
    exported = subprocess.run(command, cwd=tmp_path, env=study_env(), capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0 and "7 cells, seeds 1,2, points 1, 2" in exported.stdout, exported.stderr

    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("absa").experiment_id], "tags.kind = 'trial'")
    studys_best = max(runs, key=lambda r: r.data.metrics["objective"])
    truth = load_truth(str(out))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    flags = {**FLAGS, "epochs": None, "max_concurrent": 4}  # a replay runs at the table's epochs
    replayed = simulate(SearchConfig("absa", simulate=str(out), **flags), truth)
    pick = selections(replayed, truth)[-1]
    assert pick.label == studys_best.info.run_name and pick.dev == pytest.approx(studys_best.data.metrics["objective"])
    chosen = next(t for t in replayed.trials if t.trial_id == pick.trial_id).trial_config.training()
    assert truth.cell(chosen) == truth.best_cell()  # the table's true best is the study's best too
