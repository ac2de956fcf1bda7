"""The cluster launcher configs pass Ray's own schema, offline, and keep the cluster private.

``prepare_config`` is what ``ray up`` runs before it contacts the cloud: it merges the provider's
packaged ``defaults.yaml`` (AWS needs no boto3 for that) and, for the local provider, builds the
single node type. ``validate_config`` then checks ``ray/autoscaler/ray-schema.json`` and the
cross-field rules. The provider bootstrap that talks to AWS (``bootstrap_aws``) is not called.
"""

from __future__ import annotations

import copy
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).resolve().parents[1]
AWS, ONPREM = "cluster.yaml", "cluster-onprem.yaml"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("cluster config validation tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / name).read_text())


def prepared(name: str) -> dict[str, Any]:
    config = prepare_config(load(name))
    validate_config(config)
    return config


def pin(package: str) -> str:
    """The version pyproject.toml pins for ``package`` (``"torch==2.13.0"``, extras ignored)."""
    m = re.search(rf'"{re.escape(package)}(\[[^\]]*\])?==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert m, f"pyproject.toml pins no {package}"
    return m.group(2)


def ray_start(commands: list[str]) -> str:
    (cmd,) = [c for c in commands if "ray start" in c]
    return cmd


def mlflow_host(config: dict[str, Any]) -> str:
    (cmd,) = [c for c in config["head_start_ray_commands"] if "mlflow server" in c]
    host = re.search(r"mlflow server .*?--host[= ]\"?([^\s\"]+)", cmd).group(1)
    if host == "$MLFLOW_HOST":
        host = re.search(r"MLFLOW_HOST=(.+?);", cmd).group(1)
    return host


@pytest.mark.parametrize("name", [AWS, ONPREM])
def test_config_passes_ray_schema(name: str) -> None:
    config = prepared(name)
    assert config["head_node_type"] in config["available_node_types"]


@pytest.mark.parametrize("name", [AWS, ONPREM])
def test_nothing_listens_on_public_interfaces(name: str) -> None:
    config = prepared(name)
    assert "--dashboard-host=127.0.0.1" in ray_start(config["head_start_ray_commands"])
    host = mlflow_host(config)
    # AWS: the head's private address (from the instance metadata), inside the security group;
    # on premises, where no such group exists: the head's loopback, reached through an SSH tunnel
    imds = '$(curl -sf -H "X-aws-ec2-metadata-token: $IMDS_TOKEN" http://169.254.169.254/latest/meta-data/local-ipv4)'
    assert host == (imds if name == AWS else "127.0.0.1")
    started = " ".join(config["head_start_ray_commands"] + config["worker_start_ray_commands"])
    assert "0.0.0.0" not in started and "--host ::" not in started


@pytest.mark.parametrize("name", [AWS, ONPREM])
def test_token_auth_stays_on(name: str) -> None:
    config = prepared(name)
    for commands in (config["head_start_ray_commands"], config["worker_start_ray_commands"]):
        assert "RAY_AUTH_MODE=token ray start" in ray_start(commands)
    every = config["setup_commands"] + config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    assert not any("RAY_AUTH_MODE=disabled" in c for c in every)
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"


def test_aws_trials_land_on_gpu_workers_only() -> None:
    config = prepared(AWS)
    types = config["available_node_types"]
    head = config["head_node_type"]
    # no trial (nor any Ray task) on the head, which holds the autoscaler's EC2 and S3 role
    assert types[head]["resources"] == {"CPU": 0, "GPU": 0} and types[head]["max_workers"] == 0
    workers = {name: t for name, t in types.items() if name != head}
    assert {t["node_config"]["InstanceType"] for t in workers.values()} == {"g5.xlarge", "g5.12xlarge"}
    for t in workers.values():
        assert t["resources"]["GPU"] >= 1 and t["max_workers"] >= 1 and t["min_workers"] == 0
        assert t["node_config"]["BlockDeviceMappings"][0]["Ebs"]["VolumeType"] == "gp3"


def test_aws_ssh_is_open_to_the_operators_network_only() -> None:
    """Every node names the operator's security group, so `ray up` creates none (its own group opens
    SSH to 0.0.0.0/0); the file says how to make that group, with the operator's CIDR to change."""
    config = prepared(AWS)
    groups = {tuple(t["node_config"]["SecurityGroupIds"]) for t in config["available_node_types"].values()}
    assert len(groups) == 1 and len(next(iter(groups))) == 1
    assert "0.0.0.0/0" not in yaml.safe_dump(config) and "security_group" not in config["provider"]
    text = (ROOT / AWS).read_text()
    assert re.search(r"^\s*#\s+CIDR=\S+/\d+\s+# CHANGE: the operator's network", text, re.M)
    assert "--port 22 --cidr $CIDR" in text and "--protocol -1 --source-group $SG" in text


def test_onprem_says_what_to_firewall_and_tunnels_to_mlflow() -> None:
    text = (ROOT / ONPREM).read_text()
    assert "ufw default deny incoming" in text and "6379" in text and "10001" in text
    assert re.search(r"ufw allow from \S+ to any port 22 proto tcp\s+# CHANGE: the operator's network", text)
    assert "ssh -N -L 5000:127.0.0.1:5000" in text


def test_onprem_head_advertises_no_gpu() -> None:
    assert "--num-gpus=0" in ray_start(prepared(ONPREM)["head_start_ray_commands"])


@pytest.mark.parametrize("name", [AWS, ONPREM])
def test_setup_installs_pinned_torch_before_project(name: str) -> None:
    config = prepared(name)
    assert config["file_mounts"]["~/mtl-search"] == "."
    for commands in (config["head_setup_commands"], config["worker_setup_commands"]):
        torch = [i for i, c in enumerate(commands) if f"pip install torch=={pin('torch')}" in c]
        project = [i for i, c in enumerate(commands) if "cd ~/mtl-search && pip install -e ." in c]
        assert torch and project and max(torch) < min(project)
        assert f'"ray[default]=={pin("ray")}"' in commands[min(project)]
        assert "-c constraints.txt" in commands[min(project)]


def test_constraints_agree_with_pyproject() -> None:
    """constraints.txt (what cluster nodes install) pins what pyproject.toml pins, and no torch."""
    lines = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and not line.startswith("#")]
    versions = dict(line.split("==", 1) for line in lines)
    assert versions["ray"] == pin("ray[tune]") and versions["mlflow"] == pin("mlflow")
    assert "torch" not in versions and "mtl-search" not in versions


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        *parents, last = path
        for key in parents:
            config = config[key]
        config[last] = value

    return edit


def _drop(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        *parents, last = path
        for key in parents:
            config = config[key]
        del config[last]

    return edit


# mistake -> (edit, the start of the error it must raise)
BROKEN = {
    "max_workers as a string": (_set(("max_workers",), "10"), "'10' is not of type 'integer'"),
    "unknown top-level key": (_set(("max_worker",), 10), "Additional properties are not allowed"),
    "node type without resources": (
        _drop(("available_node_types", "gpu-1x", "resources")),
        "'resources' is a required property",
    ),
    "node type without node_config": (
        _drop(("available_node_types", "gpu-4x", "node_config")),
        "'node_config' is a required property",
    ),
    "fractional GPU resource": (
        _set(("available_node_types", "gpu-1x", "resources", "GPU"), 0.5),
        "0.5 is not of type 'integer'",
    ),
    "head type not declared": (_set(("head_node_type",), "ray.head.default"), "`head_node_type` must be one of"),
    "min_workers above max_workers": (
        _set(("available_node_types", "gpu-1x", "min_workers"), 11),
        "The specified global `max_workers`",
    ),
}


@pytest.mark.parametrize("mistake", sorted(BROKEN))
def test_broken_config_is_rejected(mistake: str) -> None:
    edit, error = BROKEN[mistake]
    config = copy.deepcopy(load(AWS))
    edit(config)
    with pytest.raises((jsonschema.ValidationError, ValueError), match=re.escape(error)):
        validate_config(prepare_config(config))


BROKEN_ONPREM = {
    "no head_ip": (_drop(("provider", "head_ip")), "head_ip"),
    "worker_ips as a string": (_set(("provider", "worker_ips"), "10.0.0.2"), "'10.0.0.2' is not of type 'array'"),
    "unknown top-level key": (_set(("idle_timeout",), 10), "Additional properties are not allowed"),
}


@pytest.mark.parametrize("mistake", sorted(BROKEN_ONPREM))
def test_broken_onprem_config_is_rejected(mistake: str) -> None:
    edit, error = BROKEN_ONPREM[mistake]
    config = copy.deepcopy(load(ONPREM))
    edit(config)
    with pytest.raises(Exception, match=re.escape(error)):
        validate_config(prepare_config(config))
