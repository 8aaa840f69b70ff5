"""The shipped Streamlit config watches no files (a watcher on the project folder also watched .venv)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".streamlit" / "config.toml"


def test_config_turns_file_watching_off():
    cfg = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    assert cfg["server"]["fileWatcherType"] == "none"
    assert cfg["server"].get("runOnSave", False) is False


def test_streamlit_reads_the_setting_from_the_repo_config():
    """``streamlit config show`` run in the repository (where run_dashboard.sh starts it) reports it."""
    pytest.importorskip("streamlit")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    r = subprocess.run([sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    active = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("fileWatcherType")]
    assert active == ['fileWatcherType = "none"']
