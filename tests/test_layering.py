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
    bad = []
    for p in (ROOT / "fabric").rglob("*.py"):
        text = p.read_text(encoding="utf-8")
        for needle in ("pickle.load", "yaml.load(", "eval(", "exec(", "yaml.unsafe_load"):
            if needle in text:
                bad.append(f"{p.relative_to(ROOT)}: {needle}")
    assert bad == []
