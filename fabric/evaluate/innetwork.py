"""In-network reduction (SHARP): the aggregation trees of an all-reduce, where they sit and what they load.

With in-network reduction (InfiniBand SHARP, ``design.in_network_reduction``) NCCL runs an all-reduce across nodes as
CollNet, or as NVLS with SHARP on NVLink-SHARP GPUs (:mod:`fabric.evaluate.collectives`): the switches reduce. Only
all-reduces run in the network here (the algorithms NCCL's choice gives them); reduce-scatter and all-gather run
the ring.

**Trees.** One aggregation tree per group instance (an NCCL communicator), per rail of a two-level group (the j-th
GPU of every node: each rail's NICs reduce S/g of the data), per NIC of a GPU and per NIC port (plane): a tree
carries ``B = S / (g x NICs per GPU x ports)`` per op of S bytes. Its lowest level is the leaves its members' ports
attach to: each member's port sends B once up to its leaf and receives the result once (the NIC-port term the
evaluator always had); each leaf reduces its members' shares, sends B once up one link to the tree's spine and
receives B once down the same link. A tree on one leaf needs no uplink (the leaf is its root). In a 3-tier fabric
a tree over several pods has a spine in each pod, which sends B once up one link to the tree's core (the root). On
a dragonfly one of the tree's routers in each group reduces the group's routers and one of those is the root; each
sends B once to the router above it and gets the result back, over the ordinary router links.

**Placement** (what NVIDIA's SHARP aggregation manager does for a job): trees are placed one by one, instance by
instance, each on the spine (or core) with the fewest trees so far among those that reach every leaf of the tree
over a link no other tree holds, ties broken by rotating from the tree's index, so an op's trees spread over the
spines. Switch resources are limited: a switch takes part in at most ``sharp_trees`` trees at once (catalog column:
1 on NVIDIA Quantum HDR, one per port on Quantum-2; NVIDIA SHARP release notes) and a link carries at most one tree
(one active tree per port). An op's instances run at once, so its trees must fit together; ops run one after
another, so each op's trees are placed on the whole fabric. An instance any of whose trees finds no place runs
without SHARP (NCCL disables CollNet for a communicator that gets no SHARP resources): its ordinary algorithm over
the network, beside the other instances' trees, and the evaluation says so.

**Loads.** Tree links are *pinned* (:class:`fabric.evaluate.network.LinkClass`): each carries B per op byte up and
B down whatever the routing, at its line rate, or at ``slow_factor`` of it on a slow spine; other jobs' traffic on
the same link groups shares them like any class. An op some of whose instances fell back takes the longer of its
trees and its fallback, which shares the link groups it crosses with the trees (max-min: the trees take the share
tree bytes / (tree bytes + fallback bytes) of each). Failures and slow switches come from the
:class:`~fabric.evaluate.network.NetworkModel`: a failed spine holds no tree (its trees move to other spines, or
their instances fall back when no spine has free ports), a slow spine slows the trees rooted on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabric.evaluate.flows import GroupShape, algorithm_for, group_shape, rail_rows
from fabric.evaluate.network import NetworkModel, PhaseLoad, _classes, _dragonfly_classes
from fabric.topology.fabric import LINK_KINDS

__all__ = ["TreePlacement", "NO_LIMIT", "switch_tree_limit", "runs_on_trees", "place_trees", "tree_phase_load",
           "tree_traffic", "in_network_lines"]

_SC = LINK_KINDS.index("spine-core")
#: The tree limit of a switch without a ``sharp_trees`` figure: none beyond one tree per link.
NO_LIMIT = 1 << 30
#: The all-reduce algorithms that reduce in the network switches (NVLS counts when it spans nodes).
TREE_ALGORITHMS = ("in_network", "nvls")
_NO_PORT = "no spine has a free link to every leaf of the tree; a link carries one tree"


def switch_tree_limit(switch) -> int:
    """Trees one switch of catalog row ``switch`` takes part in at once (:data:`NO_LIMIT` when not given)."""
    value = getattr(switch, "sharp_trees", None)
    return NO_LIMIT if value is None else int(value)


def _two_level(shape: GroupShape) -> bool:
    return shape.uniform and shape.per_domain > 1 and shape.domains > 1


def runs_on_trees(kind: str, algorithm: str, shape: GroupShape, in_network: bool) -> bool:
    """Whether this op reduces in the network switches: an all-reduce across nodes by CollNet or NVLS + SHARP (or
    the explicit hierarchical algorithm, whose network part is then CollNet)."""
    if kind != "all_reduce" or not in_network or shape.size <= 1 or shape.domains <= 1:
        return False
    return algorithm in TREE_ALGORITHMS or (algorithm == "hierarchical" and _two_level(shape))


@dataclass(frozen=True)
class TreePlacement:
    """Where an op's aggregation trees sit: one entry per tree link in the arrays of its kind (a leaf's link up to
    its tree's spine, a pod spine's link up to the tree's core, a dragonfly router's flow to the router above it);
    bytes are per op byte, each way (up, and the result down)."""

    instances: int
    served: np.ndarray          # bool per instance: all its trees found a place
    trees: int                  # trees placed (those of the served instances)
    depth: int                  # switch levels of the deepest tree (1: all on one leaf)
    roots: np.ndarray           # root switch (node id) per placed tree
    up_leaf: np.ndarray         # leaf -> spine tree links: the leaf (node id)
    up_spine: np.ndarray        # ... the spine (node id)
    up_bytes: np.ndarray        # ... bytes per op byte
    pod: np.ndarray             # pod spine -> core tree links (3 tiers): the pod
    pod_spine: np.ndarray       # ... the pod's spine (node id)
    pod_bytes: np.ndarray       # ... bytes per op byte
    router_src: np.ndarray      # dragonfly: router -> root router
    router_dst: np.ndarray
    router_bytes: np.ndarray
    reason: str = ""            # why instances found no tree ("" when all did)

    @property
    def fallback(self) -> int:
        """Instances that run without SHARP."""
        return int(self.instances - int(self.served.sum()))


def _tree_ports(shape: GroupShape, fabric):
    """``(leaves, instance, bytes)``: per tree (instance-major) the leaf (switch node id) of each member's port,
    the tree's instance and its bytes per op byte (module doc)."""
    if _two_level(shape):
        rows = rail_rows(shape.members, shape.domains, shape.per_domain)
        inst = np.repeat(np.arange(shape.instances), shape.per_domain)
        share = 1.0 / shape.per_domain
    else:
        rows, inst, share = shape.members, np.arange(shape.instances), 1.0
    nics = fabric.gpu_nics[rows]                                 # (rows, members, NICs per GPU)
    k, P = nics.shape[2], fabric.nic_ports.shape[1]
    leaves = fabric.nic_ports[nics - fabric.nic_base]            # (rows, members, NICs, ports)
    leaves = leaves.transpose(0, 2, 3, 1).reshape(rows.shape[0] * k * P, rows.shape[1])
    return leaves, np.repeat(inst, k * P), share / (k * P)


def _static(fabric, model: NetworkModel) -> dict:
    """The tree resources of ``model``'s switches and links before any tree is placed (kept on the model):
    per block (a pod of a 3-tier fabric, else the whole fabric) the alive links between each leaf and spine, and
    each spine's alive links to the cores, padded."""
    memo = model.tree_memo.get("static")
    if memo is not None:
        return memo
    f = fabric
    sb, ns = f.switch_base, f.n_switches
    tier = f.node_tier[sb:sb + ns]
    pod = model.pod_of_switch
    blk = np.where(pod >= 0, pod, 0) if model.pod_bins.size else np.zeros(ns, np.int64)
    loc = np.zeros(ns, np.int64)
    n_blk = int(blk.max()) + 1 if ns else 1
    counts = []
    for t in (0, 1, 2):
        idx = np.flatnonzero(tier == t)
        key = blk[idx] if t < 2 else np.zeros(idx.size, np.int64)
        order = np.argsort(key, kind="stable")
        sk = key[order]
        loc[idx[order]] = np.arange(idx.size) - np.searchsorted(sk, sk, side="left")
        counts.append(np.bincount(key, minlength=n_blk))
    L, S = max(int(counts[0].max(initial=0)), 1), max(int(counts[1].max(initial=0)), 1)
    spine_of = np.full((n_blk, S), -1, np.int64)                  # switch index of each block's spines
    sp = np.flatnonzero(tier == 1)
    spine_of[blk[sp], loc[sp]] = sp
    cab = model.cabling()
    leaf_of_link = np.repeat(np.arange(ns), np.diff(cab["ptr"]))
    spine_of_link = cab["spine"] - sb
    flat = (blk[leaf_of_link] * L + loc[leaf_of_link]) * S + loc[spine_of_link]
    cnt = np.bincount(flat, minlength=n_blk * L * S).reshape(n_blk, L, S).astype(np.int32)
    sc = np.flatnonzero(f.link_kind == _SC)
    if model.alive_links is not None:
        sc = sc[model.alive_links[sc]]
    sc_core = np.full((n_blk, S, 1), -1, np.int64)
    if sc.size:
        s_idx, c_idx = f.link_a[sc] - sb, f.link_b[sc] - sb
        order = np.argsort(s_idx, kind="stable")
        s_idx, c_idx = s_idx[order], c_idx[order]
        rank = np.arange(s_idx.size) - np.searchsorted(s_idx, s_idx, side="left")
        sc_core = np.full((n_blk, S, int(rank.max()) + 1), -1, np.int64)
        sc_core[blk[s_idx], loc[s_idx], rank] = c_idx
    memo = {"blk": blk, "loc": loc, "spine_of": spine_of, "cnt": cnt, "sc_core": sc_core,
            "cores": np.flatnonzero(tier == 2)}
    model.tree_memo["static"] = memo
    return memo


class _Placer:
    """The switches' and links' tree resources while an op's trees are placed (module doc), with undo."""

    def __init__(self, fabric, model: NetworkModel, limit: int):
        f = fabric
        self.sb, self.ns, self.limit = f.switch_base, f.n_switches, int(limit)
        self.trees_on = np.zeros(self.ns, np.int64)
        self.dragonfly = bool(model.is_dragonfly)
        self.routers_per_group = max(int(model.dfly_routers_per_group), 1)
        self.log: list = []
        self.records: dict = {k: [] for k in ("roots", "up_leaf", "up_spine", "up_tree", "pod", "pod_spine",
                                              "pod_tree", "r_src", "r_dst", "r_tree")}
        if self.dragonfly:
            return
        st = _static(fabric, model)
        self.blk, self.loc, self.spine_of, self.cnt = st["blk"], st["loc"], st["spine_of"], st["cnt"]
        self.sc_core, self.cores = st["sc_core"], st["cores"]
        self.used = np.zeros_like(self.cnt)
        self.sc_used = np.zeros(self.sc_core.shape, bool)

    # ------------------------------------------------------------------ bookkeeping
    def checkpoint(self):
        return len(self.log), {k: len(v) for k, v in self.records.items()}

    def rollback(self, mark) -> None:
        n_log, lens = mark
        while len(self.log) > n_log:
            what, idx = self.log.pop()
            if what == "slots":
                np.subtract.at(self.trees_on, idx, 1)
            elif what == "ls":
                np.subtract.at(self.used, idx, 1)
            else:
                self.sc_used[idx] = False
        for k, n in lens.items():
            del self.records[k][n:]

    def _take(self, switches: np.ndarray) -> None:
        np.add.at(self.trees_on, switches, 1)
        self.log.append(("slots", switches))

    def _choose(self, ok: np.ndarray, load: np.ndarray, t: int) -> int:
        """Among ``ok`` positions, the one with the least ``load``, ties by rotation from ``t``."""
        cand = np.flatnonzero(ok)
        score = load[cand] * ok.size + (cand - t) % ok.size
        return int(cand[np.argmin(score)])

    # ------------------------------------------------------------------ one tree
    def place(self, t: int, leaves: np.ndarray, tree: int) -> tuple[str, int]:
        """Place tree ``tree`` over the switches ``leaves`` (node ids); ``("", depth)`` or ``(reason, 0)``."""
        u = np.unique(leaves) - self.sb
        lim = f"{self.limit} per switch, catalog sharp_trees"
        if (self.trees_on[u] >= self.limit).any():
            return f"a leaf already takes part in its most trees, {lim}", 0
        if u.size == 1:
            self._take(u)
            self.records["roots"].append(int(u[0]) + self.sb)
            return "", 1
        if self.dragonfly:
            return self._place_router_tree(t, u, tree)
        b, li = self.blk[u], self.loc[u]
        free = (self.cnt[b, li] - self.used[b, li]) > 0                      # (leaves, spines of the block)
        valid = self.spine_of >= 0
        slot_ok = valid & (self.trees_on[np.maximum(self.spine_of, 0)] < self.limit)
        order = np.argsort(b, kind="stable")
        bs = b[order]
        starts = np.flatnonzero(np.concatenate([[True], bs[1:] != bs[:-1]]))
        ub = bs[starts]
        inv = np.empty(b.size, np.int64)
        inv[order] = np.repeat(np.arange(ub.size), np.diff(np.append(starts, b.size)))
        reach = np.logical_and.reduceat(free[order], starts, axis=0)
        avail = reach & slot_ok[ub]
        if ub.size == 1:
            if not avail[0].any():
                return (f"no spine reaching every leaf of the tree has a free tree slot, {lim}"
                        if (reach[0] & valid[ub[0]]).any() else _NO_PORT), 0
            j = self._choose(avail[0], self.trees_on[np.maximum(self.spine_of[ub[0]], 0)], t)
            spine = int(self.spine_of[ub[0], j])
            idx = (b, li, np.full(u.size, j))
            np.add.at(self.used, idx, 1)
            self.log.append(("ls", idx))
            self._take(np.append(u, spine))
            self.records["roots"].append(spine + self.sb)
            self._record_up(u, np.full(u.size, spine), tree)
            return "", 2
        # several pods: a spine in each (with a free link to one core), the core at the root
        links = avail[:, :, None] & (self.sc_core[ub] >= 0) & ~self.sc_used[ub]      # (pods, spines, links)
        rr, jj, mm = np.nonzero(links)
        if rr.size == 0:
            return "no spine of some pod has a free link towards the cores; a link carries one tree", 0
        cores = self.cores
        seen = np.zeros((ub.size, cores.size), bool)
        seen[rr, self.loc[self.sc_core[ub][rr, jj, mm]]] = True
        ok = seen.all(axis=0) & (self.trees_on[cores] < self.limit)
        if not ok.any():
            return f"no core is reached over free links from a spine of every pod of the tree, or its tree slots " \
                   f"are taken, {lim}", 0
        core = int(cores[self._choose(ok, self.trees_on[cores], t)])
        hit = links & (self.sc_core[ub] == core)
        sp_ok = hit.any(axis=2)
        load = self.trees_on[np.maximum(self.spine_of[ub], 0)]
        S = sp_ok.shape[1]
        score = np.where(sp_ok, load * S + (np.arange(S)[None, :] - t) % S, np.iinfo(np.int64).max)
        j_pod = np.argmin(score, axis=1)
        m_pod = np.argmax(hit[np.arange(ub.size), j_pod], axis=1)
        spines = self.spine_of[ub, j_pod]
        idx = (b, li, j_pod[inv])
        np.add.at(self.used, idx, 1)
        self.log.append(("ls", idx))
        sc_idx = (ub, j_pod, m_pod)
        self.sc_used[sc_idx] = True
        self.log.append(("sc", sc_idx))
        self._take(np.concatenate([u, spines, [core]]))
        self.records["roots"].append(core + self.sb)
        self._record_up(u, spines[inv], tree)
        self.records["pod"].append(ub)
        self.records["pod_spine"].append(spines + self.sb)
        self.records["pod_tree"].append(np.full(ub.size, tree))
        return "", 3

    def _record_up(self, leaves: np.ndarray, spines: np.ndarray, tree: int) -> None:
        self.records["up_leaf"].append(leaves + self.sb)
        self.records["up_spine"].append(spines + self.sb)
        self.records["up_tree"].append(np.full(leaves.size, tree))

    def _place_router_tree(self, t: int, u: np.ndarray, tree: int) -> tuple[str, int]:
        """A dragonfly tree: in each group one of the tree's routers (the one with the fewest trees, ties by
        rotation) reduces the group's routers; the aggregator of the group chosen the same way is the root."""
        groups = u // self.routers_per_group
        a = self.routers_per_group
        score = self.trees_on[u] * a + (u % a - t) % a
        order = np.lexsort((score, groups))
        first = np.concatenate([[True], groups[order][1:] != groups[order][:-1]])
        aggs = u[order][first]                                  # one per group, in group order
        agg_of = aggs[np.searchsorted(groups[order][first], groups)]
        root = int(aggs[self._choose(np.ones(aggs.size, bool), self.trees_on[aggs], t)])
        self._take(u)
        inner = u != agg_of
        src = np.concatenate([u[inner], aggs[aggs != root]])
        dst = np.concatenate([agg_of[inner], np.full(int((aggs != root).sum()), root)])
        self.records["roots"].append(root + self.sb)
        self.records["r_src"].append(src + self.sb)
        self.records["r_dst"].append(dst + self.sb)
        self.records["r_tree"].append(np.full(src.size, tree))
        return "", 3 if aggs.size > 1 else 2


def _cat(parts: list, dtype=np.int64) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


def place_trees(shape: GroupShape, fabric, model: NetworkModel, limit: int = NO_LIMIT) -> TreePlacement:
    """The aggregation trees of an all-reduce on ``shape`` (placed group) on ``model``'s fabric (module doc)."""
    leaves, inst, share = _tree_ports(shape, fabric)
    placer = _Placer(fabric, model, limit)
    served = np.ones(shape.instances, bool)
    depth, reason = 1, ""
    tree_of, bytes_of = [], []
    bounds = np.searchsorted(inst, np.arange(shape.instances + 1))
    t = 0
    for i in range(shape.instances):
        mark = placer.checkpoint()
        got = []
        for row in range(bounds[i], bounds[i + 1]):
            why, d = placer.place(t, leaves[row], len(tree_of) + len(got))
            t += 1
            if why:
                placer.rollback(mark)
                served[i], reason, got = False, reason or why, []
                break
            got.append(d)
        if got:
            depth = max(depth, max(got))
            tree_of += [i] * len(got)
            bytes_of += [share] * len(got)
    r = placer.records
    per_tree = np.asarray(bytes_of, float)
    up_tree, pod_tree, r_tree = _cat(r["up_tree"]), _cat(r["pod_tree"]), _cat(r["r_tree"])
    return TreePlacement(
        instances=shape.instances, served=served, trees=len(tree_of), depth=depth,
        roots=np.asarray(r["roots"], np.int64), up_leaf=_cat(r["up_leaf"]), up_spine=_cat(r["up_spine"]),
        up_bytes=per_tree[up_tree], pod=_cat(r["pod"]), pod_spine=_cat(r["pod_spine"]),
        pod_bytes=per_tree[pod_tree], router_src=_cat(r["r_src"]), router_dst=_cat(r["r_dst"]),
        router_bytes=per_tree[r_tree], reason=reason)


#: Placements kept per network model (they depend on its failures and the group, not on the job or the seed).
PLACEMENTS_PER_MODEL = 16


def _placed(shape: GroupShape, fabric, model: NetworkModel, limit: int) -> TreePlacement:
    """:func:`place_trees`, kept on the model (a search evaluates many designs of one cabling on its models)."""
    key = ("placement", limit, shape.members.shape, shape.members.tobytes())
    hit = model.tree_memo.get(key)
    if hit is None:
        hit = place_trees(shape, fabric, model, limit)
        kept = [k for k in list(model.tree_memo) if k[0] == "placement"]
        if len(kept) >= PLACEMENTS_PER_MODEL:
            model.tree_memo.pop(kept[0], None)
        model.tree_memo[key] = hit
    return hit


def _pinned(kind: str, keys, inv, eff, raw, n, slow, model: NetworkModel) -> list:
    """Pinned classes of the link groups ``keys``: per group its trees, busiest tree link, mean load per link."""
    k = np.bincount(inv, minlength=keys.size)
    ball = np.zeros(keys.size)
    np.maximum.at(ball, inv, eff)
    total = np.bincount(inv, weights=raw, minlength=keys.size)
    nslow = np.bincount(inv, weights=slow.astype(float), minlength=keys.size).astype(np.int64)
    out = _classes(kind, keys, k, ball, np.maximum(n, 1), nslow, model.background_of(kind, keys), total)
    for c in out:
        c.pinned = True
    return out


def tree_phase_load(load: PhaseLoad, placement: TreePlacement, model: NetworkModel) -> PhaseLoad:
    """``load`` (an in-network phase: its NIC-port term) with the link groups the trees load."""
    sb = model.fabric.switch_base
    slow_nodes = np.asarray(model.slow_spines, np.int64)
    classes: list = []
    p = placement
    if p.up_leaf.size:
        slow = np.isin(p.up_spine, slow_nodes)
        eff = p.up_bytes / np.where(slow, model.slow_factor, 1.0)
        keys, inv = np.unique(p.up_leaf, return_inverse=True)
        n = model.leaf_up[keys - sb]
        for kind in ("leaf uplinks", "leaf downlinks"):
            classes += _pinned(kind, keys, inv.ravel(), eff, p.up_bytes, n, slow, model)
    if p.pod.size:
        slow = np.isin(p.pod_spine, slow_nodes)
        eff = p.pod_bytes / np.where(slow, model.slow_factor, 1.0)
        keys, inv = np.unique(p.pod, return_inverse=True)
        n = model.pod_bins[keys]
        for kind in ("pod core uplinks", "pod core downlinks"):
            classes += _pinned(kind, keys, inv.ravel(), eff, p.pod_bytes, n, slow, model)
    if p.router_src.size:
        src = np.concatenate([p.router_src, p.router_dst])
        dst = np.concatenate([p.router_dst, p.router_src])
        b = np.concatenate([p.router_bytes, p.router_bytes])
        classes += _dragonfly_classes(model, src, dst, b, np.ones(b.size))
    return PhaseLoad(classes, load.nic_max, load.nvlink_max, max(p.depth, 1), load.steps,
                     forward_nvlink=load.forward_nvlink)


def _group_bytes(placement: TreePlacement, model: NetworkModel) -> dict:
    """Tree bytes per op byte on each leaf's (pod's) link group: ``{kind: array}`` (leaf kinds by switch index)."""
    p, f = placement, model.fabric
    out = {}
    if p.up_leaf.size:
        per = np.bincount(p.up_leaf - f.switch_base, weights=p.up_bytes, minlength=f.n_switches)
        out["leaf uplinks"] = out["leaf downlinks"] = per
    if p.pod.size:
        per = np.bincount(p.pod, weights=p.pod_bytes, minlength=model.pod_bins.size)
        out["pod core uplinks"] = out["pod core downlinks"] = per
    return out


def _beside_trees(model: NetworkModel, placement: TreePlacement, fallback) -> NetworkModel:
    """``model`` as the fallback instances see it beside the trees: on each link group both cross, the trees take
    the share tree bytes / (tree bytes + fallback bytes) of its capacity, the max-min split of two demands that run
    at once (as jobs sharing link groups do, ``engine._with_background``): the fallback cannot end before the group
    has carried both."""
    trees = _group_bytes(placement, model)
    sb = model.fabric.switch_base
    own = {k: np.zeros_like(v) for k, v in trees.items()}
    for c, _busiest, _pi in fallback.link_loads:
        if c.kind in own:
            idx = c.member_ids - sb if c.kind.startswith("leaf") else c.member_ids
            np.add.at(own[c.kind], idx, c.member_loads * max(c.n, 1))
    bg = {k: v.copy() for k, v in model.background.items()}
    for kind, tb in trees.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where((own[kind] > 0) & (tb > 0), tb / (tb + own[kind]), 0.0)
        bg[kind] = np.clip(bg.get(kind, 0.0) + share, 0.0, 0.9)
    return replace(model, background=bg)


def _subset(shape: GroupShape, keep: np.ndarray, gpu_domain) -> GroupShape:
    return group_shape(shape.members[keep], gpu_domain)


def _concurrent(a, b):
    """Two parts of one op that run at once (trees and fallback instances): per sample the longer of the two."""
    dom = a if float(np.mean(a.per_byte)) >= float(np.mean(b.per_byte)) else b
    last = 1 + max((pi for _, _, pi in a.link_loads), default=-1)
    return replace(dom, per_byte=np.maximum(a.per_byte, b.per_byte), latency_s=max(a.latency_s, b.latency_s),
                   lb_per_byte=max(a.lb_per_byte, b.lb_per_byte),
                   bound_by=(a if a.lb_per_byte >= b.lb_per_byte else b).bound_by,
                   issue_s=max(a.issue_s, b.issue_s), algorithm=a.algorithm,
                   link_loads=list(a.link_loads) + [(c, x, pi + last) for c, x, pi in b.link_loads])


def tree_traffic(run, *, kind: str, size_bytes: float, algorithm: str, requested: str | None, shape: GroupShape,
                 hardware, fabric, model: NetworkModel, limit: int, plans, notes: list | None, label: str):
    """An in-network op's traffic samples: its trees placed on ``model``, instances without a tree on their
    ordinary algorithm beside them (module doc). ``run(shape, algorithm, hardware, model, trees, plans)`` gives
    the samples of one part; the result carries ``trees``, ``fallback_instances`` and ``fallback_algorithm``."""
    limit = NO_LIMIT if limit is None else int(limit)
    placement = None
    key = None
    if plans is not None:
        table, model_key = plans
        key = ("trees", model_key, limit, shape.members.shape, shape.members.tobytes())
        placement = table.get(key)
    if placement is None:
        placement = _placed(shape, fabric, model, limit)
        if key is not None:
            plans[0][key] = placement
    if placement.fallback == 0:
        ts = run(shape, algorithm, hardware, model, placement, plans)
        return replace(ts, trees=placement.trees)
    plain = replace(hardware, in_network=False)
    fb_shape = shape if not placement.served.any() else _subset(shape, ~placement.served, fabric.gpu_domain)
    fb_alg, _ = algorithm_for(kind, requested, size_bytes, fb_shape, plain)
    if notes is not None:
        note = (f"{label}: {placement.fallback} of {placement.instances} instance(s) found no aggregation tree "
                f"({placement.reason}) and ran the {fb_alg} algorithm over the network"
                + (f" beside the others' {placement.trees} tree(s)" if placement.trees else ""))
        if note not in notes:
            notes.append(note)
    if not placement.served.any():
        ts = run(fb_shape, fb_alg, plain, model, None, plans)
        return replace(ts, fallback_instances=placement.fallback, fallback_algorithm=fb_alg)
    served = run(_subset(shape, placement.served, fabric.gpu_domain), algorithm, hardware, model, placement, plans)
    beside = _beside_trees(model, placement, run(fb_shape, fb_alg, plain, model, None, plans))
    fb_plans = None if plans is None else (plans[0], (plans[1], "beside trees", limit, shape.members.tobytes()))
    fallback = run(fb_shape, fb_alg, plain, beside, None, fb_plans)
    return replace(_concurrent(served, fallback), trees=placement.trees, fallback_instances=placement.fallback,
                   fallback_algorithm=fb_alg)


def in_network_lines(ops) -> list[str]:
    """One line per (job, group) whose all-reduces ran in the network switches or fell back, from
    :class:`fabric.evaluate.engine.OpResult` objects or their dicts: the ops, their trees, fallback instances."""
    groups: dict = {}
    for o in ops:
        get = o.get if isinstance(o, dict) else (lambda k, _o=o: getattr(_o, k, 0))
        trees, fb = int(get("aggregation_trees") or 0), int(get("fallback_instances") or 0)
        if trees <= 0 and fb <= 0:
            continue
        g = groups.setdefault((get("job"), get("group")), {"ops": [], "trees": 0, "fb": 0, "alg": ""})
        name = get("name") or get("kind")
        if name not in g["ops"]:
            g["ops"].append(name)
        g["trees"] = max(g["trees"], trees)
        g["fb"] = max(g["fb"], fb)
        g["alg"] = g["alg"] or (get("fallback_algorithm") or "")
    out = []
    for (job, group), g in groups.items():
        text = f"{job}, group {group} ({'; '.join(g['ops'])}): "
        text += (f"reduced in the switches on {g['trees']:,} aggregation tree(s)" if g["trees"] else
                 "no aggregation tree found")
        if g["fb"]:
            text += f"; {g['fb']:,} instance(s) without a tree ran the {g['alg']} algorithm over the network"
        out.append(text)
    return out
