"""search/ as rooms: imports point one way (CLIs, simulation, answer, study, tracking, infra), no cycle (imports
inside functions included), no function over 60 lines, the report without Ray, pre-split experiments."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# a room imports only rooms below it, and itself; simulation drives study's searcher and scheduler in process
# and scores their pick with answer's choose
ROOMS = {"simulation": 4, "answer": 3, "study": 2, "tracking": 1, "infra": 0}
CLI = 5  # search.run, search.report, ...: the top
# the simulated trial (its truth and its Tune trainable) stands where trainables/ does for a trained one: below
# every room, importing none of them; the rest of simulation (backend, strategies, calibration) is the top room
LEAVES = ("search.simulation.truth", "search.simulation.trainable")


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, set[str]]:
    """Every search module -> the search modules it imports, anywhere in its body."""
    names = {module_of(p) for p in (ROOT / "search").rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for path in (ROOT / "search").rglob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "search":
                for alias in node.names:  # `from search.tracking import records` names a module
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in names else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "search"}
        edges[module_of(path)] = found - {module_of(path)}
    return edges


def level(module: str) -> int:
    if module.startswith(LEAVES):
        return -1
    parts = module.split(".")
    return ROOMS.get(parts[1], CLI) if len(parts) > 2 else CLI


def test_imports_point_down_only():
    upward = [
        f"{a} -> {b}"
        for a, targets in modules().items()
        for b in targets
        if b != "search" and (level(b) > level(a) or (level(a) == CLI and level(b) == CLI))
    ]
    assert not upward, upward


def test_no_import_cycle():
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


def test_an_experiment_saved_before_the_split_restores_its_pickled_classes():
    """Tune pickles the Tuner's searcher, scheduler and callbacks by module path (protocol 0 globals
    below, as a pickle of the old layout names them); --resume maps the old paths first."""
    from search.infra.disk import StorageGuard
    from search.study.legacy import accept_saved_before_rooms
    from search.study.progress import TrialLines
    from search.study.scheduler import BaselineKeepingASHA
    from search.study.searcher import CanonicalOptunaSearch
    from search.tracking.tracker import MLflowTracker

    old = {
        ("search.searcher", "CanonicalOptunaSearch"): CanonicalOptunaSearch,
        ("search.scheduler", "BaselineKeepingASHA"): BaselineKeepingASHA,
        ("search.tracking", "MLflowTracker"): MLflowTracker,
        ("search.progress", "TrialLines"): TrialLines,
        ("search.disk", "StorageGuard"): StorageGuard,
    }
    accept_saved_before_rooms()
    for (module, name), cls in old.items():
        assert pickle.loads(f"c{module}\n{name}\n.".encode()) is cls
