"""Cohort halving's rungs as a plain object, without Ray: results in, decisions out, and its versioned state."""

import pickle

import pytest

from search.study.cohort_rule import CohortRule
from search.study.cohort_rungs import (
    CONTINUE,
    STATE_VERSION,
    STOP,
    CohortRungs,
    CohortSettings,
    CohortState,
    CohortStateError,
)

# four epochs, rungs 1, 2 and 3 (the last); a quarter goes on
RULE = CohortRule(factor=4, screen=None, grace=1, max_t=4)


def cohort(values: dict[str, float]) -> CohortRungs:
    """The baseline ``base`` and multitask cells of one family; every one added and reported at rung 1."""
    rungs = CohortRungs(CohortSettings(RULE, cohort=len(values)))
    for t in values:
        rungs.add(
            t, "single-task" if t == "base" else "prop", "single-task" if t == "base" else "multitask", t == "base"
        )
    return rungs


def test_a_rung_is_decided_once_every_live_member_reported_and_its_waiting_losers_stop():
    values = {"base": 0.70, "a": 0.90, "b": 0.80, "c": 0.60, "d": 0.50}
    rungs = cohort(values)
    for t, v in values.items():
        rungs.record(t, 1.0, v, None)
        if t != "d":
            assert rungs.at_rung(t, 1.0) is None  # waits for the rung's decision
            assert rungs.decide(1.0) is None
    recorded = rungs.decide(1.0)
    assert recorded == set(values) and rungs.state.going_on[1.0] == {"base", "a", "b"}  # ceil(5/4), the baseline
    resumed, stopped = rungs.settle(1.0, recorded, current="d")
    assert (resumed, stopped) == ({"base", "a", "b"}, {"c"}) and rungs.state.doomed == {"c"}
    assert rungs.verdict("d", 1.0) == STOP and rungs.alive_at(2.0) == {"base", "a", "b"}
    assert rungs.at_rung("a", 1.0) == CONTINUE  # a retried trial reporting at a decided rung again
    assert rungs.decide(1.0) is None  # decided once


def test_an_ended_member_is_waited_for_no_longer():
    rungs = cohort({"base": 0.7, "a": 0.9, "b": 0.8})
    for t in ("base", "a"):
        rungs.record(t, 1.0, 0.8, None)
        rungs.at_rung(t, 1.0)
    assert rungs.decide(1.0) is None
    assert rungs.end("b") is False and rungs.end("b") is None  # not waiting; then nothing left to end
    assert rungs.decide(1.0) == {"base", "a"}


def test_the_state_round_trips_as_plain_data_and_a_pickle():
    rungs = cohort({"base": 0.7, "a": 0.9, "b": 0.8})
    for t, v in {"base": 0.7, "a": 0.9, "b": 0.8}.items():
        rungs.record(t, 1.0, v, 0.5)
        rungs.at_rung(t, 1.0)
    rungs.settle(1.0, rungs.decide(1.0), current="b")
    saved = rungs.state.to_state()
    assert saved["version"] == STATE_VERSION and saved["going_on"] == {1.0: ["a", "base"]}
    assert all(isinstance(v, (int, list, dict)) for v in saved.values())  # no set, no object of this code
    assert CohortState.from_state(pickle.loads(pickle.dumps(saved))) == rungs.state


def test_a_state_of_another_version_or_of_none_is_refused_in_one_line():
    with pytest.raises(CohortStateError, match=r"^cohort halving state version 99: this code reads version 1 "):
        CohortState.from_state({"version": 99})
    unversioned = {"members": ["base", "a"], "records": {1.0: {"base": 0.7}}, "waiting": {"base"}, "_max_t": 4}
    with pytest.raises(CohortStateError, match=r"^cohort halving state version None: this code reads version 1 "):
        CohortState.from_state(unversioned)


def test_a_state_older_than_the_trials_takes_in_what_their_recent_results_show():
    """Resumed from a state saved before some results: those results are recorded, a rung passed with no result
    left goes on unseen, a trial stopped by a decision the state never saw is ranked when the rung is decided
    again, and the rung decides as it did."""
    values = {"base": 0.70, "a": 0.90, "b": 0.80, "c": 0.60, "d": 0.50}
    rungs = cohort(values)
    for t in ("base", "a", "b"):  # what the state saw: three of five at rung 1
        rungs.record(t, 1.0, values[t], None)
        rungs.at_rung(t, 1.0)
    assert rungs.reconcile("c", [(1.0, 0.60, None)]) == [1.0] and "c" in rungs.state.waiting
    rungs.end("d")  # Tune saved it stopped at rung 1
    rungs.stopped_unseen("d", [(1.0, 0.50, None)])
    assert rungs.reconcile("a", [(1.0, 0.90, None), (2.0, 0.95, None)]) == [2.0]  # it passed rung 1 and waits at 2
    assert rungs.reconcile("b", [(1.0, 0.80, None)]) == []  # seen already: nothing changes
    assert rungs.decide(1.0) == {"base", "a", "b", "c"}
    assert rungs.state.going_on[1.0] == {"base", "a", "b"}  # d ranked (last), as the decision it was stopped by
    resumed, stopped = rungs.settle(1.0, {"base", "a", "b", "c"})
    assert (resumed, stopped) == ({"base", "b"}, {"c"}) and "a" in rungs.state.waiting  # a waits at rung 2
    orphan = cohort(values)
    assert orphan.reconcile("a", [(2.0, 0.95, None)]) == [2.0] and orphan.state.unseen == {1.0: {"a"}}
