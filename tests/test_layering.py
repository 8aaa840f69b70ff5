"""fabric/ is the core and never imports streamlit; the UI holds no modelling code."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_core_never_imports_streamlit():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "fabric").rglob("*.py") if "streamlit" in _imports(p)]
    assert offenders == []


def test_no_unsafe_loaders_in_core():
    """No eval/exec builtins, no pickle loading, no unsafe YAML loading anywhere in the core."""
    bad = []
    for p in (ROOT / "fabric").rglob("*.py"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("eval", "exec", "__import__"):
                bad.append(f"{p.relative_to(ROOT)}:{node.lineno}: {f.id}()")
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                if f.value.id in ("pickle", "marshal", "shelve", "dill") and f.attr.startswith("load"):
                    bad.append(f"{p.relative_to(ROOT)}:{node.lineno}: {f.value.id}.{f.attr}()")
                if f.value.id == "yaml" and f.attr in ("load", "unsafe_load", "full_load", "load_all"):
                    bad.append(f"{p.relative_to(ROOT)}:{node.lineno}: yaml.{f.attr}()")
    assert bad == []
