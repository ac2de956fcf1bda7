"""``python -m benchmarks.seed_fidelity FILE.jsonl``: seeds as a fidelity against fixed-K ASHA, paired.

Reads ``benchmarks.search_quality``'s JSON lines for a fixed-K family and its seeds-as-a-fidelity twin
(``search.simulation.strategies``: ``tpe-k3`` and ``tpe-k3-fidelity``, or the ``rf3`` pair). Each
fidelity budget is matched with the fixed-K budget whose mean compute (seed-epochs) is nearest; study i
of both met the same truth seed and Optuna seed (common random numbers), so their difference is
taken per study: the mean paired difference of regret and of "within ε" with its SE over studies,
and the compute ratio. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from search.simulation.scoring import mean_se


def families(lines: list[dict[str, Any]]) -> tuple[str, str]:
    """The fixed-K family and its fidelity twin in ``lines`` (exactly one of each)."""
    names = list(dict.fromkeys(line["family"] for line in lines))
    fidelity = [n for n in names if "first-rung=" in n]
    fixed = [n for n in names if "first-rung=" not in n]
    if len(fidelity) != 1 or len(fixed) != 1:
        raise SystemExit(f"error: expected one fixed-K family and one first-rung family, found {names}")
    return fixed[0], fidelity[0]


def by_strategy(lines: list[dict[str, Any]], family: str) -> dict[str, dict[int, dict[str, Any]]]:
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for line in lines:
        if line["family"] == family:
            out.setdefault(line["strategy"], {})[line["study"]] = line
    return out


def compute(studies: dict[int, dict[str, Any]]) -> float:
    return float(np.mean([s["seed_epochs"] for s in studies.values()]))


def paired_rows(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fixed_name, fidelity_name = families(lines)
    fixed, fidelity = by_strategy(lines, fixed_name), by_strategy(lines, fidelity_name)
    rows = []
    for name, mine in fidelity.items():
        twin = min(fixed, key=lambda f: abs(compute(fixed[f]) - compute(mine)))
        shared = sorted(set(mine) & set(fixed[twin]))
        row: dict[str, Any] = {"fidelity": name, "fixed": twin, "studies": len(shared)}
        row["compute_fidelity"], row["compute_fixed"] = compute(mine), compute(fixed[twin])
        for key, scale in (("regret", 100.0), ("within_0.5pp", 1.0), ("within_1pp", 1.0)):
            a = np.array([float(mine[i][key]) for i in shared]) * scale
            b = np.array([float(fixed[twin][i][key]) for i in shared]) * scale
            row[key] = (float(a.mean()), float(b.mean()), *mean_se(a - b))
        per_trial = [mine[i]["seed_epochs"] / mine[i]["trials"] for i in shared]
        per_trial_fixed = [fixed[twin][i]["seed_epochs"] / fixed[twin][i]["trials"] for i in shared]
        row["per_trial"] = (float(np.mean(per_trial)), float(np.mean(per_trial_fixed)))
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    def diff(v: tuple[float, float, float, float], unit: str = "") -> str:
        se = "–" if math.isnan(v[3]) else f"{v[3]:.2f}"
        return f"{v[0]:.2f} vs {v[1]:.2f}: {v[2]:+.2f} ± {se}{unit}"

    lines = [
        "| fidelity vs fixed K | studies | seed-epochs (per trial) | regret pp, Δ ± SE | P(≤0.5 pp), Δ ± SE "
        "| P(≤1 pp), Δ ± SE |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['fidelity']} vs {r['fixed']} | {r['studies']} | {r['compute_fidelity']:.0f} vs "
            f"{r['compute_fixed']:.0f} ({r['per_trial'][0]:.1f} vs {r['per_trial'][1]:.1f}) | {diff(r['regret'])} "
            f"| {diff(r['within_0.5pp'])} | {diff(r['within_1pp'])} |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.seed_fidelity", description=__doc__.split("\n\n")[0])
    p.add_argument("lines", type=Path, help="a benchmarks.search_quality --out file with both families")
    args = p.parse_args()
    lines = [json.loads(text) for text in args.lines.read_text().splitlines() if text.strip()]
    print(table(paired_rows(lines)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
