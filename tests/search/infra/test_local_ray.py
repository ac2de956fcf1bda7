"""A local study's Ray: token authentication on, chosen by the project, so Ray prints no notice about it."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# what ray.init(address="local") calls first for a new cluster (Ray 2.60 worker.py), after loopback_only
PROBE = """
import json, logging, os
records = []
handler = logging.Handler()
handler.emit = records.append
logging.getLogger("ray").addHandler(handler)
from search.infra.local_ray import loopback_only
loopback_only()
from ray._private.authentication.authentication_token_setup import enable_token_auth_by_default
from ray._raylet import AuthenticationMode, get_authentication_mode
enable_token_auth_by_default()
print(json.dumps({
    "env": os.environ.get("RAY_AUTH_MODE"),
    "token": get_authentication_mode() == AuthenticationMode.TOKEN,
    "notices": [r.getMessage() for r in records],
    "niceness": os.environ.get("RAY_worker_niceness"),
}))
"""


def probe(tmp_path: Path, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_worker_niceness")}
    r = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.splitlines()[-1])


def test_a_local_ray_asks_for_the_token_and_says_nothing_about_it(tmp_path):
    seen = probe(tmp_path)
    assert seen == {"env": "token", "token": True, "notices": [], "niceness": "0"}
    token = tmp_path / ".ray" / "auth_token"
    assert len(token.read_text()) == 64 and stat.S_IMODE(token.stat().st_mode) == 0o600


def test_a_token_others_can_read_is_narrowed_to_its_owner(tmp_path):
    token = tmp_path / ".ray" / "auth_token"
    token.parent.mkdir()
    token.write_text("a" * 64)
    token.chmod(0o644)  # what Ray itself writes under umask 022
    probe(tmp_path)
    assert token.read_text() == "a" * 64 and stat.S_IMODE(token.stat().st_mode) == 0o600


def test_an_auth_mode_the_user_set_is_kept(tmp_path):
    seen = probe(tmp_path, RAY_AUTH_MODE="disabled", RAY_worker_niceness="10")  # the suite's own; a user's niceness
    assert seen == {"env": "disabled", "token": False, "notices": [], "niceness": "10"}


def test_a_local_studys_trials_run_at_the_drivers_priority(tmp_path):
    """Ray's default nice 15 starves trials behind any busy process; a study's own local Ray runs them at 0."""
    code = (
        "import os, ray\n"
        "from search.infra.ray_connect import connect_address\n"
        "connect_address(None, num_cpus=1)\n"
        "print(ray.get(ray.remote(lambda: os.nice(0)).remote()))\n"
    )
    clean = {k: v for k, v in os.environ.items() if k != "RAY_worker_niceness"}
    env = {**clean, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "RAY_AUTH_MODE": "disabled"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-1] == str(os.nice(0))  # the driver's own
