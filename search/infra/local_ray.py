"""A study's private local Ray listens on the loopback interface only, with token authentication on.

Ray 2.60 binds its servers (GCS, raylet, object manager, every worker, the runtime-env agent)
to the node's IP address, which it takes from the route to the internet, and turns
``ray.init(_node_ip_address="127.0.0.1")`` back into that address. Where clusters are off (the
default of macOS and Windows, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) the node's address is the
loopback one, and so is every listening socket (``tests/reliability/test_exposure.py`` checks
with ``ss -ltnp``). The dashboard stays off (``include_dashboard=False``).

Loopback is not private to one user: any account on the machine can reach 127.0.0.1, and a Ray
client that reaches the GCS can run code as the study's user. So the project keeps Ray 2.60's
default for a new local Ray, token authentication (the token in ``~/.ray/auth_token``, mode
600, created on first use), and sets it explicitly: Ray logs "Token authentication is enabled
for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out" only when it chose the mode itself.
An ``RAY_AUTH_MODE`` the user (or the test suite) set is kept.
"""

from __future__ import annotations

import os

CLUSTERS_OFF = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
AUTH_MODE = "RAY_AUTH_MODE"  # Ray's: token | disabled
LOCAL_AUTH_MODE = "token"


def loopback_only() -> None:
    """Called before ``ray.init(address="local")``: the Ray it starts binds to 127.0.0.1 only and
    asks every client for the token."""
    os.environ[CLUSTERS_OFF] = "0"  # for a process that imports Ray after this
    from ray._private import ray_constants

    # read once, when Ray is imported, by services.get_node_ip_address (checked against Ray 2.60)
    ray_constants.ENABLE_RAY_CLUSTER = False
    token_auth()


def token_auth() -> None:
    """``RAY_AUTH_MODE=token`` unless set, for this process and the Ray it starts."""
    if os.environ.get(AUTH_MODE) is not None:
        return
    os.environ[AUTH_MODE] = LOCAL_AUTH_MODE
    from ray._raylet import Config

    # Ray caches its config when imported; re-read it so that this process sees the mode too
    # (what ray._private.authentication.authentication_token_setup._enable_token_auth does, Ray 2.60)
    Config.initialize("")
