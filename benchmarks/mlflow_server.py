"""A local ``mlflow server`` on a SQLite store or another database (``backend_store_uri``: a local PostgreSQL,
:mod:`benchmarks.postgres`), started as a user runs one (loopback only), for the benchmarks that track to a server:
``benchmarks.sim_cost --tracking server``, ``benchmarks.tracking_store``, and ``benchmarks.fault_matrix_ray``'s
outage, which stops it and starts it again on the same port and store."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


class LocalMlflowServer:
    """``mlflow server`` on ``backend_store_uri`` (default ``folder/server.db``) at a free loopback port (``uri``),
    with ``workers`` processes; :meth:`start` waits until it takes connections (2 minutes at most)."""

    def __init__(self, folder: Path, backend_store_uri: str | None = None, workers: int = 1) -> None:
        self.port = free_port()
        self.folder, self.uri = folder, f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port)]
        store = backend_store_uri or f"sqlite:///{folder}/server.db"
        self.command += ["--workers", str(workers), "--backend-store-uri", store]
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(240):
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)
            self.process = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_mlflow_server(
    folder: Path, backend_store_uri: str | None = None, workers: int = 1
) -> Iterator[LocalMlflowServer]:
    """The server, started; stopped afterwards."""
    server = LocalMlflowServer(folder, backend_store_uri, workers)
    server.start()
    try:
        yield server
    finally:
        server.stop()
