"""Where the power goes on the floor: per compute rack, network racks, the facility total; and rack units.

Limits of an upgrade are physical: a rack's power feed, the facility's, the free rack units for new switches. This
module puts every item of a fabric's bill of materials in a place:

- **compute racks** (:mod:`fabric.topology.racks`: node slots fill racks in order, as many servers as the rack
  layout's power budget takes): the servers (catalog server power), their NICs, the NIC-side transceivers and the
  powered server cables (active copper, AOC) of their links; and, for families whose leaves sit in the rack of
  their nodes (top-of-rack Clos, dragonfly routers), each leaf with the switch-side modules of all its optical
  ports (NVIDIA's SuperPOD puts rail leaves in network racks: facts.md section 10);
- **network racks**: every other switch (spines, cores, rail leaves, a storage network's switches) with its
  modules.

Power is counted as the rest of fabric counts it (the bill of materials and :mod:`fabric.economics`): servers at
the catalog's server power, plus every network item at its catalog power, so the compute racks plus the network
racks add up to ``compute_power_w + network power_w`` exactly (tests/test_brownfield.py).

Rack units are per switch model (:data:`SWITCH_RACK_UNITS`, editable): what an upgrade needs of free space is the
rack units of the switches it adds minus those it takes out.

Field names for the lead to reconcile with branch issue17 (fabric/rackpower.py): the upgrade limits here are
``rack_power_w`` (most power of any compute rack after the upgrade, W) and ``facility_power_w`` (servers plus
network after the upgrade, W), see :class:`fabric.brownfield.upgrade.UpgradeLimits`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from fabric.errors import DesignError
from fabric.topology import racks
from fabric.topology.fabric import LINK_KINDS, MEDIA

__all__ = ["SWITCH_RACK_UNITS", "DEFAULT_RACK_UNITS", "SitePower", "site_power", "switch_rack_units"]

#: Rack units per switch model: the form factor of the class's common products (vendor datasheets; an estimate
#: where a class has several): QM9700 (NDR, 64 x 400G) and QM8700 (HDR, 40 x 200G) are 1U (NVIDIA datasheets);
#: Quantum-X800 Q3400 (144 x 800G) is 4U (NVIDIA); 64 x 800G Tomahawk 5 boxes (e.g. Arista 7060X5) are 2U, as are
#: 64 x 400G Tomahawk 4 boxes; 32 x 400G Tomahawk 3 boxes are 1U.
SWITCH_RACK_UNITS = {"ib-ndr-64x400": 1, "ib-hdr-40x200": 1, "ib-xdr-144x800": 4, "eth-51t-64x800": 2,
                     "eth-25t-64x400": 2, "eth-12t-32x400": 1}
#: A switch model missing from the table (a user's catalog row) counts as 2U: the larger of the common sizes.
DEFAULT_RACK_UNITS = 2

_K = {k: i for i, k in enumerate(LINK_KINDS)}
_OPTICS = MEDIA.index("optics")
_CABLE_KIND = {"copper": "dac", "active_copper": "acc", "aoc": "aoc"}
_END = re.compile(r"^(?P<kind>[\w-]+) \((?P<tier>\w+) end\)$")


def switch_rack_units(model: str, table: dict | None = None) -> float:
    """Rack units of one switch of ``model`` (``table`` overrides :data:`SWITCH_RACK_UNITS`)."""
    if table and model in table:
        v = table[model]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 48:
            raise DesignError(f"rack units of switch {model}: expected a number in (0, 48], got {v!r}")
        return float(v)
    return float(SWITCH_RACK_UNITS.get(model, DEFAULT_RACK_UNITS))


@dataclass(frozen=True)
class SitePower:
    """Power of a built fabric by place, in watts: ``compute_rack_w[r]`` per compute rack (servers, their network
    items, top-of-rack leaves), ``network_w`` in network racks, ``total_w`` = servers + network."""

    compute_rack_w: np.ndarray
    network_w: float
    server_w: float
    total_w: float

    @property
    def max_rack_w(self) -> float:
        return float(self.compute_rack_w.max()) if self.compute_rack_w.size else 0.0

    @property
    def racks(self) -> int:
        return int(self.compute_rack_w.size)

    def racks_over(self, limit_w: float) -> int:
        return int((self.compute_rack_w > limit_w * (1 + 1e-12)).sum())

    def to_dict(self) -> dict:
        return {"compute_racks": self.racks, "max_compute_rack_w": self.max_rack_w,
                "network_racks_w": self.network_w, "total_w": self.total_w}


def site_power(fabric, bom, catalog=None) -> SitePower:
    """Where ``fabric``'s power goes (see the module docstring); ``bom`` is its bill of materials."""
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    d = fabric.design
    gpu = cat.gpu(d.gpu_model)
    nodes, npn, reserved = d.nodes, d.nics_per_node, d.reserved_node_slots
    per_rack = int(fabric.structure.get("nodes_per_rack") or racks.nodes_per_rack(gpu, d.gpus_per_node))
    slots = nodes + reserved
    n_racks = math.ceil(slots / per_rack)
    node_rack = (np.arange(nodes) + reserved) // per_rack
    server_w = gpu.server_power_w * d.gpus_per_node / gpu.server_gpus
    rack_w = np.bincount(node_rack, weights=np.full(nodes, server_w), minlength=n_racks).astype(float)
    network_w = 0.0

    def node_of_nic(nic_node):
        return (np.asarray(nic_node) - fabric.nic_base) // npn

    placed = 0.0
    for item in bom.items:
        if item.category == "nic":
            per_node = npn if item.where == "server" else 1
            rack_w += np.bincount(node_rack, weights=np.full(nodes, per_node * item.unit_power_w),
                                  minlength=n_racks)[:n_racks]
            placed += item.power_w
        elif item.category == "cable" and item.where == "storage network":
            rack_w += np.bincount(node_rack, weights=np.full(nodes, item.unit_power_w), minlength=n_racks)[:n_racks]
            placed += item.power_w
    sel = np.flatnonzero(fabric.link_kind == _K["nic-leaf"])
    nic_end = [i for i in bom.items if i.category == "transceiver" and i.where == "nic-leaf (NIC end)"]
    if nic_end:
        optical = sel[fabric.link_medium[sel] == _OPTICS]
        rack_w += np.bincount(node_rack[node_of_nic(fabric.link_a[optical])], minlength=n_racks)[:n_racks] \
            * nic_end[0].unit_power_w
        placed += sum(i.power_w for i in nic_end)
    # powered server cables (ACC, AOC): the model the BOM chose for each medium and length
    for code in np.unique(fabric.link_medium[sel]).tolist():
        medium = MEDIA[code]
        if medium not in _CABLE_KIND:
            continue
        links = sel[fabric.link_medium[sel] == code]
        for reach in np.unique(fabric.link_reach_m[links]).tolist():
            grp = links[fabric.link_reach_m[links] == reach]
            cable = cat.cable_for(_CABLE_KIND[medium], fabric.link_speed_bps, reach)
            if cable.power_w:
                rack_w += np.bincount(node_rack[node_of_nic(fabric.link_a[grp])], minlength=n_racks)[:n_racks] \
                    * cable.power_w
                placed += cable.power_w * grp.size
    # switches and their switch-side modules
    n_sw = fabric.n_switches
    sw_w = np.full(n_sw, cat.switch(d.switch_model).power_w)
    for item in bom.items:
        if item.category != "transceiver":
            continue
        m = _END.match(item.where)
        if not m or m.group("tier") == "NIC":
            continue
        tx = cat.transceiver(item.model)
        k = fabric.link_kind == _K[m.group("kind")]
        ids = np.flatnonzero(k & (fabric.link_medium == _OPTICS)
                             & np.isclose(fabric.link_capacity_bps, tx.speed_bps, rtol=1e-9))
        ends = np.concatenate([fabric.link_a[ids], fabric.link_b[ids]])
        ends = ends[(ends >= fabric.switch_base) & (ends < fabric.switch_base + n_sw)] - fabric.switch_base
        tiers = fabric.node_tier[fabric.switch_base + ends]
        ends = ends[np.array([fabric.tier_names[t] for t in tiers]) == m.group("tier")] if ends.size else ends
        sw_w += -(-np.bincount(ends, minlength=n_sw) // tx.ports_per_module) * tx.power_w
    placed += float(sw_w.sum())
    sw_tier = fabric.node_tier[fabric.switch_base:fabric.switch_base + n_sw]
    sw_plane = fabric.node_plane[fabric.switch_base:fabric.switch_base + n_sw]
    if d.family in racks.TOP_OF_RACK_FAMILIES:
        held = int(fabric.structure.get("nodes_per_leaf") or fabric.structure.get("nodes_per_router") or slots)
        leaf_rack = racks.leaf_racks(np.arange(slots) // max(held, 1), per_rack)
        for p in range(fabric.planes):
            ids = np.flatnonzero((sw_tier == 0) & (sw_plane == p))
            rack_w += np.bincount(leaf_rack[: ids.size], weights=sw_w[ids], minlength=n_racks)[:n_racks]
            sw_w[ids] = 0.0
    network_w += float(sw_w.sum())
    # anything not placed above (a storage network's switches) is in the network racks
    network_w += bom.power_w - placed
    return SitePower(rack_w, float(network_w), float(server_w * nodes), float(bom.compute_power_w + bom.power_w))
