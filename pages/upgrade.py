"""Upgrade: an installed fabric, an upgrade budget and the racks' power limits; the front of upgrade cost versus
p99 (free policy changes first), what to buy and take out; and a staged growth plan."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from pages import _common as C
from fabric.reference.presets import PRESETS
from fabric.design.schema import ROUTING_POLICIES
from fabric.errors import FabricError
from fabric.ui_support import charts
from fabric.ui_support.racks_view import power_text
from fabric.ui_support.upgrade_view import (LEAF_RATIO_CHOICES, growth_rows, installed_design, upgrade_figure,
                                            upgrade_rows)

ss = st.session_state
C.require_entry()

st.title("Upgrade", help="fabric.brownfield: the upgrades of an installed fabric within a budget and power limits "
                         "(docs/upgrade.md); the same search as `fabric upgrade`.")
st.caption("Most clusters exist already. Describe what is installed, set the upgrade budget and the racks' power "
           "limits: every upgrade within them (more uplinks and spines, a tier, a plane, faster uplinks, other "
           "NICs, a storage network, free policy) is priced item by item (installed items are free, removed ones "
           "bring their resale value) and evaluated on the session's workload.")
C.show_url_problems()
C.context_line()


@st.cache_data(show_spinner="Searching the upgrades (every option within the limits is evaluated)...",
               max_entries=8)
def _upgrade(design_json: str, items_json: str, ctx_key: str, limits_json: str, failures: bool, _ctx) -> dict:
    """The upgrade search of the installed fabric, every option judged in the session's context (the records every
    page shows: fabric.review), so the installed p99 is the one Design, Compare and the brief give it."""
    from fabric.brownfield import Installed, UpgradeLimits, upgrade_front
    from fabric.brownfield.inventory import Inventory
    from fabric.design import design_from_dict
    from fabric.review import context_judge, design_record
    from fabric.search.records import INFEASIBLE_P99

    design = design_from_dict(json.loads(design_json))
    items = json.loads(items_json)
    inv = Inventory.from_items(items, source="uploaded fabric") if items is not None else None
    if inv is None:
        from fabric.brownfield import installed_from_design

        inst = installed_from_design(design, _ctx.catalog)
    else:
        inst = Installed(design, inv, "uploaded fabric")
    judge = context_judge(_ctx)

    def failure_judge(d) -> dict:
        rec = design_record(d, _ctx)
        fl = rec.failures
        worst = fl["p99_failure_s"] if fl["p99_failure_s"] < INFEASIBLE_P99 else None
        first = fl["primary"]
        return {**{k: first.get(k) for k in ("worst_switch", "worst_link", "worst_leaf",
                                             "partitions_on_single_failure")},
                "survives_single_failure": fl["survives_single_failure"], "healthy_p99_s": rec.p99_s,
                "worst_switch_failure_p99_s": worst, "worst_link_failure_p99_s": None, "worst_leaf_failure_p99_s": None}

    res = upgrade_front(inst, None, UpgradeLimits(**json.loads(limits_json)), catalog=_ctx.catalog,
                        seed=_ctx.seed, samples=_ctx.samples, failures=failures,
                        transport_overrides=_ctx.transport_overrides,
                        judge=lambda d: judge(d).step_time_s["p99"], failure_judge=failure_judge)
    return res.to_dict()


@st.cache_data(show_spinner="Planning the growth (every candidate of every stage is evaluated)...", max_entries=4)
def _growth(design_json: str, items_json: str, stages: tuple, targets: tuple, wl_key: str, cat_key: str, _workload,
            _catalog) -> dict:
    """The growth plan from the installed fabric (its design, and its items when the upload listed them)."""
    from fabric.brownfield import GrowthStage, Installed, installed_from_design, plan_growth
    from fabric.brownfield.inventory import Inventory
    from fabric.design import design_from_dict
    from fabric.workload.scale import scale_to

    design = design_from_dict(json.loads(design_json))
    items = json.loads(items_json)
    installed = (installed_from_design(design, _catalog, source="installed fabric") if items is None else
                 Installed(design, Inventory.from_items(items, source="uploaded fabric"), "uploaded fabric"))
    st_ = [GrowthStage(g, scale_to(_workload, g), t) for g, t in zip(stages, targets)]
    return plan_growth(st_, installed=installed, catalog=_catalog, samples=32).to_dict()


wb, cb = C.workload_bundle(), C.catalog_bundle()
gpus0 = C.constraints().gpus

# ------------------------------------------------------------------ the installed fabric
st.subheader("Installed fabric")
src = st.radio("What is installed", ["a reference design", "a design or `fabric build --json` file"],
               horizontal=True, key="up_source")
items = None
try:
    if src == "a reference design":
        a, b, c, d = st.columns(4)
        preset = a.selectbox("Design", list(PRESETS), index=list(PRESETS).index("fat-tree"), key="up_preset",
                             format_func=lambda n: PRESETS[n].title.split(" (")[0])
        gpus = b.number_input("GPUs", min_value=8, max_value=1_048_576, step=8, value=int(gpus0), key="up_gpus")
        ratio = c.selectbox("Leaf oversubscription", LEAF_RATIO_CHOICES, index=2, key="up_ratio",
                            format_func=lambda r: f"{r:g}:1")
        routing = d.selectbox("Routing", ROUTING_POLICIES, key="up_routing")
        design = installed_design(preset, int(gpus), float(ratio), routing)
    else:
        up = st.file_uploader("Installed fabric (design JSON/YAML, or `fabric build --json` output with its items)",
                              type=["json", "yaml", "yml"], key="up_file", max_upload_size=20)
        if up is None:
            st.info("Upload the installed fabric, or pick a reference design above.")
            C.stop()
        import tempfile
        from pathlib import Path

        from fabric.brownfield import load_installed

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / Path(up.name).name
            path.write_bytes(up.getvalue())
            inst = load_installed(path, cb.catalog)
        design = inst.design
        if up.name.lower().endswith(".json") and b'"items"' in up.getvalue():
            items = inst.inventory.to_items()
    base = C.bom_dict(design)
except FabricError as err:
    st.error(f"Installed fabric: {C.public_message(err)}")
    C.stop()

# ------------------------------------------------------------------ limits
st.subheader("Budget and limits")
value = float(base["cost_usd"])
l1, l2, l3, l4 = st.columns(4)
budget = l1.slider("Upgrade budget (USD)", min_value=0, max_value=int(max(100_000, round(value, -5))),
                   value=int(round(value * 0.3, -4)), step=10_000, key="up_budget", format="dollar",
                   help="Capex of what is added (before any resale credit).")
rack_kw = l2.number_input("Power per compute rack (kW, 0: no limit)", min_value=0.0, value=0.0, step=1.0,
                          key="up_rack_kw")
facility_kw = l3.number_input("Facility power (kW, 0: no limit)", min_value=0.0, value=0.0, step=10.0,
                              key="up_facility_kw",
                              help=f"IT power (servers plus network) x PUE {C.constraints().pue:g} (the PUE set on "
                                   f"the Constraints page).")
resale = l4.slider("Resale value of removed items", 0.0, 1.0, 0.0, 0.05, key="up_resale", format="percent",
                   help="Share of the price paid a removed item brings back.")
free_reserve = st.number_input(
    "Free ports to keep on every switch", min_value=0, max_value=512, value=0, step=1, key="up_free_ports",
    help="A reserve of physical ports each switch keeps free after the upgrade (storage, management, growth). "
         "An option that needs more ports than a switch has is never offered: it does not build.")
t1, t2, t3 = st.columns([2, 1, 1])
target_kind = t1.radio("p99 target", ["none (show the front)", "the p99 of this fabric at 1:1, built new",
                                      "a number"], horizontal=True, key="up_target")
target_ms = t2.number_input("p99 target (ms)", min_value=0.0, value=0.0, step=10.0, key="up_target_ms",
                            disabled=target_kind != "a number")
failures = t3.checkbox("Under the worst single failure too", key="up_failures",
                       help="Evaluates every upgrade within the limits under its worst switch and link failure "
                            "(slower).")

target_s, match_note = None, None
if target_kind.startswith("the p99"):
    ref = design.replace(oversubscription=(1.0, design.oversub(1)), spines=None, name=f"{design.name} at 1:1")
    try:
        target_s = C.record_of(ref).p99_s
        match_note = (f"target: the p99 of the same fabric at 1:1 ({charts.time_text(target_s)}), which costs "
                      f"{charts.money_text(C.bom_dict(ref)['cost_usd'])} built new")
    except FabricError as err:
        st.error(f"p99 target: {C.public_message(err)}")
        C.stop()
elif target_kind == "a number" and target_ms > 0:
    target_s = target_ms / 1e3

limits = {"budget_usd": float(budget), "rack_power_w": rack_kw * 1e3 or None,
          "facility_power_w": facility_kw * 1e3 or None, "p99_target_s": target_s, "resale": float(resale),
          "min_free_ports": int(free_reserve) or None, "pue": float(C.constraints().pue)}
from fabric.design import design_to_dict  # noqa: E402

try:
    ctx = C.context()
    res = _upgrade(json.dumps(design_to_dict(design), sort_keys=True), json.dumps(items), ctx.key,
                   json.dumps(limits, sort_keys=True), bool(failures), ctx)
except FabricError as err:
    st.error(f"No upgrade search: {C.public_message(err)}")
    C.stop()

inst = res["installed"]
m1, m2, m3, m4 = st.columns(4)
m1.metric("Installed network", charts.money_text(inst["value_usd"]))
m2.metric("Installed robust p99" if ctx.kind == "robust" else "Installed p99", charts.time_text(inst["p99_s"]),
          help="The installed fabric's record in the session's context (the same figure as on Design, Compare and "
               "the brief).")
m3.metric("Most power of a compute rack", power_text(inst["max_compute_rack_w"]))
m4.metric(f"Facility power (PUE {limits['pue']:g})", power_text(inst["facility_power_w"]),
          help=f"IT power {power_text(inst['it_power_w'])} (servers plus network) x PUE {limits['pue']:g}.")
st.caption(f"{design.name}: " + ", ".join(f"{n:,} {t}" for t, n in inst["switches"].items()) + ". Free switch "
           "ports: " + "; ".join(f"{t} {v['free']:,} of {v['ports']:,} (fewest on one switch {v['fewest_free']})"
                                 for t, v in inst["free_ports"].items())
           + ". A switch's ports bound every option (one needing more does not build); the reserve above keeps "
             "some free.")

st.subheader("The answer")
if match_note:
    st.caption(match_note)
best = res["best"]
(st.success if best else st.info)(C.md_text(res["answer"]))
counts = res["counts"]
st.caption(f"{counts['hardware_options']:,} hardware options ({counts['takes_out_switches']:,} would take installed "
           f"switches out, {counts['over_limits']:,} over a limit), {counts['policies']:,} policies, "
           f"{counts['evaluations']:,} evaluations.")

st.subheader("Upgrade front")
st.plotly_chart(upgrade_figure(res), key="up_front_chart")
if failures and res["failure_front"]:
    st.plotly_chart(upgrade_figure(res, failure=True), key="up_failure_chart")
rows = upgrade_rows(res)
money = st.column_config.NumberColumn(format="dollar")
secs, kw = st.column_config.NumberColumn(format="%.3f"), st.column_config.NumberColumn(format="localized", step=0.1)
C.table(pd.DataFrame(rows), hide_index=True, width="stretch",
             column_config={"buys (USD)": money, "resale (USD)": money, "net (USD)": money, "p99 (s)": secs,
                            "p99 under worst failure (s)": secs, "facility power (kW)": kw,
                            "max compute rack (kW)": kw})
st.caption("The answer first, then the front (no upgrade in it is both cheaper and faster than another), then the "
           "other upgrades meeting the limits and target. Net = buys minus resale.")

if best:
    st.subheader("What the answer buys and takes out")
    lines = [x for x in best["items"] if x["added"] or x["removed"]]
    if lines:
        C.table(pd.DataFrame([{"item": x["category"], "model": x["model"], "installed": x["installed"],
                                    "needed": x["needed"], "reused": x["kept"], "added": x["added"],
                                    "taken out": x["removed"], "added (USD)": x["added_usd"],
                                    "resale (USD)": x["resale_usd"]} for x in lines]),
                     hide_index=True, width="stretch",
                     column_config={"added (USD)": money, "resale (USD)": money})
    else:
        st.caption("Nothing: a configuration change only.")
st.download_button("Upgrade search (JSON)", json.dumps(res, indent=2, default=float).encode(),
                   file_name="upgrade.json", mime="application/json", key="up_dl", on_click="ignore")

# ------------------------------------------------------------------ growth
st.subheader("Staged growth")
st.caption(f"GPU counts per stage, from the installed fabric above ({design.gpus:,} GPUs): the workload is grown "
           "to each (data parallel); the plan buys, stage after stage, what the next fabric needs beyond what is "
           "installed and never takes a switch out (the installed ones included); it is compared with designing "
           "each stage from scratch. Without p99 targets each stage's target is the p99 of the full-bisection "
           "(1:1) fabric at that size + 2 %.")
if "up_stages" not in ss or ss.get("_up_stages_for") != design.gpus:   # stages start at the installed size
    ss["up_stages"] = f"{design.gpus},{design.gpus * 4},{design.gpus * 16}"
    ss["_up_stages_for"] = design.gpus
g1, g3, g2 = st.columns([2, 2, 1])
# persist_state: both keep what was typed while another source of the installed fabric hides them (a page run
# that stops before them would otherwise leave them empty when they come back)
stages_text = g1.text_input("Stages (GPUs)", key="up_stages", persist_state="page")
targets_text = g3.text_input("p99 target per stage (ms, optional)", value="", key="up_stage_targets",
                             placeholder="e.g. 900,950,1000; empty: full bisection + 2 %", persist_state="page")
if g2.button("Plan growth", key="up_plan"):
    ss["up_plan_stages"] = (stages_text, targets_text)
if ss.get("up_plan_stages"):
    from fabric.brownfield import parse_stages
    from fabric.ui_support.upgrade_view import parse_stage_targets

    try:
        stages_in, targets_in = ss["up_plan_stages"]
        stages = tuple(parse_stages(stages_in))
        targets = parse_stage_targets(targets_in, len(stages))
        plan = _growth(json.dumps(design_to_dict(design), sort_keys=True), json.dumps(items), stages, targets,
                       wb.key, cb.key, wb.workload, cb.catalog)
    except FabricError as err:
        st.error(f"No growth plan: {C.public_message(err)}")
    else:
        st.success(C.md_text(plan["answer"]))
        for note in plan["notes"]:
            (st.info if note.startswith("no p99 target given") else st.warning)(C.md_text(note))
        C.table(pd.DataFrame(growth_rows(plan)), hide_index=True, width="stretch",
                     column_config={"buys (USD)": money, "from scratch new (USD)": money})

C.sync_url()
