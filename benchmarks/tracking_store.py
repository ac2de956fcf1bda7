"""``python -m benchmarks.tracking_store``: the records per second a tracking store takes from studies' spools.

A study's tracker writes MLflow records (each trial's ``start``, one ``log`` per result, its ``end``) to its spool,
and one thread per study sends them, in order, through :class:`search.tracking.sink.MlflowSink`. This benchmark
sends such records through that same sink, as fast as the store takes them, from ``--senders`` studies at once
(each its own parent run, its own thread and client), to each store of ``--stores``:

- ``sqlite``: ``sqlite:///`` (the default: the driver writes the file itself);
- ``server``: a local ``mlflow server`` on a SQLite store (:mod:`benchmarks.mlflow_server`);
- ``postgres``: a local ``mlflow server`` on a local PostgreSQL (:mod:`benchmarks.postgres`; needs the server's
  binaries and ``pip install -e '.[postgres]'``).

The records: a spool file replayed (``--spool``, e.g. a study's ``<storage>/<name>/mlflow-spool.jsonl``), or a
study of ``--results`` results per trial with ``--metrics`` metric values each (defaults: what a simulated absa
trial of the full preset logs, measured: up to 110 metric keys a run). Per run it records records/s and metric
values/s over the whole send, and each record's send time (median, 95th percentile), appended as one JSON line per
store and sender count to ``--out``. What a study needs: ``slots / epoch seconds`` results per second plus two
records per trial (``docs/gpu-cluster.md``, Tracking at scale).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.mlflow_server import local_mlflow_server
from benchmarks.postgres import local_postgres
from benchmarks.rows import append_row

HERE = Path(__file__).resolve().parent / "results"
STORES = ("sqlite", "server", "postgres")


def synthetic_study(trials: int, results: int, metrics: int) -> list[dict[str, Any]]:
    """A study's records as the tracker writes them: per trial a start (tags, params, the config artifact), its
    results (``metrics`` values at its epoch, with their timestamp), its end."""
    records: list[dict[str, Any]] = []
    for t in range(trials):
        trial = f"trial{t:05d}"
        tags = {"trial_id": trial, "kind": "trial", "status": "running", "epochs_trained": "0", "trial": str(t)}
        params = {"schema": "power", "aux": "sst2+pos", "lr": "2e-05", "warmup": "0.1", "seeds": "1,2,3"}
        start = {"op": "start", "trial": trial, "name": f"t{t:05d}", "tags": tags, "params": params}
        records.append({**start, "artifacts": {"config.json": {"lr": 2e-5, "tasks": ["semeval", "sst2"]}}})
        for epoch in range(1, results + 1):
            stamp = 1_700_000_000_000 + 60_000 * epoch
            values = [[f"task{k // 5}/dev/acc/{k % 5}", 0.5 + 0.001 * k, stamp, epoch] for k in range(metrics)]
            records.append({"op": "log", "trial": trial, "metrics": values, "tags": {"epochs_trained": str(epoch)}})
        records.append({"op": "end", "trial": trial, "state": "FINISHED", "tags": {"status": "completed"}})
    return records


def replayed(path: Path, copy: int) -> list[dict[str, Any]]:
    """A spool file's trial records, their trial ids made this copy's own (the parent run's records left out)."""
    out = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        if record.get("trial") is None:
            continue
        record["trial"] = f"{record['trial']}-{copy}"
        if "tags" in record and "trial_id" in record["tags"]:
            record["tags"] = {**record["tags"], "trial_id": record["trial"]}
        out.append(record)
    return out


@contextlib.contextmanager
def store(kind: str, folder: Path, workers: int) -> Iterator[str]:
    """The tracking URI of a fresh store of ``kind`` (its servers stopped afterwards)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder}/mlflow.db"
    elif kind == "server":
        with local_mlflow_server(folder, workers=workers) as server:
            yield server.uri
    else:
        with local_postgres() as database, local_mlflow_server(folder, database, workers) as server:
            yield server.uri


def send_all(uri: str, records: list[dict[str, Any]], parent: str, times: list[float]) -> None:
    """One study's records, in order, through the study's own sink."""
    from search.tracking.sink import MlflowSink

    sink = MlflowSink(uri, parent)
    for record in records:
        started = time.perf_counter()
        sink.send(record)
        times.append(time.perf_counter() - started)


def measure(uri: str, studies: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Send every study's records at once, one thread a study; the rates over the whole send."""
    from search.tracking.runs import start_parent_run

    parents = [start_parent_run(uri, "tracking-store", f"study-{i}", {"n": i}) for i in range(len(studies))]
    times: list[list[float]] = [[] for _ in studies]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            send_all(uri, studies[i], parents[i], times[i])
        except BaseException as exc:  # noqa: B036 - reported below, not lost in a thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(studies))]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    each = sorted(x for ts in times for x in ts)
    records = sum(len(s) for s in studies)
    values = sum(len(r.get("metrics", [])) for s in studies for r in s)
    return {
        "records": records,
        "metric_values": values,
        "seconds": round(wall, 2),
        "records_per_s": round(records / wall, 1),
        "metric_values_per_s": round(values / wall, 0),
        "median_ms": round(1000 * statistics.median(each), 1),
        "p95_ms": round(1000 * each[int(0.95 * (len(each) - 1))], 1),
    }


def studies_for(args: argparse.Namespace, senders: int) -> list[list[dict[str, Any]]]:
    if args.spool:
        return [[r for copy in range(args.copies) for r in replayed(args.spool, copy)] for _ in range(senders)]
    return [synthetic_study(args.trials, args.results, args.metrics) for _ in range(senders)]


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "120")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # a "View run" line a trial's end
    from search.run import quick_tracking_client

    quick_tracking_client()
    for kind in args.stores:
        for senders in args.senders:
            with (
                tempfile.TemporaryDirectory(prefix="tracking-store-") as tmp,
                store(kind, Path(tmp), args.workers) as uri,
            ):
                figures = measure(uri, studies_for(args, senders))
            workload = str(args.spool) if args.spool else f"{args.results} results x {args.metrics} metrics"
            workers = args.workers if kind != "sqlite" else None
            row = {"store": kind, "senders": senders, "server_workers": workers, "workload": workload, **figures}
            append_row(args.out, row)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tracking_store", description=__doc__.splitlines()[0])
    p.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    p.add_argument("--senders", nargs="+", type=int, default=[1, 4], help="studies sending at once (default: 1 4)")
    p.add_argument("--trials", type=int, default=200, help="trials per study of the synthetic records")
    p.add_argument("--results", type=int, default=3, help="results per trial of the synthetic records")
    p.add_argument("--metrics", type=int, default=110, help="metric values per result of the synthetic records")
    p.add_argument("--spool", type=Path, help="replay this spool file's records instead")
    p.add_argument("--copies", type=int, default=5, help="times each sender replays --spool")
    p.add_argument("--workers", type=int, default=1, help="the mlflow server's worker processes")
    p.add_argument("--out", type=Path, default=HERE / "tracking_store.jsonl")
    args = p.parse_args(argv)
    if args.spool and not args.spool.is_file():
        p.error(f"--spool {args.spool}: no such file (a study's <storage>/<name>/mlflow-spool.jsonl)")
    if min(args.senders) < 1 or min(args.trials, args.results, args.metrics, args.copies, args.workers) < 1:
        p.error("--senders, --trials, --results, --metrics, --copies and --workers take whole numbers of 1 or more")
    return args


if __name__ == "__main__":
    main()
