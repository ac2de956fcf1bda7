"""Study files: the built-ins as TOML, the loader's checks, ``search.run --list``."""

import dataclasses

import pytest

from spaces.studies import STUDIES
from spaces.study_file import BUILTIN, load_study


@pytest.mark.parametrize("name", ["absa", "sentihood"])
def test_builtin_file_equals_the_python_study(name):
    loaded, expected = load_study(BUILTIN / f"{name}.toml"), STUDIES[name]
    for field in dataclasses.fields(expected):
        if field.name != "presets":
            assert getattr(loaded, field.name) == getattr(expected, field.name), field.name
    assert list(loaded.presets) == list(expected.presets)
    for preset in expected.presets:
        for field in dataclasses.fields(expected.presets[preset]):
            got, want = (getattr(p.presets[preset], field.name) for p in (loaded, expected))
            assert got == want, (preset, field.name)
    assert loaded == expected
