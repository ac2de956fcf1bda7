"""The search's dev ranking for ``report.md``: the top trials and the baseline with Δ against it and its
paired interval over seeds, the majority floor, and the published single runs beside them.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from search.answer import stats
from search.answer.text import fmt
from search.tracking.outcome import COMPLETED, FAILED, PRUNED
from search.tracking.records import strip_mean
from search.tracking.trial_record import TrialRecord
from spaces import get_study
from trainables.config import TrainConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Context:
    """What the ranking is read against: the preset's scope, the majority floor, the final table."""

    preset_note: str = ""
    majority: dict[str, float] = field(default_factory=dict)  # dev metric -> constant predictor's score
    final_markdown: str = ""
    preset_lr: float | None = None  # the baseline's lr unless the study's lr range moved it


@dataclass(frozen=True)
class Ranked:
    """A completed trial against the baseline on dev: Δ absolute and relative (%), the paired interval
    over seeds, and the dev screen's word."""

    trial: TrialRecord
    delta: float
    delta_rel: float  # %; NaN where the baseline is near zero
    low: float
    high: float
    beyond_noise: str


def versus_baseline(done: Sequence[TrialRecord], mode: str, family: int = 0) -> list[Ranked]:
    """Δ against the baseline per trial: absolute, relative (withheld near zero) and paired over seeds,
    and the dev screen: Holm's step-down at a family-wise 5% over ``family`` trials (at least those of
    ``done``): every trial the search ran, stopped ones too. ASHA completes the trials whose early
    dev scores were best, and a seed's luck lasts through its epochs: the completed trials are the
    top of the whole family, and a family of the completed ones alone would call them above too often
    (a stopped trial counts as tested and not rejected)."""
    baseline = [r for r in done if r.baseline]
    base = float(baseline[0].objective) if baseline else math.nan
    base_seeds = baseline[0].objective_seeds if baseline else {}
    diffs = []
    for r in done:
        mine = r.objective_seeds
        shared = sorted(set(mine) & set(base_seeds))
        diffs.append(stats.paired_difference([mine[s] for s in shared], [base_seeds[s] for s in shared]))
    tested = [not r.baseline and d.n >= stats.MIN_PAIRS for r, d in zip(done, diffs)]
    pvalues = [stats.p_value(d) for d, t in zip(diffs, tested) if t]
    rejected = iter(stats.holm(pvalues + [math.nan] * max(0, family - len(pvalues)), SCREEN_ALPHA))
    return [
        Ranked(
            r,
            r.objective - base,
            100 * stats.relative_change(r.objective - base, base),
            d.low,
            d.high,
            "–" if r.baseline else screen(d, mode, next(rejected) if t else False),
        )
        for r, d, t in zip(done, diffs, tested)
    ]


def by_objective(ranked: Sequence[Ranked], mode: str) -> list[Ranked]:
    """Best first (``mode``'s direction), a trial without an objective last; ties keep their order."""
    sign = -1.0 if mode == "max" else 1.0
    return sorted(ranked, key=lambda x: (math.isnan(x.trial.objective), sign * x.trial.objective))


SCREEN_ALPHA = 0.05  # family-wise, two-sided, over every completed trial against the baseline


def screen(d: stats.PairedDifference, mode: str, rejected: bool) -> str:
    """A trial against the baseline on dev, in one word: above or below the seed noise where Holm's
    step-down rejected "no difference" for it, else within noise."""
    if d.n < stats.MIN_PAIRS:
        return f"n={d.n}: too few"
    if stats.verdict(d, mode) == stats.ZERO_SPREAD:
        return "zero spread"
    if not rejected:
        return "within noise"
    return "above" if (d.mean > 0) == (mode == "max") else "below"


def baseline_lr(lr: float, preset_lr: float | None) -> str:
    """The baseline's learning rate and where it comes from: the thesis, the preset, or the lr range."""
    thesis = TrainConfig.lr
    if preset_lr is not None and not math.isclose(lr, preset_lr, rel_tol=1e-3):  # the table holds 4 digits
        source = "the thesis's" if math.isclose(preset_lr, thesis, rel_tol=1e-3) else f"the thesis's is {thesis:g}"
        return (
            f"The baseline trains with lr {lr:g}: moved into the study's lr range from the preset's "
            f"{preset_lr:g} ({source})."
        )
    if math.isclose(lr, thesis, rel_tol=1e-3):
        return f"The baseline trains with lr {lr:g} (the thesis's)."
    return f"The baseline trains with lr {lr:g}, the preset's, not the thesis's {thesis:g}."


@dataclass(frozen=True)
class Scope:
    """Which score the ranking shows: ``semeval/dev/acc_4way/mean`` -> dev ``acc_4way``, its test twin
    ``semeval/test/acc_4way``; an objective off the primary's dev split (``train/loss/mean``) as is."""

    metric: str
    on_dev: bool
    test_key: str

    @classmethod
    def of(cls, objective: str, primary: str) -> Scope:
        name = strip_mean(objective)
        on_dev = name.startswith(f"{primary}/dev/")
        metric = name[len(f"{primary}/dev/") :] if on_dev else name
        return cls(metric, on_dev, f"{primary}/test/{metric}")


def ranking(
    table: Sequence[TrialRecord],
    study_name: str,
    objective: str,
    mode: str,
    top: int,
    context: Context = Context(),
) -> tuple[pd.DataFrame, str]:
    """The ranked table (top configs, the baseline, published results) as a frame (``report.csv``) and as
    Markdown."""
    study = get_study(study_name)
    family = sum(not r.baseline for r in table)  # every trial the search ran but the baseline
    done = by_objective(versus_baseline([r for r in table if r.status == COMPLETED], mode, family), mode)
    baseline = [x for x in done if x.trial.baseline]
    scope = Scope.of(objective, study.primary_name)
    lines = header_lines(table, study_name, objective, mode, context)
    # the floor of the objective's metric, or of the study's own where the objective is not a dev score
    lines += floor_lines(baseline, context, scope.metric if scope.on_dev else study.metric, study.primary_name)
    if baseline:
        lines += ["", baseline_lr(float(baseline[0].trial.lr), context.preset_lr)]
    shown = first_of_each_key(done[:top] + baseline) if baseline else done[:top]
    trial_lines, csv_rows = trial_rows(done, shown, objective, scope)
    published_lines, published_csv = published_rows(study, scope)
    return pd.DataFrame(csv_rows + published_csv), "\n".join(lines + trial_lines + published_lines) + "\n"


def first_of_each_key(ranked: Sequence[Ranked]) -> list[Ranked]:
    """``ranked`` with a config key seen before dropped (the baseline among the top is shown once)."""
    seen: set[str] = set()
    out = []
    for x in ranked:
        if x.trial.key not in seen:
            seen.add(x.trial.key)
            out.append(x)
    return out


def header_lines(
    table: Sequence[TrialRecord], study_name: str, objective: str, mode: str, context: Context
) -> list[str]:
    """Title, the preset's scope, the final table, and what the ranking's columns mean."""
    seeds = max((len(str(r.seeds).split(",")) for r in table), default=0)
    # a seed schedule (the baseline, stopped trials) leaves some rows on fewer seeds than the seed list
    fewer = any(0 < len(r.objective_seeds) < seeds for r in table)
    status = Counter(r.status for r in table)
    lines = [f"# Study `{study_name}`: objective `{objective}` ({mode})", ""]
    if context.preset_note:
        lines += [f"*{context.preset_note}*", ""]
    lines += [context.final_markdown, ""] if context.final_markdown else []
    return lines + [
        "## Search ranking (dev)",
        "",
        f"{len(table)} trials: {status[COMPLETED]} completed, "
        f"{status[PRUNED]} stopped early (pruned), {status[FAILED]} failed. "
        + (f"Scores are mean ± sample std over {seeds} seeds" if seeds > 1 else "Scores are one seed per trial")
        + (" (fewer where a trial trained fewer: a row without ± is one seed)" if seeds > 1 and fewer else "")
        + "; Δ is against the single-task baseline on dev, with the "
        f'{stats.METHOD} interval of the per-seed differences (per trial, not adjusted). "dev screen" says '
        '"above" or "below" only where Holm\'s step-down over every trial of the search, stopped ones too '
        f"(paired t p-values against the baseline, {SCREEN_ALPHA:.0%} family-wise, two-sided; {stats.MIN_PAIRS} "
        'seeds or more) rejects "no difference", else "within noise": a search where nothing matters shows a '
        'false "above" in at most 5% of its reports. It is a screen on the dev scores that sorted the trials; '
        "the final comparison above, on fresh seeds and test, is the verdict. Relative Δ is not shown where "
        "the baseline is near zero.",
    ]


def floor_lines(baseline: Sequence[Ranked], context: Context, metric: str, primary: str) -> list[str]:
    """The majority rate of ``metric`` on the dev rows, and whether the baseline is above it."""
    if not baseline or context.majority.get(metric) is None:
        return []
    floor = context.majority[metric]
    base = baseline[0].trial.mean(f"{primary}/dev/{metric}")
    where = "above" if base > floor else "NOT above"
    return [
        "",
        f"Majority rate (a constant predictor: the most frequent {primary} label, per position of an evaluation "
        f"group where the task has groups, counted on the dev rows it scores) on this dev set: "
        f"{metric} = {floor:.4f}; the baseline's dev {metric} {base:.4f} is {where} it.",
    ]


def trial_rows(
    done: Sequence[Ranked], shown: Sequence[Ranked], objective: str, scope: Scope
) -> tuple[list[str], list[dict[str, Any]]]:
    """The ranking's Markdown table and its CSV rows (``report.csv``)."""
    metric, test_key = scope.metric, scope.test_key
    lines = [
        "",
        f"| rank | trial | {'dev ' if scope.on_dev else ''}{metric} | Δ abs [95% CI] | dev screen | Δ rel "
        f"| test {metric if scope.on_dev else ''} | epochs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    csv_rows = []
    ranks = {id(x): i + 1 for i, x in enumerate(done)}
    for x in shown:
        r, rank = x.trial, ranks.get(id(x), "-")
        label = f"**{r.label}**" if r.baseline else r.label
        interval = "" if x.low != x.low else f" [{x.low:+.4f}, {x.high:+.4f}]"
        rel = "–" if x.delta_rel != x.delta_rel else f"{x.delta_rel:+.2f}%"
        test_mean, test_std = r.mean(test_key), r.std(test_key)
        lines.append(
            f"| {rank} | {label} | {fmt(r.objective, r.objective_std)} | {x.delta:+.4f}{interval} | {x.beyond_noise} | "
            f"{rel} | {fmt(test_mean, test_std)} | {int(r.epochs)} |"
        )
        csv_rows.append(
            {
                "rank": rank,
                "source": "baseline" if r.baseline else "search",
                "config": r.label,
                "canonical_key": r.key,
                "objective": objective,
                "objective_mean": r.objective,
                "objective_std": r.objective_std,
                "delta_abs": x.delta,
                "delta_low": x.low,
                "delta_high": x.high,
                "beyond_noise": x.beyond_noise,
                "delta_rel_%": x.delta_rel,
                "test_metric": test_key,
                "test_mean": test_mean,
                "test_std": test_std,
                "epochs": int(r.epochs),
                "seeds": r.seeds,
            }
        )
    return lines, csv_rows


def published_rows(study, scope: Scope) -> tuple[list[str], list[dict[str, Any]]]:
    """The study's published single runs: a Markdown table, and CSV rows for the ranking's metric."""
    if not study.published:
        return [], []
    keys = sorted({k for v in study.published.values() for k in v})
    lines = [
        "",
        f"Published results on {study.primary_name} test (single runs, selected as their authors did):",
        "",
        "| source | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    csv_rows = []
    for source, values in study.published.items():
        lines.append(f"| {source} | " + " | ".join(f"{values[k]:.4f}" if k in values else "–" for k in keys) + " |")
        if scope.metric in values:
            csv_rows.append(
                {
                    "rank": "-",
                    "source": "published",
                    "config": source,
                    "test_metric": scope.test_key,
                    "test_mean": values[scope.metric],
                }
            )
    return lines, csv_rows
