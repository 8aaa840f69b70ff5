"""Checks of a cabling plan against the rules it is cabled by and against the bill of materials.

Each check is independent of how the plan was built: ports are counted from the rows, cables and optics from the
rows against the bill of materials' items, lengths against the catalog's reach, rack power against the layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.topology.fabric import LINK_KINDS, MEDIA

__all__ = ["Check", "plan_checks", "failed"]


@dataclass(frozen=True)
class Check:
    """One check: its name, whether it passed, and a sentence with the figures."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        return {"check": self.name, "ok": self.ok, "detail": self.detail}


def failed(checks) -> list:
    """The checks that did not pass."""
    return [c for c in checks if not c.ok]


def _unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` by sorting (numpy's hash-based unique is many times slower on a million ids)."""
    s = np.sort(np.asarray(x).ravel())
    return s[np.concatenate([np.ones(min(s.size, 1), bool), s[1:] != s[:-1]])]


def _ports_once(plan, catalog) -> Check:
    from fabric.cabling.roles import RESERVED_ROLE

    fab = plan.fabric
    # switch ports: (switch, port, lane) at most once, ports within the switch's front panel
    ends_sw = np.concatenate([plan.b_node, np.where(plan.role == LINK_KINDS.index("nic-leaf"), -1,
                                                    np.where(plan.role == RESERVED_ROLE, -1, plan.a_node))])
    port = np.concatenate([plan.b_port, plan.a_port])
    lane = np.concatenate([plan.b_lane, plan.a_lane])
    on = ends_sw >= 0
    key = (ends_sw[on].astype(np.int64) * 4096 + port[on]) * 64 + lane[on]
    dup_sw = key.size - _unique(key).size
    radix = catalog.switch(fab.design.switch_model).ports if plan.switch_lanes is not None else 0
    beyond = int((port[on] > radix).sum()) if radix else 0
    # NIC ports: (NIC, port) at most once, within the NIC's ports
    nic_rows = plan.role == LINK_KINDS.index("nic-leaf")
    nk = plan.a_node[nic_rows].astype(np.int64) * 64 + plan.a_port[nic_rows]
    dup_nic = nk.size - _unique(nk).size
    nic_beyond = int((plan.a_port[nic_rows] > fab.nic_ports.shape[1]).sum())
    ok = dup_sw == 0 and dup_nic == 0 and beyond == 0 and nic_beyond == 0
    return Check("every port used at most once", ok,
                 f"{int(on.sum()):,} switch ends on {_unique(ends_sw[on]).size:,} switches, {dup_sw} used twice, "
                 f"{beyond} beyond a switch's {radix} ports; {int(nic_rows.sum()):,} NIC ports, {dup_nic} used "
                 f"twice, {nic_beyond} beyond a NIC's {fab.nic_ports.shape[1]}")


def _counts_equal_bom(plan, bom, catalog) -> Check:
    from fabric.cabling.roles import RESERVED_ROLE

    bought = plan.role != RESERVED_ROLE
    plan_cables: dict = {}
    for i, model in enumerate(plan.cable_models):
        plan_cables[model] = int(((plan.cable == i) & bought).sum())
    bom_cables: dict = {}
    for item in bom.items:
        if item.category == "cable" and item.where != "storage network":
            bom_cables[item.model] = bom_cables.get(item.model, 0) + item.count
    # optics: NIC ends one module per port; switch ends as many modules per switch as its optical ports need
    plan_tx: dict = {}
    fab = plan.fabric
    for i, model in enumerate(plan.optic_models):
        count, keys = 0, []
        for node, optic in ((plan.a_node, plan.a_optic), (plan.b_node, plan.b_optic)):
            sel = (optic == i) & bought
            if not sel.any():
                continue
            n = node[sel]
            is_nic = (n >= fab.nic_base) & (n < fab.nic_base + fab.n_nics)
            count += int(is_nic.sum())
            keys.append(n[~is_nic].astype(np.int64) * 16 + plan.role[sel][~is_nic])
        keys = np.concatenate(keys) if keys else np.zeros(0, np.int64)
        if keys.size:
            # modules per (switch, link kind), the ends on both sides of the rows together (a dragonfly router is
            # the first end of some links and the second of others): the bill's rule, ports paired on one switch
            _, per = np.unique(keys, return_counts=True)
            count += int((-(-per // catalog.transceiver(model).ports_per_module)).sum())
        if count:
            plan_tx[model] = plan_tx.get(model, 0) + count
    bom_tx = dict(bom.transceivers)
    switches_plan = {name: int(c) for name, c in zip(*np.unique(
        np.asarray(fab.tier_names)[fab.node_tier[fab.switch_base:fab.switch_base + fab.n_switches]],
        return_counts=True))}
    ok = plan_cables == bom_cables and plan_tx == bom_tx and switches_plan == dict(bom.switches)
    return Check("counts equal the bill of materials", ok,
                 f"cables {_fmt(plan_cables)} (bill: {_fmt(bom_cables)}); optics {_fmt(plan_tx)} (bill: "
                 f"{_fmt(bom_tx)}); switches {_fmt(switches_plan)} (bill: {_fmt(dict(bom.switches))})")


def _fmt(d: dict) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(d.items())) or "none"


def _reach(plan, catalog) -> Check:
    from fabric.cabling.roles import RESERVED_ROLE

    bought = plan.role != RESERVED_ROLE
    limit = np.full(plan.rows, np.inf)
    has_cable = plan.cable >= 0
    limit[has_cable] = plan.cable_length_m[plan.cable[has_cable]]
    for optic in (plan.a_optic, plan.b_optic):
        has = optic >= 0
        if has.any():
            reach = np.array([catalog.transceiver(m).reach_m for m in plan.optic_models])
            limit[has] = np.minimum(limit[has], reach[optic[has]])
    over = bought & (plan.length_m > limit + 1e-9)
    n_over = int(over.sum())
    detail = (f"{int(bought.sum()):,} cables, longest {float(plan.length_m[bought].max()) if bought.any() else 0:.1f} "
              f"m; {n_over:,} longer than the cable or optic bought for them")
    if n_over:
        worst = int(np.argmax(np.where(over, plan.length_m - limit, -np.inf)))
        from fabric.cabling.roles import ROLE_NAMES

        roles = {ROLE_NAMES[r]: int(c) for r, c in zip(*np.unique(plan.role[over], return_counts=True))}
        medium = MEDIA[int(plan.medium[worst])] if plan.medium[worst] >= 0 else "?"
        detail += (f" ({_fmt(roles)}); worst: link {int(plan.link[worst])}, {plan.length_m[worst]:.1f} m of "
                   f"{medium} bought as {limit[worst]:g} m")
    return Check("every length within its cable's and optic's reach", n_over == 0, detail)


def _rack_power(plan) -> Check:
    lay = plan.layout
    limit = lay.rack_power_limit_w
    if limit is None:
        worst = float(lay.rack_power_w.max()) if lay.rack_power_w.size else 0.0
        return Check("every rack within its power budget", True,
                     f"{lay.n_racks:,} racks ({lay.compute_racks:,} compute), most {worst / 1e3:.1f} kW; the design "
                     f"sets no rack power limit (rack_power_w), so none is over")
    over = lay.rack_power_w > limit * (1 + 1e-9)
    worst = float(lay.rack_power_w.max()) if lay.rack_power_w.size else 0.0
    return Check("every rack within its power budget", not over.any(),
                 f"{lay.n_racks:,} racks ({lay.compute_racks:,} compute), most {worst / 1e3:.1f} kW against "
                 f"{limit / 1e3:.1f} kW; {int(over.sum())} over")


def _planes_apart(plan) -> Check:
    fab = plan.fabric
    ports = fab.nic_ports
    if ports.shape[1] < 2:
        return Check("a multi-port NIC's ports on different switches", True, "single-port NICs: nothing to check")
    s = np.sort(ports, axis=1)
    same = int((s[:, 1:] == s[:, :-1]).any(axis=1).sum())
    return Check("a multi-port NIC's ports on different switches", same == 0,
                 f"{ports.shape[0]:,} NICs of {ports.shape[1]} ports; {same} with two ports on one switch")


def _rails(plan) -> Check:
    fab = plan.fabric
    fam = fab.design.family
    fams = {r.family for r in fab.design.regions} if fam == "regions" and fab.design.regions else {fam}
    if not fams & {"rail_optimized", "rail_only"}:
        return Check("rail r of every server on a rail-r leaf", True, f"{fam}: no rails")
    nl = plan.role == LINK_KINDS.index("nic-leaf")
    leaf = plan.b_node[nl].astype(np.int64)
    npn = max(1, fab.design.nics_per_node)
    rail = ((plan.a_node[nl] - fab.nic_base) % npn) * fab.nic_ports.shape[1] + plan.a_port[nl] - 1
    # every leaf of a rail family takes one rail only (a leaf of a Clos region takes every rail)
    key = _unique(leaf * 1024 + rail)
    rails_per_leaf = np.bincount(np.unique(key // 1024, return_inverse=True)[1])
    leaves_seen = np.unique(key // 1024)
    if fam == "regions":        # the leaves of each rail region take that region's rails per leaf; Clos leaves any
        limit = np.full(leaves_seen.size, np.iinfo(np.int64).max)
        ordinal = _leaf_ordinal(fab, leaves_seen)
        for r in fab.structure.get("regions") or []:
            if r.get("family") in ("rail_optimized", "rail_only"):
                lo, hi = r["leaf_range"]
                limit[(ordinal >= lo) & (ordinal < hi)] = int(r.get("rails_per_leaf") or 1)
        mixed = int((rails_per_leaf > limit).sum())
        what = "their region's rails per leaf"
    else:
        rpl = int(getattr(fab.design, "rails_per_leaf", 1) or 1)
        mixed = int((rails_per_leaf > rpl).sum())
        what = f"the design's {rpl}"
    return Check("rail r of every server on a rail-r leaf", mixed == 0,
                 f"{_unique(leaf).size:,} leaves; {mixed} take more rails than {what}")


def _leaf_ordinal(fab, leaves: np.ndarray) -> np.ndarray:
    """Each leaf's position among its plane's leaves (what a region's ``leaf_range`` counts)."""
    from fabric.topology.fabric import SWITCH

    out = np.zeros(leaves.size, dtype=np.int64)
    tier0 = np.flatnonzero((fab.node_kind == SWITCH) & (fab.node_tier == 0))
    for p in np.unique(fab.node_plane[leaves]):
        ids = tier0[fab.node_plane[tier0] == p]
        sel = fab.node_plane[leaves] == p
        out[sel] = np.searchsorted(ids, leaves[sel])
    return out


def _uplinks_even(plan) -> Check:
    fab = plan.fabric
    worst = 0
    for name in ("leaf-spine", "spine-core"):
        sel = plan.role == LINK_KINDS.index(name)
        if not sel.any():
            continue
        lo, hi = plan.a_node[sel].astype(np.int64), plan.b_node[sel].astype(np.int64)
        pairs, per = np.unique(lo * (fab.n_nodes + 1) + hi, return_counts=True)
        lo_of = pairs // (fab.n_nodes + 1)
        order = np.argsort(lo_of, kind="stable")
        lo_s, per_s = lo_of[order], per[order]
        starts = np.flatnonzero(np.r_[True, lo_s[1:] != lo_s[:-1]])
        spread = np.maximum.reduceat(per_s, starts) - np.minimum.reduceat(per_s, starts)
        worst = max(worst, int(spread.max()))
    ok = worst <= 1 or bool(fab.structure.get("spine_core_even", True) is False and worst <= 2)
    return Check("a switch's uplinks spread evenly over the switches above", worst <= 1 or ok,
                 f"parallel links from one switch to each switch above differ by at most {worst}")


def plan_checks(plan, bom=None, catalog=None) -> list:
    """Every check of the plan (module docstring), in a fixed order."""
    from fabric.catalog import default_catalog
    from fabric.cost import bill_of_materials

    cat = catalog or default_catalog()
    bom = bom if bom is not None else bill_of_materials(plan.fabric, cat)
    return [_ports_once(plan, cat), _counts_equal_bom(plan, bom, cat), _reach(plan, cat), _rack_power(plan),
            _planes_apart(plan), _rails(plan), _uplinks_even(plan)]
