"""Racks and power of a built design: where every watt sits (compute racks, network racks), GPUs and switches per
rack, power per rack against a limit, the IT and facility power, and the cables by reach class.

One definition of each figure, used by every page, the CLI (``fabric build``, ``fabric upgrade``) and the search:

- **where the power sits** (:func:`place_power`): node slots fill compute racks in order (the builder's layout,
  :mod:`fabric.topology.racks`: as many servers as the design's rack power feeds, default 40.8 kW; a rack-scale
  system is a rack of its own). A compute rack holds its servers at the catalog's server power, which covers their
  NICs (DGX H100: 10.2 kW max with its eight ConnectX-7; a GB200 NVL72 rack's ~120 kW with its trays' NICs), plus the
  NIC-side transceivers and the powered server cables (active copper, AOC) of their links, bought apart; a
  top-of-rack leaf (``clos``) or a dragonfly router sits in the rack of its middle server, with the switch-side
  modules of all its optical ports.
  Every other switch (rail leaves, spines, cores, a storage network's switches) sits, with its modules, in network
  racks of at most :data:`NETWORK_RACK_SWITCHES` switches (a 42U rack of 1-2U switches with room for patch panels; an
  assumption) and at most the rack power;
- **IT power** (:func:`it_power_w`) = servers + the network's bill of materials without its NICs (switches, optics,
  powered cables: what the servers' rating does not cover). The bill of materials' "network power" keeps the NICs
  (it is what the search minimizes); the two are named apart everywhere;
- **facility power** (:func:`facility_power_w`) = IT power x PUE (facts.md section 11: 1.1-1.5; default
  :data:`DEFAULT_PUE`).

Compute racks plus network racks add up to the IT power exactly. Cables by reach class (facts.md section 10): in the
rack (passive copper reaches ~2-3 m), the neighbouring rack (active copper, ~5-7 m), one hall (AOC or multimode
optics, bought as runs of up to 50 m), between halls (single-mode optics, the run between the halls: the floor of
:mod:`fabric.topology.floor`).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from fabric.arrays import unique_rows
from fabric.cost.bom import optical_groups, switch_ends
from fabric.topology import racks
from fabric.topology.fabric import LINK_KINDS, MEDIA, kind_index

__all__ = ["rack_report", "place_power", "Placement", "it_power_w", "nic_power_w", "facility_power_w", "NETWORK_RACK_SWITCHES",
           "REACH_CLASSES", "DEFAULT_PUE"]

#: Switches in one network rack at most (2U switches in a 42U rack beside patch panels and cable management).
NETWORK_RACK_SWITCHES = 16
#: Reach classes: (name, longest link in metres).
REACH_CLASSES = (("in rack (copper, <= 3 m)", 3.0), ("neighbouring rack (active copper, <= 7 m)", 7.0),
                 ("in one hall (AOC or multimode, <= 50 m)", 50.0),
                 ("between halls (single-mode)", math.inf))
#: PUE used when none is given (the economics default, facts.md section 11).
DEFAULT_PUE = 1.3
_NETWORK = [LINK_KINDS.index(k) for k in LINK_KINDS if k not in ("nvlink", "pcie")]
_K = {k: i for i, k in enumerate(LINK_KINDS)}
_OPTICS = MEDIA.index("optics")
_CABLE_KIND = {"copper": "dac", "active_copper": "acc", "aoc": "aoc"}


def nic_power_w(bom) -> float:
    """Power of the bill of materials' NICs, in watts (inside the servers' rated power)."""
    return float(sum(i.power_w for i in bom.items if i.category == "nic"))


def it_power_w(bom) -> float:
    """IT power of a bill of materials, in watts: the servers plus the network items outside them (every item but
    the NICs; module docstring)."""
    return float(bom.compute_power_w + bom.power_w - nic_power_w(bom))


def facility_power_w(it_w: float, pue: float = DEFAULT_PUE) -> float:
    """Facility power, in watts: IT power x PUE."""
    return float(it_w) * float(pue)


@dataclass(frozen=True)
class Placement:
    """Where a fabric's power sits (see the module docstring), in watts.

    ``compute_rack_w[r]``, ``compute_rack_gpus[r]``, ``compute_rack_switches[r]`` and ``compute_rack_reserved[r]``
    (reserved node slots, e.g. a SuperPOD's UFM node) per compute rack;
    ``switch_w[s]`` each fabric switch with its switch-side modules and ``switch_rack[s]`` its compute rack (-1: a
    network rack); ``storage_switches`` / ``storage_switch_w`` a storage network's switches (network racks);
    ``network_rack_w`` all that sits in network racks; ``server_w`` the servers; ``it_w`` servers plus network.
    """

    compute_rack_w: np.ndarray
    compute_rack_gpus: np.ndarray
    compute_rack_switches: np.ndarray
    compute_rack_reserved: np.ndarray
    switch_w: np.ndarray
    switch_rack: np.ndarray
    storage_switches: int
    storage_switch_w: float
    network_rack_w: float
    server_w: float
    it_w: float
    compute_groups: tuple = ()


_PLACEMENT_CACHE: dict = {}


def place_power(fabric, bom, catalog=None) -> Placement:
    """Where every watt of ``fabric`` (with its bill of materials ``bom``) sits: the module docstring's rules.

    Kept per built fabric and bill of materials (the search reports many designs of one cabling)."""
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    # a fabric and its bill of materials are pure functions of the cabling, the storage network and the catalog:
    # the placement is kept under them (not under the fabric object, so a fabric built again finds it); a weak
    # reference to the catalog, so that a dropped catalog's id cannot stand for another
    key = (fabric.cache_key, bool(fabric.design.storage_isolation), id(cat)) if fabric.cache_key else None
    hit = _PLACEMENT_CACHE.get(key) if key is not None else None
    if hit is not None and hit[0]() is cat:
        return hit[1]
    out = _place_power(fabric, bom, cat)
    if key is not None:
        if len(_PLACEMENT_CACHE) > 256:
            _PLACEMENT_CACHE.clear()
        _PLACEMENT_CACHE[key] = (weakref.ref(cat), out)
    return out


def _place_power(fabric, bom, cat) -> Placement:
    d = fabric.design
    gpu = cat.gpu(d.gpu_model)
    nodes, npn, reserved = d.nodes, d.nics_per_node, d.reserved_node_slots
    per_rack = int(fabric.structure.get("nodes_per_rack") or racks.nodes_per_rack(gpu, d.gpus_per_node))
    slots = nodes + reserved
    n_racks = math.ceil(slots / per_rack)
    node_rack = (np.arange(nodes) + reserved) // per_rack
    per_node_w = gpu.server_power_w * d.gpus_per_node / gpu.server_gpus
    rack_w = np.bincount(node_rack, weights=np.full(nodes, per_node_w), minlength=n_racks).astype(float)
    rack_gpus = np.bincount(node_rack, minlength=n_racks) * d.gpus_per_node
    placed = 0.0

    def in_racks(node_ids, watts_each):
        return np.bincount(node_rack[node_ids], minlength=n_racks)[:n_racks] * watts_each

    def node_of_nic(nic_node):
        return (np.asarray(nic_node) - fabric.nic_base) // npn

    every_node = np.arange(nodes)
    for item in bom.items:          # NICs are inside the servers' rated power
        if item.category == "cable" and item.where == "storage network":
            rack_w += in_racks(every_node, item.unit_power_w)
            placed += item.power_w
    sel = fabric.links_of_kind("nic-leaf")
    optics = optical_groups(fabric, cat)        # the bill of materials' modules, link by link
    for g in optics:
        if g.nic_module is not None:
            rack_w += in_racks(node_of_nic(np.take(fabric.link_a, g.links)), g.nic_module.power_w)
            placed += g.nic_module.power_w * g.links.size
    # powered server cables (ACC, AOC): the model the bill of materials chose for each medium and length
    medium_of = np.take(fabric.link_medium, sel)
    for code in [c for c in range(len(MEDIA)) if (medium_of == c).any()]:      # the media present, in order
        medium = MEDIA[code]
        if medium not in _CABLE_KIND:
            continue
        links = sel[medium_of == code]
        reach_of = np.take(fabric.link_reach_m, links)
        for reach in np.unique(reach_of).tolist():
            grp = links[reach_of == reach]
            cable = cat.cable_for(_CABLE_KIND[medium], fabric.link_speed_bps, reach)
            if cable.power_w:
                rack_w += in_racks(node_of_nic(fabric.link_a[grp]), cable.power_w)
                placed += cable.power_w * grp.size
    # switches and their switch-side modules
    n_sw = fabric.n_switches
    sw_w = np.full(n_sw, cat.switch(d.switch_model).power_w)
    tier_of = fabric.node_tier[fabric.switch_base:fabric.switch_base + n_sw]
    for g in optics:
        per_switch = g.switch_ends if g.switch_ends is not None else switch_ends(fabric, g.links)
        sw_w += -(-per_switch // g.switch_module.ports_per_module) * g.switch_module.power_w
    placed += float(sw_w.sum())
    sw_rack = np.full(n_sw, -1, np.int64)
    if d.family == "regions":               # the leaves of Clos regions sit in their servers' racks
        sw_plane = fabric.node_plane[fabric.switch_base:fabric.switch_base + n_sw]
        for reg in fabric.structure["regions"]:
            if reg["family"] not in racks.TOP_OF_RACK_FAMILIES:
                continue
            held = max(1, int(reg["nodes_per_leaf"]))
            k = np.arange(-(-int(reg["nodes"]) // held))
            count = np.minimum(held, int(reg["nodes"]) - k * held)
            # each leaf in the rack of its middle server (racks.leaf_racks), counted from the region's first slot
            lr = (int(reg["first_node"]) + reserved + k * held + (count - 1) // 2) // per_rack
            l0, l1 = reg["leaf_range"]
            for p in range(fabric.planes):
                ids = np.flatnonzero((tier_of == 0) & (sw_plane == p))[l0:l1]
                sw_rack[ids] = lr[:ids.size]
    elif d.family in racks.TOP_OF_RACK_FAMILIES:
        held = int(fabric.structure.get("nodes_per_leaf") or fabric.structure.get("nodes_per_router") or slots)
        leaf_rack = racks.leaf_racks(np.arange(slots) // max(held, 1), per_rack)
        sw_plane = fabric.node_plane[fabric.switch_base:fabric.switch_base + n_sw]
        for p in range(fabric.planes):
            ids = np.flatnonzero((tier_of == 0) & (sw_plane == p))
            n = min(ids.size, leaf_rack.size)     # a dragonfly group's routers beyond its servers: network racks
            sw_rack[ids[:n]] = leaf_rack[:n]
    tor = sw_rack >= 0
    rack_w += np.bincount(sw_rack[tor], weights=sw_w[tor], minlength=n_racks)[:n_racks]
    rack_sw = np.bincount(sw_rack[tor], minlength=n_racks)[:n_racks]
    storage = [i for i in bom.items if i.category == "switch" and i.where == "storage network"]
    storage_n = sum(i.count for i in storage)
    storage_each = max((i.unit_power_w for i in storage), default=0.0)
    # what sits in network racks: the other switches with their modules, a storage network's switches, and anything
    # not placed above
    it_w = it_power_w(bom)
    server_w = float(per_node_w * nodes)
    network_rack_w = float(sw_w[~tor].sum()) + (float(bom.power_w) - nic_power_w(bom) - placed)
    rack_reserved = np.bincount(np.arange(reserved) // per_rack, minlength=n_racks)[:n_racks]
    return Placement(rack_w, rack_gpus, rack_sw, rack_reserved, sw_w, sw_rack, int(storage_n), float(storage_each),
                     network_rack_w, server_w, it_w,
                     tuple(_compute_groups(rack_w, rack_gpus, rack_sw, rack_reserved)))


#: per built fabric (its cache key): the network cables per reach class, kept for the search
_CABLING_CACHE: dict = {}


def _reach_counts(fabric) -> np.ndarray:
    """Network cables per reach class of ``fabric``, cached per cabling."""
    key = fabric.cache_key or None
    hit = _CABLING_CACHE.get(key) if key is not None else None
    if hit is not None and hit[0]() is not fabric.link_reach_m:      # another build of that cabling (catalog)
        hit = None
    if hit is None:
        # per class: the network links at most its reach and beyond the class before (as a sorted search of each
        # length among the bounds counts them), kind by kind from the builder's per-kind link ids
        bounds = [r for _, r in REACH_CLASSES[:-1]]
        upto = np.zeros(len(bounds), np.int64)
        total = 0
        for k in _NETWORK:
            reach = np.take(fabric.link_reach_m, kind_index(fabric.link_kind, int(k)))
            total += reach.size
            if reach.size:
                upto += [np.count_nonzero(reach <= b) for b in bounds]
        counts = np.diff(np.concatenate([[0], upto, [total]]))
        # a weak reference: the cache must not keep a dropped fabric's link arrays alive
        hit = (weakref.ref(fabric.link_reach_m), counts)
        if key is not None:
            if len(_CABLING_CACHE) > 256:
                _CABLING_CACHE.clear()
            _CABLING_CACHE[key] = hit
    return hit[1]


def _compute_groups(rack_w, rack_gpus, rack_sw, rack_reserved) -> list[dict]:
    """Compute racks grouped by what they hold: ``racks``, ``gpus``, ``switches``, ``reserved`` (node slots),
    ``power_w`` (the most of the group) and ``power_min_w``; racks with switches first, then by GPUs."""
    keys = np.stack([rack_gpus, rack_sw, rack_reserved], axis=1)
    if not keys.size:
        return []
    uniq, inv = unique_rows(keys)        # np.unique(keys, axis=0, return_inverse=True), without its slow row sort
    rows = []
    for g, (gpus, sws, res) in enumerate(uniq.tolist()):
        w = rack_w[inv == g]
        rows.append({"racks": int(w.size), "gpus": int(gpus), "switches": int(sws), "reserved": int(res),
                     "power_w": float(w.max()), "power_min_w": float(w.min())})
    return sorted(rows, key=lambda r: (-r["switches"], -r["gpus"]))


def rack_report(design, *, catalog=None, fabric=None, bom=None, rack_limit_w: float | None = None,
                pue: float = DEFAULT_PUE) -> dict:
    """Racks, their contents and power, the IT and facility power and the cables by reach class (module docstring).

    ``rack_limit_w``: the most power a rack may draw (default: the design's ``rack_power_w`` when it sets one, else
    no limit); racks above it are counted in ``racks_over_limit``. All power in watts.
    """
    from fabric.catalog import default_catalog
    from fabric.cost import bill_of_materials
    from fabric.topology import build_fabric

    cat = catalog or default_catalog()
    fabric = fabric if fabric is not None else build_fabric(design, cat)
    bom = bom if bom is not None else bill_of_materials(fabric, cat)
    gpu = cat.gpu(design.gpu_model)
    gpn = design.gpus_per_node
    budget = design.rack_power_w or racks.RACK_POWER_BUDGET_W
    limit = float(rack_limit_w) if rack_limit_w is not None else (
        float(design.rack_power_w) if design.rack_power_w is not None else math.inf)
    per_rack = int(fabric.structure.get("nodes_per_rack") or racks.nodes_per_rack(gpu, gpn, design.rack_power_w))
    place = place_power(fabric, bom, cat)
    power = place.compute_rack_w
    tor = place.switch_rack >= 0
    # network racks: the other switches, tier by tier, as many per rack as space and the rack power allow
    net_rows = []
    tiers = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches]
    groups = [(name, place.switch_w[(tiers == t) & ~tor]) for t, name in enumerate(fabric.tier_names)]
    if place.storage_switches:
        groups.append(("storage network", np.full(place.storage_switches, place.storage_switch_w)))
    for name, watts in groups:
        n = int(watts.size)
        if not n:
            continue
        each = float(watts.max())
        fit = NETWORK_RACK_SWITCHES if each <= 0 else max(1, min(NETWORK_RACK_SWITCHES, int(budget // each)))
        k = math.ceil(n / fit)
        net_rows.append({"tier": name, "switches": n, "racks": k, "switches_per_rack": fit,
                         "power_per_rack_w": min(fit, n) * each})
    compute_max = float(power.max()) if power.size else 0.0
    net_max = max([r["power_per_rack_w"] for r in net_rows], default=0.0)
    over = int((power > limit * (1 + 1e-9)).sum()) + sum(r["racks"] for r in net_rows
                                                          if r["power_per_rack_w"] > limit * (1 + 1e-9))
    domain = design.domain_size
    racks_per_domain = max(1, math.ceil(domain / (per_rack * gpn))) if domain > gpn else 0
    tor_family = racks.has_top_of_rack_leaves(design)
    held = int(fabric.structure.get("nodes_per_leaf") or fabric.structure.get("nodes_per_router") or 0)
    if design.family == "regions":          # the most servers one top-of-rack leaf of a Clos region holds
        held = max((int(r["nodes_per_leaf"]) for r in fabric.structure["regions"]
                    if r["family"] in racks.TOP_OF_RACK_FAMILIES), default=0)
    return {
        "compute_racks": int(power.size), "nodes_per_rack": per_rack, "gpus_per_rack": int(per_rack * gpn),
        "servers_per_rack": max(1, per_rack * gpn // gpu.server_gpus) if gpu.server_gpus >= gpn else per_rack,
        "compute_rack_power_w": compute_max, "compute_rack_power_mean_w": float(power.mean()) if power.size else 0.0,
        "compute_rack_groups": [dict(g) for g in place.compute_groups],
        "tor_switches_per_rack": int(place.compute_rack_switches.max()) if power.size else 0,
        "tor_switches": int(tor.sum()), "leaves_in_compute_racks": tor_family,
        "tor_switch_kind": "router" if design.family == "dragonfly" else "leaf switch",
        "servers_per_leaf": held if tor_family else 0,
        "network_racks": sum(r["racks"] for r in net_rows), "network_rack_rows": net_rows,
        "max_rack_power_w": max(compute_max, net_max),
        "rack_power_limit_w": None if math.isinf(limit) else limit, "racks_over_limit": over,
        "rack_power_budget_w": budget, "racks_per_scale_up_domain": racks_per_domain,
        "server_power_w": place.server_w, "network_power_w": float(bom.power_w), "nic_power_w": nic_power_w(bom),
        "network_outside_servers_w": float(bom.power_w) - nic_power_w(bom), "it_power_w": place.it_w,
        "pue": float(pue), "facility_power_w": facility_power_w(place.it_w, pue),
        "cables_by_reach": {name: int(c) for (name, _), c in zip(REACH_CLASSES, _reach_counts(fabric).tolist())},
    }
