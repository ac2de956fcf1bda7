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
    [[curve]]    deficit = [d1, ..., d(E-1)], and any of bonus's matching keys, or single_task = true;
                 over passes (unit = "passes", or [learning]'s unit): passes = [p1, ...], deficit = [d1, ...]
    [[collapse]] probability, and lr_above, keeps, the matching keys of [[bonus]] or single_task
    [[transient]] probability, until, below_majority, and any of bonus's matching keys, or single_task = true
    [strategy]   bandit, all_tasks, uncertainty, pcgrad, unfreeze = gain where it acts
    [layer_decay] peak, depth
    [learning]   gap, multitask_gap, loss_start, loss_end; or unit = "passes", passes = [...], deficit = [...]
    [sizes]      <task> = training rows at the simulated preset (else read from the study's data)
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
from search.simulation.truth.replay import TableTruth, load_table_truth
from search.simulation.truth.terms import Bonus, Collapse, Curve, LearningCurve, Match, Transient
from trainables.sampling import SAMPLERS

TOP = ("name", "primary", "seed", "noise", "auxiliary", "schema", "exponent", "anneal_c", "lr", "warmup")
TOP += ("bonus", "strategy", "layer_decay", "learning", "time", "tasks", "majority", "curve", "collapse")
TOP += ("transient", "sizes")
UNITS = ("epochs", "passes")
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


def curves(raw: dict[str, Any], path: str, unit: str) -> tuple[LearningCurve, ...]:
    """``[[curve]]`` tables, each over ``unit`` ([learning]'s) unless it says its own."""
    usage = (
        "deficit = [d1, ..., d(E-1)] (over passes: passes = [p1, ...] beside it) and any of "
        + ", ".join(MATCH)
        + ", or single_task = true"
    )
    out = []
    for i, entry in enumerate(listed(raw, "curve", path)):
        where = f"curve[{i}]"
        match = match_of(entry, where, path, ("deficit", "single_task", "unit", "passes"), usage)
        own = unit_of(entry, where, path, unit)
        out.append(LearningCurve(match, *deficits(entry, where, path, own)))
    return tuple(out)


def unit_of(entry: dict[str, Any], where: str, path: str, default: str) -> str:
    unit = entry.get("unit", default)
    if unit not in UNITS:
        raise TruthError(f"{path}: {where}.unit = {unit!r}: expected one of {', '.join(map(repr, UNITS))}")
    return unit


def deficits(entry: dict[str, Any], where: str, path: str, unit: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(deficit, passes) of a curve: over epochs, passes is (); over passes, one increasing point per deficit."""
    deficit = entry.get("deficit")
    if not (isinstance(deficit, list) and deficit):
        raise TruthError(f"{path}: {where}.deficit = {deficit!r}: expected a non-empty list of numbers")
    values = tuple(number(d, f"{where}.deficit", path) for d in deficit)
    if unit == "epochs":
        if "passes" in entry:
            raise TruthError(f'{path}: {where}.passes: expected only with unit = "passes" (this curve is over epochs)')
        return values, ()
    passes = entry.get("passes")
    if not (isinstance(passes, list) and len(passes) == len(values)):
        raise TruthError(
            f"{path}: {where}.passes = {passes!r}: expected one number of the primary's passes per deficit "
            f"({len(values)}), in increasing order"
        )
    points = tuple(number(p, f"{where}.passes", path) for p in passes)
    if points[0] <= 0 or any(b <= a for a, b in zip(points, points[1:])):
        raise TruthError(f"{path}: {where}.passes = {passes!r}: expected positive numbers in increasing order")
    return values, points


def learning_of(raw: dict[str, Any], path: str) -> Learning:
    """``[learning]``: over epochs (gap, multitask_gap) or over the primary's passes (passes, deficit)."""
    value = raw.get("learning", {})
    if not isinstance(value, dict):
        raise TruthError(f"{path}: learning: expected a table")
    unit = unit_of(value, "learning", path, "epochs")
    if unit == "epochs":
        over_passes = sorted(set(value) & {"passes", "deficit"})
        if over_passes:
            raise TruthError(f'{path}: learning.{over_passes[0]}: expected only with unit = "passes"')
        values = {k: v for k, v in value.items() if k != "unit"}
        unknown = sorted(set(values) - {"gap", "multitask_gap", "loss_start", "loss_end"})
        if unknown:
            raise TruthError(
                f"{path}: learning.{unknown[0]}: unknown key; expected gap, multitask_gap, loss_start, loss_end"
            )
        return section({"learning": values}, "learning", Learning, path)
    over_epochs = sorted(set(value) & {"gap", "multitask_gap"})
    if over_epochs:
        raise TruthError(f'{path}: learning.{over_epochs[0]}: expected passes and deficit with unit = "passes"')
    losses = {k: number(value[k], f"learning.{k}", path) for k in ("loss_start", "loss_end") if k in value}
    unknown = sorted(set(value) - {"unit", "passes", "deficit", "loss_start", "loss_end"})
    if unknown:
        raise TruthError(
            f"{path}: learning.{unknown[0]}: unknown key; expected unit, passes, deficit, loss_start, loss_end"
        )
    deficit, passes = deficits(value, "learning", path, unit)
    return Learning(unit=unit, curve=LearningCurve(Match(), deficit, passes), **losses)


def transients(raw: dict[str, Any], path: str) -> tuple[Transient, ...]:
    usage = "probability, until (epochs), below_majority and any of " + ", ".join(MATCH) + ", or single_task = true"
    out = []
    for i, entry in enumerate(listed(raw, "transient", path)):
        where = f"transient[{i}]"
        match = match_of(entry, where, path, ("probability", "until", "below_majority", "single_task"), usage)
        if "probability" not in entry:
            raise TruthError(f"{path}: {where}.probability: missing; expected {usage}")
        p = number(entry["probability"], f"{where}.probability", path)
        until = number(entry.get("until", 1.0), f"{where}.until", path)
        below = number(entry.get("below_majority", 0.0), f"{where}.below_majority", path)
        if not 0 <= p <= 1:
            raise TruthError(f"{path}: {where}.probability = {p}: expected in [0, 1]")
        if until <= 0 or below < 0:
            bad = ("until", until) if until <= 0 else ("below_majority", below)
            raise TruthError(f"{path}: {where}.{bad[0]} = {bad[1]}: expected {'> 0 epochs' if until <= 0 else '>= 0'}")
        out.append(Transient(match, p, until, below))
    return tuple(out)


def sizes_of(raw: dict[str, Any], path: str) -> dict[str, int]:
    sizes = table(raw, "sizes", path)
    bad = [k for k, v in sizes.items() if v < 1 or v != int(v)]
    if bad:
        raise TruthError(f"{path}: sizes.{bad[0]} = {sizes[bad[0]]!r}: expected a whole number of training rows >= 1")
    return {k: int(v) for k, v in sizes.items()}


def collapses(raw: dict[str, Any], path: str) -> tuple[Collapse, ...]:
    usage = (
        "probability = p, and any of lr_above = learning rate, keeps = share of the gain over the majority, "
        + ", ".join(MATCH)
        + ", single_task = true"
    )
    out = []
    for i, entry in enumerate(listed(raw, "collapse", path)):
        where = f"collapse[{i}]"
        own = ("lr_above", "probability", "keeps", "single_task")
        matched = isinstance(entry, dict) and bool(set(entry) & {*MATCH, "single_task"})
        match = match_of(entry, where, path, own, usage)
        if "probability" not in entry:
            raise TruthError(f"{path}: {where}.probability: missing; expected {usage}")
        lr = number(entry.get("lr_above", 0.0), f"{where}.lr_above", path)
        p = number(entry["probability"], f"{where}.probability", path)
        keeps = number(entry.get("keeps", 0.0), f"{where}.keeps", path)
        if lr < 0 or ("lr_above" in entry and lr == 0):
            raise TruthError(f"{path}: {where}.lr_above = {lr}: expected a positive learning rate")
        if not 0 <= p <= 1:
            raise TruthError(f"{path}: {where}.probability = {p}: expected in [0, 1]")
        if not 0 <= keeps < 1:
            raise TruthError(f"{path}: {where}.keeps = {keeps}: expected in [0, 1) (0: a collapse to the majority)")
        out.append(Collapse(lr, p, match if matched else None, keeps))
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
    learning, transient = learning_of(raw, path), transients(raw, path)
    if transient and not majority:
        raise TruthError(f"{path}: majority: expected with [[transient]] (a failed start scores below it)")
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
        curves=curves(raw, path, learning.unit),
        collapse=collapse,
        transient=transient,
        sizes=sizes_of(raw, path),
        strategy=table(raw, "strategy", path, STRATEGIES),
        layer_decay=curve(raw, "layer_decay", path, default.layer_decay),
        learning=learning,
        time=section(raw, "time", Timing, path),
        majority=majority,
    )


BUILTIN = Path(__file__).with_name("builtin")
TABLE = ".parquet"  # a real-curve table (search.simulation.truth.table) is a truth too


# -- files ----------------------------------------------------------------------------
def builtin_truths() -> list[str]:
    return sorted(p.stem for p in BUILTIN.glob("*.toml"))


def resolve_truth(text: str) -> str:
    """``--simulate`` names a truth file, a real-curve table or a built-in truth: its absolute path."""
    path = Path(text).expanduser()
    if path.suffix in (".toml", TABLE) and path.is_file():
        return str(path.resolve())
    if (BUILTIN / f"{text}.toml").is_file():
        return str((BUILTIN / f"{text}.toml").resolve())
    expected = f"a .toml truth file, a {TABLE} real-curve table or one of {', '.join(builtin_truths())}"
    raise TruthError(f"--simulate {text}: no such truth file; expected {expected}")


def is_table(path: str) -> bool:
    """Whether the truth ``path`` is a real-curve table (replayed: :mod:`search.simulation.truth.replay`)."""
    return Path(path).suffix == TABLE


def load_truth(path: str) -> Truth | TableTruth:
    """Read and check a truth file or a table; every mistake names the file, the key and what was expected."""
    if is_table(path):
        return load_table_truth(path)
    try:
        raw = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise TruthError(f"{path}: cannot read the truth file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TruthError(f"{path}: not TOML ({exc})") from None
    return truth_of(raw, str(path))
