"""``search.run --simulate``: the real search stack (Optuna, ASHA, Ray Tune, MLflow spool, finalize,
report) over simulated trials, with torch unimportable and no data; the truth recorded for finalize
and --resume; a bad truth refused before Ray."""

import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
from conftest import study_env, study_stores

from search.simulation.kind import SimulatedTrials, trial_kind
from search.simulation.study import simulated_plan
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig, continuing
from search.study.kind import TrainedTrials
from search.study.plan import plan_offline
from search.study.scheduler import flat
from search.tracking.records import Invocation
from trainables.config import ConfigError, TrainConfig


def no_torch(tmp: Path) -> dict:
    """A study's environment where ``import torch`` fails in every process (driver and Ray workers), and
    the data root is empty."""
    fake = tmp / "no-torch" / "torch"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text('raise ImportError("a simulated study imported torch")\n')
    (tmp / "no-data").mkdir(exist_ok=True)
    env = study_env()
    return {**env, "PYTHONPATH": f"{fake.parent}:{env['PYTHONPATH']}", "MTL_DATA_DIR": str(tmp / "no-data")}


def simulated_study(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """``search.run absa *args`` with torch unimportable and no data, its stores in ``tmp``; it succeeded."""
    run = [sys.executable, "-m", "search.run", "absa", *args, *study_stores(tmp)]
    r = subprocess.run(run, cwd=tmp, env=no_torch(tmp), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def study_runs(tmp: Path) -> tuple[mlflow.MlflowClient, dict[str, list]]:
    """The study's MLflow client and its runs by kind (``study``, ``trial``, ``final``)."""
    client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("absa").experiment_id])
    kinds: dict[str, list] = {}
    for run in runs:
        kinds.setdefault(run.data.tags.get("kind", ""), []).append(run)
    return client, kinds


@pytest.mark.slow
def test_a_simulated_study_runs_search_finalize_and_report_without_torch_or_data(tmp_path):
    # every trial completes (grace period = epochs), so both sides of the final comparison exist
    args = ["--simulate", "null", "--trials", "6", "--max-concurrent", "4", "--epochs", "2", "--grace-period", "2"]
    simulated_study(tmp_path, *args)

    client, runs = study_runs(tmp_path)
    (parent,), trials, finals = runs["study"], runs["trial"], runs["final"]
    assert parent.data.params["simulate"] == resolve_truth("null") and parent.data.params["preset"] == "full"
    assert len(trials) == 6 and all(t.data.tags["device"] == "simulated" for t in trials)
    assert {"objective", "semeval/dev/acc_4way/seed3", "sampling/p/semeval/mean"} <= set(trials[0].data.metrics)
    assert not any("/test/" in k for t in trials for k in t.data.metrics)  # the search scores no test
    # winner, opponent and the winner's ablation (its auxiliary tasks removed), on seeds 4-8
    assert len(finals) == 3 and all("semeval/test/acc_4way/seed8" in f.data.metrics for f in finals)
    assert sum(f.data.tags["final_for"].endswith("-ablation") for f in finals) == 1
    assert parent.data.tags["final_verdict"].startswith("acc_4way: ")
    assert parent.data.tags["final_ablation_verdict"].startswith("acc_4way: ")
    first_look = parent.data.tags["final_look_1"]
    report = next((tmp_path / "results" / "absa").iterdir()) / "report.md"
    assert "SIMULATED study" in report.read_text()

    # finalize again, by itself: it reads the truth from the study's run and reuses the final runs
    again = [sys.executable, "-m", "search.finalize", "absa", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    r = subprocess.run(again, cwd=tmp_path, env=no_torch(tmp_path), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert len(study_runs(tmp_path)[1]["final"]) == 3

    # more seeds: a second look, the first one kept as it was
    r = subprocess.run([*again, "--seeds", "7"], cwd=tmp_path, env=no_torch(tmp_path), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (parent,) = study_runs(tmp_path)[1]["study"]
    assert parent.data.tags["final_look_1"] == first_look and '"seeds": 7' in parent.data.tags["final_look_2"]
    # the run's description in the MLflow UI: the trials view link, then this look's answer only
    note = parent.data.tags["mlflow.note.content"]
    assert note.startswith("Trials side by side") and note.count("## Final test evaluation: 7 fresh seeds") == 1
    assert "5 fresh seeds" not in note


def test_a_bad_truth_stops_before_ray_in_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('primary = "semeval"\n[noise]\nseed_sd = -0.1\n[tasks.semeval]\nacc_4way = 0.8\n')
    for truth, expected in (
        ("nothing", "error: --simulate nothing: no such truth file"),
        (str(bad), f"error: {bad}: noise.seed_sd = -0.1: expected >= 0"),
    ):
        run = [sys.executable, "-m", "search.run", "absa", "--simulate", truth, *study_stores(tmp_path)]
        r = subprocess.run(run, cwd=tmp_path, env=study_env(), capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.strip().startswith(expected), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ray").exists()


def test_the_truth_is_recorded_for_finalize_and_resume():
    truth = resolve_truth("three_better")
    plan = simulated_plan(SearchConfig("absa", simulate=truth, max_concurrent=64))
    params = plan.invocation.to_params()
    started = Invocation.from_params(params)
    assert started.simulate == truth and started.preset == "full"  # a simulated study's default preset
    assert continuing(SearchConfig("absa", resume=True), started).simulate == truth  # --resume simulates again
    assert isinstance(trial_kind(truth), SimulatedTrials) and isinstance(trial_kind(""), TrainedTrials)
    old = {k: v for k, v in params.items() if k != "simulate"}  # a study recorded before --simulate existed
    assert Invocation.from_params(old).simulate == ""
    trained = plan_offline(SearchConfig("absa"), TrainedTrials())
    assert plan.resources.ray_cpus == 64 and trained.resources.ray_cpus is None
    assert plan.kind.model_bytes == 0 and not plan.kind.registers_model


def test_a_truth_of_another_primary_is_refused_in_one_line(tmp_path):
    other = tmp_path / "other.toml"
    other.write_text(Path(resolve_truth("null")).read_text().replace('primary = "semeval"', 'primary = "sentihood"'))
    with pytest.raises(ConfigError, match="its primary is 'sentihood', study absa's 'semeval'"):
        simulated_plan(SearchConfig("absa", simulate=str(other)))


@pytest.mark.slow
@pytest.mark.extended  # 35 s of CI's 12 minutes: make test-all; the backend's seed schedule is held to Ray's in CI
def test_a_simulated_study_with_seeds_as_a_fidelity(tmp_path):
    """``--first-rung-seeds 1``: trials reach the first rung on seed 1 alone, the baseline trains all
    three (its rung value paired on seed 1), promoted trials end on all three, finalize trains every
    fresh seed, and the parent run records the option."""
    args = ["--simulate", "three_better", "--trials", "8", "--max-concurrent", "4", "--epochs", "2"]
    r = simulated_study(tmp_path, *args, "--first-rung-seeds", "1")

    client, runs = study_runs(tmp_path)
    (parent,), trials = runs["study"], runs["trial"]
    assert parent.data.params["first_rung_seeds"] == "1"
    counts = {t.info.run_name: client.get_metric_history(t.info.run_id, "seeds/trained") for t in trials}
    (baseline,) = [t for t in trials if t.data.tags["baseline"] == "true"]
    assert [m.value for m in counts[baseline.info.run_name]] == [3.0, 3.0]  # every seed from the start
    for t in trials:
        if t.data.tags["baseline"] == "true":
            continue
        history = [(m.step, m.value) for m in counts[t.info.run_name]]
        # the full preset's grace 1, factor 2 over 2 epochs: one rung, at epoch 1
        assert history in ([(1, 1.0)], [(1, 1.0), (2, 3.0)]), history
        assert ("semeval/dev/acc_4way/seed2" in t.data.metrics) == (t.data.tags["status"] == "completed")
    assert any(t.data.tags["status"] == "pruned" for t in trials)
    assert "(1 seed)" in r.stdout and "(3 seeds)" in r.stdout  # the progress lines say it
    finals = runs.get("final", [])
    assert finals and all("semeval/test/acc_4way/seed8" in f.data.metrics for f in finals)  # 5 fresh seeds, all


@pytest.mark.extended  # a study at scale through Ray (30 s on 2 cores): benchmarks.sim_cost measures 1,000 trials
def test_a_30_trial_study_at_8_slots_recovers_the_truth(tmp_path):
    """What the real stack reports for 30 trials at 8 slots is the truth file's model: every trial's
    first epoch (reported by all, before ASHA selects any) is its true score less the learning
    curve's deficit, off by seed luck and evaluation noise of the truth's spread; the second epoch of
    the promoted ones gains the curve's gap."""
    args = ["--simulate", "three_better", "--trials", "30", "--max-concurrent", "8", "--epochs", "2"]
    simulated_study(tmp_path, *args, "--no-finalize", "--no-report")

    truth, key = load_truth(resolve_truth("three_better")), "semeval/dev/acc_4way/mean"
    first, gains = [], []
    for results in (tmp_path / "ray").glob("absa-*/trial_*/result.json"):
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        config = TrainConfig.from_dict(flat(lines[0]["config"])["train"])
        first.append(lines[0][key] - (truth.true_score(config, "acc_4way") - truth.deficit(config, 1)))
        if len(lines) > 1:
            gains.append(lines[1][key] - lines[0][key])
    assert len(first) == 30 and gains
    sd = math.sqrt((truth.noise.seed_sd**2 + truth.noise.eval_sd**2) / 3)  # a 3-seed mean's spread
    assert abs(np.mean(first)) < 3 * sd / math.sqrt(30)
    assert 0.6 * sd < np.std(first, ddof=1) < 1.5 * sd and max(map(abs, first)) < 4 * sd
    assert abs(np.mean(gains) - truth.learning.gap) < 0.01  # luck is shared by the epochs: only noise differs


# make test-all: CI's 12 minutes; in CI, tests/search/test_run.py resumes a trained study with its printed line
# and tests/search/study/test_halving.py resumes simulated cohorts at every interrupt point
@pytest.mark.extended
def test_an_interrupted_simulated_study_resumes_with_its_printed_line_to_a_verdict(tmp_path):
    """Ctrl-C after the first trial; the line the study prints, pasted in another folder, finishes it with
    the preset it started with, then finalize and the report (seconds: an epoch of 3 seeds sleeps 1 s); the same
    line with ``--trials 10`` extends it to 10 trials and answers again."""
    truth = tmp_path / "slow.toml"
    truth.write_text(Path(resolve_truth("three_better")).read_text().replace("scale = 0.0 ", "scale = 0.00556 "))
    args = ["--simulate", str(truth), "--trials", "8", "--max-concurrent", "2", "--epochs", "2", "--grace-period", "2"]
    run = [sys.executable, "-m", "search.run", "absa", *args, *study_stores(tmp_path)]
    proc = subprocess.Popen(
        run,
        cwd=tmp_path,
        env=no_torch(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if re.match(r"\[t\d\d\] ", line):
            break
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, "".join(seen)[-2000:] + rest[-3000:]
    (command,) = re.findall(r"continue it with: (.+)", rest)
    python, *argv = shlex.split(command)
    assert python == "python" and argv[:3] == ["-m", "search.run", "absa"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = subprocess.run(
        [sys.executable, *argv], cwd=elsewhere, env=no_torch(tmp_path), capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    _, runs = study_runs(tmp_path)
    (parent,) = runs["study"]
    assert parent.data.params["preset"] == "full" and len(runs["trial"]) == 8
    assert all(t.data.tags["status"] == "completed" for t in runs["trial"])
    # the final runs: the winner, the single-task opponent and the winner's ablation
    assert parent.data.tags["final_verdict"].startswith("acc_4way: ") and len(runs["final"]) == 3
    assert (next((elsewhere / "results" / "absa").iterdir()) / "report.md").is_file()
    # then two more trials with the same line: the study was interrupted and resumed (two sessions' saved states)
    r = subprocess.run(
        [sys.executable, *argv, "--trials", "10"],
        cwd=elsewhere,
        env=no_torch(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "10 trials in total (started with 8)" in r.stderr and "== absa: the answer ==" in r.stdout
    _, runs = study_runs(tmp_path)
    assert len(runs["trial"]) == 10 and all(t.data.tags["status"] == "completed" for t in runs["trial"])


@pytest.mark.slow
def test_on_a_ray_with_gpus_every_simulated_trial_asks_for_one(tmp_path, monkeypatch):
    """A Ray that advertises two (logical) GPUs, no --gpus-per-trial: each trial's resources hold one GPU, and
    the study says so when it starts."""
    # the cluster's raylet reads this process's environment: a CUDA_VISIBLE_DEVICES naming fewer than 2
    # devices (a GPU machine's CI, or "" to hide them) would refuse the 2 logical GPUs at start
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4, "num_gpus": 2})
    try:
        args = ["--simulate", "null", "--trials", "3", "--max-concurrent", "2", "--epochs", "1", "--grace-period", "1"]
        r = simulated_study(tmp_path, *args, "--address", cluster.address, "--no-finalize", "--no-report")
    finally:
        cluster.shutdown()
    assert "2 GPU(s) in the cluster: each trial asks for one" in r.stdout + r.stderr
    results = [json.loads(p.read_text().splitlines()[0]) for p in (tmp_path / "ray").glob("absa-*/trial_*/result.json")]
    assert len(results) == 3 and all(x["gpus_requested"] == 1.0 for x in results), results
    _, runs = study_runs(tmp_path)
    assert runs["study"][0].data.params["gpus_per_trial"] == "1.0"


# a Ray study (22 s of CI's 12 minutes): make test-all; CI holds the artifacts' place beside the store in
# tests/search/tracking/test_runs.py
@pytest.mark.extended
def test_given_storage_and_tracking_uri_nothing_lands_in_the_working_folder(tmp_path):
    """No --optuna-storage: Optuna's file goes in the --storage folder, MLflow's artifacts (the trials' configs, the
    final runs', the report's) beside its store, said in the start line; the working folder gets results/ alone."""
    cwd, stores = tmp_path / "cwd", tmp_path / "stores"
    cwd.mkdir()
    stores.mkdir()
    args = ["--simulate", "null", "--trials", "2", "--epochs", "1", "--grace-period", "1"]
    run = [sys.executable, "-m", "search.run", "absa", *args, "--storage", str(stores / "ray")]
    run += ["--tracking-uri", f"sqlite:///{stores}/mlflow.db"]
    r = subprocess.run(run, cwd=cwd, env=no_torch(tmp_path), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert [p.name for p in cwd.iterdir()] == ["results"]
    assert f"MLflow artifacts: {(stores / 'mlruns').as_uri()}" in r.stderr
    assert (stores / "ray" / "optuna.db").is_file() and list((stores / "mlruns").glob("*/artifacts/trial_config.json"))


@pytest.mark.extended  # make test-all: CI's 12 minutes; tests/search/test_run.py extends a trained study in CI
def test_resume_with_more_trials_extends_a_finished_study(tmp_path):
    """12 trials, finished; ``--resume --trials 20`` adds 8 more to the same study, then finalize again."""
    args = ["--simulate", "null", "--max-concurrent", "4", "--epochs", "1", "--grace-period", "1", "--name", "ext"]
    simulated_study(tmp_path, *args, "--trials", "12", "--no-report")
    assert len(study_runs(tmp_path)[1]["trial"]) == 12
    r = simulated_study(tmp_path, "--resume", "--name", "ext", "--trials", "20", "--no-report")
    assert "ext: 20 trials in total (started with 12)" in r.stdout + r.stderr
    _, runs = study_runs(tmp_path)
    (parent,) = runs["study"]
    assert len(runs["trial"]) == 20 and all(t.data.tags["status"] == "completed" for t in runs["trial"])
    assert parent.data.tags["final_verdict"].startswith("acc_4way: ") and parent.info.status == "FINISHED"
