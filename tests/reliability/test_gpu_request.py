"""A trial request no node can ever offer is refused before any trial, naming what the cluster has.

Unit level, with the nodes and node types given (the whole study, refused before it creates
anything, is a case of ``tests/search/test_study.py::test_bad_input_fails_before_any_trial``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from search.infra import resources
from search.infra.resources import autoscaler_node_types, check_request
from trainables.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
LAPTOP = [{"CPU": 2.0, "memory": 8e9, "node:__internal_head__": 1.0}]  # what ray.nodes() says of a local Ray
GPU_NODE = {"CPU": 4.0, "GPU": 1.0}


def figure(capsys, text: str) -> None:
    with capsys.disabled():
        print(f"\n[reliability] {text}")


REFUSED = {  # (cpus, gpus, nodes, autoscaler node types) -> the one line
    "a GPU on a CPU-only machine": (
        1,
        1,
        LAPTOP,
        {},
        "--gpus-per-trial 1: no node of this Ray cluster can ever run "
        "a trial (1 CPU/1 GPU); nodes: 1 x 2 CPU/0 GPU; autoscaler node types: none",
    ),
    "a fraction of a GPU": (1, 0.5, LAPTOP, {}, "--gpus-per-trial 0.5: no node"),
    "more CPUs than any node": (
        8,
        1,
        LAPTOP + [GPU_NODE],
        {},
        "--cpus-per-trial 8: no node of this Ray cluster can "
        "ever run a trial (8 CPU/1 GPU); nodes: 1 x 2 CPU/0 GPU, 1 x 4 CPU/1 GPU",
    ),
    "CPUs and GPUs apart": (
        4,
        1,
        [{"CPU": 8.0}, {"CPU": 1.0, "GPU": 1.0}],
        {},
        "--gpus-per-trial 1 --cpus-per-trial 4: no node",
    ),
    "more GPUs than any node type": (
        1,
        8,
        [{"CPU": 8.0, "GPU": 0.0}],
        {"gpu-4x": {"CPU": 48.0, "GPU": 4.0}},
        "--gpus-per-trial 8: no node of this Ray cluster can ever run a trial (1 CPU/8 GPU); nodes: 1 x 8 CPU/0 GPU; "
        "autoscaler node types: gpu-4x (48 CPU/4 GPU)",
    ),
}


def test_requests_no_node_can_offer_are_refused_naming_what_exists(capsys):
    for case, (cpus, gpus, nodes, types, line) in REFUSED.items():
        with pytest.raises(ConfigError) as refused:
            check_request(cpus, gpus, nodes, types)
        assert str(refused.value).startswith(line), (case, str(refused.value))
    # what can run, now or once the autoscaler adds a node, is not refused
    check_request(1, 0, LAPTOP, {})
    check_request(3, 1, LAPTOP, {"gpu-1x": GPU_NODE})  # an autoscaler node type offers it
    check_request(3, 1, LAPTOP, {"detected": None})  # resources detected when the node starts: cannot tell
    check_request(1, 0.25, [GPU_NODE], {})
    figure(capsys, f"no-GPU request: faults injected {len(REFUSED)}, refused before any trial {len(REFUSED)}")


def test_node_types_are_read_from_the_cluster_launchers_config(monkeypatch):
    monkeypatch.setattr(resources, "BOOTSTRAP", ROOT / "cluster.yaml")  # `ray up` leaves it, filled in, on the head
    types = autoscaler_node_types()  # no Ray here: the GCS has no cluster config to give
    assert types == {"head": {"CPU": 0.0, "GPU": 0.0}, "gpu-1x": GPU_NODE, "gpu-4x": {"CPU": 48.0, "GPU": 4.0}}
    head = [{"CPU": 0.0, "GPU": 0.0}]  # an autoscaling cluster with no worker up yet
    check_request(3, 1, head)
    with pytest.raises(ConfigError, match=r"--gpus-per-trial 8: .*gpu-1x \(4 CPU/1 GPU\), gpu-4x \(48 CPU/4 GPU\)"):
        check_request(3, 8, head)
    with pytest.raises(ConfigError, match=r"autoscaler node types: none"):  # a stale file beside a local Ray
        check_request(3, 1, LAPTOP, local=True)
