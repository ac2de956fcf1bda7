import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from search.answer import plots as plots_module
from search.answer.plots import Point, objective_curves, plots, varying

OBJECTIVE = "semeval/dev/acc_4way/mean"


def table(n: int) -> pd.DataFrame:
    """``n`` trials as the report's trial table has them: the baseline, then multitask and single-task
    trials, every third pruned, the last failed."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        multitask = i % 2 == 1
        status = "failed" if i == n - 1 else ("pruned" if i % 3 == 2 else "completed")
        rows.append(
            {
                "run_id": f"r{i}",
                "label": f"t{i:02d} " + ("sst2 square" if multitask else "single"),
                "status": status,
                "baseline": i == 0,
                "auxiliary": "sst2" if multitask else "none",
                "schema": "square" if multitask else "single",
                "exponent": np.nan,
                "lr": float(10 ** rng.uniform(-5, -4)),
                "warmup": float(rng.uniform(0, 0.2)),
                "epochs": 1 if status == "pruned" else 3,
                "objective": np.nan if status == "failed" else float(rng.uniform(0.6, 0.7)),
                "objective_std": 0.01,
                "start_time": i,
            }
        )
    return pd.DataFrame(rows)


def curves(t: pd.DataFrame) -> dict[str, list[tuple[int, float]]]:
    return {r.run_id: [(e, 0.55 + 0.03 * e) for e in range(1, r.epochs + 1)] for r in t.itertuples()}


def test_the_report_draws_importances_parallel_coordinates_and_learning_curves(tmp_path):
    t = table(12)
    paths = plots(t, tmp_path, OBJECTIVE, "max", 2, majority=0.58, curves=curves(t))
    names = {p.name for p in paths}
    assert {"param_importances.png", "parallel_coordinates.png", "learning_curves.png"} <= names
    for p in paths:
        assert Image.open(p).size[0] > 300  # a real image, not an empty file


@pytest.mark.parametrize("seeds, said", [(3, "(mean ± std over 3 seeds)"), (1, "(one seed per trial)")])
def test_the_per_group_titles_say_the_seeds_each_trial_had(tmp_path, monkeypatch, seeds, said):
    titles = []
    real_save = plots_module.save

    def save(fig, ax, path, legend=True):
        titles.append(ax.get_title())
        return real_save(fig, ax, path, legend)

    monkeypatch.setattr(plots_module, "save", save)
    plots(table(6), tmp_path, OBJECTIVE, "max", seeds)
    per_group = [t for t in titles if t.startswith("objective per")]
    assert per_group and all(t.endswith(said) for t in per_group), titles


def test_too_few_completed_trials_give_no_importances(tmp_path):
    t = table(3)  # the baseline and one multitask trial completed, one failed
    names = {p.name for p in plots(t, tmp_path, OBJECTIVE, "max", 2)}
    assert "param_importances.png" not in names and "learning_curves.png" not in names  # no curves given


def test_only_dimensions_every_trial_has_and_that_differ_are_axes():
    t = table(12)
    assert [c for c, _ in varying(t[t.status == "completed"])] == ["auxiliary", "schema", "lr", "warmup"]


def exposed(t: pd.DataFrame) -> dict[str, list[Point]]:
    """``curves`` with the primary's passes: one an epoch single-task, 0.4 an epoch multitask."""
    return {
        r.run_id: [
            Point(e, 0.55 + 0.03 * e, e * (0.4 if r.auxiliary != "none" else 1.0)) for e in range(1, r.epochs + 1)
        ]
        for r in t.itertuples()
    }


def test_learning_curves_add_a_panel_per_primary_pass_where_the_results_carry_them(tmp_path, monkeypatch):
    drawn = []
    real_save = plots_module.save

    def save(fig, ax, path, legend=True):
        if path.name == "learning_curves.png":
            drawn.append(
                {a.get_xlabel(): {line.get_label(): list(line.get_xdata()) for line in a.lines} for a in fig.axes}
            )
        return real_save(fig, ax, path, legend)

    monkeypatch.setattr(plots_module, "save", save)
    t = table(6)
    plots(t, tmp_path, OBJECTIVE, "max", 2, curves=curves(t))  # a study from before passes were logged
    plots(t, tmp_path, OBJECTIVE, "max", 2, curves=exposed(t))
    before, now = drawn
    assert list(before) == ["epoch"] and list(now) == ["epoch", "passes over the primary's training rows"]
    passes = now["passes over the primary's training rows"]
    assert passes["t00 single"] == [1.0, 2.0, 3.0] and passes["t01 sst2 square"] == pytest.approx([0.4, 0.8, 1.2])
    assert now["epoch"]["t01 sst2 square"] == [1, 2, 3]


def test_objective_curves_read_the_passes_logged_at_each_step():
    history = {
        ("a", "objective"): [(0, 0.5), (1, 0.6), (2, 0.7)],
        ("a", "screen/epoch"): [(0, 0.4)],  # the screen point inside the first epoch, logged at step 0
        ("a", "primary_passes"): [(0, 0.16), (1, 0.4), (2, 0.8)],
        ("b", "objective"): [(1, 0.6)],  # a study from before passes were logged
    }
    client = SimpleNamespace(
        get_metric_history=lambda run, key: [SimpleNamespace(step=s, value=v) for s, v in history.get((run, key), [])]
    )
    curves = objective_curves(client, pd.DataFrame({"run_id": ["a", "b"]}))
    assert curves["a"] == [(0.4, 0.5, 0.16), (1.0, 0.6, 0.4), (2.0, 0.7, 0.8)]
    assert curves["b"][0][:2] == (1.0, 0.6) and math.isnan(curves["b"][0].passes)
