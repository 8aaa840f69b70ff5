"""The dashboard's non-UI helpers (fabric/ui_support): designs from records, URL state, the background search
job, charts, the aggregated topology drawing, comparisons, workload tables and the HTML report."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.errors import DesignError, FabricError
from fabric.evaluate import evaluate
from fabric.search import Constraints, DesignSpace
from fabric.search.baselines import baseline_designs
from fabric.topology import build_fabric
from fabric.ui_support import charts, urlstate
from fabric.ui_support.compare import gene_frame, metrics_frame, money_deltas
from fabric.search.designs import (GENE_COLUMNS, design_from_record, design_genes, gene_value_text,
                                       recommended_record, short_label)
from fabric.ui_support.jobs import SearchJob
from fabric.ui_support.report import Section, report_html
from fabric.ui_support.topology_view import topology_figure, topology_view
from fabric.ui_support.workload_view import (cluster_gpus, compute_comm_rows, files_table, gpus_needed,
                                             groups_table, jobs_table, ops_table, plan_degrees, unparsed_table)
from fabric.workload.ingest import ingest
from fabric.workload.model import load_workload_json
from fabric.workload.summary import summarize

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ("mixtral-8x7b.json", "llama3-70b.json")
PRESETS = ("llama3-70b", "mixtral-8x7b")


@pytest.fixture(scope="module")
def mixtral():
    return load_workload_json((ROOT / "sample_traces" / "mixtral-8x7b.json").read_text())


@pytest.fixture(scope="module")
def small_search(mixtral):
    """One small finished search shared by the tests that need real records."""
    job = SearchJob(mixtral, Constraints(gpus=256), budget_evals=80, seed=0).start()
    assert job.wait(60)
    snap = job.snapshot()
    assert snap.state == "done", snap.error
    return snap


# ------------------------------------------------------------------ designs


def test_baselines_round_trip_through_their_genes():
    c = Constraints(gpus=512)
    for d in baseline_designs(DesignSpace(c)):
        rec = {**design_genes(d), "design": d.name}
        back = design_from_record(rec, gpus=c.gpus, gpus_per_node=c.gpus_per_node, gpu_model=c.gpu_model)
        assert back == d


def test_design_from_search_records_evaluates_like_the_search(small_search, mixtral):
    for rec in small_search.front[:3]:
        d = design_from_record(rec, gpus=256)
        assert d.name == rec["design"]
        ev = evaluate(d, mixtral)
        assert ev.step_time_s["p99"] == pytest.approx(rec["p99_s"], rel=1e-12)
        assert ev.cost_usd == pytest.approx(rec["cost_usd"], rel=1e-12)


def test_design_from_record_accepts_csv_and_numpy_values(small_search):
    res = small_search.result
    row = res.front_frame().iloc[0].to_dict()            # numpy scalars
    d1 = design_from_record(row, gpus=256)
    text = {k: str(v) for k, v in row.items()}           # read back from CSV: strings
    text["pxn"] = "False"
    d2 = design_from_record({**text, "pxn": str(row["pxn"])}, gpus=256)
    assert design_genes(d1) == design_genes(d2)


def test_design_from_record_errors_name_the_gene():
    rec = design_genes(Design())
    with pytest.raises(DesignError, match="nics_per_gpu"):
        design_from_record({k: v for k, v in rec.items() if k != "nics_per_gpu"}, gpus=1024)
    with pytest.raises(DesignError, match="pxn"):
        design_from_record({**rec, "pxn": "maybe"}, gpus=1024)
    with pytest.raises(DesignError, match="planes"):
        design_from_record({**rec, "planes": 1.5}, gpus=1024)
    with pytest.raises(FabricError, match="family"):
        design_from_record({**rec, "family": "torus"}, gpus=1024)


def test_gene_texts_and_labels():
    g = design_genes(Design(oversubscription=(2.0, 1.0), routing="ecmp", qps_per_connection=4, pxn=False))
    assert gene_value_text("oversub_leaf", g["oversub_leaf"]) == "2:1"
    assert gene_value_text("pxn", g["pxn"]) == "no"
    assert short_label(g) == "clos ib-ndr-64x400 nic-cx7-400 2:1/1:1 ecmp/4qp infiniband packed"


def test_recommended_record_rules():
    base = [{"design": "fat tree", "cost_usd": 100.0, "p99_s": 1.0, "buildable": True, "feasible": True}]
    front = [{"design": "cheap slow", "cost_usd": 10.0, "p99_s": 2.0},
             {"design": "as fast, cheaper", "cost_usd": 60.0, "p99_s": 0.99},
             {"design": "fastest", "cost_usd": 150.0, "p99_s": 0.5}]
    assert recommended_record(front, base)["design"] == "as fast, cheaper"
    assert recommended_record(front, base, p99_target_s=3.0)["design"] == "cheap slow"
    assert recommended_record(front[:1], base)["design"] == "cheap slow"   # nothing as fast: the fastest
    assert recommended_record([], base) is None


# ------------------------------------------------------------------ URL state


def test_view_round_trip():
    c = Constraints(gpus=512, families=("clos", "rail_optimized"), budget_usd=2_345_678.5, p99_target_s=0.75,
                    max_radix=128, switch_models=("ib-ndr-64x400",), max_oversubscription=2.0, optimize_power=True)
    genes = design_genes(Design(nics_per_gpu=0.5, oversubscription=(3.0, 1.5), pxn=True, family="rail_optimized"))
    other = design_genes(Design())
    wl = {"kind": "plan", "preset": "llama3-70b", "gpus": 512, "tp": 8, "pp": 2}
    params = urlstate.encode_view(workload=wl, constraints=c, design=genes, compare=[genes, other], evals=900,
                                  seed=7)
    assert params["gpus"] == "512" and params["families"] == "clos,rail_optimized"
    assert "routings" not in params                     # defaults stay out of the link
    view = urlstate.decode_view(params, samples=SAMPLES, presets=PRESETS)
    assert view.problems == []
    assert view.constraints == c and view.constraints_given
    assert view.workload == wl
    assert view.design == genes and view.compare == [genes, other]
    assert (view.evals, view.seed) == (900, 7)


def test_sample_and_upload_choices():
    p = urlstate.encode_view(workload={"kind": "sample", "name": "llama3-70b.json"}, constraints=Constraints())
    assert p == {"wl": "sample:llama3-70b.json", "gpus": "1024"}
    v = urlstate.decode_view(p, samples=SAMPLES, presets=PRESETS)
    assert v.workload == {"kind": "sample", "name": "llama3-70b.json"} and v.gpus_given
    v = urlstate.decode_view({"families": "clos"}, samples=SAMPLES, presets=PRESETS)
    assert v.constraints_given and not v.gpus_given
    up = urlstate.encode_workload({"kind": "upload", "names": ["a.json", "b,c.gz"]})
    assert urlstate.decode_workload(up, samples=SAMPLES, presets=PRESETS) == {"kind": "upload",
                                                                               "names": ["a.json", "b c.gz"]}


@pytest.mark.parametrize("params, fragment", [
    ({"wl": "sample:../../etc/passwd"}, "no built-in sample"),
    ({"wl": "plan:gpt5:1024"}, "unknown preset"),
    ({"wl": "plan:llama3-70b:lots"}, "not a whole number"),
    ({"wl": "plan:llama3-70b:64:rm=1"}, "unknown plan setting"),
    ({"wl": "ftp:x"}, "is not sample"),
    ({"gpus": "12", "gpus_per_node": "8"}, "8-GPU nodes"),
    ({"families": "torus"}, "unknown value"),
    ({"budget_usd": "cheap"}, "cannot read"),
    ({"design": "clos,1,2"}, "expected 16"),
    ({"design": "clos,ib-ndr-64x400,nic-cx7-400,x,1,1,1,ecmp,1,infiniband,packed,0,0,0"}, "not a number"),
    ({"design": "clos,ib-ndr-64x400,nic-cx7-400,1,1,1,1,ecmp,1,infiniband,packed,2,0,0"}, "must be 0 or 1"),
    ({"evals": "0"}, "whole number in"),
    ({"hack": "1"}, "not known"),
])
def test_bad_links_are_explained_not_raised(params, fragment):
    view = urlstate.decode_view(params, samples=SAMPLES, presets=PRESETS)
    assert any(fragment in p for p in view.problems), view.problems
    assert view.workload is None or view.workload["kind"] in ("sample", "plan", "upload")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.dictionaries(hs.sampled_from(["wl", "gpus", "families", "design", "compare", "evals", "seed",
                                        "budget_usd", "qps", "optimize_power", "x"]),
                       hs.text(max_size=40), max_size=6))
def test_decode_view_never_raises(params):
    view = urlstate.decode_view(params, samples=SAMPLES, presets=PRESETS)
    assert isinstance(view.constraints, Constraints)
    assert 1 <= view.evals <= urlstate.MAX_EVALS


# ------------------------------------------------------------------ background search job


def test_search_job_runs_to_completion(small_search):
    s = small_search
    assert not s.running and s.fraction == 1.0
    assert s.evaluations >= 80 and s.front and s.baselines
    # one point per generation, then one for the front the recommendation's neighbourhood check left (if it added)
    gens = [h for h in s.hv_history if not h.get("neighbourhood_check")]
    assert [h["generation"] for h in gens] == list(range(1, len(gens) + 1))
    assert s.hv_history[:len(gens)] == gens and len(s.hv_history) - len(gens) <= 1
    assert s.result.front == s.front
    assert s.elapsed_s > 0


def test_search_job_reports_progress_while_running_and_cancels(mixtral):
    job = SearchJob(mixtral, Constraints(gpus=256), budget_evals=5000, seed=1).start()
    assert job.running
    t0 = time.monotonic()
    while job.snapshot().generation < 2 and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    mid = job.snapshot()
    assert mid.running and mid.generation >= 2 and 0 < mid.fraction < 1 and mid.front
    job.cancel()
    assert job.wait(10)
    end = job.snapshot()
    assert end.state == "cancelled" and end.result is not None and end.evaluations < 5000
    assert job.start() is job                                   # starting twice is harmless


def test_searches_under_other_constraints_do_not_share_feasibility(mixtral):
    """A search after another one with other limits judges every design against its own limits."""
    free = SearchJob(mixtral, Constraints(gpus=256), budget_evals=60).start()
    assert free.wait(60) and free.snapshot().result.feasible
    tight = SearchJob(mixtral, Constraints(gpus=256, budget_usd=1000.0), budget_evals=60).start()
    assert tight.wait(60)
    res = tight.snapshot().result
    assert not res.feasible and "budget" in res.infeasible_reason
    from fabric.catalog import default_catalog
    from fabric.ui_support.jobs import catalog_for_constraints

    c = Constraints(gpus=256)
    assert catalog_for_constraints(None, c) is catalog_for_constraints(default_catalog(), c)
    assert catalog_for_constraints(None, c) is not catalog_for_constraints(None, Constraints(gpus=512))
    assert catalog_for_constraints(None, c).tables()["switches"].equals(default_catalog().tables()["switches"])


def test_search_job_failure_is_a_message(mixtral):
    job = SearchJob(mixtral, Constraints(gpus=256), budget_evals=0).start()
    assert job.wait(10)
    snap = job.snapshot()
    assert snap.state == "failed" and "evaluation budget" in snap.error


def test_two_jobs_run_side_by_side(mixtral):
    """Two sessions' searches in threads at once keep their own inputs and results."""
    a = SearchJob(mixtral, Constraints(gpus=256, switch_models=("ib-ndr-64x400",)), budget_evals=60).start()
    b = SearchJob(mixtral, Constraints(gpus=256, switch_models=("eth-51t-64x800",)), budget_evals=60).start()
    assert a.wait(60) and b.wait(60)
    ra, rb = a.snapshot().result, b.snapshot().result
    assert {r["switch_model"] for r in ra.records} == {"ib-ndr-64x400"}
    assert {r["switch_model"] for r in rb.records} == {"eth-51t-64x800"}
    assert threading.active_count() >= 1


# ------------------------------------------------------------------ charts


def _titles(fig):
    lay = fig.to_plotly_json()["layout"]
    return {k: v.get("title", {}).get("text", "") for k, v in lay.items() if k.startswith(("xaxis", "yaxis"))}


def test_time_unit_and_texts():
    assert charts.time_unit([2.5, 3.0]) == (1.0, "s")
    assert charts.time_unit([0.004, 0.2]) == (1e3, "ms")
    assert charts.time_unit([2e-5]) == (1e6, "us")
    assert charts.time_text(0.000248) == "248 us"
    assert charts.money_text(2_874_720) == "$2.87M" and charts.money_text(456_000) == "$456k"
    assert "e" not in charts.num_text(3962.0) and charts.num_text(3962.0) == "3,962"


def test_pareto_figure_marks_everything(small_search):
    s = small_search
    fig = charts.pareto_figure(s.front, s.baselines, others=s.result.records, p99_target_s=5.0, budget_usd=2e6,
                               selected_key=s.front[0]["key"])
    names = [t.name for t in fig.data]
    assert "Pareto front" in names and "selected design" in names
    assert sum(n.startswith("baseline:") for n in names) == len(s.baselines)
    keys = {cd[0] for t in fig.data if t.customdata is not None for cd in t.customdata}
    assert {r["key"] for r in s.front} <= keys
    t = _titles(fig)
    assert t["xaxis"] == "network capex (USD)" and t["yaxis"].startswith("p99 step time (")
    texts = [a.text for a in fig.layout.annotations]
    assert any("p99 target" in x for x in texts) and any("budget $2.00M" in x for x in texts)
    assert fig.layout.font.size == charts.FONT_SIZE


def test_design_figures_have_units(mixtral):
    d = preset_design("fat-tree", 256)
    ev = evaluate(d, mixtral)
    f = charts.step_time_figure(ev.step_samples_s, ev.step_time_s, lower_bound_s=ev.lower_bound_s)
    assert _titles(f)["xaxis"] == "step time (s)"
    assert any(t.name and t.name.startswith("p99 ") for t in f.data)
    parts = charts.p99_parts(ev)
    assert parts["compute_s"] + sum(parts["ops"].values()) == pytest.approx(ev.step_time_s["p99"], rel=0.01)
    b = charts.breakdown_figure(ev.p99_breakdown)
    assert _titles(b)["xaxis"].startswith("exposed time (")
    flat = charts.step_time_figure(np.full(64, 0.25), {"p50": 0.25, "p95": 0.25, "p99": 0.25})
    assert flat.data[0].name == "samples (all equal)" and flat.layout.xaxis.range[0] < 250 < flat.layout.xaxis.range[1]
    assert len(b.data[0].y) == len(ev.p99_breakdown["ops"])
    assert len(charts.breakdown_figure(ev.p99_breakdown, include_compute=True).data[0].y) == \
        len(ev.p99_breakdown["ops"]) + 1
    sc = charts.scaling_figure([{"gpus": 256, "efficiency_p50": 1.0, "efficiency_p99": 1.0},
                                {"gpus": 512, "efficiency_p50": 0.9, "efficiency_p99": 0.8}])
    assert "linear" in _titles(sc)["yaxis"]
    sn = charts.scenario_figure([{"scenario": "fail-spine", "p99_s": 1.1, "delta_p99": 0.1}])
    assert sn.data[0].text[0] == "+10.0%"
    cdf = charts.cdf_overlay_figure({"a": ev.step_samples_s, "b": ev.step_samples_s * 1.1})
    assert _titles(cdf)["xaxis"] == "step time (s)" and len(cdf.data) == 4


def test_workload_figures(mixtral):
    s = summarize(mixtral)["jobs"]
    c = charts.collectives_figure(s)
    assert set(c.data[0].y) == set(s[0]["per_kind"])
    m = charts.message_size_figure(s)
    assert sum(m.data[0].y) == pytest.approx(s[0]["comm_calls_per_step"])
    ev = evaluate(preset_design("fat-tree", 256), mixtral)
    rows = compute_comm_rows(mixtral, ev)
    cc = charts.compute_comm_figure(rows)
    assert rows[0]["compute_s"] == pytest.approx(mixtral.jobs[0].compute_time_s)
    assert rows[0]["exposed_s"] <= rows[0]["comm_s"] + 1e-12
    assert len(cc.data) == 3


# ------------------------------------------------------------------ topology drawing


def test_topology_view_small_fabric_draws_every_switch_and_cable():
    f = build_fabric(preset_design("fat-tree", 256))
    v = topology_view(f)
    counts = f.switch_counts()
    assert sum(n["row"] == "leaf" for n in v.nodes) == counts["leaf"]
    assert sum(n["row"] == "spine" for n in v.nodes) == counts["spine"]
    assert sum(n["members"] for n in v.nodes if n["row"] == "nic") == f.n_nics
    assert sum(e["links"] for e in v.edges) == sum(f.link_counts().values())
    assert not v.aggregated


def test_topology_view_aggregates_large_fabrics_and_colours_hot_links():
    d = Design(name="big", family="clos", gpus=16384, switch_model="eth-51t-64x800", nic_model="nic-eth-400",
               transport="roce")
    f = build_fabric(d)
    hot = [{"links": "leaf uplinks", "example": "leaf0", "p99_sample_utilization": 0.6},
           {"links": "leaf downlinks", "example": "leaf3", "p99_sample_utilization": 0.3}]
    v = topology_view(f, hot, max_per_row=16)
    assert v.aggregated
    per_row = {}
    for n in v.nodes:
        per_row[(n["row"], n["plane"])] = per_row.get((n["row"], n["plane"]), 0) + 1
    assert max(per_row.values()) <= 16
    assert sum(n["members"] for n in v.nodes if n["row"] == "leaf") == f.switch_counts()["leaf"]
    ls = [e for e in v.edges if e["kind"] == "leaf-spine"]
    assert ls and all(e["utilization"] == 0.6 for e in ls)
    assert all(e["utilization"] is None for e in v.edges if e["kind"] == "nic-leaf")
    fig = topology_figure(v)
    assert len(fig.data) < 40
    assert any(t.name == "hot links, busiest 50-75 %" for t in fig.data)


@pytest.mark.parametrize("preset", ["dgx-h100-superpod", "meta-roce-zone", "alibaba-hpn", "rail-only"])
def test_topology_view_of_presets(preset):
    f = build_fabric(preset_design(preset, 512))
    v = topology_view(f)
    assert v.rows[0] == "nic" and "leaf" in v.rows
    assert sum(n["members"] for n in v.nodes if n["row"] == "nic") == f.n_nics
    ticks = topology_figure(v).layout.yaxis.ticktext
    assert any(t.startswith("leaves: ") for t in ticks) and any(t.startswith("NICs: ") for t in ticks)


def test_topology_view_dragonfly_draws_arcs():
    f = build_fabric(Design(name="df", family="dragonfly", gpus=1024, switch_model="ib-ndr-64x400"))
    v = topology_view(f)
    assert v.rows == ["nic", "router"]
    assert any(e["kind"] == "router-global" for e in v.edges)
    topology_figure(v)


# ------------------------------------------------------------------ compare and workload tables


def test_gene_frame_and_money_deltas():
    a = Design(name="a")
    b = Design(name="b", oversubscription=(2.0, 2.0))
    df = gene_frame({"a": a, "b": b})
    assert list(df.columns) == ["gene", "kind", "a", "b", "differs"] and len(df) == len(GENE_COLUMNS)
    # hardware first, then the free policy (routing, queue pairs, placement rule, PXN)
    assert list(df["kind"]) == ["hardware"] * (len(GENE_COLUMNS) - 4) + ["free policy"] * 4
    diff = gene_frame({"a": a, "b": b}, only_differences=True)
    assert set(diff["gene"]) == {"leaf oversubscription (down:up)", "spine oversubscription (down:up)"}
    rows = [{"name": "ref", "cost_usd": 100.0, "power_w": 10.0, "lower_bound_s": 0.5,
             "step_time_s": {"p50": 0.9, "p95": 1.0, "p99": 1.0}},
            {"name": "pricier", "cost_usd": 150.0, "power_w": 12.0, "lower_bound_s": 0.5,
             "step_time_s": {"p50": 0.8, "p95": 0.85, "p99": 0.9}},
            {"name": "better", "cost_usd": 90.0, "power_w": 9.0, "lower_bound_s": 0.5,
             "step_time_s": {"p50": 0.8, "p95": 0.85, "p99": 0.99}},
            {"name": "worse", "cost_usd": 120.0, "power_w": 9.0, "lower_bound_s": 0.5,
             "step_time_s": {"p50": 1.8, "p95": 1.85, "p99": 1.99}}]
    d = money_deltas(rows)
    assert d[0]["usd_per_ms_p99"] == pytest.approx(50.0 / 100.0)
    assert "$50 more" in d[0]["sentence"] and "per ms of p99" in d[0]["sentence"]
    assert "better on both" in d[1]["sentence"] and "(1.0%)" in d[1]["sentence"]
    assert "worse on both" in d[2]["sentence"]
    # the same design twice (two identical baselines): no "$-0 less", no false verdict
    same = money_deltas([rows[0], dict(rows[0], name="twin")])[0]["sentence"]
    assert same == "'twin' costs the same as 'ref' and has the same p99 step: the same on both."
    cheaper_same_p99 = money_deltas([rows[0], dict(rows[0], name="c", cost_usd=80.0)])[0]["sentence"]
    assert cheaper_same_p99 == "'c' costs $20 less than 'ref' and has the same p99 step: better."
    assert money_deltas(rows[:1]) == []
    m = metrics_frame(rows[:2])
    assert list(m.columns) == ["ref", "pricier"] and m.loc["p99 step time", "pricier"] == "900 ms"


def test_workload_tables(mixtral):
    s = summarize(mixtral)
    assert jobs_table(s)["ranks (GPUs)"].tolist() == [256]
    g = groups_table(s)
    assert set(g["role"]) >= {"tp", "dp", "ep"}
    assert len(ops_table(s)) == len(mixtral.jobs[0].ops)
    assert unparsed_table(s).empty
    assert plan_degrees(mixtral)["tp"] == 2 and plan_degrees(mixtral)["ep"] == 8
    assert gpus_needed(mixtral) == 256 and cluster_gpus(mixtral, 8) == 256
    res = ingest([("bad.json", b"{not json"), ("mixtral.json", (ROOT / "sample_traces" / "mixtral-8x7b.json")
                                                               .read_bytes())])
    ft = files_table(res.files)
    assert ft["parsed"].tolist() == ["no", "yes"] and "bad.json" in ft["jobs or error"][0]


def test_cluster_gpus_rounds_up_to_whole_servers():
    from fabric.workload.model import Job, ProcessGroup, Workload

    wl = Workload(jobs=(Job(name="a", world_size=13, groups=(ProcessGroup("w", 13, "world"),)),
                        Job(name="ckpt", kind="storage", world_size=4, burst_bytes=1, burst_period_s=1.0)))
    assert gpus_needed(wl) == 13 and cluster_gpus(wl, 8) == 16 and cluster_gpus(wl, 4) == 16


# ------------------------------------------------------------------ report


def test_report_embeds_plotly_once_and_works_offline(mixtral):
    ev = evaluate(preset_design("fat-tree", 256), mixtral)
    figs = [charts.step_time_figure(ev.step_samples_s, ev.step_time_s), charts.breakdown_figure(ev.p99_breakdown)]
    import pandas as pd

    html = report_html("design <report> & co", ["cost $1"], [
        Section("Steps", "histogram", figs[0]), Section("Breakdown", "ops", figs[1]),
        Section("Table", "a table", pd.DataFrame({"a": [1, 2], "b": ["x", "<y>"]})), Section("Notes", "", ["one"])])
    assert html.count("Plotly.newPlot") == 2
    assert len(re.findall(r"<script[^>]+src=", html)) == 0           # nothing fetched from a CDN
    assert html.count("/*! For license information please see plotly") <= 1 or html.count("plotly.js v") <= 2
    assert "design &lt;report&gt; &amp; co" in html and "&lt;y&gt;" in html
    assert len(html) > 1_000_000                                      # plotly.js is inside
    assert json.dumps("histogram")[1:-1] in html


def test_report_tables_write_money_percent_and_counts_readably():
    import pandas as pd

    from fabric.ui_support.report import cell_text

    df = pd.DataFrame({"item": ["switch"], "count": [32.0], "total (USD)": [1.344e6], "unit price (USD)": [42000.0],
                       "mean utilization": [0.8125], "small": [3.2e-5], "plain": [1234567.0]})
    html = report_html("r", [], [Section("BOM", "", df, {"count": "count", "total (USD)": "usd",
                                                           "unit price (USD)": "usd", "mean utilization": "percent"})])
    body = html[html.index("<table>"):]
    for text in ("$1,344,000", "$42,000", ">32<", "81.2 %", "0.000032", "1,234,567"):
        assert text in body, text
    assert not re.search(r"\de[+-]\d", body)                                 # no e-notation anywhere in a table
    assert cell_text(-1500.0, "usd") == "-$1,500" and cell_text(float("nan")) == "n/a"
    with pytest.raises(ValueError, match="unknown column format"):
        Section("x", "", df, {"count": "dollars"})


# ------------------------------------------------------------------ recommendation and front sentences


def _rec(name, cost, p99, *, feasible=True, buildable=True, violations=None, key=None):
    return {"design": name, "cost_usd": cost, "p99_s": p99, "feasible": feasible, "buildable": buildable,
            "violations": violations or {"buildable": 0.0}, "key": key or name, "power_w": 1.0}


def test_recommendation_states_the_rule_and_the_reference_it_used():
    from fabric.search.recommend import recommend

    front = [_rec("cheap", 100.0, 5.0), _rec("mid", 200.0, 4.0), _rec("fast", 400.0, 3.0)]
    ft11 = _rec("baseline: fat tree 1:1", 500.0, 4.2)
    ft21 = _rec("baseline: fat tree 2:1", 300.0, 4.5)
    r = recommend(front, [ft11, ft21])
    assert r.record["design"] == "mid" and "'fat tree 1:1' (4.2 s)" in r.rule and "2:1" not in r.rule
    # a budget makes the fat tree 1:1 infeasible: the rule names the baseline it used instead, and why
    over = dict(ft11, feasible=False, violations={"buildable": 0.0, "budget": 0.25})
    r = recommend(front, [over, ft21])
    assert r.record["design"] == "mid" and r.reference is ft21
    assert "'fat tree 2:1' (4.5 s)" in r.rule and "'fat tree 1:1' was not used: over the budget by 25.0%" in r.rule
    # a p99 target: the cheapest design meeting it
    r = recommend(front, [ft11, ft21], p99_target_s=4.5)
    assert r.record["design"] == "mid" and r.rule == "the cheapest front design meeting the p99 target of 4.5 s"
    # a target nobody meets falls back, and says so
    r = recommend(front, [ft11], p99_target_s=1.0)
    assert r.rule.startswith("no front design meets the p99 target of 1 s, so: the cheapest front design at least")
    # nothing as fast as the reference: the fastest design
    r = recommend(front, [_rec("baseline: fat tree 1:1", 500.0, 2.0)])
    assert r.record["design"] == "fast" and "no front design is as fast (p99) as the baseline" in r.rule
    assert recommend([], [ft11]).record is None


def test_front_sentences_are_true_when_the_baselines_do_not_meet_the_target():
    from fabric.search.result import SearchResult

    front = [_rec("only", 900.0, 3.0)]
    bases = [_rec("baseline: fat tree 1:1", 500.0, 4.2, feasible=False,
                  violations={"buildable": 0.0, "p99_target": 0.05}),
             _rec("baseline: rail", 300.0, 2.5, feasible=False, violations={"buildable": 0.0, "budget": 0.5})]
    res = SearchResult(records=front + bases, baselines=bases, front=front, hv_history=[], reference_point=[],
                       normalisation=[], evaluations=10, elapsed_s=1.0, generations=1, stopped_because="budget reached",
                       seed=0)
    lines = res.summary_lines()
    assert lines[0].startswith("1 design on the front")
    text = " ".join(lines)
    assert "is on the front" not in text                                  # neither baseline is on the front
    assert ("every front design at least as fast as 'baseline: fat tree 1:1' (4.2 s; it does not meet the "
            "constraints: p99 above the target by 5.0%) costs more; the cheapest, 'only', costs $400 more.") in lines
    assert ("no front design is as fast as 'baseline: rail' (2.5 s; it does not meet the constraints: over the "
            "budget by 50.0%).") in lines
    # a baseline that is on the front is said to be
    res2 = SearchResult(records=front, baselines=[_rec("b", 900.0, 3.0, key="only")], front=front, hv_history=[],
                        reference_point=[], normalisation=[], evaluations=1, elapsed_s=1.0, generations=1,
                        stopped_because="budget reached", seed=0)
    assert "'b' is on the front: no design is cheaper at its p99 (3 s)." in res2.summary_lines()


def test_what_if_colours_follow_the_sign_of_the_change():
    rows = [{"scenario": s, "delta_p99": d, "p99_s": 0.5 * (1 + d), "p50_s": 0.5}
            for s, d in (("slower", 0.003), ("faster", -0.02), ("same", 0.0))]
    fig = charts.scenario_figure(rows)
    assert list(fig.data[0].marker.color) == [charts.CHANGE_COLORS["slower"], charts.CHANGE_COLORS["faster"],
                                             charts.CHANGE_COLORS["same"]]
    assert "ms" in fig.data[0].hovertext[0] and " s " not in fig.data[0].hovertext[0]    # the unit of the values


def test_hypervolume_chart_reads_in_percent_of_the_final_value():
    hist = [{"generation": g, "evaluations": 40 * g, "hypervolume": v} for g, v in ((1, 17.5), (2, 30.0), (3, 35.0))]
    fig = charts.hypervolume_figure(hist)
    assert list(fig.data[0].y) == pytest.approx([50.0, 85.714285, 100.0])
    assert fig.layout.yaxis.title.text == "hypervolume (% of this run's final)"
    scaled = charts.hypervolume_figure([dict(h, hypervolume=h["hypervolume"] * 1e-3) for h in hist], finished=False)
    assert list(scaled.data[0].y) == pytest.approx(list(fig.data[0].y))      # any reference point reads alike
    assert scaled.layout.yaxis.title.text == "hypervolume (% of the best so far)"


def test_traffic_split_by_where_the_groups_run():
    from fabric.workload.accounting import job_account
    from fabric.workload.model import CommOp, Job, ProcessGroup

    # 16 ranks: TP groups of 8 (contiguous), DP groups of 2 (stride 8); 1 MiB TP all-reduce x 10, 4 MiB DP x 1
    job = Job(name="t", world_size=16, groups=(ProcessGroup("tp", 8, "tp"), ProcessGroup("dp", 2, "dp")),
              ops=(CommOp("all_reduce", 2 ** 20, "tp", count_per_step=10), CommOp("all_reduce", 4 * 2 ** 20, "dp")))

    def split(gpn):
        a = job_account(job, gpn)
        return {"nvlink_bytes": a.nvlink_bytes_per_step, "network_bytes": a.network_bytes_per_step}

    assert split(8) == {"nvlink_bytes": 10 * 2 ** 20, "network_bytes": 4 * 2 ** 20}
    assert split(4) == {"nvlink_bytes": 0.0, "network_bytes": 14 * 2 ** 20}   # TP 8 spans 4-GPU servers
    assert split(16) == {"nvlink_bytes": 14 * 2 ** 20, "network_bytes": 0.0}


def test_steps_observed_says_why_there_is_no_count(mixtral):
    from fabric.ui_support.workload_view import steps_observed_text

    assert jobs_table(summarize(mixtral))["steps observed"].tolist() == ["n/a: synthesized from a plan"]
    assert steps_observed_text({"steps_observed": 12, "notes": []}) == "12"
    assert steps_observed_text({"steps_observed": 0, "notes": ["from kineto"]}) == "none marked in the input"


def test_bom_exports_carry_every_item_and_the_totals():
    import io

    import pandas as pd

    from fabric.cost import bill_of_materials
    from fabric.ui_support.exports import bom_csv_text, design_bom_json_text

    design = preset_design("dgx-h100-superpod", 248)
    bom = bill_of_materials(build_fabric(design)).to_dict()
    df = pd.read_csv(io.StringIO(bom_csv_text(bom)))
    items = df[df["category"] != "total"]
    assert len(items) == len(bom["items"])
    assert (items["count"] * items["unit_price_usd"]).sum() == pytest.approx(bom["cost_usd"])
    total = df[df["category"] == "total"].iloc[0]
    assert total["price_usd"] == pytest.approx(bom["cost_usd"]) and total["power_w"] == pytest.approx(bom["power_w"])
    assert int(items[(items["category"] == "switch") & (items["where"] == "leaf")]["count"].iloc[0]) == 8
    doc = json.loads(design_bom_json_text(design, bom))
    # the `fabric build --json` document: the design file as design_spec beside the bill of materials
    assert doc["design_spec"]["gpus"] == 248 and doc["switches"] == {"leaf": 8, "spine": 4}


def test_a_baseline_drawn_with_fixed_tiers_keeps_them_through_genes_and_links():
    from fabric.search import Constraints, DesignSpace

    base = baseline_designs(DesignSpace(Constraints(gpus=64)))[0]
    assert base.tiers == 2                              # 64 GPUs fit one 64-port NDR switch: drawn as leaf-spine
    g = design_genes(base)
    assert g["design_tiers"] == 2
    back = design_from_record({**g, "design": "x"}, gpus=64)
    assert back.tiers == 2 and build_fabric(back).switch_counts() == build_fabric(base).switch_counts()
    text = urlstate.encode_genes(g)
    assert text.endswith(",t2") and urlstate.decode_genes(text)["design_tiers"] == 2
    assert "design_tiers" not in urlstate.decode_genes(text[: -len(",t2")])
