"""The final comparison itself: per primary test metric the paired difference over the same fresh
seeds and its interval, one verdict on the study's metric (:mod:`search.answer.stats`), as Markdown
(``final.md``) and CSV (``final.csv``).
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
    """One side of the final comparison: a trial's config and its scores per final seed."""

    role: str  # "winner" (best multitask trial) or "opponent" (best single-task trial)
    row: pd.Series  # the trial's row of tracking.trial_table
    config: TrainConfig
    dev: dict[int, float] = field(default_factory=dict)  # seed -> dev objective
    test: dict[str, dict[int, float]] = field(default_factory=dict)  # metric -> seed -> test score
    checkpoints: dict[int, str] = field(default_factory=dict)  # seed -> checkpoint file (local or URI)
    trained: list[int] = field(default_factory=list)  # seeds this finalize trained (the rest: earlier finalizes)


@dataclass
class FinalResult:
    study: str
    name: str
    objective: str
    mode: str
    seeds: list[int]  # the final seeds, none of which the search trained
    winner: Contender
    opponent: Contender
    rows: list[dict[str, Any]]  # one per primary test metric
    headline: dict[str, Any]  # the row of the study's metric: the one verdict
    model_uri: str | None = None
    model_of: str | None = None
    majority: dict[str, float] = field(default_factory=dict)
    search_seeds: list[int] = field(default_factory=list)

    def markdown(self) -> str:
        lines = self.header() + self.table() + self.floor()
        h = self.headline
        lines += [
            "",
            f"**Verdict on test {h['metric']}, multitask winner against single-task opponent, over "
            f"{h['n']} training seeds on this test set: {h['verdict']}** "
            f"(Δ {signed(h['diff_mean'])}, 95% CI [{signed(h['diff_low'])}, {signed(h['diff_high'])}]).",
        ]
        if self.model_uri:
            lines += [
                "",
                f"Model: `{self.model_uri}` ({self.model_of}); "
                f"`python -m search.predict --model {self.model_uri} --input sentences.txt "
                "--out predictions.jsonl`.",
            ]
        return "\n".join(lines) + "\n"

    def header(self) -> list[str]:
        """Title, which two configs the verdict compares and why, and where the seeds come from."""
        w, o = self.winner, self.opponent
        earlier = sorted(set(self.seeds) - set(w.trained) | set(self.seeds) - set(o.trained))
        return [
            f"## Final test evaluation: {len(self.seeds)} fresh seeds ({list_text(self.seeds)}), "
            f"{stats.METHOD} interval",
            "",
            f"Does multitask training help the primary task of study {self.study}? The verdict "
            f"compares the best completed multitask trial, **{w.row.label}** (dev "
            f"{fmt(w.row.objective, w.row.objective_std)}), with the best completed single-task trial, "
            f"**{o.row.label}** (dev {fmt(o.row.objective, o.row.objective_std)}): both chosen on dev after the same "
            "search over lr and warm-up, so they differ in the auxiliary tasks only. No test score chose anything.",
            f"Both were trained to full epochs by finalize on seeds {list_text(self.seeds)}, none of which the "
            f"search used (search seeds {list_text(self.search_seeds)}): a seed's luck on dev, which helped pick "
            "the winner, cannot carry into its test score"
            + (f"; seeds {list_text(earlier)} come from an earlier finalize's completed runs." if earlier else "."),
            "",
            "| test metric | multitask winner | single-task opponent | Δ winner − opponent [95% CI] | verdict |",
            "|---|---|---|---|---|",
        ]

    def table(self) -> list[str]:
        """One row per primary test metric (± is the sample std over seeds), then the published runs."""
        lines = [
            f"| {r['metric']} | {fmt(r['winner_mean'], r['winner_std'])} "
            f"| {fmt(r['opponent_mean'], r['opponent_std'])} "
            f"| {signed(r['diff_mean'])} [{signed(r['diff_low'])}, {signed(r['diff_high'])}] | {r['verdict']} |"
            for r in self.rows
        ]
        for source, values in get_study(self.study).published.items():
            shown = [f"{r['metric']}={values[r['metric']]:.4f}" for r in self.rows if r["metric"] in values]
            if shown:
                lines.append(f"| *published: {source}* (one run, chosen on test) | " + ", ".join(shown) + " | | | |")
        return lines + [
            "",
            f"± is the sample std over the {len(self.seeds)} seeds. Only {self.headline['metric']}, the study's "
            "metric, gets a verdict; the other rows are exploratory (intervals shown, no verdict: testing each "
            "metric separately would multiply the chances of a false 'better').",
        ]

    def floor(self) -> list[str]:
        scores = ", ".join(f"{k}={v:.4f}" for k, v in self.majority.items() if math.isfinite(v))
        if not scores:
            return []
        return [
            "",
            "Majority (a constant predictor, the floor any model must beat; each aspect's most frequent polarity, "
            f"counted on the test rows it scores): {scores}.",
        ]


# -- comparing --------------------------------------------------------------------
EXPLORATORY = "exploratory: no verdict"


def compare(
    winner: Contender,
    opponent: Contender,
    metrics: list[str],
    seeds: list[int],
    mode: str,
    objective_metric: str | None,
    fallback: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per metric the paired comparison; one verdict, on the headline: the objective's metric (where
    the objective is a primary dev metric), else ``fallback`` (the study's metric), else the first.
    The other metrics' rows are exploratory: their intervals, no verdict."""
    wanted = objective_metric or fallback
    headline_metric = wanted if wanted in metrics else metrics[0]
    rows = []
    for m in metrics:
        w = [winner.test.get(m, {}).get(s, math.nan) for s in seeds]
        o = [opponent.test.get(m, {}).get(s, math.nan) for s in seeds]
        # each metric's own direction: only the objective may be minimised
        direction = mode if m == objective_metric else "max"
        d = stats.paired_difference(w, o)
        wm, ws, _ = stats.mean_std(w)
        om, os_, _ = stats.mean_std(o)
        rows.append(
            {
                "metric": m,
                "winner_mean": wm,
                "winner_std": ws,
                "opponent_mean": om,
                "opponent_std": os_,
                "diff_mean": d.mean,
                "diff_std": d.std,
                "diff_low": d.low,
                "diff_high": d.high,
                "n": d.n,
                "method": d.method,
                "verdict": stats.verdict(d, direction) if m == headline_metric else EXPLORATORY,
            }
        )
    headline = next(r for r in rows if r["metric"] == headline_metric)
    return rows, headline


def final_frame(result: FinalResult) -> pd.DataFrame:
    """``final.csv``: one row per primary test metric, then the published single runs beside them."""
    rows = [
        {
            "source": "final",
            **r,
            "winner": result.winner.row.label,
            "opponent": result.opponent.row.label,
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
