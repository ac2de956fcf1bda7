"""Can the cluster ever run one trial? Tune waits forever for a request no node can offer.

Called after connecting to Ray, before any trial: a trial's CPUs and GPUs must fit on one
live node, or on one node type the autoscaler may launch (the GCS's cluster config where an
autoscaler publishes one, e.g. KubeRay; else the cluster launcher's
``~/ray_bootstrap_config.yaml`` on the head, where ``cluster.yaml``'s driver runs).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import ray
import yaml

from search.infra.ray_compat import autoscaler_node_groups
from trainables.config import ConfigError

logger = logging.getLogger(__name__)


BOOTSTRAP = Path("~/ray_bootstrap_config.yaml")  # what `ray up` leaves on the head (Tune reads it too)


Shape = Mapping[str, float]  # a node's resources: {"CPU": 8, "GPU": 1, ...}


def fits(shape: Shape, request: Shape) -> bool:
    return all(shape.get(k, 0.0) >= v for k, v in request.items() if v > 0)


def shape_text(shape: Shape) -> str:
    return "/".join(f"{shape.get(k, 0.0):g} {k}" for k in ("CPU", "GPU"))


def live_nodes() -> list[dict[str, float]]:
    return [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]


def autoscaler_node_types() -> dict[str, dict[str, float] | None]:
    """Node types the autoscaler may start: name -> resources (None: detected at start, unknown now)."""
    types = autoscaler_node_groups()
    path = BOOTSTRAP.expanduser()
    if not types and path.is_file():
        config = yaml.safe_load(path.read_text()) or {}
        head = config.get("head_node_type")
        for name, spec in (config.get("available_node_types") or {}).items():
            if name == head or spec.get("max_workers", 1) != 0:
                types[name] = {k: float(v) for k, v in (spec.get("resources") or {}).items()} or None
    return types


def check_request(
    cpus: float,
    gpus: float,
    nodes: list[Shape] | None = None,
    types: Mapping[str, Shape | None] | None = None,
    local: bool = False,
) -> None:
    """Refuse ``--cpus-per-trial``/``--gpus-per-trial`` no node can ever offer, naming what exists.
    ``local``: a private local Ray, which no autoscaler grows (a stale launcher config is ignored)."""
    request = {"CPU": cpus, "GPU": gpus}
    nodes = live_nodes() if nodes is None else nodes
    types = ({} if local else autoscaler_node_types()) if types is None else types
    if any(fits(n, request) for n in nodes) or any(t is None or fits(t, request) for t in types.values()):
        return
    shapes = list(nodes) + [t for t in types.values() if t is not None]
    gpu_somewhere, cpu_somewhere = (any(fits(s, {k: v}) for s in shapes) for k, v in (("GPU", gpus), ("CPU", cpus)))
    # the flag at fault; both where neither fits anywhere, or each fits but never together
    flags = [
        flag
        for flag, alone in (
            (f"--gpus-per-trial {gpus:g}", gpu_somewhere and not cpu_somewhere),
            (f"--cpus-per-trial {cpus:g}", cpu_somewhere and not gpu_somewhere),
        )
        if not alone
    ]
    counted = Counter(shape_text(n) for n in nodes)
    live = ", ".join(f"{count} x {shape}" for shape, count in counted.items()) or "none"
    scaled = ", ".join(f"{name} ({shape_text(t)})" for name, t in types.items() if t is not None)
    raise ConfigError(
        f"{' '.join(flags)}: no node of this Ray cluster can ever run a trial ({shape_text(request)}); "
        f"nodes: {live}; autoscaler node types: {scaled or 'none'}"
    )
