"""A local ``mlflow server`` on a SQLite store, started as a user runs one (loopback only), for the benchmarks that
track to a server: ``benchmarks.sim_cost --tracking server`` and ``benchmarks.fault_matrix_ray``'s outage, which
stops it and starts it again on the same port and store."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


class LocalMlflowServer:
    """``mlflow server`` on ``folder/server.db`` at a free loopback port (``uri``); :meth:`start` waits until it
    takes connections (2 minutes at most)."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.folder, self.uri = folder, f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port)]
        self.command += ["--workers", "1", "--backend-store-uri", f"sqlite:///{folder}/server.db"]
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


@contextlib.contextmanager
def local_mlflow_server(folder: Path) -> Iterator[LocalMlflowServer]:
    """The server, started; stopped afterwards."""
    server = LocalMlflowServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
