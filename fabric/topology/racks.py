"""Rack layout and the cabling of server-to-leaf links by distance.

Servers fill racks in node-slot order (reserved slots, such as a SuperPOD's UFM node, first), as many per rack as
the rack's power allows: :func:`nodes_per_rack`. A top-of-rack leaf (``clos``) or a dragonfly router sits in the
rack of its middle node (:func:`leaf_racks`); rail leaves (``rail_optimized``, ``rail_only``) take
one port from nodes in many racks and sit in a network rack of the row. Each server-to-leaf link then falls in a
distance class, and takes the first medium the catalog has for it:

=======================  ============  ===============================================================
class                    cable length  medium: the first the catalog has at the link speed and length
=======================  ============  ===============================================================
same rack                2 m           passive copper (DAC), active copper (ACC), AOC, optics
neighbouring rack        5 m           passive copper, active copper, AOC, optics
farther / network rack   30 m          optics (a transceiver at each end and fibre)
=======================  ============  ===============================================================

(facts.md section 10: DAC ~2-3 m at 400/800G, inside a rack; ACC/AEC ~5-7 m, neighbouring racks; AOC up to ~30-100 m;
multimode optics 50-100 m. The DGX SuperPOD compute fabric, rail-optimized, is cabled with optics.)
"""

from __future__ import annotations

import math

import numpy as np

from fabric.errors import DesignError
from fabric.topology.fabric import MEDIA

__all__ = [
    "RACK_POWER_BUDGET_W", "REACH_IN_RACK_M", "REACH_NEIGHBOUR_RACK_M", "REACH_ROW_M",
    "IN_RACK", "NEIGHBOUR_RACK", "ROW", "DISTANCE_NAMES",
    "nodes_per_rack", "leaf_racks", "endpoint_distance", "endpoint_media", "has_top_of_rack_leaves",
    "top_of_rack_slots",
]

#: Power one compute rack is given, in watts. NVIDIA's DGX SuperPOD data center design for DGX H100 puts four
#: DGX H100 systems (10.2 kW each, facts.md section 9) in one rack: 40.8 kW. Servers per rack follow from each GPU
#: model's server power (``server_power_w`` in gpus.csv): 4 DGX H100 / H200, 6 DGX A100 (6.5 kW), 2 DGX B200
#: (14.3 kW); a rack-scale system above the budget (GB200 NVL72, ~120 kW, liquid-cooled) is its own rack.
RACK_POWER_BUDGET_W = 40_800.0
#: A server to a leaf in its own rack: passive copper reaches ~2-3 m (facts.md section 10).
REACH_IN_RACK_M = 2.0
#: A server to a leaf in the next rack of the row: across one rack width plus the runs up and down both racks,
#: within the ~5-7 m of active copper (facts.md section 10).
REACH_NEIGHBOUR_RACK_M = 5.0
#: A server to a leaf farther along the row or in the row's network rack: multimode optics (50-100 m) or AOC.
REACH_ROW_M = 30.0

IN_RACK, NEIGHBOUR_RACK, ROW = 0, 1, 2
DISTANCE_NAMES = ("same rack", "neighbouring rack", "other rack")
_REACH = (REACH_IN_RACK_M, REACH_NEIGHBOUR_RACK_M, REACH_ROW_M)
#: Cable media tried in order for each distance class: (fabric medium name, catalog cable kind).
_CABLES = {IN_RACK: (("copper", "dac"), ("active_copper", "acc"), ("aoc", "aoc")),
           NEIGHBOUR_RACK: (("copper", "dac"), ("active_copper", "acc"), ("aoc", "aoc")),
           ROW: ()}
#: Families whose leaves (routers) sit in the rack of their nodes.
TOP_OF_RACK_FAMILIES = ("clos", "dragonfly")


def nodes_per_rack(gpu, gpus_per_node: int, budget_w: float | None = None, reserve_w: float = 0.0) -> int:
    """Nodes (of ``gpus_per_node`` GPUs) in one rack of ``budget_w`` watts (default :data:`RACK_POWER_BUDGET_W`),
    from the catalog server's power; ``reserve_w`` of the budget is kept for the rack's top-of-rack switch.

    A server whose power exceeds the budget (a rack-scale system) is a rack of its own; a catalog row with no server
    power (0 W) is taken as one server per rack, which overstates the cabling rather than understating it.
    """
    budget = (RACK_POWER_BUDGET_W if budget_w is None else float(budget_w)) - float(reserve_w)
    if gpu.server_power_w <= 0 or gpu.server_power_w > budget:
        servers = 1
    else:
        servers = math.floor(budget / gpu.server_power_w + 1e-9)
    return max(1, servers * gpu.server_gpus // gpus_per_node)


def leaf_racks(slot_leaf: np.ndarray, per_rack: int) -> np.ndarray:
    """Rack of each leaf (index = leaf id): the rack of its middle node slot (the lower middle for an even count).

    ``slot_leaf[s]`` is the leaf that node slot ``s`` is cabled to (slot ``s`` sits in rack ``s // per_rack``). A
    top-of-rack leaf holds consecutive slots, so when they span two racks this is the rack holding more of them
    (the first on a tie), and when they span more it is a full middle rack, the fewest racks away from the rest.
    """
    slot_leaf = np.asarray(slot_leaf, np.int64)
    order = np.argsort(slot_leaf, kind="stable")                 # slots grouped by leaf, in slot order
    leaves, start, count = np.unique(slot_leaf[order], return_index=True, return_counts=True)
    out = np.zeros(int(slot_leaf.max()) + 1, np.int64)
    out[leaves] = order[start + (count - 1) // 2] // per_rack
    return out


def has_top_of_rack_leaves(design) -> bool:
    """True when some of the design's leaves sit in their servers' racks (a Clos, a dragonfly, a Clos region)."""
    if design.family == "regions":
        return any(r.family in TOP_OF_RACK_FAMILIES for r in design.regions)
    return design.family in TOP_OF_RACK_FAMILIES


def top_of_rack_slots(design, slots: int) -> np.ndarray | None:
    """For a design of regions, which node slots hang off a top-of-rack leaf (their region is a Clos); None for a
    uniform design (its family decides)."""
    if design.family != "regions":
        return None
    return np.repeat(np.array([r.family in TOP_OF_RACK_FAMILIES for r in design.regions]),
                     [r.nodes for r in design.regions])[:slots]


def endpoint_distance(family: str, slot_leaf: np.ndarray, per_rack: int, tor_slots: np.ndarray | None = None
                      ) -> np.ndarray:
    """Distance class (:data:`IN_RACK`, :data:`NEIGHBOUR_RACK`, :data:`ROW`) of each node slot's leaf link.
    ``tor_slots`` (a design of regions): which slots' leaves are top-of-rack; the others are in the row."""
    slot_leaf = np.asarray(slot_leaf, np.int64)
    if tor_slots is None and family not in TOP_OF_RACK_FAMILIES:
        return np.full(slot_leaf.shape[0], ROW, np.int8)
    rack = np.arange(slot_leaf.shape[0]) // per_rack
    apart = np.abs(rack - leaf_racks(slot_leaf, per_rack)[slot_leaf])
    out = np.minimum(apart, ROW).astype(np.int8)
    if tor_slots is not None:
        out[~np.asarray(tor_slots, bool)] = ROW
    return out


def endpoint_media(catalog, speed_bps: float, cabling: str, distance: np.ndarray, *, why: str = ""):
    """Medium code (index into :data:`~fabric.topology.fabric.MEDIA`) and cable length (m) of each server-to-leaf
    link of the given distance classes.

    ``cabling`` is the design's ``endpoint_cabling``: ``auto`` takes the first medium of the module docstring's table
    the catalog has; ``optics`` always optics; ``copper`` passive copper, refused with a :class:`DesignError` when
    a link leaves its rack (``why`` says why the ends are apart).
    """
    distance = np.asarray(distance, np.int8)
    reach = np.asarray(_REACH, float)[distance]
    by_class = np.full(len(_REACH), MEDIA.index("optics"), np.int8)
    if cabling == "copper":
        apart = int((distance != IN_RACK).sum())
        if apart:
            raise DesignError(
                f"endpoint_cabling 'copper': {apart:,} of {distance.size:,} server-to-leaf links join a node to a "
                f"leaf in another rack{why}, beyond the ~{REACH_IN_RACK_M:g} m of passive copper; use 'auto' "
                f"(copper inside the rack, active copper or optics beyond it) or 'optics'")
        by_class[IN_RACK] = MEDIA.index("copper")
    elif cabling == "auto":
        for cls, options in _CABLES.items():
            for medium, kind in options:
                if _has_cable(catalog, kind, speed_bps, _REACH[cls]):
                    by_class[cls] = MEDIA.index(medium)
                    break
    return by_class[distance], reach


def _has_cable(catalog, kind: str, speed_bps: float, reach_m: float) -> bool:
    return any(c.kind == kind and c.fits_speed(speed_bps) and c.reach_m >= reach_m for c in catalog.cables.values())
