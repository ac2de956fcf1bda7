"""Optuna search spaces and study definitions."""

from spaces.canonical import (
    apply_choices, baseline_choices, canonical, canonical_key, describe, run_name, schema_label, thesis_grid,
)
from spaces.space import define_space
from spaces.studies import STUDIES, Preset, Range, Study, get_study

__all__ = [
    "STUDIES", "Preset", "Range", "Study", "apply_choices", "baseline_choices", "canonical", "canonical_key",
    "define_space", "describe", "get_study", "run_name", "schema_label", "thesis_grid",
]
