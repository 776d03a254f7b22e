"""The layout keeps its promises (docs/ARCHITECTURE.md): no import circle, one exception tree, small modules.

The floors themselves are import-linter contracts in pyproject.toml (`lint-imports`, part of the README's test
command); this file checks what a layers contract cannot see: circles inside one package, and what no import
shows. The import graph is grimp's (import-linter's own), which counts imports inside functions and under
TYPE_CHECKING like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "verifiers", "alas_wrapped")
MAX_LINES = 450
ERRORS_MODULE = ROOT / "engine" / "core" / "errors.py"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _import_graph() -> grimp.ImportGraph:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    for package in PACKAGES:  # a package's __init__ importing its own modules is not a circle between them
        for module in graph.find_children(package) | {package}:
            for imported in list(graph.find_modules_directly_imported_by(module)):
                if module == imported.rpartition(".")[0] and graph.find_children(module):
                    graph.remove_import(importer=module, imported=imported)
    return graph


def test_there_is_no_import_circle_counting_imports_inside_functions():
    assert _cycles(_import_graph()) == []


def test_the_circle_finder_finds_a_circle():
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.z")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph) == [["a.x", "a.y", "a.z"]]


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_no_module_is_over_450_lines():
    long = {str(p.relative_to(ROOT)): n for p in _sources() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these by concept: {long}"


def test_every_public_exception_class_lives_in_the_one_tree():
    outside = []
    for path in _sources():
        if path == ERRORS_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {ast.unparse(b).rpartition(".")[2] for b in node.bases}
                if any(b.endswith(("Error", "Exception")) or b in ("Exception", "BaseException") for b in bases):
                    outside.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert outside == [], "move these into engine/core/errors.py"
