"""Workload: upload traces (any supported format, .gz too), pick a built-in sample, or build one from a
parallelism plan; then see what fabric understood. At the bottom, several workloads with weights, scenarios and a
robust mode for a search robust to the job mix."""

from __future__ import annotations

import json

import streamlit as st

from pages import _common as C
from fabric.errors import FabricError
from fabric.ui_support import charts, robust_view
from fabric.ui_support.job_mix import mix_label
from fabric.ui_support.workload_view import (PLAN_FIELD_HELP, batch_text, compute_comm_rows, figures_caption,
                                             files_table, gpus_needed, groups_table, jobs_table, ops_table, parallelism_text,
                                             plan_degrees, plan_field_reasons, unparsed_table, workload_figures)
from fabric.workload.ingest import ingest
from fabric.workload.presets import get_preset
from fabric.workload.summary import size_label, summarize

ss = st.session_state
C.require_entry()
SOURCES = {"sample": "Built-in sample", "upload": "Upload traces", "plan": "Parallelism plan"}
#: The plan form's fields (session keys ``plan_<name>``).
PLAN_FORM_KEYS = ("gpus", "tp", "pp", "ep", "zero")

st.title("Workload")
st.caption("What will run on the network. Traces: PyTorch profiler (Kineto) JSON, PyTorch execution traces, "
           "Chakra ET, nccl-tests output, "
           "NCCL_DEBUG logs, ASTRA-sim/SimAI text, AICB CSV or fabric's own JSON; gzip is fine. Each file is read "
           "on its own: a bad file is reported next to its name and the others still load.")
C.show_url_problems()
# the robust mode and scenarios (widgets at the bottom of the page) as the user left them, for the whole run
if "robust_mode_in" in ss:
    C.set_robust_mode(ss["robust_mode_in"])              # on: the cluster holds the largest workload of the mix
if "robust_scen_in" in ss:
    ss["robust_scenarios"] = list(ss["robust_scen_in"])
robust_banner = st.empty()       # filled once the source below has applied any change of the workload

choice = ss["wl_choice"]
if "wl_source" not in ss:
    ss["wl_source"] = choice["kind"] if choice["kind"] in SOURCES else "sample"
source = st.radio("Where the workload comes from", list(SOURCES), format_func=SOURCES.get, horizontal=True,
                  key="wl_source")

def _scale_form(traced) -> None:
    """Grow the uploaded job to the cluster being designed (a trace records a few ranks of a larger job)."""
    from fabric.workload.scale import GROWABLE_ROLES

    job = max((j for j in traced.jobs if j.kind != "storage"), key=lambda j: j.world_size, default=None)
    if job is None:
        return
    cur = ss.get("upload_scale")
    with st.expander(f"Scale the trace to the cluster ({job.world_size:,} ranks traced"
                     + (f", now {int(cur['gpus']):,} GPUs" if cur else "") + ")", expanded=job.world_size < 64):
        with st.form("scale_form"):
            a, b = st.columns(2)
            target = a.number_input("GPUs", min_value=job.world_size, step=job.world_size,
                                    value=int(cur["gpus"]) if cur else max(job.world_size,
                                                                          C.constraints().gpus // job.world_size
                                                                          * job.world_size),
                                    help=f"A whole multiple of the {job.world_size:,} traced ranks.")
            roles = [r for r in GROWABLE_ROLES if r == "world" or any(g.role == r for g in job.groups)]
            grow = b.selectbox("Grow", roles, index=roles.index("dp") if "dp" in roles else 0,
                               help="The parallelism dimension that grows; every rank keeps its traced work and "
                                    "message sizes (data parallelism by default).")
            go, undo = st.columns(2)
            apply_ = go.form_submit_button("Scale", type="primary")
            reset = undo.form_submit_button("Back to the traced size", disabled=cur is None)
        st.caption("Growing data parallelism keeps each rank's compute and messages: a gradient all-reduce reduces the "
                   "same buffer over more ranks. The ranks are laid out in Megatron-LM order (docs/workload-formats.md).")
    if apply_:
        from fabric.workload.scale import scale_to

        try:
            scale_to(traced, int(target), grow=grow)
        except FabricError as err:
            st.error(f"Cannot scale: {C.public_message(err)}")
            return
        ss["upload_scale"] = None if int(target) == job.world_size else {"gpus": int(target), "grow": grow}
        C.set_workload_choice(dict(ss["wl_choice"]))
        st.rerun()
    if reset:
        ss["upload_scale"] = None
        C.set_workload_choice(dict(ss["wl_choice"]))
        st.rerun()


def _uploads_changed() -> None:
    """The user changed the uploaded files: when they removed every one, nothing may use them any more (a page
    visit also empties the uploader, but without this call: the files stay in use then)."""
    if not ss.get("wl_upload"):
        C.forget_uploads()


if source == "sample":
    if "wl_sample" not in ss:
        ss["wl_sample"] = choice["name"] if choice["kind"] == "sample" else C.DEFAULT_SAMPLE
    name = st.selectbox("Built-in sample", list(C.SAMPLES), format_func=lambda n: f"{n}: {C.SAMPLE_TITLES[n]}",
                        key="wl_sample")
    st.caption("Samples are generated by fabric's own synthesizer (sample_traces/README.md); none comes from a real "
               "cluster.")
    if choice != {"kind": "sample", "name": name}:
        C.set_workload_choice({"kind": "sample", "name": name})

elif source == "upload":
    files = st.file_uploader("Trace files (drop several at once: every rank file of a job, or several jobs)",
                             accept_multiple_files=True, key="wl_upload", on_change=_uploads_changed)
    if files:
        sig = tuple((f.file_id, f.name, f.size) for f in files)
        if sig != ss.get("upload_sig"):
            data = [(f.name, f.getvalue()) for f in files]
            with st.spinner(f"Reading {len(data)} file(s)..."):
                result = ingest(data)
            ss["uploads"] = data
            ss["upload_result"] = result
            ss["upload_sig"] = sig
            ss["upload_scale"] = None
            if result.workload is not None:
                C.set_workload_choice({"kind": "upload", "names": [n for n, _ in data]})
    result = ss.get("upload_result")
    if result is not None and result.workload is not None and not files and choice["kind"] != "upload":
        C.set_workload_choice({"kind": "upload", "names": [n for n, _ in ss["uploads"]]})   # back to the uploads
    if result is not None:
        C.table(files_table(result.files), hide_index=True, width="stretch",
                     column_config={"jobs or error": st.column_config.TextColumn(width="large")})
        st.caption("One row per uploaded file: the format fabric recognised, whether it parsed, and the jobs it "
                   "went into or the reason it did not.")
        for f in result.files:
            if not f.ok:
                st.error(f"**{f.name}** could not be read: {C.public_message(f.error)}")
        measured = [f.name for f in result.files if f.ok and f.format in ("nccl_tests", "nccl_log")]
        if measured and result.workload is not None and result.workload.measurements:
            st.info(f"**{', '.join(measured)}**: measured collective times (nccl-tests / NCCL log). As a workload they "
                    "are only the benchmark's own collectives; their real use is to fit the evaluator to your system "
                    "on the **Calibrate** page.")
            C.page_link("calibrate", "Open Calibrate")
        if result.workload is None:
            st.warning("No uploaded file could be read, so the page still shows the previous workload.")
        else:
            if not files:
                a, b = st.columns([5, 1], vertical_alignment="center")
                a.info(f"Using the {sum(f.ok for f in result.files)} file(s) uploaded earlier in this session; "
                       "drop new files to replace them.")
                if b.button("Stop using them", key="wl_forget_uploads"):
                    C.forget_uploads()
                    st.rerun()
            _scale_form(result.workload)
    elif not files:
        st.info(f"Drop trace files above. Until then the workload stays {C.workload_bundle().label}.")

else:  # parallelism plan
    presets = [p.name for p in C.list_presets()]
    if "plan_preset" not in ss:
        ss["plan_preset"] = choice["preset"] if choice["kind"] == "plan" else "mixtral-8x7b"
    preset = st.selectbox("Model", presets, key="plan_preset",
                          format_func=lambda n: f"{n}: {get_preset(n).description}")
    pre = get_preset(preset)
    reasons = plan_field_reasons(pre)
    allowed = {k for k, why in reasons.items() if why is None}
    # Seed the form whenever its fields have no state: another model was picked, or this is a new visit (Streamlit
    # forgets a widget's value when a page without it runs). The plan in use shows as understood (its GPUs and
    # the degrees its process groups have); another model shows its own plan at the session's GPU count (the GPUs
    # field as it was, else the plan's, else the cluster's) when it runs there, else at its own default size.
    if ss.get("_plan_for") != preset or any(f"plan_{k}" not in ss for k in PLAN_FORM_KEYS):
        mine = choice if choice["kind"] == "plan" and choice["preset"] == preset else None
        ss.pop("_plan_gpus_note", None)
        if mine:
            gpus_ = int(mine["gpus"])
            deg = plan_degrees(C.workload_bundle().workload)
        else:
            want = int(ss["plan_gpus"]) if "plan_gpus" in ss else \
                int(choice["gpus"]) if choice["kind"] == "plan" else int(C.constraints().gpus)
            try:
                deg, gpus_ = plan_degrees(C.plan_workload(preset, want, "{}")), want
            except FabricError as err:
                gpus_ = pre.default_gpus
                deg = plan_degrees(C.plan_workload(preset, gpus_, "{}"))
                ss["_plan_gpus_note"] = (f"GPUs: {gpus_:,}, the {preset} preset's own size: its plan does not run on "
                                         f"{want:,} GPUs ({C.public_message(err)}).")
        ss["plan_gpus"] = gpus_
        for k in ("tp", "pp", "ep"):
            ss[f"plan_{k}"] = int(deg[k])
        ss["plan_zero"] = "preset default" if not mine or mine.get("zero_stage") is None else str(mine["zero_stage"])
        ss["_plan_for"] = preset

    def _help(field: str) -> str:
        why = reasons[field]
        return PLAN_FIELD_HELP[field] if why is None else f"Does not apply: {why}."

    with st.form("plan_form"):
        c1, c2, c3, c4, c5 = st.columns(5)
        gpus = c1.number_input("GPUs", min_value=1, max_value=1_048_576, step=8, key="plan_gpus",
                               help=f"GPUs the job runs on; the {preset} plan needs a multiple of "
                                    f"{pre.gpu_multiple:,}.")
        tp = c2.number_input("Tensor parallel (TP)", min_value=1, max_value=1024, key="plan_tp",
                             disabled="tp" not in allowed, help=_help("tp"))
        pp = c3.number_input("Pipeline parallel (PP)", min_value=1, max_value=1024, key="plan_pp",
                             disabled="pp" not in allowed, help=_help("pp"))
        ep = c4.number_input("Expert parallel (EP)", min_value=1, max_value=1024, key="plan_ep",
                             disabled="ep" not in allowed, help=_help("ep"))
        zero = c5.selectbox("ZeRO stage", ["preset default", "0", "1", "2", "3"], key="plan_zero",
                            disabled="zero_stage" not in allowed, help=_help("zero_stage"))
        st.caption("Data parallelism fills the rest: DP = GPUs / (TP x PP). The values shown are the preset's plan; "
                   "greyed-out settings do not apply to this model (each one's help says why). Sources: "
                   "docs/synthesis.md.")
        submitted = st.form_submit_button("Build workload", type="primary")
    if ss.get("_plan_gpus_note"):
        st.caption(C.md_text(ss["_plan_gpus_note"]))
    if submitted:
        try:            # the preset's own degrees at this size (its rules may depend on it), else at its default
            deg = plan_degrees(C.plan_workload(preset, int(gpus), "{}"))
        except FabricError:
            deg = plan_degrees(C.plan_workload(preset, pre.default_gpus, "{}"))
        new = {"kind": "plan", "preset": preset, "gpus": int(gpus)}
        for k, v in (("tp", tp), ("pp", pp), ("ep", ep)):
            if k in allowed and int(v) != deg[k]:  # only what differs, so the preset's own rules still apply
                new[k] = int(v)
        if "zero_stage" in allowed and zero != "preset default":
            new["zero_stage"] = int(zero)
        try:
            C.plan_workload(preset, int(gpus), json.dumps(
                {k: new[k] for k in C.urlstate.PLAN_KEYS if k in new}, sort_keys=True))
        except FabricError as err:
            st.error(f"This plan cannot be built: {C.public_message(err)}")
        else:
            ss.pop("_plan_gpus_note", None)
            C.set_workload_choice(new)
            st.success(f"Built the {preset} workload on {int(gpus):,} GPUs.")
    elif choice["kind"] != "plan":
        st.info("Set a plan and press **Build workload**; until then the current workload stays.")

if ss.get("wl_error"):
    st.error(C.public_message(ss["wl_error"]))
for note in C.pop_workload_notices():                    # removed uploads, a new head of the job mix
    st.info(C.md_text(note))
if C.robust_on():       # after the source: the mix as it is now, this run's change included
    n_wl, n_sc = 1 + len(ss.get("robust_mix", [])), len(ss.get("robust_scenarios") or [])
    mode_text = robust_view.MODE_TEXT[ss["robust_mode"]]
    if C.robust_problem():
        robust_banner.warning(f"Robust mode ({mode_text}): the robust search cannot start with this mix of {n_wl} "
                              f"workload{'s' if n_wl != 1 else ''} × {n_sc} scenario{'s' if n_sc != 1 else ''}; "
                              "why and what to do are under **Several workloads** at the bottom of this page.")
    else:
        robust_banner.info(f"Robust mode ({mode_text}): the Search page judges designs on {n_wl} workload"
                           f"{'s' if n_wl != 1 else ''} × {n_sc} scenario{'s' if n_sc != 1 else ''}; this one is the "
                           "first of them. The mix is under **Several workloads** at the bottom of this page.")

# ------------------------------------------------------------------ what was understood
wb = C.workload_bundle()
wl = wb.workload
summary = summarize(wl)
st.header(f"What fabric understood: {wb.label}")
jobs = summary["jobs"]
train = [j for j in jobs if j["kind"] != "storage"]
gpn = C.constraints().gpus_per_node
bases = C.baselines()
gpu = bases[0].gpu_model if bases else C.constraints().gpu_model     # the reference fabric's GPU
try:
    figs = workload_figures(wl, gpn, gpu, C.catalog_bundle().catalog)
except FabricError as err:          # the cluster's GPU is not in the (edited) catalog
    st.error(f"Compute on the cluster's GPU cannot be shown: {C.public_message(err)}")
    figs = None
m1, m2, m3, m4, m5 = st.columns(5)
m1.metric("Jobs", f"{len(jobs)}")
m2.metric("GPUs needed", f"{gpus_needed(wl):,}")
if figs is not None:
    acc = figs["account"]
    per = f"per {acc.unit}" + (" (first job)" if figs["jobs"] > 1 else "")
    m3.metric(f"Network traffic {per}", size_label(acc.network_bytes_per_step),
              help=f"Bytes per {acc.unit} of the ops whose process groups span servers, so they cross the scale-out "
                   "network.")
    m4.metric(f"NVLink traffic {per}", size_label(acc.nvlink_bytes_per_step),
              help=f"Bytes per {acc.unit} of the ops whose process groups stay inside one server (scale-up domain).")
    m5.metric(f"Compute {per}", charts.time_text(acc.compute_s),
              help=figs["basis"].note or f"On the cluster's {gpu}, the GPU the workload's compute is for.")
    st.caption(C.md_text(figures_caption(figs, gpn)))
    for b in figs["bases"].values():
        if b.note:
            (st.warning if b.status == "kept" else st.info)(C.md_text(b.note))
else:
    m5.metric("Compute per step", "n/a", help="No training or inference job, or no catalog row for the cluster's GPU.")
st.caption(f"Parallelism inferred from the process groups of the first job: {parallelism_text(wl)}.")
batch = batch_text(wl)
if batch:
    st.markdown(C.md_text(batch))
    rule = dict(wl.facts).get("batch rule")
    if rule and rule not in wl.warnings:       # a batch that had to grow is among the workload's warnings below
        st.info(C.md_text(rule[0].upper() + rule[1:] + "."))

st.subheader("Jobs")
C.table(jobs_table(summary, {n: b.compute_s for n, b in (figs or {}).get("bases", {}).items()}),
             hide_index=True, width="stretch",
             column_config={"compute per step (s)": st.column_config.NumberColumn(format="%.4g")})
st.caption(f"One row per job: ranks it runs on, what its step is (a training step, or one request of a serving job), "
           f"compute time per step on the cluster's {gpu}, bytes communicated per step (nccl-tests size convention) "
           "and the share of those bytes that overlaps compute.")

st.subheader("Process groups and inferred parallelism")
C.table(groups_table(summary), hide_index=True, width="stretch")
st.caption("Communicators of each job: size in ranks, parallelism role (dp, tp, pp, ep, cp, world) and whether the "
           "role came from the trace, was inferred, or comes from the plan.")

a, b = st.columns(2)
with a:
    st.subheader("Collectives per step")
    st.plotly_chart(charts.collectives_figure(train or jobs), width="stretch", theme=None, key="wl_coll")
    st.caption("Left: bytes per step by collective kind (GiB). Right: calls per step. One colour per "
               "job.")
with b:
    st.subheader("Message sizes")
    st.plotly_chart(charts.message_size_figure(train or jobs), width="stretch", theme=None, key="wl_sizes")
    st.caption("Calls per step by message size, in power-of-two bins (each bar from the size shown up to twice "
               "it); small messages are latency-bound, large ones bandwidth-bound.")

st.subheader("Compute vs communication")
if bases:
    try:
        ref_case = C.record_of(bases[0]).primary      # the reference fabric's record in the session's context
    except FabricError as err:
        if C.robust_problem():      # the context is the robust mix's, which cannot be searched yet
            st.info("Communication time is computed in the search's context, the robust mix, and that mix cannot be "
                    "searched yet: see **Workloads in the mix** under Several workloads below.")
        else:
            st.info(f"Communication time needs a fabric that holds the workload: {C.public_message(err)}")
    else:
        ev = ref_case.evaluation
        st.plotly_chart(charts.compute_comm_figure(compute_comm_rows(ref_case.workload, ev)), width="stretch",
                        theme=None, key="wl_cc")
        if ref_case.plan:
            st.caption(C.md_text(f"With the plan space auto the workload runs at the reference fabric's best plan "
                                 f"of the search's shortlist, {ref_case.plan}."))
        st.caption(f"Per job, time per step (a serving job: per request) on the reference fabric '{bases[0].name}' "
                   f"({C.constraints().gpus:,} GPUs of {gpu}): compute, and in the p99 step all the job's calls "
                   "run back to back, and the part of that communication left exposed (not hidden behind compute); "
                   "both from the same sample, so exposed never exceeds back to back.")
else:
    st.info("No reference fabric can be built from the allowed hardware (see the Constraints page).")

with st.expander(f"Every operation ({sum(len(j['ops']) for j in jobs)})"):
    C.table(ops_table(summary))
    st.caption("Each communication op of a step (a serving job: of one request, its decode ops once per token "
               "step): collective, message size (per rank, nccl-tests convention), process group, calls and bytes "
               "per step and the share hidden behind compute. The bytes add up to the traffic figures above.")

st.subheader("Not understood")
unp = unparsed_table(summary)
if len(unp):
    C.table(unp, hide_index=True, width="stretch",
                 column_config={"reason": st.column_config.TextColumn(width="large")})
    st.caption("Communication seen in the traces that could not be turned into an op, with the reason; it is not "
               "part of the evaluation.")
else:
    st.success("Every communication event in the input was turned into an op.")
for w in summary["warnings"]:
    st.warning(w)

# ------------------------------------------------------------------ several workloads: a robust design

MODE_LABELS = dict(robust_view.MODE_TEXT, off="off: this workload only")
st.header("Several workloads: a design robust to the job mix")
st.caption("A brittle design wins on one mix and loses when it shifts. Add the other jobs the cluster will run and "
           "the conditions it must survive; with a robust mode the Search page judges every design on every "
           "workload × scenario (each relative to the fat-tree baseline on that case) and optimises the worst case "
           "or the weighted mean. docs/review.md explains the rule.")
if "robust_mode_in" not in ss:
    ss["robust_mode_in"] = ss.get("robust_mode", "off")
mode = st.radio("Robust mode", robust_view.MODES, format_func=MODE_LABELS.get, horizontal=True, key="robust_mode_in",
                help="Worst case: a design is as good as its slowest case (relative to the fat tree on that case). "
                     "Weighted mean: the cases' slowdowns weighted by their workload's weight.")
C.set_robust_mode(mode)                                  # (set at the top of the page; here on a first run)

mix = ss.setdefault("robust_mix", [])
for e in mix:                                            # stable widget keys, whatever is removed later
    if "id" not in e:
        ss["_mix_next_id"] = e["id"] = ss.get("_mix_next_id", 0) + 1
st.subheader("Workloads in the mix")
hdr = st.columns([5, 2, 1])
hdr[0].markdown("**workload**")
hdr[1].markdown("**weight**")
row = st.columns([5, 2, 1])
row[0].write(f"{wb.label} (the workload above)")
if "mix_w_0" not in ss:
    ss["mix_w_0"] = float(ss.get("robust_weight", 1.0))
ss["robust_weight"] = float(row[1].number_input("weight of the workload above", min_value=0.001, max_value=1e6,
                                                step=1.0, key="mix_w_0", label_visibility="collapsed"))
remove = None
for e in mix:
    row = st.columns([5, 2, 1])
    row[0].write(mix_label(e["choice"]))
    k = f"mix_w_{e['id']}"
    if k not in ss:
        ss[k] = float(e["weight"])
    e["weight"] = float(row[1].number_input(f"weight of {mix_label(e['choice'])}", min_value=0.001,
                                            max_value=1e6, step=1.0, key=k, label_visibility="collapsed"))
    if row[2].button("Remove", key=f"mix_rm_{e['id']}"):
        remove = e
if remove is not None:
    C.remove_from_mix(remove)
    st.rerun()
st.caption("Weights count in the weighted mean (a workload's weight is shared by its scenarios); the worst case "
           "ignores them. The first workload is the one shown above; change it with the source at the top (a "
           "workload already further down then swaps places with it).")
problem = C.robust_problem()          # next to the mix: why the robust search cannot start, and what to do
if problem:
    st.error(problem)

a, b = st.columns([1, 2])
with a:
    # persist_state: the choice survives a visit to another page (Streamlit forgets an unrendered widget's value)
    src = st.radio("Add a workload from", ["sample", "plan", "upload"], horizontal=True, key="mix_src",
                   format_func={"sample": "a sample", "plan": "a plan", "upload": "trace files"}.get,
                   persist_state="session")
with b:
    new_choice, new_files = None, None
    if src == "sample":
        in_mix = {e["choice"].get("name") for e in [{"choice": ss["wl_choice"]}] + mix
                  if e["choice"]["kind"] == "sample"}
        if "mix_sample" not in ss:            # the first sample not yet in the mix
            ss["mix_sample"] = next((n for n in C.SAMPLES if n not in in_mix), list(C.SAMPLES)[0])
        name = st.selectbox("Sample to add", list(C.SAMPLES), key="mix_sample",
                            format_func=lambda n: f"{n}: {C.SAMPLE_TITLES[n]}")
        new_choice = {"kind": "sample", "name": name}
    elif src == "plan":
        c1, c2 = st.columns([3, 1])
        preset = c1.selectbox("Model to add", [p.name for p in C.list_presets()], key="mix_preset",
                              format_func=lambda n: f"{n}: {get_preset(n).description}", persist_state="session")
        if "mix_gpus" not in ss:
            ss["mix_gpus"] = int(C.constraints().gpus)
        gpus_ = c2.number_input("GPUs", min_value=1, max_value=1_048_576, step=8, key="mix_gpus",
                                help="The preset's plan at this size (default: the cluster's GPUs)")
        new_choice = {"kind": "plan", "preset": preset, "gpus": int(gpus_)}
    else:
        new_files = st.file_uploader("Trace files of the workload to add", accept_multiple_files=True,
                                     key="mix_files")
    add = st.button("Add to the mix", key="mix_add", disabled=src == "upload" and not new_files)
if add:
    skipped = []
    try:
        wl_new = None
        if src == "upload":
            data = [(f.name, f.getvalue()) for f in new_files]
            with st.spinner(f"Reading {len(data)} file(s)..."):
                res_new = ingest(data)
            skipped = [f"**{f.name}** could not be read: {C.public_message(f.error)}" for f in res_new.files
                       if not f.ok]
            if res_new.workload is None:
                raise FabricError("none of these files could be read, so nothing was added")
            wl_new = res_new.workload
            new_choice = {"kind": "upload", "names": [f.name for f in res_new.files if f.ok]}
        C.add_to_mix(new_choice, wl_new)
    except FabricError as err:
        for line in skipped:
            st.error(line)
        st.error(f"Not added: {C.public_message(err)}")
    else:
        ss["_mix_skipped"] = skipped        # shown after the rerun, next to the uploader
        st.rerun()
for line in ss.pop("_mix_skipped", []):
    st.error(line + " (the other files were added)")

if "robust_scen_in" not in ss:
    ss["robust_scen_in"] = list(ss.get("robust_scenarios") or ["baseline"])
scen = st.multiselect("Scenarios every design is judged under", list(robust_view.SCENARIO_NAMES),
                      key="robust_scen_in",
                      help="baseline is the healthy network; fail-spine, slow-switch, job-mix-shift (1.5x the "
                           "bytes), ... are the Design page's what-ifs.")
ss["robust_scenarios"] = list(scen)
n_wl, n_sc = 1 + len(ss["robust_mix"]), len(scen)
if C.robust_on():
    if C.robust_problem():
        st.caption("The robust search cannot start yet: see the message under **Workloads in the mix** above.")
    else:
        obj = C.search_workload()
        cluster = C.constraints()
        try:
            need = C.needed_gpus(cluster.gpus_per_node)
        except FabricError:
            need = cluster.gpus
        st.success(C.md_text(f"The Search page optimises the {robust_view.MODE_TEXT[ss['robust_mode']]}: "
                             + robust_view.mix_summary(obj) + f". Each design costs {len(obj.cases)} evaluations, so "
                             "a search takes about as many times as long as one workload's"
                             + (f"; the cluster holds the largest workload ({cluster.gpus:,} GPUs)."
                                if cluster.gpus >= need else ".")))
        if cluster.gpus < need:
            st.warning(f"The cluster ({cluster.gpus:,} GPUs) is smaller than the largest workload of the mix needs "
                       f"({need:,} GPUs): designs cannot run it. Set the cluster size on the Constraints page.")
elif n_wl > 1 or n_sc > 1 or scen != ["baseline"]:
    st.info("The robust mode is off: the search uses the workload above only. Choose worst case or weighted mean "
            "to search across the mix.")
st.caption("A link carries the mix of samples and plans with their weights and the scenarios; uploaded files cannot "
           "travel in a link: the receiver is told which files to add.")

C.sync_url()
