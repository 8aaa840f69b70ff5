"""Issue 24, items 3, 5, 9, 13 and 14 (the Search chart's budget line): the brief compares like with like and is
complete and small; ties in free policy are broken by a stated rule whatever the order of evaluation; a p99 target
keeps the trade-off visible.

Each check reproduces what the first real-browser review found (see the issue) and fails on the code before the
fix: the brief compared a robust p99 with a single-workload p99 (-22.6 % where Compare said -5.3 %), the front kept
whichever tied design it met first, a target left one design and "the front holds no other design", the HTML brief
was 4.8 MB (plotly.js) with no chart, and a far budget stretched the chart's axis.
"""

from __future__ import annotations

import json
import random

import pytest

from fabric.review.brief import brief_sections, review_brief
from fabric.design import Design
from fabric.evaluate import DEFAULT_SAMPLES, evaluate
from fabric.search import Constraints, run_search
from fabric.search.recommend import recommend
from fabric.search.robust import RobustObjective
from fabric.search.designs import design_from_record
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload
from fabric.review import prepare_context
from fabric.workload.presets import preset_workload

GIB = 2.0 ** 30


# ------------------------------------------------------------------ item 3: like for like in robust mode


@pytest.fixture(scope="module")
def robust_search():
    a, b = preset_workload("llama3-70b", 256), preset_workload("mixtral-8x7b", 256)
    c = Constraints(gpus=256)
    res = run_search(RobustObjective((("llama", a, 1.0), ("mixtral", b, 1.0)), mode="worst"), c,
                     budget_evals=120, seed=0, samples=64)
    return a, c, res


def test_the_brief_of_a_robust_search_compares_robust_with_robust_in_one_context(robust_search):
    """Issue 34: the brief of a robust search reads every figure in the search's context: the design's robust p99
    and each baseline's are the search's records; each case's step figures are listed per case (no robust p50)."""
    from fabric.review import prepare_context

    a, c, res = robust_search
    obj = RobustObjective((("llama", a, 1.0), ("mixtral", preset_workload("mixtral-8x7b", 256), 1.0)), mode="worst")
    ctx = prepare_context(obj, c, samples=64)
    b = review_brief(res.front, res.baselines, ctx)
    rec = recommend(res.front, res.baselines).record
    assert b["robust"] and b["p99_s"] == rec["p99_s"] and b["figures"]["robust_p99_s"] == rec["p99_s"]
    assert b["figures"]["p50_s"] is None                 # no invented robust p50
    cases = {r["case"]: r for r in b["cases"]}
    assert set(cases) == set(rec["p99_by_case"])
    for name, p99 in rec["p99_by_case"].items():
        assert cases[name]["p99_s"] == pytest.approx(p99, rel=1e-12)
        assert cases[name]["p50_s"] == pytest.approx(rec["p50_by_case"][name], rel=1e-12)
    text = "\n".join(line for _, lines in brief_sections(b) for line in lines)
    for row, base in zip(b["baselines"], [x for x in res.baselines if x.get("buildable", True)]):
        assert row["p99_s"] == base["p99_s"]
        assert row["p99_change"] == pytest.approx(rec["p99_s"] / base["p99_s"] - 1, rel=1e-12)
        assert f"robust p99 {row['p99_change']:+.1%}" in text or "the same (within 0.5 %)" in text
    if b.get("runner_up"):
        assert "robust p99" in dict(brief_sections(b))["The runner-up"][0]


# ------------------------------------------------------------------ item 5: ties


def _rec(key, routing="ecmp", qps=1, placement="packed", cost=100.0, p99=1.0, **kw):
    return {"key": key, "design": key, "feasible": True, "buildable": True, "cost_usd": cost, "p99_s": p99, "p50_s": p99,
            "power_w": 1.0, "routing": routing, "qps_per_connection": qps, "placement": placement, "pxn": False,
            **kw}


def test_the_front_keeps_the_plainest_of_tied_designs_whatever_the_order_of_evaluation():
    from fabric.search.run import _feasible_front

    tied = [_rec("spray", routing="spray"), _rec("adaptive-ra", routing="adaptive", placement="rail_aligned"),
            _rec("ecmp4-ra", qps=4, placement="rail_aligned"), _rec("ecmp1-packed"), _rec("adaptive", "adaptive")]
    other = [_rec("cheap-slow", cost=50.0, p99=2.0), _rec("dear", cost=200.0, p99=1.5)]
    kept = set()
    for seed in range(8):                     # the orders in which searches happen to evaluate them
        rows = tied + other
        random.Random(seed).shuffle(rows)
        front = _feasible_front(rows, 2)
        kept.add(tuple(sorted(r["key"] for r in front)))
    assert kept == {("cheap-slow", "ecmp1-packed")}


def test_the_front_names_the_ties_and_the_best_free_policy_states_its_rule():
    from fabric.design.policy import TIE_RULE, best_free_policy
    from fabric.search.ties import front_ties, ties_text

    tied = [_rec("ecmp1-packed"), _rec("spray", routing="spray"), _rec("adaptive", routing="adaptive")]
    ties = front_ties([tied[0]], tied, ("cost_usd", "p99_s"))
    assert [r["key"] for r in ties["ecmp1-packed"]] == ["adaptive", "spray"]          # plainest first
    assert ties_text(tied[0], ties["ecmp1-packed"]).startswith("ties with 2 other designs at the same cost and p99")
    assert TIE_RULE.startswith("the plainest configuration: ECMP before adaptive before spraying")

    # a workload the network does not touch (one job inside one 8-GPU server): every free policy gives the same
    # p99, so the best free policy is the design's own and every other is listed as a tie
    g = ProcessGroup("tp", 8, "tp")
    wl = Workload(jobs=(Job(name="local", world_size=8, groups=(g,), ops=(CommOp("all_reduce", GIB, "tp"),),
                            compute_time_s=0.1),))
    d = Design(name="x", gpus=64, gpus_per_node=8, routing="spray", placement="rail_aligned", tiers=2)
    ev = lambda x: evaluate(x, wl, samples=32)                                    # noqa: E731
    best = best_free_policy(d, ev)
    assert best["delta_p99_s"] == 0 and best["changes"] == [] and len(best["ties"]) == best["tried"] - 1
    # starting from a design that is not among the tied ones' plainest, the plainest is named first
    assert best["ties"][0].startswith("ecmp/1qp packed")


def test_a_tied_design_is_not_drawn_under_the_front_dot_it_would_steal_the_click_from():
    from fabric.ui_support.charts import pareto_figure

    front = [_rec("ecmp1-packed", family="clos")]
    others = [_rec("spray", routing="spray", family="clos"), _rec("elsewhere", cost=300.0, p99=0.9, family="clos")]
    fig = pareto_figure(front, [], others=others)
    grey = next(t for t in fig.data if t.name == "other feasible designs")
    assert [c[0] for c in grey.customdata] == ["elsewhere"]


def test_identical_searches_recommend_the_same_design_when_policies_tie():
    # the online-serving sample stays inside NVLink on rail-only designs: dozens of designs tie (the review saw the
    # recommended routing/placement change between identical runs)
    from fabric.workload.model import load_workload_json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    wl = load_workload_json((root / "sample_traces" / "llama3-70b-online.json").read_text())
    c = Constraints(gpus=256)
    recs = []
    for _ in range(2):
        res = run_search(wl, c, budget_evals=80, seed=3, samples=32)
        rec = recommend(res.front, res.baselines).record
        recs.append((rec["design"], rec["routing"], rec["placement"], rec["qps_per_connection"]))
        ties = res.ties().get(rec["key"], [])
        from fabric.design.policy import plainness

        assert all(plainness(rec) <= plainness(t) for t in ties)
    assert recs[0] == recs[1]


# ------------------------------------------------------------------ item 9: a p99 target keeps the trade-off


@pytest.fixture(scope="module")
def target_search():
    wl = preset_workload("mixtral-8x7b", 256)
    free = run_search(wl, Constraints(gpus=256), budget_evals=150, seed=0, samples=64)
    fastest = min(r["p99_s"] for r in free.front)
    c = Constraints(gpus=256, p99_target_s=fastest * 1.001)        # only the fastest designs meet it
    return wl, c, run_search(wl, c, budget_evals=150, seed=0, samples=64)


def test_a_p99_target_keeps_the_designs_that_miss_only_the_target(target_search):
    wl, c, res = target_search
    beyond = res.beyond_target()
    assert beyond, "the trade-off below the target must stay visible"
    for r in beyond:
        v = r["violations"]
        assert v["p99_target"] > 0 and all(x <= 0 for k, x in v.items() if k != "p99_target")
        assert r["p99_s"] > c.p99_target_s
    # non-dominated among themselves
    for r in beyond:
        assert not any(o["cost_usd"] <= r["cost_usd"] and o["p99_s"] <= r["p99_s"] and o is not r
                       and (o["cost_usd"], o["p99_s"]) != (r["cost_usd"], r["p99_s"]) for o in beyond)
    from fabric.ui_support.charts import pareto_figure

    fig = pareto_figure(res.front, res.baselines, p99_target_s=c.p99_target_s, beyond=beyond)
    trace = next(t for t in fig.data if t.name == "meets every limit but the p99 target")
    assert len(trace.x) == len(beyond)
    assert any(getattr(s, "y0", None) == pytest.approx(c.p99_target_s) for s in fig.layout.shapes)


def test_the_brief_gives_a_runner_up_beyond_the_target_when_the_front_holds_one_design(target_search):
    wl, c, res = target_search
    b = review_brief(res.front[:1], res.baselines, prepare_context(wl, c, samples=64),
                     beyond_target=res.beyond_target())
    ru = b["runner_up"]
    text = dict(brief_sections(b))["The runner-up"][0]
    if len(res.front) == 1:
        assert ru["relation"] == "misses the target" and ru["p99_s"] > c.p99_target_s
        assert ru["cost_usd"] < b["cost_usd"] and "over the target" in text
    assert "The front holds no other design" not in text


# ------------------------------------------------------------------ item 13: a complete, small brief


def test_the_brief_is_complete_and_its_html_small_with_charts():
    from fabric.ui_support.brief_view import brief_html

    wl = preset_workload("mixtral-8x7b", 256)
    c = Constraints(gpus=256, budget_usd=8e6, p99_target_s=10.0)
    res = run_search(wl, c, budget_evals=80, seed=0, samples=64)
    b = review_brief(res.front, res.baselines, prepare_context(wl, c, samples=64, label="mixtral-8x7b"))
    sections = brief_sections(b)
    heads = [h for h, _ in sections]
    assert {"Against the baselines", "Constraints", "Bill of materials"} <= set(heads)
    text = "\n".join(line for _, lines in sections for line in lines)
    assert "h100-sxm" in text and "256" in text                                  # the GPU model and the cluster
    assert "network budget $8,000,000" in text and "p99 target 10 s" in text
    assert "Survive any single failure: on" in text
    assert "baseline: fat tree 1:1" in "\n".join(dict(sections)["Against the baselines"])     # not robust mode
    assert "Switches:" in text and "transceivers" in text and "facility power" in text
    html = brief_html(b, sections, facts=["Workload: mixtral-8x7b"])
    size = len(html.encode())
    assert size < 1_000_000, size
    assert html.count("<svg") == 3 and "<script" not in html                    # front, steps, what-ifs
    assert "Charts are interactive" not in html and "Charts are static pictures" in html
    # the charts carry the figures: the p99 marked on the histogram is the brief's p99
    from fabric.units import time_text

    assert f"p99 {time_text(b['cases'][0]['p99_s'])}" in html


def test_a_serving_brief_says_the_serving_latency():
    from fabric.search.run import exhaustive_search

    wl = preset_workload("llama3-70b-online", 64)
    space = dict(gpus=64, families=("clos",), switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",),
                 nics_per_gpu=(1.0,), oversubscriptions=(1.0,), routings=("ecmp",), qps=(1,), planes=(1,),
                 placements=("packed",), uplink_speed_factors=(1.0,), transports=("infiniband",))
    res = exhaustive_search(wl, Constraints(**space), samples=32)
    b = review_brief(res.front, res.baselines, prepare_context(wl, Constraints(**space), samples=32))
    assert "Serving latency" in dict(brief_sections(b))


# ------------------------------------------------------------------ item 14: the budget line


def test_a_far_budget_does_not_stretch_the_front_chart():
    from fabric.ui_support.charts import pareto_figure

    front = [_rec("a", cost=1e6, p99=2.0, family="clos"), _rec("b", cost=3e6, p99=1.0, family="clos")]
    fig = pareto_figure(front, [], budget_usd=50e6)
    assert fig.layout.xaxis.range[1] < 5e6                       # the designs fill the chart
    assert any("budget $50.00M" in (a.text or "") for a in fig.layout.annotations)
    near = pareto_figure(front, [], budget_usd=4e6)
    assert near.layout.xaxis.range[1] >= 4e6                     # a budget near the designs is drawn as a line


def test_default_samples_are_the_same_for_every_review_evaluation():
    import inspect

    from fabric.review.advisor import advise
    from fabric.failures.resilience import resilience

    # one sample count for the pages, the advisor, failures and the brief (the review saw 128 beside 256)
    for fn in (advise, resilience):       # (the brief has no samples of its own: its context's, issue 34)
        assert inspect.signature(fn).parameters["samples"].default is None
    wl = preset_workload("mixtral-8x7b", 64)
    d = Design(name="x", gpus=64, tiers=2)
    p99 = evaluate(d, wl).step_time_s["p99"]
    assert advise(d, wl)["p99_s"] == p99 and resilience(d, wl)["healthy_p99_s"] == p99
    assert evaluate(d, wl).samples == DEFAULT_SAMPLES
    assert json.dumps(p99)                                        # a plain float


def test_svg_charts_draw_degenerate_data_in_bounded_time_and_size():
    from fabric.ui_support.svg_charts import Series, histogram_svg, nice_ticks, scatter_svg

    # every sample the same to the last bit but one (a compute-bound step): one bar, a handful of ticks
    svg = histogram_svg([8.839556743022221, 8.839556743022223] * 100, marks=[(8.839556743022222, "p99")])
    assert svg.count("<rect") < 10 and len(svg) < 10_000
    assert len(nice_ticks(1e15, 1e15 + 0.1)) <= 22 and nice_ticks(0, 7.3e6) == [0, 2e6, 4e6, 6e6]
    assert nice_ticks(1.19, 1.22) == [1.19, 1.2, 1.21, 1.22]
    one = scatter_svg([Series("a", [(1.0, 2.0)])], x_title="x", y_title="y")
    assert one.startswith("<svg") and one.endswith("</svg>")


def test_the_brief_page_in_robust_mode_labels_each_comparison():
    """The Brief page of a robust search (Mixtral plan + Llama-3-70B plan, worst case): every figure is robust and
    says so (issue 34: one context, no single-workload figure beside a robust one), and each case's step figures
    are listed apart."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    at.query_params.update({"wl": "plan:mixtral-8x7b:256", "gpus": "256", "evals": "60", "robust": "worst",
                            "mix": "plan:llama3-70b:256"})
    at.run()
    at.switch_page("pages/search.py").run()
    assert at.session_state["search_job"].wait(300)
    at.run()
    at.switch_page("pages/brief.py").run()
    assert not at.exception, [e.value for e in at.exception]
    md = "\n".join(str(m.value) for m in at.markdown).replace("\\", "")
    lines = [x for x in md.splitlines() if x.startswith("- Against '")]
    assert lines
    for line in lines:
        assert "robust p99" in line and "as drawn" in line
        assert "p99 on plan" not in line
    assert "robust p99 step" in md and "worst case of the cases' slowdowns" in md
    subs = [str(s.value) for s in at.subheader]
    assert "Each case of the mix" in subs
