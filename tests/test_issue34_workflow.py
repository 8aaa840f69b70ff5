"""Issue 34, items 12 and 14: the primary workload and the job mix, and the Workload page's plan form and samples.
AppTest and unit tests; what only a browser shows is in tests/test_browser_issue34_workflow.py.

Item 12: changing the primary workload to one already in the mix dropped the old primary, so a mix of two
workloads fell to one case and the robust search could no longer start; the page's banner counted the mix as it was
before the change. Item 14: picking another model reset the GPUs to the preset's default, EP stayed editable for a
dense model, "Add a workload from" fell back to "a sample" after another page, and two generated samples were not
offered."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_support import app, ok

ROOT = Path(__file__).resolve().parent.parent
LLAMA = ROOT / "sample_traces" / "llama3-70b.json"




def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def build_plan(at, preset: str, gpus: int | None = None) -> None:
    at.radio(key="wl_source").set_value("plan").run()
    at.selectbox(key="plan_preset").set_value(preset).run()
    if gpus is not None:
        at.number_input(key="plan_gpus").set_value(gpus)
    at.button[0].click().run()
    ok(at)


def _mix(at) -> list[dict]:
    return [e["choice"] for e in at.session_state["robust_mix"]]


def _session_of_the_issue() -> AppTest:
    """1,024 GPUs, the Mixtral plan as the workload, robust worst case, Llama-3-70B online serving in the mix."""
    at = app(gpus="1024").run()
    build_plan(at, "mixtral-8x7b", 1024)
    at.radio(key="robust_mode_in").set_value("worst").run()
    at.radio(key="mix_src").set_value("plan").run()
    at.selectbox(key="mix_preset").set_value("llama3-70b-online").run()
    at.number_input(key="mix_gpus").set_value(1024).run()
    at.button(key="mix_add").click().run()
    ok(at)
    assert _mix(at) == [{"kind": "plan", "preset": "llama3-70b-online", "gpus": 1024}]
    assert "over mixtral-8x7b@1024, llama3-70b-online@1024 × baseline: 2 cases" in texts(at.success)
    return at


# ------------------------------------------------------------------ item 12: the primary workload and the mix


def test_promoting_the_mixs_other_workload_swaps_them_and_the_robust_search_can_still_start():
    at = _session_of_the_issue()
    build_plan(at, "llama3-70b-online", 1024)                  # the plan form, the workload already in the mix
    assert "plan llama3-70b-online on 1,024 GPUs" in at.header[0].value
    # the old primary takes the row the new one left: still two workloads, two cases, and no error
    assert _mix(at) == [{"kind": "plan", "preset": "mixtral-8x7b", "gpus": 1024}]
    assert "cannot start" not in texts(at.error) + texts(at.warning)
    assert "over llama3-70b-online@1024, mixtral-8x7b@1024 × baseline: 2 cases" in texts(at.success)
    notice = texts(at.info)
    assert ("Plan llama3-70b-online on 1,024 GPUs was already in the mix: it is now its first workload (the workload "
            "above, weight 1) and is listed once; plan mixtral-8x7b on 1,024 GPUs takes its place further down "
            "(weight 1), so the mix keeps its 2 workloads.") in notice
    assert "2 workloads × 1 scenario; this one is the first of them" in notice
    assert "already in the mix" not in texts(at.run().info)              # said once, not on every run
    assert dict(at.query_params)["mix"] == "plan:mixtral-8x7b:1024"
    # the first workload named on the Design page is the current one
    at.switch_page("pages/design.py").run()
    ok(at)
    caps = texts(at.caption)
    assert ("Context: robust worst case over 2 workloads (llama3-70b-online@1024, mixtral-8x7b@1024), each at its "
            "own plan") in caps
    assert "The charts below are the first case's, llama3-70b-online@1024|baseline." in caps
    assert not at.error, texts(at.error)


def test_swapped_workloads_keep_their_weights():
    at = _session_of_the_issue()
    at.number_input(key="mix_w_0").set_value(2.0).run()                       # the Mixtral plan above
    wid = at.session_state["robust_mix"][0]["id"]
    at.number_input(key=f"mix_w_{wid}").set_value(3.0).run()                  # the online service in the mix
    at.radio(key="robust_mode_in").set_value("mean").run()
    build_plan(at, "llama3-70b-online", 1024)
    assert at.session_state["robust_weight"] == 3.0 and at.number_input(key="mix_w_0").value == 3.0
    assert [(e["choice"]["preset"], e["weight"]) for e in at.session_state["robust_mix"]] == [("mixtral-8x7b", 2.0)]
    assert "it is now its first workload (the workload above, weight 3)" in texts(at.info)
    assert "takes its place further down (weight 2)" in texts(at.info)
    q = dict(at.query_params)
    assert q["wlw"] == "3" and q["mix"] == "plan:mixtral-8x7b:1024*2"


def test_the_sample_picker_swaps_a_sample_already_in_the_mix():
    at = _session_of_the_issue()
    at.radio(key="mix_src").set_value("sample").run()
    at.selectbox(key="mix_sample").set_value("dlrm-dcnv2.json").run()
    at.button(key="mix_add").click().run()
    at.radio(key="wl_source").set_value("sample").run()                 # the default sample: not in the mix
    assert "Plan mixtral-8x7b on 1,024 GPUs is no longer in the mix: the workload above is always its first one, " \
           "so sample mixtral-8x7b.json took its row (weight 1)." in texts(at.info)
    at.selectbox(key="wl_sample").set_value("dlrm-dcnv2.json").run()   # in the mix: the two swap
    ok(at)
    assert _mix(at) == [{"kind": "plan", "preset": "llama3-70b-online", "gpus": 1024},
                        {"kind": "sample", "name": "mixtral-8x7b.json"}]
    assert "over dlrm-dcnv2, llama3-70b-online@1024, mixtral-8x7b × baseline: 3 cases" in texts(at.success)


def test_a_mix_that_can_no_longer_be_searched_says_why_next_to_the_mix_and_what_to_do():
    at = _session_of_the_issue()
    # the primary becomes an upload (the Mixtral plan leaves the mix, said); the user then adds the Mixtral plan
    # back and removes the online service, so the mix holds only the plan the workload was before the upload
    at.radio(key="wl_source").set_value("upload").run()
    at.file_uploader(key="wl_upload").set_value([("llama-upload.json", LLAMA.read_bytes(), "application/json")]).run()
    ok(at)
    at.radio(key="mix_src").set_value("plan").run()
    at.selectbox(key="mix_preset").set_value("mixtral-8x7b").run()
    at.number_input(key="mix_gpus").set_value(1024).run()
    at.button(key="mix_add").click().run()
    online = next(e for e in at.session_state["robust_mix"] if e["choice"]["preset"] == "llama3-70b-online")
    at.button(key=f"mix_rm_{online['id']}").click().run()
    ok(at)
    assert _mix(at) == [{"kind": "plan", "preset": "mixtral-8x7b", "gpus": 1024}]
    # removing the upload brings the Mixtral plan back as the workload: it leaves the mix for the first row, and one
    # workload on one scenario is a single case
    at.file_uploader(key="wl_upload").set_value([]).run()
    ok(at)
    assert "plan mixtral-8x7b on 1,024 GPUs" in at.header[0].value and _mix(at) == []
    assert "Plan mixtral-8x7b on 1,024 GPUs was already in the mix: it is now its first workload" in texts(at.info)
    err = texts(at.error)
    assert ("The robust search cannot start: a robust search needs at least two cases (workload × scenario) and "
            "this mix has one, mixtral-8x7b@1024 × baseline: add a workload or a scenario. What to do: add a "
            "workload (**Add a workload from** below) or a second scenario (**Scenarios every design is judged "
            "under**), or set **Robust mode** to off to search the workload above alone.") in err
    # the banner at the top counts the mix as it is after the change, and points to the message
    assert ("Robust mode (worst case): the robust search cannot start with this mix of 1 workload × 1 scenario"
            in texts(at.warning))
    assert "2 workloads × 1 scenario" not in texts(at.info)
    # the Design page names where to fix it
    at.switch_page("pages/design.py").run()
    ok(at)
    assert "the job mix on the Workload page (Several workloads) cannot be searched" in texts(at.error)
    # a second scenario makes two cases: the search can start again
    at.switch_page("pages/workload.py").run()
    at.multiselect(key="robust_scen_in").set_value(["baseline", "fail-spine"]).run()
    ok(at)
    assert "cannot start" not in texts(at.error) and "mixtral-8x7b@1024 × baseline, fail-spine: 2 cases" in \
        texts(at.success)


# ------------------------------------------------------------------ item 14: the plan form


def test_another_model_keeps_the_sessions_gpu_count():
    at = app(gpus="1024").run()
    build_plan(at, "mixtral-8x7b", 1024)
    for preset in ("llama3-70b-online", "llama3-70b-disagg", "dlrm-dcnv2", "llama3-70b"):
        at.selectbox(key="plan_preset").set_value(preset).run()
        ok(at)
        assert at.number_input(key="plan_gpus").value == 1024, preset             # was the preset's 256
    at.button[0].click().run()
    assert "plan llama3-70b on 1,024 GPUs" in at.header[0].value
    assert at.session_state["constraints"].gpus == 1024


def test_a_model_that_cannot_run_on_the_sessions_gpus_opens_at_its_own_size_and_says_why():
    at = app().run()
    build_plan(at, "llama3-70b-serving", 1000)                  # 125 replicas of TP 8
    at.selectbox(key="plan_preset").set_value("mixtral-8x7b").run()      # needs a multiple of 16
    ok(at)
    assert at.number_input(key="plan_gpus").value == 256
    assert ("GPUs: 256, the mixtral-8x7b preset's own size: its plan does not run on 1,000 GPUs (gpus: preset "
            "'mixtral-8x7b' needs a multiple of 16 GPUs") in texts(at.caption)


def test_settings_that_do_not_apply_to_the_model_are_disabled_with_the_reason():
    from fabric.ui_support.workload_view import plan_field_reasons
    from fabric.workload.presets import list_presets

    applies = {p.name: sorted(k for k, why in plan_field_reasons(p).items() if why is None) for p in list_presets()}
    assert applies == {"llama3-70b": ["pp", "tp", "zero_stage"], "mixtral-8x7b": ["ep", "pp", "tp", "zero_stage"],
                       "dlrm-dcnv2": [], "llama3-70b-serving": ["pp", "tp"], "llama3-70b-online": ["tp"],
                       "llama3-70b-disagg": ["tp"], "deepseek-v3-ep-decode": ["ep", "tp"]}
    at = app().run()
    at.radio(key="wl_source").set_value("plan").run()
    at.selectbox(key="plan_preset").set_value("llama3-70b-online").run()
    ok(at)
    ep, pp, tp = (at.number_input(key=f"plan_{k}") for k in ("ep", "pp", "tp"))
    assert ep.disabled and pp.disabled and not tp.disabled
    assert ep.help == ("Does not apply: llama3-70b is a dense model (no experts): expert parallelism applies to "
                       "mixture-of-experts models only.")
    assert pp.help.startswith("Does not apply: this service runs replicas without pipeline stages")
    at.selectbox(key="plan_preset").set_value("deepseek-v3-ep-decode").run()
    assert not at.number_input(key="plan_ep").disabled
    assert at.number_input(key="plan_ep").help.startswith("GPUs the experts of a mixture-of-experts layer")


def test_add_a_workload_from_keeps_the_users_choice_after_another_page():
    at = app(robust="worst").run()
    at.radio(key="mix_src").set_value("plan").run()
    at.selectbox(key="mix_preset").set_value("dlrm-dcnv2").run()
    for page in ("pages/constraints.py", "pages/design.py"):
        at.switch_page(page).run()
        at.switch_page("pages/workload.py").run()
        ok(at)
        assert at.radio(key="mix_src").value == "plan", page                      # was back at "a sample"
        assert at.selectbox(key="mix_preset").value == "dlrm-dcnv2", page


# ------------------------------------------------------------------ item 14: the built-in samples


def test_every_generated_workload_sample_is_a_built_in_sample():
    from fabric.workload.samples import samples
    from pages import _common as C

    generated = {s.filename for s in samples()}
    offered = {f for files in C.SAMPLES.values() for f in files}
    assert offered == generated
    assert {"llama3-70b-online.json", "llama3-70b-disagg.json"} <= set(C.SAMPLES)
    assert set(C.SAMPLE_TITLES) == set(C.SAMPLES)


@pytest.mark.parametrize("name, title", [
    ("llama3-70b-online.json", "Llama-3-70B-style online service with request latency"),
    ("llama3-70b-disagg.json", "Llama-3-70B-style service with prefill and decode disaggregated")])
def test_the_serving_samples_load_from_the_picker_and_a_link(name, title):
    at = app().run()
    at.radio(key="wl_source").set_value("sample").run()
    assert any(title in o for o in at.selectbox(key="wl_sample").options)
    at.selectbox(key="wl_sample").set_value(name).run()
    ok(at)
    assert at.header[0].value == f"What fabric understood: sample {name}"
    assert at.query_params["wl"] == f"sample:{name}"
    linked = app(wl=f"sample:{name}").run()
    ok(linked)
    assert linked.header[0].value == f"What fabric understood: sample {name}" and not linked.warning
    assert {m.label: m.value for m in linked.metric}["GPUs needed"] == "256"
