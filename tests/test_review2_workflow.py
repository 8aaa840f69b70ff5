"""Issue 24 ("Numbers a design review can sign"), items 10, 11 and part of 14: the workflow a new user clicks
through (Workload plan form and job mix, Upgrade from a Design export, staged growth from the installed fabric,
the words of the money comparisons, the inferred parallelism, a PyTorch-ET warning, removed uploads, UI text,
the server log of a search). AppTest and unit tests; what only a browser shows is in
tests/test_browser_review2_workflow.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def plan_form(at) -> dict:
    return {k: at.number_input(key=f"plan_{k}").value for k in ("gpus", "tp", "pp", "ep")} | \
        {"zero": at.selectbox(key="plan_zero").value}


def build_plan(at, preset: str, gpus: int, **degrees) -> None:
    at.radio(key="wl_source").set_value("plan").run()
    at.selectbox(key="plan_preset").set_value(preset).run()
    at.number_input(key="plan_gpus").set_value(gpus)
    for k, v in degrees.items():
        at.number_input(key=f"plan_{k}").set_value(v)
    at.button[0].click().run()
    ok(at)


# ------------------------------------------------------------------ item 10: the plan form keeps the plan


def test_plan_form_keeps_the_plan_after_another_page():
    at = app().run()
    build_plan(at, "mixtral-8x7b", 1024)
    assert "plan mixtral-8x7b on 1,024 GPUs" in at.header[0].value
    # the Mixtral preset: TP 2, EP 8 (docs/synthesis.md), no pipeline; DP = 1,024 / 2 = 512
    assert plan_form(at) == {"gpus": 1024, "tp": 2, "pp": 1, "ep": 8, "zero": "preset default"}
    at.switch_page("pages/constraints.py").run()
    ok(at)
    at.switch_page("pages/workload.py").run()
    ok(at)
    assert at.radio(key="wl_source").value == "plan"
    assert at.selectbox(key="plan_preset").value == "mixtral-8x7b"
    assert plan_form(at) == {"gpus": 1024, "tp": 2, "pp": 1, "ep": 8, "zero": "preset default"}


def test_plan_form_shows_the_overrides_that_made_the_workload_after_another_page():
    at = app().run()
    build_plan(at, "llama3-70b", 512, pp=2, tp=4)
    at.selectbox(key="plan_zero").set_value("3")
    at.button[0].click().run()
    ok(at)
    assert at.query_params["wl"] == "plan:llama3-70b:512:tp=4,pp=2,zero_stage=3"
    at.switch_page("pages/search.py").run()
    at.switch_page("pages/workload.py").run()
    ok(at)
    assert plan_form(at) == {"gpus": 512, "tp": 4, "pp": 2, "ep": 1, "zero": "3"}
    # pressing Build again without a change builds the same workload (no new choice, the same link)
    at.button[0].click().run()
    ok(at)
    assert at.query_params["wl"] == "plan:llama3-70b:512:tp=4,pp=2,zero_stage=3"


# ------------------------------------------------------------------ item 10: the primary workload and the mix


def _mix(at) -> list[dict]:
    return [e["choice"] for e in at.session_state["robust_mix"]]


def _with_online_in_the_mix():
    at = app(robust="worst").run()
    build_plan(at, "mixtral-8x7b", 1024)
    at.radio(key="mix_src").set_value("plan").run()
    at.selectbox(key="mix_preset").set_value("llama3-70b-online").run()
    at.number_input(key="mix_gpus").set_value(1024).run()
    at.button(key="mix_add").click().run()
    ok(at)
    at.radio(key="mix_src").set_value("sample").run()
    at.selectbox(key="mix_sample").set_value("dlrm-dcnv2.json").run()
    at.button(key="mix_add").click().run()
    ok(at)
    assert _mix(at) == [{"kind": "plan", "preset": "llama3-70b-online", "gpus": 1024},
                        {"kind": "sample", "name": "dlrm-dcnv2.json"}]
    return at


def test_a_new_primary_already_in_the_mix_is_not_listed_twice_and_the_page_says_so():
    at = _with_online_in_the_mix()
    build_plan(at, "llama3-70b-online", 1024)
    assert "plan llama3-70b-online on 1,024 GPUs" in at.header[0].value
    # the online plan now heads the mix (the first row); it is not a second row too
    assert _mix(at) == [{"kind": "sample", "name": "dlrm-dcnv2.json"}]
    rows = [e["choice"] for e in [{"choice": at.session_state["wl_choice"]}] + at.session_state["robust_mix"]]
    assert len({json.dumps(r, sort_keys=True) for r in rows}) == len(rows) == 2
    notice = texts(at.info)
    assert "plan llama3-70b-online on 1,024 GPUs was already in the mix" in notice
    # the workload it replaced is named, not dropped in silence
    assert "plan mixtral-8x7b on 1,024 GPUs is no longer in the mix" in notice
    assert "over llama3-70b-online@1024, dlrm-dcnv2 × baseline: 2 cases" in texts(at.success)
    q = dict(at.query_params)
    assert q["wl"] == "plan:llama3-70b-online:1024" and q["mix"] == "sample:dlrm-dcnv2.json"


def test_a_new_primary_takes_the_first_row_and_the_old_one_leaving_is_said():
    at = _with_online_in_the_mix()
    at.radio(key="wl_source").set_value("sample").run()           # the built-in sample source: its default sample
    ok(at)
    assert "plan mixtral-8x7b on 1,024 GPUs is no longer in the mix" in texts(at.info)
    at.selectbox(key="wl_sample").set_value("llama3-70b.json").run()
    ok(at)
    assert "sample llama3-70b.json" in at.header[0].value
    assert _mix(at) == [{"kind": "plan", "preset": "llama3-70b-online", "gpus": 1024},
                        {"kind": "sample", "name": "dlrm-dcnv2.json"}]            # nothing else dropped
    assert "sample mixtral-8x7b.json is no longer in the mix" in texts(at.info)
    assert "no longer in the mix" not in texts(at.run().info)                    # said once, not on every run
    # the robust search's cases: the new primary first, each workload once
    assert "over llama3-70b, llama3-70b-online@1024, dlrm-dcnv2 × baseline: 3 cases" in texts(at.success)


def test_no_mix_no_notice():
    at = app().run()
    build_plan(at, "llama3-70b", 1024)
    assert "no longer in the mix" not in texts(at.info) and "already in the mix" not in texts(at.info)


# ------------------------------------------------------------------ item 14: removed uploads are not used


LLAMA = ROOT / "sample_traces" / "llama3-70b.json"


def test_removed_uploads_are_no_longer_the_workload_the_mix_or_the_link():
    at = app(robust="worst").run()
    build_plan(at, "mixtral-8x7b", 1024)
    at.radio(key="wl_source").set_value("upload").run()
    at.file_uploader(key="wl_upload").set_value([("llama-upload.json", LLAMA.read_bytes(), "application/json")]).run()
    ok(at)
    assert "uploaded llama-upload.json" in at.header[0].value
    assert dict(at.query_params)["wl"] == "upload:llama-upload.json"
    at.file_uploader(key="wl_upload").set_value([]).run()            # the user removes the file
    ok(at)
    # back to the workload in use before the upload, and the page says why
    assert "plan mixtral-8x7b on 1,024 GPUs" in at.header[0].value
    assert "The uploaded files were removed and are no longer used: the workload is plan mixtral-8x7b on 1,024 " \
           "GPUs again." in texts(at.info)
    assert "llama-upload" not in json.dumps(dict(at.query_params))
    assert "llama-upload" not in texts(at.success)                    # the robust search's cases
    assert at.session_state["constraints"].gpus == 1024
    # and another page: the file is not used there either
    at.switch_page("pages/design.py").run()
    ok(at)
    assert "llama-upload" not in texts(at.caption) and "plan mixtral-8x7b on 1,024 GPUs" in texts(at.caption)


def test_stop_using_uploads_from_an_earlier_visit():
    at = app().run()
    at.radio(key="wl_source").set_value("upload").run()
    at.file_uploader(key="wl_upload").set_value([("llama-upload.json", LLAMA.read_bytes(), "application/json")]).run()
    at.switch_page("pages/constraints.py").run()
    at.switch_page("pages/workload.py").run()                        # the uploader is empty: the files stay in use
    ok(at)
    assert "uploaded llama-upload.json" in at.header[0].value
    assert "Using the 1 file(s) uploaded earlier" in texts(at.info)
    at.button(key="wl_forget_uploads").click().run()
    ok(at)
    assert "sample mixtral-8x7b.json" in at.header[0].value
    assert "llama-upload" not in json.dumps(dict(at.query_params)) and "upload_result" not in at.session_state
