"""Network phases -> link-group loads -> per-sample phase times under ECMP, adaptive routing or spraying.

Links that share traffic the same way are grouped (the uplinks of one leaf, the downlinks into one leaf, the
core-facing links of one pod, the global links between two dragonfly groups). A flow with ``q`` queue pairs is ``q``
balls of ``bytes / q`` thrown onto its group's ``n`` equal links:

- ``ecmp``: uniformly at random per ball (hash per flow x QP): the group's busiest link carries the maximum bin load
  of :mod:`fabric.evaluate.ballsbins`; hashes are fixed for a job launch, so one draw per Monte Carlo sample;
- ``adaptive``: load-aware near-even split: mean load x (1 + ``adaptive_imbalance``), capacity-aware around slow links;
- ``spray``: exact even split per packet (fluid).

Groups with equal (balls, links, slow links) form a class; the busiest of its L members is drawn from the max over
L independent experiments. Unequal flows (all-to-allv) count as ``k_eff = (sum b)^2 / sum b^2`` balls of equal size.
The phase time is the largest of: the busiest NIC port (injection or ejection) at the NIC speed, every class's busiest
link at its links' speed (uplinks may run faster or slower than the NIC ports: ``Design.uplink_gbps``), and the
busiest GPU's NVLink share. Leaf-to-leaf flows cross a leaf uplink and a leaf downlink; flows between 3-tier pods
also cross a pod's core-facing links (one of ``spines_per_pod x spine_uplinks``, uniformly, by the Clos symmetry).

PXN (``design.pxn``, always on for rail-only fabrics): a flow between different rails first moves over NVLink to
the source node's GPU on the destination rail, so it stays on that rail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.evaluate.ballsbins import sample_max_load
from fabric.evaluate.bounds import fabric_cuts
from fabric.topology.fabric import LINK_KINDS

__all__ = ["NetworkModel", "LinkClass", "PhaseLoad", "phase_load", "sample_phase_factor"]

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

    def background_of(self, kind: str, keys: np.ndarray) -> np.ndarray:
        """Other jobs' share of the capacity of the groups ``keys`` of ``kind`` (0 where none)."""
        bg = self.background.get(kind)
        if bg is None or keys.size == 0:
            return np.zeros(keys.size)
        idx = keys - self.fabric.switch_base if kind.startswith("leaf") else keys
        return bg[idx]

    @classmethod
    def build(cls, fabric, *, failed_links=(), failed_switches=(), slow_switches=(), slow_factor: float = 1.0):
        """Derive the model; ``failed_links`` are link ids, switches are node ids."""
        sb, ns = fabric.switch_base, fabric.n_switches
        a, b, kind = fabric.link_a, fabric.link_b, fabric.link_kind
        alive = np.ones(fabric.n_links, bool)
        if len(failed_links):
            alive[np.asarray(failed_links, dtype=np.int64)] = False
        for s in failed_switches:
            alive &= (a != s) & (b != s)
        ls = (kind == _LS)
        leaf_end = a[ls & alive]
        leaf_up = np.bincount(leaf_end - sb, minlength=ns).astype(np.int64)
        had = np.bincount(a[ls] - sb, minlength=ns)
        cut = np.flatnonzero((had > 0) & (leaf_up == 0))
        if cut.size:
            from fabric.errors import DesignError

            raise DesignError(f"the scenario cuts {fabric.node_label(int(cut[0]) + sb)}"
                              f"{f' and {cut.size - 1} other leaves' if cut.size > 1 else ''} off from every "
                              f"spine: the fabric is partitioned (fail fewer links or spines, or add spines)")
        slow = np.zeros(ns, np.int64)
        for s in slow_switches:
            m = ls & alive & (b == s)
            slow += np.bincount(a[m] - sb, minlength=ns)
        pod = np.full(ns, -1, np.int64)
        pod_bins = np.zeros(0, np.int64)
        if (kind == _SC).any():
            # a leaf's pod is identified by the lowest spine it reaches (leaves of a pod share their spines)
            la, lb = a[ls], b[ls]
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
            sc = (kind == _SC) & alive
            pod_bins = np.bincount(pod[a[sc] - sb], minlength=uniq.shape[0])
        is_dfly = fabric.family == "dragonfly"
        s = fabric.structure
        group_bps = {}
        for link_kind, groups in ((_LS, ("leaf uplinks", "leaf downlinks")),
                                  (_SC, ("pod core uplinks", "pod core downlinks"))):
            of_kind = np.flatnonzero(kind == link_kind)
            if of_kind.size:
                group_bps.update(dict.fromkeys(groups, float(fabric.link_capacity_bps[of_kind[0]])))
        return cls(
            fabric=fabric, leaf_up=leaf_up, leaf_slow=slow, slow_factor=float(slow_factor), pod_of_switch=pod,
            pod_bins=pod_bins, is_dragonfly=is_dfly,
            dfly_routers_per_group=int(s.get("routers_per_group", 0)),
            dfly_links_per_pair=int(s.get("global_links_per_group_pair", 0)),
            dfly_globals_per_router=int(s.get("globals_per_router", 0)),
            capacity_bps=float(fabric.link_speed_bps), group_capacity_bps=group_bps,
            rail_based=fabric.family in ("rail_optimized", "rail_only"),
            force_pxn=fabric.family == "rail_only",
            cuts=fabric_cuts(fabric, pod if pod_bins.size else None),
        )


@dataclass
class LinkClass:
    """Members (link groups) with the same load shape; ``ball`` is bytes per ball per byte of op size."""

    kind: str
    k: int
    n: int
    slow: int
    members: int
    ball: float
    member_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    mean_load: float = 0.0       # mean bytes per link per op byte over the members
    bg: float = 0.0              # share of these links' capacity taken by other jobs
    member_loads: np.ndarray = field(default_factory=lambda: np.zeros(0))   # mean bytes per link per op byte


@dataclass
class PhaseLoad:
    """Deterministic facts of one network phase, ready for sampling."""

    classes: list
    nic_max: float               # busiest NIC port, bytes per op byte
    nvlink_max: float            # busiest GPU's NVLink bytes per op byte
    hops: int
    steps: int


def _group_classes(kind: str, keys: np.ndarray, qps: np.ndarray, bytes_: np.ndarray, n_of_key, slow_of_key,
                   bg_of_key=None) -> list[LinkClass]:
    if keys.size == 0:
        return []
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    B = np.bincount(inv, weights=bytes_)
    B2 = np.bincount(inv, weights=bytes_ * bytes_ / qps)
    k_eff = np.maximum(1, np.rint(B * B / np.maximum(B2, 1e-300))).astype(np.int64)
    ball = B / k_eff
    n = np.asarray(n_of_key(uniq), dtype=np.int64)
    slow = np.asarray(slow_of_key(uniq), dtype=np.int64)
    bg = np.zeros(uniq.size) if bg_of_key is None else np.asarray(bg_of_key(uniq), dtype=float)
    return _classes(kind, uniq, k_eff, ball, n, slow, bg, B)


def _classes(kind, keys, k, ball, n, slow, bg, total_bytes) -> list[LinkClass]:
    """Group members with equal (balls, links, slow links, background in 1 % steps) into classes."""
    bg_pct = np.rint(np.clip(bg, 0.0, 0.95) * 100).astype(np.int64)
    sig = np.stack([k, n, slow, bg_pct], axis=1)
    csig, cinv = np.unique(sig, axis=0, return_inverse=True)
    cinv = cinv.ravel()
    ball = np.broadcast_to(np.asarray(ball, dtype=float), k.shape)
    out = []
    for c, (kk, nn, sl, bp) in enumerate(csig.tolist()):
        m = cinv == c
        per_link = total_bytes[m] / max(nn, 1)
        out.append(LinkClass(kind, int(kk), int(max(nn, 0)), int(sl), int(m.sum()), float(ball[m].max()), keys[m],
                             float(per_link.mean()), bp / 100.0, per_link))
    return out


def phase_load(phase, model: NetworkModel, *, qps: int, pxn: bool) -> PhaseLoad:
    """Aggregate a :class:`~fabric.evaluate.flows.NetPhase` into link-group classes."""
    f = model.fabric
    if phase.all_pairs is not None:
        simple = (f.gpu_nics.shape[1] == 1 and f.nic_ports.shape[1] == 1 and not model.is_dragonfly
                  and not ((pxn or model.force_pxn) and model.rail_based))
        if simple:
            return _all_pairs_load(phase, model, qps)
        phase = phase.expand()
    src, dst, per = phase.src_gpu, phase.dst_gpu, phase.bytes_per_byte
    nvlink_max = phase.nvlink_bytes_per_byte
    k_nic = f.gpu_nics.shape[1]
    if k_nic > 1:
        src_nic = f.gpu_nics[src].ravel()
        dst_nic = f.gpu_nics[dst].ravel()
        per = np.repeat(per / k_nic, k_nic)
    else:
        src_nic, dst_nic = f.gpu_nics[src, 0], f.gpu_nics[dst, 0]
    npn = f.design.nics_per_node
    if (pxn or model.force_pxn) and model.rail_based and src_nic.size:
        s_loc, d_loc = (src_nic - f.nic_base) % npn, (dst_nic - f.nic_base) % npn
        cross = s_loc != d_loc
        if cross.any():
            moved = np.bincount(src[np.repeat(np.arange(src.size), k_nic)[cross]] if k_nic > 1 else src[cross],
                                weights=per[cross])
            nvlink_max = max(nvlink_max, float(moved.max()))
            src_nic = np.where(cross, src_nic - s_loc + d_loc, src_nic)
    ports = f.nic_ports.shape[1]
    si, di = src_nic - f.nic_base, dst_nic - f.nic_base
    if ports > 1:
        per = np.repeat(per / ports, ports)
        pidx = np.tile(np.arange(ports), si.size)
        si, di = np.repeat(si, ports), np.repeat(di, ports)
    else:
        pidx = np.zeros(si.size, np.int64)
    src_leaf = f.nic_ports[si, pidx]
    dst_leaf = f.nic_ports[di, pidx]
    port_id_s = si * ports + pidx
    port_id_d = di * ports + pidx
    nic_max = 0.0
    if per.size:
        nic_max = max(float(np.bincount(port_id_s, weights=per).max()),
                      float(np.bincount(port_id_d, weights=per).max()))
    if phase.injection_only:
        return PhaseLoad([], nic_max, nvlink_max, 2, phase.steps)
    sb = f.switch_base
    q = np.full(per.size, float(qps))
    cross = src_leaf != dst_leaf
    classes: list[LinkClass] = []
    hops = 1
    if cross.any():
        hops = 3
        sl, dl, pc, qc = src_leaf[cross], dst_leaf[cross], per[cross], q[cross]
        if model.is_dragonfly:
            classes += _dragonfly_classes(model, sl, dl, pc, qc)
        else:
            up = lambda keys: model.leaf_up[keys - sb]          # noqa: E731
            slow = lambda keys: model.leaf_slow[keys - sb]      # noqa: E731
            classes += _group_classes("leaf uplinks", sl, qc, pc, up, slow,
                                      lambda k: model.background_of("leaf uplinks", k))
            classes += _group_classes("leaf downlinks", dl, qc, pc, up, slow,
                                      lambda k: model.background_of("leaf downlinks", k))
            if model.pod_bins.size:
                sp, dp = model.pod_of_switch[sl - sb], model.pod_of_switch[dl - sb]
                xp = sp != dp
                if xp.any():
                    hops = 5
                    pb = lambda keys: model.pod_bins[keys]      # noqa: E731
                    zero = lambda keys: np.zeros(len(keys), np.int64)  # noqa: E731
                    classes += _group_classes("pod core uplinks", sp[xp], qc[xp], pc[xp], pb, zero,
                                              lambda k: model.background_of("pod core uplinks", k))
                    classes += _group_classes("pod core downlinks", dp[xp], qc[xp], pc[xp], pb, zero,
                                              lambda k: model.background_of("pod core downlinks", k))
    return PhaseLoad(classes, nic_max, nvlink_max, hops, phase.steps)


def _count_per_member(*keys) -> np.ndarray:
    """For each member, how many members share its combination of keys."""
    stacked = np.stack([k.ravel() for k in keys], axis=1)
    _, inv, counts = np.unique(stacked, axis=0, return_inverse=True, return_counts=True)
    return counts[inv.ravel()]


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
    return PhaseLoad(classes, nic_max, phase.nvlink_bytes_per_byte, hops, phase.steps)


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
                        imbalance: float, rng: np.random.Generator, samples: int):
    """Seconds per op byte of the phase in each sample, and per class the sampled busiest-link bytes per op byte.

    NIC ports run at the NIC speed, each link group at its own links' speed (:meth:`NetworkModel.link_bps`).
    """
    cap = model.capacity_bps / 8.0 * eff
    base = max(load.nic_max / cap, load.nvlink_max / nv_bytes_per_s if nv_bytes_per_s > 0 else 0.0)
    t = np.full(samples, base)
    per_class = []
    for c in load.classes:
        cap = model.link_bps(c.kind) / 8.0 * eff
        if c.n <= 0:
            busiest = np.full(samples, np.inf)       # every path of the group failed
            per_class.append(busiest)
            t = np.maximum(t, busiest / cap)
            continue
        busiest = _healthy_busiest(c, model, routing, imbalance, rng, samples)
        if model.sample_faults is not None and c.kind.startswith("leaf"):
            members = set(c.member_ids.tolist())
            for s, faults in enumerate(model.sample_faults):
                for leaf in members.intersection(faults):
                    left = c.n - faults[leaf]
                    if left <= 0:
                        busiest[s] = np.inf
                        continue
                    if routing == "ecmp":
                        v = sample_max_load(c.k, left, 1, rng.random(1))[0] * c.ball
                    else:
                        v = c.k * c.ball / left * (1.0 + (imbalance if routing == "adaptive" else 0.0))
                    busiest[s] = max(busiest[s], v)
        per_class.append(busiest)
        t = np.maximum(t, busiest / (cap * (1.0 - c.bg)))
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
    elif routing == "adaptive":
        eff_links = c.n - c.slow + c.slow * model.slow_factor
        busiest = np.full(samples, c.k * c.ball / eff_links * (1.0 + imbalance))
    else:  # spray: even split regardless of capacity
        share = c.k * c.ball / c.n
        busiest = np.full(samples, share / (model.slow_factor if c.slow else 1.0))
    return busiest
