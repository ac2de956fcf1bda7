"""A study's answer as it is read: both claims (:mod:`search.answer.claims`) over the same fresh seeds,
each with its verdict, what it could detect, its collapsed seeds and its looks, as Markdown
(``final.md``) and CSV (``final.csv``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import pandas as pd

from search.answer import stats
from search.answer.claims import (
    ABLATION,
    EXPLORATORY,
    EXPLORATORY_LEVEL,
    QUESTIONS,
    TUNED,
    Claim,
    Contender,
    Row,
    exploratory_level,
    rate_bound,
)
from search.answer.power import spread_bound
from search.answer.sequential import ALPHA
from search.answer.text import fmt, list_text, signed
from spaces import get_study

logger = logging.getLogger(__name__)


@dataclass
class FinalResult:
    study: str
    name: str
    objective: str
    mode: str
    seeds: list[int]  # the final seeds, none of which the search trained
    winner: Contender
    claims: tuple[Claim, ...]  # TUNED first, then ABLATION (where the winner has auxiliary tasks to remove)
    model_uri: str | None = None
    model_of: str | None = None
    majority: dict[str, float] = field(default_factory=dict)
    search_seeds: list[int] = field(default_factory=list)
    earlier: list[dict] = field(default_factory=list)  # the earlier looks as recorded (search.answer.looks)

    @property
    def tuned(self) -> Claim:
        return next(c for c in self.claims if c.key == TUNED)

    @property
    def opponent(self) -> Contender:
        return self.tuned.other

    @property
    def headline(self) -> Row:
        """Claim (a)'s verdict row: the study's best against the best single-task trial."""
        return self.tuned.headline

    @property
    def coincide(self) -> bool:
        """Whether claim (b)'s other side is claim (a)'s: the best single-task config is the winner's own
        ablation, so the two claims are one comparison, trained once."""
        return any(c.key != TUNED and c.other is self.opponent for c in self.claims)

    @property
    def shown_claims(self) -> tuple[Claim, ...]:
        """The claims with a comparison of their own (one where the two coincide)."""
        return (self.tuned,) if self.coincide else self.claims

    def verdicts(self) -> str:
        """The claims in one line, for logs and the model card, with their family-wise error: ``(a) against the
        best single-task trial of equal tuning, test acc_4way: better; (b) ...; ...``."""
        said = "; ".join(
            f"({tag(c, self)}) against the {c.other_name}, test {c.headline.metric}: {c.headline.verdict}"
            for c in self.shown_claims
        )
        return f"{said}. {self.family()}"

    def family(self) -> str:
        """The false "better" rate of what is printed, per claim and together."""
        if len(self.shown_claims) == 1:
            why = " (the best single-task config is the multitask trial's own ablation)" if self.coincide else ""
            return f"One comparison{why}: a false 'better' at most {ALPHA:.1%}."
        return (
            f"Each claim's false 'better' is at most {ALPHA:.1%}; the two together, at most {2 * ALPHA:.0%} "
            "(they answer different questions and are not adjusted for each other)."
        )

    def markdown(self) -> str:
        lines = self.header()
        for claim in self.shown_claims:
            lines += claim_lines(claim, self)
        if self.coincide:
            lines += [
                "",
                "### (b) " + QUESTIONS[ABLATION],
                "",
                f"The {self.tuned.other_name}, **{self.opponent.row.label}**, is the multitask trial's own ablation "
                "(the same config): claim (b) is claim (a), one comparison trained once, and the verdict above answers "
                "both.",
            ]
        lines += ["", self.family()]
        lines += self.published() + self.floor() + self.looks()
        if self.model_uri:
            lines += [
                "",
                f"Model: `{self.model_uri}` ({self.model_of}); "
                f"`python -m search.predict --model {self.model_uri} --input sentences.txt "
                "--out predictions.jsonl`.",
            ]
        return "\n".join(lines) + "\n"

    def header(self) -> list[str]:
        """Title, the two claims, and where the seeds come from."""
        w = self.winner
        trained = set(w.trained).union(*(c.other.trained for c in self.claims))
        earlier = sorted(set(self.seeds) - trained)
        return [
            f"## Final test evaluation: {len(self.seeds)} fresh seeds ({list_text(self.seeds)}), "
            "group-sequential paired t",
            "",
            f"The best completed multitask trial on dev is **{w.row.label}** "
            f"(dev {fmt(w.row.objective, w.row.objective_std)}). " + self.claims_text(),
            f"Every side was trained to full epochs by finalize on seeds {list_text(self.seeds)}, none of which "
            f"the search used (search seeds {list_text(self.search_seeds)})"
            + (f"; seeds {list_text(earlier)} come from an earlier finalize's completed runs." if earlier else "."),
        ]

    def claims_text(self) -> str:
        """What is tested, in words: two claims, or one comparison where they coincide."""
        if self.coincide:
            return (
                f"It is tested on test against the {self.tuned.other_name}, which is also that multitask trial "
                "without its auxiliary tasks (every other setting the same): claim (a), against the best single-task "
                "config of the search, and claim (b), whether the auxiliary tasks help, are one comparison here, "
                "trained once. No test score chose anything."
            )
        return (
            "Two claims are tested on test, each with its own verdict: (a) the multitask trial against the best "
            "single-task trial of the same search, a comparison of two configs that may differ in much more than the "
            "auxiliary tasks; (b) the multitask trial against itself with its auxiliary tasks removed and every other "
            "setting kept, the test of whether the auxiliary tasks help. No test score chose anything."
        )

    def published(self) -> list[str]:
        rows = self.tuned.rows
        lines = []
        for source, values in get_study(self.study).published.items():
            shown = [f"{r.metric}={values[r.metric]:.4f}" for r in rows if r.metric in values]
            if shown:
                lines.append(f"Published, {source} (one run, chosen on test): " + ", ".join(shown) + ".")
        return ["", *lines] if lines else []

    def floor(self) -> list[str]:
        scores = ", ".join(f"{k}={v:.4f}" for k, v in self.majority.items() if math.isfinite(v))
        if not scores:
            return []
        return [
            "",
            "Majority (a constant predictor, the floor any model must beat; each aspect's most frequent polarity, "
            f"counted on the test rows it scores): {scores}. A final seed whose model is degenerate (its "
            "predictions on the primary's dev rows are one answer per aspect, as the constant predictor's) or "
            "diverged failed: it is named, counted per side and left out of the paired test. A seed that learned a "
            "little is weak, not failed, and stays in. Where a failure was seen near the multitask config (its own "
            "runs, the other side's, or configs with its auxiliary tasks or schema at a like lr), 'better' also "
            "needs the clean gain to outweigh the multitask config's own failure rate, over its own seed runs, at "
            "its upper 97.5% bound.",
        ]

    def looks(self) -> list[str]:
        """Every look of the study so far: seeds, what each claim's look spent, and the earlier verdicts."""
        lines = ["", "| look | seeds | claim | pairs | boundary abs(t) | error spent (total) | verdict then |"]
        lines.append("|---|---|---|---|---|---|---|")
        for j, past in enumerate([*self.earlier, self.this_look()], 1):
            for key, said in past["claims"].items():
                lines.append(
                    f"| {j} | {past['seeds']} | ({'ab'[key != TUNED]}) | {said['pairs']} | {said['boundary']:.3f} "
                    f"| {said['spent']:.4f} ({said['total']:.4f}) | {said['verdict']} |"
                )
        return [
            "",
            "Seeds can be added later (`search.finalize --seeds N`): each look may spend only part of the "
            f"one-sided {ALPHA:g} error of a 'better' (alpha spending over the planned most seeds), so "
            "adding seeds and stopping at the first 'better' keeps the false 'better' rate at its level. "
            "Earlier looks stay recorded on the study's run:",
            *lines,
        ]

    def this_look(self) -> dict:
        """This look as the study's run records it (``search.answer.looks``)."""
        claims = {}
        for c in self.claims:
            look = c.headline.look
            claims[c.key] = {
                "pairs": c.headline.diff.n,
                "boundary": look.boundary if look else math.nan,
                "spent": look.spent if look else 0.0,
                "total": look.total if look else 0.0,
                "verdict": c.headline.verdict,
            }
        return {"seeds": len(self.seeds), "claims": claims}


def letter(claim: Claim) -> str:
    return "a" if claim.key == TUNED else "b"


def tag(claim: Claim, result: FinalResult) -> str:
    """The claim's letter, ``a, b`` where the two claims are one comparison."""
    return "a, b" if result.coincide and claim.key == TUNED else letter(claim)


def claim_lines(claim: Claim, result: FinalResult) -> list[str]:
    """One claim: its question, the two configs and every difference, the table, the verdict."""
    o, h = claim.other, claim.headline
    differs = "; ".join(claim.differences) or "nothing"
    dev = o.row.objective
    lines = [
        "",
        f"### ({letter(claim)}) {claim.question}",
        "",
        f"**{result.winner.row.label}** against the {claim.other_name}, **{o.row.label}**"
        + (f" (dev {fmt(dev, o.row.objective_std)})" if dev == dev else "")
        + f". They differ in: {differs}.",
        "",
        f"| test metric | multitask | {claim.other_name} | Δ multitask − other [interval, level] "
        "| failed (multitask / other) "
        "| verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in claim.rows:
        lines.append(
            f"| {r.metric} | {fmt(r.winner_mean, r.winner_std)} | {fmt(r.other_mean, r.other_std)} "
            f"| {signed(r.diff.mean)} [{signed(r.diff.low)}, {signed(r.diff.high)}, {level(r.diff.confidence)}] "
            f"| {len(r.collapsed[0])} / {len(r.collapsed[1])} | {r.verdict} |"
        )
    explored = len(claim.rows) - 1
    note = (
        [
            f"Interval levels: the verdict's metric, this look's repeated interval (the t interval at its spending "
            f"boundary); the {explored} exploratory metrics, {EXPLORATORY_LEVEL:.0%} together (Bonferroni: each at "
            f"{level(exploratory_level(explored))}), no verdict."
        ]
        if explored
        else []
    )
    return lines + [
        "",
        *note,
        verdict_sentence(claim, len(result.seeds)),
        collapse_sentence(h, len(result.seeds)) + risk_sentence(claim),
    ]


def risk_sentence(claim: Claim) -> str:
    """What the study's failed runs let the verdict say about the multitask config's own failure rate."""
    risk = claim.risk
    (w_failed, w_runs), (failed, runs), (k_failed, k_runs) = risk.winner, risk.study, risk.kin
    if not w_runs:
        return ""
    bound = rate_bound(w_failed, w_runs)
    if risk.near:
        (g_failed, g_runs), at_most = risk.group, risk.bound
        if risk.alike[0] and not w_failed:
            like = f"; {risk.alike[0]} runs failed in configs made only of its features, so its own runs bound it"
        elif risk.unexplained and not w_failed:
            like = "; the study's failed configs have no auxiliary task or schema in common, so its own runs bound it"
        elif g_runs > w_runs and not w_failed:
            like = f"; with the configs sharing an auxiliary task or its schema at a like lr, {g_failed} of {g_runs}"
        else:
            like = ""
        return (
            f" {failed} of the study's {runs} seed runs failed, {k_failed} of {k_runs} among configs kin to the "
            f"multitask one; the multitask config failed on {w_failed} of its own {w_runs}{like}: a failure rate of "
            f"up to {at_most:.0%} (97.5% bound), which a 'better' must outweigh."
        )
    elsewhere = (
        f"{failed} of the study's {runs} seed runs failed, none of its own, the other side's or its kin's "
        f"({k_runs} runs)"
        if failed
        else f"No seed run of the study failed ({runs}, search and final)"
    )
    return (
        f" {elsewhere}: the verdict assumes a config prone to fail would show it there; the multitask config's own "
        f"{w_runs} runs alone rule out only a failure rate above {bound:.0%}."
    )


def level(confidence: float) -> str:
    """An interval's two-sided level: ``95.8%``."""
    return "–" if confidence != confidence else f"{100 * confidence:.1f}%"


def verdict_sentence(claim: Claim, k: int) -> str:
    """The verdict in words, with what this look could detect."""
    h = claim.headline
    where = f"**Verdict ({letter(claim)}) on test {h.metric}, over {h.diff.n} paired seeds: {h.verdict}**"
    interval = f"[{signed(h.diff.low)}, {signed(h.diff.high)}]"
    numbers = f"(Δ {signed(h.diff.mean)}, {level(h.diff.confidence)} repeated interval {interval}"
    numbers += f", {h.look.total:.4f} of the {ALPHA:g} error spent)" if h.look else ")"
    if not math.isfinite(h.detectable):
        return f"{where} {numbers}."
    spread = (
        f"from {h.diff.n} seeds and the spread's 70% upper bound "
        f"{pp(spread_bound(h.diff.n, h.diff.std), signed_=False)}; observed {pp(h.diff.std, signed_=False)}"
    )
    margin = (
        "the gain this look finds 80% of the time averaged over studies"
        if h.margin == h.detectable
        else "the margin asked for (--margin)"
    )
    if h.verdict == stats.SAME:
        return (
            f"{where} {numbers}: a gain above {pp(h.diff.high)} is ruled out, below the gain worth having, "
            f"{pp(h.margin)} ({margin}, {spread})."
        )
    if h.verdict == stats.UNDECIDED:
        more = (
            f"about {h.needed} final seeds would decide it at the spread seen (`python -m search.finalize --seeds "
            f"{h.needed}`: a further look under this study's spending plan)"
            if h.needed
            else "this study's spending plan has too few seeds left to decide it at the spread seen"
        )
        return (
            f"{where} {numbers}: neither no gain nor a gain of {pp(h.margin)} ({margin}, {spread}) is ruled out; "
            f"{more}."
        )
    return f"{where} {numbers}. This look finds a gain of {pp(h.detectable)} 80% of the time ({spread})."


def collapse_sentence(h: Row, k: int) -> str:
    w, o = h.collapsed
    if not w and not o:
        return f"No final seed failed on either side (0 of {k})."
    sides = (("multitask", w), ("other", o))
    named = ", ".join(f"{side} {len(s)} of {k} (seeds {list_text(list(s))})" for side, s in sides if s)
    return f"Failed seeds (a degenerate model, or diverged): {named}; left out of the paired test."


def pp(x: float, signed_: bool = True) -> str:
    """Accuracy units as percentage points: ``+1.2 pp``."""
    return "–" if x != x else (f"{100 * x:+.1f} pp" if signed_ else f"{100 * x:.1f} pp")


def final_frame(result: FinalResult) -> pd.DataFrame:
    """``final.csv``: one row per claim and primary test metric, then the published runs and the floor."""
    rows = [
        {
            "source": f"final ({tag(c, result)}) {c.key}",
            **r.to_dict(),
            "winner": result.winner.row.label,
            "other": c.other.row.label,
            "differences": "; ".join(c.differences),
            "seeds": list_text(result.seeds),
        }
        for c in result.shown_claims
        for r in c.rows
    ]
    for source, values in get_study(result.study).published.items():
        rows += [
            {"source": f"published: {source}", "metric": r.metric, "winner_mean": values[r.metric]}
            for r in result.tuned.rows
            if r.metric in values
        ]
    rows += [
        {"source": "majority (constant predictor)", "metric": k, "winner_mean": v} for k, v in result.majority.items()
    ]
    return pd.DataFrame(rows)


__all__ = ["EXPLORATORY", "Contender", "FinalResult", "final_frame"]
