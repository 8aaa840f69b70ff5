"""Network phases -> link-group loads -> per-sample phase times under ECMP, adaptive routing, spraying or computed
paths.

Links that share traffic the same way are grouped (the uplinks of one leaf, the downlinks into one leaf, the
core-facing links of one pod, the global links between two dragonfly groups). A flow with ``q`` queue pairs is ``q``
balls of ``bytes / q`` thrown onto its group's ``n`` equal links:

- ``ecmp``: uniformly at random per ball (hash per flow x QP): the group's busiest link carries the maximum bin load
  of :mod:`fabric.evaluate.ballsbins`; hashes are fixed for a job launch, so one draw per Monte Carlo sample;
- ``adaptive``: load-aware near-even split: mean load x (1 + ``adaptive_imbalance``), capacity-aware around slow links;
- ``spray``: exact even split per packet (fluid);
- ``computed``: a controller places whole flows on paths (NSLB-style, path pinning): ``ceil(balls / links)`` on
  the busiest link, the max-min ideal of unsplittable flows (:mod:`fabric.evaluate.computed`).

Groups with equal (balls, links, slow links) form a class; the busiest of its L members is drawn from the max over
L independent experiments. Unequal flows (all-to-allv) count as ``k_eff = (sum b)^2 / sum b^2`` balls of equal size.
The phase time is the largest of: the busiest NIC port (injection or ejection) at the NIC speed, every class's busiest
link at its links' speed (uplinks may run faster or slower than the NIC ports: ``Design.uplink_gbps``), and the
busiest GPU's NVLink share. Leaf-to-leaf flows cross a leaf uplink and a leaf downlink; flows between 3-tier pods
also cross a pod's core-facing links (one of ``spines_per_pod x spine_uplinks``, uniformly, by the Clos symmetry;
under ECMP with the transport's ``hash_correlation`` > 0 a share of the flows hash there as at their leaf and load
those links unevenly: :mod:`fabric.evaluate.polarization`).

In-network reduction (SHARP) loads given links, not hashed ones: each aggregation tree holds one link from each of its
leaves to its spine (:mod:`fabric.evaluate.innetwork`), a *pinned* class whose busiest link is known.

PXN (``design.pxn``, always on for rail-only fabrics): a flow between different rails first moves over NVLink to
the source node's GPU on the destination rail, so it stays on that rail.

A failed leaf whose servers keep live NICs elsewhere (a rail leaf): the flows of its dead NICs detour over NVLink
through the server's live NICs (:mod:`fabric.evaluate.detour`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.arrays import any_per_row, unique_rows
from fabric.evaluate.ballsbins import sample_max_load
from fabric.evaluate.bounds import fabric_cuts
from fabric.evaluate.computed import computed_busiest_balls
from fabric.evaluate.detour import dead_nics, detour_flows
from fabric.evaluate.link_classes import LinkClass, _class_members, _classes, _group_classes
from fabric.topology.fabric import LINK_KINDS, kind_index

__all__ = ["NetworkModel", "LinkClass", "PhaseLoad", "PairUnits", "PathSample", "phase_load", "port_loads",
           "sample_phase_factor", "PATH_SAMPLE_BUDGET"]

_LS = LINK_KINDS.index("leaf-spine")
_SC = LINK_KINDS.index("spine-core")
_RL = LINK_KINDS.index("router-local")
_RG = LINK_KINDS.index("router-global")


@dataclass
class NetworkModel:
    """Per-fabric (and per-scenario) facts the routing needs, computed once from the link arrays."""

    fabric: object
    leaf_up: np.ndarray          # available uplinks per switch (index: node id - switch_base)
    leaf_slow: np.ndarray        # uplinks of a leaf that run slow
    slow_factor: float
    pod_of_switch: np.ndarray    # pod id per switch (3-tier), -1 otherwise
    pod_bins: np.ndarray         # core-facing links per pod
    is_dragonfly: bool
    dfly_routers_per_group: int = 0
    dfly_links_per_pair: int = 0
    dfly_globals_per_router: int = 0
    capacity_bps: float = 0.0    # a NIC port's line rate (bits/s per direction)
    #: line rate of the links of each link-group kind (leaf uplinks run at the design's uplink speed, pod core
    #: links at the spine uplink speed); kinds not listed run at ``capacity_bps``
    group_capacity_bps: dict = field(default_factory=dict)
    rail_based: bool = False
    force_pxn: bool = False
    #: per Monte Carlo sample, {leaf node id: uplinks down in that launch} (random component faults)
    sample_faults: list | None = None
    #: share of each link group's capacity used by other jobs: {group kind: array indexed like the group keys}
    #: (leaf kinds: switch index = node id - switch_base; pod kinds: pod id)
    background: dict = field(default_factory=dict)
    #: the healthy fabric's cuts for the lower bound (:func:`fabric.evaluate.bounds.fabric_cuts`)
    cuts: tuple = ()

    def link_bps(self, kind: str) -> float:
        """Line rate (bits/s per direction) of one link of the link-group kind ``kind`` ("leaf uplinks", ...)."""
        return self.group_capacity_bps.get(kind, self.capacity_bps)
    #: leaf-spine links alive in this scenario (None: all), and the spines that run slow (node ids)
    alive_links: np.ndarray | None = None
    slow_spines: tuple = ()
    _cabling: dict | None = field(default=None, repr=False)
    #: in-network aggregation trees placed on this model's switches and links (fabric.evaluate.innetwork), which
    #: do not depend on ``background``: copies made for other jobs' background share it
    tree_memo: dict = field(default_factory=dict, repr=False)
    #: failed leaves (index: node id - switch_base) whose NICs carry on through their other ports (dualtor.py)
    dead_leaf: np.ndarray | None = None
    #: NICs (index from nic_base) whose every port is on a failed leaf: their GPUs detour over NVLink through the
    #: server's live NICs (detour.py); None when there is none
    dead_nic: np.ndarray | None = None
    _polar: dict | None = field(default=None, repr=False)

    @property
    def nic_ports_whole(self) -> bool:
        """No failed leaf and no NIC without ports: a phase's flows at the NIC ports are those of the healthy fabric
        (failures above the leaves do not change them)."""
        return self.dead_nic is None and (self.dead_leaf is None or not self.dead_leaf.any())

    @property
    def healthy(self) -> bool:
        """Built without failed or slow switches or links (per-sample random faults aside): what depends on the
        model then depends on its fabric's cabling only."""
        return self.alive_links is None and not self.slow_spines and self.nic_ports_whole

    def polar_shares(self) -> dict:
        """Where a polarized flow lands on a pod's core-facing links (computed on first use, healthy cabling):
        :func:`fabric.evaluate.polarization.polarized_shares`."""
        if self._polar is None:
            from fabric.evaluate.polarization import polarized_shares

            self._polar = polarized_shares(self.fabric) if self.pod_bins.size else {}
        return self._polar

    def cabling(self) -> dict:
        """Alive leaf-spine links by leaf (computed on first use): CSR arrays over switch index.

        ``ptr[x]:ptr[x+1]`` index ``link`` (link ids, leaf end first) and ``spine`` (spine node ids) of leaf ``x``;
        ``bundle[x]`` is the common number of links from leaf ``x`` to each of its spines (0 when they differ or a
        spine is slow), ``nspines[x]`` its spine count and ``sig[x]`` a signature of its spine set.
        """
        if self._cabling is None:
            f = self.fabric
            sb, ns = f.switch_base, f.n_switches
            ids = kind_index(f.link_kind, _LS)
            if self.alive_links is not None:
                ids = ids[self.alive_links[ids]]
            leaf = f.link_a[ids] - sb
            order = np.lexsort((f.link_b[ids], leaf))
            ids, leaf = ids[order], leaf[order]
            spine = f.link_b[ids]
            ptr = np.concatenate([[0], np.cumsum(np.bincount(leaf, minlength=ns))])
            key = leaf.astype(np.int64) * (sb + ns + 1) + spine
            first = np.concatenate([[True], key[1:] != key[:-1]]) if key.size else np.zeros(0, bool)
            bl = np.flatnonzero(first)
            cnt = np.diff(np.concatenate([bl, [key.size]]))
            bleaf = leaf[bl]
            nspines = np.bincount(bleaf, minlength=ns)
            bmin = np.full(ns, np.iinfo(np.int64).max)
            bmax = np.zeros(ns, np.int64)
            np.minimum.at(bmin, bleaf, cnt)
            np.maximum.at(bmax, bleaf, cnt)
            bundle = np.where((nspines > 0) & (bmin == bmax) & (self.leaf_slow == 0), bmax, 0)
            w = ((spine[bl].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(11)).astype(float)
            sig = np.bincount(bleaf, weights=w, minlength=ns)
            self._cabling = {"ptr": ptr, "link": ids, "spine": spine, "bundle": bundle, "nspines": nspines,
                             "sig": sig}
        return self._cabling

    def background_of(self, kind: str, keys: np.ndarray) -> np.ndarray:
        """Other jobs' share of the capacity of the groups ``keys`` of ``kind`` (0 where none)."""
        bg = self.background.get(kind)
        if bg is None or keys.size == 0:
            return np.zeros(keys.size)
        idx = keys - self.fabric.switch_base if kind.startswith("leaf") else keys
        return bg[idx]

    @classmethod
    def build(cls, fabric, *, failed_links=(), failed_switches=(), slow_switches=(), slow_factor: float = 1.0,
              healthy: NetworkModel | None = None):
        """Derive the model; ``failed_links`` are link ids, switches are node ids. ``healthy``: the model of the
        same fabric without failures, whose pods and cuts (which depend on the cabling only) are taken."""
        if healthy is not None and (healthy.fabric.link_a is not fabric.link_a
                                    or healthy.fabric.link_capacity_bps is not fabric.link_capacity_bps):
            healthy = None                  # another build (the copies of one build share its link arrays)
        sb, ns = fabric.switch_base, fabric.n_switches
        a, b, kind = fabric.link_a, fabric.link_b, fabric.link_kind
        # the links of a kind by the builder's per-kind ids (masks over every link, NIC and NVLink ones included,
        # cost more than the rest of a healthy model); ``alive`` only when something failed
        ls_ids, sc_ids = kind_index(kind, _LS), kind_index(kind, _SC)
        alive = None
        if len(failed_links) or len(failed_switches):
            alive = np.ones(fabric.n_links, bool)
            if len(failed_links):
                alive[np.asarray(failed_links, dtype=np.int64)] = False
            for s in failed_switches:
                alive &= (a != s) & (b != s)

        def live(ids: np.ndarray) -> np.ndarray:
            return ids if alive is None else ids[alive[ids]]

        had = np.bincount(np.take(a, ls_ids) - sb, minlength=ns)
        leaf_up = (had if alive is None else np.bincount(np.take(a, live(ls_ids)) - sb, minlength=ns)).astype(np.int64)
        dead_leaf = np.zeros(ns, bool)            # failed leaves (their NICs' other ports carry on: dualtor.py)
        for s in failed_switches:
            if int(fabric.node_tier[s]) == 0:
                dead_leaf[s - sb] = True
        cut = np.flatnonzero((had > 0) & (leaf_up == 0) & ~dead_leaf)
        if cut.size:
            from fabric.errors import DesignError

            raise DesignError(f"the scenario cuts {fabric.node_label(int(cut[0]) + sb)}"
                              f"{f' and {cut.size - 1} other leaves' if cut.size > 1 else ''} off from every "
                              f"spine: the fabric is partitioned (fail fewer links or spines, or add spines)")
        slow = np.zeros(ns, np.int64)
        for s in slow_switches:
            m = live(ls_ids)
            m = m[np.take(b, m) == s]
            slow += np.bincount(a[m] - sb, minlength=ns)
        pod = np.full(ns, -1, np.int64)
        pod_bins = np.zeros(0, np.int64)
        if healthy is not None:
            pod = healthy.pod_of_switch
            if healthy.pod_bins.size:
                pod_bins = np.bincount(pod[np.take(a, live(sc_ids)) - sb], minlength=healthy.pod_bins.size)
        elif sc_ids.size:
            # a leaf's pod is identified by the lowest spine it reaches (leaves of a pod share their spines)
            la, lb = np.take(a, ls_ids), np.take(b, ls_ids)
            first_spine = np.full(ns, np.iinfo(np.int64).max)
            np.minimum.at(first_spine, la - sb, lb)
            spine_pod_key = np.full(ns, np.iinfo(np.int64).max)
            np.minimum.at(spine_pod_key, lb - sb, first_spine[la - sb])
            is_leaf = fabric.node_tier[sb:sb + ns] == 0
            is_spine = fabric.node_tier[sb:sb + ns] == 1
            keys = np.where(is_leaf, first_spine, np.where(is_spine, spine_pod_key, -1))
            valid = keys != -1
            uniq, inv = np.unique(keys[valid], return_inverse=True)
            pod[valid] = inv
            pod_bins = np.bincount(pod[np.take(a, live(sc_ids)) - sb], minlength=uniq.shape[0])
        is_dfly = fabric.family == "dragonfly"
        s = fabric.structure
        group_bps = {}
        for of_kind, groups in ((ls_ids, ("leaf uplinks", "leaf downlinks")),
                                (sc_ids, ("pod core uplinks", "pod core downlinks"))):
            if of_kind.size:
                group_bps.update(dict.fromkeys(groups, float(fabric.link_capacity_bps[of_kind[0]])))
        return cls(
            alive_links=None if alive is None or alive.all() else alive,
            slow_spines=tuple(int(x) for x in slow_switches),
            fabric=fabric, leaf_up=leaf_up, leaf_slow=slow, slow_factor=float(slow_factor), pod_of_switch=pod,
            pod_bins=pod_bins, is_dragonfly=is_dfly,
            dfly_routers_per_group=int(s.get("routers_per_group", 0)),
            dfly_links_per_pair=int(s.get("global_links_per_group_pair", 0)),
            dfly_globals_per_router=int(s.get("globals_per_router", 0)),
            capacity_bps=float(fabric.link_speed_bps), group_capacity_bps=group_bps,
            rail_based=fabric.family in ("rail_optimized", "rail_only"),
            force_pxn=fabric.family == "rail_only",
            cuts=healthy.cuts if healthy is not None else fabric_cuts(fabric, pod if pod_bins.size else None),
            dead_leaf=dead_leaf, dead_nic=dead_nics(fabric, dead_leaf),
        )


@dataclass
class PairUnits:
    """``members`` leaf pairs (A, B) in which A's uplinks carry only flows to B and B's downlinks only flows from A:
    k balls over s spines with b links per leaf-spine pair; the busiest of A's uplinks and B's downlinks has the
    exact distribution :func:`~fabric.evaluate.ballsbins.pair_max_load_cdf` (each ball's spine is shared by its
    uplink and downlink). ``up``/``down`` index the two classes in ``PhaseLoad.classes``."""

    k: int
    s: int
    b: int
    members: int
    ball: float
    up: int
    down: int


@dataclass
class PathSample:
    """Leaf link groups whose flows share spines in tangled ways, drawn path by path: every ball (flow x QP) picks
    an uplink of its source leaf uniformly among those whose spine reaches the destination leaf, then the spine
    picks one of its links to the destination leaf, as the switches' hashes do.

    Flat tables: ball ``i`` chooses option ``ball_off[i] + floor(U x ball_nopt[i])``; option ``o`` is uplink
    ``opt_up[o]`` (compact link index, -1: the ball arrives from another pod and has no uplink here) followed by one
    of ``opt_nd[o]`` downlinks ``down[opt_doff[o]:...]`` (none: the ball leaves the pod). ``opt_upw`` / ``down_w``
    are load multipliers (0 for no link, 1 / slow factor on slow spines). ``group_of_slot`` maps directed slots
    (``n_links`` uplink directions, then ``n_links`` downlink directions) to group positions; ``classes`` maps a
    class (by id) to its member groups' positions."""

    ball_off: np.ndarray
    ball_nopt: np.ndarray
    ball_w: np.ndarray
    opt_up: np.ndarray
    opt_upw: np.ndarray
    opt_nd: np.ndarray
    opt_doff: np.ndarray
    down: np.ndarray
    down_w: np.ndarray
    n_links: int
    group_of_slot: np.ndarray
    n_groups: int
    classes: dict


@dataclass
class PhaseLoad:
    """Deterministic facts of one network phase, ready for sampling."""

    classes: list
    nic_max: float               # busiest NIC port, bytes per op byte
    nvlink_max: float            # busiest GPU's NVLink bytes per op byte
    hops: int
    steps: int
    joint: list = field(default_factory=list)   # PairUnits / PathSample drawing classes with joint >= 0
    flows_per_port: float = 1.0  # fewest concurrent flows (x QPs) of a NIC port that sends across leaves
    multipath: bool = False      # some flows leave their leaf (several paths: spraying can reorder them)
    #: busiest GPU's bytes (per op byte) forwarded over NVLink to the GPU on the destination's rail before they
    #: enter the network (rail-only fabrics, PXN): an extra hop in series with the network (issue 28); with dead
    #: NICs (detour.py) also the busiest GPU's bytes received over NVLink from the NIC of another GPU
    forward_nvlink: float = 0.0


@dataclass
class _PortFlows:
    """A phase's flows on NIC ports: per entry (a flow after splitting over NICs and ports, a flow's ports in
    order) its bytes per op byte (``per``), its queue pairs per port (``q_port``: a number, or one per entry) and
    the leaves of its two ports; what the NIC port sums count (``ends``: the sending and receiving port of each
    entry, NIC index x ports + port, weighing ``w``; when ``even``, every port carries 1 / ``ports`` of each of its
    NIC's flows and ``ends`` / ``w`` are per flow at NIC index: a port's sums are then its NIC's, the same bytes in
    the same order); the NICs' port classes (several ports hashed or placed) and the NVLink forward hop (PXN,
    detour). ``keep``: None, or per entry whether it carries bytes (a failed leaf: a flow's entries on ports it
    lost weigh nothing; they count in no sum and are no flow)."""

    per: np.ndarray
    q_port: object
    ends: tuple
    w: np.ndarray
    even: bool
    ports: int
    src_leaf: np.ndarray
    dst_leaf: np.ndarray
    port_cls: list
    forward: float
    keep: np.ndarray | None = None

    def sums(self, side: int, n_nics: int) -> np.ndarray:
        """Bytes per op byte each NIC port sends (``side`` 0) or receives (1), over NIC index x ports + port."""
        if self.even:
            return np.repeat(np.bincount(self.ends[side], weights=self.w, minlength=n_nics), self.ports)
        return np.bincount(self.ends[side], weights=self.w, minlength=n_nics * self.ports)


def _port_flows(phase, model: NetworkModel, *, qps: int, pxn: bool, routing: str,
                classes: bool = True) -> _PortFlows:
    """Map an explicit phase's GPU flows onto NIC ports and leaves (what :func:`phase_load` and
    :func:`port_loads` share); ``classes=False`` leaves the port classes out (empty)."""
    f = model.fabric
    src, dst, per = phase.src_gpu, phase.dst_gpu, phase.bytes_per_byte
    k_nic = f.gpu_nics.shape[1]
    # gathers by np.take: the same values as fancy indexing, several times faster on 100,000s of flows
    if k_nic > 1:
        src_nic = np.take(f.gpu_nics, src, axis=0).ravel()
        dst_nic = np.take(f.gpu_nics, dst, axis=0).ravel()
        per = np.repeat(per / k_nic, k_nic)
    else:
        src_nic, dst_nic = np.take(f.gpu_nics[:, 0], src), np.take(f.gpu_nics[:, 0], dst)
    npn = f.design.nics_per_node
    forward = 0.0
    if (pxn or model.force_pxn) and model.rail_based and src_nic.size:
        if npn & (npn - 1) == 0:        # a NIC's index in its server by a mask (ids >= nic_base; % is slow)
            s_loc, d_loc = (src_nic - f.nic_base) & (npn - 1), (dst_nic - f.nic_base) & (npn - 1)
        else:
            s_loc, d_loc = (src_nic - f.nic_base) % npn, (dst_nic - f.nic_base) % npn
        cross = s_loc != d_loc
        if cross.any():
            # the bytes first cross NVLink to the source node's GPU on the destination rail: a hop of its own,
            # paid before the network (store and forward, as the rail-only paper's model charges it)
            moved = np.bincount(src[np.repeat(np.arange(src.size), k_nic)[cross]] if k_nic > 1 else src[cross],
                                weights=per[cross])
            forward = float(moved.max())
            src_nic = np.where(cross, src_nic - s_loc + d_loc, src_nic)
    if model.dead_nic is not None and src_nic.size:
        # a NIC whose every port lost its leaf: the flows it carried go through the server's other NICs (detour.py)
        sg, dg = (np.repeat(src, k_nic), np.repeat(dst, k_nic)) if k_nic > 1 else (src, dst)
        sg, dg, src_nic, dst_nic, per, fwd = detour_flows(
            f, model.dead_nic, sg, dg, src_nic, dst_nic, per,
            same_rail=bool((pxn or model.force_pxn) and model.rail_based))
        if fwd is not None:
            forward = fwd
    ports = f.nic_ports.shape[1]
    si, di = src_nic - f.nic_base, dst_nic - f.nic_base
    port_cls = []
    q_port = float(qps)
    down = None
    if ports > 1 and model.dead_leaf is not None and model.dead_leaf.any() and si.size:
        from fabric.evaluate.dualtor import ports_down

        down = ports_down(f, model.dead_leaf, si, di)       # a failed leaf: the flows that lose a port, what is left
        if down[0].size == 0:
            down = None                                     # none of this phase's flows: as healthy
    n_use = ports
    if down is not None:
        rows, ok = down
        n_rows = ok.sum(axis=1)
        n_use = np.full(si.size, ports, np.int64)
        n_use[rows] = n_rows
    if ports > 1 and routing in ("ecmp", "computed") and not phase.injection_only:
        # each flow leaves on one port (fabric.evaluate.ports): the NIC's ports are a group the flows are hashed
        # (or, computed, placed) onto, and a port carries on average qps / ports of them, each bytes / qps
        if classes:
            from fabric.evaluate.ports import port_classes

            port_cls = port_classes(src_nic, per, float(qps), n_use, hashed=routing == "ecmp")
        q_port = float(qps) / ports
    even = ports > 1 and down is None
    keep = None
    if ports > 1:
        # every port carries 1 / ports of each of its NIC's flows: one entry per flow and port, in that order
        w = per * (1.0 / ports)
        src_leaf = np.take(f.nic_ports, si, axis=0).ravel()
        dst_leaf = np.take(f.nic_ports, di, axis=0).ravel()
        if even:
            # a port's sums are its NIC's (the same flows in the same order, the same bytes), so the NICs stand
            # for their ports in the sums
            per = np.repeat(w, ports)
            ends = (si, di)
        else:
            # a failed leaf: a flow that lost a port runs over the ports up at both ends (its entries on the others
            # weigh nothing and are left out through ``keep``); an entry's sending and receiving port (NIC index x
            # ports + port) index the NIC ports' sums
            at = (rows[:, None] * ports + np.arange(ports)).ravel()
            per_rows = np.take(per, rows)
            per = np.repeat(w, ports)
            per[at] = (per_rows[:, None] * (ok / n_rows[:, None])).ravel()
            if routing in ("ecmp", "computed"):
                q_port = np.full(per.size, float(qps) / ports)
                q_port[at] = np.repeat(float(qps) / n_rows, ports)
            ar = np.arange(ports)
            ends = ((si[:, None] * ports + ar).ravel(), (di[:, None] * ports + ar).ravel())
            w = per
            zero = per <= 0
            keep = None if not zero.any() else ~zero
    else:
        src_leaf = np.take(f.nic_ports[:, 0], si)
        dst_leaf = np.take(f.nic_ports[:, 0], di)
        ends, w = (si, di), per
    return _PortFlows(per, q_port, ends, w, even, ports, src_leaf, dst_leaf, port_cls, forward, keep)


def port_loads(phase, model: NetworkModel, *, pxn: bool, routing: str = "ecmp") -> tuple[np.ndarray, np.ndarray]:
    """Bytes per op byte each NIC port sends and receives in ``phase`` (arrays over NIC index x ports + port):
    what :func:`phase_load` reduces to its busiest port (``nic_max``), kept per port so that two parts of one op
    on the same ports can be added (:mod:`fabric.evaluate.innetwork`)."""
    f = model.fabric
    if phase.all_pairs is not None:
        phase = phase.expand()
    pf = _port_flows(phase, model, qps=1, pxn=pxn, routing=routing, classes=False)
    return pf.sums(0, f.n_nics), pf.sums(1, f.n_nics)


@dataclass
class _NicFlows:
    """A phase's flows at the NIC ports reduced to what :func:`phase_load` needs before the network model's link
    groups: the busiest NIC port, the NVLink forward hop, the per-port classes, and the flows that leave their leaf,
    at their ports (``sl``/``dl`` source and destination leaves, ``pc`` bytes per op byte, ``qc`` balls per flow;
    ``sl`` is None when no flow leaves its leaf) with the fewest flows of a port that sends across leaves."""

    nic_max: float
    forward: float
    port_cls: list
    flows_per_port: float = 1.0
    sl: np.ndarray | None = None
    dl: np.ndarray | None = None
    pc: np.ndarray | None = None
    qc: np.ndarray | None = None


def _nic_flows(phase, model: NetworkModel, qps: int, pxn: bool, routing: str) -> _NicFlows:
    pf = _port_flows(phase, model, qps=qps, pxn=pxn, routing=routing)
    ends, w, per, ports = pf.ends, pf.w, pf.per, pf.ports
    src_leaf, dst_leaf = pf.src_leaf, pf.dst_leaf
    nic_max = 0.0
    if w.size:
        nic_max = max(float(np.bincount(ends[0], weights=w).max()), float(np.bincount(ends[1], weights=w).max()))
    out = _NicFlows(nic_max, pf.forward, pf.port_cls)
    if phase.injection_only:
        return out
    cross = src_leaf != dst_leaf
    if pf.keep is not None:
        cross &= pf.keep
    if cross.any():
        # flows (x QPs) that share a sending NIC port, at the port that sends across leaves with the fewest
        per_port = np.bincount(ends[0])
        if pf.keep is not None:
            # entries on lost ports are no flows
            per_port -= np.bincount(np.take(ends[0], np.flatnonzero(~pf.keep)), minlength=per_port.size)
        per_port = per_port * float(qps)
        leaves = any_per_row(cross.reshape(-1, ports)) if pf.even else cross
        sends_out = np.bincount(np.take(ends[0], np.flatnonzero(leaves)), minlength=per_port.size) > 0
        out.flows_per_port = float(per_port[sends_out].min())
        q_port = pf.q_port
        if cross.all():
            out.sl, out.dl, out.pc = src_leaf, dst_leaf, per
            out.qc = q_port
        else:
            at = np.flatnonzero(cross)
            out.sl, out.dl, out.pc = np.take(src_leaf, at), np.take(dst_leaf, at), np.take(per, at)
            out.qc = q_port if np.ndim(q_port) == 0 else np.take(q_port, at)
        if np.ndim(q_port) == 0:
            out.qc = np.full(out.sl.size, q_port)
    return out


def phase_load(phase, model: NetworkModel, *, qps: int, pxn: bool, routing: str = "ecmp",
               samples: int = 256, memo: dict | None = None) -> PhaseLoad:
    """Aggregate a :class:`~fabric.evaluate.flows.NetPhase` into link-group classes.

    Under ``ecmp`` the leaf uplink and downlink groups that share flows are marked for joint sampling
    (:func:`_leaf_classes`); ``samples`` sizes the path-by-path Monte Carlo budget.

    ``memo``: a dict kept across network models of one fabric (failure scenarios: :func:`fabric.evaluate.evaluate`'s
    ``reuse``) that keeps the phase's flows at the NIC ports and the per-port classes, which depend on the phase and
    the cabling only, not on failures above the leaves: without a failed leaf they are computed once per phase (a
    failed leaf changes the ports a flow can use and, through the NVLink detour, the NICs: never kept then).
    """
    f = model.fabric
    if phase.all_pairs is not None:
        simple = (f.gpu_nics.shape[1] == 1 and f.nic_ports.shape[1] == 1 and not model.is_dragonfly
                  and not ((pxn or model.force_pxn) and model.rail_based) and model.dead_nic is None)
        if simple:
            return _all_pairs_load(phase, model, qps)
    key = nf = None
    if memo is not None and model.nic_ports_whole:
        key = ("nic flows", id(phase), id(f), int(qps), bool((pxn or model.force_pxn) and model.rail_based),
               routing)
        hit = memo.get(key)
        nf = hit[2] if hit is not None and hit[0] is phase and hit[1] is f else None
    if nf is None:
        nf = _nic_flows(phase if phase.all_pairs is None else phase.expand(), model, qps, pxn, routing)
        if key is not None:
            memo[key] = (phase, f, nf)          # the phase and fabric are held, so their ids stay theirs
    nvlink_max = phase.nvlink_bytes_per_byte
    if phase.injection_only:
        return PhaseLoad([], nf.nic_max, nvlink_max, 2, phase.steps, forward_nvlink=nf.forward)
    sb = f.switch_base
    classes: list[LinkClass] = list(nf.port_cls)
    joint: list = []
    hops = 1
    if nf.sl is not None:
        hops = 3
        sl, dl, pc, qc = nf.sl, nf.dl, nf.pc, nf.qc
        if model.is_dragonfly:
            classes += _dragonfly_classes(model, sl, dl, pc, qc)
        else:
            xp = np.zeros(sl.size, bool)
            if model.pod_bins.size:
                sp, dp = np.take(model.pod_of_switch, sl - sb), np.take(model.pod_of_switch, dl - sb)
                xp = sp != dp
            cls, joint = _leaf_classes(model, sl, dl, pc, qc, xp, routing, samples)
            classes += cls
            if model.pod_bins.size:
                if xp.any():
                    hops = 5
                    pb = lambda keys: model.pod_bins[keys]      # noqa: E731
                    zero = lambda keys: np.zeros(len(keys), np.int64)  # noqa: E731
                    at = np.flatnonzero(xp)
                    qx, px = np.take(qc, at), np.take(pc, at)
                    classes += _group_classes("pod core uplinks", np.take(sp, at), qx, px, pb, zero,
                                              lambda k: model.background_of("pod core uplinks", k))
                    classes += _group_classes("pod core downlinks", np.take(dp, at), qx, px, pb, zero,
                                              lambda k: model.background_of("pod core downlinks", k))
    return PhaseLoad(classes, nf.nic_max, nvlink_max, hops, phase.steps, joint, nf.flows_per_port,
                     nf.sl is not None, forward_nvlink=nf.forward)


#: Leaf groups whose flows share spines in tangled ways are drawn path by path while balls x samples stays under
#: this; beyond it they are drawn as independent groups (docs/evaluator.md gives the error of that fallback).
PATH_SAMPLE_BUDGET = 60_000


def _k_eff(inv: np.ndarray, bytes_: np.ndarray, qps: np.ndarray, size: int | None = None):
    """Per key: equal balls carrying the key's bytes with the same sum of squares (``k_eff``), and their size."""
    B = np.bincount(inv, weights=bytes_, minlength=size or 0)
    B2 = np.bincount(inv, weights=bytes_ * bytes_ / qps, minlength=size or 0)
    k = np.maximum(1, np.rint(B * B / np.maximum(B2, 1e-300))).astype(np.int64)
    return k, B / k, B


def _leaf_classes(model: NetworkModel, sl, dl, pc, qc, xp, routing: str, samples: int):
    """Classes of the leaf uplink and downlink groups crossed by leaf-to-leaf flows, and their joint samplers.

    A flow's spine is chosen once, at its source leaf, and carries it down to its destination leaf, so an uplink
    group and the downlink groups its flows reach are correlated (flows between pods reach the destination pod's
    spines through the cores, which decouples the two ends: they count as independent). Under ECMP:

    - *pair units*: A's uplinks carry only flows to B and B's downlinks only flows from A (shifts, rings and
      pipelines with one leaf per hop), on regular cabling: exact joint distribution, identical units in one
      class (:class:`PairUnits`);
    - *tangled* groups (a leaf sends to several leaves that also hear from others): path by path Monte Carlo
      (:class:`PathSample`) while balls x samples <= :data:`PATH_SAMPLE_BUDGET`, else independent groups;
    - groups whose flows all leave or enter the pod: independent groups (exact marginals).
    Other routings split deterministically, so groups are independent classes there.
    """
    f = model.fabric
    sb, ns = f.switch_base, f.n_switches
    up_n = lambda keys: model.leaf_up[keys - sb]                     # noqa: E731
    slow = lambda keys: model.leaf_slow[keys - sb]                   # noqa: E731
    bg_up = lambda k: model.background_of("leaf uplinks", k)         # noqa: E731
    bg_dn = lambda k: model.background_of("leaf downlinks", k)       # noqa: E731
    if routing != "ecmp":
        sq = pc * pc / qc                   # the same flows up and down
        return (_group_classes("leaf uplinks", sl, qc, pc, up_n, slow, bg_up, sq)
                + _group_classes("leaf downlinks", dl, qc, pc, up_n, slow, bg_dn, sq)), []
    u, d = sl - sb, dl - sb
    intra = ~xp
    ui, di, p_in, q_in = _pick(intra, u, d, pc, qc)
    big = np.iinfo(np.int64).max
    # a leaf whose flows inside the pod all go to one leaf: smallest == largest destination (likewise sources)
    dmin, dmax = np.full(ns, big), np.full(ns, -1)
    smin, smax = np.full(ns, big), np.full(ns, -1)
    np.minimum.at(dmin, ui, di)
    np.maximum.at(dmax, ui, di)
    np.minimum.at(smin, di, ui)
    np.maximum.at(smax, di, ui)
    ext_up = np.bincount(u[xp], minlength=ns) > 0
    ext_dn = np.bincount(d[xp], minlength=ns) > 0
    has_up, has_dn = dmax >= 0, smax >= 0
    cand = np.flatnonzero(has_up & (dmin == dmax) & ~ext_up)
    partner = dmin[cand]
    ok = (smin[partner] == cand) & (smax[partner] == cand) & ~ext_dn[partner]
    cand, partner = cand[ok], partner[ok]
    s_p, b_p, regular = _pair_cabling(model, cand, partner)
    pu, pd = cand[regular], partner[regular]
    unit_up = np.zeros(ns, bool)
    unit_dn = np.zeros(ns, bool)
    unit_up[pu] = True
    unit_dn[pd] = True
    classes: list[LinkClass] = []
    joint: list = []
    if pu.size:
        k, ball, B = _k_eff(ui, p_in, q_in, ns)
        classes_u, joint_u = _pair_unit_classes(model, pu, pd, k[pu], ball[pu], B[pu], s_p[regular], b_p[regular])
        classes += classes_u
        joint += joint_u
    tangled_up = has_up & ~unit_up
    tangled_dn = has_dn & ~unit_dn
    mc = False
    if tangled_up.any():
        touching = tangled_up[u] | tangled_dn[d]
        mc = float(qc[touching].sum()) * samples <= PATH_SAMPLE_BUDGET      # balls <= flows x QPs
    if mc:
        mu, md = tangled_up[u], tangled_dn[d]
        up_cls = _group_classes("leaf uplinks", sl[mu], qc[mu], pc[mu], up_n, slow, bg_up)
        dn_cls = _group_classes("leaf downlinks", dl[md], qc[md], pc[md], up_n, slow, bg_dn)
        t = intra & mu
        pkey, pinv = np.unique(u[t] * ns + d[t], return_inverse=True)
        pk, pball, _ = _k_eff(pinv.ravel(), pc[t], qc[t])
        spec = _path_sample(model, up_cls, dn_cls, pkey // ns, pkey % ns, pk, pball, u, d, xp, pc, qc,
                            tangled_up, tangled_dn)
        for c in up_cls + dn_cls:
            c.joint = len(joint)
        joint.append(spec)
        classes += up_cls + dn_cls
        mu, md = ~unit_up[u] & ~tangled_up[u], ~unit_dn[d] & ~tangled_dn[d]
    else:
        mu, md = ~unit_up[u], ~unit_dn[d]
    if mu.any():
        classes += _group_classes("leaf uplinks", *_pick(mu, sl, qc, pc), up_n, slow, bg_up)
    if md.any():
        classes += _group_classes("leaf downlinks", *_pick(md, dl, qc, pc), up_n, slow, bg_dn)
    return classes, joint


def _pick(mask: np.ndarray, *arrays) -> tuple:
    """The entries of each of ``arrays`` where ``mask`` holds (the arrays themselves when it holds everywhere)."""
    if mask.all():
        return arrays
    return tuple(a[mask] for a in arrays)


def _pair_cabling(model: NetworkModel, pu, pd):
    """Spines s and links per leaf-spine pair b of each leaf pair, and whether both leaves have that same regular
    cabling (every spine of the pair's spine set reached by b links from each, none slow)."""
    f = model.fabric
    if pu.size == 0:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0, bool)
    st = f.structure
    if model.alive_links is None and not model.slow_spines and st.get("leaf_spine_even", True) \
            and int(st.get("leaf_spine_bundle", 0)) > 0:
        b = int(st["leaf_spine_bundle"])
        s_u, s_d = model.leaf_up[pu] // b, model.leaf_up[pd] // b
        regular = (s_u == s_d) & (model.leaf_up[pu] % b == 0) & (s_u > 0)
        return s_u, np.full(pu.size, b, np.int64), regular
    cab = model.cabling()
    bu, bd = cab["bundle"][pu], cab["bundle"][pd]
    regular = (bu > 0) & (bu == bd) & (cab["nspines"][pu] == cab["nspines"][pd]) & (cab["sig"][pu] == cab["sig"][pd])
    return cab["nspines"][pu], bu, regular


def _pair_unit_classes(model: NetworkModel, pu, pd, k, ball, B, s, b):
    """One uplink class and one downlink class per (k, s, b, background) of the pair units, and their samplers."""
    sb = model.fabric.switch_base
    bgu = np.rint(np.clip(model.background_of("leaf uplinks", pu + sb), 0.0, 0.95) * 100).astype(np.int64)
    bgd = np.rint(np.clip(model.background_of("leaf downlinks", pd + sb), 0.0, 0.95) * 100).astype(np.int64)
    sig = np.stack([k, s, b, bgu, bgd], axis=1)
    csig, cinv = unique_rows(sig)
    classes, joint = [], []
    for (kk, ss, bb, gu, gd), m in zip(csig.tolist(), _class_members(cinv, len(csig))):
        n = ss * bb
        per_link = B[m] / n
        cb = float(ball[m].max())
        up = LinkClass("leaf uplinks", kk, n, 0, per_link.size, cb, pu[m] + sb, float(per_link.mean()), gu / 100.0,
                       per_link, joint=len(joint))
        dn = LinkClass("leaf downlinks", kk, n, 0, per_link.size, cb, pd[m] + sb, float(per_link.mean()),
                       gd / 100.0, per_link, joint=len(joint))
        joint.append(PairUnits(kk, ss, bb, per_link.size, cb, up, dn))
        classes += [up, dn]
    return classes, joint


def _path_sample(model: NetworkModel, up_cls, dn_cls, pu, pd, pk, pball, u, d, xp, pc, qc, tangled_up,
                 tangled_dn) -> PathSample:
    """The :class:`PathSample` of the tangled leaf groups: their cabling, ball families and classes."""
    f = model.fabric
    sb = f.switch_base
    up_leaves = np.flatnonzero(tangled_up)
    dn_leaves = np.flatnonzero(tangled_dn)
    leaves = np.union1d(up_leaves, dn_leaves)
    ids = kind_index(f.link_kind, _LS)
    if model.alive_links is not None:
        ids = ids[model.alive_links[ids]]
    ids = ids[np.isin(np.take(f.link_a, ids) - sb, leaves)]
    order = np.lexsort((f.link_b[ids], f.link_a[ids]))
    ids = ids[order]
    leaf_of = f.link_a[ids] - sb
    spine_of = f.link_b[ids]
    L = ids.size
    links_of = {int(x): np.flatnonzero(leaf_of == x) for x in leaves.tolist()}
    slow = np.ones(L)
    if model.slow_spines:
        slow[np.isin(spine_of, np.asarray(model.slow_spines))] = 1.0 / model.slow_factor
    fams = []       # (k, ball, up candidates, [down candidates per up candidate]) ; up None: arrival only
    for a, bleaf, k, w in zip(pu.tolist(), pd.tolist(), pk.tolist(), pball.tolist()):
        la, lb = links_of[a], links_of[bleaf]
        reach = np.isin(spine_of[la], spine_of[lb])
        cand = la[reach]
        downs = [lb[spine_of[lb] == spine_of[c]] for c in cand.tolist()]
        fams.append((k, w, cand, downs))
    if xp.any():
        for side, tangled, is_up in ((u, tangled_up, True), (d, tangled_dn, False)):
            m = xp & tangled[side]
            if not m.any():
                continue
            keys, inv = np.unique(side[m], return_inverse=True)
            k, w, _ = _k_eff(inv.ravel(), pc[m], qc[m])
            for x, kk, ww in zip(keys.tolist(), k.tolist(), w.tolist()):
                fams.append((kk, ww, links_of[x], None) if is_up else (kk, ww, None, [links_of[x]]))
    opt_up, opt_nd, opt_doff, down = [], [], [], []
    fam_off, fam_nopt = [], []
    for _, _, cand, downs in fams:
        fam_off.append(len(opt_up))
        options = [(int(c), downs[r] if downs is not None else None) for r, c in enumerate(cand)] \
            if cand is not None else [(-1, downs[0])]
        options = options or [(-1, None)]                    # no spine reaches the destination: nothing to load
        fam_nopt.append(len(options))
        for up, dn in options:
            opt_up.append(up)
            opt_doff.append(len(down))
            opt_nd.append(0 if dn is None else len(dn))
            if dn is not None:
                down.extend(int(x) for x in dn)
    opt_up = np.array(opt_up, np.int64)
    down = np.array(down + [0], np.int64)                  # a trailing dummy keeps every offset in range
    k = np.array([x[0] for x in fams], np.int64)
    ball_fam = np.repeat(np.arange(len(fams)), k)
    # groups: uplinks of each tangled sender, downlinks of each tangled receiver; slots 0..L-1 up, L..2L-1 down
    group_of_slot = np.full(2 * L, -1, np.int64)
    gpos = {}
    for x in up_leaves.tolist():
        gpos[("leaf uplinks", x + sb)] = len(gpos)
        group_of_slot[links_of[x]] = gpos[("leaf uplinks", x + sb)]
    for x in dn_leaves.tolist():
        gpos[("leaf downlinks", x + sb)] = len(gpos)
        group_of_slot[L + links_of[x]] = gpos[("leaf downlinks", x + sb)]
    classes = {}
    for c in up_cls + dn_cls:
        classes[id(c)] = np.array([gpos[(c.kind, int(x))] for x in c.member_ids.tolist()], np.int64)
    return PathSample(np.array(fam_off, np.int64)[ball_fam], np.array(fam_nopt, np.int64)[ball_fam],
                      np.array([x[1] for x in fams], float)[ball_fam], np.maximum(opt_up, 0),
                      np.where(opt_up >= 0, slow[np.maximum(opt_up, 0)], 0.0), np.array(opt_nd, np.int64),
                      np.array(opt_doff, np.int64), down, np.append(slow[down[:-1]], 0.0), L, group_of_slot,
                      len(gpos), classes)


def _sample_paths(spec: PathSample, rng: np.random.Generator, samples: int) -> dict:
    """Per class (by id): the busiest member's busiest link, bytes per op byte, in each sample."""
    K = spec.ball_off.size
    L = spec.n_links
    u = rng.random((2, samples, K), dtype=np.float32)
    o = spec.ball_off + (u[0] * spec.ball_nopt).astype(np.int64)
    nd = spec.opt_nd[o]
    d = spec.opt_doff[o] + (u[1] * nd).astype(np.int64)
    d = np.where(nd > 0, d, spec.down.size - 1)             # no downlink here: the dummy, weight 0
    dn = spec.down[d]
    base = (np.arange(samples, dtype=np.int64) * L)[:, None]
    up_loads = np.bincount((base + spec.opt_up[o]).ravel(), weights=(spec.ball_w * spec.opt_upw[o]).ravel(),
                           minlength=samples * L)
    dn_loads = np.bincount((base + dn).ravel(), weights=(spec.ball_w * spec.down_w[d]).ravel(),
                           minlength=samples * L)
    loads = np.concatenate([up_loads.reshape(samples, L), dn_loads.reshape(samples, L)], axis=1)
    used = np.flatnonzero(spec.group_of_slot >= 0)
    order = used[np.argsort(spec.group_of_slot[used], kind="stable")]
    g_sorted = spec.group_of_slot[order]
    starts = np.flatnonzero(np.concatenate([[True], g_sorted[1:] != g_sorted[:-1]]))
    gmax = np.zeros((samples, spec.n_groups))
    gmax[:, g_sorted[starts]] = np.maximum.reduceat(loads[:, order], starts, axis=1)
    return {cid: gmax[:, pos].max(axis=1) for cid, pos in spec.classes.items()}


def _count_per_member(*keys) -> np.ndarray:
    """For each member, how many members share its combination of keys."""
    stacked = np.stack([k.ravel() for k in keys], axis=1)
    _, inv = unique_rows(stacked)
    return np.bincount(inv)[inv]


def _all_pairs_load(phase, model: NetworkModel, qps: int) -> PhaseLoad:
    """Link loads of a direct all-to-all from member counts (no pair enumeration).

    Member a sends 1/n of the op's bytes to every other member; pairs inside a scale-up domain use NVLink. A
    member's flows that leave its leaf go to members neither on its leaf nor in its domain:
    off(a) = (n - same_leaf(a)) - (same_domain(a) - same_domain_and_leaf(a)); by symmetry as many arrive.
    Pods are counted the same way.
    """
    f = model.fabric
    members = phase.all_pairs
    I, n = members.shape
    inst = np.repeat(np.arange(I), n).reshape(I, n)
    nic = f.gpu_nics[members, 0] - f.nic_base
    leaf = f.nic_ports[nic, 0]
    dom = f.gpu_domain[members]
    same_leaf = _count_per_member(inst, leaf)
    same_dom = _count_per_member(inst, dom)
    same_dom_leaf = _count_per_member(inst, dom, leaf)
    per = 1.0 / n
    nic_max = float((n - same_dom).max()) * per
    off = (n - same_leaf) - (same_dom - same_dom_leaf)
    leaf_flat = leaf.ravel()
    sb = f.switch_base
    classes: list[LinkClass] = []
    hops = 1
    if off.max() > 0:
        hops = 3
        k_leaf = np.bincount(leaf_flat - sb, weights=off * qps, minlength=f.n_switches)
        keys = np.flatnonzero(k_leaf > 0) + sb
        k = np.rint(k_leaf[keys - sb]).astype(np.int64)
        classes += _classes_from_counts("leaf uplinks", keys, k, per / qps, model.leaf_up[keys - sb],
                                        model.leaf_slow[keys - sb], model.background_of("leaf uplinks", keys))
        classes += _classes_from_counts("leaf downlinks", keys, k, per / qps, model.leaf_up[keys - sb],
                                        model.leaf_slow[keys - sb], model.background_of("leaf downlinks", keys))
        if model.pod_bins.size:
            pod = model.pod_of_switch[leaf_flat - sb].reshape(I, n)
            same_pod = _count_per_member(inst, pod)
            same_dom_pod = _count_per_member(inst, dom, pod)
            off_pod = (n - same_pod) - (same_dom - same_dom_pod)
            if off_pod.max() > 0:
                hops = 5
                k_pod = np.bincount(pod.ravel(), weights=off_pod * qps, minlength=model.pod_bins.size)
                pkeys = np.flatnonzero(k_pod > 0)
                kp = np.rint(k_pod[pkeys]).astype(np.int64)
                zero = np.zeros(pkeys.size, np.int64)
                classes += _classes_from_counts("pod core uplinks", pkeys, kp, per / qps, model.pod_bins[pkeys],
                                                zero, model.background_of("pod core uplinks", pkeys))
                classes += _classes_from_counts("pod core downlinks", pkeys, kp, per / qps, model.pod_bins[pkeys],
                                                zero, model.background_of("pod core downlinks", pkeys))
    sending = (n - same_dom)[off > 0]
    fpp = float(sending.min()) * qps if sending.size else 1.0
    return PhaseLoad(classes, nic_max, phase.nvlink_bytes_per_byte, hops, phase.steps, [], fpp, bool(off.max() > 0))


def _classes_from_counts(kind, keys, k, ball, n, slow, bg=None) -> list[LinkClass]:
    bg = np.zeros(keys.size) if bg is None else bg
    return _classes(kind, keys, k, np.full(keys.size, float(ball)), n, slow, bg, k * float(ball))


def _dragonfly_classes(model: NetworkModel, sl, dl, pc, qc) -> list[LinkClass]:
    f = model.fabric
    a = model.dfly_routers_per_group
    r_s, r_d = sl - f.switch_base, dl - f.switch_base
    g_s, g_d = r_s // a, r_d // a
    zero = lambda keys: np.zeros(len(keys), np.int64)  # noqa: E731
    out: list[LinkClass] = []
    intra = g_s == g_d
    if intra.any():
        # minimal routing inside a group: the direct local link between the two routers
        key = r_s[intra] * (a * 10**6) + r_d[intra]
        out += _group_classes("router local links", key, qc[intra], pc[intra],
                              lambda k: np.ones(len(k), np.int64), zero)
    inter = ~intra
    if inter.any():
        n_groups = int(f.structure.get("groups", 1))
        pair = g_s[inter] * n_groups + g_d[inter]
        lpp = max(model.dfly_links_per_pair, 1)
        out += _group_classes("global links", pair, qc[inter], pc[inter], lambda k: np.full(len(k), lpp), zero)
        out += _group_classes("router local uplinks", r_s[inter], qc[inter], pc[inter],
                              lambda k: np.full(len(k), max(a - 1, 1)), zero)
    return out


def sample_phase_factor(load: PhaseLoad, model: NetworkModel, routing: str, eff: float, nv_bytes_per_s: float,
                        imbalance: float, rng: np.random.Generator, samples: int, reorder_slowdown: float = 1.0,
                        reorder_floor: float = 0.45, hash_correlation: float = 0.0):
    """Seconds per op byte of the phase in each sample, and per class the sampled busiest-link bytes per op byte.

    NIC ports run at the NIC speed, each link group at its own links' speed (:meth:`NetworkModel.link_bps`).
    ``reorder_slowdown`` > 1 (a reorder-intolerant transport under per-packet spraying) stretches the network time
    of a phase whose flows take several paths by :func:`fabric.evaluate.transport.reorder_factor`, from the
    utilization of its busiest link group over the phase. ``hash_correlation`` > 0 (ECMP only): that share of the
    flows on a pod's core-facing links hash as the tier below them did (:mod:`fabric.evaluate.polarization`).
    """
    cap = model.capacity_bps / 8.0 * eff
    nic_t = load.nic_max / cap
    nv_t = load.nvlink_max / nv_bytes_per_s if nv_bytes_per_s > 0 else 0.0
    t = np.full(samples, nic_t)
    drawn = {}
    for spec in load.joint:
        if isinstance(spec, PairUnits):
            from fabric.evaluate.ballsbins import pair_max_load_cdf, sample_from_cdf

            m = sample_from_cdf(pair_max_load_cdf(spec.k, spec.s, spec.b), spec.members, rng.random(samples),
                                cap=spec.k) * spec.ball
            drawn[id(spec.up)] = m
            drawn[id(spec.down)] = m
        else:
            drawn.update(_sample_paths(spec, rng, samples))
    per_class = []
    link_t = np.zeros(samples)
    worst = np.full(samples, -1, np.int64)
    for ci, c in enumerate(load.classes):
        lcap = model.link_bps(c.kind) / 8.0 * eff
        if c.n <= 0:
            busiest = np.full(samples, np.inf)       # every path of the group failed
            per_class.append(busiest)
            t = np.maximum(t, busiest / lcap)
            continue
        if c.pinned:
            busiest = np.full(samples, c.ball)
        elif c.hashed:
            busiest = sample_max_load(c.k, c.n, c.members, rng.random(samples)) * c.ball
        elif c.joint >= 0 and routing == "ecmp":
            busiest = drawn[id(c)].copy()
        elif routing == "ecmp" and hash_correlation > 0 and c.kind in model.polar_shares():
            from fabric.evaluate.ballsbins import sample_from_cdf, weighted_max_load_cdf
            from fabric.evaluate.polarization import mixture_groups

            groups = mixture_groups(model.polar_shares()[c.kind], c.n, hash_correlation)
            busiest = sample_from_cdf(weighted_max_load_cdf(c.k, groups), c.members, rng.random(samples),
                                      cap=c.k) * c.ball
        else:
            busiest = _healthy_busiest(c, model, routing, imbalance, rng, samples)
        if model.sample_faults is not None and c.kind.startswith("leaf") and not c.pinned:
            members = set(c.member_ids.tolist())
            for s, faults in enumerate(model.sample_faults):
                for leaf in members.intersection(faults):
                    left = c.n - faults[leaf]
                    if left <= 0:
                        busiest[s] = np.inf
                        continue
                    if routing == "ecmp":
                        v = sample_max_load(c.k, left, 1, rng.random(1))[0] * c.ball
                    elif routing == "computed":
                        v = computed_busiest_balls(c.k, left) * c.ball
                    else:
                        v = c.k * c.ball / left * (1.0 + (imbalance if routing == "adaptive" else 0.0))
                    busiest[s] = max(busiest[s], v)
        per_class.append(busiest)
        ct = busiest / (lcap * (1.0 - c.bg))
        worst = np.where(ct > link_t, ci, worst)
        link_t = np.maximum(link_t, ct)
    t = np.maximum(t, link_t)
    if reorder_slowdown > 1.0 and load.multipath and load.classes:
        from fabric.evaluate.transport import reorder_factor

        w = np.maximum(worst, 0)
        links = np.array([c.n for c in load.classes], float)[w]
        per_link = np.array([c.k / max(c.n, 1) for c in load.classes], float)[w]
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(t > 0, link_t / t, 0.0)
        t = t * reorder_factor(reorder_slowdown, rho, links, load.flows_per_port, per_link, reorder_floor)
    t = np.maximum(t, nv_t)
    if load.forward_nvlink > 0 and nv_bytes_per_s > 0:
        t = t + load.forward_nvlink / nv_bytes_per_s        # the NVLink hops around the network (PXN, detour)
    return t, per_class


def _healthy_busiest(c, model: NetworkModel, routing: str, imbalance: float, rng, samples: int) -> np.ndarray:
    """Bytes (per op byte) on the busiest link of the class's busiest member, per sample, without random faults."""
    if routing == "ecmp":
        if c.slow:
            fast_n = c.n - c.slow
            k_slow = max(1, int(round(c.k * c.slow / c.n)))
            ms = sample_max_load(k_slow, c.slow, c.members, rng.random(samples)) / model.slow_factor
            mf = sample_max_load(max(c.k - k_slow, 0), fast_n, c.members, rng.random(samples)) \
                if fast_n > 0 else np.zeros(samples)
            busiest = np.maximum(ms, mf) * c.ball
        else:
            busiest = sample_max_load(c.k, c.n, c.members, rng.random(samples)) * c.ball
    elif routing == "computed":      # flows placed on paths by a controller: the max-min ideal (computed.py)
        busiest = np.full(samples, computed_busiest_balls(c.k, c.n, c.slow, model.slow_factor) * c.ball)
    elif routing == "adaptive":
        eff_links = c.n - c.slow + c.slow * model.slow_factor
        busiest = np.full(samples, c.k * c.ball / eff_links * (1.0 + imbalance))
    else:  # spray: even split regardless of capacity
        share = c.k * c.ball / c.n
        busiest = np.full(samples, share / (model.slow_factor if c.slow else 1.0))
    return busiest
