"""The two claims of a study's answer, each tested for what it is, over the same fresh seeds.

- ``tuned`` (claim a): is the study's best multitask config better than the best plain fine-tuning
  the same search found (the best single-task trial)? The two configs differ in whatever the search
  chose for each (lr, warm-up, schema, ...): :func:`differences` names every one.
- ``ablation`` (claim b): do the auxiliary tasks help *this* config? The winner against itself with
  its auxiliary tasks removed and every other setting kept (lr, warm-up, epochs, the strategies that
  still apply); the only difference is the auxiliary tasks.

Each comparison is paired over the final seeds (:func:`decide`): seeds that failed (the run is
degenerate: its trainer found its predictions constant, ``trainables.degenerate``, or it diverged) are
named and counted per side and leave the paired test, which is a group-sequential t test
(:mod:`search.answer.sequential`) on the remaining pairs. A run that learned a little is weak, not
failed: it stays in the test. Failure risk is a property of each config, not of a side: where a failure
was seen near the winner (its own runs, the other side's, or configs kin to it), "better" also needs the
clean gain to survive the winner config's *own* failure rate at its upper 97.5% bound, counted over its
own seed runs (:func:`survives_collapses`). The winner is chosen on dev among many configs, so a
failure-prone config that did not fail on its search seeds is the likeliest winner: a side's pooled
rate, diluted by its safe configs, would not see it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from typing import Any

from scipy.stats import t as t_dist

from search.answer import stats
from search.answer.power import seeds_to_decide, spread_bound, stated_gain
from search.answer.sequential import Design, Look, boundaries, schedule
from search.tracking.trial_record import TrialRecord
from spaces.canonical import canonical
from trainables.config import TrainConfig

TUNED, ABLATION = "tuned", "ablation"
QUESTIONS = {
    TUNED: "Is the study's best multitask config better than the best plain fine-tuning the search found?",
    ABLATION: "Do the auxiliary tasks help this config? (the multitask config against itself without them, all else "
    "kept)",
}
SIDE_NAMES = {TUNED: "best single-task trial of equal tuning", ABLATION: "multitask config without its auxiliary tasks"}
# claim (a)'s other side where the search tuned no single-task config
UNTUNED = "untuned baseline at the study's fixed settings"
EXPLORATORY_LEVEL = 0.95  # the exploratory metrics' intervals, together over a claim's (Bonferroni)


def exploratory_level(explored: int) -> float:
    """Each exploratory metric's interval level: :data:`EXPLORATORY_LEVEL` together over ``explored`` of them."""
    return 1 - (1 - EXPLORATORY_LEVEL) / max(1, explored)


EXPLORATORY = "exploratory: no verdict"
NO_ERROR_LEFT = "no verdict: this look is beyond the planned most seeds, no error is left to spend"
COLLAPSED_MORE = (
    "no verdict: better on the seeds that trained, but seeds of this study failed where they speak of the multitask "
    "config, and its runs and those of the configs like it are too few to rule out failures that undo the gain"
)
RISK_CONFIDENCE = 0.975  # one-sided bound on a side's collapse rate (Clopper-Pearson)
VOLATILE = ("seed", "data_dir", "device", "evaluate_test", "check_every", "compile", "prefetch")


# -- the configs ------------------------------------------------------------------
def ablation_config(winner: TrainConfig) -> TrainConfig:
    """The winner with its auxiliary tasks removed and every other setting kept (canonical: a schema
    or strategy that cannot act on one task is written as off)."""
    weights = tuple((t, w) for t, w in winner.sampling.weights if t == winner.primary)
    return canonical(winner.with_(tasks=(winner.primary,), sampling=replace(winner.sampling, weights=weights)))


def flat(config: TrainConfig) -> dict[str, Any]:
    """A canonical config's training fields, nested ones as ``optim.gradients``."""
    out: dict[str, Any] = {}
    for key, value in asdict(canonical(config)).items():
        if key in VOLATILE:
            continue
        if isinstance(value, dict):
            out |= {f"{key}.{k}": v for k, v in value.items()}
        else:
            out[key] = value
    return out


MULTITASK_ONLY = ("sampling.",)  # settings of a canonical config that act only beside auxiliary tasks


@functools.lru_cache(maxsize=256)  # calibration compares the same configs thousands of times
def differences(a: TrainConfig, b: TrainConfig) -> tuple[str, ...]:
    """Every training setting in which ``a`` and ``b`` differ: ``lr 1.2e-05 vs 2e-05``; a setting that does not act
    on a single-task config (how tasks are sampled) shows as ``–`` there: ``sampling.schema sqrt vs –``."""
    fa, fb = flat(a), flat(b)

    def shown(config: TrainConfig, key: str, value: Any) -> str:
        return "–" if len(config.tasks) == 1 and key.startswith(MULTITASK_ONLY) else show(value)

    return tuple(f"{k} {shown(a, k, fa.get(k))} vs {shown(b, k, fb.get(k))}" for k in fa | fb if fa.get(k) != fb.get(k))


def show(value: Any) -> str:
    if isinstance(value, tuple):
        return "+".join(show(v) for v in value) if value else "()"
    if is_dataclass(value):
        return str(asdict(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- failed seeds -------------------------------------------------------------------
@dataclass(frozen=True)
class Risk:
    """Failed seed runs, each ``(failed, runs)``: of the winner's config and of the other side's config (their
    own runs, the search's and the final ones), of the whole study (every seed run it made), and of the configs
    kin to the winner's (``search.answer.contenders.kin``: the same auxiliary tasks or schema, at a like lr)."""

    winner: tuple[int, int] = (0, 0)
    other: tuple[int, int] = (0, 0)
    study: tuple[int, int] = (0, 0)
    kin: tuple[int, int] = (0, 0)
    # the winner's runs pooled with those of every config at a like lr sharing one of its auxiliary tasks or its
    # schema: the one of these groups that failed most often (search.answer.contenders.search_risk)
    group: tuple[int, int] = (0, 0)
    # the runs of every other multitask config whose features are all the winner's (at any lr): where one of them
    # failed, no feature the winner lacks explains it, and the winner is judged by its own runs
    alike: tuple[int, int] = (0, 0)
    # runs of the study failed and the failed configs have no auxiliary task or schema in common (a failed single-task
    # run has none): proneness may then follow nothing a config is made of, and configs like the winner cannot speak
    # for it
    unexplained: bool = False

    def plus(self, winner: tuple[int, int], other: tuple[int, int]) -> Risk:
        """With the final seeds of both sides added (to their configs, the winner's group and the study)."""
        return Risk(
            (self.winner[0] + winner[0], self.winner[1] + winner[1]),
            (self.other[0] + other[0], self.other[1] + other[1]),
            (self.study[0] + winner[0] + other[0], self.study[1] + winner[1] + other[1]),
            self.kin,
            (self.group[0] + winner[0], self.group[1] + winner[1]) if self.group[1] else (0, 0),
            self.alike,
            self.unexplained,
        )

    @property
    def bound(self) -> float:
        """The winner's failure rate at most (97.5% bounds): its group's where the group's failures are told from
        it: a config is as prone to fail as the configs like it, and its own few clean runs alone bound nothing (0
        of 7 leaves 41%). Its own runs' where they failed, where a config made only of its features failed (no
        feature it lacks explains that failure: a config chosen on dev is the likeliest of all to be a prone one
        that was lucky, and clean neighbours would dilute it), where nothing explains the study's failures, or without
        a group."""
        if self.winner[0] or self.alike[0] or self.unexplained or self.group[1] <= self.winner[1]:
            return rate_bound(*self.winner)
        return rate_bound(*self.group)

    @property
    def near(self) -> bool:
        """Whether a failure was seen where it says something of the winner: its own runs, the other side's, its
        kin's, or those of a config alike to it (a single-task one at a like lr among them), or anywhere in the study
        where the failed configs have no feature in common (:attr:`unexplained`). Other failures of unlike configs
        elsewhere do not make the winner suspect."""
        return self.winner[0] > 0 or self.other[0] > 0 or self.kin[0] > 0 or self.alike[0] > 0 or self.unexplained


def rate_bound(collapsed: int, runs: int, confidence: float = RISK_CONFIDENCE) -> float:
    """Clopper-Pearson upper bound of a collapse rate (1 without runs)."""
    from scipy.stats import beta

    return 1.0 if runs <= 0 or collapsed >= runs else float(beta.ppf(confidence, collapsed + 1, runs - collapsed))


def survives_collapses(low: float, risk: Risk, loss: float) -> bool:
    """Whether a clean gain whose interval starts at ``low`` stays a gain once failures count:
    ``low * (1 - p_w) - (p_w - p_o) * loss > 0``, ``p_w`` the winner config's own failure rate at its
    upper bound, ``p_o`` the other config's observed rate, ``loss`` what a failure costs (the other
    side's clean mean above the majority rate), wherever a failure was seen near the winner (:attr:`Risk.near`).
    Elsewhere ``low > 0``: the assumption left is that a config prone to fail shows it in its own runs, the other
    side's or its kin's."""
    if not risk.near:
        return low > 0
    p_w = risk.bound
    p_o = risk.other[0] / risk.other[1] if risk.other[1] else 0.0
    return low * (1 - p_w) - max(0.0, p_w - p_o) * max(0.0, loss) > 0


# -- one metric of one claim ------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One primary test metric of one claim: both sides over the final seeds and what they say."""

    metric: str
    winner_mean: float
    winner_std: float
    other_mean: float
    other_std: float
    diff: stats.PairedDifference  # over the pairs where neither side collapsed; the look's interval
    verdict: str
    detectable: float  # the gain this look finds 80% of the time, averaged over studies (search.answer.power)
    collapsed: tuple[tuple[int, ...], tuple[int, ...]]  # final seeds that collapsed: winner's, other's
    looks: tuple[Look, ...] = ()  # every look of the study so far, this one last
    margin: float = math.nan  # the gain worth having a "no significant difference" rules out
    needed: int | None = None  # undecided: the final seeds whose look would decide it (None: none in the plan)

    @property
    def look(self) -> Look | None:
        return self.looks[-1] if self.looks else None

    def to_dict(self) -> dict[str, Any]:
        """The CSV's and MLflow's flat form."""
        d = self.diff
        return {
            "metric": self.metric,
            "winner_mean": self.winner_mean,
            "winner_std": self.winner_std,
            "other_mean": self.other_mean,
            "other_std": self.other_std,
            "diff_mean": d.mean,
            "diff_std": d.std,
            "diff_low": d.low,
            "diff_high": d.high,
            "n": d.n,
            "method": d.method,
            "verdict": self.verdict,
            "detectable_gain": self.detectable,
            "margin": self.margin,
            "seeds_to_decide": math.nan if self.needed is None else self.needed,
            "winner_collapsed": len(self.collapsed[0]),
            "other_collapsed": len(self.collapsed[1]),
            "spent": self.look.total if self.look else math.nan,
        }


def collapsed_seeds(side: Contender, metric: str, seeds: Sequence[int], floor: float) -> tuple[int, ...]:
    """Seeds whose run failed: degenerate as its trainer flagged it (``trainables.degenerate``), or, where it
    recorded no flag, a ``metric`` score that is not finite or at or below ``floor`` (the majority rate)."""
    out = []
    for s in seeds:
        v = side.test.get(metric, {}).get(s, math.nan)
        flagged = side.degenerate.get(s)
        fallback = math.isfinite(floor) and v <= floor + 1e-9
        if not math.isfinite(v) or (flagged if flagged is not None else fallback):
            out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class Decision:
    """One look's paired comparison (:func:`decide`)."""

    diff: stats.PairedDifference  # the look's repeated interval
    verdict: str
    detectable: float  # the gain this look finds 80% of the time (search.answer.power.stated_gain)
    looks: tuple[Look, ...]
    margin: float  # the gain worth having that "no significant difference" rules out
    needed: int | None = None  # an undecided verdict: the final seeds whose look would decide it (None: the plan's
    # most seeds would not)


def decide(
    winner: Sequence[float],
    other: Sequence[float],
    mode: str,
    earlier: Sequence[int] = (),
    design: Design | None = None,
    margin: float | None = None,
) -> Decision:
    """The paired comparison of one look: its interval, verdict, detectable gain and the looks so far.
    ``earlier``: the pair counts of the earlier looks; ``margin``: the gain worth having (None: this look's
    detectable gain), which "no significant difference" must rule out, else the verdict is undecided."""
    d = stats.paired_difference(winner, other)
    design = design or Design(10)
    path = schedule([*earlier, d.n])
    looks = boundaries(path, design) if path and path[-1] == d.n else ()
    if not looks or math.isnan(d.std):
        worth = math.nan if margin is None else margin
        return Decision(d, stats.verdict(d, mode, worth), math.nan, looks, worth)
    look = looks[-1]
    half = look.boundary * d.std / math.sqrt(d.n)
    level = 1 - 2 * float(t_dist.sf(look.boundary, d.n - 1)) if math.isfinite(look.boundary) else 1.0
    d = replace(d, low=d.mean - half, high=d.mean + half, confidence=level)  # the repeated interval of this look
    detectable = stated_gain(d.n, d.std, look.boundary)
    worth = detectable if margin is None else margin
    said = stats.verdict(d, mode, worth)
    if said in (stats.BETTER, stats.WORSE, stats.SAME, stats.UNDECIDED) and math.isinf(look.boundary):
        said = NO_ERROR_LEFT
    needed = None
    if said == stats.UNDECIDED:
        gain = d.mean if mode == "max" else -d.mean
        needed = seeds_to_decide(gain, spread_bound(d.n, d.std), worth, path, design)
    return Decision(d, said, detectable, looks, worth, needed)


# -- one claim ----------------------------------------------------------------------
@dataclass
class Contender:
    """One side of a final comparison: a config and its scores per final seed."""

    role: str  # "winner" (best multitask trial), "opponent" (best single-task trial) or "ablation"
    row: TrialRecord  # the trial's record in the trial table (the ablation: a record made for it)
    config: TrainConfig
    dev: dict[int, float] = field(default_factory=dict)  # seed -> dev objective
    test: dict[str, dict[int, float]] = field(default_factory=dict)  # metric -> seed -> test score
    checkpoints: dict[int, str] = field(default_factory=dict)  # seed -> checkpoint file (local or URI)
    trained: list[int] = field(default_factory=list)  # seeds this finalize trained (the rest: earlier finalizes)
    degenerate: dict[int, bool] = field(default_factory=dict)  # seed -> its predictions constant (the trainer's flag)


@dataclass(frozen=True)
class Sides:
    """A finalize's contenders by role: the winner (best multitask trial), its opponent (best single-task trial)
    and the winner's ablation (None where the opponent is it: the same config)."""

    winner: Contender
    opponent: Contender
    ablation: Contender | None = None

    @property
    def all(self) -> list[Contender]:
        return [c for c in (self.winner, self.opponent, self.ablation) if c is not None]

    def other(self, key: str) -> Contender:
        """Claim ``key``'s other side: the opponent (TUNED), or the ablation (ABLATION; the opponent where it is it)."""
        return (self.ablation or self.opponent) if key == ABLATION else self.opponent


@dataclass(frozen=True)
class Claim:
    """One claim's comparison: the winner against ``other`` on every primary test metric, one verdict."""

    key: str  # TUNED or ABLATION
    other: Contender
    rows: tuple[Row, ...]
    headline: Row  # the study's metric: the one verdict of this claim
    differences: tuple[str, ...]  # every setting in which the two configs differ
    other_name: str = ""  # what the other side is, in words (default: SIDE_NAMES)
    risk: Risk = Risk()  # failed seed runs of both configs and the study, final seeds included

    def __post_init__(self) -> None:
        if not self.other_name:
            object.__setattr__(self, "other_name", SIDE_NAMES[self.key])

    @property
    def question(self) -> str:
        return QUESTIONS[self.key]


def headline_of(metrics: Sequence[str], objective_metric: str | None, fallback: str | None) -> str:
    """The metric with the verdict: the objective's (a primary dev metric), else the study's, else the first."""
    wanted = objective_metric or fallback
    return wanted if wanted in metrics else metrics[0]


def compare(
    key: str,
    winner: Contender,
    other: Contender,
    *,
    metrics: Sequence[str],
    seeds: Sequence[int],
    mode: str,
    objective_metric: str | None,
    fallback: str | None = None,
    floor: dict[str, float] | None = None,
    earlier: Sequence[int] = (),
    design: Design | None = None,
    risk: Risk = Risk(),
    other_name: str = "",
    margin: float | None = None,
) -> Claim:
    """Per metric the paired comparison over ``seeds`` (collapsed seeds left out, named); one verdict,
    on the headline metric. ``floor``: the majority rate per metric (a seed at or below it collapsed);
    ``earlier``: this claim's pair counts at the study's earlier looks; ``design``: its spending plan;
    ``risk``: the failed runs of both configs and of the study in the search (the final seeds' are added here);
    ``other_name``: the other side in words; ``margin``: the gain worth having (:func:`decide`). The exploratory
    metrics' intervals are Bonferroni-adjusted over the claim's exploratory metrics (:data:`EXPLORATORY_LEVEL`
    family-wise) and carry no verdict."""
    top = headline_of(metrics, objective_metric, fallback)
    limit = (floor or {}).get(top, math.nan)
    if mode == "min":
        limit = math.nan  # a floor is a score to stay above: it means nothing for a minimised metric
    gone = tuple(collapsed_seeds(side, top, seeds, limit) for side in (winner, other))
    clean = [s for s in seeds if s not in gone[0] and s not in gone[1]]
    risk = risk.plus((len(gone[0]), len(seeds)), (len(gone[1]), len(seeds)))
    clean_other = stats.mean_std([other.test.get(top, {}).get(s, math.nan) for s in clean])[0]
    loss = clean_other - limit if math.isfinite(limit) else 0.0
    rows = []
    for m in metrics:
        w = [winner.test.get(m, {}).get(s, math.nan) for s in clean]
        o = [other.test.get(m, {}).get(s, math.nan) for s in clean]
        wm, ws, _ = stats.mean_std([winner.test.get(m, {}).get(s, math.nan) for s in seeds])
        om, os_, _ = stats.mean_std([other.test.get(m, {}).get(s, math.nan) for s in seeds])
        if m != top:
            diff = stats.paired_difference(w, o, exploratory_level(len(metrics) - 1))
            rows.append(Row(m, wm, ws, om, os_, diff, EXPLORATORY, math.nan, gone, ()))
            continue
        direction = mode if m == objective_metric else "max"  # only the objective may be minimised
        found = decide(w, o, direction, earlier, design, margin)
        said = found.verdict
        if said == stats.BETTER and direction == "max" and not survives_collapses(found.diff.low, risk, loss):
            said = COLLAPSED_MORE
        rows.append(
            Row(m, wm, ws, om, os_, found.diff, said, found.detectable, gone, found.looks, found.margin, found.needed)
        )
    headline = next(r for r in rows if r.metric == top)
    return Claim(key, other, tuple(rows), headline, differences(winner.config, other.config), other_name, risk)
