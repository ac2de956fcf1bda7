"""``python -m benchmarks.fault_matrix``: faults injected into simulated studies of the default search at 64 slots,
through the in-process backend (:mod:`search.simulation.backend`: the study's real searcher, scheduler and limiter
driven through the calls Tune makes), each study compared with the same study not interrupted.

Faults, each at random instants (a study's own random generator, seeded):

- ``retry``: a running trial fails and Tune retries it from its last checkpoint;
- ``node``: a node with 8 running trials is lost, every one retried;
- ``resume``: Ctrl-C, SIGTERM or SIGKILL, then ``--resume`` (to the scheduler the three are the same: Tune's last
  saved state, the epochs in flight lost);
- ``kill-between-writes``: a hard kill between Tune's write of the trials and its write of the scheduler's state,
  which resumes from a scheduler state 1-8 results older than the trials.

For each: trials lost (not ended), the selected config and the verdict against the uninterrupted study's. The
tracking server's outage and a full disk are faults of the Ray path's stores (tests/reliability), not of this
backend. One JSON line per study to ``--out``; a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from search.simulation.selection import final_verdict, selections
from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig

FAULTS = ("retry", "node", "resume", "kill-between-writes")


def study(truth: str, seed: int, slots: int, **faults: Any):
    path = resolve_truth(truth)
    cfg = SearchConfig("absa", preset="full", simulate=path, search_seed=seed, max_concurrent=slots)
    return simulate(cfg, replace(load_truth(path), seed=seed), **faults)


def outcome(found, truth_name: str, seed: int) -> dict[str, Any]:
    truth = replace(load_truth(resolve_truth(truth_name)), seed=seed)
    picks = selections(found, truth)
    return {
        "lost": sum(t.status != "TERMINATED" for t in found.trials),
        "selected": picks[-1].label if picks else None,
        "verdict": final_verdict(found, truth),
        "results": sum(e.kind == "result" for e in found.events),
        "retried": sum(e.kind == "failed" for e in found.events),
        "seed_epochs": round(sum(t.seed_epochs for t in found.trials), 3),
    }


def injected(fault: str, rng: random.Random, results: int) -> dict[str, Any]:
    """The fault's arguments to :func:`search.simulation.study.simulate`, at a random instant."""
    at = rng.randrange(2, results)
    if fault == "retry":
        return {"fail_after": {at: 1}}
    if fault == "node":
        return {"fail_after": {at: 8}}
    if fault == "resume":
        return {"interrupt_after": at}
    lag = rng.randint(1, min(8, at - 1))
    return {"interrupt_after": at, "state_lag": lag}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fault_matrix", description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=20, help="studies per fault (default: %(default)s)")
    p.add_argument("--truth", default="late_bloomer", help="a built-in truth or a truth file (default: %(default)s)")
    p.add_argument("--slots", type=int, default=64, help="trials at once (default: %(default)s)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/fault_matrix.jsonl"))
    args = p.parse_args()
    started, table = time.perf_counter(), {f: [0, 0, 0, 0] for f in FAULTS}  # studies, lost, same pick, same verdict
    with args.out.open("w") as out:
        for seed in range(args.studies):
            whole = outcome(study(args.truth, seed, args.slots), args.truth, seed)
            rng = random.Random(f"faults-{seed}")
            for fault in FAULTS:
                faults = injected(fault, rng, whole["results"])
                got = outcome(study(args.truth, seed, args.slots, **faults), args.truth, seed)
                row = table[fault]
                row[0] += 1
                row[1] += got["lost"]
                row[2] += got["selected"] == whole["selected"]
                row[3] += got["verdict"] == whole["verdict"]
                line = {"fault": fault, "study": seed, "truth": args.truth, "slots": args.slots, **faults}
                out.write(json.dumps({**line, "whole": whole, "faulted": got}, default=str) + "\n")
    print(f"{args.truth}, default search, {args.slots} slots, in-process backend; {time.perf_counter() - started:.0f}s")
    print("| fault | studies | trials lost | same selected config | same verdict |\n|---|---|---|---|---|")
    for fault, (n, lost, pick, verdict) in table.items():
        print(f"| {fault} | {n} | {lost} | {pick}/{n} | {verdict}/{n} |")


if __name__ == "__main__":
    main()
