"""Topology builders: plain functions from a design (+ catalog) to a :class:`~fabric.topology.fabric.Fabric`.

- :func:`build_fabric` dispatches on ``design.family``;
- ``clos``: 1/2/3-tier Clos (fat tree) whose leaves hold whole nodes (top-of-rack style);
- ``rail_optimized``: NIC port r of every node of a scalable unit goes to that unit's rail-r leaf; Clos above;
- ``rail_only``: one independent network per rail, no spine joining rails (cross-rail traffic uses NVLink);
- ``dragonfly``: groups of routers, all-to-all local links, global links spread evenly over group pairs;
- ``planes > 1`` (dual-plane): each NIC's ports are split over independent copies of the network.

Cabling rules: every tier is sized to the links it carries (:func:`fabric.topology.sizing.spread_upward`): every
lower switch spreads its uplinks over all switches of the layer above, in equal bundles when a count that splits
them evenly leaves the layer at least half used (else bundles that differ by one), with at least two spines and
two cores; pods share one core layer. Partly filled scalable units / leaves / pods keep the uplinks of a full one.
Links run at the NIC port speed except the uplinks of a design with ``uplink_gbps`` (leaf -> spine and spine -> core
at their own speed, a breakout of the switch's ports; oversubscription is then a ratio of capacities:
:class:`fabric.topology.sizing.TierPorts`). Server-to-leaf media follow the rack layout (:mod:`fabric.topology.racks`);
a design whose NICs the GPU's host cannot feed is refused (:mod:`fabric.catalog.compat`).
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace

import numpy as np

from fabric.design.schema import Design
from fabric.errors import DesignError
from fabric.limits import current_limits
from fabric.topology import floor as floors
from fabric.topology import racks, sizing
from fabric.topology.fabric import (GPU, LINK_KINDS, MEDIA, NIC, NVSWITCH, SWITCH, Fabric, remember_kind_counts,
                                   remember_kind_index)

__all__ = ["build_fabric", "required_tiers", "cabling_key", "clear_fabric_cache", "OPERATIONAL_FIELDS"]

# Reach of each link kind in metres (drives the cable/transceiver choice). Server-to-leaf links get theirs from the
# rack layout (fabric.topology.racks: 2 m in the rack, 5 m to the next rack, 30 m farther).
#: in-rack copper from a server to its top-of-rack leaf
REACH_IN_RACK_M = racks.REACH_IN_RACK_M
#: a server to a leaf in another rack of its row (rail-optimized leaves sit in a network rack)
REACH_ENDPOINT_OPTICS_M = racks.REACH_ROW_M
#: a switch-to-switch link (leaf-spine, spine-core, dragonfly global) within a hall; between halls the link is bought
#: at the longest run between the two halls of the floor (fabric.topology.floor)
REACH_LEAF_SPINE_M = floors.IN_HALL_REACH_M
#: dragonfly links inside a group (a few adjacent racks)
REACH_DFLY_LOCAL_M = 20.0

_K = {name: i for i, name in enumerate(LINK_KINDS)}
_M = {name: i for i, name in enumerate(MEDIA)}


@dataclass
class _Links:
    """Accumulates link arrays chunk by chunk: per chunk its two end arrays and its kind, medium, capacity and
    reach, each one value or one per link; :meth:`arrays` writes them into the fabric's arrays once (one value per
    chunk is filled in, not made into an array first and copied)."""

    chunks: list

    @classmethod
    def new(cls):
        return cls([])

    def add(self, a, b, kind: str, medium, cap_bps: float, reach_m):
        """Links ``a[i] - b[i]``; ``medium`` is a MEDIA name or one MEDIA code per link, ``reach_m`` one value or
        one per link."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        n = a.shape[0]
        if n == 0:
            return
        medium = _M[medium] if isinstance(medium, str) else np.asarray(medium, np.int8)
        reach = np.asarray(reach_m, float)
        self.chunks.append((a, b, _K[kind], medium, float(cap_bps), reach if reach.ndim else float(reach)))

    def kind_counts(self) -> np.ndarray:
        """Links per kind (index: LINK_KINDS)."""
        out = np.zeros(len(LINK_KINDS), np.int64)
        for a, _, k, *_ in self.chunks:
            out[k] += a.shape[0]
        return out

    def kind_index(self) -> dict:
        """Kind code -> ascending link ids (the chunks were added in order)."""
        parts: dict = {}
        start = 0
        for a, _, k, *_ in self.chunks:
            parts.setdefault(k, []).append((start, start + a.shape[0]))
            start += a.shape[0]
        return {k: np.arange(v[0][0], v[0][1]) if len(v) == 1 else np.concatenate([np.arange(*r) for r in v])
                for k, v in parts.items()}

    def arrays(self):
        n = sum(c[0].shape[0] for c in self.chunks)
        a, b = np.empty(n, np.int64), np.empty(n, np.int64)
        kind, medium = np.empty(n, np.int8), np.empty(n, np.int8)
        cap, reach = np.empty(n), np.empty(n)
        start = 0
        for ca, cb, ck, cm, cc, cr in self.chunks:
            end = start + ca.shape[0]
            a[start:end], b[start:end] = ca, cb
            kind[start:end], medium[start:end] = ck, cm
            cap[start:end], reach[start:end] = cc, cr
            start = end
        return a, b, kind, medium, cap, reach


@dataclass
class _Plane:
    """Switch-level plan of one plane, in plane-local switch indices (leaves first, then spines, then cores)."""

    n_leaves: int
    n_spines: int
    n_cores: int
    ep_leaf: np.ndarray          # leaf index of endpoint (slot, rail), shape (slots, Q)
    leaf_spine: tuple            # (leaf idx, spine idx) arrays, one row per physical link
    spine_core: tuple            # (spine idx, core idx)
    leaf_group: np.ndarray       # scalable unit / pod / rail id of each leaf (for layout)
    spine_group: np.ndarray
    info: dict


def _ratio_text(o1: float, o2: float | None = None) -> str:
    if o2 is None or o1 == o2:
        return f"at {sizing.format_ratio(o1)}"
    return f"at {sizing.format_ratio(o1)} (leaf) / {sizing.format_ratio(o2)} (spine)"


@dataclass(frozen=True)
class _Ports:
    """What the switch model offers each tier at the design's link speeds (NIC ports, leaf and spine uplinks)."""

    radix: int                   # links at the NIC port speed (1 tier, dragonfly, leaf downlinks)
    leaf: sizing.TierPorts       # leaf: NIC-speed downlinks, leaf -> spine uplinks
    spine: sizing.TierPorts      # 3-tier spine: leaf -> spine downlinks, spine -> core uplinks
    spine_radix: int             # leaf -> spine links one spine takes when every port faces down (2 tiers)
    core_radix: int              # spine -> core links one core takes

    @property
    def uplink_note(self) -> str:
        """`` (uplinks at 800G)`` when a tier's uplinks run at another speed than the NIC ports, else ``""``."""
        u1, u2 = self.leaf.up_bps, self.spine.up_bps
        if self.leaf.same_speed and self.spine.same_speed:
            return ""
        speeds = f"{u1 / 1e9:g}G" if math.isclose(u1, u2) else f"{u1 / 1e9:g}G (leaf) / {u2 / 1e9:g}G (spine)"
        return f" (uplinks at {speeds})"


def _capacity_error(label: str, tiers: int, hw: _Ports, o1: float, o2: float, endpoints: int, hint: str = ""):
    radix = hw.radix
    if tiers == 1:
        cap = radix
        ratio = ""
    elif tiers == 2:
        cap = hw.spine_radix * hw.leaf.split(o1)[0]            # sizing.clos2_max_endpoints at one speed
        ratio = " " + _ratio_text(o1)
    else:
        cap = hw.core_radix * hw.spine.split(o2)[0] * hw.leaf.split(o1)[0]   # sizing.clos3_max_endpoints
        ratio = " " + _ratio_text(o1, o2)
    tier_word = {1: "1-tier", 2: "2-tier", 3: "3-tier"}[tiers]
    raise DesignError(f"{tier_word} {label} with radix {radix}{hw.uplink_note if tiers > 1 else ''} holds at most "
                      f"{cap:,} endpoints{ratio}; got {endpoints:,}{hint}")


def _upper(n_leaves: int, u1: int, hw: _Ports, o2: float, tiers: int, unit: int, label: str,
           o1: float, endpoints: int, spines: int | None = None):
    """Spine (and core) layer above ``n_leaves`` leaves of ``u1`` uplinks each. Returns link index arrays.

    Each layer is sized to the links it carries (:func:`sizing.spread_upward`). Three tiers: pods of up to
    ``d2`` leaves (whole units of ``unit`` leaves), each pod's spines sized for a full pod (a partly filled last
    pod keeps them, so growing it needs no recabling); every pod sends its ``spines_per_pod x spine_uplinks``
    core-facing links over one shared core layer of the fewest cores whose ports take them (at least two), the
    same number (give or take one) to every core. The evaluator only counts a pod's core-facing links.
    ``spines`` (the design's) fixes the spine count (per pod for three tiers).
    """
    if tiers == 2:
        spread = sizing.spread_upward(u1, n_leaves, hw.spine_radix, switches=spines)
        if spread is None and spines is not None:
            _spines_error(spines, u1, n_leaves, hw.spine_radix)
        if spread is None:
            _capacity_error(label, 2, hw, o1, o2, endpoints, "; use 3 tiers, a larger radix or more "
                                                           "oversubscription")
        leaf, spine = sizing.bundle_links(n_leaves, u1, spread)
        info = {"spines": spread.switches, "leaf_spine_bundle": spread.bundle, "leaf_spine_even": spread.even,
                "spine_ports_used": spread.max_ports}
        return spread.switches, 0, (leaf, spine), (np.zeros(0, int), np.zeros(0, int)), \
            np.zeros(spread.switches, int), info
    d2, _ = hw.spine.split(o2)
    per_pod = (d2 // unit) * unit
    if per_pod == 0:
        raise DesignError(f"a spine of radix {hw.spine.radix} at {sizing.format_ratio(o2)} has {d2} downlinks, "
                          f"fewer than the {unit} leaves of one scalable unit; lower the spine oversubscription")
    per_pod = min(per_pod, n_leaves)
    pods = math.ceil(n_leaves / per_pod)
    pod_spread = sizing.spread_upward(u1, per_pod, d2, switches=spines)   # never None unforced: per_pod <= d2
    if pod_spread is None:
        _spines_error(spines, u1, per_pod, d2)
    s1 = pod_spread.switches
    u2 = hw.spine.leaf_uplinks(pod_spread.max_ports, o2)
    u_pod = s1 * u2
    core_spread = sizing.spread_upward(u_pod, pods, hw.core_radix, equal_bundles=False)
    if core_spread is None:
        _capacity_error(label, 3, hw, o1, o2, endpoints, "; use a larger radix or more oversubscription")
    n_cores = core_spread.switches
    pl, ps = sizing.bundle_links(per_pod, u1, pod_spread)
    pod_of = np.arange(pods)
    leaf = (pod_of[:, None] * per_pod + pl[None, :]).ravel()
    spine = (pod_of[:, None] * s1 + ps[None, :]).ravel()
    keep = leaf < n_leaves                       # the last pod may be partly filled
    leaf, spine = leaf[keep], spine[keep]
    n_spines = pods * s1
    # pod q's core-facing links t = 0 .. u_pod-1, spine-major (spine j of the pod owns t = j*u2 .. j*u2 + u2 - 1),
    # dealt round-robin over the cores: a spine's uplinks reach u2 different cores (when u2 <= cores), and with
    # equal bundles every pod sends u_pod / cores links to every core
    t = np.arange(pods * u_pod)
    sp = (t // u_pod) * s1 + (t % u_pod) // u2
    cc = t % n_cores
    info = {"pods": pods, "leaves_per_pod": per_pod, "spines_per_pod": s1, "spines": n_spines,
            "leaf_spine_bundle": pod_spread.bundle, "leaf_spine_even": pod_spread.even, "spine_uplinks": u2,
            "pod_core_links": u_pod, "cores": n_cores, "spine_core_bundle": core_spread.bundle,
            "spine_core_even": core_spread.even}
    spine_group = np.arange(n_spines) // s1
    return n_spines, n_cores, (leaf, spine), (sp, cc), spine_group, info


def _spines_error(spines: int, u1: int, lower: int, ports: int):
    if spines > u1:
        raise DesignError(f"design field 'spines': {spines} spines, but a leaf has {u1} uplinks and must reach every "
                          f"spine; use at most {u1}")
    raise DesignError(f"design field 'spines': {spines} spines cannot take {lower} leaves x {u1} uplinks with "
                      f"{ports} ports each for them; use more spines or leave spines unset")


def _tiers_needed(fits_one: bool, fits_two: bool) -> int:
    return 1 if fits_one else (2 if fits_two else 3)


def _plan_clos(design: Design, slots: int, Q: int, hw: _Ports, endpoints: int) -> _Plane:
    """Top-of-rack Clos: each leaf holds whole nodes."""
    o1, o2 = design.oversub(0), design.oversub(1)
    label = "Clos"
    radix = hw.radix
    d1, _ = hw.leaf.split(o1)
    per_leaf = d1 // Q
    fits_one = slots * Q <= radix
    if per_leaf == 0 and not (fits_one and design.tiers in (None, 1)):
        raise DesignError(f"a node's {Q} NIC ports do not fit on one leaf: radix {radix} at "
                          f"{sizing.format_ratio(o1)} leaves {d1} downlinks; use a larger switch or family "
                          f"'rail_optimized'")
    if design.nodes_per_su is not None:          # a rack switch: the leaf takes its rack's nodes only
        if design.nodes_per_su > per_leaf:
            raise DesignError(f"nodes_per_su {design.nodes_per_su} nodes per leaf need "
                              f"{design.nodes_per_su * Q} leaf downlinks, but a radix-{radix} leaf at "
                              f"{sizing.format_ratio(o1)} has {d1}; use at most {per_leaf}")
        per_leaf = design.nodes_per_su
        fits_one = fits_one and slots <= per_leaf
    n_leaves_2 = math.ceil(slots / per_leaf) if per_leaf else 0
    u1 = hw.leaf.leaf_uplinks(min(slots, per_leaf) * Q, o1) if per_leaf else 0
    fits_two = per_leaf > 0 and sizing.spread_upward(u1, n_leaves_2, hw.spine_radix) is not None
    tiers = design.tiers or _tiers_needed(fits_one, fits_two)
    if tiers == 1:
        if not fits_one:
            _capacity_error(label, 1, hw, o1, o2, endpoints, "; use 2 or 3 tiers")
        ep_leaf = np.zeros((slots, Q), np.int64)
        return _Plane(1, 0, 0, ep_leaf, (np.zeros(0, int),) * 2, (np.zeros(0, int),) * 2, np.zeros(1, int),
                      np.zeros(0, int), {"tiers": 1, "radix": radix, "leaf_down": slots * Q, "leaf_up": 0,
                                         "nodes_per_leaf": slots})
    ep_leaf = np.repeat((np.arange(slots) // per_leaf)[:, None], Q, axis=1)
    s, c, ls, sc, sg, info = _upper(n_leaves_2, u1, hw, o2, tiers, 1, label, o1, endpoints, design.spines)
    leaf_group = np.arange(n_leaves_2) // info.get("leaves_per_pod", n_leaves_2)
    info.update({"tiers": tiers, "radix": radix, "leaf_down": min(slots, per_leaf) * Q, "leaf_up": u1,
                 "nodes_per_leaf": per_leaf, "leaves": n_leaves_2})
    return _Plane(n_leaves_2, s, c, ep_leaf, ls, sc, leaf_group, sg, info)


def _plan_rail_optimized(design: Design, slots: int, Q: int, hw: _Ports, endpoints: int) -> _Plane:
    """Scalable units of ``nodes_per_su`` nodes; rail r of a unit goes to one rail-r leaf; Clos above.

    A rail leaf takes rail r of as many whole units as its downlinks hold (``d1 // nodes_per_su``; one unit when
    ``nodes_per_su`` is not given, which then defaults to ``d1 // rails_per_leaf``), so small units do not leave
    leaves mostly empty. With ``rails_per_leaf`` k > 1 a leaf takes a group of k consecutive rails (rails
    0..k-1 on the unit's first leaf, k..2k-1 on its second, ...): fewer, fuller leaves for small clusters, and
    traffic between rails of one group stays on its leaf.
    """
    o1, o2 = design.oversub(0), design.oversub(1)
    label = "rail-optimized Clos"
    radix = hw.radix
    d1, _ = hw.leaf.split(o1)
    k = int(design.rails_per_leaf)
    if Q % k:
        raise DesignError(f"design field 'rails_per_leaf': {k} does not divide the {Q} rails (NIC ports per node "
                          f"and plane); use a divisor of {Q}")
    if k > d1:
        raise DesignError(f"design field 'rails_per_leaf': {k} rails need {k} leaf downlinks per node, but a "
                          f"radix-{radix} leaf at {sizing.format_ratio(o1)} has {d1}")
    groups = Q // k                           # rail groups: leaves per unit
    nps = design.nodes_per_su or d1 // k
    if nps * k > d1:
        raise DesignError(f"nodes_per_su {nps} needs {nps * k} leaf downlinks ({k} rails per leaf), but a "
                          f"radix-{radix} leaf at {sizing.format_ratio(o1)} has {d1}")
    sus = math.ceil(slots / nps)
    sus_per_leaf = d1 // (nps * k)
    npl = sus_per_leaf * nps                  # nodes (k NIC ports each) per rail leaf
    n_leaves = math.ceil(slots / npl) * groups
    u1 = hw.leaf.leaf_uplinks(min(slots, npl) * k, o1)
    fits_two = sizing.spread_upward(u1, n_leaves, hw.spine_radix) is not None
    tiers = design.tiers or (2 if fits_two else 3)
    if tiers == 1:
        raise DesignError("a rail-optimized fabric needs at least 2 tiers (rail leaves joined by spines); "
                          "use family 'rail_only' for one switch per rail")
    slot = np.arange(slots)
    ep_leaf = (slot // npl)[:, None] * groups + (np.arange(Q) // k)[None, :]
    s, c, ls, sc, sg, info = _upper(n_leaves, u1, hw, o2, tiers, groups, label, o1, endpoints, design.spines)
    info.update({"tiers": tiers, "radix": radix, "leaf_down": min(slots, npl) * k, "leaf_up": u1,
                 "nodes_per_su": nps, "scalable_units": sus, "sus_per_leaf": sus_per_leaf,
                 "nodes_per_leaf": npl, "rails": Q, "leaves": n_leaves})
    if k > 1:
        info["rails_per_leaf"] = k
    return _Plane(n_leaves, s, c, ep_leaf, ls, sc, np.arange(n_leaves) // groups, sg, info)


def _plan_rail_only(design: Design, slots: int, Q: int, hw: _Ports, endpoints: int) -> _Plane:
    """One network per rail: a single switch when a rail fits, else a per-rail Clos."""
    o1, o2 = design.oversub(0), design.oversub(1)
    label = "rail-only network (per rail)"
    radix = hw.radix
    fits_one = slots <= radix
    d1, _ = hw.leaf.split(o1)
    per_rail_leaves = math.ceil(slots / d1)
    u1 = hw.leaf.leaf_uplinks(min(slots, d1), o1)
    fits_two = sizing.spread_upward(u1, per_rail_leaves, hw.spine_radix) is not None
    tiers = design.tiers or _tiers_needed(fits_one, fits_two)
    slot = np.arange(slots)
    if tiers == 1:
        if not fits_one:
            _capacity_error(label, 1, hw, o1, o2, slots, "; use 2 tiers per rail")
        ep_leaf = np.repeat(np.arange(Q)[None, :], slots, axis=0)
        return _Plane(Q, 0, 0, ep_leaf, (np.zeros(0, int),) * 2, (np.zeros(0, int),) * 2, np.arange(Q),
                      np.zeros(0, int), {"tiers": 1, "radix": radix, "rails": Q, "leaves": Q,
                                         "leaf_down": slots, "leaf_up": 0})
    ep_leaf = np.arange(Q)[None, :] * per_rail_leaves + (slot // d1)[:, None]
    s, c, (l1, s1), (s2, c2), sg, info = _upper(per_rail_leaves, u1, hw, o2, tiers, 1, label, o1, slots,
                                                 design.spines)
    # tile the per-rail structure over the Q rails
    off = lambda x, n: (np.arange(Q)[:, None] * n + np.asarray(x)[None, :]).ravel()  # noqa: E731
    ls = (off(l1, per_rail_leaves), off(s1, s))
    sc = (off(s2, s), off(c2, c)) if c else (np.zeros(0, int),) * 2
    info.update({"tiers": tiers, "radix": radix, "rails": Q, "leaves": Q * per_rail_leaves,
                 "leaves_per_rail": per_rail_leaves, "leaf_down": min(slots, d1), "leaf_up": u1,
                 "spines_per_rail": s, "spines": Q * s, "cores": Q * c})
    return _Plane(Q * per_rail_leaves, Q * s, Q * c, ep_leaf, ls, sc,
                  np.repeat(np.arange(Q), per_rail_leaves), np.repeat(np.arange(Q), s), info)


def _plan_regions(design: Design, slots: int, Q: int, hw: _Ports, endpoints: int) -> _Plane:
    """Regions (:mod:`fabric.design.regions`), each with its own cabling and ratios, joined by a shared layer:

    - *shared spines* (2 tiers): every region's leaves spread their uplinks over one spine layer, each leaf reaching
      every spine (the fewest spines, at least two, whose ports take the uplinks; equal bundles when that leaves the
      layer at least half used, else dealt round-robin so bundles differ by at most one);
    - *shared core* (3 tiers): each region is the pods of a 3-tier fabric of its own (leaves and the region's
      spines at its spine ratio), and every region's core-facing links are dealt round-robin over the fewest cores
      (at least two) whose ports take them.

    ``tiers`` 2 or 3 chooses; unset, shared spines when they fit and no region sets a spine ratio.
    """
    regions = design.regions
    gpn, dom = design.gpus_per_node, design.domain_size
    for r in regions:
        if dom > gpn and (r.nodes * gpn) % dom:
            raise DesignError(f"design field 'regions': region {r.name} has {r.nodes:,} servers, not whole "
                              f"{dom}-GPU scale-up domains ({dom // gpn} servers each)")
    core_ratio = [r.name for r in regions if r.oversub(1) != 1.0]
    if design.tiers == 2 and core_ratio:
        raise DesignError(f"design field 'regions': region(s) {', '.join(core_ratio)} set a spine ratio, which only "
                          f"a shared core (tiers 3) has; drop it or use tiers 3")
    if design.tiers != 3 and not core_ratio:
        try:
            return _regions_on_shared_spines(design, Q, hw)
        except DesignError:
            if design.tiers == 2:
                raise
    return _regions_on_shared_core(design, Q, hw)


def _region_plan(design: Design, r, Q: int, hw: _Ports, tiers: int) -> _Plane:
    """One region planned as a fabric of its own cabling (``tiers`` 2: its leaves; 3: its pods)."""
    sub = design.replace(family=r.family, oversubscription=tuple(r.oversubscription), regions=None, tiers=tiers,
                         nodes_per_su=r.nodes_per_su, rails_per_leaf=r.rails_per_leaf,
                         gpus=r.nodes * design.gpus_per_node)
    try:
        return _PLANNERS[r.family](sub, r.nodes, Q, hw, r.nodes * Q)
    except DesignError as err:
        raise DesignError(f"region {r.name}: {err}") from None


def _region_info(r, plan: _Plane, node0: int, leaf0: int, spine0: int, gpn: int, core_links: int) -> dict:
    info = plan.info
    return {"name": r.name, "family": r.family, "nodes": r.nodes, "gpus": r.nodes * gpn, "first_node": node0,
            "oversubscription": [r.oversub(0), r.oversub(1)], "leaf_range": [leaf0, leaf0 + plan.n_leaves],
            "leaves": plan.n_leaves, "leaf_down": int(info["leaf_down"]), "leaf_up": int(info["leaf_up"]),
            "nodes_per_leaf": int(info.get("nodes_per_leaf", 0)), "core_links": core_links,
            "spine_range": [spine0, spine0 + (plan.n_spines if core_links else 0)],
            "spines": plan.n_spines if core_links else 0, "pods": int(info.get("pods", 1)) if core_links else 0,
            **({"rails_per_leaf": r.rails_per_leaf} if r.rails_per_leaf > 1 else {}),
            **({"nodes_per_su": int(info["nodes_per_su"])} if "nodes_per_su" in info else {})}


def _regions_on_shared_spines(design: Design, Q: int, hw: _Ports) -> _Plane:
    gpn = design.gpus_per_node
    leaves, ep, lg, up, per_region, groups, node0 = 0, [], [], [], [], 0, 0
    for r in design.regions:
        plan = _region_plan(design, r, Q, hw, 2)
        u = np.bincount(plan.leaf_spine[0], minlength=plan.n_leaves)
        ep.append(plan.ep_leaf + leaves)
        lg.append(plan.leaf_group + groups)
        up.append(u)
        per_region.append(_region_info(r, plan, node0, leaves, 0, gpn, 0))
        groups += int(plan.leaf_group.max()) + 1 if plan.leaf_group.size else 0
        leaves += plan.n_leaves
        node0 += r.nodes
    up = np.concatenate(up)
    total, fewest = int(up.sum()), int(up.min())
    lo = max(sizing.MIN_UPPER_SWITCHES, math.ceil(total / hw.spine_radix))
    if lo > fewest:
        raise DesignError(f"the regions' {total:,} leaf uplinks need at least {lo} spines of {hw.spine_radix} ports, "
                          f"but a leaf with {fewest} uplinks cannot reach them all; join the regions through a "
                          f"core (tiers 3)")
    equal = [k for k in range(lo, min(fewest, 2 * lo) + 1) if not (up % k).any()]
    n_spines = equal[0] if equal else lo
    # leaf i's uplinks dealt from a rotating start, so spines fill evenly when bundles are unequal
    # (with equal bundles every leaf's first uplink lands on spine 0, as each start is a multiple of the spines)
    leaf = np.repeat(np.arange(leaves), up)
    spine = np.arange(total) % n_spines
    used = np.bincount(spine, minlength=n_spines)
    if used.max() > hw.spine_radix:
        raise DesignError(f"the regions' leaf uplinks need {int(used.max())} ports on a spine of {hw.spine_radix}; "
                          f"join the regions through a core (tiers 3)")
    info = {"tiers": 2, "radix": hw.radix, "regions": per_region, "join": "shared spines", "leaves": leaves,
            "spines": n_spines, "leaf_spine_even": bool(equal), "spine_ports_used": int(used.max())}
    return _Plane(leaves, n_spines, 0, np.concatenate(ep), (leaf, spine), (np.zeros(0, int), np.zeros(0, int)),
                  np.concatenate(lg), np.zeros(n_spines, int), info)


def _regions_on_shared_core(design: Design, Q: int, hw: _Ports) -> _Plane:
    gpn = design.gpus_per_node
    leaves, spines, ep, ls_l, ls_s, up_sp, lg, sg, per_region = 0, 0, [], [], [], [], [], [], []
    groups_l = groups_s = node0 = 0
    for r in design.regions:
        plan = _region_plan(design, r, Q, hw, 3)
        ep.append(plan.ep_leaf + leaves)
        ls_l.append(plan.leaf_spine[0] + leaves)
        ls_s.append(plan.leaf_spine[1] + spines)
        up_sp.append(plan.spine_core[0] + spines)         # each core-facing link's spine; its core is dealt below
        lg.append(plan.leaf_group + groups_l)
        sg.append(plan.spine_group + groups_s)
        groups_l += int(plan.leaf_group.max()) + 1 if plan.leaf_group.size else 0
        groups_s += int(plan.spine_group.max()) + 1 if plan.spine_group.size else 0
        per_region.append(_region_info(r, plan, node0, leaves, spines, gpn, int(plan.spine_core[0].size)))
        leaves += plan.n_leaves
        spines += plan.n_spines
        node0 += r.nodes
    sp = np.concatenate(up_sp)
    total = int(sp.size)
    n_cores = max(sizing.MIN_UPPER_SWITCHES, math.ceil(total / hw.core_radix))
    cc = np.arange(total) % n_cores
    info = {"tiers": 3, "radix": hw.radix, "regions": per_region, "join": "shared core", "leaves": leaves,
            "spines": spines, "cores": n_cores, "pods": sum(pr["pods"] for pr in per_region), "core_links": total,
            "core_ports_used": int(np.bincount(cc, minlength=n_cores).max())}
    return _Plane(leaves, spines, n_cores, np.concatenate(ep), (np.concatenate(ls_l), np.concatenate(ls_s)),
                  (sp, cc), np.concatenate(lg), np.concatenate(sg), info)


_PLANNERS = {"clos": _plan_clos, "rail_optimized": _plan_rail_optimized, "rail_only": _plan_rail_only,
             "regions": _plan_regions}


def required_tiers(design: Design, catalog=None) -> int:
    """The number of switch tiers the design's endpoints need (or its explicit ``tiers``)."""
    return build_fabric(design, catalog).tiers


def _resolve_hw(design: Design, catalog):
    from fabric.catalog import default_catalog, nic_host_problem

    cat = catalog or default_catalog()
    sw, nic, gpu = cat.switch(design.switch_model), cat.nic(design.nic_model), cat.gpu(design.gpu_model)
    if nic.ports % design.planes:
        raise DesignError(f"{design.planes} planes need NICs with a multiple of {design.planes} ports; "
                          f"{nic.model} has {nic.ports}")
    link_speed = nic.port_speed_bps
    radix = sw.radix_at(link_speed)
    if radix < 2:
        raise DesignError(f"switch {sw.model} ({sw.ports} x {sw.port_speed_bps / 1e9:g}G) cannot serve "
                          f"{link_speed / 1e9:g}G NIC ports")
    nic_fabric = getattr(nic, "fabric", sw.fabric)
    if nic_fabric not in (sw.fabric, "vpi", "any"):
        raise DesignError(f"NIC {nic.model} is {nic_fabric} but switch {sw.model} is {sw.fabric}")
    transport_fabric = "infiniband" if design.transport == "infiniband" else "ethernet"
    if sw.fabric != transport_fabric:
        raise DesignError(f"transport '{design.transport}' needs {transport_fabric} switches; "
                          f"{sw.model} is {sw.fabric}")
    problem = nic_host_problem(gpu, nic, design.nics_per_gpu, cat)
    if problem:
        raise DesignError(problem)
    dom = design.domain_size
    if dom > gpu.scale_up_domain_max:
        raise DesignError(f"{gpu.model} supports NVLink domains of at most {gpu.scale_up_domain_max} GPUs; "
                          f"scale_up_size is {dom}")
    u1, u2 = (_uplink_bps(design, sw, tier, link_speed) for tier in (0, 1))
    hw = _Ports(radix=radix, leaf=sizing.TierPorts.of(sw, link_speed, u1), spine=sizing.TierPorts.of(sw, u1, u2),
                spine_radix=sw.radix_at(u1), core_radix=sw.radix_at(u2))
    return cat, sw, nic, gpu, link_speed, hw


def _uplink_bps(design: Design, sw, tier: int, nic_bps: float) -> float:
    """The speed of tier ``tier``'s uplinks (0: leaf -> spine, 1: spine -> core), checked against the switch: the
    NIC port speed, or a speed its ports break out into (64 x 800G: 800G, 400G, 200G or 100G)."""
    gbps = design.uplink_speed_gbps(tier)
    if gbps is None or math.isclose(gbps * 1e9, nic_bps, rel_tol=1e-9):
        return nic_bps
    bps = gbps * 1e9
    if sw.lanes_at(bps) == 0:
        lanes = ", ".join(f"{v / 1e9:.4g}G" for v in sw.breakout_speeds_bps())
        why = "faster than its ports" if bps > sw.port_speed_bps * (1 + 1e-9) else \
            "not a breakout of its ports"
        raise DesignError(f"design field 'uplink_gbps': switch {sw.model} ({sw.ports} x "
                          f"{sw.port_speed_bps / 1e9:g}G) cannot run {gbps:g}G {('leaf', 'spine')[tier]} uplinks "
                          f"({why}); its ports run {lanes}, or leave uplink_gbps out for the NIC port speed "
                          f"({nic_bps / 1e9:g}G)")
    return bps


def _apart_reason(design: Design, info: dict, per_rack: int) -> str:
    """Why a node and its leaf can be in different racks, for the refusal of endpoint_cabling 'copper'."""
    if design.family == "regions":
        return " (a rail-optimized region's leaves sit in a network rack)"
    if design.family in racks.TOP_OF_RACK_FAMILIES:
        held = info.get("nodes_per_leaf", info.get("nodes_per_router", 0))
        return f" (a leaf holds up to {held} nodes, a rack {per_rack})"
    held = info.get("nodes_per_leaf", info.get("leaf_down", 0))
    return (f" (a rail leaf takes one port from each of up to {held} nodes in racks of {per_rack}, and sits in "
            f"a network rack)")


#: Design fields that do not change the cabling (how the fabric is operated, not built).
OPERATIONAL_FIELDS = ("name", "routing", "qps_per_connection", "storage_routing", "transport", "in_network_reduction",
                      "pxn", "placement", "storage_isolation", "nccl_algo", "serving_priority", "serving_weight",
                      "serving_routing")
#: Built fabrics kept for reuse, keyed by their cabling, while their links add up to at most this many.
CACHE_MAX_LINKS = 4_000_000
_CACHE: "OrderedDict[str, tuple]" = OrderedDict()
_CACHE_LOCK = threading.Lock()


def cabling_key(design: Design) -> str:
    """A key of everything the cabling depends on (the design without :data:`OPERATIONAL_FIELDS`)."""
    d = asdict(design)
    for k in OPERATIONAL_FIELDS:
        d.pop(k, None)
    for r in d.get("regions") or ():
        r.pop("jobs", None)                      # which jobs a region holds is placement, not cabling
    return json.dumps(d, sort_keys=True, default=str)


def build_fabric(design: Design, catalog=None) -> Fabric:
    """Build the fabric of ``design`` with hardware from ``catalog`` (default: the built-in catalog).

    Fabrics are pure functions of (cabling, catalog): the last few built (up to :data:`CACHE_MAX_LINKS` links in
    all) are kept and a design of the same cabling gets a copy that differs only in ``design`` (a search evaluates
    many designs of one cabling; their arrays are shared and must not be written to).
    """
    limits = current_limits()
    if design.gpus > limits.max_design_gpus:
        raise DesignError(f"{design.gpus:,} GPUs exceeds the limit max_design_gpus = {limits.max_design_gpus:,} "
                          f"(set FABRIC_LIMIT_MAX_DESIGN_GPUS to raise it)")
    resolved = _resolve_hw(design, catalog)
    key = cabling_key(design)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is resolved[0]:
            _CACHE.move_to_end(key)
            return replace(hit[1], design=design)
    # the cache key of what is derived from the fabric (models, cuts, bills, ...): the cabling and the catalog's
    # content (a catalog edited between two builds of one cabling gives other arrays)
    fabric = replace(_build(design, *resolved), cache_key=f"{key}|catalog {resolved[0].fingerprint()}")
    with _CACHE_LOCK:
        _CACHE[key] = (resolved[0], fabric)
        while len(_CACHE) > 1 and sum(f.n_links for _, f in _CACHE.values()) > CACHE_MAX_LINKS:
            _CACHE.popitem(last=False)
    return fabric


def clear_fabric_cache() -> None:
    """Forget the built fabrics (tests; a process that wants its memory back)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _build(design: Design, cat, sw, nic, gpu, link_speed, hw) -> Fabric:
    limits = current_limits()
    radix = hw.radix
    G, gpn = design.gpus, design.gpus_per_node
    nodes = design.nodes
    npn = design.nics_per_node
    n_nics = nodes * npn
    P = design.planes
    ppp = nic.ports // P                      # NIC ports per plane
    Q = npn * ppp                             # endpoint ports of a node in one plane (= rails)
    slots = nodes + design.reserved_node_slots
    endpoints = slots * Q

    nic_base = G
    switch_base = nic_base + n_nics
    links = _Links.new()

    # --- scale-out planes
    if design.family == "dragonfly":
        plane_plans = [_plan_dragonfly(design, slots, Q, radix)]
    else:
        planner = _PLANNERS[design.family]
        plan = planner(design, slots, Q, hw, endpoints)
        plane_plans = [plan] * P  # planes are identical copies
    tier_names = ("router",) if design.family == "dragonfly" else ("leaf", "spine", "core")
    node_tier, node_plane, node_group = [], [], []
    # server-to-leaf media by distance: racks of per_rack node slots (fabric.topology.racks)
    # an explicit rack power keeps room for the rack's top-of-rack switch (the default 40.8 kW is the servers')
    tor_w = sw.power_w if design.rack_power_w is not None and racks.has_top_of_rack_leaves(design) else 0.0
    per_rack = racks.nodes_per_rack(gpu, gpn, design.rack_power_w, tor_w)
    node_slot = np.arange(nodes) + design.reserved_node_slots
    distance = racks.endpoint_distance(design.family, plane_plans[0].ep_leaf[:, 0], per_rack,
                                       tor_slots=racks.top_of_rack_slots(design, slots))[node_slot]
    ep_media, ep_reach = racks.endpoint_media(cat, link_speed, design.endpoint_cabling, np.repeat(distance, Q),
                                              why=_apart_reason(design, plane_plans[0].info, per_rack))
    floor_halls = _floor(design, plane_plans[0], slots, per_rack, P)
    rack_hall, leaf_hall, spine_hall, core_hall = floor_halls[:4]
    nic_ports = np.empty((n_nics, nic.ports), np.int64)
    reserved_ports = []
    base = switch_base
    for p, plan in enumerate(plane_plans):
        leaf0, spine0 = base, base + plan.n_leaves
        core0 = spine0 + plan.n_spines
        n_sw = plan.n_leaves + plan.n_spines + plan.n_cores
        node_tier.append(np.repeat(np.array([0, 1, 2], np.int8), [plan.n_leaves, plan.n_spines, plan.n_cores]))
        node_plane.append(np.full(n_sw, p, np.int16))
        node_group.append(np.concatenate([plan.leaf_group, plan.spine_group, np.zeros(plan.n_cores, int)]))
        # endpoint links: node n, rail r -> NIC n*npn + r // ppp, NIC port p*ppp + r % ppp
        leaf_of = plan.ep_leaf[node_slot]                               # (nodes, Q)
        rail = np.arange(Q)
        nic_id = np.arange(nodes)[:, None] * npn + (rail // ppp)[None, :]
        port = p * ppp + rail % ppp
        nic_ports[nic_id.ravel(), np.tile(port, nodes)] = (leaf0 + leaf_of).ravel()
        kind = "nic-leaf"
        links.add(nic_base + nic_id.ravel(), leaf0 + leaf_of.ravel(), kind, ep_media, link_speed, ep_reach)
        if design.reserved_node_slots:
            res_leaf = plan.ep_leaf[: design.reserved_node_slots].ravel()
            reserved_ports.append((leaf0 + res_leaf))
        if design.family == "dragonfly":
            (la, lb), (ga, gb) = plan.leaf_spine, plan.spine_core
            links.add(leaf0 + la, leaf0 + lb, "router-local", "optics", link_speed, REACH_DFLY_LOCAL_M)
            links.add(leaf0 + ga, leaf0 + gb, "router-global", "optics", link_speed,
                      floors.switch_link_reach_m(leaf_hall[ga], leaf_hall[gb]))
        else:
            la, lb = plan.leaf_spine
            links.add(leaf0 + la, spine0 + lb, "leaf-spine", "optics", hw.leaf.up_bps,
                      floors.switch_link_reach_m(leaf_hall[la], spine_hall[lb]))
            sa, sb = plan.spine_core
            links.add(spine0 + sa, core0 + sb, "spine-core", "optics", hw.spine.up_bps,
                      floors.switch_link_reach_m(spine_hall[sa], core_hall[sb]))
        base += n_sw
    n_switches = base - switch_base

    # --- scale-up domains and GPU-NIC attachment
    dom = design.domain_size
    n_domains = G // dom if dom > 1 else 0
    nvswitch_base = base
    gpu_ids = np.arange(G)
    if n_domains:
        links.add(gpu_ids, nvswitch_base + gpu_ids // dom, "nvlink", "nvlink", gpu.scale_up_bps, 1.0)
    if design.nics_per_gpu >= 1:
        k = int(round(design.nics_per_gpu))
        gpu_nics = nic_base + gpu_ids[:, None] * k + np.arange(k)[None, :]
    else:
        local = gpu_ids % gpn
        gpu_nics = (nic_base + (gpu_ids // gpn) * npn + (local * npn) // gpn)[:, None]
    attach_a = np.repeat(gpu_ids, gpu_nics.shape[1])
    links.add(attach_a, gpu_nics.ravel(), "pcie", "pcie", nic.ports * nic.port_speed_bps, 0.3)

    a, b, kind, medium, cap, reach = links.arrays()
    remember_kind_counts(kind, links.kind_counts())
    remember_kind_index(kind, links.kind_index())
    if a.shape[0] > limits.max_design_links:
        raise DesignError(f"the design has {a.shape[0]:,} links, above the limit max_design_links = "
                          f"{limits.max_design_links:,} (set FABRIC_LIMIT_MAX_DESIGN_LINKS to raise it)")
    n_nodes = nvswitch_base + n_domains
    node_kind = np.empty(n_nodes, np.int8)
    node_kind[:G] = GPU
    node_kind[nic_base:switch_base] = NIC
    node_kind[switch_base:nvswitch_base] = SWITCH
    node_kind[nvswitch_base:] = NVSWITCH
    node_tier_all = np.full(n_nodes, -1, np.int8)
    node_tier_all[switch_base:nvswitch_base] = np.concatenate(node_tier)
    node_plane_all = np.full(n_nodes, -1, np.int16)
    node_plane_all[switch_base:nvswitch_base] = np.concatenate(node_plane)
    node_group_all = np.full(n_nodes, -1, np.int32)
    node_group_all[switch_base:nvswitch_base] = np.concatenate(node_group)
    node_group_all[:G] = gpu_ids // gpn
    latency = np.zeros(n_nodes)
    latency[nic_base:switch_base] = nic.latency_s
    latency[switch_base:nvswitch_base] = sw.latency_s

    reserved = {}
    if reserved_ports:
        rp = np.concatenate(reserved_ports) - switch_base
        # leaf_nodes: the leaf of each reserved port, plane by plane, slot by slot, rail by rail (cabling plans)
        reserved = {"ports_per_switch": np.bincount(rp, minlength=n_switches), "links": int(rp.shape[0]),
                    "leaf_nodes": rp + switch_base}
    info = dict(plane_plans[0].info)
    info.update({"planes": P, "endpoint_ports_per_node_per_plane": Q, "nodes": nodes,
                 "reserved_node_slots": design.reserved_node_slots, "link_speed_gbps": link_speed / 1e9,
                 "uplink_speed_gbps": [hw.leaf.up_bps / 1e9, hw.spine.up_bps / 1e9],
                 "switch_model": sw.model, "nic_model": nic.model, "scale_up_size": dom,
                 "nodes_per_rack": per_rack, "racks": math.ceil(slots / per_rack), "halls": floor_halls[4],
                 "endpoint_media": {MEDIA[m]: c * P for m in range(len(MEDIA))     # (a count of 8-bit codes
                                    for c in [int(np.count_nonzero(ep_media == m))] if c}})   # converts them first)
    return Fabric(
        design=design, family=design.family, tier_names=tier_names, link_speed_bps=link_speed,
        n_gpus=G, nic_base=nic_base, n_nics=n_nics, switch_base=switch_base, n_switches=n_switches,
        nvswitch_base=nvswitch_base, n_domains=n_domains,
        node_kind=node_kind, node_tier=node_tier_all, node_plane=node_plane_all, node_group=node_group_all,
        node_latency_s=latency,
        link_a=a, link_b=b, link_kind=kind, link_medium=medium, link_capacity_bps=cap,
        link_reach_m=reach,
        gpu_node=gpu_ids // gpn, gpu_domain=gpu_ids // dom, gpu_nics=gpu_nics, nic_ports=nic_ports,
        structure=info, reserved_links=reserved,
        floor=floors.Floor(floor_halls[4], rack_hall, np.tile(np.concatenate([leaf_hall, spine_hall, core_hall]),
                                                              len(plane_plans)), floor_halls[5]),
    )


def _floor(design: Design, plan: _Plane, slots: int, per_rack: int, planes: int) -> tuple:
    """The halls of the floor (:func:`fabric.topology.floor.plan_floor`) for one plane's plan: each leaf's pod is
    the pod of the spines it reaches (a dragonfly's: its group)."""
    leaf_pod = np.full(plan.n_leaves, -1, np.int64)
    spine_pod = np.asarray(plan.spine_group, np.int64)[:plan.n_spines]
    if design.family == "dragonfly":
        leaf_pod = np.asarray(plan.leaf_group, np.int64)[:plan.n_leaves]
    elif plan.n_spines:
        la, lb = plan.leaf_spine
        leaf_pod[la] = spine_pod[lb]
    return floors.plan_floor(slots=slots, per_rack=per_rack, slot_leaves=plan.ep_leaf,
                             leaf_pod=leaf_pod, n_leaves=plan.n_leaves, n_spines=plan.n_spines,
                             n_cores=plan.n_cores, spine_pod=spine_pod, planes=planes,
                             tor_leaves=racks.has_top_of_rack_leaves(design))


def _plan_dragonfly(design: Design, slots: int, Q: int, radix: int) -> _Plane:
    """Dragonfly (Kim et al. 2008): routers of p terminals, a routers per group, h global ports per router."""
    bp, ba, bh = sizing.dragonfly_balanced(radix)
    p = design.dragonfly_terminals or bp
    a = design.dragonfly_routers or ba
    h = design.dragonfly_globals or bh
    k = p + a - 1 + h
    if k > radix:
        raise DesignError(f"dragonfly router needs p + a - 1 + h = {p} + {a} - 1 + {h} = {k} ports; "
                          f"the switch has {radix} at the link speed")
    per_router = p // Q
    if per_router == 0:
        raise DesignError(f"a node's {Q} NIC ports do not fit on one dragonfly router with {p} terminal ports")
    routers_needed = math.ceil(slots / per_router)
    g = math.ceil(routers_needed / a)
    if design.dragonfly_routers is None and g == 1:
        # everything fits one group: buy the routers that hold the terminals, not a balanced group of a = 2p
        # (mostly empty) routers; fewer routers only frees ports, so the radix still fits. With two or more groups
        # the balanced a stays (its global ports are what joins the groups)
        a = routers_needed
    gmax = a * h + 1
    if g > gmax:
        cap = sizing.dragonfly_max_endpoints(p, a, h)
        raise DesignError(f"dragonfly with radix {radix} (p={p}, a={a}, h={h}) holds at most {cap:,} endpoints "
                          f"({gmax} groups); got {slots * Q:,}")
    n_routers = g * a
    ep_leaf = np.repeat((np.arange(slots) // per_router)[:, None], Q, axis=1)
    # local: all pairs inside each group
    i, j = np.triu_indices(a, 1)
    grp = np.arange(g)[:, None] * a
    la, lb = (grp + i[None, :]).ravel(), (grp + j[None, :]).ravel()
    # global: every pair of groups gets the same number of links, spread round-robin over routers
    if g > 1:
        lpp = (a * h) // (g - 1)
        gi, gj = np.triu_indices(g, 1)
        kk = np.arange(lpp)
        gi_r, gj_r, k_r = np.repeat(gi, lpp), np.repeat(gj, lpp), np.tile(kk, gi.shape[0])
        ti = (gj_r - 1) * lpp + k_r          # position of the link among group gi's globals (gj > gi)
        tj = gi_r * lpp + k_r                # position among group gj's globals (gi < gj)
        ga, gb = gi_r * a + ti % a, gj_r * a + tj % a
    else:
        lpp = 0
        ga = gb = np.zeros(0, int)
    info = {"tiers": 1, "radix": radix, "terminals_per_router": p, "routers_per_group": a,
            "globals_per_router": h, "groups": g, "routers": n_routers, "global_links_per_group_pair": lpp,
            "nodes_per_router": per_router}
    return _Plane(n_routers, 0, 0, ep_leaf, (la, lb), (ga, gb), np.arange(n_routers) // a, np.zeros(0, int), info)
