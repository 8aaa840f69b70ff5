"""Design: one design in depth: topology, bill of materials, step-time distribution, where the p99 step goes,
hot spots, scaling, what-if scenarios; downloads of the design (JSON) and a one-file HTML report."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from fabric.cost.bom import floor_sentence
from pages import _common as C
from fabric.errors import FabricError
from fabric.evaluate import SCENARIO_PRESETS
from fabric.evaluate.gpu_compute import basis_notes
from fabric.evaluate.innetwork import in_network_lines
from fabric.review.figures import figure_text, figure_texts
from fabric.search.tradeoff import usd_per_ms_text
from fabric.ui_support import charts, serving_view
from fabric.search.designs import short_label
from fabric.ui_support.report import Section
from fabric.ui_support.topology_view import MAX_PER_ROW, topology_figure

ss = st.session_state
C.require_entry()
SCENARIOS = {
    "fail-spine": "one spine switch down",
    "fail-link": "one leaf-spine link down",
    "slow-switch": "one spine at half capacity",
    "checkpoint-burst": "2 TB checkpoint every 10 min per training job",
    "job-mix-shift": "1.5x the bytes of every job",
    "background-30": "30 % of every link used by other tenants",
    "fragmented": "a fragmented cluster: the job's nodes drawn at random among all, whatever the placement rule",
}
DEFAULT_SCENARIOS = ["fail-spine", "slow-switch", "checkpoint-burst", "job-mix-shift"]

st.title("Design")
C.show_url_problems()
C.context_line()
stale = C.stale_result_note()
if stale:
    st.info(stale)

choices = C.design_choices()
if not choices:
    st.error("No design to show: the allowed hardware cannot build a baseline. Check the Constraints page.")
    C.stop()
labels = [c["label"] for c in choices]
cur = ss.get("design_genes")
default = next((i for i, c in enumerate(choices) if c["genes"] == cur), 0)
if ss.get("design_pick") not in labels:
    ss["design_pick"] = labels[default]
pick = st.selectbox("Design", labels, key="design_pick",
                    help="The selected design, the recommended one and the front of the last search (when it ran in "
                         "this context), the baselines.")
entry = choices[labels.index(pick)]
if entry["genes"] != cur:
    C.select_design(entry["genes"], entry["name"])

try:
    design = C.design_from_genes(entry["genes"], entry["name"])
    record = C.record_of(design)          # every figure of this page: one record in the session's context
    bom = C.bom_dict(design)
except FabricError as err:
    st.error(f"This design cannot be evaluated: {C.public_message(err)}")
    C.stop()
ev = record.evaluation                   # the first case's (the only one unless the context is a robust mix)
first = record.primary

st.caption(f"Genes: {short_label(entry['genes'])} · {design.gpus:,} GPUs, {design.gpus_per_node} per server.")
C.calibration_line("clear_cal_design", design=design)
for status, note in basis_notes(ev):          # compute scaled to this design's GPU, or kept (unknown source GPU)
    (st.warning if status == "kept" else st.info)(C.md_text(note))
st_ = ev.step_time_s
scale, unit = charts.time_unit([st_["p50"]])
serving_only = bool(ev.serving) and all(j.get("kind") != "training" for c in record.cases
                                        for j in c.evaluation.jobs.values())
# the headline figures, from the record every page, the brief, the report and the CLI render (fabric.review)
fig_text = figure_texts({k: v for k, v in record.figures.items() if v is not None})
m = st.columns(6)
m[0].metric("Network capex", fig_text["network_capex_usd"])
m[1].metric("Per GPU", fig_text["capex_per_gpu_usd"])
m[2].metric("Network power", fig_text["network_power_w"])
if record.robust:          # a job mix: one robust p99, the step percentiles per case below
    rule = "worst case" if record.context.objective.mode == "worst" else "weighted mean"
    m[3].metric("Robust p99 step", fig_text["robust_p99_s"],
                help=f"The search's objective: the {rule} of the cases' p99 slowdowns against the reference "
                     f"baseline, in seconds of their weighted mean p99 on it (each case's figures below).")
    worst = max(record.cases, key=lambda c: c.figures["p99_s"])
    m[4].metric("Cases", f"{len(record.cases)}")
    m[5].metric("Slowest case (p99)", charts.time_text(worst.figures["p99_s"]), help=worst.name)
elif serving_only:      # a service is judged by its request latency, not by a step time
    first_sm = next(iter(ev.serving.values()))
    for col, (label, value, help_) in zip(m[3:], serving_view.serving_metrics_row(first_sm)[:3]):
        col.metric(label, value, help=help_)
else:
    m[3].metric("p50 step", fig_text["p50_s"])
    m[4].metric("p99 step", fig_text["p99_s"],
                delta=f"{st_['p99'] / st_['p50'] - 1:+.1%} vs p50", delta_color="off")
    m[5].metric("Lower bound", fig_text["lower_bound_s"],
                help=f"Bandwidth-optimal step time at line rate; bound by {ev.lower_bound_by}")
if record.robust:
    from fabric.review.document import case_rows

    T = charts.time_text
    st.dataframe(pd.DataFrame([{"case": r["case"], "weight": r["weight"], "p50 step": T(r["p50_s"]),
                                "p95 step": T(r["p95_s"]), "p99 step": T(r["p99_s"]),
                                "lower bound": T(r["lower_bound_s"])} for r in case_rows(record)]),
                 hide_index=True, width="stretch", key="case_table")
    st.caption(C.md_text(f"Each case of the mix (workload|scenario, its weight in the robust rule): the step "
                         f"percentiles exist per case only. The charts below are the first case's, {first.name}."))

# ------------------------------------------------------------------ parallelism plans


def plans_section() -> None:
    """The parallelism plans. With the plan space auto the record's own ranking: every plan of the search's
    shortlist on this design, best first (the plan every figure of the page is at). The whole plan space ranked
    exactly (fabric plans) is an exploration outside the context, shown on request and labelled so."""
    from fabric.plans.report import compute_rule_text, given_plan_name
    from fabric.ui_support.plans_view import RANKING_CAPTION, provenance_notes, ranking_frame

    T = charts.time_text
    plan = record.plan
    basis, why = C.plan_basis_or_error()
    if plan is not None:
        st.subheader("Parallelism plans")
        tried = plan["tried"]
        best = tried[0]["p99_s"]
        table = pd.DataFrame([{"": str(i) + (" (given)" if t.get("given") else ""), "plan": t["plan"],
                               "p99 step": T(t["p99_s"]), "vs best": "" if i == 1 else f"{t['p99_s'] / best - 1:+.1%}"}
                              for i, t in enumerate(tried, 1)])
        st.dataframe(table, hide_index=True, width="stretch", key="plans_table",
                     column_config={"plan": st.column_config.TextColumn("plan", width="large")})
        given = ""
        if plan.get("given_plan_slowdown") is not None and plan.get("given_plan") != plan["plan"]:
            given = f" With the workload's own plan the p99 step is {plan['given_plan_slowdown']:+.1%}."
        st.info(C.md_text(f"Every figure on this page is at the design's best plan of the search's shortlist, "
                          f"{plan['plan']} (p99 step {T(tried[0]['p99_s'])}): the same ranking as the Search page's "
                          f"plan column and the brief.{given}"))
    elif C.plans_auto() and basis is None:
        st.info(C.md_text(f"Plan space auto does not apply to this workload ({why}): this page evaluates it as "
                          "given."))
        return
    if basis is None or record.robust:
        return
    if plan is None:
        st.subheader("Parallelism plans")
    label = ("Rank the whole plan space on this design (exact, outside this context)" if plan is not None else
             "Rank the parallelism plans on this design (an exploration: this page stays at the workload's own "
             "plan)")
    if not st.toggle(label, key="rank_plans",
                     help="Every plan of the workload's model that fits the GPU's memory (TP/PP/DP/EP/CP, "
                          "micro-batches, ZeRO, rank order), evaluated on this design (fabric plans). The page's "
                          "figures stay in the context."):
        if plan is None:
            st.caption(C.md_text(f"This page evaluates the design at {given_plan_name(basis)}, the context's plan."))
        return
    try:
        ranking = C.plan_ranking(design)
    except FabricError as err:
        st.error(f"The plans cannot be ranked on this design: {C.public_message(err)}")
        return
    top = ranking.top
    if top is None:
        from fabric.plans.report import space_lines

        st.warning(C.md_text(f"No plan of {basis.model.name} fits this design's GPUs: "
                             + "; ".join(space_lines(ranking.space, C.catalog_bundle().catalog))))
        return
    table = ranking_frame(ranking)
    st.dataframe(table, hide_index=True, width="stretch", key="plans_exact_table",
                 column_config={"": st.column_config.TextColumn("", width=70),
                                "plan": st.column_config.TextColumn(
                                    "plan", width="large", help="TP x CP x PP x DP x EP (CP, EP when above 1), "
                                    "micro-batches per step of so many sequences (mb), chunks per pipeline stage "
                                    "when interleaved, ZeRO stage, rank order (fastest-varying first)"),
                                "p99 step (s)": st.column_config.NumberColumn(format="%.4f", width="small"),
                                "p50 step (s)": st.column_config.NumberColumn(format="%.4f", width="small"),
                                "compute (s)": st.column_config.NumberColumn(format="%.4f", width="small"),
                                "memory per GPU (GB)": st.column_config.NumberColumn(
                                    "memory (GB)", format="%.1f", width="small",
                                    help="Per GPU: weights, gradients, optimizer state, activations (docs/plans.md)"),
                                "vs best": st.column_config.TextColumn(width="small"),
                                "numbers": st.column_config.TextColumn(
                                    "numbers", help="measured: the trace's own plan as traced; derived: "
                                                    "synthesized from the recognised model shape")})
    notes = "; ".join(provenance_notes(table["numbers"]))
    where = ""
    if plan is not None:
        gap = top.p99_s / plan["tried"][0]["p99_s"] - 1
        where = (" The search's shortlist already holds the whole space's best here." if top.label == plan["plan"]
                 else f" The whole space's best, {top.label}, is {gap:+.1%} against the context's plan: it is not "
                      f"in the search's shortlist, so no figure of this page, the front or the brief uses it.")
    st.caption(C.md_text(f"{RANKING_CAPTION} Numbers: {notes}. Model {basis.model.name}, from {basis.source}; "
                         f"{compute_rule_text(basis)}.{where}"))


plans_section()

# ------------------------------------------------------------------ serving latency
for i, (job_name, sm) in enumerate(record.serving.items()):   # every case's serving jobs ("case: job" in a mix)
    st.subheader(f"Serving latency: {job_name}")
    tiles = serving_view.serving_metrics_row(sm)
    if serving_only and i == 0:       # (a serving-only workload's first job has its first three tiles at the top)
        tiles = tiles[3:]
    cols = st.columns(4)
    for col, (label, value, help_) in zip(cols, tiles):
        col.metric(label, value, help=help_)
    (st.warning if not sm["stable"] else st.caption)(C.md_text(serving_view.serving_sentence(job_name, sm)))
    sa, sb = st.columns(2)
    with sa:
        if sm.get("latency_vs_load"):
            st.plotly_chart(serving_view.latency_load_figure(sm["latency_vs_load"], ttft_slo_s=sm["ttft_slo_s"],
                                                             tpot_slo_s=sm["tpot_slo_s"]),
                            width="stretch", theme=None, key=f"serving_load_{job_name}")
            st.caption(f"Latency versus load on this design: p99 (solid) and p50 (dotted) time to first token and "
                       f"time per output token as the request rate approaches what the service sustains "
                       f"({sm['capacity_rps']:,.3g} requests/s); dashed: the budgets. Log scale.")
    with sb:
        st.plotly_chart(serving_view.p99_split_figure(sm), width="stretch", theme=None, key=f"serving_split_{job_name}")
        st.caption(f"Where the p99 request's time goes: queueing (waiting for a prefill slot, a decode slot or "
                   f"GPUs busy with prefills), compute, NVLink and the scale-out network. "
                   f"{sm['requests_simulated']:,} requests simulated; isolation: {sm['isolation']}.")

# ------------------------------------------------------------------ topology and BOM
left, right = st.columns([3, 2])
with left:
    st.subheader("Topology")
    view = C.topology(design, ev.hot_links)
    topo_fig = topology_figure(view)
    st.plotly_chart(topo_fig, width="stretch", theme=None, key="topo")
    st.caption(f"{view.title}. Rows: NIC groups (the NICs of one leaf), then switch tiers, each switch a square"
               + (f"; a row of more than {MAX_PER_ROW} is drawn as boxes of ranges of switches, the number above a "
                  f"box saying how many it stands for" if view.aggregated else "")
               + ". Line width grows with the cables it stands for; colour: busiest link's utilization in the p99 "
                 "step for link groups the evaluation found hot (grey: not reported).")
with right:
    st.subheader("Switches and links")
    sw = pd.DataFrame({"tier": list(bom["switches"]), "switches": list(bom["switches"].values())})
    ln = pd.DataFrame({"links": list(bom["links"]), "count": list(bom["links"].values())})
    st.dataframe(sw, hide_index=True, width="stretch")
    st.dataframe(ln, hide_index=True, width="stretch")
    st.caption("Switches per tier and physical links (one cable each) per tier pair.")

st.subheader("Bill of materials")
items = C.bom_table(bom)
st.caption(f"One row per item and place; totals are count x catalog unit price (USD), power in W excludes the "
           f"servers. Total {fig_text['network_capex_usd']}, {fig_text['network_power_w']}.")
if bom.get("partial_pod"):
    st.info(C.md_text(bom["partial_pod"]["text"]))
if floor_sentence(bom):
    st.caption(C.md_text(floor_sentence(bom)))

if design.regions:
    from fabric.ui_support.regions_view import region_table

    st.subheader("Regions")
    reg_rows, reg_lines = region_table(design, first.workload, C.catalog_bundle().catalog, ev)
    st.dataframe(pd.DataFrame(reg_rows), hide_index=True, width="stretch", key="region_table")
    st.caption(C.md_text(" ".join(reg_lines[:-1])) + " Each region owns its servers' NICs and cables, its leaves "
               "and their uplinks (and, joined through a shared core, its spines); the shared row is what joins "
               "them. Capex and power add up to the bill of materials.")

st.subheader("Racks and power")
C.rack_section(design, C.racks_of(design))

st.subheader("Cabling and rack elevations")
try:
    from fabric.ui_support.cabling_view import check_rows, plan_summary, rack_links, rack_options

    cab_plan, cab_checks = C.cabling_of(design)
except FabricError as err:
    cab_plan, cab_checks = None, []
    st.warning(f"No cabling plan for this design: {C.md_text(err)}")
if cab_plan is not None:
    st.caption(C.md_text(plan_summary(cab_plan, cab_checks)) + " Ports follow the rules fabrics are cabled by "
               "(servers in slot order, uplinks round-robin over the switches above, a fresh cage per link kind); "
               "lengths come from the floor layout; the package below holds every file (docs/cabling.md).")
    st.dataframe(check_rows(cab_checks), hide_index=True, width="stretch", key="cabling_checks", column_config={
        "check": st.column_config.TextColumn(width="medium"), "result": st.column_config.TextColumn(width="small"),
        "figures": st.column_config.TextColumn(width="large")})
    opts = rack_options(cab_plan)
    pick = st.selectbox("Rack", range(len(opts)), format_func=lambda i: opts[i][1], key="cabling_rack")
    from fabric.cabling.elevations import rack_svg

    e, t = st.columns([1, 2])
    with e:
        st.image(rack_svg(cab_plan, opts[pick][0]))
    with t:
        st.dataframe(rack_links(cab_plan, opts[pick][0]), hide_index=True, width="stretch", height=420,
                     key="cabling_rack_links")

st.subheader("Scale-up versus scale-out")
try:
    from fabric.ui_support.racks_view import traffic_rows, traffic_summary

    split = C.traffic_of(record)
except FabricError as err:
    st.caption(f"Not available: {C.public_message(err)}")
else:
    st.dataframe(pd.DataFrame(traffic_rows(split)), hide_index=True, width="stretch")
    st.caption(C.md_text(traffic_summary(split)) + " Bytes each op moves in one step of its job (a serving job: one "
               "request, its decode ops once per token step), all GPUs together: over NVLink inside the scale-up "
               "domain, or over the network (docs/evaluator.md, docs/serving.md). These are bytes moved, which can "
               "exceed the message sizes the Workload page adds up (an NVLS all-reduce of S bytes moves (1 + 1/g) "
               "x S per GPU through the NVSwitch).")

# ------------------------------------------------------------------ step time
a, b = st.columns(2)
with a:
    st.subheader("One request, unloaded" if serving_only else "Step-time distribution")
    step_fig = charts.step_time_figure(ev.step_samples_s, st_, lower_bound_s=ev.lower_bound_s)
    st.plotly_chart(step_fig, width="stretch", theme=None, key="steps")
    st.caption(f"Histogram of {ev.samples} Monte Carlo steps (bars, left axis) and their CDF (line, right axis); "
               f"dashed lines mark p50/p95/p99 (the lower bound is in the numbers above). Unit: "
               f"{charts.axis_unit(step_fig)}.")
with b:
    st.subheader("Where the p99 unloaded request goes" if serving_only else "Where the p99 step goes")
    from fabric.evaluate.explain import explain_step

    explained = explain_step(ev)
    (st.info if not explained["network_can_change"] else st.caption)(C.md_text(explained["sentence"]))
    brk = charts.p99_parts(ev)
    brk_fig = charts.breakdown_figure(brk)
    st.plotly_chart(brk_fig, width="stretch", theme=None, key="breakdown")
    exposed = sum(brk["ops"].values())
    brk_unit = charts.axis_unit(brk_fig)
    T = charts.time_text
    st.caption(f"Communication of each op not hidden behind compute in the p99 sample, longest first (axis in "
               f"{brk_unit}). The p99 step is {T(st_['p99'])}: compute {T(brk['compute_s'])} (slowest rank) plus "
               f"{T(exposed)} of exposed communication"
               + (f" and {T(brk['interference_s'])} of checkpoint interference" if brk["interference_s"] else "")
               + ".")

st.subheader("Hot spots")
hot = sorted(ev.hot_links, key=lambda h: -h.get("p99_sample_utilization", 0.0))[:10]
if hot:
    hot_df = pd.DataFrame([{"links": h["links"], "example": h["example"], "groups like it": h["groups"],
                            "links per group": h["links_per_group"],
                            "mean utilization": h["mean_utilization"],
                            "busiest link in p99 step": h["p99_sample_utilization"],
                            "ops crossing": ", ".join(h["ops"])} for h in hot])
    pct = st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0)
    st.dataframe(hot_df, hide_index=True, width="stretch",
                 column_config={"mean utilization": pct, "busiest link in p99 step": pct,
                                "ops crossing": st.column_config.TextColumn(width="large")})
    st.caption("Link groups that carry the network traffic (e.g. the uplinks of one leaf), busiest first: mean "
               "utilization over the step and the busiest link's utilization in the p99 step (share of line rate), "
               "with the ops that cross them.")
else:
    st.info("No switch-to-switch link group carries this workload's traffic (it stays inside leaves, rails or "
            "NVLink), so there are no hot spots to show.")
sharp_lines = in_network_lines(ev.ops)
if sharp_lines:
    st.caption(C.md_text("In-network reduction (SHARP): each aggregation tree holds one uplink of each leaf it "
                         "spans, which carries the leaf's share once up and the result once down. "
                         + " ".join(f"{line}." for line in sharp_lines)))

# ------------------------------------------------------------------ scaling and what-if
a, b = st.columns(2)
scal_fig = scen_fig = None
with a:
    st.subheader("Scaling efficiency")
    mode = st.radio("Scaling", ["weak", "strong"], horizontal=True, key="scaling_mode",
                    format_func={"weak": "weak: data parallelism grows, work per GPU fixed",
                                 "strong": "strong: fixed global batch"}.get, label_visibility="collapsed")
    if mode == "weak":
        try:
            rows = record.scaling()
        except FabricError as err:
            st.info(f"Scaling cannot be evaluated for this design: {C.public_message(err)}")
            rows = []
        if rows:
            scal_fig = charts.scaling_figure(rows)
            st.plotly_chart(scal_fig, width="stretch", theme=None, key="scaling")
            st.caption("Weak scaling: data parallelism and the fabric grown 2x and 4x; bars are step throughput "
                       "relative to linear (100 % = no loss) at p50 and p99.")
    elif (ss.get("wl_choice") or {}).get("kind") != "plan":
        st.info("Strong scaling re-plans the workload at each size, so it needs a parallelism plan: choose "
                "**Parallelism plan** (llama3-70b or mixtral-8x7b) on the Workload page.")
    else:
        g = design.gpus
        x1, x2, x3 = st.columns([2, 1, 1])
        counts_text = x1.text_input("GPU counts (ascending; the first is the reference)",
                                    value=f"{g},{2 * g},{4 * g}", key="strong_counts")
        vstages = x2.number_input("Virtual stages", min_value=1, max_value=64, value=None, step=1,
                                  key="strong_vstages", placeholder="plan's",
                                  help="Interleaved 1F1B: model chunks per pipeline stage (1 = plain 1F1B); empty = "
                                       "the plan's own.")
        gbatch = x3.number_input("Global batch", min_value=1, value=None, step=1, key="strong_gb",
                                 placeholder="auto", help="Sequences per optimizer step, fixed at every count; "
                                                          "empty = the smallest valid batch at least the plan's.")
        try:
            counts = tuple(int(t.strip().replace(",", "")) for t in counts_text.split(",") if t.strip())
        except ValueError:
            st.error(f"GPU counts: {counts_text!r} is not a comma-separated list of whole numbers, e.g. "
                     f"{g},{2 * g},{4 * g}")
            counts = ()
        if counts:
            try:
                srows_ = C.strong_scaling_rows(design, counts, None if gbatch is None else int(gbatch),
                                               None if vstages is None else int(vstages))
            except FabricError as err:
                st.error(f"Strong scaling: {C.public_message(err)}")
            else:
                scal_fig = charts.strong_scaling_figure(srows_)
                st.plotly_chart(scal_fig, width="stretch", theme=None, key="strong_scaling")
                last = srows_[-1]
                st.caption(f"Strong scaling at a fixed global batch of {last['global_batch']:,} sequences: each bar "
                           f"is the p99 step at that size, split into the efficiency kept against linear speed-up "
                           f"from {srows_[0]['gpus']:,} GPUs and the shares lost to the pipeline bubble "
                           f"({srows_[0]['bubble_fraction']:.1%} -> {last['bubble_fraction']:.1%} of compute with "
                           f"{last['virtual_stages']} virtual stage(s)), to stragglers and to the network.")
with b:
    st.subheader("What if")
    scen = st.multiselect("Scenarios", list(SCENARIOS), default=DEFAULT_SCENARIOS, key="scenarios",
                          help="; ".join(f"{k}: {v}" for k, v in SCENARIOS.items()))
    srows, skipped = [], []
    which = "robust p99" if record.robust else "p99"
    for s in scen:
        w = record.what_if(SCENARIO_PRESETS[s])        # kept with the record: the brief shows the same
        if w["not_applicable"]:
            skipped.append(f"{s}: not applicable: {w['not_applicable']}.")
            continue
        if w["p99_s"] is None:
            st.warning(f"{s}: {C.public_message(w.get('error', 'no result'))}")
            continue
        if not math.isfinite(w["p99_s"]):
            st.warning(f"{s}: no finite step time under this scenario (the fabric may be cut in two, e.g. its only "
                       "spine failed); left out of the chart.")
            continue
        p50_after = w["p50_by_case"][first.name]
        srows.append({"scenario": s, "p50_s": p50_after, "p99_s": w["p99_s"],
                      "delta_p50": p50_after / first.figures["p50_s"] - 1, "delta_p99": w["change"]})
    if srows:
        scen_fig = charts.scenario_figure(srows)
        st.plotly_chart(scen_fig, width="stretch", theme=None, key="scen_chart")
        st.caption("Change of the p99 step time under each scenario against the healthy fabric, in % (red: "
                   "slower, green: faster, grey: unchanged).")
    if skipped:
        st.info(C.md_text(" ".join(skipped)))
report_scenario_table = None
if srows:
    # the same unit as the step-time charts above, so the table, the charts and the captions agree
    p99_word = "robust p99" if record.robust else "p99"
    p50_word = f"p50 on {first.name}" if record.robust else "p50"
    sdf = pd.DataFrame([{"scenario": r["scenario"], "what happens": SCENARIOS[r["scenario"]],
                         f"{p50_word} before ({unit})": st_["p50"] * scale,
                         f"{p50_word} after ({unit})": r["p50_s"] * scale,
                         f"{p99_word} before ({unit})": record.p99_s * scale,
                         f"{p99_word} after ({unit})": r["p99_s"] * scale,
                         f"{p99_word} change": f"{r['delta_p99']:+.1%}"} for r in srows])
    num = st.column_config.NumberColumn(format="%.4g")
    st.dataframe(sdf, hide_index=True, width="stretch",
                 column_config={c: num for c in sdf.columns if c.endswith(f"({unit})")})
    st.caption(f"Before/after step times in {unit} for each what-if scenario (same seed, so the change is the "
               "scenario's, not noise).")
    report_scenario_table = sdf

# ------------------------------------------------------------------ resilience and cost per step
from fabric.cost.economics import economics  # noqa: E402

a, b = st.columns(2)
with a:
    st.subheader("Single failures")
    try:
        fails = record.failures          # every case's single failures, kept with the record
        res_ = fails["primary"]
    except FabricError as err:
        st.info(f"Failures cannot be evaluated on this design: {C.public_message(err)}")
        fails = res_ = None
    if res_ is not None:
        from fabric.failures.text import RULE_TEXT, evaluated_failures, uplinks_text, uplinks_value, verdict_text

        (st.success if res_["survives_single_failure"] else st.error)(C.md_text(
            verdict_text(res_) + ("" if res_["survives_single_failure"] else
                                  " The search rejects such designs unless survive_single_failure is off.")))
        r1, r2 = st.columns(2)
        r3, r4 = st.columns(2)
        for col, f in zip((r1, r2), evaluated_failures(res_)):
            label = f"p99, worst {f['what']} failure"
            above = f"A {f['what']} above the leaves (spine, core or between them), the worst of those tried"
            if f["state"] == "evaluated":
                change = f["p99_s"] / st_["p99"] - 1
                same = abs(change) < 0.0005          # no arrow for no change (never a red "+0.0 %")
                col.metric(label, figure_text(f["p99_s"], "time"), delta="no change" if same else f"{change:+.1%}",
                           delta_color="off" if same else "inverse", delta_arrow="off" if same else "auto",
                           help=f"{above}: failing {f['failed']}, evaluated with the same seed.")
            else:
                col.metric(label, "partitions" if f["state"] == "partitions" else "none",
                           help=f"{above}: failing {f['failed']}." if f["failed"] else
                           f"This design has {f['none_text']}.")
        r3.metric("Uplink switches per leaf", uplinks_value(res_),
                  help=uplinks_text(res_)[0].upper() + uplinks_text(res_)[1:] + " (N of N+1 redundancy).")
        r4.metric(f"GPUs out of the job (of {res_['gpus']:,})",
                  f"{res_['gpus_lost_on_worst_switch_failure']:,}",
                  help=(f"After the worst single failure, {res_['worst_switch_out']}: "
                        f"{res_['gpus_cut_off_on_worst_switch_failure']:,} GPUs lose every NIC port, so "
                        f"{res_['servers_out_on_worst_switch_failure']:,} servers leave the job." if
                        res_["worst_switch_out"] else "No single switch cuts a GPU off the network."))
        if record.robust:
            pf = fails["p99_failure_s"]
            st.caption(C.md_text(f"The figures above are {first.name}'s. Over the whole mix, the robust p99 under "
                                 f"the worst single failure is "
                                 + (f"{charts.time_text(pf)} ({pf / record.p99_s - 1:+.1%})." if pf < 1e8 else
                                    "unbounded: a failure partitions the fabric for some case.")))
        st.caption(f"Switch failures above the leaves are evaluated, not guessed: each is applied to the cabling and "
                   f"the workload evaluated again (same seed). {RULE_TEXT}")
with b:
    st.subheader("Cost per step")
    eco = economics(ev, design, catalog=record.context.catalog, params=record.context.constraints.economics())
    e1, e2, e3 = st.columns(3)
    e1.metric("Cost per robust p99 step" if record.robust else "Cost per p99 step", fig_text["usd_per_step"],
              help="Servers and network amortized, plus power x PUE x electricity, times the "
                   + ("robust p99 step" if record.robust else "p99 step"))
    e2.metric("Cluster cost per hour", fig_text["usd_per_hour"])
    idle = eco["gpu_idle_fraction_network"]
    e3.metric("GPU time waiting on the network" + (f" ({first.name})" if record.robust else ""),
              figure_text(idle, "share"),
              help="Exposed scale-out communication and checkpoint interference in the p99 step")
    p = eco["params"]
    st.caption(f"{p['life_years']:g}-year life, ${p['electricity_usd_per_kwh']:g} per kWh, PUE {p['pue']:g} (set on "
               f"the Constraints page's limits file or with fabric evaluate flags); the network is "
               f"{eco['network_usd_per_step'] / eco['usd_per_step']:.1%} of the cost per step"
               + (f" on {first.name}" if record.robust else "") + f"; waiting on it costs "
               f"${eco['idle_usd_per_step']:,.2f} per step.")

# ------------------------------------------------------------------ cheapest fixes
st.subheader("Cheapest fixes")
try:
    adv = record.fixes        # judged in the context: the robust p99, or each design at its best plan
except FabricError as err:
    st.info(f"The advisor cannot run on this design: {C.public_message(err)}")
    adv = None
if adv is not None:
    st.markdown(C.md_text(adv["answer"][0].upper() + adv["answer"][1:] + "."))
    free = adv["best_free_policy"]["sentence"]       # the same function and sentence as Compare's "Free first"
    st.markdown(C.md_text(free[0].upper() + free[1:] + f" ({adv['best_free_policy']['tried']} policies tried)."))
    if adv["advice"]:
        scale_a, unit_a = charts.time_unit([abs(a["delta_p99_s"]) for a in adv["advice"]])
        fix_df = pd.DataFrame([{"change": a["change"], "kind": a["kind"],
                                f"p99 change ({unit_a})": a["delta_p99_s"] * scale_a,
                                "cost change (USD)": a["delta_cost_usd"],
                                "price of the p99 saved": usd_per_ms_text(a["delta_cost_usd"], a["delta_p99_s"],
                                                                          adv["p99_s"])} for a in adv["advice"]])
        st.dataframe(fix_df, hide_index=True, width="stretch",
                     column_config={f"p99 change ({unit_a})": st.column_config.NumberColumn(format="%+.4g"),
                                    "cost change (USD)": st.column_config.NumberColumn(format="dollar"),
                                    "change": st.column_config.TextColumn(width="large")})
    st.caption(("Every single change of this design judged by the robust p99 over the whole mix (the search's "
                "objective), same seed: " if record.robust else
                "Every single change of this design, each at its own best plan of the shortlist, same seed: "
                if record.plan is not None else
                "Every single change of this design evaluated on the same workload and seed: ")
               + "free policy changes "
               "(routing, queue pairs, placement rule, PXN) first, by p99 saved; then hardware (lower "
               "oversubscription, a second plane, faster NICs, a storage network) by dollars per millisecond of p99 "
               "saved. Changes that save under 0.5 % of the p99 are left out (`fabric advise` lists them).")

# ------------------------------------------------------------------ packet-level check (ns-3)


def _packet_op(design) -> tuple[int | None, str]:
    """The first op of the workload the packet-level check can run on ``design``, or None and why not."""
    from fabric.topology import build_fabric
    from fabric.validate.packet import MAX_ENDPOINTS, op_slice, slice_flows

    if design.gpus_per_node != 1:
        return None, (f"it simulates network flows only, one GPU per server, and this design has "
                      f"{design.gpus_per_node} GPUs per server (set GPUs per server to 1 on the Constraints page "
                      f"for a small slice)")
    wl = C.workload_bundle().workload
    ops = [(j, o) for j in wl.jobs if j.kind != "storage" for o in j.ops]
    if not any(j.group(o.group).size <= MAX_ENDPOINTS for j, o in ops):
        return None, f"no op of this workload runs on a group of at most {MAX_ENDPOINTS} ranks (ns-3 is slow)"
    try:
        fab = build_fabric(design, C.catalog_bundle().catalog)
    except FabricError as err:
        return None, f"the design cannot be built for it ({err})"
    for k, (j, o) in sorted(enumerate(ops), key=lambda kv: kv[1][1].bytes):    # the smallest op runs fastest
        if j.group(o.group).size > MAX_ENDPOINTS:
            continue
        try:
            _, job1, op1 = op_slice(wl, k)
            slice_flows(fab, design, job1, op1)
        except FabricError:
            continue
        return k, f"op {k}: {o.kind} of {o.bytes:,.0f} B on group {o.group!r} ({j.group(o.group).size} ranks)"
    return None, "no op of this workload is a single-phase network op the packet-level simulation can run"


def _packet_worker(box: dict, design, workload, catalog, op_index: int, routing: str) -> None:
    from fabric.validate import run_packet

    try:
        box["result"] = run_packet(design, workload, catalog=catalog, op_index=op_index, routing=routing)
    except FabricError as err:
        box["error"] = " ".join(str(err).split())
    except Exception as err:  # shown as a message, never a traceback
        box["error"] = f"internal error: {type(err).__name__}: {err}"
    box["done"] = True


with st.expander("Packet-level check (ns-3)"):
    from fabric.validate import ns3_available

    if not ns3_available():
        st.info("The packet-level check needs ns-3's Python bindings: `pip install .[packet]`.")
    else:
        op_k, why = (None, "") if design.gpus > 4096 else _packet_op(design)
        if op_k is None:
            st.info("Not offered for this design: the packet-level simulation runs one op on at most 64 endpoints; "
                    + (why or f"this design has {design.gpus:,} GPUs") + ".")
        else:
            routing = design.routing if design.routing in ("ecmp", "spray") else "spray"
            pkey = (C._design_json(design), C.workload_bundle().key, op_k, routing)
            box = ss.get("packet_check")
            st.caption(f"Runs {why} in ns-3 on this design's cabling ({routing} routing) on a background thread "
                       "(importing ns-3 takes ~20 s) and compares it with the fluid bound and the evaluator.")
            if st.button("Run packet-level check", key="packet_run", disabled=bool(box and box["key"] == pkey
                                                                                   and not box.get("done"))):
                import threading

                box = {"key": pkey, "done": False}
                ss["packet_check"] = box
                threading.Thread(target=_packet_worker, name="fabric-packet", daemon=True,
                                 args=(box, design, C.workload_bundle().workload, C.catalog_bundle().catalog, op_k,
                                       routing)).start()

            @st.fragment(run_every=1.0)
            def _packet_poll() -> None:
                if ss["packet_check"].get("done"):
                    st.rerun()
                st.info("Packet-level simulation running...")

            if box and box["key"] == pkey:
                if not box.get("done"):
                    _packet_poll()
                elif box.get("error"):
                    st.error(f"The packet-level check failed: {C.public_message(box['error'])}")
                else:
                    r = box["result"]
                    sc, un = charts.time_unit([r.packet_s])
                    q = st.columns(4)
                    q[0].metric(f"Packet level, ns-3 ({un})", f"{r.packet_s * sc:,.4g}")
                    q[1].metric(f"Fluid bound ({un})", f"{r.fluid_s * sc:,.4g}")
                    q[2].metric(f"Flow level, evaluator p50 ({un})", f"{r.evaluator_p50_s * sc:,.4g}")
                    q[3].metric("Relative error", f"{r.rel_error:+.1%}")
                    st.caption(f"{r.flows} flows; relative error = evaluator p50 / packet level - 1; the fluid bound "
                               f"is the same flows' max-min time on the same paths ({r.fluid_gap:+.1%} to ns-3). "
                               "See docs/validation-packet.md.")

# ------------------------------------------------------------------ downloads


# Everything the report shows is taken now, while the page runs: Streamlit calls the download's data function
# later, outside this script run, where the session's state cannot be read.
report_genes = short_label(entry["genes"])
report_scenarios = tuple(scen)
report_hot = hot_df if hot else None


def _report() -> str:
    """The design's record as one small HTML file: the same sentences as the brief's record sections (context,
    each case, plan, serving, bill of materials, resilience, the what-ifs picked above, cheapest fixes, cost per
    step), static charts and the tables of switches, links and hot spots (fabric.review.document)."""
    from fabric.review.document import design_sections, record_facts
    from fabric.ui_support.brief_view import record_html

    d = record_facts(record, what_ifs=report_scenarios)
    tables = [Section("Switches and links", "Switches per tier and physical links (one cable each) per tier pair.",
                      pd.concat([sw.rename(columns={"tier": "item", "switches": "count"}),
                                 ln.rename(columns={"links": "item"})], ignore_index=True), {"count": "count"}),
              Section("Bill of materials, item by item", "Count x catalog unit price (USD); power in W.", items,
                      {"unit price (USD)": "usd", "total (USD)": "usd", "count": "count", "power (W)": "count"})]
    if design.regions:
        tables.insert(1, Section("Regions", " ".join(reg_lines), pd.DataFrame(reg_rows), {}))
    if report_hot is not None:
        tables.append(Section("Hot spots", "Busiest link groups: utilization as a share of line rate.", report_hot,
                              {"mean utilization": "percent", "busiest link in p99 step": "percent",
                               "groups like it": "count", "links per group": "count"}))
    return record_html(d, design_sections(d), facts=[f"Genes: {report_genes}"], tables=tables,
                       title=f"fabric design report: {design.name}")


st.subheader("Share")
C.design_downloads(design, bom, "dl")
x, y = st.columns([1, 2])
x.download_button("Report (one HTML file)", _report, file_name="design_report.html", mime="text/html",
                  key="dl_report", on_click="ignore", width="stretch")
y.caption("The page's link (browser address bar) reproduces this view: workload, constraints and design. The "
          "report embeds its charts and opens offline; the CSV has one row per item of the bill of materials.")


def _package() -> bytes:
    """The design package (fabric.cabling.package): the design, bill of materials, cabling plan, elevations, NetBox
    files, the ASTRA-sim input of the evaluated workload's training step and this design's report as its brief."""
    from fabric.cabling.package import package_bytes

    data, _ = package_bytes(design, C.catalog_bundle().catalog, brief_html=_report(),
                            plan=cab_plan, workload=first.workload)
    return data


if cab_plan is not None:
    p, q = st.columns([1, 2])
    p.download_button("Design package (zip)", _package, file_name="design_package.zip", mime="application/zip",
                      key="dl_package", on_click="ignore", width="stretch")
    q.caption("One zip a team builds from: design, bill of materials, cabling plan and each rack's links, the "
              "audit's port mapping, rack elevations (SVG), NetBox bulk-import CSVs, this report as the brief, and "
              "the workload's training step as ASTRA-sim 2.x input (astra-sim/README.txt says what the simulator "
              "cannot express).")


C.sync_url()
