"""Compare: two to four designs side by side: cost, power, step-time percentiles, overlaid CDFs, the genes that
differ, and what the extra money buys."""

from __future__ import annotations

import streamlit as st

from pages import _common as C
from fabric.errors import FabricError
from fabric.evaluate.gpu_compute import basis_notes
from fabric.ui_support import charts, serving_front
from fabric.ui_support.compare import gene_frame, metrics_frame, money_deltas, money_split
from fabric.search.designs import design_genes, short_label

ss = st.session_state
C.require_entry()

st.title("Compare", help="Designs side by side: their genes, bills of materials, step-time distributions and what the money buys.")
C.show_url_problems()
C.context_line()
stale = C.stale_result_note()
if stale:
    st.info(stale)

choices = C.design_choices()
labels = [c["label"] for c in choices]
by_label = {c["label"]: c for c in choices}
if "compare_pick" not in ss:
    want = [c for g in ss.get("compare_genes") or [] for c in choices if c["genes"] == g]
    if len(want) < 2:
        base = [c for c in choices if c["source"] == "baseline"]
        rec = [c for c in choices if c["source"] == "recommended"]
        sel = [c for c in choices if c["source"] == "selected"]
        want = (base[:1] + (rec or sel or base[1:])[:1]) if base else choices[:2]
    ss["compare_pick"] = [c["label"] for c in want][:4]
ss["compare_pick"] = [p for p in ss["compare_pick"] if p in labels]
picked = st.multiselect("Designs (2 to 4; the first is the reference)", labels, key="compare_pick",
                        max_selections=4)
st.caption("By default the fat-tree baseline against the recommended design of the last search (or the selected "
           "design). Run a search to add its front designs to the list.")
ss["compare_genes"] = [by_label[p]["genes"] for p in picked]
if len(picked) < 2:
    st.warning("Pick at least two designs to compare.")
    C.stop()

ctx, why = C.context_or_error()
if ctx is None:
    st.error(f"No context to compare the designs in: {why}")
    C.stop()
plans_note = ("Plan space auto: each design is compared at its own best plan of the search's shortlist (row "
              "'parallelism plan'), not at the workload's own plan." if ctx.kind == "plans" else "")
if plans_note:
    st.info(plans_note)
rows, samples, designs, records = [], {}, {}, {}
serving_only = serving_front.is_serving_only(C.workload_bundle().workload)   # its "step" is one unloaded request
serving = serving_front.has_serving(C.workload_bundle().workload) or any(
    j.serving is not None for c in ([] if ctx.kind != "robust" else ctx.cases()) for j in c[1].jobs)
for p in picked:
    entry = by_label[p]
    try:
        d = C.design_from_genes(entry["genes"], entry["name"])
        rec = C.record_of(d)             # the design's record in the session's context (fabric.review)
    except FabricError as err:
        st.error(f"{p}: {C.public_message(err)}")
        continue
    name = entry["name"]
    while name in designs:
        name += "'"
    designs[name], records[name] = d, rec
    ev = rec.evaluation
    samples[name] = ev.step_samples_s
    step = {"p99": rec.p99_s} if rec.robust else dict(ev.step_time_s)
    rows.append({"name": name, "cost_usd": float(rec.row["cost_usd"]), "power_w": float(rec.row["power_w"]),
                 "step_time_s": step, "lower_bound_s": ev.lower_bound_s, "serving": rec.serving,
                 "serving_only": serving_only, "compute_s": None if rec.robust else ev.compute_s,
                 "compute_notes": basis_notes(ev), "robust": rec.robust,
                 "p99_by_case": {c.name: c.figures["p99_s"] for c in rec.cases},
                 "plan": rec.plan["plan"] if rec.plan else None})
if len(rows) < 2:
    C.stop()

st.subheader("Side by side")
st.dataframe(metrics_frame(rows), width="stretch")
st.caption(("One column per design (full names), network capex, network power, the robust p99 (the search's "
            "objective over the job mix) and every case's p99, "
            if ctx.kind == "robust" else "One column per design (full names), network capex, network power, ")
           + ("each serving job's p99 time to first token (TTFT) and per output token (TPOT) in ms at its offered "
              "load and its SLO attainment in %, " if serving else "")
           + ("the unloaded request's percentiles (one request's critical path, no queueing) and the lower bound "
              if serving_only else "step-time percentiles and the lower bound ")
           + "(each in its unit), from the same workload, seed and samples as every page (fabric.review.figures); compute "
             "per step on each design's GPU; "
           + ("each design at its own best parallelism plan." if plans_note else
              "every design at the workload's own parallelism plan."))
for status, note in dict.fromkeys(n for r in rows for n in r["compute_notes"]):
    (st.warning if status == "kept" else st.info)(C.md_text(note))
st.subheader("Unloaded request CDFs" if serving_only else "Step-time CDFs")
st.plotly_chart(charts.cdf_overlay_figure(samples, height=360 + 24 * len(samples),
                                          what="unloaded request" if serving_only else "step"),
                width="stretch", theme=None, key="cmp_cdf")
st.caption(("Share of unloaded requests (critical path, no queueing)" if serving_only else "Share of steps")
           + " finishing within a time (x); a curve further left is faster, dots mark each design's p99.")



def _words(text: str) -> str:
    """A sentence of the money split in the workload's terms: a serving-only workload has no step."""
    if not serving_only:
        return text
    return text.replace("p99 step-time", "p99 unloaded-request time").replace("p99 step", "p99 unloaded request")


st.subheader("What money buys")
ref_name, ref_design = next(iter(designs.items()))
try:
    from fabric.review import context_judge

    judge = context_judge(ctx, records[ref_name])       # each design on the way judged in the context
    summary = records[ref_name].best_free_fix            # the record's: the Design page's and the brief's sentence
    splits = {x["design"]: x for x in money_split(designs, judge)}
except FabricError as err:
    st.error(f"The free-policy split could not be evaluated: {C.public_message(err)}")
    summary, splits = None, {}
if summary is not None:
    st.markdown(f"- **Free first** ('{C.md_text(ref_name)}', {summary['tried']} policies tried): "
                f"{C.md_text(_words(summary['sentence']))}.")
for d in money_deltas(rows):
    parts = [f"- {C.md_text(_words(d['sentence']))}"]
    parts += [f"    - {C.md_text(_words(line[0].upper() + line[1:]))}"
              for line in splits.get(d["design"], {}).get("sentences", [])]
    st.markdown("\n".join(parts))
st.caption(_words("Each design against the first one picked: capex difference in USD and p99 step-time difference, "
                  "split in two steps that add up: the free policy (routing, queue pairs, placement rule, PXN) of the "
                  "design on the first design's hardware, at no cost; then the hardware, on the same policy, which the "
                  "whole capex difference buys (dollars per millisecond of p99 it saves). 'Free first' is the best "
                  "free policy on the first design's hardware, before any money is spent.")
           + (" Plan space auto: every design on the way is judged at its own best plan of the search's "
              "shortlist." if plans_note else "")
           + (" Robust mix: every design on the way is judged by its robust p99." if ctx.kind == "robust" else ""))

st.subheader("Genes")
only = st.toggle("Only the genes that differ", value=True, key="cmp_only_diff")
st.dataframe(gene_frame(designs, only_differences=only), hide_index=True, width="stretch")
st.caption("Design decisions gene by gene (one column per design, in the order picked), hardware first, then "
           "free policy ('kind'); 'differs' marks the decisions that set the designs apart.")
for name, d in designs.items():
    st.caption(f"**{C.md_text(name)}**: {C.md_text(short_label(design_genes(d)))}")

C.sync_url()
