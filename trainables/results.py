"""Names in a trial's result record that readers outside the trainable rely on (no Ray here).

The Tune wrapper (:mod:`trainables.tune`) writes them; the search's outcome rule, tracker and
final comparison read them. Per-seed values are ``<key>/seed<S>``: built and parsed only here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DIVERGED = "diverged"  # result key: 1.0 on the final result of a trial whose loss became NaN
FAILURE_REASON = "failure_reason"  # result key beside it: why

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
