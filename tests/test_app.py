"""The dashboard in AppTest (no browser): every page renders without exceptions, inputs, uploads, error paths,
the background search, URL state and downloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fabric.design import Design
from fabric.search.designs import design_genes
from fabric.ui_support.urlstate import encode_genes

from conftest import trace_path

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
SAMPLES = ROOT / "sample_traces"


def app(**params) -> AppTest:
    """A fresh session (a small search budget keeps the tests quick), optionally opened from a link."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at


def charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def values(data) -> list:
    """A plotly data array from a chart's JSON (plotly 7 sends numeric arrays as base64 ``bdata``)."""
    import base64

    import numpy as np

    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"])).tolist()
    return list(data)


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def finish_search(at) -> None:
    job = at.session_state["search_job"]
    assert job.wait(60)
    at.run()
    ok(at)


# ------------------------------------------------------------------ workload


def test_app_opens_on_the_sample_workload():
    at = app().run()
    ok(at)
    assert at.title[0].value == "Workload"
    assert "mixtral-8x7b" in at.header[0].value
    labels = {m.label: m.value for m in at.metric}
    assert labels["GPUs needed"] == "256" and labels["Jobs"] == "1"
    # network and NVLink traffic apart (TP/EP groups inside 8-GPU servers, DP across them)
    assert labels["NVLink traffic per step"] == "64.0 GiB" and labels["Network traffic per step"] == "38.7 GiB"
    assert "Communication per step" not in labels
    roles = set(at.dataframe[1].value["role"])
    assert {"tp", "dp", "ep"} <= roles
    figs = charts(at)
    assert len(figs) == 3
    assert figs[0]["layout"]["xaxis"]["title"]["text"] == "bytes per step (GiB)"
    assert "Every communication event" in texts(at.success)
    assert at.query_params["wl"] == "sample:mixtral-8x7b.json"
    assert at.session_state["constraints"].gpus == 256


def test_switching_samples_follows_the_cluster_size():
    at = app().run()
    at.selectbox(key="wl_sample").set_value("llama3-70b.json").run()
    ok(at)
    assert "llama3-70b" in at.header[0].value
    assert at.session_state["constraints"].gpus == 1024
    assert at.query_params["wl"] == "sample:llama3-70b.json" and at.query_params["gpus"] == "1024"
    at.selectbox(key="wl_sample").set_value("kineto-llama3-70b").run()     # two gzipped Kineto rank files
    ok(at)
    assert {m.label: m.value for m in at.metric}["Jobs"] == "1"


def test_upload_several_files_bad_ones_reported_next_to_them():
    at = app().run()
    at.radio(key="wl_source").set_value("upload").run()
    ok(at)
    assert "Drop trace files" in texts(at.info)
    k0 = (SAMPLES / "kineto/llama3-70b.rank0.pt.trace.json.gz").read_bytes()
    k1 = (SAMPLES / "kineto/llama3-70b.rank1.pt.trace.json.gz").read_bytes()
    dlrm = (SAMPLES / "dlrm-dcnv2.json").read_bytes()
    at.file_uploader(key="wl_upload").set_value([
        ("rank0.pt.trace.json.gz", k0, "application/gzip"), ("rank1.pt.trace.json.gz", k1, "application/gzip"),
        ("dlrm.json", dlrm, "application/json"), ("broken.json", b"{\"jobs\": [", "application/json"),
        ("notes.txt", b"hello world", "text/plain")]).run()
    ok(at)
    files = at.dataframe[0].value
    assert files["parsed"].tolist() == ["yes", "yes", "yes", "no", "no"]
    errs = texts(at.error)
    assert "broken.json" in errs and "notes.txt" in errs and "rank0" not in errs
    assert at.header[0].value.endswith("3 uploaded files")
    assert {m.label: m.value for m in at.metric}["Jobs"] == "2"
    assert at.query_params["wl"].startswith("upload:rank0.pt.trace.json.gz")
    # the uploads stay with the session when the page is left and opened again
    at.switch_page("pages/constraints.py").run()
    at.switch_page("pages/workload.py").run()
    ok(at)
    assert at.header[0].value.endswith("3 uploaded files")
    at.radio(key="wl_source").set_value("sample").run()                 # a sample, then back to the uploads
    assert "mixtral-8x7b" in at.header[0].value
    at.radio(key="wl_source").set_value("upload").run()
    ok(at)
    assert at.header[0].value.endswith("3 uploaded files") and "uploaded earlier" in texts(at.info)


def test_upload_with_nothing_readable_keeps_the_previous_workload():
    at = app().run()
    at.radio(key="wl_source").set_value("upload").run()
    at.file_uploader(key="wl_upload").set_value(("empty.json", b"", "application/json")).run()
    ok(at)
    assert "empty.json" in texts(at.error)
    assert "previous workload" in texts(at.warning)
    assert "mixtral-8x7b" in at.header[0].value


def test_upload_real_traces(traces_dir):
    files = [trace_path("kineto/hta/nccl_parser_config/nccl_data.json.gz"),
             trace_path("simai_aicb/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv"),
             trace_path("FIELDS.md")]
    at = app().run()
    at.radio(key="wl_source").set_value("upload").run()
    at.file_uploader(key="wl_upload").set_value([(p.name, p.read_bytes(), "application/octet-stream")
                                                 for p in files]).run()
    ok(at)
    assert at.dataframe[0].value["parsed"].tolist() == ["yes", "yes", "no"]
    assert "FIELDS.md" in texts(at.error)
    assert at.session_state["constraints"].gpus == 136          # 2 + 128 ranks, whole 8-GPU servers
    assert len(charts(at)) == 3


def test_parallelism_plan_form_and_its_errors():
    at = app().run()
    at.radio(key="wl_source").set_value("plan").run()
    assert (at.number_input(key="plan_tp").value, at.number_input(key="plan_ep").value) == (2, 8)   # mixtral
    at.selectbox(key="plan_preset").set_value("llama3-70b").run()
    assert (at.number_input(key="plan_tp").value, at.number_input(key="plan_pp").value) == (8, 4)
    assert at.selectbox(key="plan_zero").value == "preset default"
    at.number_input(key="plan_gpus").set_value(512)
    at.number_input(key="plan_pp").set_value(2)
    at.button[0].click().run()
    ok(at)
    assert "Built the llama3-70b workload" in texts(at.success)
    assert "plan llama3-70b on 512 GPUs (pp 2)" in at.header[0].value
    assert at.query_params["wl"] == "plan:llama3-70b:512:pp=2"
    assert at.session_state["constraints"].gpus == 512
    at.number_input(key="plan_tp").set_value(3)
    at.button[0].click().run()
    ok(at)
    assert "cannot be built" in texts(at.error)
    assert "plan llama3-70b on 512 GPUs (pp 2)" in at.header[0].value              # the last good plan stays
    at.selectbox(key="plan_preset").set_value("dlrm-dcnv2").run()                # no TP/PP for a recommender
    assert at.number_input(key="plan_tp").proto.disabled
    at.number_input(key="plan_gpus").set_value(64)
    at.button[0].click().run()
    ok(at)
    assert "plan dlrm-dcnv2 on 64 GPUs" in at.header[0].value


# ------------------------------------------------------------------ constraints


def test_constraints_inputs_and_errors():
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    ok(at)
    assert "Constraints valid" in texts(at.success)
    at.number_input(key="con_gpus").set_value(260).run()               # not whole 8-GPU servers
    ok(at)
    assert "8-GPU nodes" in texts(at.error)
    assert at.session_state["constraints"].gpus == 256                 # last valid constraints kept
    at.number_input(key="con_gpus").set_value(128).run()               # smaller than the workload
    assert "needs 256 GPUs" in texts(at.error)
    at.number_input(key="con_gpus").set_value(512)
    at.multiselect(key="con_families").set_value(["clos", "rail_optimized"])
    at.number_input(key="con_budget_m").set_value(3.5)
    at.number_input(key="con_p99").set_value(5.0)
    at.select_slider(key="con_max_os").set_value(2.0).run()
    ok(at)
    c = at.session_state["constraints"]
    assert (c.gpus, c.families, c.budget_usd, c.p99_target_s, c.max_oversubscription) == \
        (512, ("clos", "rail_optimized"), 3.5e6, 5.0, 2.0)
    assert at.query_params["budget_usd"] == "3500000" and at.query_params["families"] == "clos,rail_optimized"
    at.multiselect(key="con_families").set_value([]).run()
    assert "allow at least one value" in texts(at.error)
    at.multiselect(key="con_families").set_value(["clos"])
    at.multiselect(key="con_speeds").set_value([]).run()
    assert "NIC port speed" in texts(at.error)


def test_constraints_page_names_nics_the_gpu_host_cannot_feed():
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    ok(at)
    assert "Not offered on h100-sxm hosts" in texts(at.caption) and "nic-cx8-800" in texts(at.caption)
    at.multiselect(key="con_speeds").set_value([800.0]).run()          # only 800G: nothing an H100 host feeds
    ok(at)
    err = texts(at.error)
    assert "none of the allowed NIC models (nic-cx8-800) runs at full speed on h100-sxm hosts" in err
    assert at.session_state["constraints"].nic_models is None          # the last valid constraints are kept
    at.selectbox(key="con_gpu_model").set_value("b200").run()          # a Blackwell host takes 800G
    ok(at)
    assert "Constraints valid" in texts(at.success)
    assert at.session_state["constraints"].nic_models == ("nic-cx8-800",)


def test_catalog_edit_and_reset():
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    assert len(at.data_editor) == 5
    at.session_state["cat_switches"] = {"edited_rows": {0: {"price_usd": 1000}}, "added_rows": [],
                                        "deleted_rows": []}
    at.run()
    ok(at)
    tables = at.session_state["catalog_tables"]
    assert tables is not None and tables["switches"]["price_usd"].iloc[0] == 1000
    assert "edited in this session" in texts(at.caption)
    at.session_state["cat_nics"] = {"edited_rows": {0: {"price_usd": -5}}, "added_rows": [], "deleted_rows": []}
    at.run()
    ok(at)
    assert "Catalog edit not used" in texts(at.error)
    at.button(key="cat_reset").click().run()
    ok(at)
    assert at.session_state["catalog_tables"] is None
    assert "built-in defaults" in texts(at.caption)


# ------------------------------------------------------------------ search, design, compare


def test_search_runs_in_the_background_and_opens_a_design():
    at = app().run()
    at.switch_page("pages/search.py").run()
    ok(at)
    job = at.session_state["search_job"]
    assert job.budget_evals == 60
    finish_search(at)
    assert any("Front designs" in s.value for s in at.subheader)
    figs = charts(at)
    assert figs[0]["layout"]["xaxis"]["title"]["text"] == "network capex (USD)"
    # hypervolume in % of the run's final value: the last point is 100 %, every point within 0-100 %
    assert figs[1]["layout"]["yaxis"]["title"]["text"] == "hypervolume (% of this run's final)"
    hv = values(figs[1]["data"][0]["y"])
    assert hv[-1] == pytest.approx(100.0) and all(0 <= v <= 100 + 1e-9 for v in hv)
    assert "designs on the front after" in texts(at.markdown)
    assert at.progress[0].value == 100
    assert any(b.label == "Front (CSV)" for b in at.download_button)
    pick = at.selectbox(key="open_pick").options[-1]
    at.selectbox(key="open_pick").set_value(pick)
    at.button(key="open_design").click().run()
    ok(at)
    assert at.title[0].value == "Design"
    # (labelled "recommended: " when the picked design is the recommended one)
    assert at.selectbox(key="design_pick").value in (f"selected: {pick}", f"recommended: {pick}")
    assert "design" in at.query_params


def test_selecting_a_front_row_opens_that_design():
    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    names = at.selectbox(key="open_pick").options
    at.session_state["front_table"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    ok(at)
    assert at.title[0].value == "Design"
    assert at.session_state["design_name"] == names[1]
    assert at.selectbox(key="design_pick").value.endswith(names[1])


def test_search_can_be_cancelled():
    at = app(evals="5000").run()
    at.switch_page("pages/search.py").run()
    ok(at)
    job = at.session_state["search_job"]
    assert job.running
    assert "Search running" in at.progress[0].proto.text
    at.button(key="cancel_search").click().run()
    assert job.wait(30)
    at.run()
    ok(at)
    assert "Search cancelled" in at.progress[0].proto.text
    assert any("Front designs" in s.value for s in at.subheader)       # what it found so far stays


def test_a_search_that_did_not_converge_says_so_and_continues_in_one_click():
    at = app(evals="300").run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    first = at.session_state["search_job"]
    assert first.snapshot().converged is False
    assert "Not converged: continue." in texts(at.caption) and "hypervolume gain below 0.1 %" in texts(at.caption)
    assert "Neighbourhood check of the recommendation" in texts(at.caption)
    button = at.button(key="continue_search")
    assert button.label == "Continue (+300)" and not button.disabled
    job = first
    for _ in range(8):                       # one click each, until the search says it has converged
        before = job.snapshot().generation
        at.button(key="continue_search").click().run()
        ok(at)
        job = at.session_state["search_job"]
        assert job.search_id == first.search_id and job.continue_step == 300
        finish_search(at)
        assert f"continued from generation {before} with 300 more evaluations" in at.progress[0].proto.text
        assert at.number_input(key="in_evals").value == job.budget_evals       # the budget that ran
        assert "The inputs changed" not in texts(at.warning)
        if job.snapshot().converged:
            break
    assert job.snapshot().converged
    assert "Converged." in texts(at.caption) and not any(b.key == "continue_search" for b in at.button)
    assert at.query_params["search"] in (job.search_id, [job.search_id])


def test_session_search_budget_is_enforced_and_named(monkeypatch):
    monkeypatch.setenv("FABRIC_LIMIT_MAX_SESSION_EVALUATIONS", "500")
    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    first = at.session_state["search_job"]
    used = first.snapshot().evaluations
    # the budget of 60 (overshot by the last generation) plus the neighbourhood check of the recommendation
    assert 60 <= used - first.snapshot().result.neighbourhood["evaluated"] <= 150 and used <= 500
    assert f"may still evaluate {500 - used:,} designs" in texts(at.caption)
    at.number_input(key="in_evals").set_value(500 - used + 1)
    at.button(key="start_search").click().run()
    ok(at)
    assert at.session_state["search_job"] is first                   # refused: the old result stays
    err = texts(at.error)
    assert "The search was not started" in err and "max_session_evaluations" in err
    assert "FABRIC_LIMIT_MAX_SESSION_EVALUATIONS" in err


def test_a_link_to_a_finished_search_shows_it_with_the_budget_that_ran():
    at = app(evals="140").run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    job = at.session_state["search_job"]
    assert at.query_params["search"] == [job.search_id] or at.query_params["search"] == job.search_id
    # the owner types another budget without running it; the copied link carries that value...
    at.number_input(key="in_evals").set_value(20).run()
    assert at.query_params["evals"] in ("20", ["20"])
    # ...but a session opening the link sees the search as it ran: the same job, its budget, no restart story
    other = app(evals="20", search=job.search_id).run()
    other.switch_page("pages/search.py").run()
    ok(other)
    assert other.session_state["search_job"] is job
    assert other.number_input(key="in_evals").value == 140
    assert other.query_params["evals"] in ("140", ["140"])
    status = other.progress[0].proto.text
    assert "Search finished" in status and "restart" not in status and "reopened" not in status


def test_a_link_reopens_a_saved_search_and_says_whether_the_server_restarted(monkeypatch):
    from fabric.ui_support import jobs

    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    job = at.session_state["search_job"]
    front = sorted(r["key"] for r in job.snapshot().front)
    for restarted in (False, True):
        jobs._RECENT.clear()                  # the server no longer holds the job: only its saved files are left
        if restarted:                         # a server started after the search was saved
            monkeypatch.setattr(jobs, "PROCESS_STARTED", jobs.time.time() + 1)
        other = app(search=job.search_id).run()
        other.switch_page("pages/search.py").run()
        again = other.session_state["search_job"]
        assert again is not job and again.search_id == job.search_id
        assert again.wait(60)
        other.run()
        ok(other)
        snap = again.snapshot()
        assert snap.resumed_from == job.snapshot().generation
        assert snap.evaluations == job.snapshot().evaluations                 # nothing evaluated again
        assert sorted(r["key"] for r in snap.front) == front
        status = other.progress[0].proto.text
        if restarted:
            assert "after a server restart" in status, status
        else:
            assert "reopened from its saved state" in status and "restart" not in status, status


def test_a_link_to_a_running_search_shows_it_without_starting_another():
    at = app(evals="20000").run()
    at.switch_page("pages/search.py").run()
    job = at.session_state["search_job"]
    try:
        assert job.running
        assert "may evaluate 80,000 more designs after the running search (budget 20,000" in texts(at.caption)
        other = app(evals="20000", search=job.search_id).run()
        other.switch_page("pages/search.py").run()
        ok(other)
        assert other.session_state["search_job"] is job                   # the same search, not a new one
        assert "opened from a shared link" in texts(other.caption)
        assert "may still evaluate 100,000 designs" in texts(other.caption)   # not charged to the viewer
        other.button(key="start_search").click().run()                     # the viewer starts a search of its own
        mine = other.session_state["search_job"]
        assert mine is not job and job.running and not job.snapshot().state == "cancelled"
        mine.cancel()
    finally:
        job.cancel()


def test_a_link_with_a_malformed_search_id_is_ignored_with_a_warning():
    at = app(search="../../etc/passwd").run()
    ok(at)
    assert "not a search id" in texts(at.warning)
    at.switch_page("pages/search.py").run()
    ok(at)
    assert at.session_state["search_job"].search_id != "../../etc/passwd"


def test_search_is_stale_after_the_inputs_change_and_restarts():
    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    first = at.session_state["search_job"]
    at.switch_page("pages/constraints.py").run()
    at.multiselect(key="con_families").set_value(["clos"]).run()
    at.switch_page("pages/search.py").run()
    ok(at)
    assert "inputs changed" in texts(at.warning)
    at.button(key="start_search").click().run()
    assert at.session_state["search_job"] is not first
    finish_search(at)
    assert not at.warning


def test_infeasible_constraints_explain_why():
    at = app(budget_usd="1000").run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    assert "No design meets every constraint" in texts(at.error) and "budget" in texts(at.error)


def test_design_page_shows_everything():
    at = app().run()
    at.switch_page("pages/design.py").run()
    ok(at)
    assert at.title[0].value == "Design"
    labels = [m.label for m in at.metric]
    assert labels[:3] == ["Network capex", "Per GPU", "Network power"] and "p99 step" in labels
    figs = charts(at)
    assert len(figs) == 5                     # topology, step time, p99 breakdown, scaling, what-if
    assert figs[1]["layout"]["xaxis"]["title"]["text"] == "step time (s)"
    assert at.multiselect(key="scenarios").value == ["fail-spine", "slow-switch", "checkpoint-burst",
                                                     "job-mix-shift"]
    tables = [d.value for d in at.dataframe]
    assert any("p99 change" in t.columns for t in tables)                   # before/after deltas
    assert any("total (USD)" in t.columns for t in tables)                  # bill of materials
    assert any(s.value == "Cheapest fixes" for s in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Cost per p99 step"].startswith("$") and "p99, worst switch failure" in metrics
    assert metrics["p99 step"].endswith(" s")
    worst, healthy = metrics["p99, worst switch failure"].split(), metrics["p99 step"].split()
    assert worst[1] == healthy[1] == "s" and float(worst[0]) >= float(healthy[0])
    assert any("routing" in str(v) for t in tables if "change" in t.columns for v in t["change"]) or \
        "No single change shortens" in texts(at.markdown)
    # every caption names the unit its chart or table uses (the p99 breakdown is in ms while steps are in s)
    brk_unit = figs[2]["layout"]["xaxis"]["title"]["text"].rsplit("(", 1)[1].rstrip(")")
    assert brk_unit == "ms"
    assert f"longest first (axis in {brk_unit})" in texts(at.caption)
    scen = next(t for t in tables if "p99 change" in t.columns)
    assert "p99 after (s)" in scen.columns and "Before/after step times in s " in texts(at.caption)
    assert {b.label for b in at.download_button} == {"Design (JSON)", "Report (one HTML file)",
                                                      "Bill of materials (CSV)", "Design and bill of materials (JSON)",
                                                      "Design package (zip)"}
    at.selectbox(key="design_pick").set_value(at.selectbox(key="design_pick").options[1]).run()
    ok(at)
    assert at.query_params["design"]


def test_design_link_reproduces_the_view():
    genes = design_genes(Design(family="rail_optimized", oversubscription=(2.0, 1.0), routing="adaptive",
                                placement="rail_aligned"))
    at = app(wl="sample:dlrm-dcnv2.json", gpus="512", design=encode_genes(genes)).run()
    ok(at)
    assert "dlrm-dcnv2" in at.header[0].value
    at.switch_page("pages/design.py").run()
    ok(at)
    assert at.selectbox(key="design_pick").value.startswith("selected: rail_optimized ib-ndr-64x400")
    assert "512 GPUs" in texts(at.caption)
    assert at.query_params["wl"] == "sample:dlrm-dcnv2.json" and at.query_params["gpus"] == "512"


def test_bad_links_warn_and_fall_back():
    at = app(wl="sample:nope.json", design="clos,1", families="torus").run()
    ok(at)
    warn = texts(at.warning)
    assert "no built-in sample" in warn and "expected 16" in warn and "unknown value" in warn
    assert "mixtral-8x7b" in at.header[0].value
    at = app(wl="upload:mine.json").run()
    ok(at)
    assert "cannot travel in a link" in texts(at.warning)
    unbuildable = design_genes(Design(switch_model="eth-12t-32x400", nic_model="nic-eth-400", transport="roce",
                                      tiers=None))
    unbuildable["switch_model"] = "no-such-switch"
    at = app(design=encode_genes(unbuildable)).run()
    at.switch_page("pages/design.py").run()
    ok(at)
    assert "cannot be evaluated" in texts(at.error)


def test_compare_page_defaults_and_deltas():
    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    at.switch_page("pages/compare.py").run()
    ok(at)
    picked = at.multiselect(key="compare_pick").value
    # a fat-tree baseline against the recommended design: the 1:1 fat tree, or the 2:1 one when the search
    # recommends the 1:1 fat tree itself (400G links on the NDR switches of the ConnectX-7's generation, since H100
    # hosts cannot run 800G NICs)
    assert len(picked) == 2 and picked[1].startswith("recommended: ")
    rec = picked[1].removeprefix("recommended: ")
    ref = "fat tree 2:1, 400G on ib-ndr-64x400" if rec == "baseline: fat tree 1:1, 400G on ib-ndr-64x400" else \
        "fat tree 1:1, 400G on ib-ndr-64x400"
    assert picked[0] == f"baseline: {ref}"
    # the deltas sentence names the reference ("costs the same as '...'" when both are one design at 256 GPUs)
    assert f"than '{ref}'" in texts(at.markdown).replace("\\", "") or \
        f"costs the same as '{ref}'" in texts(at.markdown).replace("\\", "")
    figs = charts(at)
    assert len(figs) == 1 and figs[0]["layout"]["yaxis"]["title"]["text"] == "share of steps (CDF)"
    genes = [d.value for d in at.dataframe][1]
    assert "differs" in genes.columns and len(genes) >= 1
    opts = at.multiselect(key="compare_pick").options
    at.multiselect(key="compare_pick").set_value(opts[:4]).run()
    ok(at)
    assert len(at.session_state["compare_genes"]) == 4 and "compare" in at.query_params
    at.multiselect(key="compare_pick").set_value(opts[:1]).run()
    assert "at least two" in texts(at.warning)


def test_build_page_changes_size_and_reports_errors():
    at = app().run()
    at.switch_page("pages/build.py").run()
    ok(at)
    assert at.metric[0].value.startswith("$")
    at.selectbox(key="preset").set_value("dgx-h100-superpod").run()
    at.number_input(key="gpus").set_value(248).run()
    ok(at)
    switches = at.dataframe[0].value
    assert dict(zip(switches["tier"], switches["switches"])) == {"leaf": 8, "spine": 4}
    at.number_input(key="gpus").set_value(12).run()       # not a whole number of 8-GPU nodes
    ok(at)
    assert "8-GPU nodes" in at.error[0].value
    # a newly picked reference design starts at the session's cluster size (256 GPUs for the sample), not the 12
    # GPUs typed for the previous one; one that cannot be built there at its own size, saying why
    at.selectbox(key="preset").set_value("hyperscale-multiplane").run()
    ok(at)
    assert at.number_input(key="gpus").value == 256
    assert "256 GPUs, 4 planes" in " ".join(c.value for c in at.caption)
    at.selectbox(key="preset").set_value("gb200-nvl72-superpod").run()
    ok(at)
    assert at.number_input(key="gpus").value == 576
    assert "cannot be built at the session's 256 GPUs" in " ".join(c.value for c in at.caption)


def test_every_page_is_titled_as_its_navigation_entry_and_design_pages_export():
    import re as _re

    titles = dict(_re.findall(r'st\.Page\("(pages/\w+\.py)", title="([^"]+)"', (ROOT / "pages" / "_entry.py").read_text()))
    assert len(titles) == 9 and titles["pages/build.py"] == "Fabric & BOM" and titles["pages/upgrade.py"] == "Upgrade"
    at = app().run()
    for page, title in titles.items():
        at.switch_page(page).run()
        ok(at)
        assert at.title[0].value == title, page
        if page in ("pages/design.py", "pages/build.py"):      # the same exports on both pages that show a BOM
            labels = {b.label for b in at.download_button}
            assert {"Design (JSON)", "Bill of materials (CSV)", "Design and bill of materials (JSON)"} <= labels, page



def test_search_workers_importing_the_main_module_do_not_run_the_dashboard():
    """Streamlit makes app.py the server's __main__ module; a search worker started with multiprocessing "spawn"
    imports it as __mp_main__. It must come out of that import without running the app (without a browser
    session, every call would log "missing ScriptRunContext", and a worker ran the whole dashboard)."""
    import subprocess
    import sys

    code = ("import runpy, sys; sys.path.insert(0, '.'); runpy.run_path('app.py', run_name='__mp_main__'); "
            "print('imported streamlit:', 'streamlit' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ScriptRunContext" not in done.stderr
    # nor does it import Streamlit: half a second of every worker's start, while the first front waits
    assert "imported streamlit: False" in done.stdout


def test_design_page_strong_scaling_of_a_plan():
    at = app().run()
    at.switch_page("pages/design.py").run()
    at.radio(key="scaling_mode").set_value("strong").run()
    ok(at)
    assert "needs a parallelism plan" in texts(at.info)          # a sample file cannot be re-planned
    at = app(wl="plan:llama3-70b:1024").run()
    at.switch_page("pages/design.py").run()
    at.radio(key="scaling_mode").set_value("strong").run()
    ok(at)
    fig = next(f for f in charts(at) if f["layout"]["xaxis"]["title"]["text"] == "cluster size (fixed global batch)")
    assert [t["name"] for t in fig["data"]] == ["efficiency (p99)", "lost: pipeline bubble", "lost: stragglers",
                                                "lost: network"]
    assert "fixed global batch of 512 sequences" in texts(at.caption)     # dp 32/64/128: lcm 128, plan's 512
    at.text_input(key="strong_counts").set_value("1024,2048,x").run()
    assert "is not a comma-separated list" in texts(at.error)
    at.text_input(key="strong_counts").set_value("1024,3072").run()         # dp 32 and 96: lcm 96 -> 576
    ok(at)
    assert not at.error and "fixed global batch of 576 sequences" in texts(at.caption)
    at.number_input(key="strong_gb").set_value(500).run()
    assert "use a multiple of 96" in texts(at.error)


def test_an_uploaded_trace_scales_to_the_cluster():
    at = app().run()
    at.radio(key="wl_source").set_value("upload").run()
    files = [(p.name, p.read_bytes(), "application/gzip")
             for p in sorted((SAMPLES / "kineto").glob("llama3-70b.rank*.pt.trace.json.gz"))]
    at.file_uploader(key="wl_upload").set_value(files).run()
    ok(at)
    assert at.session_state["constraints"].gpus == 256                  # the traced job's 256 ranks
    gpus = next(n for n in at.number_input if n.label == "GPUs")
    gpus.set_value(1024)
    next(b for b in at.button if b.label == "Scale").click().run()
    ok(at)
    assert at.header[0].value.endswith("scaled to 1,024 GPUs (dp grown)")
    assert at.session_state["constraints"].gpus == 1024
    assert {m.label: m.value for m in at.metric}["GPUs needed"] == "1,024"
    next(n for n in at.number_input if n.label == "GPUs").set_value(1000)
    next(b for b in at.button if b.label == "Scale").click().run()
    assert "not a whole multiple of the traced 256 ranks" in texts(at.error)
    next(b for b in at.button if b.label == "Back to the traced size").click().run()
    ok(at)
    assert at.session_state["constraints"].gpus == 256 and "scaled" not in at.header[0].value


def test_brief_page_after_a_search():
    at = app().run()
    at.switch_page("pages/brief.py").run()
    ok(at)
    assert "run one on the Search page" in texts(at.info)
    at.switch_page("pages/search.py").run()
    finish_search(at)
    at.switch_page("pages/brief.py").run()
    ok(at)
    heads = [s.value for s in at.subheader]
    res = at.session_state["search_job"].snapshot().result
    from fabric.search.recommend import recommend

    buy = recommend(res.front, res.baselines).record       # a design with in-network reduction says how it runs
    sharp = ["In-network reduction"] if buy.get("in_network_reduction") in (True, 1, "True", "true") else []
    assert heads == ["The design to buy", "Against the baselines", "Constraints", "Bill of materials", "The runner-up",
                     "Resilience", "What if", "Cheapest fixes", "Cost per step"] + sharp
    assert "Buy '" in texts(at.markdown) and any(b.label == "Brief (one HTML file)" for b in at.download_button)


def test_constraints_page_sets_resilience_and_economics_and_the_link_keeps_them():
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    ok(at)
    assert at.toggle(key="con_survive").value is True
    at.toggle(key="con_survive").set_value(False)
    at.number_input(key="con_p99_fail").set_value(6.0)
    at.radio(key="con_cost_obj").set_value("cost_per_step")
    at.number_input(key="con_pue").set_value(1.5).run()
    ok(at)
    c = at.session_state["constraints"]
    assert (c.survive_single_failure, c.max_p99_under_failure_s, c.cost_objective, c.pue) == \
        (False, 6.0, "cost_per_step", 1.5)
    q = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert q["survive_single_failure"] == "0" and q["cost_objective"] == "cost_per_step" and q["pue"] == "1.5"
    other = app(**{k: v for k, v in q.items() if k != "evals"}).run()
    ok(other)
    assert other.session_state["constraints"] == c


def test_constraints_page_sets_gpu_systems_planes_and_power_limits_and_design_shows_racks():
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    ok(at)
    at.multiselect(key="con_systems").set_value(["b200", "gb200-nvl72"])
    at.multiselect(key="con_planes").set_value([1, 2, 4])
    at.number_input(key="con_rack_kw").set_value(130.0)
    at.number_input(key="con_facility_mw").set_value(5.0).run()
    ok(at)
    c = at.session_state["constraints"]
    assert (c.gpu_models, c.planes, c.rack_power_w, c.facility_power_w) == \
        (("b200", "gb200-nvl72"), (1, 2, 4), 130_000.0, 5_000_000.0)
    q = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert q["gpu_models"] == "b200,gb200-nvl72" and q["rack_power_w"] == "130000"
    other = app(**{k: v for k, v in q.items() if k != "evals"}).run()
    ok(other)
    assert other.session_state["constraints"] == c
    at.switch_page("pages/design.py").run()
    ok(at)
    heads = [s.value for s in at.subheader]
    assert "Racks and power" in heads and "Scale-up versus scale-out" in heads
    tables = [d.value for d in at.dataframe]
    racks = next(t for t in tables if "kW per rack" in t.columns)
    assert racks["racks"][0] == "compute" and set(racks["over the limit"]) <= {"yes", "no"}
    assert any("network GiB per step" in t.columns for t in tables)
    assert "against a limit of 130.0 kW" in texts(at.caption)


def test_constraints_page_names_plane_counts_the_hardware_cannot_build():
    """Issue 39 item 4: planes 4 and 8 on H100 hosts have no NIC (the 4-port NIC needs a host that feeds 800G a
    GPU); the page says so beside the choice, before any search."""
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    at.multiselect(key="con_planes").set_value([1, 2, 4, 8]).run()
    ok(at)
    warn = texts(at.warning)
    assert "Cannot be built with the allowed hardware" in warn
    assert "4 planes: no allowed NIC has a multiple of 4 ports" in warn and "nic-cx8-4x200 would, but the host" in warn
    assert "8 planes: no allowed NIC has a multiple of 8 ports" in warn and "2 planes" not in warn
    at.selectbox(key="con_gpu_model").set_value("b200").run()          # a Blackwell host feeds the 4-port NIC
    ok(at)
    warn = texts(at.warning)
    assert "8 planes" in warn and "4 planes" not in warn


def test_constraints_page_searches_ratios_up_to_8_to_1():
    """Issue 39 item 5: the slider reaches 8:1 and the search then tries 6:1, 7:1 and 8:1 (the hyperscale core's
    7:1); back at 4:1 it does not."""
    at = app().run()
    at.switch_page("pages/constraints.py").run()
    assert at.select_slider(key="con_max_os").options[-1] == "8:1"
    at.select_slider(key="con_max_os").set_value(8.0).run()
    ok(at)
    c = at.session_state["constraints"]
    assert c.max_oversubscription == 8.0 and {6.0, 7.0, 8.0} <= set(c.oversubscriptions)
    at.select_slider(key="con_max_os").set_value(4.0).run()
    ok(at)
    assert max(at.session_state["constraints"].oversubscriptions) == 4.0


def test_a_new_search_opens_its_own_recommendation():
    """Issue 39 item 6: a design picked from the last front is not what the Design page opens after a new search
    (on another GPU, say); it opens the new search's recommendation."""
    at = app().run()
    at.switch_page("pages/search.py").run()
    finish_search(at)
    names = at.selectbox(key="open_pick").options
    at.session_state["front_table"] = {"selection": {"rows": [len(names) - 1], "columns": [], "cells": []}}
    at.run()
    assert at.session_state["design_name"] == names[-1]
    at.switch_page("pages/search.py").run()
    at.number_input(key="in_seed").set_value(7)
    at.button(key="start_search").click().run()
    assert "design_genes" not in at.session_state and "design_name" not in at.session_state
    finish_search(at)
    at.switch_page("pages/design.py").run()
    ok(at)
    assert at.selectbox(key="design_pick").value.startswith("recommended: ")
