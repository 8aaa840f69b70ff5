"""Calibrate: fit the evaluator's transport parameters to measured collective times (nccl-tests outputs, NCCL logs
with a result table, per-op CSVs with timings), show the fit and its errors, and apply it to the session so the
Search and Design pages evaluate with it."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st

from pages import _common as C
from fabric.catalog import default_catalog
from fabric.errors import FabricError
from fabric.ui_support.uploads import UploadArea

ss = st.session_state
C.require_entry()

TRACES_DIR = Path(os.environ.get("FABRIC_TRACES_DIR", C.ROOT.parent / "shared" / "traces"))
REAL_DIR = TRACES_DIR / "nccl_tests"
FROM_FILE = "from the file"


@st.cache_data(show_spinner="Fitting the transport profile...", max_entries=32)
def fit_files(files: tuple, gpu_model: str | None, nic_gbps: float | None) -> dict:
    """Load and fit ``files`` (name, bytes) pairs; keyed by their content and the system hints.

    The readers need files on disk: the uploads go to a private temporary folder that is deleted afterwards
    (:class:`~fabric.ui_support.uploads.UploadArea`), and messages never show that folder.

    Returns ``{"errors": [(name, message)], "fit_error": str | None, "result": CalibrationResult | None,
    "profile_json": str | None}``; never raises for bad input.
    """
    from fabric.calibrate import CalibrationError, fit_profile, load_measurements, save_profile

    out = {"errors": [], "fit_error": None, "result": None, "profile_json": None}
    hints = {"gpu_model": gpu_model, "nic_gbps": nic_gbps}
    with UploadArea(prefix="fabric-cal-") as area:
        good = []
        for name, data in files:
            path = area.write(name, data)
            try:
                load_measurements([path], **hints)
            except (CalibrationError, FabricError, ValueError, OSError) as err:
                out["errors"].append((name, C.public_message(area.scrub(err))))
            except Exception as err:  # a parser bug must not show a traceback
                out["errors"].append((name, f"could not be read ({type(err).__name__}: "
                                            f"{C.public_message(area.scrub(err))})"))
            else:
                good.append((name, path))
        if not good:
            return out
        names = tuple(n for n, _ in good)
        try:
            ms = load_measurements([p for _, p in good], **hints)
            res = fit_profile(ms, sources=names)
            res = replace(res, notes=tuple(area.scrub(n) for n in res.notes))
            prof = save_profile(res, area.write("profile.json", b""))
            out["profile_json"] = prof.read_text(encoding="utf-8")
            out["result"] = res
        except (CalibrationError, FabricError, ValueError) as err:
            out["fit_error"] = C.public_message(area.scrub(err))
        except Exception as err:
            out["fit_error"] = f"the fit failed ({type(err).__name__}: {C.public_message(area.scrub(err))})"
    return out


def real_files() -> list[Path]:
    if not REAL_DIR.is_dir():
        return []
    return sorted(p for p in REAL_DIR.rglob("*") if p.is_file() and not p.name.startswith("."))


st.title("Calibrate", help="Fits the efficiency and latency (alpha) of the level the measurements exercised (NVLink "
                           "inside a server, the network across servers) plus a scale per message-size regime, by "
                           "relative least squares, using the evaluator's own collective model. See "
                           "docs/validation.md.")
C.show_url_problems()
st.caption("Measured collective times (nccl-tests output, an NCCL log with its result table, or a per-op CSV with "
           "timings; `.gz` too) -> the evaluator's transport parameters. **Apply to this session** makes the Search "
           "and Design pages use them.")
C.calibration_line("clear_cal_calibrate")



@st.cache_data(show_spinner="Comparing the measured change with the prediction...", max_entries=16)
def rollout_report(before: tuple, after: tuple, d0_json: str, d1_json: str, tolerance: float, cat_key: str,
                   _catalog, overrides_json: str) -> dict:
    """Read both sides, predict, compare; ``{"error": str}`` or ``{"report": dict}`` (never raises)."""
    from fabric.design import design_from_dict
    from fabric.calibrate.rollout import rollout_check
    from fabric.workload.ingest import ingest

    sides = []
    for label, files in (("before", before), ("after", after)):
        res = ingest(list(files))
        bad = [f"{f.name}: {C.public_message(f.error)}" for f in res.files if not f.ok]
        if bad or res.workload is None:
            return {"error": f"the '{label}' files could not be read: " + "; ".join(bad or ["no workload"])}
        sides.append(res.workload)
    try:
        rep = rollout_check(sides[0], sides[1], before_design=design_from_dict(json.loads(d0_json)),
                            after_design=design_from_dict(json.loads(d1_json)), tolerance=tolerance,
                            catalog=_catalog, transport_overrides=json.loads(overrides_json), samples=64)
    except FabricError as err:
        return {"error": C.public_message(err)}
    return {"report": rep.to_dict()}


with st.expander("Before/after rollout check: did a change do what fabric predicted?"):
    st.caption("Upload what was measured before and after a change (rank traces with ProfilerStep markers, or "
               "nccl-tests runs) and pick the design each ran on: fabric predicts the change from them and flags "
               "the model as drifted when its prediction is off by more than the tolerance "
               "(`fabric rollout` does the same from the command line).")
    u0, u1 = st.columns(2)
    up_b = u0.file_uploader("Measured before", accept_multiple_files=True, key="roll_before")
    up_a = u1.file_uploader("Measured after", accept_multiple_files=True, key="roll_after")
    choices = C.design_choices()
    labels = [c["label"] for c in choices]
    if labels:
        d0_label = u0.selectbox("Design before", labels, key="roll_d0")
        d1_label = u1.selectbox("Design after", labels, index=min(1, len(labels) - 1), key="roll_d1")
    tol = st.slider("Tolerance (|predicted / measured change - 1|)", 0.02, 0.5, 0.15, 0.01, key="roll_tol",
                    format="%.2f")
    if not labels:
        st.info("No design to compare on: the allowed hardware cannot build one (Constraints page).")
    elif up_b and up_a:
        try:
            d0 = C.design_from_genes(choices[labels.index(d0_label)]["genes"])
            d1 = C.design_from_genes(choices[labels.index(d1_label)]["genes"])
        except FabricError as err:
            st.error(f"The design cannot be built: {C.public_message(err)}")
        else:
            cb = C.catalog_bundle()
            out = rollout_report(tuple((f.name, f.getvalue()) for f in up_b), tuple((f.name, f.getvalue())
                                                                                    for f in up_a),
                                 C._design_json(d0), C._design_json(d1), float(tol), cb.key, cb.catalog,
                                 json.dumps(C.calibration_overrides(), sort_keys=True))
            if "error" in out:
                st.error(f"Rollout check: {out['error']}")
            else:
                rep = out["report"]
                (st.error if rep["drifted"] else st.success)(C.md_text(rep["summary"]))
                rows = pd.DataFrame([{"what": r["what"], "measured change": f"{r['measured_ratio'] - 1:+.1%}",
                                      "predicted change": f"{r['predicted_ratio'] - 1:+.1%}",
                                      "drift": f"{r['drift']:+.1%}"} for r in rep["rows"]])
                C.table(rows, hide_index=True, width="stretch")
                for n in rep["notes"]:
                    st.caption(C.md_text(n))
    else:
        st.info("Upload both sides to compare.")


@st.cache_data(show_spinner="Auditing the job...", max_entries=8)
def audit_report(traces: tuple, counters: tuple, mapping, design_json: str | None, cat_key: str, _catalog) -> dict:
    """The audit of the uploads (``fabric.ui_support.audit_view.run_audit``); never raises."""
    from fabric.design import design_from_dict
    from fabric.ui_support.audit_view import run_audit

    try:
        design = design_from_dict(json.loads(design_json), catalog=_catalog) if design_json else None
    except FabricError as err:
        return {"error": f"the design: {C.public_message(err)}"}
    return run_audit(traces, counters, mapping, design, catalog=_catalog)


NO_DESIGN, SESSION_DESIGN, DESIGN_FILE = "none (measured figures only)", "a design of this session", "a design file"

with st.expander("Audit a running job: measured step times and link counters against the model",
                 expanded=bool(ss.get("audit_traces"))):
    st.caption("Per-rank PyTorch profiler (Kineto) traces of one job give the measured step times (p50/p95/p99), "
               "each rank's wait for a late peer, stragglers and exposed communication; with the installed design, "
               "measured against predicted per collective; with switch counters (Prometheus text or range-query "
               "JSON, or the CSV timestamp,switch,port,bytes,ecn_marks,pause_frames,drops[,speed_bps]) and a port "
               "-> link mapping (switch,port,link), the measured hot links beside the predicted ones. "
               "`fabric audit` does the same from the command line; docs/audit.md has the rules.")
    ua, ub = st.columns(2)
    up_tr = ua.file_uploader("Per-rank traces", accept_multiple_files=True, key="audit_traces")
    up_ct = ub.file_uploader("Switch counters (optional)", accept_multiple_files=True, key="audit_counters")
    up_map = ub.file_uploader("Port -> link mapping (with counters)", key="audit_mapping")
    dsrc = ua.radio("Installed design", [NO_DESIGN, SESSION_DESIGN, DESIGN_FILE], key="audit_design_src",
                    horizontal=True)
    design_json = None
    design_problem = None
    cb = C.catalog_bundle()
    if dsrc == SESSION_DESIGN:
        a_choices = C.design_choices()
        a_labels = [c["label"] for c in a_choices]
        if not a_labels:
            design_problem = "no design in this session: the allowed hardware cannot build one (Constraints page)"
        else:
            a_pick = ua.selectbox("Design", a_labels, key="audit_design")
            try:
                design_json = C._design_json(C.design_from_genes(a_choices[a_labels.index(a_pick)]["genes"]))
            except FabricError as err:
                design_problem = f"the design cannot be built: {C.public_message(err)}"
    elif dsrc == DESIGN_FILE:
        up_d = ua.file_uploader("Design file (.json, .yaml)", key="audit_design_file")
        if up_d is not None:
            from fabric.design import load_design

            try:
                design_json = C._design_json(load_design(up_d.getvalue().decode("utf-8", "replace"),
                                                         catalog=cb.catalog))
            except FabricError as err:
                design_problem = f"{up_d.name}: {C.public_message(err)}"
    if design_problem:
        st.error(f"Installed design: {design_problem}")
    elif not up_tr:
        st.info("Upload the per-rank trace files of one job (several ranks, several steps) to audit it.")
    else:
        from fabric.ui_support import audit_view as AV

        rep = audit_report(tuple((f.name, f.getvalue()) for f in up_tr),
                           tuple((f.name, f.getvalue()) for f in up_ct or []),
                           (up_map.name, up_map.getvalue()) if up_map is not None else None,
                           design_json, cb.key, cb.catalog)
        if "error" in rep:
            st.error(f"Audit: {C.md_text(rep['error'])}")
        else:
            aud = rep["audit"]
            if design_json is not None:       # a design of another size or GPU than the traced job is said so
                d_in = json.loads(design_json)
                bigger = [s_a.world_size for s_a in aud.sizes if s_a.world_size > int(d_in.get("gpus") or 0)]
                if bigger:
                    st.warning(C.md_text(f"The installed design has {int(d_in.get('gpus') or 0):,} GPUs "
                                         f"({d_in.get('gpu_model')}), fewer than the traced job's "
                                         f"{max(bigger):,}: pick the design the job ran on (its predictions "
                                         f"are for another cluster)."))
                else:
                    st.caption(C.md_text(f"Installed design: {int(d_in.get('gpus') or 0):,} {d_in.get('gpu_model')} "
                                         f"GPUs, {d_in.get('name')}."))
            (st.error if aud.flagged else st.info)(C.md_text(aud.verdict))
            for e in aud.evidence:
                st.caption(C.md_text(e))
            st.caption(f"Rule: {C.md_text(aud.rule)}")
            for s_a in aud.sizes:
                st.markdown(f"**{s_a.world_size:,}-GPU job**: {len(s_a.ranks_traced)} rank(s) traced, "
                            f"{s_a.step_s['n']} (rank, step) samples")
                m1, m2, m3, m4 = st.columns(4)
                m1.metric("step p50", AV._t(s_a.step_s["p50"]))
                m2.metric("step p95", AV._t(s_a.step_s["p95"]))
                m3.metric("step p99", AV._t(s_a.step_s["p99"]))
                m4.metric("exposed communication", f"{s_a.exposed_share:.1%}",
                          help=f"of the step; waiting for a late rank: {s_a.wait_share:.1%}")
                st.plotly_chart(AV.rank_figure(s_a), width="stretch", theme=None,
                                key=f"audit_ranks_{s_a.world_size}")
                st.caption("Each traced rank's mean step: compute (and communication hidden behind it), exposed "
                           "communication, and the part of it spent waiting for the last rank to arrive.")
                if s_a.stragglers:
                    C.table(pd.DataFrame(AV.straggler_rows(s_a)), hide_index=True, width="stretch",
                                 key=f"audit_strag_{s_a.world_size}")
                elif s_a.step_stragglers:
                    st.caption("No straggler: no rank waited 5 % of the step or more.")
                C.table(pd.DataFrame(AV.collective_rows(s_a)), hide_index=True, width="stretch",
                             key=f"audit_coll_{s_a.world_size}")
                for n in s_a.notes:
                    st.caption(C.md_text(n))
            for c_a in aud.comparisons:
                st.markdown(f"**Measured vs predicted** on {C.md_text(c_a.design)} ({c_a.world_size:,}-GPU job), "
                            "largest disagreement first")
                st.plotly_chart(AV.collectives_figure(c_a), width="stretch", theme=None,
                                key=f"audit_cmp_{c_a.world_size}")
                C.table(pd.DataFrame(AV.comparison_rows(c_a)), hide_index=True, width="stretch",
                             key=f"audit_cmp_rows_{c_a.world_size}")
                for n in c_a.notes:
                    st.caption(C.md_text(n))
            if aud.congestion:
                st.markdown("**Predicted congestion signals per tier** (an estimate)")
                C.table(pd.DataFrame([{"tier": t.tier, "ECN-marked share of bytes": f"{t.ecn_marked:.1%}",
                                            "PFC pause exposure": f"{t.pause_exposure:.1%}"}
                                           for t in aud.congestion]),
                             hide_index=True, width="stretch", key="audit_congestion")
                st.caption("From the evaluator's link loads: the share of each tier's traffic that crosses a port "
                           "offered more than its line rate (a standing queue marks ECN and, on lossless RoCE, "
                           "pauses senders). Compared with ns-3 in docs/validation-packet.md.")
            if aud.links is not None:
                h = aud.links
                st.markdown("**Hot links: measured vs predicted**")
                if h.attribution:
                    st.warning(f"Step tail: {C.md_text(h.attribution)}")
                rho = "n/a" if h.spearman is None else f"{h.spearman:.2f}"
                st.caption(f"Rank correlation (Spearman) {rho}; top-{h.top_k} overlap {h.top_k_overlap} of "
                           f"{h.top_k}.")
                st.plotly_chart(AV.links_figure(h), width="stretch", theme=None, key="audit_links")
                st.caption("Utilisation in the busy windows (measured, against the ports' reported speed) and over "
                           "the predicted step (predicted, against the design's capacity).")
                C.table(pd.DataFrame(AV.link_rows(h)), hide_index=True, width="stretch", key="audit_link_rows")
                C.table(pd.DataFrame(AV.tier_rows(h)), hide_index=True, width="stretch", key="audit_tiers")
                for n in h.notes:
                    st.caption(C.md_text(n))

reals = real_files()
sources = ["upload"] + (["real"] if reals else [])
src = st.radio("Measurements", sources, key="cal_source", horizontal=True,
               format_func={"upload": "upload files", "real": "real nccl-tests files (../shared/traces)"}.get)
files: list[tuple[str, bytes]] = []
if src == "upload":
    ups = st.file_uploader("Measurement files", accept_multiple_files=True, key="cal_upload",
                           help="One system at a time (the same GPUs, ranks and network); several collectives "
                                "of it may be uploaded together.")
    files = [(u.name, u.getvalue()) for u in ups or []]
else:
    rel = [str(p.relative_to(REAL_DIR)) for p in reals]
    default = [r for r in rel if "allreduce" in r][:1] or rel[:1]
    picked = st.multiselect("Files", rel, default=default, key="cal_real")
    files = [(Path(r).name, (REAL_DIR / r).read_bytes()) for r in picked]
error_box = st.container()

with st.expander("System hints (when the file does not say)", expanded=False):
    a, b = st.columns(2)
    gpu = a.selectbox("GPU model", [FROM_FILE] + list(default_catalog().models("gpus")), key="cal_gpu")
    nic = b.number_input("NIC speed (Gb/s, 0 = from the file)", min_value=0, max_value=3200, value=0, step=100,
                         key="cal_nic")

if not files:
    st.info("Upload measurement files (or pick real ones) to fit the transport profile.")
    C.stop()

out = fit_files(tuple(files), None if gpu == FROM_FILE else gpu, float(nic) if nic else None)
with error_box:
    for name, msg in out["errors"]:
        st.error(f"**{name}**: {C.public_message(msg)}")
    if out["fit_error"]:
        st.error(f"The fit failed: {C.public_message(out['fit_error'])}")
res = out["result"]
if res is None:
    C.stop()

sysd = res.system
st.subheader("Fit")
st.caption(f"System: **{sysd.name}** · {sysd.ranks:,} ranks, {sysd.gpus_per_node} per server, {sysd.gpu_model}"
           + (f", {sysd.nic_gbps:g} Gb/s NICs" if sysd.nic_gbps else "") + f" · level fitted: **{res.level}** "
           f"({res.transport}) · files: {', '.join(res.sources)}")
ins = res.in_sample
targets = res.targets()
m = st.columns(4)
ge1 = ins.get("geomean_error_ge_1mb")
met = targets.get("in_sample", {})
m[0].metric("In-sample error, >= 1 MB", f"{ge1:.1%}" if ge1 is not None and ins.get("points_ge_1mb") else "n/a",
            delta=("meets" if met.get("met") else "misses") + f" the {met.get('target', 0.1):.0%} target" if met
            else None, delta_color="normal" if met.get("met") else "inverse")
m[1].metric("In-sample error, all sizes", f"{ins['geomean_error']:.1%}")
m[2].metric("Points", f"{ins['points']}")
m[3].metric("Largest error", f"{ins['max_abs_error']:.1%}")

left, right = st.columns(2)
with left:
    st.markdown("**Errors per collective**")
    rows = [{"collective": k, "in fit": "yes" if v.get("in_fit") else "no (held out)", "points": v["points"],
             "geomean error (>= 1 MB)": v["geomean_error_ge_1mb"] if v["points_ge_1mb"] else None,
             "geomean error (all sizes)": v["geomean_error"], "largest error": v["max_abs_error"],
             "target (>= 1 MB)": 0.1 if v.get("in_fit") else 0.2} for k, v in res.per_kind.items()]
    pct = st.column_config.NumberColumn(format="percent")
    C.table(pd.DataFrame(rows), hide_index=True, width="stretch", key="cal_errors",
                 column_config={c: pct for c in ("geomean error (>= 1 MB)", "geomean error (all sizes)",
                                                 "largest error", "target (>= 1 MB)")})
    st.caption("Geometric mean of |predicted/measured - 1| over message sizes; targets: 10 % in sample, 20 % for "
               "collectives held out of the fit (docs/validation.md).")
with right:
    st.markdown("**Fitted values**")
    params = pd.DataFrame([{"parameter": p["name"], "regime": p["regime"], "value": p["value"], "prior": p["prior"],
                            "identified": "yes" if p["identified"] else "no",
                            "at bound": "yes" if p["at_bound"] else ""} for p in res.parameters])
    C.table(params, hide_index=True, width="stretch", key="cal_params",
                 column_config={"value": st.column_config.NumberColumn(format="%.4g"),
                                "prior": st.column_config.NumberColumn(format="%.4g")})
    st.caption("Efficiencies are shares of line rate, alphas in seconds per step; 'identified': the measurements "
               "constrain the value (otherwise it stays near its prior).")

regs = pd.DataFrame([{"regime": r["regime"], "sizes": r["sizes"], "efficiency": r["effective_efficiency"],
                      "alpha (s)": r["effective_alpha_s"], "overhead per call (s)": r["op_overhead_s"],
                      "fitted": "yes" if r["fitted"] else "no"} for r in res.regimes])
C.table(regs, hide_index=True, width="stretch", key="cal_regimes",
             column_config={c: st.column_config.NumberColumn(format="%.4g")
                            for c in ("efficiency", "alpha (s)", "overhead per call (s)")})
st.caption("Per message-size regime: the effective efficiency and alpha after the regime's scales, and the fitted "
           "per-call overhead.")

from fabric.ui_support.calibrate_view import busbw_figure  # noqa: E402  (plotly import only when a fit is shown)

st.plotly_chart(busbw_figure(res), width="stretch", theme=None, key="cal_chart")
st.caption("Bus bandwidth (GB/s) over message size (bytes, log scale): measured (dots) and predicted by the "
           "calibrated evaluator (lines; dashed when held out of the fit).")
if res.notes:
    st.markdown("**Notes**\n" + "\n".join(f"- {n}" for n in res.notes))

x, y = st.columns(2)
if x.button("Apply to this session", type="primary", key="cal_apply", width="stretch"):
    key = hashlib.sha1(json.dumps(res.overrides, sort_keys=True, default=float).encode()).hexdigest()[:16]
    ss[C.CALIBRATION_KEY] = {"overrides": dict(res.overrides), "sources": list(res.sources), "key": key,
                             "system": sysd.to_dict(), "transport": res.transport}
    st.rerun()
y.download_button("Profile (JSON)", out["profile_json"].encode(), file_name="calibration.json",
                  mime="application/json", key="cal_download", on_click="ignore", width="stretch")
cal = ss.get(C.CALIBRATION_KEY)
if cal:
    st.success(f"Applied to this session: {', '.join(cal['sources'])}. The Search page marks its front stale until "
               "the next search; the Design page evaluates with it.")

C.sync_url()
