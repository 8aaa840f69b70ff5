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
    # no job mix (robust mode off, no other workload): nothing to say about one
    assert "in the mix" not in texts(at.info)


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
    # the online plan now heads the mix (the first row); it is not a second row too. Issue 34 item 12: the old
    # primary swaps into the row it left instead of leaving the mix (which dropped a two-workload mix to one case,
    # so the robust search could no longer start); every workload is listed once
    assert _mix(at) == [{"kind": "plan", "preset": "mixtral-8x7b", "gpus": 1024},
                        {"kind": "sample", "name": "dlrm-dcnv2.json"}]
    rows = [e["choice"] for e in [{"choice": at.session_state["wl_choice"]}] + at.session_state["robust_mix"]]
    assert len({json.dumps(r, sort_keys=True) for r in rows}) == len(rows) == 3
    notice = texts(at.info)
    assert "Plan llama3-70b-online on 1,024 GPUs was already in the mix" in notice
    # the workload it replaced is named, not dropped in silence
    assert ("plan mixtral-8x7b on 1,024 GPUs takes its place further down (weight 1), so the mix keeps its 3 "
            "workloads") in notice
    assert "over llama3-70b-online@1024, mixtral-8x7b@1024, dlrm-dcnv2 × baseline: 3 cases" in texts(at.success)
    q = dict(at.query_params)
    assert q["wl"] == "plan:llama3-70b-online:1024"
    assert q["mix"] == "plan:mixtral-8x7b:1024|sample:dlrm-dcnv2.json"


def test_a_new_primary_takes_the_first_row_and_the_old_one_leaving_is_said():
    at = _with_online_in_the_mix()
    at.radio(key="wl_source").set_value("sample").run()           # the built-in sample source: its default sample
    ok(at)
    assert "Plan mixtral-8x7b on 1,024 GPUs is no longer in the mix" in texts(at.info)
    at.selectbox(key="wl_sample").set_value("llama3-70b.json").run()
    ok(at)
    assert "sample llama3-70b.json" in at.header[0].value
    assert _mix(at) == [{"kind": "plan", "preset": "llama3-70b-online", "gpus": 1024},
                        {"kind": "sample", "name": "dlrm-dcnv2.json"}]            # nothing else dropped
    assert "Sample mixtral-8x7b.json is no longer in the mix" in texts(at.info)
    assert "no longer in the mix" not in texts(at.run().info)                    # said once, not on every run
    # the robust search's cases: the new primary first, each workload once
    assert "over llama3-70b, llama3-70b-online@1024, dlrm-dcnv2 × baseline: 3 cases" in texts(at.success)


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
    assert "llama-upload.json is no longer in the mix" not in texts(at.info)     # removed, not to be added back
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


# ------------------------------------------------------------------ item 14: what money buys, in words


def _row(name, cost, p99):
    return {"name": name, "cost_usd": cost, "power_w": 1.0, "lower_bound_s": 0.1,
            "step_time_s": {"p50": p99, "p95": p99, "p99": p99}}


def test_a_p99_change_under_half_a_percent_is_the_same_p99_and_has_no_price():
    from fabric.ui_support.compare import money_deltas

    # 2 ms faster on a 1 s p99 (0.2 %) for $100,000 more: the old sentence priced it at $50,000 per ms
    (d,) = money_deltas([_row("ref", 1_000_000.0, 1.000), _row("dearer", 1_100_000.0, 0.998)])
    assert d["usd_per_ms_p99"] is None and "per ms" not in d["sentence"]
    assert d["sentence"] == ("'dearer' costs $100,000 more than 'ref' and has the same p99 step within 0.5% "
                             "(2.0 ms faster): worse.")
    # 20 ms faster (2 %) for $100,000 more: $5,000 per ms, by hand
    (d,) = money_deltas([_row("ref", 1_000_000.0, 1.000), _row("dearer", 1_100_000.0, 0.980)])
    assert d["usd_per_ms_p99"] == pytest.approx(5_000.0) and d["sentence"].endswith(": $5,000 per ms of p99.")
    # slower and dearer: no price
    (d,) = money_deltas([_row("ref", 1_000_000.0, 1.000), _row("worse", 1_100_000.0, 1.050)])
    assert d["usd_per_ms_p99"] is None and d["sentence"].endswith("worse on both (slower and dearer, no saving).")


def test_the_words_for_each_case_of_cost_and_p99():
    from fabric.search.tradeoff import speedup_text, usd_per_ms, usd_per_ms_text

    assert usd_per_ms_text(9_828.0, -0.001, 1.0) == "no p99 saved"            # 0.1 % of the p99
    assert usd_per_ms_text(98_280.0, -0.010, 1.0) == "$9,828 per ms"          # 10 ms for $98,280
    assert usd_per_ms_text(98_280.0, +0.010, 1.0) == "slower and dearer: no saving"
    assert usd_per_ms_text(0.0, -0.010, 1.0) == "no cost"
    assert usd_per_ms_text(-5.0, -0.010, 1.0) == "cheaper too"
    assert usd_per_ms_text(-5.0, +0.010, 1.0) == "slower (cheaper)"
    assert usd_per_ms(98_280.0, +0.010, 1.0) is None and usd_per_ms(0.0, -0.010, 1.0) is None
    assert speedup_text(1.000, 0.998) == "the same p99 (within 0.5%)"          # not "1.00x faster"
    assert speedup_text(1.000, 0.970) == "a 3.0% shorter p99"
    assert speedup_text(2.900, 1.000) == "a 2.90x faster p99"
    assert speedup_text(1.000, 1.020) == "a 2.0% longer p99"


def _evaluations(table: dict):
    """A stand-in evaluator: p99 and capex by (routing, leaf oversubscription)."""
    from types import SimpleNamespace

    def run(design):
        p99, cost = table[(design.routing, design.oversubscription[0])]
        return SimpleNamespace(step_time_s={"p50": p99, "p95": p99, "p99": p99}, cost_usd=cost)
    return run


def test_no_price_per_ms_for_a_design_that_is_slower_as_a_whole():
    from fabric.design import Design
    from fabric.ui_support.compare import money_split

    ref = Design(name="ref", gpus=256, routing="ecmp", oversubscription=(2.0,))
    other = ref.replace(name="other", routing="adaptive", oversubscription=(1.0,))
    # the free policy costs 100 ms on the reference's hardware; the hardware wins 50 ms back for $491,400: the
    # design as a whole is 50 ms slower and $491,400 dearer (the old sentence: "$9,828 per ms of p99")
    ev = _evaluations({("ecmp", 2.0): (1.000, 1_000_000.0), ("adaptive", 2.0): (1.100, 1_000_000.0),
                       ("adaptive", 1.0): (1.050, 1_491_400.0)})
    (s,) = money_split({"ref": ref, "other": other}, ev)
    assert s["hardware_delta_p99_s"] == pytest.approx(-0.050) and s["usd_per_ms_hardware"] is None
    assert "per ms of p99" not in s["sentences"][1]
    assert ("but 'other' as a whole is 50.0 ms (5.0%) slower at p99 than 'ref', so the money buys no p99 (no "
            "price per ms)") in s["sentences"][1]
    # the same hardware step when the design as a whole is faster: priced, $491,400 / 50 ms
    ev = _evaluations({("ecmp", 2.0): (1.000, 1_000_000.0), ("adaptive", 2.0): (0.990, 1_000_000.0),
                       ("adaptive", 1.0): (0.940, 1_491_400.0)})
    (s,) = money_split({"ref": ref, "other": other}, ev)
    assert s["usd_per_ms_hardware"] == pytest.approx(9_828.0) and s["sentences"][1].endswith(": $9,828 per ms of p99.")


def test_search_summary_never_says_one_times_faster():
    from fabric.search.result import SearchResult

    base = {"design": "baseline: fat tree 1:1", "cost_usd": 500.0, "p99_s": 1.000, "feasible": True,
            "buildable": True, "violations": {"buildable": 0.0}, "key": "b", "power_w": 1.0}
    near = dict(base, design="near", key="n", p99_s=0.998)                 # 0.2 % faster at the same cost
    res = SearchResult(records=[near], baselines=[base], front=[near], hv_history=[], reference_point=[],
                       normalisation=[], evaluations=1, elapsed_s=1.0, generations=1, stopped_because="budget reached",
                       seed=0)
    text = " ".join(res.summary_lines())
    assert "1.00x" not in text and "for the cost of" not in text
    fast = dict(near, p99_s=0.8)
    res.front = res.records = [fast]
    assert "for the cost of 'baseline: fat tree 1:1' ($500), 'near' has a 1.25x faster p99." in res.summary_lines()


def test_design_page_cheapest_fixes_show_words_not_none():
    from fabric.search import Constraints, DesignSpace
    from fabric.search.baselines import baseline_designs
    from fabric.search.designs import design_genes
    from fabric.ui_support.urlstate import encode_genes

    base = baseline_designs(DesignSpace(Constraints(gpus=256)))[0]         # ECMP, one queue pair: free fixes
    at = app(design=encode_genes(design_genes(base))).run()
    at.switch_page("pages/design.py").run()
    ok(at)
    fixes = next(d.value for d in at.dataframe if "change" in d.value.columns and "kind" in d.value.columns)
    assert set(fixes["kind"]) == {"free"}
    assert not fixes.isna().any().any() and "None" not in fixes.astype(str).to_numpy()
    assert set(fixes["price of the p99 saved"]) == {"no cost"}


# ------------------------------------------------------------------ item 11: Design export -> Upgrade; growth


def _design_export(design, *, racks: bool = False) -> bytes:
    """The Design page's "Design and bill of materials (JSON)" download of ``design`` (the page adds the racks)."""
    from fabric.cost import bill_of_materials
    from fabric.facility.rackpower import rack_report
    from fabric.topology import build_fabric
    from fabric.ui_support.exports import design_bom_json_text

    bom = bill_of_materials(build_fabric(design)).to_dict()
    if racks:
        return design_bom_json_text(design, bom, rack_report(design)).encode()
    return design_bom_json_text(design, bom).encode()


def _installed_2to1():
    from fabric.design import load_design

    return load_design(ROOT / "examples" / "installed-2to1.yaml")        # 1,024 GPUs: 26 leaves, 10 spines


def test_the_design_and_bom_export_loads_as_the_installed_fabric(tmp_path):
    from fabric.brownfield import load_installed
    from fabric.cli.main import main
    import contextlib
    import io

    design = _installed_2to1()
    path = tmp_path / "design_and_bom.json"
    path.write_bytes(_design_export(design))
    inst = load_installed(path)
    assert inst.design == design
    assert inst.inventory.by_category("switch") == {"ib-ndr-64x400": 36}
    # `fabric upgrade --existing` reads it
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["upgrade", "--existing", str(path), "-w", "sample_traces/mixtral-8x7b.json", "--samples", "32",
                   "--moves", "policy", "--json"])
    assert rc == 0, err.getvalue()
    assert json.loads(out.getvalue())["installed"]["switches"] == {"leaf": 26, "spine": 10}
    # the page's download (with the racks) is the document `fabric build --json` prints: one schema for both
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["build", str(ROOT / "examples" / "installed-2to1.yaml"), "--json"]) == 0
    built = json.loads(out.getvalue())
    export = json.loads(_design_export(design, racks=True))
    assert set(export) == set(built) and export["design_spec"] == built["design_spec"]
    assert export["items"] == built["items"] and export["racks"] == built["racks"]


def test_upgrade_page_reads_the_design_pages_exports():
    design = _installed_2to1()
    at = app().run()
    at.switch_page("pages/upgrade.py").run()
    at.radio(key="up_source").set_value("a design or `fabric build --json` file").run()
    from fabric.design import dump_design

    for name, data in (("design_and_bom.json", _design_export(design)), ("design.json", dump_design(design).encode())):
        at.file_uploader(key="up_file").set_value((name, data, "application/json")).run()
        ok(at)
        assert not at.error, (name, texts(at.error))
        assert any("installed 2:1 fat tree (1,024 GPUs)" in c.value and "26 leaf, 10 spine" in c.value
                   for c in at.caption), name


def _mixtral():
    from fabric.workload.model import load_workload_json

    return load_workload_json((ROOT / "sample_traces" / "mixtral-8x7b.json").read_text())


def test_growth_from_an_installed_2to1_fabric_keeps_its_switches():
    from fabric.brownfield import GrowthStage, installed_from_design, plan_growth
    from fabric.workload.scale import scale_to

    inst = installed_from_design(_installed_2to1())
    stages = [GrowthStage(g, scale_to(_mixtral(), g)) for g in (1024, 4096)]
    plan = plan_growth(stages, installed=inst, samples=32)
    # every one of the 36 installed NDR switches (26 leaves, 10 spines) is in service at every stage, in its tier
    for c in plan.plan:
        assert c.design.switch_model == "ib-ndr-64x400"
        assert c.switch_tiers.get(("leaf", "ib-ndr-64x400"), 0) >= 26
        assert c.switch_tiers.get(("spine", "ib-ndr-64x400"), 0) >= 10
    assert not plan.purchases[0].removed("switch")
    assert plan.installed_switches_in_use() == {"ib-ndr-64x400": [36, 36]}
    # stage 1 buys only what the installed items lack: its fabric's price minus what is installed and kept
    kept = sum(x.kept * x.unit_price_usd for x in plan.purchases[0].lines)
    assert plan.purchases[0].added_usd == pytest.approx(plan.plan[0].cost_usd - kept)
    assert kept >= 36 * 42_000                                  # at least the 36 switches at the catalog price
    assert "from the installed fabric (1,024 GPUs: 36 ib-ndr-64x400)" in plan.answer
    assert "36 of the 36 installed switches are in use at the last stage" in plan.answer
    assert plan.to_dict()["installed"]["switches"] == {"ib-ndr-64x400": 36}


def test_growth_refuses_a_first_stage_smaller_than_the_installed_fabric():
    from fabric.brownfield import GrowthStage, installed_from_design, plan_growth
    from fabric.errors import FabricError
    from fabric.workload.scale import scale_to

    inst = installed_from_design(_installed_2to1())
    with pytest.raises(FabricError, match=r"stage 1 \(512 GPUs\) is smaller than the installed fabric \(1,024 GPUs\)"):
        plan_growth([GrowthStage(g, scale_to(_mixtral(), g)) for g in (512, 2048)], installed=inst, samples=16)


def test_upgrade_page_plans_growth_from_the_uploaded_installed_fabric():
    at = app().run()
    at.switch_page("pages/upgrade.py").run()
    at.radio(key="up_source").set_value("a design or `fabric build --json` file").run()
    at.file_uploader(key="up_file").set_value(("installed.json", _design_export(_installed_2to1()),
                                               "application/json")).run()
    ok(at)
    assert at.text_input(key="up_stages").value == "1024,4096,16384"     # from the installed size
    at.text_input(key="up_stages").set_value("1024,4096").run()
    at.button(key="up_plan").click().run()
    ok(at)
    answer = texts(at.success)
    assert "from the installed fabric (1,024 GPUs: 36 ib-ndr-64x400)" in answer
    assert "36 of the 36 installed switches are in use at the last stage" in answer


def test_plan_growth_cli_grows_the_existing_fabric(tmp_path):
    from fabric.cli.main import main
    import contextlib
    import io

    path = tmp_path / "installed.json"
    path.write_bytes(_design_export(_installed_2to1()))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["plan-growth", "--stages", "1024,4096", "-w", "sample_traces/mixtral-8x7b.json", "--existing",
                   str(path), "--samples", "32", "--json"])
    assert rc == 0, err.getvalue()
    d = json.loads(out.getvalue())
    assert d["installed"]["switches_in_use_at_last_stage"] == {"ib-ndr-64x400": [36, 36]}
    assert not d["stages"][0]["take_out"].get("ib-ndr-64x400")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err := io.StringIO()):
        rc = main(["plan-growth", "--stages", "1024,4096", "-w", "sample_traces/mixtral-8x7b.json", "--existing",
                   str(path), "--design", "fat-tree"])
    assert rc == 2 and "not both" in err.getvalue()


# ------------------------------------------------------------------ item 14: inferred parallelism


def test_a_job_whose_only_group_is_the_world_is_not_dp_1():
    from fabric.ui_support.workload_view import plan_degrees
    from fabric.workload.presets import preset_workload

    dlrm = preset_workload("dlrm-dcnv2", 128)                   # one 128-rank 'world' group
    assert [(g.role, g.size) for g in dlrm.jobs[0].groups] == [("world", 128)]
    assert plan_degrees(dlrm)["dp"] == 128
    # a service of TP 8 replicas on 1,024 GPUs: 128 replicas, not DP 1
    online = preset_workload("llama3-70b-online", 1024)
    assert plan_degrees(online) == {"tp": 8, "pp": 1, "ep": 1, "cp": 1, "dp": 128}
    # a recorded data-parallel group is taken as it is (Mixtral: TP 2 x EP 8 within DP 128 on 256 GPUs)
    assert plan_degrees(_mixtral()) == {"tp": 2, "pp": 1, "ep": 8, "cp": 1, "dp": 128}
    from fabric.ui_support.workload_view import parallelism_text

    assert parallelism_text(dlrm).startswith("DP 128 (one 128-rank group spans every rank")
    assert parallelism_text(_mixtral()) == "TP 2, EP 8, DP 128"


def test_workload_page_names_dp_of_a_world_group():
    at = app().run()
    at.selectbox(key="wl_sample").set_value("dlrm-dcnv2.json").run()
    ok(at)
    cap = texts(at.caption)
    assert "Parallelism inferred from the process groups of the first job: DP 256 (one 256-rank group" in cap
    assert "DP 1." not in cap


def test_real_hta_trace_128_ranks_is_dp_128(traces_dir):
    from fabric.ui_support.workload_view import plan_degrees
    from fabric.workload.ingest import ingest

    files = sorted((traces_dir / "kineto" / "hta" / "trace_filter").glob("*.json.gz"))
    if not files:
        pytest.skip("HTA trace_filter traces not present")
    wl = ingest([(p.name, p.read_bytes()) for p in files]).workload
    assert [(g.role, g.size) for g in wl.jobs[0].groups] == [("world", 128)]
    assert plan_degrees(wl)["dp"] == 128


# ------------------------------------------------------------------ item 14: PyTorch ET warnings


def test_pytorch_et_warnings_name_only_what_the_trace_has(traces_dir):
    from fabric.workload.ingest import ingest

    folder = traces_dir / "pytorch_et" / "param_dlrm_8ranks"
    files = sorted(folder.glob("dlrm_eg_*.json"))
    if len(files) != 8:
        pytest.skip("the 8 DLRM execution traces are not present")
    raw = files[0].read_text()
    assert '"schema": "1.0.1"' in raw and "process_group:init" not in raw and "compute_time_s" not in raw
    wl = ingest([(p.name, p.read_bytes()) for p in files]).workload
    text = " | ".join(wl.warnings + wl.jobs[0].notes)
    # no field of fabric's own JSON, and nothing to "set" that the trace or the page does not have
    assert "compute_time_s" not in text and "overlap_fraction" not in text and "set the compute time" not in text
    assert "world size (## process_group:init ##) not recorded" not in text
    assert ("the trace records no world size (it has no '## process_group:init ##' node" in text
            and "world size assumed 8" in text)
    assert "records no timing (its nodes carry no durations)" in text


# ------------------------------------------------------------------ item 14: UI text, the server log


def test_no_issue_numbers_in_text_the_ui_shows():
    """Every string constant of the pages and of fabric (docstrings aside: they are for developers) that could
    reach a page: none may cite the project's issue tracker ("(issue 7)")."""
    import ast
    import re

    pattern = re.compile(r"\b[Ii]ssues? ?#?\d+")
    found = []
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "fabric").rglob("*.py"))]:
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs \
                    and pattern.search(n.value):
                found.append(f"{path.relative_to(ROOT)}:{n.lineno}: {n.value[:80]!r}")
    assert not found, found


def test_a_search_worker_importing_the_app_logs_no_no_runtime_found():
    """A search worker process imports app.py as __mp_main__; before, that import defined the dashboard's 12
    st.cache_data functions outside a server, each logging "No runtime found, using MemoryCacheStorageManager"
    (12 lines per worker per search in the server log)."""
    import subprocess
    import sys

    code = ("import runpy, sys; sys.path.insert(0, '.'); runpy.run_path('app.py', run_name='__mp_main__'); "
            "print('pages._common' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "No runtime found" not in done.stderr and done.stdout.strip() == "False"
