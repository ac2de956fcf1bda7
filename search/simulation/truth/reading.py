"""A truth file's TOML, checked key by key into a :class:`~search.simulation.truth.model.Truth`.

Layout (every table optional except ``[tasks.<primary>]``; docs/truth-files.md, every key)::

    name = "null"              primary = "semeval"          seed = 0
    [noise]      seed_sd, shared_seed_sd, eval_sd, test_offset
    [auxiliary]  <task> = gain
    [schema]     sequential = gain, anneal = gain
    [exponent]   peak, depth       [anneal_c] peak, depth
    [lr]         peak, depth       [warmup]   peak, depth
    [[bonus]]    gain, and any of: auxiliary = [...], contains = [...], schemas = [...],
                 exponent = [low, high], anneal_c = [low, high]
    [[curve]]    deficit = [d1, ..., d(E-1)], and any of bonus's matching keys, or single_task = true
    [[collapse]] lr_above, probability
    [strategy]   bandit, all_tasks, uncertainty, pcgrad, unfreeze = gain where it acts
    [layer_decay] peak, depth
    [learning]   gap, multitask_gap, loss_start, loss_end
    [time]       seconds_per_epoch, scale, steps_per_epoch
    [tasks.<task>]  <metric> = true base score
    [majority]   <metric> = the constant predictor's score on the primary
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from search.simulation.truth.model import STRATEGIES, Learning, Noise, Timing, Truth, TruthError
from search.simulation.truth.terms import Bonus, Collapse, Curve, LearningCurve, Match
from trainables.sampling import SAMPLERS

TOP = ("name", "primary", "seed", "noise", "auxiliary", "schema", "exponent", "anneal_c", "lr", "warmup")
TOP += ("bonus", "strategy", "layer_decay", "learning", "time", "tasks", "majority", "curve", "collapse")
MATCH = ("auxiliary", "contains", "schemas", "exponent", "anneal_c")  # what [[bonus]] and [[curve]] match on
NONNEGATIVE = {"seed_sd", "shared_seed_sd", "eval_sd", "depth", "seconds_per_epoch", "scale", "gap", "multitask_gap"}


def number(value: Any, where: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TruthError(f"{path}: {where} = {value!r}: expected a finite number")
    if where.rpartition(".")[2] in NONNEGATIVE and value < 0:
        raise TruthError(f"{path}: {where} = {value!r}: expected >= 0")
    return float(value)


def table(raw: dict[str, Any], key: str, path: str, allowed: tuple[str, ...] | None = None) -> dict[str, float]:
    """``raw[key]``, a table of numbers (only ``allowed`` keys, where given); {} if absent."""
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise TruthError(f"{path}: {key}: expected a table of numbers")
    unknown = [k for k in value if allowed is not None and k not in allowed]
    if unknown:
        raise TruthError(f"{path}: {key}.{unknown[0]}: unknown key; expected one of {', '.join(allowed or ())}")
    return {k: number(v, f"{key}.{k}", path) for k, v in value.items()}


def section(raw: dict[str, Any], key: str, cls: type, path: str, **defaults: float):
    """A dataclass section (``[noise]``, ``[time]``...) from its table: its fields only."""
    names = tuple(f.name for f in fields(cls))
    values = {**defaults, **table(raw, key, path, names)}
    if "steps_per_epoch" in values:
        values["steps_per_epoch"] = max(1, int(values["steps_per_epoch"]))
    return cls(**values)


def curve(raw: dict[str, Any], key: str, path: str, default: Curve, log: bool = False) -> Curve:
    values = table(raw, key, path, ("peak", "depth"))
    peak = values.get("peak")
    if log and peak is not None:
        if peak <= 0:
            raise TruthError(f"{path}: {key}.peak = {peak}: expected a positive learning rate")
        peak = math.log10(peak)
    return Curve(default.peak if peak is None else peak, values.get("depth", default.depth))


def names(entry: dict[str, Any], key: str, where: str, path: str, allowed: Any = None) -> tuple[str, ...]:
    """``entry[key]``: a non-empty list of names (of ``allowed``, where given); () if absent."""
    if key not in entry:
        return ()
    value = entry[key]
    if not (isinstance(value, list) and value and all(isinstance(t, str) for t in value)):
        raise TruthError(f"{path}: {where}.{key}: expected a non-empty list of names, not {value!r}")
    if allowed is not None and any(v not in allowed for v in value):
        raise TruthError(f"{path}: {where}.{key} = {value!r}: expected a list of {', '.join(allowed)}")
    return tuple(value)


def interval(entry: dict[str, Any], key: str, where: str, path: str) -> tuple[float, float] | None:
    if key not in entry:
        return None
    value = entry[key]
    if not (isinstance(value, list) and len(value) == 2):
        raise TruthError(f"{path}: {where}.{key} = {value!r}: expected [low, high]")
    low, high = (number(v, f"{where}.{key}", path) for v in value)
    if low > high:
        raise TruthError(f"{path}: {where}.{key} = {value!r}: expected low <= high")
    return low, high


def match_of(entry: Any, where: str, path: str, own: tuple[str, ...], usage: str) -> Match:
    """The matching keys of one ``[[bonus]]`` or ``[[curve]]`` table (``own``: its other keys)."""
    if not isinstance(entry, dict) or set(entry) - {*MATCH, *own}:
        extra = sorted(set(entry) - {*MATCH, *own}) if isinstance(entry, dict) else []
        raise TruthError(f"{path}: {where}{'.' + extra[0] if extra else ''}: unknown key; expected {usage}")
    single = entry.get("single_task", False)
    if not isinstance(single, bool):
        raise TruthError(f"{path}: {where}.single_task = {single!r}: expected true or false")
    if single and set(entry) & set(MATCH):
        raise TruthError(f"{path}: {where}.single_task: expected no {', '.join(MATCH)} beside it")
    return Match(
        auxiliary=names(entry, "auxiliary", where, path),
        contains=names(entry, "contains", where, path),
        schemas=names(entry, "schemas", where, path, SAMPLERS),
        exponent=interval(entry, "exponent", where, path),
        anneal_c=interval(entry, "anneal_c", where, path),
        single_task=single,
    )


def bonuses(raw: dict[str, Any], path: str) -> tuple[Bonus, ...]:
    usage = "gain = number and any of " + ", ".join(MATCH)
    out = []
    for i, entry in enumerate(listed(raw, "bonus", path)):
        match = match_of(entry, f"bonus[{i}]", path, ("gain",), usage)
        if "gain" not in entry:
            raise TruthError(f"{path}: bonus[{i}].gain: missing; expected {usage}")
        out.append(Bonus(match, number(entry["gain"], f"bonus[{i}].gain", path)))
    return tuple(out)


def curves(raw: dict[str, Any], path: str) -> tuple[LearningCurve, ...]:
    usage = "deficit = [d1, ..., d(E-1)] and any of " + ", ".join(MATCH) + ", or single_task = true"
    out = []
    for i, entry in enumerate(listed(raw, "curve", path)):
        where = f"curve[{i}]"
        match = match_of(entry, where, path, ("deficit", "single_task"), usage)
        deficit = entry.get("deficit")
        if not (isinstance(deficit, list) and deficit):
            raise TruthError(f"{path}: {where}.deficit = {deficit!r}: expected a non-empty list of numbers")
        out.append(LearningCurve(match, tuple(number(d, f"{where}.deficit", path) for d in deficit)))
    return tuple(out)


def collapses(raw: dict[str, Any], path: str) -> tuple[Collapse, ...]:
    out = []
    for i, entry in enumerate(listed(raw, "collapse", path)):
        where = f"collapse[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"lr_above", "probability"}:
            raise TruthError(f"{path}: {where}: expected exactly lr_above = learning rate, probability = p")
        lr, p = (
            number(entry["lr_above"], f"{where}.lr_above", path),
            number(entry["probability"], f"{where}.probability", path),
        )
        if lr <= 0:
            raise TruthError(f"{path}: {where}.lr_above = {lr}: expected a positive learning rate")
        if not 0 <= p <= 1:
            raise TruthError(f"{path}: {where}.probability = {p}: expected in [0, 1]")
        out.append(Collapse(lr, p))
    return tuple(out)


def listed(raw: dict[str, Any], key: str, path: str) -> list[Any]:
    """``[[key]]`` tables: a list (of anything; each table is checked by its reader)."""
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise TruthError(f"{path}: {key}: expected [[{key}]] tables")
    return value


def tasks_of(raw: dict[str, Any], primary: str, path: str) -> dict[str, dict[str, float]]:
    tasks = raw.get("tasks", {})
    if not isinstance(tasks, dict) or not tasks.get(primary):
        raise TruthError(f"{path}: tasks.{primary}: expected a table of the primary's metrics and true base scores")
    return {name: table(tasks, name, path) for name in tasks}


def truth_of(raw: dict[str, Any], path: str) -> Truth:
    """Check every key of a parsed truth file and build the :class:`Truth`."""
    unknown = [k for k in raw if k not in TOP]
    if unknown:
        raise TruthError(f"{path}: {unknown[0]}: unknown key; expected one of {', '.join(TOP)}")
    primary = raw.get("primary")
    if not isinstance(primary, str) or not primary:
        raise TruthError(f'{path}: primary: expected the primary task\'s name, e.g. "semeval"')
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TruthError(f"{path}: seed = {seed!r}: expected an integer")
    schema = table(raw, "schema", path, ("sequential", "anneal"))
    default = Truth("", primary, {})
    tasks, majority, collapse = tasks_of(raw, primary, path), table(raw, "majority", path), collapses(raw, path)
    missing = [m for m in tasks[primary] if m not in majority]
    if collapse and missing:
        raise TruthError(f"{path}: majority.{missing[0]}: expected with [[collapse]] (a collapsed seed scores it)")
    return Truth(
        name=str(raw.get("name", path)),
        primary=primary,
        tasks=tasks,
        path=path,
        seed=seed,
        noise=section(raw, "noise", Noise, path),
        auxiliary=table(raw, "auxiliary", path),
        sequential=schema.get("sequential", 0.0),
        anneal=schema.get("anneal", 0.0),
        exponent=curve(raw, "exponent", path, default.exponent),
        anneal_c=curve(raw, "anneal_c", path, default.anneal_c),
        lr=curve(raw, "lr", path, default.lr, log=True),
        warmup=curve(raw, "warmup", path, default.warmup),
        bonus=bonuses(raw, path),
        curves=curves(raw, path),
        collapse=collapse,
        strategy=table(raw, "strategy", path, STRATEGIES),
        layer_decay=curve(raw, "layer_decay", path, default.layer_decay),
        learning=section(raw, "learning", Learning, path),
        time=section(raw, "time", Timing, path),
        majority=majority,
    )


BUILTIN = Path(__file__).with_name("builtin")


# -- files ----------------------------------------------------------------------------
def builtin_truths() -> list[str]:
    return sorted(p.stem for p in BUILTIN.glob("*.toml"))


def resolve_truth(text: str) -> str:
    """``--simulate`` names a truth file or a built-in truth: its absolute path."""
    path = Path(text).expanduser()
    if path.suffix == ".toml" and path.is_file():
        return str(path.resolve())
    if (BUILTIN / f"{text}.toml").is_file():
        return str((BUILTIN / f"{text}.toml").resolve())
    raise TruthError(
        f"--simulate {text}: no such truth file; expected a .toml truth file or one of {', '.join(builtin_truths())}"
    )


def load_truth(path: str) -> Truth:
    """Read and check a truth file; every mistake names the file, the key and what was expected."""
    try:
        raw = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise TruthError(f"{path}: cannot read the truth file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TruthError(f"{path}: not TOML ({exc})") from None
    return truth_of(raw, str(path))
