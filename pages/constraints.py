"""Constraints: what the search may use and must meet; an editable hardware catalog (prices, power)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from pages import _common as C
from fabric.catalog import Catalog, compatible_nics
from fabric.design import PLACEMENTS, ROUTING_POLICIES, TRANSPORTS
from fabric.search.constraints import SEARCH_FAMILIES
from fabric.errors import FabricError
from fabric.failures.text import RULE_TEXT
from fabric.search import Constraints, DesignSpace
from fabric.ui_support.catalog_view import EDITABLE, column_labels, display_table, merge_edits
from fabric.ui_support.workload_view import gpus_needed

ss = st.session_state
C.require_entry()
OVERSUB = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 7.0, 8.0]
#: ratios the search tries only when the largest allowed oversubscription reaches them
HIGH_RATIOS = (6.0, 7.0, 8.0)
GPN = [1, 2, 4, 8, 16, 36, 72]
PLANES = [1, 2, 4, 8]
FAMILY_TEXT = {"clos": "Clos / fat tree", "rail_optimized": "rail-optimized", "rail_only": "rail-only",
               "dragonfly": "dragonfly", "regions": "regions (two, shaped by the jobs)"}

st.title("Constraints")
st.caption("What the search may use and what every design must meet. Limits left empty mean no limit. Changes apply "
           "at once to every page; the search re-runs when you press Start on the Search page.")
C.show_url_problems()
C.inputs_line()

c0: Constraints = ss["constraints"]
cb = C.catalog_bundle()
cat = cb.catalog
wb = C.workload_bundle()


def seed(key: str, value) -> None:
    """Give a widget its value from the canonical constraints the first time it is drawn on a visit."""
    if key not in ss:
        ss[key] = value


switch_models = cat.models("switches")
nic_models = cat.models("nics")
speeds = sorted({cat.nic(m).port_speed_bps / 1e9 for m in nic_models})
seed("con_gpus", int(c0.gpus))
seed("con_gpn", int(c0.gpus_per_node) if c0.gpus_per_node in GPN else 8)
seed("con_gpu_model", c0.gpu_model if c0.gpu_model in cat.models("gpus") else cat.models("gpus")[0])
seed("con_switches", [m for m in (c0.switch_models or switch_models) if m in switch_models])
seed("con_speeds", sorted({cat.nic(m).port_speed_bps / 1e9 for m in (c0.nic_models or nic_models) if m in nic_models}))
seed("con_radix", c0.max_radix)
seed("con_max_os", float(c0.max_oversubscription) if float(c0.max_oversubscription) in OVERSUB else 4.0)
seed("con_budget_m", None if c0.budget_usd is None else c0.budget_usd / 1e6)
seed("con_power_kw", None if c0.power_w is None else c0.power_w / 1e3)
seed("con_cables", c0.cable_count)
seed("con_p99", c0.p99_target_s)
seed("con_survive", bool(c0.survive_single_failure))
seed("con_p99_fail", c0.max_p99_under_failure_s)
seed("con_cost_obj", c0.cost_objective)
seed("con_p99_obj", c0.p99_objective)
seed("con_life", float(c0.life_years))
seed("con_kwh", float(c0.electricity_usd_per_kwh))
seed("con_pue", float(c0.pue))
seed("con_ttft_ms", None if c0.inference_ttft_p99_s is None else c0.inference_ttft_p99_s * 1e3)
seed("con_tpot_ms", None if c0.inference_tpot_p99_s is None else c0.inference_tpot_p99_s * 1e3)
seed("con_slo_pct", None if c0.inference_slo_attainment is None else c0.inference_slo_attainment * 100)
seed("con_inf_obj", c0.inference_objective or "none")
seed("con_serving_class", True in c0.serving_classes)
seed("con_systems", [m for m in (c0.gpu_models or ()) if m in cat.models("gpus")])
seed("con_planes", [p for p in c0.planes if p in PLANES])
seed("con_rack_kw", None if c0.rack_power_w is None else c0.rack_power_w / 1e3)
seed("con_facility_mw", None if c0.facility_power_w is None else c0.facility_power_w / 1e6)
seed("con_families", list(c0.families))
seed("con_routings", list(c0.routings))
seed("con_transports", list(c0.transports))
seed("con_placements", list(c0.placements))

st.subheader("Cluster and hardware")
a, b, c = st.columns(3)
gpus = a.number_input("GPUs in the cluster", min_value=1, max_value=1_048_576, step=8, key="con_gpus",
                      help="Must be a whole number of servers.")
a.caption(f"The workload needs {gpus_needed(wb.workload):,} GPUs.")
gpn = b.selectbox("GPUs per server", GPN, key="con_gpn")
gpu_model = c.selectbox("GPU model", cat.models("gpus"), key="con_gpu_model")
systems = st.multiselect(
    "GPU systems to compare (scale-up domain)", cat.models("gpus"), key="con_systems",
    format_func=lambda m: f"{m} ({cat.gpu(m).scale_up_domain_max}-GPU NVLink domain, {cat.gpu(m).host_gpus} per host)",
    help="Leave empty to search the one GPU model above. With several, the search chooses among them: each brings "
         "its host size and NVLink domain from the catalog (8-GPU HGX, 72-GPU NVL72 racks), and the cluster is "
         "rounded up to whole domains that keep the workload's tensor/expert-parallel groups inside them. The "
         "first is the baselines'.")
# the switch models get a full-width row: six or more model chips do not fit in half a page at 1,280-1,600 px
sw = st.multiselect("Allowed switch models", switch_models, key="con_switches")
st.caption(C.md_text("Switch models: " + "; ".join(f"{m}: {cat.switch(m).fabric}, {cat.switch(m).ports} x "
                                          f"{cat.switch(m).port_speed_bps / 1e9:g}G, ${cat.switch(m).price_usd:,.0f}"
                                          for m in switch_models) + "."))
a, b = st.columns(2)
sp = a.multiselect("Allowed NIC port speeds (Gb/s)", speeds, key="con_speeds", format_func=lambda s: f"{s:g} Gb/s")
allowed_nics = [m for m in nic_models if cat.nic(m).port_speed_bps / 1e9 in sp]
hosts = list(systems) or [gpu_model]
host_ok = {m for h in hosts for m in compatible_nics(cat, h, min(c0.nics_per_gpu, default=1.0))}
unfit = [m for m in allowed_nics if m not in host_ok]
b.caption("NIC models at these speeds: " + (", ".join(m for m in allowed_nics if m in host_ok) or "none")
          + (f". Not offered on {' or '.join(hosts)} hosts, whose PCIe link feeds at most "
             + " / ".join(f"{cat.gpu(h).max_nic_bps_per_gpu / 1e9:g}" for h in hosts)
             + f" Gb/s of NIC bandwidth per GPU: {', '.join(unfit)}" if unfit else ""))

st.subheader("Design space")
a, b = st.columns(2)
fams = a.multiselect("Topology families", list(SEARCH_FAMILIES), key="con_families", format_func=FAMILY_TEXT.get,
                     help="regions: the cluster split in two regions, each cabled its own way (Clos or "
                          "rail-optimized) at its own leaf ratio, sized to hold the jobs placed in it "
                          "(docs/regions.md)")
routs = b.multiselect("Routing policies", list(ROUTING_POLICIES), key="con_routings")
a, b = st.columns(2)
trans = a.multiselect("Transports", list(TRANSPORTS), key="con_transports")
places = b.multiselect("Placement rules", list(PLACEMENTS), key="con_placements",
                       help="What the scheduler is told to do (free policy). A fragmented cluster is a condition, "
                            "not a rule: see the what-if scenario 'fragmented' on the Design page.")
planes = st.multiselect("Network planes", PLANES, key="con_planes",
                        help="Planes each NIC's ports are split over (a NIC needs as many ports as planes; "
                             "e.g. nic-cx8-4x200 for 4 planes).")
planes_note = st.empty()            # which plane counts the allowed hardware cannot build (filled below)
a, b = st.columns(2)
max_os = a.select_slider("Largest oversubscription (down:up) at any tier", OVERSUB, key="con_max_os",
                         format_func=lambda v: f"{v:g}:1")
radix = b.number_input("Largest switch radix (ports at the link speed)", min_value=2, max_value=4096, step=8,
                       key="con_radix", placeholder="no limit")

st.subheader("Limits and target")
a, b, c, d = st.columns(4)
budget_m = a.number_input("Network budget (million USD)", min_value=0.0, step=0.5, key="con_budget_m",
                          placeholder="no limit", format="%.3f")
power_kw = b.number_input("Network power (kW)", min_value=0.0, step=10.0, key="con_power_kw",
                          placeholder="no limit", format="%.1f")
cables = c.number_input("Cables (count)", min_value=2, step=100, key="con_cables",
                        placeholder="no limit")
p99 = d.number_input("p99 step-time target (s)", min_value=0.0, step=0.1, key="con_p99",
                     placeholder="no target", format="%.3f")
a, b, _, _ = st.columns(4)
rack_kw = a.number_input("Rack power (kW per rack)", min_value=0.0, step=5.0, key="con_rack_kw",
                         placeholder="no limit", format="%.1f",
                         help="The most any rack may draw: servers plus a top-of-rack switch, or a network rack. "
                              "A GB200 NVL72 rack draws ~120 kW; HGX racks are packed to at most 40.8 kW.")
facility_mw = b.number_input("Facility power (MW)", min_value=0.0, step=1.0, key="con_facility_mw",
                             placeholder="no limit", format="%.2f",
                             help="Servers and network times the PUE below.")
a, b, c, d = st.columns(4)
survive = a.toggle("Survive any single failure", key="con_survive",
                   help="Designs that do not survive every single switch or cable failure are infeasible "
                        "(facts.md section 8; docs/constraints.md). " + RULE_TEXT)
p99_fail = b.number_input("p99 under the worst failure (s)", min_value=0.0, step=0.1, key="con_p99_fail",
                          placeholder="no limit", format="%.3f",
                          help="Each design is also evaluated with its worst switch and link failure.")
cost_obj = c.radio("Minimize beside p99", ["network_capex", "cost_per_step"], key="con_cost_obj",
                   format_func={"network_capex": "network capex", "cost_per_step": "cost per step (GPU time)"}.get)
p99_obj = d.radio("p99 to minimize", ["healthy", "worst_single_failure"], key="con_p99_obj",
                  format_func={"healthy": "healthy fabric", "worst_single_failure": "under the worst failure"}.get)
has_serving = any(j.serving is not None for j in wb.workload.jobs)
ttft_ms = tpot_ms = slo_pct = None
inf_obj = "none"
serving_classes = c0.serving_classes
if has_serving:     # limits on request latency only mean something for a workload with a serving job
    st.subheader("Serving limits")
    a, b, c, d = st.columns(4)
    ttft_ms = a.number_input("p99 time to first token (ms)", min_value=0.0, step=10.0, key="con_ttft_ms",
                             placeholder="no limit", format="%.1f")
    tpot_ms = b.number_input("p99 time per output token (ms)", min_value=0.0, step=5.0, key="con_tpot_ms",
                             placeholder="no limit", format="%.1f")
    slo_pct = c.number_input("SLO attainment at least (%)", min_value=0.0, max_value=100.0, step=1.0,
                             key="con_slo_pct", placeholder="no limit", format="%.1f",
                             help="Share of requests within the workload's TTFT and TPOT budgets.")
    inf_obj = d.selectbox("Also minimize", ["none", "ttft_p99", "tpot_p99", "slo_attainment"], key="con_inf_obj",
                          format_func={"none": "nothing more", "ttft_p99": "p99 time to first token",
                                       "tpot_p99": "p99 time per output token",
                                       "slo_attainment": "requests missing their SLO"}.get,
                          help="A serving latency as one more objective beside cost and the p99 step.")
    own_class = st.toggle("The search may give serving traffic a class of its own", key="con_serving_class",
                          help="Gene serving_class (free policy: an InfiniBand service level or a RoCE DSCP queue "
                               "with priority). Turn it off when the fabric has no traffic class free for it.")
    serving_classes = (False, True) if own_class else (False,)
    st.caption("The worst serving job's request latency on each design (docs/serving.md); a service whose load "
               "exceeds what a design sustains meets no limit.")
with st.expander("GPU economics (cost per step)"):
    a, b, c = st.columns(3)
    life = a.number_input("Life (years)", min_value=0.1, max_value=30.0, step=0.5, key="con_life")
    kwh = b.number_input("Electricity (USD per kWh)", min_value=0.0, max_value=5.0, step=0.01, key="con_kwh",
                         format="%.3f")
    pue = c.number_input("PUE", min_value=1.0, max_value=3.0, step=0.05, key="con_pue", format="%.2f")
    st.caption("Defaults: 4 years (epoch-research), $0.08/kWh (US EIA industrial average), PUE 1.3 (Uptime "
               "Institute 1.1-1.5); docs/review.md.")

try:
    if not sp:
        raise FabricError("constraint 'nic_models': allow at least one NIC port speed")
    if not sw:
        raise FabricError("constraint 'switch_models': allow at least one switch model")
    new = Constraints(
        gpus=int(gpus), gpus_per_node=int(gpn), gpu_model=gpu_model,
        switch_models=tuple(sw), nic_models=tuple(allowed_nics),
        families=tuple(fams), routings=tuple(routs), transports=tuple(trans), placements=tuple(places),
        max_oversubscription=float(max_os), max_radix=None if radix is None else int(radix),
        budget_usd=None if not budget_m else float(budget_m) * 1e6,
        power_w=None if not power_kw else float(power_kw) * 1e3,
        cable_count=None if cables is None else int(cables), p99_target_s=p99 or None,
        nics_per_gpu=c0.nics_per_gpu,
        # ratios above 4:1 (a hyperscale core: 7:1 between pods) are searched once the slider allows them
        oversubscriptions=tuple(sorted((set(c0.oversubscriptions) - set(HIGH_RATIOS))
                                       | {o for o in HIGH_RATIOS if o <= max_os})),
        uplink_speed_factors=c0.uplink_speed_factors, qps=c0.qps, planes=tuple(planes) or c0.planes,
        gpu_models=tuple(systems) or None,
        rack_power_w=None if not rack_kw else float(rack_kw) * 1e3,
        facility_power_w=None if not facility_mw else float(facility_mw) * 1e6,
        optimize_power=c0.optimize_power, survive_single_failure=bool(survive),
        max_p99_under_failure_s=p99_fail or None, cost_objective=cost_obj, p99_objective=p99_obj,
        life_years=float(life), electricity_usd_per_kwh=float(kwh), pue=float(pue),
        inference_ttft_p99_s=float(ttft_ms) / 1e3 if ttft_ms else None,
        inference_tpot_p99_s=float(tpot_ms) / 1e3 if tpot_ms else None,
        inference_slo_attainment=float(slo_pct) / 100 if slo_pct else None,
        inference_objective=None if inf_obj == "none" else inf_obj, serving_classes=serving_classes)
    space = DesignSpace(new, cat)   # the search space itself: e.g. no allowed NIC runs on this GPU's host
    bad_planes = space.unbuildable_planes()
    if bad_planes:
        planes_note.warning(C.md_text(
            "Cannot be built with the allowed hardware, so the search never reaches them (it repairs such designs "
            "to fewer planes): " + "; ".join(f"{p} planes: {why}" for p, why in bad_planes.items()) + "."))
    if gpus_needed(wb.workload) > new.gpus:
        raise FabricError(f"constraint 'gpus': the workload needs {gpus_needed(wb.workload):,} GPUs, more than the "
                          f"{new.gpus:,} in the cluster")
except FabricError as err:
    st.error(f"{C.public_message(err)}. The other pages keep using the last valid constraints.")
else:
    # "everything allowed" is stored as None so links stay short
    if new.switch_models is not None and set(new.switch_models) == set(switch_models):
        new = replace(new, switch_models=None)
    if new.nic_models is not None and set(new.nic_models) == set(nic_models):
        new = replace(new, nic_models=None)
    if new != c0:
        ss["constraints"] = new
    st.success(f"Constraints valid: {new.gpus:,} GPUs, {len(new.families)} famil{'y' if len(new.families) == 1 else 'ies'}, "
               f"{len(new.switch_models or switch_models)} switch model(s), "
               f"{len([m for m in allowed_nics if m in host_ok])} NIC model(s).")

# ------------------------------------------------------------------ catalog
st.subheader("Hardware catalog")
st.caption("Prices (USD per unit) and power (W per unit) used for every bill of materials; edit a cell to try other "
           "prices. Edits stay in this browser session (they are not part of the link).")
base = ss.get("catalog_tables") or cat.tables()
labels = {"switches": "Switches", "nics": "NICs", "transceivers": "Transceivers", "cables": "Cables", "gpus": "GPUs"}
edited = {}
tabs = st.tabs([labels[n] for n in base])
for tab, (name, df) in zip(tabs, base.items()):
    with tab:
        shown = display_table(df)          # every column in words, blanks said (never None)
        cols = [c for c in shown.columns if c != "source"]
        config = {}
        for col, label in column_labels(shown.columns).items():
            numeric = pd.api.types.is_numeric_dtype(shown[col])
            fmt = "dollar" if col.endswith("_usd") else "localized"      # thousands separated: 5,800 W
            config[col] = (st.column_config.NumberColumn(label, min_value=0, format=fmt) if numeric
                           else st.column_config.TextColumn(label))
        edited[name] = st.data_editor(
            shown, key=f"cat_{name}", hide_index=True, width="stretch", num_rows="fixed", column_order=cols,
            disabled=[c for c in shown.columns if c not in EDITABLE], column_config=config)
        st.caption(f"{labels[name]}: one row per model; only price, power and latency can be edited here "
                   "(sources in docs/catalog.md).")
merged = merge_edits(base, edited)
changed = any(not merged[n].equals(base[n]) for n in base)
if changed:
    try:
        Catalog.from_tables(merged, source="catalog edited in the dashboard")
    except FabricError as err:
        st.error(f"Catalog edit not used: {C.public_message(err)}")
    else:
        ss["catalog_tables"] = {n: df.reset_index(drop=True) for n, df in merged.items()}
if st.button("Reset catalog to the built-in defaults", key="cat_reset"):
    ss["catalog_tables"] = None
    for n in base:
        ss.pop(f"cat_{n}", None)
    st.rerun()
st.caption("Catalog in use: " + ("edited in this session" if ss.get("catalog_tables") is not None
                                 else "built-in defaults"))

C.sync_url()
