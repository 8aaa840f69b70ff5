"""AppTest: a serving workload on the Design page shows request latency, SLO attainment, the latency-versus-load
curve and where the p99 request goes, instead of a step time."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def _charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def test_design_page_of_a_serving_workload_shows_request_latency():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["evals"] = "40"
    at.query_params["wl"] = "sample:deepseek-v3-ep-decode.json"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/design.py").run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    # the headline is the request latency, not a step time
    assert "p99 time to first token" in metrics and "p99 time per output token" in metrics
    assert "SLO attainment" in metrics and metrics["SLO attainment"].endswith("%")
    assert not any(label.startswith("p99 step") for label in metrics)
    assert any(s.value == "Serving latency: deepseek-v3-ep-decode" for s in at.subheader)
    figs = _charts(at)
    load = next(f for f in figs
                if f["layout"].get("xaxis", {}).get("title", {}).get("text") == "load (% of what this design sustains)")
    names = {t["name"] for t in load["data"]}
    assert {"p99 TTFT", "p99 TPOT", "p50 TTFT", "p50 TPOT"} <= names
    split = next(f for f in figs if f["layout"].get("barmode") == "stack" and
                 any(t.get("name") == "queueing" for t in f["data"]))
    assert {t["name"] for t in split["data"]} == {"queueing", "compute", "NVLink", "network"}
    caps = "\n".join(str(c.value) for c in at.caption)
    assert "Latency versus load" in caps and "Where the p99 request's time goes" in caps


def test_a_serving_plan_from_the_workload_page_reaches_the_design_page():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["evals"] = "40"
    at.run()
    at.radio(key="wl_source").set_value("plan").run()
    at.selectbox(key="plan_preset").set_value("llama3-70b-disagg").run()
    assert at.number_input(key="plan_pp").proto.disabled and not at.number_input(key="plan_tp").proto.disabled
    at.number_input(key="plan_gpus").set_value(64)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Built the llama3-70b-disagg workload" in "\n".join(str(s.value) for s in at.success)
    at.switch_page("pages/design.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Serving latency: llama3-70b-disagg" for s in at.subheader)
    assert "p99 time per output token" in {m.label for m in at.metric}


def test_constraints_page_sets_serving_limits_for_a_serving_workload_and_the_link_keeps_them():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["evals"] = "40"
    at.run()
    at.switch_page("pages/constraints.py").run()
    assert not any(s.value == "Serving limits" for s in at.subheader)      # a training sample: no serving limits
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["evals"] = "40"
    at.query_params["wl"] = "sample:deepseek-v3-ep-decode.json"
    at.run()
    at.switch_page("pages/constraints.py").run()
    assert any(s.value == "Serving limits" for s in at.subheader)
    at.number_input(key="con_tpot_ms").set_value(80.0)
    at.number_input(key="con_slo_pct").set_value(99.0)
    at.selectbox(key="con_inf_obj").set_value("tpot_p99").run()
    assert not at.exception, [e.value for e in at.exception]
    c = at.session_state["constraints"]
    assert c.inference_tpot_p99_s == 0.08 and c.inference_slo_attainment == 0.99
    assert c.inference_objective == "tpot_p99" and c.inference_ttft_p99_s is None
    assert at.query_params["inference_tpot_p99_s"] == "0.08" and at.query_params["inference_objective"] == "tpot_p99"
    # the serving class is a gene unless the fabric has no traffic class free for it
    assert at.toggle(key="con_serving_class").value and c.serving_classes == (False, True)
    at.toggle(key="con_serving_class").set_value(False).run()
    assert at.session_state["constraints"].serving_classes == (False,)
    assert at.query_params["serving_classes"] == "0"
    # a link with them opens with them
    link = AppTest.from_file(APP, default_timeout=90)
    for k, v in {"evals": "40", "wl": "sample:deepseek-v3-ep-decode.json", "inference_tpot_p99_s": "0.08",
                 "inference_slo_attainment": "0.99", "serving_classes": "0"}.items():
        link.query_params[k] = v
    link.run()
    assert link.session_state["constraints"].inference_tpot_p99_s == 0.08
    assert link.session_state["constraints"].inference_slo_attainment == 0.99
    assert link.session_state["constraints"].serving_classes == (False,)


def _finish(at) -> None:
    assert at.session_state["search_job"].wait(120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_search_page_of_a_serving_only_workload_names_its_axes_and_shows_serving_figures():
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"evals": "40", "wl": "sample:deepseek-v3-ep-decode.json", "inference_objective": "tpot_p99"}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("pages/search.py").run()
    _finish(at)
    # the front was chosen on three objectives: drawn first on the serving one, the others a click away
    radio = at.radio(key="front_y")
    assert radio.value == "serving_tpot_p99_s"
    assert set(radio.options) == {"p99 unloaded request", "serving p99 time to first token",
                                  "serving p99 time per output token", "serving SLO attainment"}
    front = next(f for f in _charts(at) if "xaxis" in f["layout"]
                 and f["layout"]["xaxis"].get("title", {}).get("text") == "network capex (USD)")
    ytitle = front["layout"]["yaxis"]["title"]["text"]
    assert ytitle.startswith("serving p99 time per output token (") and "step" not in ytitle
    caps = "\n".join(str(c.value) for c in at.caption)
    assert ("chosen on 3 objectives: network capex, p99 unloaded request, serving p99 time per output token"
            in caps)
    assert "may look dominated here" in caps
    assert "step time" not in "\n".join(str(s.value) for s in at.subheader)
    # the front table carries the serving figures, in ms and %, and calls p99_s what it is
    table = next(d for d in at.dataframe if "serving_tpot_p99_s" in d.value.columns).value
    res = at.session_state["search_job"].snapshot().result
    import math

    for r in res.front:
        row = table[table["design"] == r["design"]].iloc[0]
        if r["serving_tpot_p99_s"] >= 1e8:       # load above what this design sustains: no finite latency shown
            assert math.isnan(row["serving_tpot_p99_s"]) and row["serving_slo_attainment"] == 0
        else:
            assert abs(row["serving_tpot_p99_s"] - r["serving_tpot_p99_s"] * 1e3) < 1e-9
            assert abs(row["serving_slo_attainment"] - r["serving_slo_attainment"] * 100) < 1e-9
    assert any(r["serving_tpot_p99_s"] < 1e8 for r in res.front)
    # drawn on the unloaded request instead: the axis says so, never "step time"
    at.radio(key="front_y").set_value("p99_s").run()
    assert not at.exception, [e.value for e in at.exception]
    front = next(f for f in _charts(at) if f["layout"].get("xaxis", {}).get("title", {}).get("text")
                 == "network capex (USD)")
    assert front["layout"]["yaxis"]["title"]["text"].startswith("p99 unloaded request (")
    assert "one request's critical path without queueing" in "\n".join(str(c.value) for c in at.caption)
