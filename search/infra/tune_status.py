"""Ray Tune's trial statuses, named once for the whole package and spelled out, so that the modules a report or
the tracking path loads need not import Ray (``search.report`` imports none). They are Ray 2.60's
``ray.tune.experiment.trial.Trial`` constants; tests/search/infra/test_tune_status.py holds them equal."""

PENDING, RUNNING, PAUSED, TERMINATED, ERROR = "PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR"
ENDED = (TERMINATED, ERROR)  # the statuses that end a trial: any other may still run
