"""The Upgrade page in AppTest: the installed fabric, the budget slider, the upgrade front and the answer, the
uploaded-file path and its errors, and the growth plan."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["evals"] = "60"
    at.run()
    at.switch_page("pages/upgrade.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _figs(at):
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def test_upgrade_page_shows_the_installed_fabric_the_front_and_follows_the_budget():
    at = _page()
    assert at.title[0].value == "Upgrade"
    # the sample workload is a 256-GPU job: a 2:1 fat tree of 256 GPUs (32 servers, 5 per leaf: 7 leaves)
    cap = "\n".join(c.value for c in at.caption)
    assert "7 leaf" in cap
    figs = _figs(at)
    assert figs and figs[0]["layout"]["xaxis"]["title"]["text"] == "net upgrade cost (USD)"
    names = {t.get("name") for t in figs[0]["data"]}
    assert "installed fabric" in names
    rows = at.dataframe[0].value
    assert (rows["buys (USD)"] <= at.slider(key="up_budget").value + 1e-6).all()
    # a zero budget: only free changes remain, and the table says so
    at.slider(key="up_budget").set_value(0).run()
    _ok(at)
    rows = at.dataframe[0].value
    assert (rows["buys (USD)"] == 0).all()
    assert set(rows["kind"]) <= {"free policy change", "installed (no change)"}


def test_upgrade_page_target_the_1to1_fabric_offers_the_free_change_first():
    at = _page()
    at.radio(key="up_target").set_value("the p99 of this fabric at 1:1, built new").run()
    _ok(at)
    assert any("built new" in c.value for c in at.caption)
    answer = at.success[0].value
    assert answer.startswith("a free policy change meets") or answer.startswith("the installed fabric already")
    rows = at.dataframe[0].value
    assert bool(rows["answer"].iloc[0]) and rows["kind"].iloc[0] != "hardware upgrade"


def test_upgrade_page_reads_an_uploaded_build_json_and_names_a_bad_file(tmp_path):
    from fabric.cli.main import main
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["build", "--preset", "fat-tree", "--gpus", "256", "--json"]) == 0
    at = _page()
    at.radio(key="up_source").set_value("a design or `fabric build --json` file").run()
    _ok(at)
    assert at.info and "Upload the installed fabric" in at.info[0].value
    at.file_uploader(key="up_file").set_value(("installed.json", buf.getvalue().encode(), "application/json")).run()
    _ok(at)
    assert any("Full-bisection fat tree (256 GPUs)" in c.value for c in at.caption)
    at.file_uploader(key="up_file").set_value(("bad.json", b"{oops", "application/json")).run()
    _ok(at)
    assert "Installed fabric:" in at.error[0].value and "not valid JSON" in at.error[0].value


def test_upgrade_page_plans_growth():
    at = _page()
    at.text_input(key="up_stages").set_value("256,512,1024").run()
    at.button(key="up_plan").click().run()
    _ok(at)
    # the plan grows the installed fabric (256 GPUs at 2:1: 7 leaves and 4 spines) and keeps every switch of it
    assert any("11 of the 11 installed switches are in use at the last stage" in s.value for s in at.success)
    table = at.dataframe[-1].value
    assert list(table["GPUs"]) == [256, 512, 1024]
    # no targets given: the page says where they come from (full bisection + 2 %)
    assert all(t.startswith("full-bisection") for t in table["target from"])
    assert any("no p99 target given" in i.value for i in at.info)
    # given targets (ms) are used as they are; 1 ms is met by no fabric, and the plan says so
    at.text_input(key="up_stage_targets").set_value("1,1,1").run()
    at.button(key="up_plan").click().run()
    _ok(at)
    table = at.dataframe[-1].value
    assert list(table["p99 target (s)"]) == [0.001] * 3 and set(table["target from"]) == {"given"}
    assert any("no candidate meets the p99 target" in w.value for w in at.warning)
    at.text_input(key="up_stage_targets").set_value("1,x").run()
    at.button(key="up_plan").click().run()
    _ok(at)
    assert any("p99 target per stage" in e.value for e in at.error)
    at.text_input(key="up_stage_targets").set_value("").run()
    at.text_input(key="up_stages").set_value("512,256").run()
    at.button(key="up_plan").click().run()
    _ok(at)
    assert any("No growth plan" in e.value for e in at.error)


def test_upgrade_page_free_port_reserve_bounds_the_offers():
    at = _page()
    # 256 GPUs at 2:1: a leaf uses 40 + 20 of 64 ports (4 free); spines 7 leaves x 20 / 4 spines = 35 (29 free)
    cap = "\n".join(c.value for c in at.caption)
    assert "fewest on one switch 4" in cap and "the reserve above keeps some free" in cap
    rows = at.dataframe[0].value
    assert (rows["fewest free ports on a switch"] == 4).any()      # the installed fabric and its policy changes
    # a reserve of 5: the installed leaves (4 free) break it, so only upgrades freeing leaf ports are offered
    # (4 servers per leaf at 1.5:1: 32 down + 22 up, 10 free)
    at.number_input(key="up_free_ports").set_value(5).run()
    _ok(at)
    rows = at.dataframe[0].value
    assert len(rows) and (rows["fewest free ports on a switch"] >= 5).all()
