"""``python -m benchmarks.tradeoff FILE...``: the default's selection rule applied to search-quality results.

Reads ``benchmarks.search_quality`` output files (one per truth, each holding the grid and the candidates on
common random numbers), pairs every candidate with the grid study by study, and prints one markdown row per
candidate: its compute as a share of the grid's (mean over the truths), P(within 1 pp of the true best) on each
truth with its paired difference from the grid's ± SE, and the worst difference. Then the rule of
docs/search-strategies.md: the cheapest candidate whose worst difference is at least ``--bound`` and that
selects within 1 pp in at least ``--bloomer-min`` of the studies of the ``--bloomer`` truth; if none, the one
meeting the second with the best worst difference. Truths named in ``--not-worst`` (the late bloomer, judged by
its own bound; ``null``, where every config is the best) are shown but left out of the worst.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

GRID = "grid"


@dataclass(frozen=True)
class Margin:
    p: float  # P(within 1 pp)
    diff: float  # paired difference from the grid's
    se: float
    studies: int
    share: float  # seed-epochs over the grid's, mean over the paired studies


def read(path: Path) -> tuple[str, dict[str, dict[int, dict]]]:
    """The truth's name and, per strategy, its lines by study."""
    by: dict[str, dict[int, dict]] = defaultdict(dict)
    truth = ""
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if text.strip():
            try:
                line = json.loads(text)
                truth = line["truth"]
                by[line["strategy"]][int(line["study"])] = line
                float(line["within_1pp"]) + float(line["seed_epochs"])
            except (ValueError, KeyError, TypeError) as e:
                what = f"no key {e}" if isinstance(e, KeyError) else str(e)
                raise SystemExit(
                    f"error: {path} line {number}: {what} (expected a benchmarks.search_quality results line)"
                ) from None
    return truth, by


def margins(by: dict[str, dict[int, dict]]) -> dict[str, Margin]:
    grid = next((lines for name, lines in by.items() if name.startswith(GRID)), None)
    if grid is None:
        raise SystemExit("error: a results file without the grid: run search_quality with --strategies grid,...")
    out = {}
    for name, lines in by.items():
        studies = sorted(set(lines) & set(grid))
        if name.startswith(GRID) or not studies:
            continue
        mine = [float(lines[s]["within_1pp"]) for s in studies]
        theirs = [float(grid[s]["within_1pp"]) for s in studies]
        diffs = [a - b for a, b in zip(mine, theirs, strict=True)]
        n = len(diffs)
        mean = sum(diffs) / n
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else math.nan
        share = sum(lines[s]["seed_epochs"] / grid[s]["seed_epochs"] for s in studies) / n
        out[name] = Margin(sum(mine) / n, mean, sd / math.sqrt(n), n, share)
    return out


def pick(rows: dict[str, dict[str, Margin]], judged: list[str], bloomer: str | None, bound: float, least: float):
    """The rule's candidate and why: ``rows`` is strategy -> truth -> margin."""

    def worst(name: str) -> float:
        return min(rows[name][t].diff for t in judged if t in rows[name])

    def share(name: str) -> float:
        return sum(m.share for m in rows[name].values()) / len(rows[name])

    bloom_ok = [n for n in rows if bloomer is None or (bloomer in rows[n] and rows[n][bloomer].p >= least)]
    both = [n for n in bloom_ok if worst(n) >= bound]
    if both:
        return min(both, key=share), f"the cheapest whose worst difference is at least {bound:+.2f}"
    if bloom_ok:
        return max(bloom_ok, key=lambda n: (worst(n), -share(n))), "none meets the bound: the best worst difference"
    return None, f"none selects within 1 pp in {least:.0%} of {bloomer}'s studies"


def table(files: list[Path], not_worst: set[str], bloomer: str | None, bound: float, least: float) -> str:
    rows: dict[str, dict[str, Margin]] = defaultdict(dict)
    truths = []
    for path in files:
        truth, by = read(path)
        truths.append(truth)
        for name, margin in margins(by).items():
            rows[name][truth] = margin
    judged = [t for t in truths if t not in not_worst]
    head = " | ".join(truths)
    out = [f"| strategy | of grid | {head} | worst |", "|---" * (len(truths) + 3) + "|"]
    for name, by_truth in rows.items():
        cells = [
            f"{m.p:.2f} ({m.diff:+.2f} ± {m.se:.2f}, {m.studies})" if (m := by_truth.get(t)) else "" for t in truths
        ]
        worst = min((by_truth[t].diff for t in judged if t in by_truth), default=math.nan)
        share = sum(m.share for m in by_truth.values()) / len(by_truth)
        out.append(f"| {name} | {share:.0%} | {' | '.join(cells)} | {worst:+.3f} |")
    chosen, why = pick(rows, judged, bloomer, bound, least)
    out.append("")
    out.append(f"the rule picks: {chosen} ({why})" if chosen else f"the rule picks nothing: {why}")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tradeoff", description=__doc__)
    p.add_argument("files", nargs="+", type=Path, help="search_quality output files, one per truth")
    p.add_argument("--not-worst", default="late_in_family,null", help="truths left out of the worst difference")
    p.add_argument("--bloomer", default="late_in_family", help="the late bloomer's truth ('' for none)")
    p.add_argument("--bloomer-min", type=float, default=0.10, help="least P(within 1 pp) on the bloomer's truth")
    p.add_argument("--bound", type=float, default=-0.03, help="least worst difference from the grid")
    args = p.parse_args()
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        raise SystemExit(f"error: no such results file: {', '.join(missing)}")
    not_worst = {t for t in args.not_worst.split(",") if t}
    print(table(args.files, not_worst, args.bloomer or None, args.bound, args.bloomer_min))


if __name__ == "__main__":
    main()
