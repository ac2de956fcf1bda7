"""Cohort halving's rungs as a plain object: what was recorded and decided, who waits, and the decisions the
rule (:mod:`search.study.cohort_rule`) takes once a rung's cohort is complete. No Ray: the Tune adapter
(:class:`search.study.halving.CohortHalving`) feeds it results and carries out what it answers (pause, stop,
resume), and the simulator drives that adapter as Tune does.

Its state (:class:`CohortState`) is versioned plain data, saved with the experiment: ``to_state()`` gives
plain dicts, lists and numbers, ``CohortState.from_state`` reads them back; a state of another version (or
none) is refused in one line naming it (``--resume`` refuses another study format before: ``STUDY_FORMAT``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from search.study.cohort_rule import Cohort, CohortRule

STATE_VERSION = 1
CONTINUE, PAUSE, STOP = "continue", "pause", "stop"


SETS = ("ended", "waiting", "resume", "doomed", "failed", "baselines")


class CohortStateError(ValueError):
    """A saved cohort state this code cannot read."""


@dataclass
class CohortState:
    """What cohort halving recorded, decided and waits for; trial ids are Tune's."""

    members: list[str] = field(default_factory=list)  # the cohort's trial ids, in order of arrival
    records: dict[float, dict[str, float]] = field(default_factory=dict)  # rung -> trial -> value (max sign)
    exposure: dict[float, dict[str, float]] = field(default_factory=dict)  # rung -> trial -> passes over primary
    going_on: dict[float, set[str]] = field(default_factory=dict)  # rung -> promoted past it (once decided)
    ended: set[str] = field(default_factory=set)  # cohort trials stopped, errored or removed
    waiting: set[str] = field(default_factory=set)  # paused at a rung until its decision
    resume: set[str] = field(default_factory=set)  # paused and promoted: run before new ones
    doomed: set[str] = field(default_factory=set)  # paused and stopped by a decision, until Tune stops them
    failed: set[str] = field(default_factory=set)  # let on once for a start at or below the floor
    families: dict[str, str] = field(default_factory=dict)  # trial -> schema family
    baselines: set[str] = field(default_factory=set)
    sides: dict[str, str | None] = field(default_factory=dict)  # trial -> side of the final comparison
    # rung -> trials that passed it unseen (a resume from a state saved before their result there): they go on
    unseen: dict[float, set[str]] = field(default_factory=dict)
    # rung -> trials Tune saved as stopped there by a decision this state did not see: ranked when it is taken again
    stopped_at: dict[float, set[str]] = field(default_factory=dict)

    def to_state(self) -> dict[str, Any]:
        """Plain data with the version (sets as sorted lists), what :meth:`from_state` reads."""
        return {
            "version": STATE_VERSION,
            "members": list(self.members),
            "records": {rung: dict(v) for rung, v in self.records.items()},
            "exposure": {rung: dict(v) for rung, v in self.exposure.items()},
            "going_on": {rung: sorted(v) for rung, v in self.going_on.items()},
            "unseen": {rung: sorted(v) for rung, v in self.unseen.items()},
            "stopped_at": {rung: sorted(v) for rung, v in self.stopped_at.items()},
            **{name: sorted(getattr(self, name)) for name in SETS},
            "families": dict(self.families),
            "sides": dict(self.sides),
        }

    @classmethod
    def from_state(cls, saved: dict[str, Any]) -> CohortState:
        """The state :meth:`to_state` wrote, its lists as sets again."""
        if saved.get("version") != STATE_VERSION:
            raise CohortStateError(
                f"cohort halving state version {saved.get('version')!r}: this code reads version {STATE_VERSION} "
                "(a study saved by another version of mtl-search; resume it with that version)"
            )
        names = {f.name for f in fields(cls)}
        state = cls(**{k: v for k, v in saved.items() if k in names})
        state.members = list(state.members)
        state.records = {float(r): dict(v) for r, v in state.records.items()}
        state.exposure = {float(r): dict(v) for r, v in state.exposure.items()}
        state.going_on = {float(r): set(v) for r, v in state.going_on.items()}
        state.unseen = {float(r): set(v) for r, v in state.unseen.items()}
        state.stopped_at = {float(r): set(v) for r, v in state.stopped_at.items()}
        for name in SETS:
            setattr(state, name, set(getattr(state, name)))
        state.families, state.sides = dict(state.families), dict(state.sides)
        return state


@dataclass(frozen=True)
class CohortSettings:
    """``cohort``: how many first trials decide together; ``hedged_at``: their positions hedged past every
    rung but the last; the rest is the rule's (:class:`search.study.cohort_rule.CohortRule`)."""

    rule: CohortRule
    cohort: int
    hedged_at: frozenset[int] = frozenset()


class CohortRungs:
    """The rungs of one study's cohort: results in, decisions out (the module docstring)."""

    def __init__(self, settings: CohortSettings, state: CohortState | None = None) -> None:
        self.settings = settings
        self.state = state or CohortState()

    @property
    def rule(self) -> CohortRule:
        return self.settings.rule

    @property
    def rungs(self) -> tuple[float, ...]:
        """The screen point (where there is one), then every epoch from the grace period below the last."""
        rule = self.rule
        return ((rule.screen,) if rule.screen else ()) + tuple(float(e) for e in range(rule.grace, rule.max_t))

    # -- trials and results -----------------------------------------------------------
    def add(self, trial_id: str, family: str, side: str | None, baseline: bool) -> bool:
        """A trial Tune added; whether the state knew it already (a trial of a resumed or retried study)."""
        s = self.state
        known = trial_id in s.families
        s.families[trial_id], s.sides[trial_id] = family, side
        if baseline:
            s.baselines.add(trial_id)
        if len(s.members) < self.settings.cohort and trial_id not in s.members:
            s.members.append(trial_id)
        return known

    def record(self, trial_id: str, epoch: float, value: float, passes: float | None) -> None:
        self.state.records.setdefault(epoch, {})[trial_id] = value
        if passes is not None:
            self.state.exposure.setdefault(epoch, {})[trial_id] = passes

    def at_rung(self, trial_id: str, epoch: float) -> str | None:
        """A cohort trial's answer at a rung already decided or ended for it (None: it waits for the decision)."""
        s = self.state
        if trial_id in s.going_on.get(epoch, ()):
            s.waiting.discard(trial_id)  # retried, or resumed from a checkpoint before its rung: it reported again
            return CONTINUE
        if trial_id in s.ended:
            return STOP
        s.waiting.add(trial_id)
        return None

    def verdict(self, trial_id: str, epoch: float) -> str:
        """A trial's answer at a rung just decided."""
        if trial_id in self.state.going_on.get(epoch, set()):
            return CONTINUE
        self.state.ended.add(trial_id)
        return STOP

    def asynchronous(self, trial_id: str, epoch: float, value: float, leads: bool) -> bool:
        """ASHA's rule for a trial after the cohort: whether it goes on (top 1/reduction_factor of the rung so
        far, its side's leader, its family's leader where leaders are kept, or the baseline)."""
        values = sorted(self.state.records[epoch].values(), reverse=True)
        cutoff = values[max(0, math.ceil(len(values) / self.rule.factor) - 1)]
        kept = epoch == self.rungs[0] or self.rule.keeps_leaders(epoch)
        family_leader = kept and self.leads_family(trial_id, epoch)
        return value >= cutoff or leads or family_leader or trial_id in self.state.baselines

    def leads_family(self, trial_id: str, epoch: float) -> bool:
        s = self.state
        family, values = s.families.get(trial_id), s.records[epoch]
        return all(values[trial_id] >= v for t, v in values.items() if s.families.get(t) == family)

    # -- decisions --------------------------------------------------------------------
    def alive_at(self, epoch: float) -> set[str]:
        """The cohort trials that should report at rung ``epoch``: not ended, promoted past every rung below."""
        alive = set(self.state.members) - self.state.ended
        for rung in self.rungs:
            if rung >= epoch:
                break
            alive &= self.state.going_on.get(rung, set())
        return alive

    def decide(self, epoch: float) -> set[str] | None:
        """Decide rung ``epoch`` if every live cohort trial promoted to it has reported there: the trials
        recorded there (the decision is in ``going_on``); None where it is decided already or still waits."""
        s = self.state
        below = [r for r in self.rungs if r < epoch]
        if epoch in s.going_on or any(r not in s.going_on for r in below):
            return None  # decided, or a rung below still waits
        if len(s.members) < self.settings.cohort:
            return None  # part of the cohort has not started yet
        unseen = s.unseen.get(epoch, set())
        expected = self.alive_at(epoch) - unseen
        recorded = {t for t in s.records.get(epoch, {}) if t in expected}
        if not expected or recorded != expected:
            return None
        stopped = s.stopped_at.get(epoch, set()) & set(s.records.get(epoch, {}))
        s.going_on[epoch] = self.promoted(epoch, sorted(recorded | stopped)) | unseen
        return recorded

    def promoted(self, epoch: float, trial_ids: list[str]) -> set[str]:
        """Who goes on past rung ``epoch``: the rule on the trials' values, exposure and roles; a trial found at
        the floor is remembered (it goes on past one rung only)."""
        s = self.state
        values = {t: s.records[epoch][t] for t in trial_ids}
        exposure = s.exposure.get(epoch, {})
        cohort = Cohort(
            values=values,
            families={t: s.families[t] for t in trial_ids},
            sides={t: s.sides.get(t) for t in trial_ids},
            baselines=s.baselines & set(trial_ids),
            passes={t: exposure[t] for t in trial_ids if t in exposure},
            hedged={t for i, t in enumerate(s.members) if i in self.settings.hedged_at},
            failed_before=set(s.failed),
        )
        keep = self.rule.promote(epoch, cohort)
        s.failed |= self.rule.at_floor(epoch, values)
        return keep

    def settle(self, epoch: float, recorded: set[str], current: str = "") -> tuple[set[str], set[str]]:
        """After rung ``epoch`` was decided: the waiting trials it promoted (to resume) and those it stopped
        (``current``, the trial reporting now, is answered by :meth:`verdict` instead)."""
        s = self.state
        resumed, stopped = set(), set()
        here = {t for t in recorded if self.waits_at(t) == epoch}  # not those waiting at a later rung (a resume)
        for trial_id in sorted(s.waiting & here - {current}):
            if trial_id in s.going_on[epoch]:
                resumed.add(trial_id)
            else:
                stopped.add(trial_id)
        s.waiting -= here | {current}
        s.resume |= resumed
        s.ended |= stopped
        s.doomed |= stopped
        return resumed, stopped

    def waits_at(self, trial_id: str) -> float | None:
        """The rung of a trial's latest recorded result: where it waits, if it waits."""
        return max((r for r in self.rungs if trial_id in self.state.records.get(r, {})), default=None)

    def late(self, epoch: float) -> set[str]:
        """Trials waiting at a rung decided without them (only in a resumed study, where Tune saved a trial
        PAUSED at a rung others had passed): they go on, a few epochs more rather than a good cell lost."""
        s = self.state
        if epoch not in s.going_on:
            return set()
        late = {t for t in s.waiting & set(s.records.get(epoch, {})) - s.going_on[epoch] if self.waits_at(t) == epoch}
        s.waiting -= late
        s.going_on[epoch] |= late
        s.resume |= late
        return late

    def end(self, trial_id: str) -> bool | None:
        """A cohort trial ended: no rung waits for it any more. Whether it was waiting (paused) until now; None
        where it is no live cohort trial (nothing changed)."""
        s = self.state
        if trial_id not in s.members or trial_id in s.ended:
            return None
        was_waiting = trial_id in s.waiting
        s.ended.add(trial_id)
        for held in (s.doomed, s.waiting, s.resume):
            held.discard(trial_id)
        return was_waiting

    def reconcile(self, trial_id: str, recent: list[tuple[float, float, float | None]]) -> list[float]:
        """A cohort trial restored with its recent results (``(epoch, value, passes)``, oldest first, the last
        its last), from a state that may be older than the trials Tune saved (a hard kill between Tune's write
        of the trials and its write of this state, in that order: ``TuneController.save_to_dir``). The results
        at rungs the state did not see are recorded: once every restored trial is, a rung decides as it did in
        the study not interrupted. A rung below the last result with no result of it left (older than Ray
        keeps) is passed: where decided, the trial joins those going on; where not, it goes on whatever the
        decision (:attr:`CohortState.unseen`). At its last result's rung, undecided, it waits again. A state
        that saw every result is left as it is. The rungs it recorded at."""
        s = self.state
        if trial_id in s.ended or not recent:
            return []
        recorded = self.record_unseen(trial_id, recent)
        if recorded:
            s.resume.discard(trial_id)  # it ran and reported since: as on_trial_result, its mark to resume is spent
        last = recent[-1][0]
        for rung in self.rungs:
            if rung >= last:
                break
            if trial_id in s.going_on.get(rung, ()) or (rung not in s.going_on and trial_id in s.records.get(rung, {})):
                continue  # passed as the state knows, or decided with its result once the rung is complete
            (s.going_on if rung in s.going_on else s.unseen).setdefault(rung, set()).add(trial_id)
        if last in recorded:
            if last not in s.going_on:
                s.waiting.add(trial_id)
            elif trial_id not in s.going_on[last]:
                s.going_on[last].add(trial_id)  # decided without it: a few epochs more rather than a cell lost
                s.resume.add(trial_id)
        return recorded

    def record_unseen(self, trial_id: str, recent: list[tuple[float, float, float | None]]) -> list[float]:
        """Record the trial's results (``(epoch, value, passes)``) at rungs where this state has none of it; the
        rungs it recorded at."""
        recorded = []
        for epoch, value, passes in recent:
            if epoch in self.rungs and trial_id not in self.state.records.get(epoch, {}):
                self.record(trial_id, epoch, value, passes)
                recorded.append(epoch)
        return recorded

    def stopped_unseen(self, trial_id: str, recent: list[tuple[float, float, float | None]]) -> None:
        """A cohort trial Tune saved as stopped at a rung (its last result there, below the last epoch) where
        this state had not decided that rung yet: a decision it did not see stopped it. Its results are recorded
        and it is ranked when the rung is decided again, so the decision comes out as it did."""
        s = self.state
        self.record_unseen(trial_id, recent)
        if recent and recent[-1][0] in self.rungs and recent[-1][0] not in s.going_on:
            s.stopped_at.setdefault(recent[-1][0], set()).add(trial_id)

    def describe(self) -> str:
        decided = ", ".join(f"epoch {e:g}: {len(on)} go on" for e, on in sorted(self.state.going_on.items()))
        return f"cohort halving of {len(self.state.members)} first points ({decided or 'no rung decided yet'})"
