"""A study's private local Ray listens on the loopback interface only.

Ray 2.60 binds its servers (GCS, raylet, object manager, every worker, the runtime-env agent)
to the node's IP address, which it takes from the route to the internet, and turns
``ray.init(_node_ip_address="127.0.0.1")`` back into that address. Where clusters are off (the
default of macOS and Windows, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) the node's address is the
loopback one, and so is every listening socket (``tests/reliability/test_exposure.py`` checks
with ``ss -ltnp``). The dashboard stays off (``include_dashboard=False``).
"""

from __future__ import annotations

import os

CLUSTERS_OFF = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def loopback_only() -> None:
    """Called before ``ray.init(address="local")``: the Ray it starts binds to 127.0.0.1 only."""
    os.environ[CLUSTERS_OFF] = "0"  # for a process that imports Ray after this
    from ray._private import ray_constants

    # read once, when Ray is imported, by services.get_node_ip_address (checked against Ray 2.60)
    ray_constants.ENABLE_RAY_CLUSTER = False
