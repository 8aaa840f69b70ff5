"""The dashboard starts and renders without exceptions (AppTest, no browser)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def test_app_renders_default_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any("Network capex" in m.label for m in at.metric)
    assert at.metric[0].value.startswith("$")


def test_build_page_changes_size_and_reports_errors():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.selectbox(key="preset").set_value("dgx-h100-superpod").run()
    at.number_input(key="gpus").set_value(248).run()
    assert not at.exception
    tables = [df.value for df in at.dataframe]
    switches = tables[0]
    assert dict(zip(switches["tier"], switches["switches"])) == {"leaf": 8, "spine": 4}
    at.number_input(key="gpus").set_value(12).run()       # not a whole number of 8-GPU nodes
    assert not at.exception
    assert "8-GPU nodes" in at.error[0].value
