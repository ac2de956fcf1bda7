"""Optuna search spaces and study definitions."""

from spaces.canonical import (
    apply_choices,
    baseline_choices,
    canonical,
    canonical_key,
    config_label,
    run_name,
    schema_label,
    task_points,
    thesis_grid,
)
from spaces.space import define_space
from spaces.studies import Preset, Range, Study
from spaces.study_file import StudyFileError, builtin_studies, get_study, load_study

__all__ = [
    "Preset",
    "Range",
    "Study",
    "StudyFileError",
    "apply_choices",
    "baseline_choices",
    "builtin_studies",
    "canonical",
    "canonical_key",
    "config_label",
    "define_space",
    "get_study",
    "load_study",
    "run_name",
    "schema_label",
    "task_points",
    "thesis_grid",
]
