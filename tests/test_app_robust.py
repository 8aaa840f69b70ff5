"""The robust search across a job mix in the dashboard (AppTest, no browser): the Workload page holds several
workloads with weights, a robust mode and scenarios (also in the link); the Search page runs a robust search and
shows each design's spread, the brittle ones and every case's own front; the Design page says what it evaluates."""

from __future__ import annotations

from fabric.units import time_text

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fabric.search.robust import RobustObjective

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def test_workload_page_adds_a_second_workload_and_switches_robust_mode_on():
    at = app().run()
    ok(at)
    assert "mixtral-8x7b" in at.header[0].value                    # the single-workload page as before
    assert at.session_state["robust_mode"] == "off" and "robust" not in dict(at.query_params)
    assert at.selectbox(key="mix_sample").value != "mixtral-8x7b.json"  # the sample to add is not the current one
    at.radio(key="mix_src").set_value("plan").run()
    at.selectbox(key="mix_preset").set_value("llama3-70b").run()
    at.number_input(key="mix_gpus").set_value(512).run()
    at.button(key="mix_add").click().run()
    ok(at)
    assert [e["choice"] for e in at.session_state["robust_mix"]] == [
        {"kind": "plan", "preset": "llama3-70b", "gpus": 512}]
    assert at.session_state["constraints"].gpus == 256                # robust mode off: the single-workload flow
    assert "robust mode is off" in texts(at.info) and "robust" not in dict(at.query_params)
    at.button(key="mix_add").click().run()                            # the same plan again: refused, named
    assert "plan llama3-70b on 512 GPUs is already in the mix" in texts(at.error)
    at.radio(key="robust_mode_in").set_value("mean").run()
    assert at.session_state["constraints"].gpus == 512                # now it holds the largest workload of the mix
    at.multiselect(key="robust_scen_in").set_value(["baseline", "fail-spine"]).run()
    ok(at)
    wid = at.session_state["robust_mix"][0]["id"]
    at.number_input(key=f"mix_w_{wid}").set_value(3.0).run()
    ok(at)
    assert "weighted mean: robust (mean) over mixtral-8x7b, llama3-70b@512 × baseline, fail-spine: 4 cases" \
        in texts(at.success)
    assert "2 workloads × 2 scenarios" in texts(at.info)
    q = dict(at.query_params)
    assert q["robust"] == "mean" and q["mix"] == "plan:llama3-70b:512*3" and q["scenarios"] == "baseline,fail-spine"
    # the objective the Search page will run: 1 : 3 shared by 2 scenarios each
    from pages import _common as C   # noqa: F401  (the page module; the objective is read from the session)
    obj = at.session_state["_robust_obj"][1]
    assert isinstance(obj, RobustObjective) and obj.mode == "mean"
    assert [(c[0], round(c[3], 4)) for c in obj.cases] == [
        ("mixtral-8x7b|baseline", 0.125), ("mixtral-8x7b|fail-spine", 0.125), ("llama3-70b@512|baseline", 0.375),
        ("llama3-70b@512|fail-spine", 0.375)]
    at.button(key=f"mix_rm_{wid}").click().run()
    ok(at)
    assert at.session_state["robust_mix"] == []
    assert at.session_state["constraints"].gpus == 256                # the 512 GPUs the plan needed are given back
    assert "at least two cases" not in texts(at.error)                # two scenarios still make two cases
    at.multiselect(key="robust_scen_in").set_value(["baseline"]).run()
    assert "The robust search cannot start: a robust search needs at least two cases" in texts(at.error)
    # robust mode off again: the single-workload flow as it was (the cluster the mix grew is given back, the link
    # carries nothing of the mix)
    at.radio(key="robust_mode_in").set_value("off").run()
    ok(at)
    assert at.session_state["constraints"].gpus == 256
    assert not {"robust", "mix", "wlw", "scenarios"} & set(dict(at.query_params))


def test_uploaded_traces_join_the_mix_and_the_link_names_them():
    at = app(robust="worst").run()
    at.radio(key="mix_src").set_value("upload").run()
    dlrm = (ROOT / "sample_traces" / "dlrm-dcnv2.json").read_bytes()
    at.file_uploader(key="mix_files").set_value([("broken.json", b"{\"jobs\": [", "application/json")]).run()
    at.button(key="mix_add").click().run()
    ok(at)
    assert "broken.json** could not be read" in texts(at.error)
    assert "Not added: none of these files could be read, so nothing was added" in texts(at.error)
    assert at.session_state["robust_mix"] == []
    at.file_uploader(key="mix_files").set_value([("dlrm.json", dlrm, "application/json"),
                                                 ("notes.txt", b"hello world", "text/plain")]).run()
    at.button(key="mix_add").click().run()
    ok(at)
    assert "notes.txt** could not be read" in texts(at.error)
    assert [e["choice"] for e in at.session_state["robust_mix"]] == [{"kind": "upload", "names": ["dlrm.json"]}]
    assert "uploaded dlrm.json" in texts(at.markdown)
    # the search's cases are named after the file; the link names the upload, which cannot travel
    assert "robust (worst) over mixtral-8x7b, dlrm × baseline: 2 cases" in texts(at.success)
    assert dict(at.query_params)["mix"] == "upload:dlrm.json"
    again = app(**dict(at.query_params)).run()
    ok(again)
    assert "uploaded traces (dlrm.json); files cannot travel in a link" in texts(again.warning)
    assert again.session_state["robust_mix"] == []


def test_a_link_restores_the_mix_and_says_what_cannot_travel():
    at = app(robust="worst", mix="sample:dlrm-dcnv2.json*2|upload:rank0.json", scenarios="baseline,job-mix-shift").run()
    ok(at)
    assert at.session_state["robust_mode"] == "worst"
    assert [(e["choice"]["name"], e["weight"]) for e in at.session_state["robust_mix"]] == [("dlrm-dcnv2.json", 2.0)]
    assert "uploaded traces (rank0.json); files cannot travel in a link" in texts(at.warning)
    assert at.session_state["robust_scenarios"] == ["baseline", "job-mix-shift"]
    assert dict(at.query_params)["mix"] == "sample:dlrm-dcnv2.json*2"
    # a link that fixes the cluster below the mix's largest workload: said, not silently searched
    small = app(robust="worst", mix="plan:llama3-70b:512", gpus="256").run()
    ok(small)
    assert small.session_state["constraints"].gpus == 256
    assert "The cluster (256 GPUs) is smaller than the largest workload of the mix needs (512 GPUs)" \
        in texts(small.warning)
    assert "the cluster holds the largest workload" not in texts(small.success)


def _own_front_size(records, case):
    """The case's own Pareto front among the feasible records, by the definition (no design cheaper or equal and
    faster on that case; equal points count once)."""
    pts = {(r["cost_usd"], r["p99_by_case"][case]) for r in records if r.get("feasible") and r.get("p99_by_case")}
    return sum(1 for c, p in pts if not any(c2 <= c and p2 <= p and (c2, p2) != (c, p) for c2, p2 in pts))


def test_search_page_runs_a_robust_search_and_shows_spread_brittle_and_case_fronts():
    at = app(robust="worst", mix="sample:dlrm-dcnv2.json", scenarios="baseline,fail-spine").run()
    ok(at)
    at.switch_page("pages/search.py").run()
    ok(at)
    job = at.session_state["search_job"]
    assert isinstance(job.workload, RobustObjective) and len(job.workload.cases) == 4
    line = texts(at.caption).replace("\\", "")
    assert "Context: robust worst case over 2 workloads" in line and "scenarios baseline, fail-spine" in line
    assert job.wait(120)
    at.run()
    ok(at)
    res = job.snapshot().result
    assert res.front and all(len(r["p99_by_case"]) == 4 for r in res.front)
    subheaders = [s.value for s in at.subheader]
    assert "Pareto front: network capex vs robust p99 across the job mix" in subheaders
    assert "The robust front against each case's own front" in subheaders
    # the Pareto chart: a spread bar per front design, from its best to its worst case relative to the fat tree
    pareto = charts(at)[0]
    bars = next(t for t in pareto["data"] if t.get("name") == "spread across cases")
    ref = next(b for b in res.baselines if b.get("buildable", True) and b.get("p99_by_case"))["p99_by_case"]
    ys = [y for y in bars["y"] if y is not None]
    unit = 1.0 if max(r["p99_s"] for r in res.front) >= 1 else 1e3
    expect = []
    for r in res.front:
        s = [r["p99_by_case"][c] / ref[c] for c in ref]
        scale = r["p99_s"] / max(s)                                   # worst case: the top is the robust p99
        expect += [min(s) * scale * unit, max(s) * scale * unit]
    assert sorted(ys) == pytest.approx(sorted(expect))
    assert pareto["layout"]["yaxis"]["title"]["text"].startswith("robust p99, worst case")
    # the front table: spread, worst case, brittle, every case's p99
    table = at.dataframe[0].value
    for col in ("robust slowdown", "spread across cases", "worst case", "brittle", "p99 dlrm-dcnv2|fail-spine (s)"):
        assert col in table.columns
    by_name = {r["design"]: r for r in res.front}
    for _, row in table.iterrows():
        r = by_name[row["design"]]
        s = {c: r["p99_by_case"][c] / ref[c] for c in ref}
        assert row["spread across cases"] == pytest.approx(max(s.values()) / min(s.values()))
        assert row["worst case"] == max(s, key=s.get)
        assert row["p99 mixtral-8x7b|baseline (s)"] == pytest.approx(r["p99_by_case"]["mixtral-8x7b|baseline"])
    # brittle: flagged in the table exactly for the designs the review sentences name
    lines = texts(at.markdown)
    ref_name = next(b for b in res.baselines if b.get("buildable", True) and b.get("p99_by_case"))["design"]
    assert f"p99 here is the robust p99: the worst case of each design's slowdowns against '{ref_name}' over the 4 " \
           "cases" in lines.replace("\\", "")
    named = {line.split("'")[1] for line in lines.splitlines() if line.startswith("- brittle: '")}
    flagged = {row["design"] for _, row in table.iterrows() if row["brittle"]}
    assert {n.replace("\\_", "_") for n in named} == flagged
    if not flagged:
        assert "no front design is brittle" in lines
    # each case's own front beside the robust front
    cases = at.dataframe[1].value
    assert sorted(cases["case"]) == sorted(ref)
    for _, row in cases.iterrows():
        assert row["own front (designs)"] == _own_front_size(res.records, row["case"])
        own_best = min(r["p99_by_case"][row["case"]] for r in res.records if r.get("feasible"))
        assert row["fastest p99, own front (s)"] == pytest.approx(own_best)
    panels = charts(at)[2]
    assert sorted(a["text"] for a in panels["layout"]["annotations"]) == sorted(ref)
    assert sum(line.startswith("- case ") for line in lines.splitlines()) == 4
    # the Design page evaluates a front design on the first workload and says so, with its p99 per case
    rec = min(res.front, key=lambda r: r["cost_usd"])
    from pages._common import genes_of_record

    at.session_state["design_genes"] = genes_of_record(rec)
    at.session_state["design_name"] = rec["design"]
    at.switch_page("pages/design.py").run()
    ok(at)
    # issue 34: the Design page shows the design's record in the search's context: its robust p99 (the search's
    # record of it) and every case's figures, not a single-workload evaluation
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Robust p99 step"] == time_text(rec["p99_s"])
    cases = next(d.value for d in at.dataframe if "case" in d.value.columns)
    assert sorted(cases["case"]) == sorted(rec["p99_by_case"])
    for _, row in cases.iterrows():
        assert row["p99 step"] == time_text(rec["p99_by_case"][row["case"]])
    assert "robust worst case over 2 workloads" in texts(at.caption)         # the context line
    # Compare and the Brief show the same record in the same context
    for page in ("pages/compare.py", "pages/brief.py"):
        at.switch_page(page).run()
        ok(at)
        assert "robust worst case over 2 workloads" in texts(at.caption), page
    # the objective is part of the inputs key: another scenario set marks the robust front stale, and so does the
    # robust mode turned off (the single-workload search is another search)
    at.switch_page("pages/search.py").run()
    assert "inputs changed" not in texts(at.warning)
    at.switch_page("pages/workload.py").run()
    at.multiselect(key="robust_scen_in").set_value(["baseline"]).run()
    at.switch_page("pages/search.py").run()
    ok(at)
    assert "The inputs changed since this front was computed" in texts(at.warning)
    at.switch_page("pages/workload.py").run()
    at.multiselect(key="robust_scen_in").set_value(["baseline", "fail-spine"]).run()
    at.switch_page("pages/search.py").run()
    assert "inputs changed" not in texts(at.warning)
    at.switch_page("pages/workload.py").run()
    at.radio(key="robust_mode_in").set_value("off").run()
    at.switch_page("pages/search.py").run()
    assert "The inputs changed since this front was computed" in texts(at.warning)


def test_robust_mode_off_keeps_the_single_workload_search():
    at = app(mix="sample:dlrm-dcnv2.json").run()                      # a mix without a mode: not robust
    ok(at)
    assert "only apply with robust=" in texts(at.warning)
    at.switch_page("pages/search.py").run()
    job = at.session_state["search_job"]
    assert not isinstance(job.workload, RobustObjective)
    assert job.wait(60)
    at.run()
    ok(at)
    assert "Pareto front: network capex vs p99 step time" in [s.value for s in at.subheader]
    assert "robust slowdown" not in at.dataframe[0].value.columns
    assert not np.any([t.get("name") == "spread across cases" for t in charts(at)[0]["data"]])
