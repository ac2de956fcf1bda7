"""A local study's Ray: its own (never a foreign cluster it finds), listening on 127.0.0.1 only.

One driver process starts Ray the way ``search.run`` does without ``--address``
(``search.infra.ray_connect.connect_address(None)``), runs a task so that a worker listens too,
and holds it while the tests look. A foreign cluster (``ray.cluster_utils.Cluster``) is up
beside it, named both by Ray's current-cluster file and by ``RAY_ADDRESS``: what a plain
``ray.init()`` joins. Both share a private Ray temp folder, so other users' Rays see neither.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # two Rays
DRIVER = """
import os
import sys
import ray
from search.infra.ray_connect import connect_address

os.environ["RAY_ADDRESS"] = sys.stdin.readline().strip()  # the foreign cluster, once it is up
connect_address(None)
ray.get(ray.remote(lambda: 1).remote())  # a worker: trials are workers too
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # hold Ray up until the test closes stdin
"""


def figure(capsys, text: str) -> None:
    with capsys.disabled():
        print(f"\n[reliability] {text}")


@pytest.fixture(scope="module")
def rays():
    """``(foreign cluster's address, the driver's GCS address, the driver's pid)``."""
    from ray._private.utils import read_ray_address
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_TMPDIR": temp}
    # the driver imports while the foreign cluster starts
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        cwd=temp,
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAY_TMPDIR", temp)
            foreign = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        try:
            assert read_ray_address(os.path.join(temp, "ray")) == foreign.address  # what ray.init() would join
            driver.stdin.write(foreign.address + "\n")
            driver.stdin.flush()
            gcs = driver.stdout.readline().strip()
            assert gcs, driver.stderr.read()[-3000:]
            yield foreign.address, gcs, driver.pid
        finally:
            foreign.shutdown()
    finally:
        driver.stdin.close()
        driver.wait(timeout=60)
        shutil.rmtree(temp, ignore_errors=True)


def test_a_study_without_address_does_not_join_a_foreign_cluster(rays, capsys):
    foreign, gcs, _ = rays
    assert gcs != foreign and gcs.startswith("127.0.0.1:"), (gcs, foreign)
    figure(capsys, "foreign Ray cluster: faults injected 1, studies that joined it 0")


def descendants(pid: int) -> set[int]:
    """``pid`` and every process below it (GCS, raylet, workers, agents), read from /proc."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    tree, grew = {pid}, True
    while grew:
        below = {child for child, up in parent.items() if up in tree} - tree
        tree, grew = tree | below, bool(below)
    return tree


@pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) is not installed")
def test_a_local_study_ray_listens_on_loopback_only(rays, capsys):
    _, _, driver = rays
    ours = descendants(driver)
    listening = []  # (process name, local address) of every TCP listener of the driver's Ray
    for line in subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout.splitlines():
        owners = re.findall(r'\("([^"]+)",pid=(\d+)', line)
        if any(int(pid) in ours for _, pid in owners):
            listening += [(name, line.split()[3]) for name, pid in owners if int(pid) in ours]
    names = {name for name, _ in listening}
    assert {"gcs_server", "raylet"} <= names and any(n.startswith("ray::") for n in names), listening
    exposed = [(n, a) for n, a in listening if not re.match(r"(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]|\[::1\]):\d+$", a)]
    assert not exposed, exposed
    figure(
        capsys,
        f"exposure: {len(listening)} listening sockets of a local study's Ray, on other interfaces {len(exposed)}",
    )
