"""The values of a study file, read one key at a time: numbers, ranges, lists; a bad one is one line
(``FILE: KEY: expected ..., got ...``). Used by :mod:`spaces.study_file` and :mod:`spaces.strategy_keys`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spaces.studies import Range
from trainables.config import ConfigError

LOG_RANGES = ("lr", "weight")  # searched on a log scale


class StudyFileError(ConfigError):
    """A bad study file: one line, ``FILE: KEY: what was expected``."""

    def __init__(self, path: Path | str, key: str, message: str) -> None:
        super().__init__(f"{path}: {key}: {message}" if key else f"{path}: {message}")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def expect(ok: bool, path: Path, key: str, value: Any, what: str) -> None:
    if not ok:
        raise StudyFileError(path, key, f"expected {what}, got {value!r}")


def read_range(path: Path, key: str, value: Any) -> Range:
    """``[low, high]`` is searched, a number is fixed (low = high)."""
    log = key in LOG_RANGES
    if is_number(value):
        return Range(float(value), float(value), log)
    expect(
        isinstance(value, list) and len(value) == 2 and all(map(is_number, value)),
        path,
        key,
        value,
        "[LOW, HIGH] (searched) or a number (fixed)",
    )
    return Range(float(value[0]), float(value[1]), log)


def read_optional_range(path: Path, key: str, value: Any) -> Range | None:
    """As :func:`read_range`; ``false`` keeps the preset's value (else the thesis default)."""
    return None if value is False else read_range(path, key, value)


def read_batch_sizes(path: Path, key: str, value: Any) -> tuple[int, ...] | None:
    if value is False:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    expect(
        isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
        path,
        key,
        value,
        "a list of batch sizes (searched), a batch size (fixed) or false (the preset's)",
    )
    return tuple(value)


def read_strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    expect(isinstance(value, list) and all(isinstance(v, str) for v in value), path, key, value, "a list of strings")
    return tuple(value)


def read_string(path: Path, key: str, value: Any) -> str:
    expect(isinstance(value, str) and value.strip() != "", path, key, value, "a non-empty string")
    return value
