import argparse
import json
from dataclasses import replace

import pytest

from search.answer.looks import recorded_spread
from search.estimate import benchmark_throughput, planned
from trainables.config import ConfigError


def test_throughput_is_read_from_a_benchmark_json(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps(
            {
                "loop_samples_per_s": 412.5,
                "bare_samples_per_s": 420.0,
                "device": "NVIDIA H100 80GB HBM3",
                "model": "random-init bert-base (...)",
                "precision": "bf16",
                "batch_size": 24,
            }
        )
    )
    samples_per_second, measured = benchmark_throughput(path)
    assert samples_per_second == 412.5  # the loop's, not the bare loop's
    assert measured["device"] == "NVIDIA H100 80GB HBM3" and measured["precision"] == "bf16"


@pytest.mark.parametrize("text", ["{}", "not json", '{"loop_samples_per_s": null}'])
def test_a_file_without_the_loop_throughput_is_refused(tmp_path, text):
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"--from-benchmark .*run\.json"):
        benchmark_throughput(path)


def test_strategies_cost_what_the_benchmark_measured(tmp_path):
    from search.estimate import strategy_cost, strategy_costs
    from spaces import get_study

    ratios = {"bandit-loss": 1.1, "bandit-primary": 1.3, "uncertainty": 1.02, "all-sum": 1.0, "all-pcgrad": 1.4}
    ratios["layer-decay"] = 1.01
    assert strategy_cost(get_study("absa"), {}) == 1.0  # no strategies: the plain loop
    # bandit: half multitask x 1 schema in 8 x (mean of 1.1, 1.3) - 1 = 0.0125; uncertainty 0.5 x 1/2 x 0.02 = 0.005;
    # all-tasks steps: 0.5 x 1/2 x (1/2 x 1.0 + 1/2 x 1.4 - 1) = 0.05; layer decay (every trial) 0.01
    assert strategy_cost(get_study("absa-plus"), ratios) == pytest.approx(1 + 0.0125 + 0.005 + 0.05 + 0.01)
    path = tmp_path / "strategies.json"
    path.write_text(json.dumps({"strategy_cost_ratio": ratios}))
    assert strategy_costs(path) == ratios
    path.write_text("{}")
    with pytest.raises(ConfigError, match="--strategy-costs .*: no strategy_cost_ratio"):
        strategy_costs(path)


def test_seeds_as_a_fidelity_makes_the_first_rung_cheaper():
    from search.estimate import asha_epoch_fraction, asha_seed_epoch_fraction
    from trainables.fidelity import SeedSchedule, asha_rungs

    rungs = asha_rungs(1, 3, 4)  # 1, 3
    every_seed = SeedSchedule(3, 3, rungs, 3)
    assert asha_seed_epoch_fraction(every_seed, 3, 4) == pytest.approx(asha_epoch_fraction(4, 1, 3))
    # 1 seed to epoch 1, then 3: 2/3 stop at epoch 1 (1 seed-epoch), 2/9 at 3 (9), 1/9 complete (12)
    expected = (2 / 3 * 1 + 2 / 9 * 9 + 1 / 9 * 12) / 12
    assert asha_seed_epoch_fraction(SeedSchedule(3, 1, rungs, 3), 3, 4) == pytest.approx(expected)
    assert expected < asha_epoch_fraction(4, 1, 3)  # 0.33 of 12 seed-epochs per trial, against 0.44


def test_plan_gives_the_final_seeds_a_gain_needs_from_a_spread():
    args = argparse.Namespace(study="absa", plan=0.02, spread=0.0158, from_study=False, name=None, tracking_uri="")
    out = planned(args)
    k = out["final_seeds"]
    assert out["spread_from"] == "--spread" and k is not None and k > 5  # 2 pp at 5 seeds: below 80%
    assert out["detectable_gain_at"][str(k)] <= 0.02 < out["detectable_gain_at"]["5"]
    with pytest.raises(ConfigError, match="needs the spread"):
        planned(argparse.Namespace(**{**vars(args), "spread": None}))
    with pytest.raises(ConfigError, match="expected a gain > 0"):
        planned(argparse.Namespace(**{**vars(args), "plan": -0.01}))
    metrics = {"final/diff/acc_4way/std": 0.02, "final/ablation_diff/acc_4way/std": 0.012, "other": 1.0}
    assert recorded_spread(metrics, "acc_4way") == {"tuned": 0.02, "ablation": 0.012}


@pytest.mark.parametrize(
    "flags", [{}, {"seeds": 1}, {"screen_fraction": 0, "reduction_factor": 4}, {"seeds": 3, "reduction_factor": 3}]
)
def test_the_halving_estimate_is_what_simulated_studies_on_the_null_truth_train(flags):
    """The estimate's cohort model (exchangeable results) against the simulator's count on the null truth, where
    every config is equally good: within 5% of the mean over 16 studies (a mean of 5 had an SE of about 3%; the
    model that kept half the families' leaders at every rung was 17% high at reduction 4)."""
    from dataclasses import replace

    from search.estimate import halving_seed_epochs
    from search.simulation.study import simulate
    from search.simulation.truth import load_truth, resolve_truth
    from search.study.config import SearchConfig

    truth = resolve_truth("null")
    cfg = SearchConfig("absa", preset="full", simulate=truth, search="cells-halving", **flags)
    spent = [simulate(replace(cfg, search_seed=i), replace(load_truth(truth), seed=i)) for i in range(16)]
    plan = spent[0].plan
    estimate = halving_seed_epochs(
        len(plan.points),
        7,
        plan.screen,
        plan.rungs.grace_period,
        plan.rungs.reduction_factor,
        plan.schedule,
        plan.base.epochs,
        len(plan.invocation.seeds),
        plan.rungs.hedge,
        plan.rungs.strata,
    )
    measured = sum(s.seed_epochs for s in spent) / len(spent)
    assert estimate == pytest.approx(measured, rel=0.05), (estimate, measured)


def test_the_grid_exposure_spans_the_primarys_passes_per_epoch():
    """absa's grid with hand-made sizes: semeval 100 rows, sst2 300, pos 200, sentihood 400, batch 10 (10, 30, 20,
    40 batches), 2 epochs: an epoch is the mean of the tasks' batches, the schema the primary's share of it."""
    from search.estimate import grid_exposure
    from spaces import get_study
    from trainables.config import TrainConfig

    study = get_study("absa")
    base = TrainConfig(tasks=(study.primary,), primary=study.primary, batch_size=10, epochs=2)
    sizes = {t: {"train": n} for t, n in {"semeval": 100, "sst2": 300, "pos": 200, "sentihood": 400}.items()}
    exposure = grid_exposure(study, base, sizes)
    # the fewest: all three auxiliaries one step in four (round robin, the first cell of the tie with random):
    # 25 steps / 4 = 6.25 of 10 batches; the most: sentihood squared, 16 / (16 + 4) of 25 steps = 20 batches
    assert (exposure.single, exposure.low, exposure.high) == pytest.approx((1.0, 0.625, 2.0))
    assert exposure.line() == (
        "1.00 single-task, 0.62-2.00 multitask (sst2+pos+sentihood sequential .. sentihood square)"
    )
    alone = replace(study, candidates=())
    assert grid_exposure(alone, base, sizes).line() == "1.00 single-task"


def test_the_estimate_prints_the_exposure_in_one_line(data_dir):
    from search.estimate import estimate
    from search.study.config import SearchConfig

    line = estimate(SearchConfig("absa", preset="smoke"), None, None)["primary_passes_per_epoch"]
    # at most 500 rows of every task: round robin over all four gives the primary a quarter of an epoch
    assert line.startswith("1.00 single-task, 0.25-") and "(sst2+pos+sentihood sequential .. " in line


def test_a_plan_from_a_study_uses_the_recorded_spreads_upper_bound(tmp_path):
    import json

    from mlflow import MlflowClient

    from search.answer.power import spread_bound
    from search.estimate import planned
    from search.tracking import records as rec

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    parent = client.create_run(client.create_experiment("absa"), tags={rec.KIND_TAG: rec.STUDY_KIND}).info.run_id
    client.log_metric(parent, "final/ablation_diff/acc_4way/std", 0.0158)
    look = {"seeds": 5, "claims": {"ablation": {"pairs": 5, "boundary": 2.95, "spent": 0.021, "total": 0.021}}}
    client.set_tag(parent, "final_look_1", json.dumps(look))
    args = argparse.Namespace(study="absa", plan=0.02, spread=None, from_study=True, name=None, tracking_uri=uri)
    out = planned(args)
    assert out["spread"] == pytest.approx(spread_bound(5, 0.0158)) and out["spread"] > 0.0158
    assert "observed 0.0158 over 5 pairs, planned at its 70% upper bound" in out["spread_from"]


def test_the_estimate_counts_the_final_comparison():
    """Hand-made sizes, batch 10, 2 epochs, evaluation rows at EVAL_SPEEDUP: the winner averaged over the
    auxiliary subsets, the single-task arms, each on every final seed."""
    from search.estimate import EVAL_SPEEDUP, finalize_rows
    from spaces import get_study
    from trainables.config import TrainConfig

    study = replace(get_study("absa"), candidates=("sst2",))
    base = TrainConfig(tasks=(study.primary,), primary=study.primary, batch_size=10, epochs=2)
    sizes = {"semeval": {"train": 100, "dev": 20, "test": 50}, "sst2": {"train": 300, "dev": 10, "test": 10}}
    alone = 10 * 10 * 2 + (20 * 2 + 50) / EVAL_SPEEDUP  # 10 batches an epoch; dev each epoch, test once
    winner = 20 * 10 * 2 + (30 * 2 + 50) / EVAL_SPEEDUP  # an epoch: the mean of 10 and 30 batches
    assert finalize_rows(study, base, sizes, 5, 1) == pytest.approx(5 * (winner + alone))
    assert finalize_rows(study, base, sizes, 5, 2) == pytest.approx(5 * (winner + 2 * alone))


def test_the_estimate_prices_the_study_with_its_answer(data_dir):
    from search.estimate import estimate
    from search.study.config import SearchConfig

    out = estimate(SearchConfig("absa", preset="smoke"), 10.0, 2.0)
    assert out["final_single_task_arms"] == 2  # the smoke preset's TPE tunes lr: the ablation is another config
    assert out["total_rows_with_finalize"] == out["total_rows_with_asha"] + out["finalize_rows"] > 0
    assert out["device_hours_with_finalize"] > out["device_hours_with_asha"]
    assert out["usd_with_finalize"] == pytest.approx(2 * out["device_hours_with_finalize"], abs=0.02)


def test_the_drivers_cost_grows_with_the_trials_and_the_trial_processes_with_the_slots():
    from search.study.driver_cost import MEASURED, along, driver_cost

    small, big = driver_cost(1000, 64), driver_cost(10000, 256)
    assert 0 < small.cpu_minutes < big.cpu_minutes and 0 < small.peak_memory_mb < big.peak_memory_mb
    assert big.trial_processes_gb == 4 * small.trial_processes_gb
    assert driver_cost(3000, 8).cpu_minutes * 60 == MEASURED[3000][0]  # a measured size is its measurement
    assert along(20000, [1, 2], [10, 20]) == 200000 and along(1.5, [1, 2], [10, 20]) == 15


def test_the_estimate_prints_the_drivers_cost_at_its_slots():
    from search.estimate import estimate
    from search.study.config import SearchConfig

    out = estimate(SearchConfig("absa", preset="smoke", trials=2000, max_concurrent=32), None, None)
    assert out["max_concurrent"] == 32 and out["driver"]["driver_cpu_minutes"] > 0
    assert out["driver"]["trial_processes_gb_at_least"] == round(32 * 125 / 1024, 1)


def test_the_command_line_prices_a_study_without_and_with_max_concurrent(monkeypatch, capsys):
    from search.estimate import main

    for extra, slots in (([], 2), (["--max-concurrent", "64"], 64)):
        monkeypatch.setattr("sys.argv", ["search.estimate", "absa", "--preset", "smoke", *extra])
        assert main() == 0
        out = json.loads(capsys.readouterr().out)
        assert out["max_concurrent"] == slots and out["driver"]["driver_cpu_minutes"] >= 0
