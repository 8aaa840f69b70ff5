"""The Calibrate page in AppTest: renders, fits a real nccl-tests file within the in-sample target, reports bad
files next to the uploader, and applies the fit to the session (the Search page then says it is calibrated)."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from conftest import trace_path

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
REAL = "nccl_tests/superbench/nccl_allreduce.log"


def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["evals"] = "20"
    return at


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def calibrate_page() -> AppTest:
    at = app().run()
    at.switch_page("pages/calibrate.py").run()
    ok(at)
    assert at.title[0].value == "Calibrate"
    return at


def upload(at, *files) -> None:
    at.radio(key="cal_source").set_value("upload").run()
    at.file_uploader(key="cal_upload").set_value(list(files)).run()
    ok(at)


def test_calibrate_page_renders_without_input():
    at = calibrate_page()
    assert "Upload measurement files" in texts(at.info) or at.get("plotly_chart")
    assert not at.error


def test_real_nccl_tests_file_fits_within_target():
    path = trace_path(REAL)
    at = calibrate_page()
    upload(at, (path.name, path.read_bytes(), "text/plain"))
    assert not at.error, texts(at.error)
    errors = at.dataframe[0].value
    row = errors[errors["collective"] == "all_reduce"].iloc[0]
    assert row["geomean error (>= 1 MB)"] < 0.10
    metric = {m.label: m.value for m in at.metric}["In-sample error, >= 1 MB"]
    assert float(metric.rstrip("%")) < 10
    assert len(at.dataframe[1].value) > 0
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["xaxis"]["type"] == "log"


def test_junk_upload_shows_an_error_next_to_the_uploader():
    at = calibrate_page()
    upload(at, ("junk.txt", b"hello, this is not a measurement\n", "text/plain"))
    assert "junk.txt" in texts(at.error)
    assert not at.get("plotly_chart")


def test_apply_sets_the_session_and_search_shows_it():
    path = trace_path(REAL)
    at = calibrate_page()
    upload(at, (path.name, path.read_bytes(), "text/plain"))
    at.button(key="cal_apply").click().run()
    ok(at)
    cal = at.session_state["calibration"]
    assert cal["sources"] == [path.name] and "nvlink_efficiency" in cal["overrides"]
    at.switch_page("pages/search.py").run()
    ok(at)
    assert f"calibrated: {path.name}" in texts(at.caption)
    job = at.session_state["search_job"]
    assert job.transport_overrides == cal["overrides"]
    job.cancel()
    job.wait(60)
    at.button(key="clear_cal_search").click().run()
    ok(at)
    assert "calibration" not in at.session_state
    assert "calibrated:" not in texts(at.caption)


def test_design_page_evaluates_with_the_applied_calibration():
    at = app().run()
    at.switch_page("pages/design.py").run()
    ok(at)
    before = {m.label: m.value for m in at.metric}
    overrides = {"bandwidth_efficiency": 0.3}
    at.session_state["calibration"] = {"overrides": overrides, "sources": ["fake.log"], "key": "k1"}
    at.run()
    ok(at)
    assert "calibrated: fake.log" in texts(at.caption)
    after = {m.label: m.value for m in at.metric}
    p99 = next(k for k in after if k.startswith("p99 step"))
    assert after[p99] != before[p99]            # a much lower efficiency changes the step time
    at.button(key="clear_cal_design").click().run()
    ok(at)
    assert {m.label: m.value for m in at.metric}[p99] == before[p99]


def test_design_page_explains_when_the_packet_check_is_not_offered():
    at = app().run()
    at.switch_page("pages/design.py").run()
    ok(at)
    info = texts(at.info)
    assert "Not offered for this design" in info or "pip install .[packet]" in info


def test_rollout_section_flags_a_change_the_model_did_not_predict():
    from fabric.calibrate.synthetic import DEFAULT_TRUTH, synthetic_nccl_tests

    sizes = tuple(2 ** k for k in range(20, 28))
    before = synthetic_nccl_tests(sizes=sizes, noise=0.0)
    after = synthetic_nccl_tests(sizes=sizes, noise=0.0, truth=dict(DEFAULT_TRUTH, nvlink_efficiency=0.35))
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["evals"] = "40"
    at.run()
    at.switch_page("pages/calibrate.py").run()
    at.file_uploader(key="roll_before").set_value(("before.log", before.encode(), "text/plain")).run()
    at.file_uploader(key="roll_after").set_value(("after.log", after.encode(), "text/plain")).run()
    at.selectbox(key="roll_d1").set_value(at.selectbox(key="roll_d0").value).run()     # the same design both times
    assert not at.exception
    msg = " ".join(e.value for e in at.error)
    assert "the model DRIFTED" in msg and "predicted +0.0" in msg.replace("\\", "")
