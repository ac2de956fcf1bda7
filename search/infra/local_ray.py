"""A study's private local Ray listens on the loopback interface only, with token authentication on, and runs
its trials at the driver's priority (:func:`trials_at_driver_priority`).

Ray 2.60 binds its servers (GCS, raylet, object manager, every worker, the runtime-env agent)
to the node's IP address, which it takes from the route to the internet, and turns
``ray.init(_node_ip_address="127.0.0.1")`` back into that address. Where clusters are off (the
default of macOS and Windows, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) the node's address is the
loopback one, and so is every listening socket (``tests/reliability/test_exposure.py`` checks
with ``ss -ltnp``). The dashboard stays off (``include_dashboard=False``).

Loopback is not private to one user: any account on the machine can reach 127.0.0.1, and a Ray
client that reaches the GCS can run code as the study's user. So the project keeps Ray 2.60's
default for a new local Ray, token authentication, and sets it explicitly: Ray logs "Token
authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out" only when
it chose the mode itself. The token is ``~/.ray/auth_token``: created here with mode 600 where
there is none (Ray would create it with the umask's mode, 644 under the usual 022, readable by
every account), and narrowed to 600 where it is readable by others. An ``RAY_AUTH_MODE`` the
user (or the test suite) set, and a token named by ``RAY_AUTH_TOKEN``/``RAY_AUTH_TOKEN_PATH``,
are left as they are.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

CLUSTERS_OFF = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
AUTH_MODE = "RAY_AUTH_MODE"  # Ray's: token | disabled
LOCAL_AUTH_MODE = "token"


def loopback_only() -> None:
    """Called before ``ray.init(address="local")``: the Ray it starts binds to 127.0.0.1 only and
    asks every client for the token."""
    os.environ[CLUSTERS_OFF] = "0"  # for a process that imports Ray after this
    from search.infra.ray_compat import no_cluster  # imports Ray: not before the line above

    no_cluster()
    token_auth()
    trials_at_driver_priority()


WORKER_NICENESS = "RAY_worker_niceness"  # Ray's raylet reads it when it starts workers (its default: 15)


def trials_at_driver_priority() -> None:
    """A local Ray's workers (the trials) at the driver's priority, unless the user set Ray's niceness: at
    Ray's default, nice 15, a trial beside any busy process gets a sliver of a core (3.7% against six busy
    loops' 86% each, measured on 2 cores), so a study on a shared machine crawls while it says nothing. On a
    study's own node the trials are the work; Ray's own job manager starts its drivers' workers at 0 too."""
    os.environ.setdefault(WORKER_NICENESS, "0")


def token_auth() -> None:
    """``RAY_AUTH_MODE=token`` unless set, for this process and the Ray it starts."""
    if os.environ.get(AUTH_MODE) is not None:
        return
    os.environ[AUTH_MODE] = LOCAL_AUTH_MODE
    if not (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")):
        private_token(Path.home() / ".ray" / "auth_token")
    from search.infra.ray_compat import reread_config

    reread_config()  # Ray read its config when imported


def private_token(path: Path) -> None:
    """A token file only its owner can read: created (256 random bits, as Ray's own) or narrowed to 600."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            path.chmod(0o600)
        return
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
