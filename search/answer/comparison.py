"""The final comparison itself: per primary test metric the paired difference over the same seeds,
its interval and verdict (:mod:`search.answer.stats`), as Markdown (``final.md``) and CSV (``final.csv``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from search.answer import stats
from search.answer.text import fmt, list_text, signed
from spaces import get_study
from trainables.config import TrainConfig

logger = logging.getLogger(__name__)


@dataclass
class Contender:
    """One side of the final comparison: a trial's config and its scores per seed."""

    role: str  # "winner" or "baseline"
    row: pd.Series  # the trial's row of tracking.trial_table
    config: TrainConfig
    dev: dict[int, float] = field(default_factory=dict)  # seed -> dev objective
    test: dict[str, dict[int, float]] = field(default_factory=dict)  # metric -> seed -> test score
    checkpoints: dict[int, str] = field(default_factory=dict)  # seed -> checkpoint file (local or URI)
    trained: list[int] = field(default_factory=list)  # seeds finalize trained itself


@dataclass
class FinalResult:
    study: str
    name: str
    objective: str
    mode: str
    seeds: list[int]
    winner: Contender
    baseline: Contender
    rows: list[dict[str, Any]]  # one per primary test metric
    headline: dict[str, Any]  # the row of the objective's metric
    model_uri: str | None = None
    model_of: str | None = None
    majority: dict[str, float] = field(default_factory=dict)

    def markdown(self) -> str:
        w, b = self.winner, self.baseline
        seeds = f"{self.seeds[0]}-{self.seeds[-1]}"
        reused = sorted(set(self.seeds) - set(w.trained)), sorted(set(self.seeds) - set(b.trained))
        lines = [
            f"## Final test evaluation: {len(self.seeds)} seeds ({seeds}), {stats.METHOD} interval",
            "",
            f"Chosen on dev (no test score was used to choose): winner **{w.row.label}** "
            f"(dev {fmt(w.row.objective, w.row.objective_std)}), baseline **{b.row.label}** "
            f"(dev {fmt(b.row.objective, b.row.objective_std)}).",
            f"Test scores of seeds {list_text(reused[0])} (winner) and {list_text(reused[1])} (baseline) come from "
            "the search's own last epochs; the others were trained to full epochs by finalize.",
            "",
            "| test metric | winner | baseline | Δ winner − baseline [95% CI] | verdict |",
            "|---|---|---|---|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r['metric']} | {fmt(r['winner_mean'], r['winner_std'])} "
                f"| {fmt(r['baseline_mean'], r['baseline_std'])} "
                f"| {signed(r['diff_mean'])} [{signed(r['diff_low'])}, {signed(r['diff_high'])}] | {r['verdict']} |"
            )
        published = get_study(self.study).published
        for source, values in published.items():
            shown = [f"{r['metric']}={values[r['metric']]:.4f}" for r in self.rows if r["metric"] in values]
            if shown:
                lines.append(f"| *published: {source}* (one run, chosen on test) | " + ", ".join(shown) + " | | | |")
        if self.majority:
            lines += [
                "",
                "Majority (a constant predictor, the floor any model must beat) on the same test rows: "
                + ", ".join(f"{k}={v:.4f}" for k, v in self.majority.items() if not math.isnan(v))
                + ".",
            ]
        h = self.headline
        lines += [
            "",
            f"**Verdict on test {h['metric']}, winner against baseline: {h['verdict']}** "
            f"(Δ {signed(h['diff_mean'])}, 95% CI [{signed(h['diff_low'])}, {signed(h['diff_high'])}], "
            f"n = {h['n']} paired seeds).",
        ]
        if self.model_uri:
            lines += [
                "",
                f"Model: `{self.model_uri}` ({self.model_of}); "
                f"`python -m search.predict --model {self.model_uri} --input sentences.txt "
                "--out predictions.jsonl`.",
            ]
        return "\n".join(lines) + "\n"


# -- comparing --------------------------------------------------------------------
def compare(
    winner: Contender,
    baseline: Contender,
    metrics: list[str],
    seeds: list[int],
    mode: str,
    objective_metric: str | None,
    fallback: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per metric the paired comparison; the headline is the objective's metric (where the objective
    is a primary dev metric), else ``fallback`` (the study's metric), else the first."""
    rows = []
    for m in metrics:
        w = [winner.test.get(m, {}).get(s, math.nan) for s in seeds]
        b = [baseline.test.get(m, {}).get(s, math.nan) for s in seeds]
        # each metric's own direction: only the objective may be minimised
        direction = mode if m == objective_metric else "max"
        d = stats.paired_difference(w, b)
        wm, ws, _ = stats.mean_std(w)
        bm, bs, _ = stats.mean_std(b)
        rows.append(
            {
                "metric": m,
                "winner_mean": wm,
                "winner_std": ws,
                "baseline_mean": bm,
                "baseline_std": bs,
                "diff_mean": d.mean,
                "diff_std": d.std,
                "diff_low": d.low,
                "diff_high": d.high,
                "n": d.n,
                "method": d.method,
                "verdict": stats.verdict(d, direction),
            }
        )
    wanted = objective_metric or fallback
    headline = next((r for r in rows if r["metric"] == wanted), rows[0])
    return rows, headline


def final_frame(result: FinalResult) -> pd.DataFrame:
    """``final.csv``: one row per primary test metric, then the published single runs beside them."""
    rows = [
        {
            "source": "final",
            **r,
            "winner": result.winner.row.label,
            "baseline": result.baseline.row.label,
            "seeds": list_text(result.seeds),
        }
        for r in result.rows
    ]
    for source, values in get_study(result.study).published.items():
        rows += [
            {"source": f"published: {source}", "metric": r["metric"], "winner_mean": values[r["metric"]]}
            for r in result.rows
            if r["metric"] in values
        ]
    rows += [
        {"source": "majority (constant predictor)", "metric": k, "winner_mean": v} for k, v in result.majority.items()
    ]
    return pd.DataFrame(rows)
