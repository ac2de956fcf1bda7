"""``search.run --simulate``: the real search stack (Optuna, ASHA, Ray Tune, MLflow spool, finalize,
report) over simulated trials, with torch unimportable and no data; the truth recorded for finalize
and --resume; a bad truth refused before Ray."""

import json
import math
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
from conftest import study_env, study_stores

from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig
from search.study.scheduler import flat
from search.tracking.records import Invocation
from trainables.config import TrainConfig


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
    cfg = SearchConfig("absa", preset="full", simulate=truth)
    params = cfg.invocation("/tmp/ray/absa-x", 10).to_params()
    started = Invocation.from_params(params)
    assert started.simulate == truth
    assert SearchConfig("absa", resume=True).continuing(started).simulate == truth  # --resume simulates again
    old = {k: v for k, v in params.items() if k != "simulate"}  # a study recorded before --simulate existed
    assert Invocation.from_params(old).simulate == ""
    assert cfg.simulated_cpus() >= cfg.max_concurrent and SearchConfig("absa").simulated_cpus() is None


@pytest.mark.slow
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


@pytest.mark.slow
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
