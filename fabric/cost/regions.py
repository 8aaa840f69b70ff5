"""A design of regions, region by region: what each region is, holds and costs (the Design page's region table, the
brief's "why this shape" and ``fabric build``).

Each region owns its servers' NICs and NIC-to-leaf links, its leaves and their uplinks, and (joined through a shared
core) its spines and their core-facing links; the shared part is the spines joining the regions (2 tiers) or the
cores (3 tiers). Money and power: switches and NICs exactly; a link at its cable plus its transceivers (a NIC-end
module, and a switch-end module's share per port); the shared part is the bill of materials' total less the regions,
so the rows always add up to the design's capex and power.
"""

from __future__ import annotations

import numpy as np

from fabric.topology.fabric import LINK_KINDS, MEDIA

__all__ = ["region_rows"]

_OPTICS = MEDIA.index("optics")
_CABLE_KIND = {"copper": "dac", "active_copper": "acc", "aoc": "aoc"}


def _link_prices(fabric, cat, sw) -> tuple[np.ndarray, np.ndarray]:
    """Price (USD) and power (W) of every link: its cable and its transceivers at their per-port share."""
    price = np.zeros(fabric.n_links)
    power = np.zeros(fabric.n_links)
    net = np.isin(fabric.link_kind, [LINK_KINDS.index(k) for k in ("nic-leaf", "leaf-spine", "spine-core")])
    keys = np.stack([fabric.link_kind, fabric.link_medium, fabric.link_capacity_bps, fabric.link_reach_m], 1)
    sel = np.flatnonzero(net)
    uniq, inv = np.unique(keys[sel], axis=0, return_inverse=True)
    for i, (kind, medium, speed, reach) in enumerate(uniq.tolist()):
        kind, medium = LINK_KINDS[int(kind)], MEDIA[int(medium)]
        cable = cat.cable_for("fibre" if medium == "optics" else _CABLE_KIND[medium], speed, reach)
        p, w = cable.price_usd, cable.power_w
        if medium == "optics":
            tx = cat.transceiver_for(speed, reach, "switch", cage_bps=sw.cage_bps)
            ends = 1 if kind == "nic-leaf" else 2
            p += ends * tx.price_usd / tx.ports_per_module
            w += ends * tx.power_w / tx.ports_per_module
            if kind == "nic-leaf":
                ntx = cat.transceiver_for(speed, reach, "nic")
                p, w = p + ntx.price_usd, w + ntx.power_w
        m = sel[inv.ravel() == i]
        price[m], power[m] = p, w
    return price, power


def region_rows(fabric, bom, catalog=None, placement: dict | None = None) -> list[dict]:
    """One row per region and one for the shared layer: ``region``, ``cabling``, ``servers``, ``gpus``,
    ``leaf_ratio``, ``spine_ratio`` (None on shared spines), ``leaves``, ``spines``, ``jobs`` (names placed there:
    ``placement`` maps job name -> region name; default the design's rule), ``capex_usd``, ``power_w``. Empty for a
    uniform design."""
    from fabric.catalog import default_catalog

    regions = fabric.structure.get("regions")
    if not regions:
        return []
    cat = catalog or default_catalog()
    d = fabric.design
    sw, nic = cat.switch(d.switch_model), cat.nic(d.nic_model)
    price, power = _link_prices(fabric, cat, sw)
    sb, planes = fabric.switch_base, fabric.planes
    tier = fabric.node_tier[sb:sb + fabric.n_switches]
    plane = fabric.node_plane[sb:sb + fabric.n_switches]
    # plane-local index of each switch within its tier
    local = np.zeros(fabric.n_switches, np.int64)
    for p in range(planes):
        for t in (0, 1, 2):
            ids = np.flatnonzero((plane == p) & (tier == t))
            local[ids] = np.arange(ids.size)
    owner = np.full(fabric.n_switches, -1, np.int64)      # region owning each switch (-1: shared)
    for i, r in enumerate(regions):
        lo, hi = r["leaf_range"]
        owner[(tier == 0) & (local >= lo) & (local < hi)] = i
        lo, hi = r["spine_range"]
        if hi > lo:
            owner[(tier == 1) & (local >= lo) & (local < hi)] = i
    # a link belongs to the region of its lower end's switch (NIC-leaf: the leaf)
    a, b = fabric.link_a, fabric.link_b
    lower = np.where((a >= sb) & (a < sb + fabric.n_switches), a, b)
    is_sw = (lower >= sb) & (lower < sb + fabric.n_switches)
    link_owner = np.full(fabric.n_links, -2, np.int64)
    link_owner[is_sw] = owner[lower[is_sw] - sb]
    out = []
    gpn = d.gpus_per_node
    for i, (r, spec) in enumerate(zip(regions, d.regions)):
        mine = owner == i
        links = link_owner == i
        nics = r["nodes"] * d.nics_per_node
        capex = float(mine.sum()) * sw.price_usd + nics * nic.price_usd + float(price[links].sum())
        watts = float(mine.sum()) * sw.power_w + nics * nic.power_w + float(power[links].sum())
        placed = [j for j, where in placement.items() if where == r["name"]] if placement is not None \
            else list(spec.jobs)
        out.append({"region": r["name"], "cabling": r["family"], "servers": r["nodes"], "gpus": r["nodes"] * gpn,
                    "leaf_ratio": r["oversubscription"][0],
                    "spine_ratio": r["oversubscription"][1] if r["spines"] else None,
                    "leaves": int(((tier == 0) & mine).sum()), "spines": int(((tier == 1) & mine).sum()),
                    "jobs": placed, "capex_usd": capex, "power_w": watts})
    shared = owner == -1
    join = fabric.structure.get("join", "")
    out.append({"region": "shared", "cabling": join, "servers": 0, "gpus": 0, "leaf_ratio": None,
                "spine_ratio": None, "leaves": 0, "spines": int(((tier == 1) & shared).sum()), "jobs": [],
                "cores": int(((tier == 2) & shared).sum()),
                "capex_usd": float(bom.cost_usd) - sum(x["capex_usd"] for x in out),
                "power_w": float(bom.power_w) - sum(x["power_w"] for x in out)})
    return out
