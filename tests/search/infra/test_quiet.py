import io
import logging
import subprocess
import sys
import textwrap

import pytest

from search.infra.quiet import Console


def records(log, *entries):
    """Each ``(logger, level, message, exc_info)`` through a console handler filtered by Console."""
    out = io.StringIO()
    console = logging.StreamHandler(out)
    console.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    console.addFilter(Console(console, log))
    for name, level, message, exc_info in entries:
        console.handle(logging.LogRecord(name, level, "x.py", 1, message, (), exc_info))
    return out.getvalue()


def test_a_failed_trial_is_one_line_naming_the_trial_and_the_log(tmp_path):
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        exc_info = sys.exc_info()
    record = ("ray.tune.execution.tune_controller", logging.ERROR, "Trial task failed for trial fn_00003", exc_info)
    out = records(tmp_path / "s.log", record)
    assert out == f"ERROR trial fn_00003 failed: ValueError: boom (traceback in {tmp_path / 's.log'})\n"


def test_tune_advice_and_its_resume_hint_stay_off_the_console(tmp_path):
    out = records(
        tmp_path / "s.log",
        ("ray.tune.execution.experiment_state", logging.WARNING, "Experiment state snapshotting ...", None),
        ("ray.tune.tune", logging.WARNING, 'Resume experiment with: Tuner.restore(path="/x", trainable=...)', None),
        ("search.run", logging.WARNING, "a warning of the study's own", None),
    )
    assert out == "WARNING a warning of the study's own\n"


@pytest.mark.slow
def test_a_ray_trial_traceback_reaches_the_log_file_not_the_console(tmp_path):
    script = textwrap.dedent(
        """
        import ray
        from ray import tune
        from search.infra.quiet import log_path, quiet_console, worker_setup
        from trainables.cli import setup_logging

        setup_logging(False)
        quiet_console(False)
        ray.init(num_cpus=1, include_dashboard=False, runtime_env=worker_setup())

        def boom(config):
            raise ValueError("boom in the trainable")

        failure = tune.FailureConfig(max_failures=0)
        run = tune.RunConfig(storage_path=STORAGE, verbose=0, failure_config=failure)
        tune.Tuner(boom, run_config=run).fit()
        import logging, mlflow.pyfunc  # noqa: E401, F401  (as the registry does, late)
        logging.getLogger("mlflow.pyfunc").warning("Passing a Python object as `python_model` causes ...")
        print(log_path())
        """
    ).replace("STORAGE", repr(str(tmp_path / "rr")))
    env = {"MTL_CACHE_DIR": str(tmp_path / "cache"), "RAY_AUTH_MODE": "disabled", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    log = r.stdout.strip().splitlines()[-1]
    errors = [line for line in r.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "failed: ValueError: boom in the trainable (traceback in " + log in errors[0], r.stderr
    text = open(log).read()
    assert "Traceback" not in r.stderr and "Traceback" in text and "ValueError: boom in the trainable" in text
    assert "python_model" not in r.stderr and "python_model" in text  # MLflow's own handler filtered too


def test_an_exit_inside_a_finalizer_stays_off_the_console_and_other_unraisables_do_not():
    """A worker told to exit while a WeakSet callback runs printed "Exception ignored in ... SystemExit: 1",
    which Ray forwards to the driver's console; the hook every worker gets keeps that one out."""
    script = (
        "import gc, sys\n"
        "from search.infra.quiet import quiet_loggers\n"
        "quiet_loggers()\n"
        "class Exits:\n"
        "    def __del__(self):\n"
        "        raise SystemExit(1)\n"
        "class Fails:\n"
        "    def __del__(self):\n"
        "        raise ValueError('a real bug')\n"
        "Exits(); Fails(); gc.collect()\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "SystemExit" not in r.stderr and "ValueError: a real bug" in r.stderr, r.stderr
