"""The tree's layout: packages import one way (benchmarks, search, spaces, trainables), search/'s rooms too (CLIs,
simulation, answer, study, tracking, infra), no cycle anywhere (imports inside functions included), Ray and
MLflow only where allowed, no function over 60 lines, the report without Ray, pre-split experiments restore."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("benchmarks", "search", "spaces", "trainables")  # the tree; each imports only those after it
BELOW = {"benchmarks": PACKAGES, "search": ("search", "spaces", "trainables"), "spaces": ("spaces", "trainables")}
BELOW["trainables"] = ("trainables",)  # the core trains with search/, its Ray, Optuna and MLflow absent
# a room imports only rooms below it, and itself; simulation drives study's searcher and scheduler in process
# and scores their pick with answer's choose
ROOMS = {"simulation": 4, "answer": 3, "study": 2, "tracking": 1, "infra": 0}
CLI = 5  # search.run, search.report, ...: the top
# the simulated trial (its truth and its Tune trainable) stands where trainables/ does for a trained one: below
# every room, importing none of them; the rest of simulation (backend, strategies, calibration) is the top room
LEAVES = ("search.simulation.truth", "search.simulation.trainable")
# who may import what outside the project (STYLE.md practice 1): Ray only in the Tune wrappers and search/
# (benchmarks.sim_cost meters Tune's own controller and reads its saved trials), MLflow only in search/
ALLOWED = {
    "ray": ("search", "trainables.tune", "benchmarks.sim_cost", "benchmarks.fault_matrix_ray"),  # they measure Ray
    "mlflow": ("search",),
}


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, ast.Module]:
    return {module_of(p): ast.parse(p.read_text()) for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def imported(tree: ast.Module, names: set[str]) -> set[str]:
    """Every module ``tree`` imports, anywhere in its body (functions and ``TYPE_CHECKING`` blocks too):
    a project module where ``names`` knows it (``from search.tracking import records`` names a module)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in names else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def imports() -> dict[str, set[str]]:
    """Every module of the tree -> everything it imports."""
    trees = sources()
    names = set(trees)
    return {module: imported(tree, names) - {module} for module, tree in trees.items()}


def modules() -> dict[str, set[str]]:
    """Every module of the tree -> the project modules it imports."""
    return {m: {t for t in targets if t.split(".")[0] in PACKAGES} for m, targets in imports().items()}


def level(module: str) -> int:
    if module.startswith(LEAVES):
        return -1
    parts = module.split(".")
    return ROOMS.get(parts[1], CLI) if len(parts) > 2 else CLI


def test_search_rooms_import_down_only():
    upward = [
        f"{a} -> {b}"
        for a, targets in modules().items()
        if a.startswith("search.")
        for b in targets
        if b.startswith("search.") and (level(b) > level(a) or (level(a) == CLI and level(b) == CLI))
    ]
    assert not upward, upward


def test_packages_import_down_only():
    """benchmarks -> search -> spaces -> trainables: trainables/ imports nothing of the others."""
    upward = [
        f"{a} -> {b}"
        for a, targets in modules().items()
        for b in targets
        if b.split(".")[0] not in BELOW[a.split(".")[0]]
    ]
    assert not upward, upward


@pytest.mark.parametrize("library", sorted(ALLOWED))
def test_ray_and_mlflow_only_where_allowed(library):
    found = [
        f"{a} imports {b}"
        for a, targets in imports().items()
        for b in targets
        if b.split(".")[0] == library and not any(a == p or a.startswith(p + ".") for p in ALLOWED[library])
    ]
    assert not found, found


# Ray's internals, read only by its adapter: a private module, the searcher Tune wraps, the controller's save mark
# (our schedulers use their Ray base classes' protected fields, ``_metric``, ASHA's ``_brackets``, as Ray's own
# subclasses do: that is subclassing, not counted here)
ADAPTER = "search.infra.ray_compat"
TUNE_INTERNALS = {"search_alg", "_mark_trial_to_checkpoint"}


def ray_internals(tree: ast.Module) -> list[str]:
    """Where ``tree`` imports a private Ray module or reads one of :data:`TUNE_INTERNALS`."""
    found = []
    for node in ast.walk(tree):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found += [
            f"line {node.lineno}: {n}"
            for n in names
            if n.split(".")[0] == "ray" and "._" in n  # ray._private, ...
        ]
        if isinstance(node, ast.Attribute) and node.attr in TUNE_INTERNALS and isinstance(node.ctx, ast.Load):
            found.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.Constant) and node.value in TUNE_INTERNALS:
            found.append(f"line {node.lineno}: {node.value!r}")
    return found


def test_ray_internals_only_in_the_adapter():
    found = [
        f"{module} {where}"
        for module, tree in sources().items()
        if module.split(".")[0] in ("search", "trainables") and module != ADAPTER
        for where in ray_internals(tree)
    ]
    assert not found, found


def test_the_internals_check_sees_each_kind():
    code = "from ray._private import state\nc.search_alg.searcher\ngetattr(c, '_mark_trial_to_checkpoint')\n"
    assert len(ray_internals(ast.parse(code))) == 3


def test_no_import_cycle_anywhere():
    edges, state, cycles = modules(), {}, []

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(path[path.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


def test_the_checks_see_function_level_imports():
    """The walk finds an import inside a function (the circles this test guards against hid there)."""
    tree = ast.parse("def f():\n    from spaces.study_file import expect\n")
    assert imported(tree, {"spaces.study_file"}) == {"spaces.study_file"}


@pytest.mark.parametrize("package", ["search", "trainables", "spaces", "benchmarks"])
def test_no_function_over_60_lines(package):
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in (ROOT / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60
    ]
    assert not long, long


def test_the_report_imports_no_ray():
    code = "import sys, search.report, search.answer.report; print(sorted(m for m in sys.modules if m == 'ray'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
