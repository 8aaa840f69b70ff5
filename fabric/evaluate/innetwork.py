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
the same link groups shares them like any class.

**Failures, slow switches, fallback** (docs/evaluator.md, issue 34 item 10). Trees are placed on the scenario's
:class:`~fabric.evaluate.network.NetworkModel`: a failed spine holds none (the trees it held are built again on the
live spines where free links remain) and a failed cable is not a free link. A slow spine slows the trees on it; the
op waits for its slowest tree and its NIC ports. Instances without a tree run their ordinary algorithm at the same
time as the trees, and the bytes add where the two parts meet: a link group holding trees adds its tree's bytes to
the fallback's busiest link (exact when the trees hold every link of the group, or the fallback spreads evenly; an
upper bound otherwise), and a NIC port with GPUs of both parts carries both. The op's lower bound is the larger of
the trees' and the fallback's (with the shared ports and links at line rate); the excess is charged to the resource
the fallback lacked (:data:`LACKING`), so that a failure moves that term of the bound's split, not the NIC's. What
the trees did is kept as figures (``story``: :func:`_story`) and said in words by :func:`in_network_lines`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from fabric.arrays import unique
from fabric.evaluate.flows import GroupShape, algorithm_for, group_shape, rail_rows
from fabric.evaluate.network import NetworkModel, PhaseLoad, _classes, _dragonfly_classes, port_loads
from fabric.lru import BytesLRU
from fabric.topology.fabric import LINK_KINDS

__all__ = ["TreePlacement", "NO_LIMIT", "switch_tree_limit", "runs_on_trees", "place_trees", "tree_phase_load",
           "tree_traffic", "in_network_lines"]

_SC = LINK_KINDS.index("spine-core")
#: The tree limit of a switch without a ``sharp_trees`` figure: none beyond one tree per link.
NO_LIMIT = 1 << 30
#: The all-reduce algorithms that reduce in the network switches (NVLS counts when it spans nodes).
TREE_ALGORITHMS = ("in_network", "nvls")
_NO_PORT = "no spine has a free link to every leaf of the tree; a link carries one tree"
#: What an instance without a tree lacked (the resource its fallback's extra lower bound is charged to):
#: free leaf-spine links, free spine-core links, or trees a switch can take part in (catalog ``sharp_trees``).
LACKING = ("leaf uplinks", "pod uplinks", "switch tree slots")


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
    lacking: str = ""           # ... the resource they lacked (one of LACKING)
    up_tree: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # tree of each leaf -> spine link
    pod_tree: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # tree of each spine -> core link

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
    # each link's core by its place among the cores (-1: no link)
    sc_core_loc = np.where(sc_core >= 0, loc[np.maximum(sc_core, 0)], -1)
    memo = {"blk": blk, "loc": loc, "spine_of": spine_of, "cnt": cnt, "sc_core": sc_core, "sc_core_loc": sc_core_loc,
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
        self.lacking = ""
        self.records: dict = {k: [] for k in ("roots", "up_leaf", "up_spine", "up_tree", "pod", "pod_spine",
                                              "pod_tree", "r_src", "r_dst", "r_tree")}
        if self.dragonfly:
            return
        st = _static(fabric, model)
        self.blk, self.loc, self.spine_of, self.cnt = st["blk"], st["loc"], st["spine_of"], st["cnt"]
        self.sc_core, self.sc_core_loc, self.cores = st["sc_core"], st["sc_core_loc"], st["cores"]
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
        """Place tree ``tree`` over the switches ``leaves`` (node ids); ``("", depth)`` or ``(reason, 0)``, with
        what was lacking in ``self.lacking`` (one of :data:`LACKING`)."""
        u = unique(leaves) - self.sb
        lim = f"{self.limit} per switch, catalog sharp_trees"
        self.lacking = "switch tree slots"
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
                if (reach[0] & valid[ub[0]]).any():
                    return f"no spine reaching every leaf of the tree has a free tree slot, {lim}", 0
                self.lacking = "leaf uplinks"
                return _NO_PORT, 0
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
        sc_ub = self.sc_core[ub]
        links = avail[:, :, None] & (sc_ub >= 0) & ~self.sc_used[ub]      # (pods, spines, links)
        if not links.any():
            self.lacking = ("leaf uplinks" if not reach.any(axis=1).all() else
                            "switch tree slots" if not avail.any(axis=1).all() else "pod uplinks")
            return ("no spine of some pod has a free link to every leaf of the tree in the pod and towards the "
                    "cores; a link carries one tree"), 0
        cores = self.cores
        seen = np.zeros((ub.size, cores.size), bool)           # pod x core: reached over a free link
        at = self.sc_core_loc[ub] + (np.arange(ub.size) * cores.size)[:, None, None]
        seen.reshape(-1)[at[links]] = True
        ok = seen.all(axis=0) & (self.trees_on[cores] < self.limit)
        if not ok.any():
            if seen.all(axis=0).any():
                return f"every core reached over free links from a spine of every pod of the tree has its tree " \
                       f"slots taken, {lim}", 0
            self.lacking = "pod uplinks"
            return "no core is reached over free links from a spine of every pod of the tree; a link carries " \
                   "one tree", 0
        core = int(cores[self._choose(ok, self.trees_on[cores], t)])
        hit = links & (sc_ub == core)
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
    depth, reason, lacking = 1, "", ""
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
                lacking = lacking or placer.lacking
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
        router_bytes=per_tree[r_tree], reason=reason, lacking=lacking, up_tree=up_tree, pod_tree=pod_tree)


#: Placements kept per network model (they depend on its failures and the group, not on the job or the seed).
PLACEMENTS_PER_MODEL = 16
#: Placements on healthy fabrics kept across builds, keyed by cabling (a search meets a cabling again after its
#: fabric left the build cache: placing the trees again cost it about a tenth of its time), up to this many bytes.
HEALTHY_PLACEMENT_BYTES = 64 * 2 ** 20
_HEALTHY_PLACEMENTS = BytesLRU(HEALTHY_PLACEMENT_BYTES,
                               lambda p: sum(v.nbytes for v in vars(p).values() if isinstance(v, np.ndarray)))


def _placed(shape: GroupShape, fabric, model: NetworkModel, limit: int) -> TreePlacement:
    """:func:`place_trees`, kept on the model (a search evaluates many designs of one cabling on its models) and,
    on a healthy fabric, by its cabling (:data:`HEALTHY_PLACEMENT_BYTES`)."""
    key = ("placement", limit, shape.members.shape, shape.members.tobytes())
    hit = model.tree_memo.get(key)
    if hit is not None:
        return hit
    shared = (fabric.cache_key, *key) if fabric.cache_key and model.healthy else None
    if shared is not None:
        hit = _HEALTHY_PLACEMENTS.get(shared)
    if hit is None:
        hit = place_trees(shape, fabric, model, limit)
        if shared is not None:
            _HEALTHY_PLACEMENTS.put(shared, hit)
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


def _tree_link_load(placement: TreePlacement, model: NetworkModel) -> dict:
    """Per link-group kind, the bytes (per op byte) of the busiest tree link of each group at full speed (a link of
    a slow spine counts ``1 / slow_factor`` times its bytes): ``{kind: array}``, leaf kinds indexed by switch
    index, pod kinds by pod. A link carries at most one tree, so this is the tree load of any tree link."""
    p, f = placement, model.fabric
    slow_nodes = np.asarray(model.slow_spines, np.int64)
    out = {}
    if p.up_leaf.size:
        eff = p.up_bytes / np.where(np.isin(p.up_spine, slow_nodes), model.slow_factor, 1.0)
        per = np.zeros(f.n_switches)
        np.maximum.at(per, p.up_leaf - f.switch_base, eff)
        out["leaf uplinks"] = out["leaf downlinks"] = per
    if p.pod.size:
        eff = p.pod_bytes / np.where(np.isin(p.pod_spine, slow_nodes), model.slow_factor, 1.0)
        per = np.zeros(max(model.pod_bins.size, int(p.pod.max()) + 1))
        np.maximum.at(per, p.pod, eff)
        out["pod core uplinks"] = out["pod core downlinks"] = per
    return out


def _shared_links(fallback, trees: dict, model: NetworkModel, net_eff: float, samples: int) -> np.ndarray:
    """Seconds per op byte, per sample, the links the fallback shares with trees need: on each group of a kind the
    trees load, its busiest fallback link carries the group's tree bytes too (module doc: exact when the trees hold
    every link of the group, or the fallback spreads evenly; an upper bound otherwise). Phase by phase, the trees'
    bytes spread evenly over the fallback's phases that cross them."""
    sb = model.fabric.switch_base
    by_phase: dict = {}
    for c, busiest, pi in fallback.link_loads:
        tb = trees.get(c.kind)
        if tb is None or c.n <= 0 or not c.member_ids.size:
            continue
        idx = c.member_ids - sb if c.kind.startswith("leaf") else c.member_ids
        b = float(tb[idx].max())
        if b <= 0:
            continue
        rate = model.link_bps(c.kind) / 8.0 * net_eff * max(1.0 - c.bg, 1e-9)
        by_phase.setdefault(pi, []).append((np.broadcast_to(busiest, (samples,)), b, rate))
    out = np.zeros(samples)
    for items in by_phase.values():
        out += np.max([(x + b / len(by_phase)) / r for x, b, r in items], axis=0)
    return out


def _port_bytes(ts, model: NetworkModel, pxn: bool, routing: str) -> tuple[np.ndarray, np.ndarray]:
    """Bytes (per op byte) each NIC port sends and receives over all the network phases of a part's traffic."""
    f = model.fabric
    size = f.n_nics * f.nic_ports.shape[1]
    send, recv = np.zeros(size), np.zeros(size)
    for ph in ts.traffic.phases if ts.traffic is not None else ():
        s, r = port_loads(ph, model, pxn=pxn, routing=routing)
        send += s
        recv += r
    return send, recv


def _shared_ports(served, fallback, model: NetworkModel, pxn: bool, routing: str) -> float:
    """Bytes per op byte on the busiest NIC port when the trees' members and the fallback's share ports (GPUs of
    different instances on one NIC, ``nics_per_gpu`` < 1): such a port carries both parts' bytes. 0 otherwise."""
    a, b = _port_bytes(served, model, pxn, routing), _port_bytes(fallback, model, pxn, routing)
    both = ((a[0] + a[1]) > 0) & ((b[0] + b[1]) > 0)
    if not both.any():
        return 0.0
    return max(float((a[0] + b[0]).max()), float((a[1] + b[1]).max()))


def _shared_links_line_rate(fallback, placement: TreePlacement, model: NetworkModel) -> float:
    """Seconds per op byte at line rate that the link groups both parts load need at least: every tree link's
    bytes plus the fallback's bytes on the group, spread over its links (a busiest link carries at least the mean;
    the lower bound's term for the two parts together)."""
    p, f = placement, model.fabric
    per: dict = {}
    if p.up_leaf.size:
        per["leaf uplinks"] = per["leaf downlinks"] = np.bincount(p.up_leaf - f.switch_base, weights=p.up_bytes,
                                                                   minlength=f.n_switches)
    if p.pod.size:
        per["pod core uplinks"] = per["pod core downlinks"] = np.bincount(
            p.pod, weights=p.pod_bytes, minlength=max(model.pod_bins.size, int(p.pod.max()) + 1))
    best = 0.0
    sb = f.switch_base
    for c, _, _ in fallback.link_loads:
        tb = per.get(c.kind)
        if tb is None or c.n <= 0 or not c.member_ids.size:
            continue
        idx = c.member_ids - sb if c.kind.startswith("leaf") else c.member_ids
        mean = (tb[idx] / c.n + c.member_loads).max()
        best = max(best, float(mean) / (model.link_bps(c.kind) / 8.0))
    return best


def _subset(shape: GroupShape, keep: np.ndarray, gpu_domain) -> GroupShape:
    return group_shape(shape.members[keep], gpu_domain)


def _bound_parts(trees, fallback_lb: float, lacking: str, fallback_by: str) -> tuple:
    """``((resource, s per op byte), ...)``: the op's lower bound split into what the trees need and, when the
    fallback needs more (its own bound, or the ports and links it shares with the trees at line rate), the excess,
    charged to the resource the fallback instances lacked (:data:`LACKING`): without that loss they would have
    had trees."""
    base = ((trees.bound_by, trees.lb_per_byte),)
    extra = fallback_lb - trees.lb_per_byte
    return base + ((lacking or fallback_by, extra),) if extra > 0 else base


def _alongside(served, fallback, placement: TreePlacement, model: NetworkModel, *, net_eff: float, pxn: bool,
               routing: str, samples: int):
    """The trees and the fallback instances of one op, run at once (module doc): per sample the longer of the two,
    where the fallback's busiest links and NIC ports also carry the trees' bytes they share."""
    port = _shared_ports(served, fallback, model, pxn, routing)
    port_line = model.capacity_bps / 8.0
    shared = np.maximum(_shared_links(fallback, _tree_link_load(placement, model), model, net_eff, samples),
                        port / (port_line * net_eff))
    net = np.maximum(np.broadcast_to(fallback.net_per_byte if fallback.net_per_byte is not None else 0.0,
                                     (samples,)), shared)
    fb_per_byte = np.maximum(fallback.up_per_byte, net) if fallback.pipelined else fallback.up_per_byte + net
    fb = replace(fallback, per_byte=fb_per_byte, net_per_byte=net)
    dom = served if float(np.mean(served.per_byte)) >= float(np.mean(fb.per_byte)) else fb
    last = 1 + max((pi for _, _, pi in served.link_loads), default=-1)
    fb_lb = max(fb.lb_per_byte, port / port_line, _shared_links_line_rate(fb, placement, model))
    parts = _bound_parts(served, fb_lb, placement.lacking, fb.bound_by)
    return replace(dom, per_byte=np.maximum(served.per_byte, fb.per_byte),
                   latency_s=max(served.latency_s, fb.latency_s), lb_per_byte=max(served.lb_per_byte, fb_lb),
                   bound_by=parts[-1][0], bound_parts=parts, issue_s=max(served.issue_s, fb.issue_s),
                   algorithm=served.algorithm,
                   link_loads=list(served.link_loads) + [(c, x, pi + last) for c, x, pi in fb.link_loads]), fb


def _p99(x) -> float:
    return float(np.percentile(np.asarray(x, float), 99, method="inverted_cdf"))


def _spine_state(model: NetworkModel) -> tuple[np.ndarray, np.ndarray, int]:
    """``(failed spines, alive spines, cables down)``: spines (node ids) with no live leaf-spine link left, those
    with some, and the leaf-spine cables down on live spines."""
    f = model.fabric
    ls = f.link_kind == LINK_KINDS.index("leaf-spine")
    alive = np.ones(f.n_links, bool) if model.alive_links is None else model.alive_links
    had = np.bincount(f.link_b[ls], minlength=f.n_nodes)
    has = np.bincount(f.link_b[ls & alive], minlength=f.n_nodes)
    failed = np.flatnonzero((had > 0) & (has == 0))
    live = np.flatnonzero(has > 0)
    down = ls & ~alive
    return failed, live, int(np.count_nonzero(down & np.isin(f.link_b, live)))


def _trees_through(placement: TreePlacement, node: int) -> int:
    """How many of ``placement``'s trees run through the switch ``node`` (root, a tree's spine or its core)."""
    ids = set(np.flatnonzero(placement.roots == node).tolist())
    ids |= set(placement.up_tree[placement.up_spine == node].tolist())
    ids |= set(placement.pod_tree[placement.pod_spine == node].tolist())
    return len(ids)


def _tightest_leaf(shape: GroupShape, fabric, model: NetworkModel) -> dict:
    """The leaf with the fewest live uplinks for the trees that need one there (every instance's trees over more
    than one leaf, a link each): ``{"leaf", "uplinks", "trees"}``."""
    leaves, _, _ = _tree_ports(shape, fabric)
    srt = np.sort(leaves, axis=1)
    first = np.ones(srt.shape, bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    spans = first.sum(axis=1) > 1
    u = srt[spans][first[spans]] - fabric.switch_base
    need = np.bincount(u, minlength=fabric.n_switches)
    cand = np.flatnonzero(need > 0)
    if not cand.size:
        return {}
    x = int(cand[np.argmin(model.leaf_up[cand] - need[cand])])
    return {"leaf": fabric.node_label(x + fabric.switch_base), "uplinks": int(model.leaf_up[x]),
            "trees": int(need[x])}


def _story(shape: GroupShape, fabric, model: NetworkModel, placement: TreePlacement, served, fallback, fb_alg: str,
           healthy, limit: int, *, net_eff: float, pxn: bool, routing: str) -> dict:
    """What the trees of one op did under the evaluation's failures and slow switches, as figures
    (:func:`in_network_lines` says it in words): the trees and instances that fell back, the failed spines and the
    trees they held in the healthy fabric, the leaf with the fewest uplinks for its trees, the slow spines and the
    trees on them, and per op byte the NIC ports', the tree links' (at full and at slow speed) and each part's p99
    time (seconds per byte)."""
    p = placement
    out: dict = {"instances": int(p.instances), "trees": int(p.trees), "fallback": int(p.fallback),
                 "fallback_algorithm": fb_alg if p.fallback else "", "lacking": p.lacking if p.fallback else "",
                 "reason": p.reason}
    f = fabric
    if p.fallback and p.lacking == "leaf uplinks" and not model.is_dragonfly:
        out["tightest"] = _tightest_leaf(shape, f, model)
    if healthy is not None and (model.alive_links is not None):
        hp = _placed(shape, f, healthy, limit)
        out["healthy_trees"], out["healthy_fallback"] = int(hp.trees), int(hp.fallback)
        failed, live, down = _spine_state(model)
        out["failed"] = {f.node_label(int(s)): _trees_through(hp, int(s)) for s in failed}
        out["live_spines"], out["cables_down"] = int(live.size), down
    if model.slow_spines and not model.is_dragonfly:
        out["slow"] = {f.node_label(int(s)): _trees_through(p, int(s)) for s in model.slow_spines}
        out["slow_factor"] = float(model.slow_factor)
    if served is not None:
        if "slow" in out:           # the NIC ports' time, to say whether the slow trees outlast them
            send, recv = _port_bytes(served, model, pxn, routing)
            out["nic_s"] = max(float(send.max(initial=0.0)), float(recv.max(initial=0.0))) / \
                (model.capacity_bps / 8.0 * net_eff)
        tree_b = max([float(x.max()) for x in (p.up_bytes, p.pod_bytes) if x.size], default=0.0)
        kind = "leaf uplinks" if p.up_bytes.size else "pod core uplinks"
        if tree_b > 0:
            out["tree_link_s"] = tree_b / (model.link_bps(kind) / 8.0 * net_eff)
            out["slow_tree_link_s"] = out["tree_link_s"] / float(model.slow_factor or 1.0)
        out["trees_p99_s"] = _p99(served.per_byte)
        npg = float(f.design.nics_per_gpu)
        out["gpus_per_nic"] = int(round(1.0 / npg)) if npg < 1 else 1
    if fallback is not None:
        out["fallback_p99_s"] = _p99(fallback.per_byte)
    return out


def tree_traffic(run, *, kind: str, size_bytes: float, algorithm: str, requested: str | None, shape: GroupShape,
                 hardware, fabric, model: NetworkModel, limit: int, plans, notes: list | None, label: str,
                 net_eff: float = 1.0, pxn: bool = False, routing: str = "ecmp", samples: int = 1, healthy=None):
    """An in-network op's traffic samples: its trees placed on ``model``, instances without a tree on their
    ordinary algorithm beside them (module doc). ``run(shape, algorithm, hardware, model, trees, plans)`` gives
    the samples of one part; the result carries ``trees``, ``fallback_instances``, ``fallback_algorithm``, the
    lower bound's parts (``bound_parts``) and what the trees did (``story``, :func:`in_network_lines`).
    ``net_eff``: the network's goodput share (transport efficiency x (1 - background load)); ``pxn``, ``routing``:
    the design's; ``healthy()``: the healthy fabric's network model (the trees it would build), or None."""
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
    healthy_model = healthy() if healthy is not None and model.alive_links is not None else None
    tell = dict(net_eff=net_eff, pxn=pxn, routing=routing)
    if placement.fallback == 0:
        ts = run(shape, algorithm, hardware, model, placement, plans)
        story = _story(shape, fabric, model, placement, ts, None, "", healthy_model, limit, **tell)
        return replace(ts, trees=placement.trees, story=story)
    plain = replace(hardware, in_network=False)
    fb_shape = shape if not placement.served.any() else _subset(shape, ~placement.served, fabric.gpu_domain)
    fb_alg, _ = algorithm_for(kind, requested, size_bytes, fb_shape, plain)
    if notes is not None:
        note = (f"{label}: {placement.fallback} of {placement.instances} instance(s) found no aggregation tree "
                f"({placement.reason}) and ran the {fb_alg} algorithm over the network"
                + (f" beside the others' {placement.trees} tree(s)" if placement.trees else ""))
        if note not in notes:
            notes.append(note)
    fallback = run(fb_shape, fb_alg, plain, model, None, plans)
    if not placement.served.any():
        # the bound every instance would have on trees (no tree link placed: the NIC term), for the bound's split
        trees = run(shape, algorithm, hardware, model, placement, plans)
        parts = _bound_parts(trees, fallback.lb_per_byte, placement.lacking, fallback.bound_by)
        story = _story(shape, fabric, model, placement, None, fallback, fb_alg, healthy_model, limit, **tell)
        return replace(fallback, fallback_instances=placement.fallback, fallback_algorithm=fb_alg,
                       bound_parts=parts, bound_by=parts[-1][0], story=story)
    served = run(_subset(shape, placement.served, fabric.gpu_domain), algorithm, hardware, model, placement, plans)
    both, fb = _alongside(served, fallback, placement, model, samples=samples, **tell)
    story = _story(shape, fabric, model, placement, served, fb, fb_alg, healthy_model, limit, **tell)
    return replace(both, trees=placement.trees, fallback_instances=placement.fallback, fallback_algorithm=fb_alg,
                   story=story)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _story_words(st: dict, size: float, p99: float) -> str:
    """The sentences of :func:`in_network_lines` for one group, from its largest op's ``in_network`` figures."""
    words = []
    T, I, F = st.get("trees", 0), st.get("instances", 0), st.get("fallback", 0)
    failed = st.get("failed") or {}
    Th = st.get("healthy_trees")
    for name, held in failed.items():
        if held:
            live = st.get("live_spines", 0)
            words.append(f"{name} is down: it held {held} of the {Th} trees the healthy fabric builds; built "
                         f"again on the {live} live spine{'' if live == 1 else 's'}, "
                         + (f"{T} fit" if F else f"all {T} fit (free links remained)"))
        else:
            words.append(f"{name} is down but held none of the {Th} trees the healthy fabric builds")
    if st.get("cables_down"):
        words.append(f"{st['cables_down']} leaf-spine cable(s) down"
                     + ("" if F else "; every tree still found a free link to each of its leaves"))
    if F:
        tight = st.get("tightest") or {}
        why = (f"{tight['leaf']} has {tight['uplinks']} uplinks{' left' if failed or st.get('cables_down') else ''}"
               f" for {tight['trees']} trees, one tree per link" if tight and tight["uplinks"] < tight["trees"]
               else st.get("reason", ""))
        words.append(f"{F} of {I} instance(s) found no tree ({why}) and ran NCCL's {st.get('fallback_algorithm')}"
                     " algorithm over the network" + (f", sharing links and NIC ports with the {T} trees" if T else ""))
    for name, held in (st.get("slow") or {}).items():
        pct = f"{st.get('slow_factor', 1.0):.0%}"
        if not held:
            words.append(f"{name} runs at {pct} speed but holds none of the {T} trees, which run at full speed")
            continue
        text = f"{name} runs at {pct} speed and holds {held} of the {T} trees"
        if "tree_link_s" in st and "nic_s" in st:
            fast, slow, nic = (size * st[k] for k in ("tree_link_s", "slow_tree_link_s", "nic_s"))
            shared = f" ({st['gpus_per_nic']} GPUs to a NIC)" if st.get("gpus_per_nic", 1) > 1 else ""
            text += (f": a tree link there takes {_ms(slow)} per {size / 1e6:.1f} MB op against {_ms(fast)} at full "
                     f"speed, and the NIC ports{shared} take {_ms(nic)}")
            text += (", so the trees take no longer than the NIC ports already did: unchanged" if slow <= nic * 1.0001
                     else f", so the trees take {_ms(max(slow, nic))} instead of {_ms(max(fast, nic))}")
        words.append(text)
    if F and T and "trees_p99_s" in st and "fallback_p99_s" in st:
        words.append(f"the trees' transfer takes {_ms(size * st['trees_p99_s'])} and the instances without a tree "
                     f"{_ms(size * st['fallback_p99_s'])} at p99; the all-reduce waits for the slower: "
                     f"{_ms(p99)} at p99")
    elif words:
        words.append(f"the all-reduce takes {_ms(p99)} at p99")
    return "; ".join(words)


def in_network_lines(ops) -> list[str]:
    """One line per (job, group) whose all-reduces ran in the network switches or fell back, from
    :class:`fabric.evaluate.engine.OpResult` objects or their dicts: the ops, their trees, fallback instances, and
    in words what the trees did under the evaluation's failures and slow switches (from the group's largest op)."""
    groups: dict = {}
    for o in ops:
        get = o.get if isinstance(o, dict) else (lambda k, _o=o: getattr(_o, k, 0))
        trees, fb = int(get("aggregation_trees") or 0), int(get("fallback_instances") or 0)
        if trees <= 0 and fb <= 0:
            continue
        g = groups.setdefault((get("job"), get("group")), {"ops": [], "trees": 0, "fb": 0, "alg": "",
                                                           "big": None})
        name = get("name") or get("kind")
        if name not in g["ops"]:
            g["ops"].append(name)
        g["trees"] = max(g["trees"], trees)
        g["fb"] = max(g["fb"], fb)
        g["alg"] = g["alg"] or (get("fallback_algorithm") or "")
        size = float(get("bytes") or 0)
        if g["big"] is None or size > g["big"][0]:
            g["big"] = (size, get("in_network") or {}, float(get("time_p99_s") or 0.0))
    out = []
    for (job, group), g in groups.items():
        text = f"{job}, group {group} ({'; '.join(g['ops'])}): "
        text += (f"reduced in the switches on {g['trees']:,} aggregation tree(s)" if g["trees"] else
                 "no aggregation tree found")
        size, story, p99 = g["big"]
        said = _story_words(story, size, p99) if story else ""
        if said:
            text += "; " + said
        elif g["fb"]:
            text += f"; {g['fb']:,} instance(s) without a tree ran the {g['alg']} algorithm over the network"
        out.append(text)
    return out
