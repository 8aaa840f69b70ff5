"""Shared fixtures: where the real public traces live (../shared/traces), skipping cleanly when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TRACES_DIR = Path(os.environ.get("FABRIC_TRACES_DIR", REPO_ROOT.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """The folder of real third-party traces; tests using it skip when it is not there."""
    if not TRACES_DIR.is_dir():
        pytest.skip(f"real traces folder {TRACES_DIR} not present")
    return TRACES_DIR


def trace_path(rel: str) -> Path:
    """Path of one real trace file, skipping the calling test when it is absent."""
    p = TRACES_DIR / rel
    if not p.exists():
        pytest.skip(f"trace {rel} not present under {TRACES_DIR}")
    return p


def fuzz_examples(default: int) -> int:
    """Hypothesis examples for a fuzz test: ``default`` in the normal run, or ``FABRIC_FUZZ_EXAMPLES`` in a
    dedicated fuzz run (e.g. ``FABRIC_FUZZ_EXAMPLES=3000 python -m pytest tests -k fuzz``)."""
    return int(os.environ.get("FABRIC_FUZZ_EXAMPLES", default))


def fuzz_deadline():
    """Per-input time bound for fuzz tests: none in the normal run (CI machines vary in speed), or
    ``FABRIC_FUZZ_DEADLINE_S`` seconds in a dedicated fuzz run, where an input that takes longer fails the test as
    a hang."""
    from datetime import timedelta

    value = os.environ.get("FABRIC_FUZZ_DEADLINE_S")
    return None if not value else timedelta(seconds=float(value))


@pytest.fixture(autouse=True, scope="session")
def private_search_state_dir(tmp_path_factory):
    """Searches the dashboard saves during the tests go to a folder of their own (FABRIC_STATE_DIR), which
    servers started by the tests inherit."""
    if "FABRIC_STATE_DIR" not in os.environ:
        os.environ["FABRIC_STATE_DIR"] = str(tmp_path_factory.mktemp("search-state"))
    yield


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright (browser tests skip when either is missing)."""
    from browser_support import CHROMIUM, LAUNCH_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server():
    """The dashboard on 127.0.0.1 on a free port, one server per browser-test module."""
    from browser_support import Dashboard, free_port

    dash = Dashboard(free_port()).start()
    try:
        yield dash.url
    finally:
        dash.stop()


@pytest.fixture(scope="module")
def shots_dir(tmp_path_factory) -> Path:
    """Where screenshots go: FABRIC_SCREENSHOTS_DIR (relative to the repository) or a temporary folder."""
    target = os.environ.get("FABRIC_SCREENSHOTS_DIR")
    return (REPO_ROOT / target) if target else tmp_path_factory.mktemp("screenshots")
