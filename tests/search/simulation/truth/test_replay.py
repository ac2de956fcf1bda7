"""A real-curve table as a truth: lookups by cell, seed and point; seeds beyond the table drawn; what is no cell
or no point refused in one line; the replayed study at the table's epochs, grid cells only; the true best."""

import math
from pathlib import Path

import optuna
import pytest
from fake_tune import FakeTune

import search.simulation.trainable as sim
from search.simulation.kind import ReplayedTrials, trial_kind
from search.simulation.optimum import true_best
from search.simulation.selection import selections
from search.simulation.study import simulate, simulated_plan
from search.simulation.truth import TableTruth, TruthError, load_truth, resolve_truth
from search.simulation.truth.table import Cell, TableError, cell_of, read_table, write_table
from search.study.config import SearchConfig, study_of
from search.study.plan import base_config
from spaces import apply_choices, canonical, thesis_grid
from trainables.config import OptimConfig, SamplingConfig, TrainConfig
from trainables.exposure import PRIMARY_PASSES

OBJECTIVE = "semeval/dev/acc_4way"
BEST = 17  # the grid cell (by position) the synthetic tables make best


def grid_configs(epochs: int = 3) -> list[TrainConfig]:
    """The absa study's thesis grid at the full preset, canonical, at ``epochs``."""
    cfg = SearchConfig("absa", preset="full")
    study = study_of(cfg, "full")
    base = base_config(cfg, study, study.preset("full")).with_(epochs=epochs)
    return [canonical(apply_choices(base, p, study)) for p in thesis_grid(study, base)]


def score(i: int, seed: int, point: float, epochs: int) -> float:
    """Cell i's acc_4way: cell BEST 5 pp above cell 0, 1 pp per seed, 2 pp short per epoch to go."""
    return 0.7 + 0.001 * i + (0.05 if i == BEST else 0.0) + 0.01 * seed - 0.02 * (epochs - point)


def grid_table(path: Path, epochs: int = 3, seeds=(1, 2, 3), screen: float | None = 0.25, passes: bool = True):
    """A table of every cell of the grid: the scores of :func:`score`, passes = point / 2, 10 s an epoch."""
    points = ((screen,) if screen else ()) + tuple(float(e) for e in range(1, epochs + 1))
    rows = []
    for i, config in enumerate(grid_configs(epochs)):
        for s in seeds:
            for p in points:
                rows.append(
                    {
                        **cell_of(config).columns(),
                        "lr": config.lr,
                        "warmup": config.warmup,
                        "seed": s,
                        "point": p,
                        PRIMARY_PASSES: p / 2 if passes else math.nan,
                        "seconds": 10.0 * p,
                        OBJECTIVE: score(i, s, p, epochs),
                        "semeval/dev/acc_3way": 0.8,
                    }
                )
    meta = {
        "study": "absa",
        "primary": "semeval",
        "metric": "acc_4way",
        "epochs": epochs,
        "majority": {"acc_4way": 0.58},
    }
    write_table(path, rows, meta)
    return str(path)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    return grid_table(tmp_path_factory.mktemp("table") / "grid.parquet")


@pytest.fixture(scope="module")
def truth(table) -> TableTruth:
    return load_truth(resolve_truth(table))


def test_every_grid_cell_is_found_again_from_its_row():
    for config in grid_configs():
        cell = cell_of(config)
        assert Cell.of_row(cell.columns()).key == cell.key


def test_a_seed_and_point_the_table_holds_reports_its_scores(truth):
    config = grid_configs()[BEST]
    one = truth.epoch_metrics(config, "key", 2, 2)
    assert one[OBJECTIVE] == pytest.approx(score(BEST, 2, 2, 3)) and one["semeval/dev/acc_3way"] == 0.8
    assert one["train/seconds"] == pytest.approx(10.0)  # the epoch's own, as the trainer reports it
    assert truth.epoch_metrics(config, "key", 1, 0.25)[OBJECTIVE] == pytest.approx(score(BEST, 1, 0.25, 3))
    assert not any("/test/" in k for k in one)  # the search scores no test

    trial = truth.trial_metrics(config, "key", [1, 3], 3, OBJECTIVE + "/mean")
    assert trial[OBJECTIVE + "/mean"] == pytest.approx((score(BEST, 1, 3, 3) + score(BEST, 3, 3, 3)) / 2)
    assert trial[OBJECTIVE + "/seed3"] == pytest.approx(score(BEST, 3, 3, 3))
    assert trial[PRIMARY_PASSES] == pytest.approx(1.5)  # one value beside the epoch, as the real trainable's


def test_a_final_run_scores_test_as_its_dev_at_the_last_epoch(truth):
    config = grid_configs()[BEST].with_(evaluate_test=True)
    final = truth.epoch_metrics(config, "key", 2, 3)
    assert final["semeval/test/acc_4way"] == final[OBJECTIVE]
    assert "semeval/test/acc_4way" not in truth.epoch_metrics(config, "key", 2, 2)


def test_a_seed_the_table_lacks_replays_one_of_the_cells_seeds_the_same_at_every_point(truth):
    configs = grid_configs()
    cell = truth.cell(configs[0])
    assert [truth.table_seed(cell, s) for s in (1, 2, 3)] == [1, 2, 3]
    drawn = {s: truth.table_seed(cell, s) for s in range(4, 200)}
    assert set(drawn.values()) == {1, 2, 3}  # a hash of the seed: every table seed drawn
    assert drawn == {s: truth.table_seed(cell, s) for s in range(4, 200)}  # the same draw every time
    others = [{s: truth.table_seed(truth.cell(c), s) for s in range(4, 200)} for c in configs[1:5]]
    assert all(other != drawn for other in others)  # each cell its own draw
    a, b = (truth.epoch_metrics(configs[BEST], "k", 7, p)[OBJECTIVE] for p in (1, 3))
    assert a == pytest.approx(score(BEST, drawn[7], 1, 3)) and b == pytest.approx(score(BEST, drawn[7], 3, 3))
    # another truth seed (a benchmark's study i): every seed drawn anew, deterministically
    other = TableTruth.of(truth.table, seed=5)
    assert [other.table_seed(cell, s) for s in range(1, 60)] == [other.table_seed(cell, s) for s in range(1, 60)]
    assert [other.table_seed(cell, s) for s in range(1, 60)] != [truth.table_seed(cell, s) for s in range(1, 60)]


def test_what_is_no_cell_or_no_point_of_the_table_is_refused_in_one_line(truth):
    config = grid_configs()[5]
    tpe = config.with_(sampling=SamplingConfig(schema="power", exponent=1.3, weights=config.sampling.weights))
    weighted = config.with_(optim=OptimConfig(loss_weighting="uncertainty"))  # an adaptive strategy that acts
    for other in (tpe, weighted):
        with pytest.raises(TableError, match=r"is not a cell of this table; a table replays only the grid's 43"):
            truth.epoch_metrics(other, "k", 1, 1)
    with pytest.raises(TableError, match=r"no point 0.5; the table holds points 0.25, 1, 2, 3$"):
        truth.epoch_metrics(config, "k", 1, 0.5)
    with pytest.raises(TableError, match=r"trains 4 epochs, the table's runs 3"):
        truth.epoch_metrics(config.with_(epochs=4), "k", 1, 1)


def test_the_true_score_is_a_cells_final_mean_and_the_true_best_the_best_cell(truth):
    configs = grid_configs()
    assert truth.true_score(configs[3], "acc_4way") == pytest.approx(score(3, 2, 3, 3))  # seeds 1-3: seed 2's
    assert truth.true_score(configs[3], "acc_4way", "test") == truth.true_score(configs[3], "acc_4way")
    assert truth.best_cell() == cell_of(configs[BEST])
    plan = simulated_plan(SearchConfig("absa", simulate=truth.path, search="grid"))
    best = true_best(truth, plan.study, plan.base, "acc_4way")
    assert cell_of(best.config) == cell_of(configs[BEST]) and best.score == pytest.approx(score(BEST, 2, 3, 3))


def test_the_simulated_trainable_replays_a_table_without_sleeping(table, tmp_path, monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(sim.time, "sleep", slept.append)
    monkeypatch.setattr(sim, "placement", lambda epoch: {})  # no Ray
    monkeypatch.setattr(sim, "tune", fake := FakeTune(tmp_path))
    config = {"train": grid_configs()[BEST].to_dict(), "seeds": [2, 9], "key": "k", "screen": 0.25}
    results = fake.run(sim.simulated_trainable, config, truth=table, metric=OBJECTIVE + "/mean")
    assert [r["epoch"] for r in results] == [0.25, 1, 2, 3]
    assert [r[PRIMARY_PASSES] for r in results] == [0.125, 0.5, 1.0, 1.5]  # the table's, beside the epoch
    assert results[-1][OBJECTIVE + "/seed2"] == pytest.approx(score(BEST, 2, 3, 3)) and set(slept) == {0.0}


def test_a_table_without_primary_passes_reports_none(tmp_path):
    truth = load_truth(grid_table(tmp_path / "t.parquet", passes=False))
    assert PRIMARY_PASSES not in truth.trial_metrics(grid_configs()[0], "k", [1], 1, OBJECTIVE + "/mean")
    assert read_table(truth.path).frame[PRIMARY_PASSES].isna().all()


def test_a_parquet_file_is_a_truth_and_a_missing_one_is_named(table, tmp_path):
    assert resolve_truth(table) == str(Path(table).resolve())
    assert isinstance(trial_kind(resolve_truth(table)), ReplayedTrials)
    with pytest.raises(TruthError, match=r"no such truth file; expected a .toml truth file, a .parquet real-curve"):
        resolve_truth(str(tmp_path / "absent.parquet"))


def test_a_replayed_study_runs_at_the_tables_epochs_whatever_the_preset(table):
    plan = simulated_plan(SearchConfig("absa", simulate=table, search="grid"))  # the full preset: 4 epochs
    assert plan.base.epochs == 3 and plan.invocation.epochs == 3 and plan.trials == 43
    halving = simulated_plan(SearchConfig("absa", simulate=table, search="cells-halving", screen_fraction=0.25))
    assert halving.screen == 0.25 and halving.trials == 43


@pytest.mark.parametrize(
    "flags, refusal",
    [
        ({"search": "tpe"}, r"--search tpe tries configs beyond the grid's cells; a table replays only its cells"),
        ({"search": "cells-halving", "trials": 60}, r"60 trials tries 17 configs after the grid's 43 cells"),
        ({"search": "cells-halving"}, r"the screen point 0.3 is not in the table \(--screen-fraction 0.25 replays"),
        ({"search": "grid", "epochs": 4}, r"--epochs 4: the table .* holds runs of 3 epochs; a replay runs at"),
        ({"search": "grid", "metric": "train/loss"}, r"--metric train/loss/mean: not in the table"),
    ],
)
def test_what_a_table_cannot_replay_is_refused_before_anything_runs(table, flags, refusal):
    with pytest.raises(Exception, match=refusal) as refused:
        simulated_plan(SearchConfig("absa", simulate=table, **flags))
    assert "\n" not in str(refused.value)


def test_a_table_short_of_a_cell_refuses_the_study_that_needs_it(tmp_path):
    path = grid_table(tmp_path / "t.parquet")
    frame = read_table(path).frame
    few = frame[frame["cell"] != frame["cell"].iloc[0]]
    write_table(path, few.to_dict("records"), read_table(path).meta)
    with pytest.raises(TableError, match=r"is not a cell of this table"):
        simulated_plan(SearchConfig("absa", simulate=path, search="grid"))


def test_a_replayed_grid_and_screen_select_the_tables_best_cell(truth):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for flags in (
        {"search": "grid", "seeds": 1, "grace_period": 3},
        {"search": "cells-halving", "screen_fraction": 0.25},
    ):
        study = simulate(SearchConfig("absa", simulate=truth.path, max_concurrent=4, **flags), truth)
        pick = selections(study, truth)[-1]
        chosen = next(t for t in study.trials if t.trial_id == pick.trial_id)
        assert truth.cell(chosen.trial_config.training()) == truth.best_cell()
        assert pick.true == pytest.approx(score(BEST, 2, 3, 3))


def test_the_replayed_flags_are_the_trainers_over_the_points_the_trial_reports(tmp_path, monkeypatch):
    from trainables.results import DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL

    dips = {0.25: 0.70, 1.0: 0.55, 2.0: 0.58, 3.0: 0.72}  # learned at the screen, at or below 0.58 at 1 and 2

    def dipping(i, seed, point, epochs, plain=score):
        return dips[point] if (i, seed) == (BEST, 1) else plain(i, seed, point, epochs)

    monkeypatch.setattr(f"{__name__}.score", dipping)
    truth = load_truth(resolve_truth(grid_table(tmp_path / "dips.parquet")))
    config, flags = grid_configs()[BEST], (DEGENERATE, DEGENERATE_UNTIL, LEARNED_UNTIL)
    with_screen = (0.25, 1.0, 2.0, 3.0)
    at = {p: [truth.degeneracy(config, 1, p, with_screen)[k] for k in flags] for p in with_screen}
    assert at == {0.25: [0, 0, 0.25], 1.0: [1, 1, 0.25], 2.0: [1, 2, 0.25], 3.0: [0, 2, 3]}
    # a trial that reports no screen point has never been seen to learn before epoch 3
    assert [truth.degeneracy(config, 1, 2.0, (1.0, 2.0, 3.0))[k] for k in flags] == [1, 2, 0]
    assert truth.degeneracy(config, 1, 2.0) == truth.degeneracy(config, 1, 2.0, (1.0, 2.0, 3.0))  # the default
    assert [truth.degeneracy(config, 2, 2.0, with_screen)[k] for k in flags] == [0, 0, 2]  # another seed learns
    trial = truth.trial_metrics(config, "k", [1, 2], 2.0, OBJECTIVE + "/mean", with_screen)
    assert trial[f"{LEARNED_UNTIL}/seed1"] == 0.25 and trial[f"{DEGENERATE}/seed1"] == 1
