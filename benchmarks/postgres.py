"""A local PostgreSQL server for the benchmarks that measure a tracking store on it (``benchmarks.tracking_store``,
``benchmarks.sim_cost --tracking postgres``), started as a user would run one: ``initdb`` into a fresh folder, the
server on a free loopback port only (no other address, its socket in that folder), one database, trust
authentication (loopback, a throwaway cluster). PostgreSQL refuses to run as root: as root it runs as the
``postgres`` account, which then owns the folder."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchmarks.mlflow_server import free_port

DATABASE = "mlflow"


def binaries() -> Path:
    """The folder of ``initdb`` and ``pg_ctl`` (on PATH, or Debian's ``/usr/lib/postgresql/<version>/bin``)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not versions:
        raise SystemExit("error: no PostgreSQL server here (pg_ctl): install it (Debian: apt install postgresql)")
    return versions[-1].parent


def as_owner(command: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *command] if owner else command


def step(name: str, command: list[str]) -> None:
    """Run one setup command; a failure is one line naming it and what it said last."""
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"error: local PostgreSQL: {name} failed (exit {done.returncode}): {said}")


@contextlib.contextmanager
def local_postgres() -> Iterator[str]:
    """A PostgreSQL server on a fresh cluster in a folder of its own (removed afterwards: a folder of the caller's
    may be closed to the ``postgres`` account); yields its SQLAlchemy URI for MLflow (``postgresql://...``, psycopg 3:
    ``pip install -e '.[postgres]'``); stopped afterwards. A setup step that fails ends in one line (SystemExit)."""
    bin_dir, port = binaries(), free_port()
    folder = Path(tempfile.mkdtemp(prefix="postgres-"))
    folder.chmod(0o755)
    data, owner = folder / "pgdata", ("postgres" if os.geteuid() == 0 else None)
    if owner:
        record = pwd.getpwnam(owner)
        os.chown(folder, record.pw_uid, record.pw_gid)
    user = owner or pwd.getpwuid(os.geteuid()).pw_name
    options = f"-h 127.0.0.1 -p {port} -k {folder}"
    start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start"]
    try:
        step("initdb", as_owner([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", user], owner))
        step("pg_ctl start", as_owner(start, owner))
        step("createdb", [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", user, DATABASE])
        yield f"postgresql://{user}@127.0.0.1:{port}/{DATABASE}"
    finally:
        stop = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
        subprocess.run(as_owner(stop, owner), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        shutil.rmtree(folder, ignore_errors=True)
