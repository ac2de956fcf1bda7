"""The package's names for Tune's trial statuses are Ray's."""

from ray.tune.experiment.trial import Trial

from search.infra import tune_status


def test_the_statuses_are_rays():
    for name in ("PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR"):
        assert getattr(tune_status, name) == getattr(Trial, name)
    assert tune_status.ENDED == (Trial.TERMINATED, Trial.ERROR)
