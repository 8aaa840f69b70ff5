"""The dashboard's robust search across a job mix, without a browser: a saved robust search reads back, links
carry the mix, the helpers read a robust front the way the definitions say (hand-made records), the figures."""

from __future__ import annotations

import pytest

from fabric.errors import FabricError
from fabric.evaluate import SCENARIO_PRESETS
from fabric.search import Constraints
from fabric.search.records import workload_key
from fabric.search.robust import RobustObjective, robust_key
from fabric.ui_support import robust_view, urlstate
from fabric.ui_support.charts import pareto_figure
from fabric.ui_support.saved_searches import load_inputs, new_search_id, save_inputs
from fabric.workload.presets import preset_workload

SAMPLES = ("mixtral-8x7b.json", "dlrm-dcnv2.json", "llama3-70b.json")
PRESETS = ("llama3-70b", "mixtral-8x7b")


@pytest.fixture(scope="module")
def mix():
    return preset_workload("llama3-70b", 128), preset_workload("dlrm-dcnv2", 128)


# ------------------------------------------------------------------ saved searches


@pytest.mark.parametrize("references", [None, {"llama|baseline": 25.5, "llama|fail-spine": 26.0,
                                               "dlrm|baseline": 0.001, "dlrm|fail-spine": 0.0011}])
def test_a_saved_robust_search_reads_back_as_the_same_objective(tmp_path, mix, references):
    a, b = mix
    obj = RobustObjective((("llama", a, 2.0), ("dlrm", b, 0.5)),
                          (SCENARIO_PRESETS["baseline"], SCENARIO_PRESETS["fail-spine"]), mode="mean",
                          references=references)
    sid = new_search_id()
    save_inputs(tmp_path, sid, workload=obj, constraints=Constraints(gpus=128), budget_evals=60, seed=3, samples=64,
                pop_size=20, inputs_key="k", label=robust_view.mix_summary(obj))
    back = load_inputs(tmp_path, sid).workload
    assert isinstance(back, RobustObjective)
    assert robust_key(back) == robust_key(obj)              # the search's cache key: a resume reuses its records
    assert back.mode == "mean" and [(n, w) for n, _, w in back.workloads] == [("llama", 2.0), ("dlrm", 0.5)]
    assert [workload_key(w) for _, w, _ in back.workloads] == [workload_key(a), workload_key(b)]
    assert back.scenarios == obj.scenarios and back.references == references
    assert [c[0] for c in back.cases] == ["llama|baseline", "llama|fail-spine", "dlrm|baseline", "dlrm|fail-spine"]


def test_a_resumed_robust_search_continues_on_the_same_objective(tmp_path, mix):
    from fabric.ui_support.jobs import SearchJob

    a, b = mix
    obj = robust_view.build_objective([("llama", a, 1.0), ("dlrm", b, 1.0)], ["baseline"], "worst")
    job = SearchJob(obj, Constraints(gpus=128), budget_evals=30, samples=32, pop_size=10, workers=0,
                    state_dir=tmp_path).start()
    assert job.wait(120) and job.snapshot().state == "done", job.snapshot().error
    again = SearchJob.resume(job.search_id, tmp_path, workers=0)
    assert robust_key(again.workload) == robust_key(obj)
    again.budget_evals = 50
    assert again.start().wait(120)
    snap = again.snapshot()
    assert snap.state == "done" and snap.resumed_from >= 1 and snap.evaluations >= 50
    assert all(set(r["p99_by_case"]) == {"llama|baseline", "dlrm|baseline"} for r in snap.front)


@pytest.mark.parametrize("robust", [{"mode": "worst"}, {"workloads": "x"}, {"workloads": [1, 2]},
                                    {"workloads": [{"name": "a", "weight": 1.0}]},
                                    {"workloads": [], "references": [1, 2]}, "robust"])
def test_a_damaged_saved_robust_search_is_a_clear_message(tmp_path, mix, robust):
    import json

    a, b = mix
    obj = robust_view.build_objective([("a", a, 1.0), ("b", b, 1.0)], ["baseline"], "worst")
    sid = new_search_id()
    path = save_inputs(tmp_path, sid, workload=obj, constraints=Constraints(gpus=128), budget_evals=60, seed=0,
                       samples=64, pop_size=20)
    meta = json.loads(path.read_text())
    meta["workload"] = {"robust": robust}
    path.write_text(json.dumps(meta))
    with pytest.raises(FabricError, match=f"saved search {sid} cannot be read back"):
        load_inputs(tmp_path, sid)


# ------------------------------------------------------------------ links


def test_a_link_carries_the_mix_and_reads_back():
    robust = {"mode": "mean", "weight": 2.0, "scenarios": ["baseline", "job-mix-shift"],
              "mix": [{"choice": {"kind": "sample", "name": "dlrm-dcnv2.json"}, "weight": 1.5},
                      {"choice": {"kind": "plan", "preset": "llama3-70b", "gpus": 256, "tp": 8}, "weight": 1.0}]}
    params = urlstate.encode_view(workload={"kind": "sample", "name": "mixtral-8x7b.json"},
                                  constraints=Constraints(gpus=256), robust=robust)
    assert params["robust"] == "mean" and params["wlw"] == "2" and params["scenarios"] == "baseline,job-mix-shift"
    assert params["mix"] == "sample:dlrm-dcnv2.json*1.5|plan:llama3-70b:256:tp=8"
    view = urlstate.decode_view(params, samples=SAMPLES, presets=PRESETS)
    assert view.robust == robust and view.problems == []
    # robust mode off: the link is exactly the single-workload link
    plain = urlstate.encode_view(workload={"kind": "sample", "name": "mixtral-8x7b.json"},
                                 constraints=Constraints(gpus=256))
    assert not {"robust", "mix", "wlw", "scenarios"} & set(plain)
    assert urlstate.decode_view(plain, samples=SAMPLES, presets=PRESETS).robust is None


def test_a_bad_mix_in_a_link_is_explained_and_the_rest_kept():
    view = urlstate.decode_view({"robust": "worst", "mix": "sample:nope.json|upload:a.json,b.json|"
                                 "sample:dlrm-dcnv2.json*-1|sample:llama3-70b.json*3", "wlw": "x",
                                 "scenarios": "baseline,meteor"}, samples=SAMPLES, presets=PRESETS)
    assert view.robust["mix"] == [{"choice": {"kind": "sample", "name": "llama3-70b.json"}, "weight": 3.0}]
    assert view.robust["weight"] == 1.0 and view.robust["scenarios"] == ["baseline"]
    text = " ".join(view.problems)
    for part in ("no built-in sample 'nope.json'", "uploaded traces (a.json, b.json)", "files cannot travel",
                 "weight '-1' must be above 0", "wlw: weight 'x' is not a number", "unknown 'meteor'"):
        assert part in text
    off = urlstate.decode_view({"robust": "median", "mix": "sample:dlrm-dcnv2.json"}, samples=SAMPLES,
                               presets=PRESETS)
    assert off.robust is None and "must be worst or mean" in off.problems[0]
    lone = urlstate.decode_view({"mix": "sample:dlrm-dcnv2.json"}, samples=SAMPLES, presets=PRESETS)
    assert lone.robust is None and "only apply with robust=" in lone.problems[0]


# ------------------------------------------------------------------ the objective from the page's inputs


def test_the_objective_names_cases_and_refuses_a_bad_mix(mix):
    a, b = mix
    assert robust_view.workload_name({"kind": "plan", "preset": "llama3-70b", "gpus": 256}) == "llama3-70b@256"
    assert robust_view.workload_name({"kind": "upload", "names": ["r0.json.gz", "r1.json.gz"]}) == "r0+1"
    obj = robust_view.build_objective([("x", a, 1.0), ("x", b, 3.0)], ["baseline", "fail-spine"], "worst")
    assert [c[0] for c in obj.cases] == ["x|baseline", "x|fail-spine", "x-2|baseline", "x-2|fail-spine"]
    assert [round(c[3], 4) for c in obj.cases] == [0.125, 0.125, 0.375, 0.375]    # 1/4 and 3/4, halved
    for args, msg in ((([("x", a, 1.0)], ["baseline"], "worst"), "at least two cases"),
                      (([("x", a, 1.0), ("y", b, 1.0)], [], "worst"), "at least one scenario"),
                      (([("x", a, 1.0), ("y", b, 1.0)], ["meteor"], "worst"), "unknown scenario(s) 'meteor'"),
                      (([("x", a, 1.0), ("y", b, 0.0)], ["baseline"], "mean"), "weight of workload 'y'"),
                      (([("x", a, 1.0), ("y", b, 1.0)], ["baseline"], "median"), "choose worst or mean")):
        with pytest.raises(FabricError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            robust_view.build_objective(*args)


# ------------------------------------------------------------------ reading a robust front (hand-made records)


def _rec(name, cost, a, b, *, slowdown=None, scale=1.0, feasible=True):
    pc = {"A|baseline": a, "B|baseline": b}
    return {"design": name, "key": name, "family": "clos", "cost_usd": cost, "feasible": feasible,
            "buildable": True, "p99_by_case": pc, "robust_slowdown": slowdown,
            "p99_s": (slowdown or 0.0) * scale, "p50_s": 0.0, "power_w": 1.0}


def test_spread_brittle_and_case_fronts_follow_the_definitions():
    # references: the first buildable baseline's p99 per case (A: 10 s, B: 2 s); the scale (weighted mean
    # reference, equal weights) is 6 s. 'cheap' is slow on A, 'x' fast on A but slow on B, 'y' fast on both.
    base = [{"design": "unbuildable", "buildable": False, "p99_by_case": {}},
            _rec("fat tree", 500, 10.0, 2.0, slowdown=1.0, scale=6.0)]
    cheap = _rec("cheap", 100, 14.0, 2.2, slowdown=1.4, scale=6.0)          # slowdowns 1.4, 1.1
    x = _rec("x", 150, 11.0, 3.0, slowdown=1.5, scale=6.0)                  # 1.1, 1.5
    y = _rec("y", 300, 9.5, 1.9, slowdown=0.95, scale=6.0)                  # 0.95, 0.95
    off = _rec("infeasible", 50, 1.0, 0.1, slowdown=0.1, scale=6.0, feasible=False)
    records, front = [cheap, x, y, off], [cheap, x, y]
    name, refs = robust_view.case_references(base)
    assert name == "fat tree" and refs == {"A|baseline": 10.0, "B|baseline": 2.0}
    assert robust_view.case_slowdowns(x, refs) == pytest.approx({"A|baseline": 1.1, "B|baseline": 1.5})
    ranges = robust_view.spread_ranges(front, refs)
    assert ranges["cheap"] == pytest.approx((1.1 * 6.0, 1.4 * 6.0))        # worst case on top: its robust p99
    assert ranges["y"] == pytest.approx((0.95 * 6.0, 0.95 * 6.0))
    # brittle: among feasible designs costing no more, x is the fastest on A (11 < 14) but on B 'cheap' (2.2) beats
    # it: 3.0 / 2.2 - 1 = 36 % >= 10 %. 'cheap' has nothing cheaper (best on both), 'y' is the fastest on both.
    notes = robust_view.brittle_notes(front, records)
    assert set(notes) == {"x"} and "for A|baseline" in notes["x"] and "36% slower" in notes["x"]
    cols = robust_view.front_columns(front, records, base)
    assert cols["spread across cases"].tolist() == pytest.approx([1.4 / 1.1, 1.5 / 1.1, 1.0])
    assert cols["worst case"].tolist() == ["A|baseline", "B|baseline", "A|baseline"]
    assert cols["brittle"].tolist()[1].startswith("best buy at its price for A|baseline")
    assert cols["p99 B|baseline (s)"].tolist() == [2.2, 3.0, 1.9]
    # each case's own front among the feasible records: A: cheap 14, x 11, y 9.5 (all); B: cheap 2.2, y 1.9
    table = robust_view.case_front_table(type("R", (), {"records": records, "front": [x, y]})())
    assert table["case"].tolist() == ["A|baseline", "B|baseline"]
    assert table["own front (designs)"].tolist() == [3, 2]
    assert table["also on the robust front"].tolist() == [2, 1]
    assert table["fastest p99, own front (s)"].tolist() == [9.5, 1.9]
    assert table["cheapest, own front (USD)"].tolist() == [100, 100]
    fig = robust_view.case_fronts_figure(type("R", (), {"records": records, "front": [x, y]})())
    own = [t for t in fig.data if t.name == "the case's own front"]
    assert [list(t.x) for t in own] == [[100, 150, 300], [100, 300]]


def test_the_pareto_chart_draws_spread_bars_and_rings_brittle_designs():
    front = [_rec("cheap", 100, 14.0, 2.2, slowdown=1.4, scale=6.0), _rec("x", 150, 11.0, 3.0, slowdown=1.5, scale=6.0)]
    fig = pareto_figure(front, [], ranges={"cheap": (6.6, 8.4), "x": (6.6, 9.0)}, flagged={"x": "best buy for A"},
                        y_title="robust p99, worst case")
    bars = next(t for t in fig.data if t.name == "spread across cases")
    assert list(bars.x) == [100, 100, None, 150, 150, None] and list(bars.y) == [6.6, 8.4, None, 6.6, 9.0, None]
    ring = next(t for t in fig.data if t.name.startswith("brittle"))
    assert list(ring.x) == [150] and list(ring.y) == [9.0]
    assert fig.layout.yaxis.title.text == "robust p99, worst case (s)"
    assert not [t for t in pareto_figure(front, []).data if t.name == "spread across cases"]
