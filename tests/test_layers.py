"""The layout keeps the pipeline's order (issue 35, docs/architecture.md): no import circle between fabric's
modules or packages, and no import from a lower floor back up to a higher one.

Every ``import`` in ``fabric/`` counts, those inside functions too (a deferred import is still a dependency: it only
runs later). ``from package import name`` counts as an import of the module that defines ``name``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The floors, lowest first: a module may import modules of its own floor or below, never above.
FLOORS = [
    ("fabric", "fabric.errors", "fabric.units", "fabric.limits", "fabric.arrays", "fabric.lru"),
    ("fabric.catalog",),
    ("fabric.workload",),
    ("fabric.design",),
    ("fabric.topology",),
    ("fabric.cost", "fabric.facility", "fabric.reference"),
    ("fabric.evaluate",),
    ("fabric.failures",),
    ("fabric.plans",),
    ("fabric.search",),
    ("fabric.review", "fabric.audit", "fabric.calibrate", "fabric.brownfield", "fabric.validate",
     "fabric.cabling"),
    ("fabric.ui_support",),
    ("fabric.cli",),
]


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted((ROOT / "fabric").rglob("*.py")):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return out


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The fabric module a dotted name lives in (the longest module prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _defining(package: str, attr: str) -> str | None:
    """The module that defines ``package.attr``: the submodule of that name, else where the object says it was
    defined (a package's re-export or lazy name), else the package itself."""
    if f"{package}.{attr}" in MODULES:
        return f"{package}.{attr}"
    try:
        obj = getattr(importlib.import_module(package), attr)
    except (ImportError, AttributeError):
        return _owner(package)
    mod = getattr(obj, "__module__", None)
    return mod if mod in MODULES else _owner(package)


def import_graph() -> nx.DiGraph:
    """Module -> module edges of every import in fabric/ (module level and deferred)."""
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [_owner(a.name) for a in node.names if a.name.startswith("fabric")]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                if base == "fabric" or base.startswith("fabric."):
                    targets = [_defining(base, a.name) for a in node.names]
            for t in targets:
                if t and t != name:
                    g.add_edge(name, t)
    return g


def floor_of(module: str) -> int:
    for i, names in enumerate(FLOORS):
        for n in names:
            if module == n or (n != "fabric" and module.startswith(n + ".")):
                return i
    raise KeyError(module)


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_every_module_has_a_floor(graph):
    assert [m for m in graph if not _has_floor(m)] == []


def _has_floor(m):
    try:
        floor_of(m)
    except KeyError:
        return False
    return True


def test_no_import_circle_between_modules(graph):
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_no_import_circle_between_packages(graph):
    p = nx.DiGraph()
    for a, b in graph.edges:
        if package_of(a) != package_of(b):
            p.add_edge(package_of(a), package_of(b))
    assert [sorted(c) for c in nx.strongly_connected_components(p) if len(c) > 1] == []


def test_no_import_runs_up_a_floor(graph):
    up = [f"{a} -> {b}" for a, b in graph.edges if floor_of(b) > floor_of(a)]
    assert up == []


def test_the_core_never_imports_streamlit():
    hits = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            hits += [f"{name}: {n}" for n in names if n.split(".")[0] == "streamlit"]
    assert hits == []


def test_the_check_sees_a_circle_and_an_upward_import():
    """The checks catch what they are for: a made-up graph with a circle and an import from evaluate up to search."""
    g = nx.DiGraph([("fabric.evaluate.engine", "fabric.search.run"), ("fabric.search.run", "fabric.evaluate.engine")])
    assert [c for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert floor_of("fabric.search.run") > floor_of("fabric.evaluate.engine")
