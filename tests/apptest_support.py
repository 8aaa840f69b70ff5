"""What the AppTest-driven tests share: the app opened with a small search budget, and the check that a run raised
nothing."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def app(*, timeout: float = 120, **params) -> AppTest:
    """The dashboard with a 60-evaluation search budget and ``params`` in its link."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at


def ok(at) -> None:
    """The script run raised nothing."""
    assert not at.exception, [e.value for e in at.exception]
