"""``--resume --trials N`` from every state a study can be in, under every strategy the docs name for it: the
in-process backend's table (``Backend.extensions`` raises the total as ``search.study.extend`` does), and the
file ``extend_trials`` edits (Ray restores the greatest session name, whatever the files' times say)."""

import os

import pytest
import ray.cloudpickle as cloudpickle

from search.simulation.study import simulate
from search.simulation.truth import load_truth, resolve_truth
from search.study.config import SearchConfig, continuing
from search.study.extend import extend_trials
from search.study.kind import TrainedTrials
from search.study.plan import Site, Started, plan, stores_of
from trainables.config import ConfigError

# strategy -> (trials it starts with, a first extension, a second)
# (``grid`` is its points and nothing else: an extension is refused, below)
STRATEGIES = {"default": (44, 48, 50), "cells-halving": (44, 48, 50), "tpe": (6, 9, 11), "random": (6, 9, 11)}
# state -> (results before a Ctrl-C or None, the --resume --trials N in turn: at the Ctrl-C, then after the end)
STATES = {
    "interrupted after its first result": (1, "first"),
    "interrupted": (12, "first"),
    "finished": (None, "first"),
    "finished after a resume": (12, "same, first"),
    "extended before": (None, "first, second"),
    "extended at a resume, then again": (12, "first, second"),
}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("state", STATES)
def test_an_extension_runs_every_trial_it_asks_for(strategy, state):
    start, first, second = STRATEGIES[strategy]
    interrupt, steps = STATES[state]
    totals = {"same": start, "first": first, "second": second}
    extensions = tuple(totals[step] for step in steps.split(", "))
    path = resolve_truth("null")
    cfg = SearchConfig("absa", preset="full", simulate=path, search=strategy, trials=start, max_concurrent=4)
    done = simulate(cfg, load_truth(path), interrupt_after=interrupt, extensions=extensions)
    assert len(done.trials) == extensions[-1], (strategy, state, len(done.trials))
    assert {t.status for t in done.trials} == {"TERMINATED"}
    states = [t.state.name for t in done.searcher._ot_study.get_trials()]
    assert len(states) == extensions[-1] and set(states) <= {"COMPLETE", "PRUNED"}, states


def test_a_grid_study_refuses_more_trials_in_one_line():
    cfg = SearchConfig("absa", preset="full", search="grid")
    started = plan(cfg, TrainedTrials(), Site("1", 1), stores_of(cfg)).invocation
    again = continuing(SearchConfig("absa", resume=True, trials=50), started)
    with pytest.raises(ConfigError, match=r"--resume --trials 50: study g is --search grid, its 43 points and nothing"):
        plan(again, TrainedTrials(), Site("1", 1), stores_of(cfg), Started("g", started, "run-id"))
    same = continuing(SearchConfig("absa", resume=True), started)
    assert plan(same, TrainedTrials(), Site("1", 1), stores_of(cfg), Started("g", started, "run-id")).trials == 43


def saved_state(folder, session: str, total: int, mtime: float) -> str:
    path = os.path.join(folder, f"search_gen_state-{session}.json")
    with open(path, "wb") as f:
        cloudpickle.dump({"counter": total, "total_samples": total, "finished": True}, f)
    os.utime(path, (mtime, mtime))
    return path


def test_extend_raises_the_state_ray_restores_whatever_the_file_times(tmp_path):
    # a study interrupted, then resumed: Ray's sync to --storage rewrote the first session's file last
    first = saved_state(tmp_path, "2026-11-28_13-32-06", 2, mtime=2_000_000_000)
    latest = saved_state(tmp_path, "2026-11-28_13-32-58", 16, mtime=1_000_000_000)
    assert extend_trials(str(tmp_path), 24) == 16
    for path in (first, latest):
        with open(path, "rb") as f:
            state = cloudpickle.load(f)
        assert state["total_samples"] == 24 and state["finished"] is False
    assert extend_trials(str(tmp_path), 20) == 24  # fewer than it has: nothing changes


def test_extend_without_a_saved_state_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="holds no saved searcher state"):
        extend_trials(str(tmp_path), 24)
