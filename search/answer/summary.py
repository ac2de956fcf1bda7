"""The last lines a study prints: its answer in a sentence per verdict, the two configs compared, and
where everything it wrote is (the report, MLflow, the registered model, Optuna, Tune).

:func:`summary` is a pure function of explicit inputs; :func:`gather` collects them at the end of
``python -m search.run`` from what the study and its final comparison returned.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from search.answer.claims import TUNED
from search.answer.stats import SAME, UNDECIDED
from search.infra.quiet import log_path
from search.tracking.runs import client
from search.tracking.view import final_view_url, trial_view_url
from trainables.cli import mask_credentials

if TYPE_CHECKING:
    from search.study.runner import StudyOutcome

logger = logging.getLogger(__name__)

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` (and `make ui`) serves a local store


@dataclass(frozen=True)
class Side:
    """One config of the final comparison, called by what it is (``multitask`` / ``single-task``)."""

    kind: str
    label: str
    dev_mean: float
    dev_std: float | None = None


@dataclass(frozen=True)
class Verdict:
    """One verdict: ``first`` against ``second`` on the test ``metric`` over ``seeds`` fresh seeds."""

    metric: str
    verdict: str
    diff: float
    low: float
    high: float
    seeds: int
    first: str = "multitask"
    second: str = "single-task"
    level: float = 0.95  # the interval's two-sided level (a look's repeated interval: its spending boundary's)
    fresh: int = 0  # the fresh seeds trained (0: ``seeds``); ``seeds`` are those neither side failed on
    failed: tuple[int, int] = (0, 0)  # fresh seeds that failed: ``first``'s, ``second``'s
    margin: float = math.nan  # the gain worth having: "no significant difference" rules it out, "undecided" not
    needed: int | None = None  # undecided: the final seeds whose look would decide it

    def line(self) -> str:
        """``multitask vs single-task on test acc_4way, 3 fresh seeds (2 failed ...): verdict (Δ ..., interval)``."""
        fresh = self.fresh or self.seeds
        text = f"{self.first} vs {self.second} on test {self.metric}, {fresh} fresh seed{'s' * (fresh != 1)}"
        if any(self.failed):
            text += (
                f" ({self.failed[0]} failed on the {self.first} side, {self.failed[1]} on the other; "
                f"compared on the {self.seeds} neither failed on)"
            )
        if self.diff != self.diff:  # no seed left on both sides (or none trained): no Δ to print
            left = "no seed left to compare" if self.seeds == 0 else f"{self.seeds} seeds gave no difference"
            return f"{text}: {self.verdict} (no difference to show: {left})"
        if self.low == self.low and self.high == self.high:
            interval = f"{100 * self.level:.1f}% interval of this look [{self.low:+.4f}, {self.high:+.4f}]"
        else:
            interval = f"no interval from {self.seeds} seed{'s' * (self.seeds != 1)}"
        said = f"{text}: {self.verdict} (Δ {self.diff:+.4f}, {interval})"
        if self.verdict == SAME and self.margin == self.margin:
            said += f"; a gain of {self.margin:+.4f} is ruled out"
        elif self.verdict == UNDECIDED and self.margin == self.margin:
            said += f"; neither 0 nor a gain of {self.margin:+.4f} is ruled out: " + (
                f"about {self.needed} final seeds would decide it (search.finalize --seeds {self.needed})"
                if self.needed
                else "the spending plan has too few seeds left to decide it"
            )
        return said


@dataclass(frozen=True)
class Places:
    """Where a study's outputs are."""

    tracking_uri: str
    optuna_storage: str
    optuna_study: str
    tune_path: str
    report: Path | None = None
    experiment_id: str | None = None
    run_name: str | None = None
    model_uri: str | None = None
    log: Path | None = None  # the study's log file: library warnings, failed trials' tracebacks
    finalized: bool = False  # finalize trained fresh seeds: their runs have a view of their own


def summary(study: str, verdicts: list[Verdict], sides: list[Side], places: Places, note: str = "") -> str:
    """The closing block, e.g.::

    == absa: the answer ==
    multitask vs single-task on test acc_4way, 5 fresh seeds: no significant difference (Δ +0.0086,
    95.8% interval of this look ...)
    multitask:   t01 pos+sentihood sequential (dev 0.8648 ± 0.0101)
    ...
    """
    lines = [f"== {study}: the answer =="]
    if not verdicts:
        lines.append(f"no verdict: {note or 'no final comparison ran (--no-finalize, or a side had no trial)'}")
    lines += [v.line() for v in verdicts]
    width = max((len(s.kind) for s in sides), default=0) + 1
    for s in sides:
        spread = f" ± {s.dev_std:.4f}" if s.dev_std is not None and s.dev_std == s.dev_std else ""
        dev = f"dev {s.dev_mean:.4f}{spread}" if s.dev_mean == s.dev_mean else "trained by finalize only"
        lines.append(f"{s.kind + ':':<{width}} {s.label} ({dev})")
    lines += ["", "where everything is:"] + [f"  {k:<9} {v}" for k, v in where(places)]
    return "\n".join(lines)


def where(places: Places) -> list[tuple[str, str]]:
    """``(what, where)`` rows of the closing block."""
    uri = mask_credentials(places.tracking_uri)
    remote = uri.startswith(("http://", "https://"))
    rows = [("report", str(places.report) if places.report else "none (--no-report)")]
    rows.append(("MLflow", f"open {uri}" if remote else f"mlflow ui --backend-store-uri {uri}"))
    if places.experiment_id is not None and places.run_name:
        server = uri.rstrip("/") if remote else LOCAL_UI
        rows.append(("trials", f"{server}/{trial_view_url(places.experiment_id, places.run_name)}"))
        if places.finalized:
            rows.append(("final", f"{server}/{final_view_url(places.experiment_id, places.run_name)}"))
    rows.append(("model", places.model_uri or "none registered"))
    rows.append(("Optuna", f"{mask_credentials(places.optuna_storage)} (study {places.optuna_study})"))
    rows.append(("Tune", places.tune_path))
    if places.log is not None:
        rows.append(("log", str(places.log)))
    return rows


def verdicts_of(final: Any) -> tuple[list[Verdict], list[Side]]:
    """One verdict per claim of a :class:`search.answer.comparison.FinalResult` (or none), and the configs
    compared: the multitask winner, the single-task opponent and, where trained, the winner's ablation."""
    if final is None:
        return [], []
    verdicts = []
    sides = [
        Side("multitask", final.winner.row.label, float(final.winner.row.objective), final.winner.row.objective_std)
    ]
    for claim in final.shown_claims:
        h = claim.headline
        second = "single-task" if claim.key == TUNED else "its ablation"
        if claim.key == TUNED and final.coincide:
            second = "single-task (its own ablation: claims a and b are one comparison)"
        verdicts.append(
            Verdict(
                h.metric,
                h.verdict,
                h.diff.mean,
                h.diff.low,
                h.diff.high,
                h.diff.n,
                "multitask",
                second,
                h.diff.confidence,
                fresh=len(final.seeds),
                failed=(len(h.collapsed[0]), len(h.collapsed[1])),
                margin=h.margin,
                needed=h.needed,
            )
        )
        if claim.key == TUNED or claim.other is not final.opponent:
            row = claim.other.row
            kind = "single-task" if claim.key == TUNED else "ablation"
            sides.append(Side(kind, row.label, float(row.objective), float(row.objective_std)))
    return verdicts, sides


def gather(study: StudyOutcome, final: Any, report: Path | None, why: str = "") -> str:
    """The closing block of ``python -m search.run``: ``study`` what the runner returned, ``final`` the
    FinalResult or None (``why``: the reason), ``report`` the report's path or None."""
    verdicts, sides = verdicts_of(final)
    stores = study.plan.stores
    places = Places(
        tracking_uri=stores.tracking_uri,
        optuna_storage=stores.optuna_storage,
        optuna_study=study.name,
        tune_path=str(study.path),
        report=report,
        experiment_id=experiment_id(stores.tracking_uri, study.plan.study.name),
        run_name=study.name,
        model_uri=getattr(final, "model_uri", None),
        log=log_path(),
        finalized=final is not None,
    )
    return summary(study.plan.study.name, verdicts, sides, places, note=why)


def experiment_id(tracking_uri: str, experiment: str) -> str | None:
    """The study's MLflow experiment id, for the trials link; None where the store cannot say."""
    try:
        found = client(tracking_uri).get_experiment_by_name(experiment)
    except (ConnectionError, OSError) as exc:
        logger.debug("no experiment id for the summary: %s", exc)
        return None
    return found.experiment_id if found else None
