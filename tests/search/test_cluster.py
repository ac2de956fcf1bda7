"""Scheduling across nodes, proved on one machine with Ray's own multi-node test cluster.

A head with no GPUs and two worker nodes declaring one GPU each run the same entry point
users run (``python -m search.run absa --preset smoke --address ADDR --gpus-per-trial 1``).
"""

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest
from conftest import study_env, study_stores

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # 4 minutes of CI's 15: make test-all


@pytest.fixture
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
    workers = [c.add_node(num_cpus=2, num_gpus=1) for _ in range(2)]
    c.wait_for_nodes()
    yield c, workers
    c.shutdown()


def study(tmp: Path, model: Path, address: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "search.run",
        "absa",
        "--preset",
        "smoke",
        "--address",
        address,
        "--cpus-per-trial",
        "1",
        "--model",
        str(model),
        "--seeds",
        "2",
        *study_stores(tmp),
        "--no-report",
        "--no-finalize",
        *extra,
    ]


def trial_runs(tmp: Path):
    client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    experiment = client.get_experiment_by_name("absa")
    return [r for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get("kind") == "trial"]


def test_trials_spread_over_gpu_worker_nodes(tmp_path, tiny_bert, cluster):
    c, workers = cluster
    r = subprocess.run(
        study(tmp_path, tiny_bert, c.address, "--trials", "4", "--max-concurrent", "2", "--gpus-per-trial", "1"),
        cwd=tmp_path,
        env=study_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "with a plain local --storage" in r.stderr  # warned, fine on one filesystem
    assert "no CUDA device is visible: training on the CPU" in r.stdout + r.stderr  # said in the log too
    runs = trial_runs(tmp_path)
    assert len(runs) == 4 and all(run.data.tags["status"] in ("completed", "pruned") for run in runs)
    nodes = {run.data.tags["node_id"] for run in runs}
    assert nodes == {w.node_id for w in workers}  # both GPU workers, never the GPU-less head
    for run in runs:  # a GPU resource without a CUDA device: CPU, and said so
        assert run.data.tags["cpu_fallback"] == "True" and run.data.tags["device"] == "cpu"
        assert run.data.tags["gpus_requested"] == "1.0"
        assert run.data.tags["hostname"] and run.data.tags["node_ip"]


def test_fractional_gpus_share_a_worker(tmp_path, tiny_bert, cluster):
    c, workers = cluster
    r = subprocess.run(
        study(
            tmp_path,
            tiny_bert,
            c.address,
            "--trials",
            "4",
            "--max-concurrent",
            "4",
            "--gpus-per-trial",
            "0.5",
            "--epochs",
            "1",
        ),
        cwd=tmp_path,
        env=study_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    runs = trial_runs(tmp_path)
    assert len(runs) == 4 and all(run.data.tags["gpus_requested"] == "0.5" for run in runs)
    by_node: dict[str, list] = {}
    for run in runs:
        by_node.setdefault(run.data.tags["node_id"], []).append((run.info.start_time, run.info.end_time))
    assert set(by_node) <= {w.node_id for w in workers}
    # two half-GPU trials ran on one single-GPU node at the same time
    overlapping = [
        node
        for node, spans in by_node.items()
        if any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(spans) for b in spans[i + 1 :])
    ]
    assert overlapping, by_node


def running_on(tmp: Path, node_id: str) -> bool:
    """A trial on ``node_id`` has a checkpoint Tune registered and is still running.

    Tune runs the result callbacks (MLflow) before it registers that result's checkpoint
    (a save task on the trial's actor): a node lost in between restarts the trial from its
    previous checkpoint. Once epoch 2 is logged, epoch 1's checkpoint is registered.
    """
    db = tmp / "mlflow.db"
    if not db.exists():
        return False
    with sqlite3.connect(db, timeout=5) as con:
        if not con.execute("select 1 from sqlite_master where name = 'tags'").fetchall():
            return False  # MLflow is still creating its tables
        rows = con.execute(
            "select t.run_uuid from tags t join tags s on s.run_uuid = t.run_uuid "
            "join tags e on e.run_uuid = t.run_uuid "
            "where t.key = 'node_id' and t.value = ? and s.key = 'status' and s.value = 'running' "
            "and e.key = 'epochs_trained' and cast(e.value as integer) >= 2",
            (node_id,),
        ).fetchall()
    return bool(rows)


def test_lost_worker_node_trials_resume_from_checkpoint(tmp_path, tiny_bert, cluster):
    c, workers = cluster
    doomed = workers[1]
    # one trial per GPU worker; enough epochs that the doomed one is still training when the node goes
    args = study(
        tmp_path,
        tiny_bert,
        c.address,
        "--trials",
        "2",
        "--max-concurrent",
        "2",
        "--gpus-per-trial",
        "1",
        "--epochs",
        "12",
        "--grace-period",
        "12",
        "--max-failures",
        "3",
    )
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=study_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.time() + 300
    while not running_on(tmp_path, doomed.node_id):
        assert proc.poll() is None and time.time() < deadline, "no trial checkpointed on the second worker"
        time.sleep(0.3)
    c.remove_node(doomed)  # the node dies mid-trial
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-4000:]
    runs = trial_runs(tmp_path)
    assert len(runs) == 2 and all(run.data.tags["status"] == "completed" for run in runs), out[-3000:]
    moved = [run for run in runs if int(run.data.tags.get("restored_from_epoch", 0)) >= 1]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    seen = {
        run.info.run_name: (
            run.data.tags.get("restored_from_epoch"),
            run.data.tags.get("node_id"),
            [m.step for m in client.get_metric_history(run.info.run_id, "objective")],
        )
        for run in runs
    }
    assert moved, f"no trial was resumed from a checkpoint: {seen} doomed={doomed.node_id}\n" + out[-6000:]
    for run in moved:  # finished on the surviving worker, after the epochs it had checkpointed
        assert run.data.tags["node_id"] == workers[0].node_id
        assert run.data.tags["epochs_trained"] == "12"
