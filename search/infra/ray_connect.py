"""Joining Ray: a private local Ray by default, a cluster only at an explicit ``--address``."""

from __future__ import annotations

import logging
import socket

import ray

from search.infra.local_ray import loopback_only
from search.infra.quiet import worker_setup
from search.infra.resources import check_request
from search.infra.storage import is_remote_storage

logger = logging.getLogger(__name__)


def probe_address(address: str) -> None:
    """A quick TCP probe: ``ray.init`` waits minutes on an address nobody answers."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"Ray cluster address {address!r}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConnectionError(f"Ray cluster at --address {address} is unreachable: {exc}") from None


def connect_address(address: str | None, num_cpus: int | None = None) -> None:
    """Start a private local Ray (``address=None``), or join the cluster at ``address``.
    ``num_cpus``: the local Ray's logical CPUs (a simulated study's slots); default: the machine's.

    ``ray.init()`` without an address would join whatever cluster Ray's current-cluster file
    names (another user's ``ray start``, a test's cluster) and die with it; ``"local"`` never does.
    """
    if ray.is_initialized():
        return
    if address not in (None, "auto", "local"):
        probe_address(address)
    if address in (None, "local"):
        loopback_only()
    try:
        ray.init(
            address=address or "local",
            ignore_reinit_error=True,
            log_to_driver=True,
            include_dashboard=False if address in (None, "local") else None,
            num_cpus=num_cpus if address in (None, "local") else None,
            runtime_env=worker_setup(),
        )
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        raise ConnectionError(f"Ray cluster at --address {address}: {str(exc).splitlines()[0]}") from None


def connect(
    address: str | None, cpus_per_trial: float, gpus_per_trial: float, storage: str, num_cpus: int | None = None
) -> None:
    """Join Ray (:func:`connect_address`), check that one trial fits, warn about a node-local storage."""
    connect_address(address, num_cpus)
    check_request(cpus_per_trial, gpus_per_trial, local=address in (None, "local"))
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    # an autoscaling cluster may show only its head now: any cluster address counts as multi-node
    if (len(nodes) > 1 or address not in (None, "local")) and not is_remote_storage(storage):
        logger.warning(
            "Ray cluster (%d node(s) now; an autoscaler may add more) with a plain local --storage %s: fine only "
            "if every node mounts that filesystem; otherwise use s3:// or gs:// so checkpoints survive a node",
            len(nodes),
            storage,
        )
