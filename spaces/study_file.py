"""Studies from TOML files: ``python -m search.run my-study.toml``.

One format, one loader: the built-in studies are files too (``spaces/builtin/*.toml``,
package data), read by :func:`load_study` like a user's. A file names the study's
primary task, its auxiliary candidates (any spec ``get_task`` accepts; a file option
such as ``csv:topics.json`` is relative to the study file), the objective, the
schemas, ranges, weights, presets and published rows; what it leaves out takes the
defaults of :class:`~spaces.studies.Study` and :data:`~spaces.studies.DEFAULT_PRESETS`.

Everything is checked here, before any data is read or Ray starts: a bad file is one
:class:`StudyFileError` line naming the file, the key and what was expected.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import warnings
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from spaces.file_values import (
    StudyFileError,
    expect,
    is_number,
    read_batch_sizes,
    read_optional_range,
    read_range,
    read_string,
    read_strings,
)
from spaces.strategy_keys import STRATEGY_KEYS, read_strategies
from spaces.studies import DEFAULT_PRESETS, Preset, Range, Study, smoke_note
from trainables.config import TIERS, ConfigError
from trainables.tasks import DataError, Example, Task, get_task

BUILTIN = Path(__file__).parent / "builtin"  # package data (pyproject.toml)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # an MLflow experiment and a folder name
SEARCH = "search"  # ``weights = "search"``
DEFAULT_WEIGHT = Range(0.125, 8.0, log=True)  # searched weight of an auxiliary, relative to the primary's
KEYS = (
    "name",
    "primary",
    "candidates",
    "metric",
    "mode",
    "schemas",
    "exponent",
    "anneal_c",
    "lr",
    "warmup",
    "batch_sizes",
    "weights",
    "weight",
    "presets",
    "published",
    *STRATEGY_KEYS,  # issue 19's, off unless set
)


# -- tasks --------------------------------------------------------------------
def task_spec(path: Path, key: str, spec: Any) -> str:
    """A task spec with a file option (``csv:topics.json``) made absolute, from the study file's folder."""
    spec = read_string(path, key, spec)
    base, sep, option = spec.partition(":")
    if option and Path(option).suffix:  # names a file (constructions such as NLI_M have no suffix)
        file = (path.parent / option).resolve()
        if not file.is_file():
            raise StudyFileError(
                path, key, f"task file {file} does not exist (a relative path is read from the study file's folder)"
            )
        return f"{base}{sep}{file}"
    return spec


def task(path: Path, key: str, spec: str) -> Task:
    try:
        return get_task(spec, Path("."))  # reads a task's config file, never its data
    except DataError as exc:
        raise StudyFileError(path, key, str(exc)) from None


def metric_names(task: Task) -> set[str]:
    """The metrics ``task`` reports, from one made-up evaluation group (no data read)."""
    label: int | tuple[int, ...] = (0,) if task.kind == "tagging" else 0
    rows = [Example(str(i), "x", None, label) for i in range(task.group_size)]
    probs = np.full((len(rows), task.num_labels), 1.0 / task.num_labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an AUC over one class is NaN, with a warning
        return set(task.metrics(probs, rows))


def read_weights(path: Path, value: Any, primary: str, candidates: tuple[str, ...]) -> dict[str, float]:
    """``{"sst2": "tertiary", "pos": 1.5}`` -> weights by candidate spec (as ``candidates`` spells them)."""
    expect(
        isinstance(value, dict),
        path,
        "weights",
        value,
        f'a table of tiers or numbers per auxiliary task, or "{SEARCH}"',
    )
    out = {}
    for name, w in value.items():
        key = f"weights.{name}"
        spec = task_spec(path, key, name)
        if spec == primary:
            raise StudyFileError(
                path,
                key,
                f"the primary weighs its tier ({TIERS['primary']:g}); expected "
                "weights of auxiliary candidates only, relative to it",
            )
        if spec not in candidates:
            raise StudyFileError(path, key, f"{name!r} is no candidate; expected one of {', '.join(candidates)}")
        if isinstance(w, str) and w in TIERS:
            w = TIERS[w]
        expect(is_number(w) and w > 0, path, key, w, f"a positive number or a tier ({', '.join(TIERS)})")
        out[spec] = float(w)
    return out


# -- presets and published rows -----------------------------------------------
def preset_reader(hint: str) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    """(accepts, what it expects, convert) for a Preset field's type annotation."""
    readers: dict[str, tuple[Callable[[Any], bool], str, Callable[[Any], Any]]] = {
        "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", int),
        "bool": (lambda v: isinstance(v, bool), "true or false", bool),
        "float": (is_number, "a number", float),
        "str": (lambda v: isinstance(v, str), "a string", str),
        "Range": (
            lambda v: isinstance(v, list) and len(v) == 2 and all(map(is_number, v)),
            "[low, high] (searched on a log scale)",
            lambda v: Range(float(v[0]), float(v[1]), log=True),
        ),
        "tuple[int, ...]": (
            lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
            "a list of integers",
            tuple,
        ),
    }
    base, optional = hint.removesuffix(" | None"), hint.endswith(" | None")
    accepts, what, convert = readers[base]
    if not optional:
        return accepts, what, convert
    return (
        (lambda v: v is False or accepts(v)),
        f"{what} or false (unset)",
        (lambda v: None if v is False else convert(v)),
    )


def read_preset(path: Path, name: str, value: Any, primary_key: Callable[[str, Any], str]) -> Preset:
    """A ``[presets.NAME]`` table over the default preset of that name (else ``Preset()``)."""
    key = f"presets.{name}"
    expect(isinstance(value, dict), path, key, value, "a table of preset fields")
    fields = {f.name: f for f in dataclasses.fields(Preset)}
    changes = {}
    for field, v in value.items():
        if field not in fields:
            raise StudyFileError(path, f"{key}.{field}", f"unknown key; expected one of {', '.join(fields)}")
        accepts, what, convert = preset_reader(str(fields[field].type))
        expect(accepts(v), path, f"{key}.{field}", v, what)
        changes[field] = primary_key(f"{key}.{field}", v) if field == "primary" and v is not False else convert(v)
    try:
        preset = dataclasses.replace(DEFAULT_PRESETS.get(name, Preset()), **changes)
        if name == "smoke" and "note" not in changes:  # the default note describes the default values
            preset = dataclasses.replace(preset, note=smoke_note(preset))
        return preset
    except ConfigError as exc:
        raise StudyFileError(path, key, str(exc)) from None


def read_published(path: Path, value: Any, metrics: set[str]) -> dict[str, dict[str, float]]:
    expect(isinstance(value, dict), path, "published", value, "tables of metric = value, one per source")
    out = {}
    for source, row in value.items():
        expect(isinstance(row, dict), path, f"published.{source}", row, "a table of metric = value")
        for metric, v in row.items():
            key = f"published.{source}.{metric}"
            if metric not in metrics:
                raise StudyFileError(path, key, f"unknown metric; expected one of {', '.join(sorted(metrics))}")
            expect(is_number(v), path, key, v, "a number")
        out[source] = {metric: float(v) for metric, v in row.items()}
    return out


# -- the file -----------------------------------------------------------------
def load_study(path: str | Path) -> Study:
    """Read and check the study file at ``path`` (see the module docstring)."""
    path = Path(path)
    raw = read_toml(path)
    values, primary = read_tasks(path, raw)
    metrics = metric_names(primary)
    values.update(read_objective(path, raw, metrics, primary.name))
    values.update(read_dimensions(path, raw, values["primary"], values["candidates"]))
    presets = raw.get("presets", {})
    expect(isinstance(presets, dict), path, "presets", presets, "tables [presets.NAME] of preset fields")
    values["presets"] = {
        **DEFAULT_PRESETS,
        **{
            name: read_preset(path, name, table, lambda key, spec: task_spec(path, key, spec))
            for name, table in presets.items()
        },
    }
    if "published" in raw:
        values["published"] = read_published(path, raw["published"], metrics)
    try:
        return Study(**values)
    except ConfigError as exc:
        raise StudyFileError(path, "", str(exc)) from None


def read_toml(path: Path) -> dict[str, Any]:
    """The file's tables, its keys known and the required ones there."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyFileError(path, "", f"cannot read the study file ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise StudyFileError(path, "", f"not valid TOML ({exc})") from None
    for key in raw:
        if key not in KEYS:
            raise StudyFileError(path, key, f"unknown key; expected one of {', '.join(KEYS)}")
    for key in ("name", "primary", "candidates", "metric"):
        if key not in raw:
            raise StudyFileError(path, key, "missing; a study needs name, primary, candidates and metric")
    return raw


def read_tasks(path: Path, raw: Mapping[str, Any]) -> tuple[dict[str, Any], Task]:
    """Name, primary and candidates: tasks known, their files there, each task once."""
    name = read_string(path, "name", raw["name"])
    expect(
        NAME.fullmatch(name) is not None,
        path,
        "name",
        name,
        "letters, digits, '_', '.' or '-' (it names the MLflow experiment and the result folders)",
    )
    values: dict[str, Any] = {"name": name, "primary": task_spec(path, "primary", raw["primary"])}
    specs = read_strings(path, "candidates", raw["candidates"])
    values["candidates"] = tuple(task_spec(path, "candidates", spec) for spec in specs)
    if not specs:  # every schema samples between tasks: with the primary alone, each is plain fine-tuning
        schemas = raw.get("schemas", Study.__dataclass_fields__["schemas"].default)
        schemas = schemas if isinstance(schemas, (list, tuple)) else [schemas]
        raise StudyFileError(
            path,
            "candidates",
            f"empty, but the schemas ({', '.join(map(str, schemas))}) sample "
            "between several tasks; expected at least one auxiliary task",
        )
    primary = task(path, "primary", values["primary"])
    seen = {primary.name: values["primary"]}
    for spec in values["candidates"]:
        name = task(path, "candidates", spec).name
        if name in seen:
            what = (
                "is the primary task" if spec == values["primary"] else f"is the same task ({name}) as {seen[name]!r}"
            )
            raise StudyFileError(
                path, "candidates", f"{spec!r} {what}; expected other tasks (a task's metrics would share keys)"
            )
        seen[name] = spec
    return values, primary


def read_objective(path: Path, raw: Mapping[str, Any], metrics: set[str], task_name: str) -> dict[str, Any]:
    metric = read_string(path, "metric", raw["metric"])
    if metric not in metrics:
        raise StudyFileError(
            path, "metric", f"{metric!r} is no metric of {task_name}; expected one of {', '.join(sorted(metrics))}"
        )
    return {"metric": metric, **({"mode": read_string(path, "mode", raw["mode"])} if "mode" in raw else {})}


def read_dimensions(path: Path, raw: Mapping[str, Any], primary: str, candidates: tuple[str, ...]) -> dict[str, Any]:
    """Schemas, ranges (searched, fixed, or for the optional ones left to the preset) and weights."""
    values: dict[str, Any] = {}
    if "schemas" in raw:
        values["schemas"] = read_strings(path, "schemas", raw["schemas"])
    for key in ("exponent", "anneal_c"):
        if key in raw:
            values[key] = read_range(path, key, raw[key])
    for key in ("lr", "warmup"):
        if key in raw:
            values[key] = read_optional_range(path, key, raw[key])
    if "batch_sizes" in raw:
        values["batch_sizes"] = read_batch_sizes(path, "batch_sizes", raw["batch_sizes"])
    if isinstance(raw.get("weights"), str) and raw["weights"] != SEARCH:  # a misspelt "search" is the error
        raise StudyFileError(path, "weights", f'{raw["weights"]!r}: expected "{SEARCH}" or a table of task = weight')
    if raw.get("weights") == SEARCH:
        values["weight"] = read_range(path, "weight", raw["weight"]) if "weight" in raw else DEFAULT_WEIGHT
    elif "weight" in raw:
        raise StudyFileError(path, "weight", f'a range of searched weights; expected weights = "{SEARCH}" beside it')
    elif "weights" in raw:
        values["weights"] = read_weights(path, raw["weights"], primary, candidates)
    values.update(read_strategies(path, raw))
    return values


# -- built-in and loaded studies ----------------------------------------------
@cache
def builtin_studies() -> Mapping[str, Study]:
    """The studies shipped with the package, by name (each file is named after its study)."""
    studies = {}
    for path in sorted(BUILTIN.glob("*.toml")):
        study = load_study(path)
        if study.name != path.stem:
            raise StudyFileError(path, "name", f"{study.name!r}; expected {path.stem!r}, the file's name")
        studies[study.name] = study
    return studies


_loaded: dict[str, Study] = {}  # studies this process read from files, by name


def get_study(spec: str) -> Study:
    """A built-in study by name, or the study in the ``.toml`` file ``spec``.

    A study read from a file is then also known by its name, in this process: the name
    is what the MLflow experiment, the Tune and Optuna studies and the result folders use.
    """
    builtin = builtin_studies()
    if spec in builtin:
        return builtin[spec]
    if spec in _loaded:
        return _loaded[spec]
    if spec.endswith(".toml") or Path(spec).is_file():
        study = load_study(spec)
        if study.name in builtin and study != builtin[study.name]:
            raise StudyFileError(spec, "name", f"{study.name!r} is a built-in study; expected another name")
        _loaded[study.name] = study
        return study
    raise ConfigError(
        f"unknown study {spec!r}: expected a built-in study ({', '.join(sorted(builtin))}) or a .toml study file"
    )


def seeds_text(seeds: tuple[int, ...] | None) -> str:
    if seeds is None:
        return "the search strategy's seeds"
    return f"{len(seeds)} {'seed' if len(seeds) == 1 else 'seeds'}"


def listing(studies: Mapping[str, Study]) -> str:
    """What ``python -m search.run --list`` prints: each study's tasks, objective and presets."""
    lines = []
    for study in studies.values():
        lines += [
            study.name,
            f"  primary     {study.primary}",
            f"  candidates  {', '.join(study.candidates)}",
            f"  metric      {study.metric} ({study.mode})",
            "  presets     "
            + "; ".join(
                f"{name}: {p.model}, {p.epochs} epochs, {p.trials} trials, {seeds_text(p.seeds)}"
                + (f", primary {p.primary}" if p.primary else "")
                for name, p in study.presets.items()
            ),
        ]
    return "\n".join(lines)
