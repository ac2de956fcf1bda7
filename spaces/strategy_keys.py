"""Study-file keys of issue 19's strategies, read into :class:`~spaces.studies.Study` fields.

Each is off unless the file sets it; :mod:`spaces.study_file` lists these keys beside its own and
hands them here (both read values with :mod:`spaces.file_values`). Choices are a list (searched) or one
string (fixed); ranges ``[LOW, HIGH]`` (searched) or a number (fixed).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from spaces.file_values import expect, is_number, read_optional_range, read_range

CHOICES = ("bandit_reward", "loss_weighting", "step_modes", "gradients", "unfreeze")  # each a Study field
RANGES = {"bandit_lr": True, "bandit_explore": False, "unfreeze_every": True}  # key -> searched on a log scale
STRATEGY_KEYS = (*CHOICES, *RANGES, "bandit_every", "layer_decay")


def read_strategies(path: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """The strategy keys of a study file's top level, as Study fields."""
    values: dict[str, Any] = {}
    for key in CHOICES:
        if key in raw:
            value = [raw[key]] if isinstance(raw[key], str) else raw[key]
            ok = isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
            expect(ok, path, key, raw[key], "a list of choices (searched) or one choice (fixed)")
            values[key] = tuple(value)
    for key, log in RANGES.items():
        if key in raw:
            values[key] = dataclasses.replace(read_range(path, key, raw[key]), log=log)
    if "bandit_every" in raw:
        value = raw["bandit_every"]
        expect(is_number(value) and int(value) == value, path, "bandit_every", value, "a whole number of steps")
        values["bandit_every"] = int(value)
    if "layer_decay" in raw:
        values["layer_decay"] = read_optional_range(path, "layer_decay", raw["layer_decay"])
    return values


__all__ = ["STRATEGY_KEYS", "read_strategies"]
