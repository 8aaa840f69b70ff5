"""The search, compare, report and brief views of a workload with serving jobs: the serving figures (p99 TTFT, p99
TPOT, SLO attainment) with their own labels, and a serving-only workload's "step" called what it is (one unloaded
request), never a step time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fabric.search.constraints import Constraints
from fabric.workload.presets import preset_workload

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
SPACE = dict(gpus=64, families=("clos",), switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",),
             nics_per_gpu=(1.0,), routings=("ecmp",), transports=("infiniband",), placements=("packed",),
             oversubscriptions=(1, 2), uplink_speed_factors=(1,), qps=(1,), planes=(1,))


@pytest.fixture(scope="module")
def disagg_front():
    from fabric.search.run import exhaustive_search

    wl = preset_workload("llama3-70b-disagg", gpus=64)
    res = exhaustive_search(wl, Constraints(**SPACE), samples=32)
    assert res.front
    return wl, res


def test_brief_of_a_serving_only_workload_gives_request_latency_and_no_step(disagg_front):
    from fabric.review.brief import brief_sections, review_brief
    from fabric.evaluate import evaluate

    wl, res = disagg_front
    from fabric.review import prepare_context

    b = review_brief(res.front, res.baselines, prepare_context(wl, Constraints(**SPACE), samples=32))
    sections = dict(brief_sections(b))
    assert "Serving latency" in sections and "Cost per unloaded request" in sections
    text = "\n".join(line for lines in sections.values() for line in lines)
    assert "p99 step" not in text and "per step" not in text and "p99 unloaded request" in text
    # the figures are the evaluator's for the design bought, at the offered load
    rec = next(r for r in res.front if r["design"] == b["design"])
    from fabric.search.designs import design_from_record

    ev = evaluate(design_from_record(rec, gpus=64, gpus_per_node=8, gpu_model=Constraints().gpu_model), wl,
                  samples=32, seed=0)
    m = ev.serving["llama3-70b-disagg"]
    line = sections["Serving latency"][0]
    from fabric.units import time_text      # the one formatter of durations

    assert f"p99 TTFT {time_text(m['ttft_s']['p99'])}" in line
    assert f"p99 TPOT {time_text(m['tpot_s']['p99'])}" in line and "SLO attainment" in line
    # each what-if says what it does to the service too
    ran = [w for w in sections["What if"] if "p99 unloaded request" in w]
    assert ran and all("'llama3-70b-disagg' p99 TTFT" in w or "'llama3-70b-disagg' load" in w for w in ran)


def test_html_report_sections_of_a_serving_job():
    from fabric.design import Design
    from fabric.evaluate import evaluate
    from fabric.ui_support.report import report_html
    from fabric.ui_support.serving_front import serving_report_sections

    wl = preset_workload("llama3-70b-disagg", gpus=64)
    d = Design(name="ft", family="clos", gpus=64, nic_model="nic-cx7-400", switch_model="ib-ndr-64x400")
    ev = evaluate(d, wl, samples=32, seed=0, serving_curve=True)
    secs = serving_report_sections(ev.serving)
    assert [s.heading for s in secs] == ["Serving latency: llama3-70b-disagg",
                                         "Latency versus load: llama3-70b-disagg",
                                         "Where the p99 request goes: llama3-70b-disagg"]
    m = ev.serving["llama3-70b-disagg"]
    assert f"p99 time to first token {m['ttft_s']['p99'] * 1e3:,.1f} ms" in secs[0].content[0]
    html = report_html("r", [], secs)
    assert html.count("<h2>") == 3 and html.count('id="fig') == 2     # two charts, embedded


def test_pareto_chart_draws_the_column_asked_and_names_it():
    from fabric.ui_support.charts import pareto_figure

    front = [{"key": "a", "design": "a", "family": "clos", "cost_usd": 1e6, "p99_s": 0.02, "p50_s": 0.019,
              "power_w": 1e4, "serving_ttft_p99_s": 0.150, "serving_tpot_p99_s": 0.040,
              "serving_slo_attainment": 0.97},
             {"key": "b", "design": "b", "family": "clos", "cost_usd": 2e6, "p99_s": 0.03, "p50_s": 0.029,
              "power_w": 2e4, "serving_ttft_p99_s": 1e9, "serving_tpot_p99_s": 1e9, "serving_slo_attainment": 0.0}]
    fig = pareto_figure(front, y_col="serving_tpot_p99_s", y_title="serving p99 time per output token",
                        p99_target_s=0.025)
    assert fig.layout.yaxis.title.text == "serving p99 time per output token (ms)"
    ys = [y for t in fig.data if t.mode == "markers" for y in t.y]
    assert ys == [40.0]                 # ms; the service above capacity (1e9 s) is not drawn
    assert not fig.layout.shapes        # the p99 step target belongs to the step axis only
    fig = pareto_figure(front, y_col="serving_slo_attainment", y_title="serving SLO attainment")
    assert fig.layout.yaxis.title.text == "serving SLO attainment (%)"
    assert sorted(y for t in fig.data if t.mode == "markers" for y in t.y) == [0.0, 97.0]


def test_compare_page_of_a_serving_only_workload_shows_serving_rows_and_no_step():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["evals"] = "40"
    at.query_params["wl"] = "sample:deepseek-v3-ep-decode.json"
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    rows = list(table.index)
    job = "deepseek-v3-ep-decode"
    assert {f"{job}: p99 TTFT (ms)", f"{job}: p99 TPOT (ms)", f"{job}: SLO attainment (%)",
            "p99 unloaded request"} <= set(rows)
    assert not any("step" in r for r in rows)
    cdf = next(json.loads(e.proto.spec) for e in at.get("plotly_chart")
               if "CDF" in json.dumps(json.loads(e.proto.spec)["layout"].get("yaxis", {})))
    assert cdf["layout"]["xaxis"]["title"]["text"].startswith("unloaded request time (")
    assert any(s.value == "Unloaded request CDFs" for s in at.subheader)
    text = "\n".join(str(m.value) for m in at.markdown)
    assert "p99 step" not in text


def test_the_caption_names_every_objective_that_chose_the_front():
    from fabric.ui_support.serving_front import front_caption

    two = front_caption(Constraints(), "p99_s", serving_only=False)
    assert "chosen on 2 objectives: network capex, p99 step time." in two and "dominated" not in two
    c = Constraints(optimize_power=True, cost_objective="cost_per_step", inference_objective="slo_attainment")
    four = front_caption(c, "serving_slo_attainment", serving_only=False)
    assert ("chosen on 4 objectives: cost per step, p99 step time, network power, serving SLO attainment "
            "(maximized)") in four
    assert "upper-left is better" in four and "may look dominated here" in four


def test_a_front_design_with_the_serving_class_keeps_it_through_its_genes_and_link():
    from fabric.design import Design
    from fabric.search.designs import design_from_record, design_genes, short_label
    from fabric.ui_support.urlstate import decode_genes, encode_genes

    d = Design(name="x", family="clos", gpus=64, nic_model="nic-cx7-400", switch_model="ib-ndr-64x400",
               serving_class=True)
    g = design_genes(d)
    assert g["serving_class"] is True and short_label(g).endswith("+serving class")
    text = encode_genes(g)
    assert text.endswith(",s1") and decode_genes(text) == g
    assert design_from_record(g, gpus=64).serving_class
    # a design without it keeps the link of before (no extra token)
    plain = design_genes(d.replace(serving_class=False))
    assert "serving_class" not in plain and not encode_genes(plain).endswith("s1")
    assert not design_from_record(decode_genes(encode_genes(plain)), gpus=64).serving_class
