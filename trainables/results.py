"""Names in a trial's result record that readers outside the trainable rely on (no Ray here).

The Tune wrapper (:mod:`trainables.tune`) writes them; the search's outcome rule, tracker and
final comparison read them. Per-seed values are ``<key>/seed<S>``: built and parsed only here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

DIVERGED = "diverged"  # result key: 1.0 on the final result of a trial whose loss became NaN
FAILURE_REASON = "failure_reason"  # result key beside it: why
# per seed at every report: 1.0 where the primary's dev predictions are constant (trainables.degenerate), the
# last point at which they were (0.0: never), so a run trained on shows whether it recovered from there, and the
# last point at which they were not (0.0: never), so a run stopped while degenerate shows whether it had learned
DEGENERATE = "degenerate"
DEGENERATE_UNTIL = "degenerate_until"
LEARNED_UNTIL = "learned_until"

_SEED_KEY = re.compile(r"^(?P<name>.+)/seed(?P<seed>\d+)$")


def seed_key(key: str, seed: int) -> str:
    """``semeval/dev/acc_4way``, 2 -> ``semeval/dev/acc_4way/seed2``."""
    return f"{key}/seed{seed}"


def parse_seed_key(key: str) -> tuple[str, int] | None:
    """``semeval/dev/acc_4way/seed2`` -> ``("semeval/dev/acc_4way", 2)``; None for other keys."""
    match = _SEED_KEY.match(key)
    return (match["name"], int(match["seed"])) if match else None


def per_seed(values: Mapping[str, Any], key: str) -> dict[int, float]:
    """``{seed: value}`` of ``key`` from a mapping holding ``<key>/seed<S>`` entries (NaN skipped)."""
    out = {}
    for name, value in values.items():
        parsed = parse_seed_key(name) if isinstance(name, str) else None
        if parsed and parsed[0] == key and value == value:
            out[parsed[1]] = float(value)
    return out


def aggregate(
    per_seed: Sequence[dict[str, float]], seeds: Sequence[int], keep_seeds: Callable[[str], bool] = lambda key: True
) -> dict[str, float]:
    """``{k: v}`` per seed -> ``{k/mean, k/std, k/seed<S>}``.

    A key some seeds lack (a task that drew no batch in that seed's epoch) or hold as NaN
    is summarised over the seeds that have a value; ``k/std`` (sample std) only where at
    least two seeds have one, and ``k/seed<S>`` only for the keys ``keep_seeds`` accepts.
    """
    out: dict[str, float] = {}
    keys = dict.fromkeys(k for m in per_seed for k in m)  # union, first-seen order
    for key in keys:
        values = np.array([m.get(key, np.nan) for m in per_seed], dtype=np.float64)
        present = values[~np.isnan(values)]
        out[f"{key}/mean"] = float(present.mean()) if len(present) else float("nan")
        if len(present) > 1:
            out[f"{key}/std"] = float(present.std(ddof=1))
        if keep_seeds(key):
            for seed, v in zip(seeds, values):
                if not np.isnan(v):
                    out[seed_key(key, seed)] = float(v)
    return out


def seed_values_kept(key: str, primary: str, objective: str) -> bool:
    """Per-seed values are reported for the primary task's scores, whether it is degenerate, and the objective only:
    the rest (losses, task distributions) would bury them in the tracker's columns."""
    return (
        key.startswith((f"{primary}/dev/", f"{primary}/test/"))
        or key in (DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL)
        or f"{key}/mean" == objective
    )
