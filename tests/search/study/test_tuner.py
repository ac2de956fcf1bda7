"""What the study's Tuner costs the driver as trials accumulate (issue 18, benchmarks/README.md
``sim_cost``), measured on a small simulated study: Tune reuses a slot's actor for the next trial
instead of starting a process per trial, and saves its experiment state on its own period, not
after every checkpointed result (each save writes every trial, so per-result saves grow as
results x trials)."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT, study_env


@pytest.mark.slow
def test_trials_reuse_actors_and_state_saves_do_not_follow_every_result(tmp_path):
    out = tmp_path / "cost.jsonl"
    command = [sys.executable, "-m", "benchmarks.sim_cost", "--trials", "12", "--slots", "3"]
    command += ["--epoch-seconds", "1", "--out", str(out)]
    r = subprocess.run(command, cwd=ROOT, env=study_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (figures,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert figures["trials"] == 12 and figures["results"] >= 12
    assert figures["trial_processes"] <= 6  # 3 slots; a process per trial would be 12
    # num_to_keep=1 saved after every result; Tune's own period is at least 10 s, so on a loaded machine, where
    # the same results take longer, a save every period can outnumber half the results without following them
    period_saves = figures["wall_s"] / 10 + 2  # the first save and the one at the end
    assert figures["state_saves"] <= max(figures["results"] / 2, period_saves), figures


def test_cohort_halving_is_built_with_the_plans_strata_hedge_and_the_objectives_majority_rate():
    from search.study.cohort_rule import hedged_positions
    from search.study.config import SearchConfig
    from search.study.kind import TrainedTrials
    from search.study.plan import plan_offline
    from search.study.tuner import scheduler_of

    plan = plan_offline(SearchConfig("absa", preset="full", strata=3, hedge=2, search_seed=5), TrainedTrials())
    majority = {"acc_4way": 0.58, "acc_3way": 0.62}
    s = scheduler_of(plan, majority)
    assert (s.strata, s.floor, s.cohort) == (3, 0.58, 43)
    assert s.hedged_at == hedged_positions(43, 2, plan.search_seed) and len(s.hedged_at) == 2
    assert scheduler_of(plan).floor is None  # no majority rate known: no pass for a failed start
    loss = plan_offline(SearchConfig("absa", preset="full", metric="train/loss", mode="min"), TrainedTrials())
    assert scheduler_of(loss, majority).floor is None  # an objective off the primary's dev scores has none
    default = scheduler_of(plan_offline(SearchConfig("absa", preset="full"), TrainedTrials()), majority)
    assert (default.strata, default.hedged_at) == (3, hedged_positions(43, 6, 0))  # the default: 3 strata, a hedge of 6


def test_each_strategy_states_its_sampler_settings_whatever_optunas_defaults():
    import optuna

    from search.study.config import SearchConfig
    from search.study.kind import TrainedTrials
    from search.study.plan import plan_offline
    from search.study.tuner import sampler_of

    plain = sampler_of(plan_offline(SearchConfig("absa", preset="full", search="tpe"), TrainedTrials())).sampler
    assert isinstance(plain, optuna.samplers.TPESampler)
    assert (plain._multivariate, plain._constant_liar) == (False, False)  # univariate, as "tpe" was measured
    joint = sampler_of(plan_offline(SearchConfig("absa", preset="full", search="tpe-mv"), TrainedTrials())).sampler
    assert (joint._multivariate, joint._group, joint._constant_liar) == (True, True, True)
