from pathlib import Path

from search.answer.summary import Places, Side, Verdict, summary, where

PLACES = Places(
    tracking_uri="sqlite:////tmp/s/mlflow.db",
    optuna_storage="sqlite:///optuna.db",
    optuna_study="absa-smoke-1",
    tune_path="/tmp/s/ray_results/absa-smoke-1",
    report=Path("results/absa/absa-smoke-1/report.md"),
    experiment_id="3",
    run_name="absa-smoke-1",
    model_uri="models:/absa-best/2",
    log=Path("/home/u/.cache/mtl-search/logs/search-1.log"),
)


def test_summary_gives_the_verdict_the_sides_and_every_place():
    text = summary(
        "absa",
        [Verdict("acc_4way", "no significant difference", 0.0086, -0.0087, 0.0258, 3)],
        [Side("multitask", "t01 pos sequential", 0.8648, 0.0101), Side("single-task", "t02 single", 0.8611, 0.0019)],
        PLACES,
    )
    lines = text.splitlines()
    assert lines[0] == "== absa: the answer =="
    assert lines[1] == (
        "multitask vs single-task on test acc_4way, 3 fresh seeds: no significant difference "
        "(Δ +0.0086, 95.0% interval of this look [-0.0087, +0.0258])"
    )
    assert lines[2] == "multitask:   t01 pos sequential (dev 0.8648 ± 0.0101)"
    assert lines[3] == "single-task: t02 single (dev 0.8611 ± 0.0019)"
    assert "  report    results/absa/absa-smoke-1/report.md" in lines
    assert "  MLflow    mlflow ui --backend-store-uri sqlite:////tmp/s/mlflow.db" in lines
    assert "http://127.0.0.1:5000/#/experiments/3/runs?" in text and "viewStateShareKey=absa-smoke-1" in text
    assert "  model     models:/absa-best/2" in lines
    assert "  Optuna    sqlite:///optuna.db (study absa-smoke-1)" in lines
    assert lines[-2:] == [
        "  Tune      /tmp/s/ray_results/absa-smoke-1",
        "  log       /home/u/.cache/mtl-search/logs/search-1.log",
    ]


def test_summary_without_a_verdict_says_why_and_where():
    places = Places("sqlite:///m.db", "sqlite:///o.db", "r-1", "/t")
    text = summary("reviews", [], [], places, note="no multitask trial")
    assert "no verdict: no multitask trial" in text and "model     none registered" in text
    assert "report    none (--no-report)" in text and "trials" not in text  # no experiment id: no link


def test_a_tracking_server_is_linked_and_its_password_masked():
    rows = dict(where(Places("http://u:s3cret@host:5000/", "postgresql://u:s3cret@db/o", "r", "/t", None, "7", "r")))
    assert rows["MLflow"] == "open http://u:***@host:5000/"
    assert rows["trials"].startswith("http://u:***@host:5000/#/experiments/7/runs")
    assert "s3cret" not in rows["Optuna"]
    assert "final" not in rows  # nothing finalized: no view of final runs
    finalized = Places("sqlite:///m.db", "sqlite:///o.db", "r", "/t", None, "7", "r", finalized=True)
    assert dict(where(finalized))["final"].endswith(
        "#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=r-final"
    )


def test_failed_seeds_are_counted_and_a_single_pair_gives_no_nan_interval():
    nan = float("nan")
    v = Verdict("acc_4way", "too few seeds to tell", -0.0639, nan, nan, 1, fresh=3, failed=(2, 0))
    assert v.line() == (
        "multitask vs single-task on test acc_4way, 3 fresh seeds (2 failed on the multitask side, 0 on the other; "
        "compared on the 1 neither failed on): too few seeds to tell (Δ -0.0639, no interval from 1 seed)"
    )
    plain = Verdict("acc_4way", "better", 0.02, 0.01, 0.03, 5, level=0.958)
    assert plain.line().endswith("5 fresh seeds: better (Δ +0.0200, 95.8% interval of this look [+0.0100, +0.0300])")


def test_an_undecided_verdict_says_what_is_not_ruled_out_and_the_seeds_that_would_decide_it():
    v = Verdict("acc_4way", "undecided", 0.02, -0.01, 0.05, 5, level=0.958, margin=0.03, needed=14)
    assert v.line().endswith(
        "undecided (Δ +0.0200, 95.8% interval of this look [-0.0100, +0.0500]); neither 0 nor a gain of +0.0300 is "
        "ruled out: about 14 final seeds would decide it (search.finalize --seeds 14)"
    )
    same = Verdict("acc_4way", "no significant difference", 0.0, -0.01, 0.01, 5, margin=0.03)
    assert same.line().endswith("[-0.0100, +0.0100]); a gain of +0.0300 is ruled out")


def test_no_seed_left_to_compare_prints_no_nan_difference():
    nan = float("nan")
    v = Verdict("acc_4way", "too few seeds to tell", nan, nan, nan, 0, fresh=3, failed=(3, 0))
    assert v.line() == (
        "multitask vs single-task on test acc_4way, 3 fresh seeds (3 failed on the multitask side, 0 on the other; "
        "compared on the 0 neither failed on): too few seeds to tell (no difference to show: no seed left to compare)"
    )
    assert "nan" not in v.line()
