"""Racks and power of a built design: switches and GPUs per rack, power per rack against a limit, the facility's
power, and the cables by reach class.

Rack layout (the builder's, :mod:`fabric.topology.racks`): compute racks hold as many servers as the design's rack
power (``Design.rack_power_w``, default 40.8 kW) feeds, a rack-scale system (GB200 NVL72, ~120 kW; an NVL36x2 half,
~66 kW) is a rack of its own; a top-of-rack leaf (``clos``) or a dragonfly router sits in the rack of its middle
node and adds its power there (a design with an explicit ``rack_power_w`` keeps room for it; the default 40.8 kW is
the servers', NVIDIA's four DGX H100 per rack). Every other switch (rail leaves, spines, cores) sits in network
racks of at most :data:`NETWORK_RACK_SWITCHES` switches (a 42U rack of 2U switches with room for patch panels; an
assumption) and at most the rack power. A switch counts its catalog power in its rack; transceivers and active
cables count in the facility's power.

Power: IT power = servers (GPUs, CPUs, NVLink switches: the catalog server's rated power) + network (switches,
switch- and NIC-side optics, active cables) without the NICs, which are inside the servers' rated power; facility
power = IT power x PUE (facts.md section 11: 1.1-1.5).

Cables by reach class (facts.md section 10): in the rack (passive copper reaches ~2-3 m), the neighbouring rack
(active copper, ~5-7 m), the row or hall (AOC or multimode optics, up to ~100 m), across halls (single-mode
optics, 500 m and more).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from fabric.topology import racks
from fabric.topology.fabric import LINK_KINDS, SWITCH

__all__ = ["rack_report", "NETWORK_RACK_SWITCHES", "REACH_CLASSES", "DEFAULT_PUE"]

#: Switches in one network rack at most (2U switches in a 42U rack beside patch panels and cable management).
NETWORK_RACK_SWITCHES = 16
#: Reach classes: (name, longest link in metres).
REACH_CLASSES = (("in rack (copper, <= 3 m)", 3.0), ("neighbouring rack (active copper, <= 7 m)", 7.0),
                 ("row or hall (AOC or multimode, <= 100 m)", 100.0),
                 ("across halls (single-mode)", math.inf))
#: PUE used when none is given (the economics default, facts.md section 11).
DEFAULT_PUE = 1.3
_NETWORK = [LINK_KINDS.index(k) for k in LINK_KINDS if k not in ("nvlink", "pcie")]
#: link kind -> network link or not (a lookup: faster than ``np.isin`` over a million links)
_NETWORK_KIND = np.isin(np.arange(len(LINK_KINDS)), _NETWORK)


def _switch_power(fabric, bom) -> np.ndarray:
    """Catalog power of each switch (index: node id - switch_base)."""
    tiers = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches].astype(np.int64)
    out = np.zeros(fabric.n_switches)
    per_tier = {i.where: i.unit_power_w for i in bom.items if i.category == "switch" and i.where in fabric.tier_names}
    for t, name in enumerate(fabric.tier_names):
        out[tiers == t] = per_tier.get(name, 0.0)
    return out


def _leaf_racks(fabric, per_rack: int) -> np.ndarray:
    """Compute rack of each top-of-rack leaf / router (index: switch index; -1 for switches in network racks):
    the rack of the middle node cabled to it."""
    design = fabric.design
    out = np.full(fabric.n_switches, -1, np.int64)
    if design.family not in racks.TOP_OF_RACK_FAMILIES:
        return out
    npn = design.nics_per_node
    nic_node = np.arange(fabric.n_nics) // max(npn, 1)
    sw = fabric.nic_ports.ravel() - fabric.switch_base
    node = np.repeat(nic_node, fabric.nic_ports.shape[1])
    order = np.lexsort((node, sw))
    sw, node = sw[order], node[order]
    uniq, start, count = np.unique(sw, return_index=True, return_counts=True)
    mid = node[start + (count - 1) // 2] + design.reserved_node_slots
    out[uniq] = mid // per_rack
    return out


#: per built fabric (its cache key): what the rack report reads from the cabling alone, kept for the search, which
#: reports many designs of one cabling (leaf racks by nodes per rack, cables by reach class)
_CABLING_CACHE: dict = {}


def _cabling_facts(fabric, per_rack: int) -> tuple[np.ndarray, np.ndarray]:
    """(compute rack of each top-of-rack switch, network cables per reach class) of ``fabric``, cached."""
    key = (fabric.cache_key, per_rack) if fabric.cache_key else None
    hit = _CABLING_CACHE.get(key) if key is not None else None
    if hit is not None and hit[0]() is not fabric.link_reach_m:      # another build of that cabling (catalog)
        hit = None
    if hit is None:
        net = _NETWORK_KIND[fabric.link_kind]
        bounds = np.array([r for _, r in REACH_CLASSES[:-1]])
        cls = np.searchsorted(bounds, fabric.link_reach_m[net], side="left")
        # a weak reference: the cache must not keep a dropped fabric's link arrays alive
        hit = (weakref.ref(fabric.link_reach_m), _leaf_racks(fabric, per_rack),
               np.bincount(cls, minlength=len(REACH_CLASSES)))
        if key is not None:
            if len(_CABLING_CACHE) > 256:
                _CABLING_CACHE.clear()
            _CABLING_CACHE[key] = hit
    return hit[1], hit[2]


def rack_report(design, *, catalog=None, fabric=None, bom=None, rack_limit_w: float | None = None,
                pue: float = DEFAULT_PUE) -> dict:
    """Racks, their contents and power, the facility's power and the cables by reach class (module docstring).

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
    slots = design.nodes + design.reserved_node_slots
    n_compute = math.ceil(slots / per_rack)
    node_power = gpu.server_power_w * gpn / gpu.server_gpus
    slot_rack = np.arange(slots) // per_rack
    gpus_in = np.bincount(slot_rack[design.reserved_node_slots:], minlength=n_compute) * gpn
    power = gpus_in / gpn * node_power
    sw_power = _switch_power(fabric, bom)
    leaf_rack, counts = _cabling_facts(fabric, per_rack)
    tor = leaf_rack >= 0
    switches_in = np.bincount(leaf_rack[tor], minlength=n_compute)
    power = power + np.bincount(leaf_rack[tor], weights=sw_power[tor], minlength=n_compute)
    # network racks: the other switches, tier by tier, as many per rack as space and the rack power allow
    net_rows = []
    tiers = fabric.node_tier[fabric.switch_base:fabric.switch_base + fabric.n_switches]
    for t, name in enumerate(fabric.tier_names):
        sel = (tiers == t) & ~tor
        n = int(sel.sum())
        if not n:
            continue
        each = float(sw_power[sel].max())
        fit = NETWORK_RACK_SWITCHES if each <= 0 else max(1, min(NETWORK_RACK_SWITCHES, int(budget // each)))
        k = math.ceil(n / fit)
        net_rows.append({"tier": name, "switches": n, "racks": k, "switches_per_rack": fit,
                         "power_per_rack_w": min(fit, n) * each})
    compute_max = float(power.max()) if power.size else 0.0
    net_max = max([r["power_per_rack_w"] for r in net_rows], default=0.0)
    over = int((power > limit * (1 + 1e-9)).sum()) + sum(r["racks"] for r in net_rows
                                                          if r["power_per_rack_w"] > limit * (1 + 1e-9))
    # facility power: servers + network without the NICs (inside the servers' rated power)
    server_w = float(design.gpus * gpu.server_power_w / gpu.server_gpus)
    nic_w = sum(i.power_w for i in bom.items if i.category == "nic")
    network_w = float(bom.power_w - nic_w)
    it_w = server_w + network_w
    # cables by reach class (network links; NVLink and PCIe are inside the servers): ``counts`` above
    domain = design.domain_size
    racks_per_domain = max(1, math.ceil(domain / (per_rack * gpn))) if domain > gpn else 0
    return {
        "compute_racks": int(n_compute), "nodes_per_rack": per_rack, "gpus_per_rack": int(per_rack * gpn),
        "servers_per_rack": max(1, per_rack * gpn // gpu.server_gpus) if gpu.server_gpus >= gpn else per_rack,
        "compute_rack_power_w": compute_max, "compute_rack_power_mean_w": float(power.mean()) if power.size else 0.0,
        "tor_switches_per_rack": int(switches_in.max()) if switches_in.size else 0,
        "network_racks": sum(r["racks"] for r in net_rows), "network_rack_rows": net_rows,
        "max_rack_power_w": max(compute_max, net_max),
        "rack_power_limit_w": None if math.isinf(limit) else limit, "racks_over_limit": over,
        "rack_power_budget_w": budget, "racks_per_scale_up_domain": racks_per_domain,
        "server_power_w": server_w, "network_power_w": network_w, "it_power_w": it_w, "pue": float(pue),
        "facility_power_w": it_w * float(pue),
        "cables_by_reach": {name: int(c) for (name, _), c in zip(REACH_CLASSES, counts.tolist())},
    }
