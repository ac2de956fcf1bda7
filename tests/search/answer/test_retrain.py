"""Finalize's runs share the CPUs its slots would hold: no arm trains alone while a core waits."""

from dataclasses import replace

from search.answer.config import FINAL_RESOURCES, FinalizeConfig
from search.answer.retrain import final_slots


def test_three_arms_on_two_cpu_slots_run_at_once_on_the_same_cpus():
    cfg = FinalizeConfig("absa", resources=replace(FINAL_RESOURCES, max_concurrent=2, cpus_per_trial=1.0))
    cpus, concurrent = final_slots(cfg, 3)
    assert concurrent == 3 and cpus * 3 <= 2.0 and cpus > 0.66  # what two slots held, in Ray's 1e-4 units


def test_with_gpus_or_enough_slots_nothing_changes():
    assert final_slots(FinalizeConfig("absa", resources=replace(FINAL_RESOURCES, max_concurrent=4)), 3) == (1.0, 4)
    assert final_slots(
        FinalizeConfig("absa", resources=replace(FINAL_RESOURCES, max_concurrent=2, gpus_per_trial=1.0)), 3
    ) == (1.0, 2)
