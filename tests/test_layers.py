"""The package's import graph, read from its source: no module imports one of a layer above
its own, none imports a harness (``benchmarks``, ``tests``), and there is no import circle,
not even through an import inside a function or under ``TYPE_CHECKING``; outside the package,
the benchmarks and the tests import nothing of each other.

The layers, bottom to top (DESIGN.md, "Layers"): the math and its compiled kernels; the
records, the protocol and the in-process operators and extents; data; viz; experiments;
Spark's plumbing (sessions, clusters, progress), the queries that run in Spark, and the
``workbench spark`` jobs and the server's warm session over them; the app and the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import workbench

PACKAGE = Path(workbench.__file__).parent
CHECKOUT = PACKAGE.parent
LAYERS = (
    (
        "workbench",
        "workbench.timestamps",
        "workbench.templates",
        "workbench.probability",
        "workbench.stime",
        "workbench.stime_brackets",
        "workbench.exact",
        "workbench.decision",
        "workbench.partitions",
        "workbench.interval_bounds",
        "workbench.paper_examples",
        "workbench.kernels",
        "workbench.config",
    ),
    (
        "workbench.records",
        "workbench.protocol",
        "workbench.protocol_shapes",
        "workbench.events",
        "workbench.operators",
        "workbench.coalesce",
    ),
    ("workbench.data",),
    ("workbench.viz",),
    ("workbench.experiments",),
    ("workbench.spark.session", "workbench.spark.cluster", "workbench.spark.metrics"),
    ("workbench.spark.queries",),
    ("workbench.spark",),
    ("workbench.app", "workbench.cli"),
)
"""Each layer's modules and packages (a package: every module in it)."""
HARNESSES = (
    "benchmarks",
    "harness",
    "tests",
    "pytest",
    "nbmake",
    "hypothesis",
    "playwright",
    "psutil",
)


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    """The package module ``name`` is, or is inside (``workbench.x.f`` -> ``workbench.x``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> set[str]:
    """Every name a module imports, at any depth (functions, ``TYPE_CHECKING`` blocks)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (itself left out)."""
    graph = {}
    for name, path in MODULES.items():
        targets = {_target(n) for n in _imports(path) if n.split(".")[0] == "workbench"}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def _layer(module: str) -> int:
    """The layer of ``module``: that of the longest prefix listed in :data:`LAYERS`."""
    best, layer = "", -1
    for k, names in enumerate(LAYERS):
        for prefix in names:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and len(prefix) > len(best):
                best, layer = prefix, k
    if layer < 0:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py: add it")
    return layer


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    assert all(_layer(m) >= 0 for m in MODULES)


def test_no_import_runs_up_the_layers():
    graph = _graph()
    upward = [
        f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
        for m, targets in graph.items()
        for t in sorted(targets)
        if _layer(t) > _layer(m)
    ]
    assert upward == []


def test_the_import_graph_has_no_circle():
    assert _circles(_graph()) == []


def test_no_module_imports_a_harness():
    """Benchmarks, load rooms, soaks and test tooling live outside the package."""
    bad = [
        f"{m} imports {n}"
        for m, path in MODULES.items()
        for n in sorted(_imports(path))
        if n.split(".")[0] in HARNESSES
    ]
    assert bad == []


@pytest.mark.parametrize(
    ("tree", "others"),
    [("benchmarks", {"tests"}), ("tests", {"benchmarks"}), ("harness", {"benchmarks", "tests"})],
)
def test_the_harnesses_import_each_other_not(tree, others):
    """The benchmarks (their tests too) and the test suite import nothing of each other: what
    both run against is ``harness``'s, and neither is imported there."""
    bad = [
        f"{path.relative_to(CHECKOUT)} imports {n}"
        for path in sorted((CHECKOUT / tree).rglob("*.py"))
        for n in sorted(_imports(path))
        if n.split(".")[0] in others
    ]
    assert bad == []


@pytest.mark.parametrize(
    ("graph", "circles"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_the_circle_finder_finds_circles(graph, circles):
    assert _circles(graph) == circles
