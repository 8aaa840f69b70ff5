"""From a communication op on a placed process group to its traffic: the scale-up part and network phases.

An op runs on every instance of its process group at once (all DP groups all-reduce together), so the traffic of
one op is the union over instances. Members of an instance are ordered by GPU id, as NCCL orders rings by
topology. With ``g`` members per scale-up domain in ``N`` domains (:func:`group_shape`):

- ``N == 1``: the op stays inside the NVLink domain (an all-reduce runs NCCL's ring or, on NVLink-SHARP GPUs,
  NVLS: each GPU moves (1 + 1/g) S through the NVSwitch, which reduces);
- all-reduce with ``g > 1`` and ``N > 1``, by algorithm (docs/evaluator.md):
  ``ring``: NCCL's flat ring over all p = N g ranks, whose g channels cross every node boundary on the g rails:
  each rail carries 2(p-1)/p x S/g (1.875x the two-level optimum 2(N-1)/N x S/g on 2 nodes of 8);
  ``tree``: a chain inside the node (2 S per GPU over NVLink) and NCCL's double binary tree across nodes on each
  rail (two trees, each half the data: S/g per rail on 2 nodes, ~2 S/g per rail on more);
  ``nvls_tree``: NVLS inside the node, the double binary tree across nodes;
  ``in_network`` (CollNet) / ``nvls`` across nodes: the switches reduce, each rail sends and receives S/g once
  (the aggregation trees' switch links: :mod:`fabric.evaluate.innetwork`);
  ``hierarchical`` (explicit): reduce-scatter in, all-reduce across, all-gather out, one after the other.
  NCCL streams chunks through both levels at once, so except for ``hierarchical`` the slower level sets the
  pace (``pipelined``);
- all-gather / reduce-scatter / broadcast / reduce with ``g > 1``, ``N > 1``: NCCL's flat ring (each rail carries
  the ring volume over p ranks);
- otherwise flat: the algorithm's flows between members; flows inside a domain use NVLink.

A :class:`Traffic` is a pattern: its byte figures are per byte of the op's ``size``, so the same pattern serves
every op of the same group, kind and algorithm (their ECMP hash outcomes are shared too: hashes are fixed per
connection for a job launch).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from fabric.evaluate.collectives import (ALL_TO_ALL_STEPS, CollectiveHardware, bandwidth_factor, latency_steps,
                                         resolve_algorithm)

__all__ = ["NetPhase", "Traffic", "GroupShape", "group_shape", "algorithm_for", "op_traffic", "dtree_parents",
           "HIERARCHICAL_KINDS", "rail_rows"]

HIERARCHICAL_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


@dataclass
class NetPhase:
    """One bulk-synchronous round of network flows. ``bytes_per_byte`` scales with the op's size.

    ``injection_only`` marks in-network reduction: every member sends/receives its share once through its NIC and
    the switches aggregate; the evaluator adds the aggregation trees' switch links
    (:func:`fabric.evaluate.innetwork.tree_phase_load`).
    """

    src_gpu: np.ndarray
    dst_gpu: np.ndarray
    bytes_per_byte: np.ndarray
    steps: int
    nvlink_bytes_per_byte: float = 0.0
    injection_only: bool = False
    all_pairs: np.ndarray | None = None

    def expand(self) -> "NetPhase":
        """The explicit flows of an all-pairs phase (kept implicit while the group is large)."""
        if self.all_pairs is None:
            return self
        src, dst = _all_pairs(self.all_pairs)
        n = self.all_pairs.shape[1]
        return NetPhase(src, dst, np.full(src.shape[0], 1.0 / n), self.steps, self.nvlink_bytes_per_byte,
                        self.injection_only)


#: All-to-alls with more flows than this stay implicit: the network model counts their link loads per leaf
#: from member counts instead of enumerating n(n-1) pairs per instance.
IMPLICIT_ALL_PAIRS_FLOWS = 200_000


@dataclass
class Traffic:
    """The traffic pattern of one op kind on one placed group (per byte of op size)."""

    kind: str
    algorithm: str
    group_size: int
    instances: int
    per_domain: int
    domains: int
    scaleup_bytes_per_byte: float = 0.0
    scaleup_steps: int = 0
    phases: list = field(default_factory=list)
    network_algorithm: str = ""
    pipelined: bool = True
    #: the scale-up part runs NVLS (the NVSwitch reduces; its own NVLink efficiency, transport.py)
    scaleup_nvls: bool = False
    #: transfers each member posts one by one (a direct all-to-all: every other member; transport.peer_issue_s)
    peers: int = 0


@dataclass(frozen=True)
class GroupShape:
    """A placed group: members sorted by GPU per instance, spread over ``domains`` (N) scale-up domains with
    ``per_domain`` (g = n / N) members each when the counts are even (1 otherwise); ``uniform`` when, moreover,
    every domain's members are consecutive in GPU order (two-level algorithms need it)."""

    members: np.ndarray
    instances: int
    size: int
    domains: int
    per_domain: int
    uniform: bool


def group_shape(instances_gpus: np.ndarray, gpu_domain: np.ndarray) -> GroupShape:
    """How the instances (rows of GPU ids) sit in scale-up domains."""
    members = np.sort(instances_gpus, axis=1)
    I, n = members.shape
    dom = gpu_domain[members]
    first = np.concatenate([np.ones((I, 1), bool), dom[:, 1:] != dom[:, :-1]], axis=1)
    n_domains = first.sum(axis=1)
    N = int(n_domains.max())
    uniform = bool((n_domains == N).all()) and n % N == 0
    g = n // N if uniform else 1
    if uniform and g > 1:
        uniform = bool((dom.reshape(I, N, g) == dom.reshape(I, N, g)[:, :, :1]).all())
    return GroupShape(members, I, n, N, g, uniform)


def _ring_pairs(members: np.ndarray, wrap: bool = True):
    """(src, dst) of a ring (or chain) over each row of ``members``."""
    nxt = np.roll(members, -1, axis=1)
    if not wrap:
        return members[:, :-1].ravel(), nxt[:, :-1].ravel()
    return members.ravel(), nxt.ravel()


def _btree_parents(n: int) -> np.ndarray:
    """Parent of each rank in NCCL's binary tree over ``n`` ranks (root 0, -1 for it; NVIDIA/nccl
    src/graph/trees.cc, ``ncclGetBtree``): rank r with lowest set bit b hangs under (r xor b) | 2b, or under
    r xor b when that is out of range. Even ranks are the inner nodes, odd ranks the leaves."""
    r = np.arange(n, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= n, r ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """NCCL's double binary tree (``ncclGetDtree``): the binary tree and, for its second tree, the mirror image
    (rank r -> n-1-r) when ``n`` is even or the tree shifted by one rank when ``n`` is odd, so that the leaves of
    one tree are the inner nodes of the other. Each tree carries half of the data."""
    t0 = _btree_parents(n)
    r = np.arange(n, dtype=np.int64)
    if n % 2 == 0:
        src = n - 1 - r
        t1 = np.where(t0[src] < 0, -1, n - 1 - t0[src])
    else:
        src = (r - 1) % n
        t1 = np.where(t0[src] < 0, -1, (t0[src] + 1) % n)
    return t0, t1


def _tree_depth(parent: np.ndarray) -> int:
    """Edges on the longest path from a rank to the root."""
    depth = 0
    cur = np.arange(parent.size)
    while True:
        cur = cur[parent[cur] >= 0]
        if cur.size == 0:
            return depth
        cur = parent[cur]
        depth += 1


def _dtree_flows(members: np.ndarray):
    """(src, dst, bytes per op byte, steps) of NCCL's double binary tree over each row of ``members``: in each
    tree every child sends its half of the data up (reduce) and the parent sends it back down (broadcast);
    the steps are the deeper tree's height up and down."""
    n = members.shape[1]
    srcs, dsts = [], []
    depth = 0
    for parent in dtree_parents(n):
        child = np.flatnonzero(parent >= 0)
        a, b = members[:, child].ravel(), members[:, parent[child]].ravel()
        srcs += [a, b]
        dsts += [b, a]
        depth = max(depth, _tree_depth(parent))
    src, dst = np.concatenate(srcs), np.concatenate(dsts)
    return src, dst, np.full(src.shape[0], 0.5), 2 * depth


def _hd_rounds(members: np.ndarray):
    """Halving-doubling: round r pairs i with i xor 2^r (power-of-two groups)."""
    n = members.shape[1]
    rounds = []
    r = 1
    while r < n:
        partner = np.arange(n) ^ r
        rounds.append((members.ravel(), members[:, partner].ravel(), r))
        r <<= 1
    return rounds


def _all_pairs(members: np.ndarray):
    n = members.shape[1]
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return members[:, i].ravel(), members[:, j].ravel()


def _flat_phases(kind: str, alg: str, members: np.ndarray, domain_of) -> list[NetPhase]:
    n = members.shape[1]
    if kind in ("all_to_all", "all_to_allv"):
        if members.shape[0] * n * (n - 1) > IMPLICIT_ALL_PAIRS_FLOWS:
            dom = domain_of[members]
            same = (dom[:, :, None] == dom[:, None, :]).sum(axis=2) - 1 if n <= 4096 else None
            nv = float(same.max()) / n if same is not None else _max_same_domain(dom) / n
            empty = np.zeros(0, np.int64)
            return [NetPhase(empty, empty, np.zeros(0), ALL_TO_ALL_STEPS, nvlink_bytes_per_byte=nv,
                             all_pairs=members)]
        src, dst = _all_pairs(members)
        per = np.full(src.shape[0], 1.0 / n)
        return [_split_nvlink(src, dst, per, ALL_TO_ALL_STEPS, domain_of)]
    if kind == "send_recv":
        src, dst = _ring_pairs(members, wrap=False)
        return [_split_nvlink(src, dst, np.ones(src.shape[0]), 1, domain_of)]
    if kind == "all_reduce" and alg in ("in_network", "nvls"):
        g = members.ravel()
        return [NetPhase(g, g, np.ones(g.shape[0]), latency_steps(kind, "in_network", n), injection_only=True)]
    if kind == "all_reduce" and alg in ("tree", "nvls_tree"):
        src, dst, per, steps = _dtree_flows(members)
        return [_split_nvlink(src, dst, per, steps, domain_of)]
    if alg == "halving_doubling" and n & (n - 1) == 0:
        phases = []
        reps = 2 if kind == "all_reduce" else 1
        for src, dst, r in _hd_rounds(members):
            per = np.full(src.shape[0], reps * r / n)   # reduce-scatter round sends n/(2r)... mirrored sizes
            phases.append(_split_nvlink(src, dst, per, reps, domain_of))
        return phases
    wrap = kind not in ("broadcast", "reduce")
    src, dst = _ring_pairs(members, wrap=wrap)
    per = np.full(src.shape[0], bandwidth_factor(kind, "ring", n))
    return [_split_nvlink(src, dst, per, latency_steps(kind, "ring", n), domain_of)]


def _max_same_domain(dom: np.ndarray) -> int:
    """Largest number of other members sharing a member's domain, over all instances."""
    best = 0
    for row in dom:
        _, counts = np.unique(row, return_counts=True)
        best = max(best, int(counts.max()) - 1)
    return best


def _split_nvlink(src, dst, per, steps, domain_of) -> NetPhase:
    """Keep network flows; fold flows inside a domain into the per-GPU NVLink byte figure."""
    same = np.take(domain_of, src) == np.take(domain_of, dst)      # np.take: several times faster than indexing
    if not same.any():                  # nothing to fold: the arrays are the caller's own, kept as they are
        return NetPhase(src, dst, per, steps, nvlink_bytes_per_byte=0.0)
    # the busiest GPU's NVLink egress inside this phase
    counts = np.bincount(np.compress(same, src), weights=np.compress(same, per))
    nv = float(counts.max())
    keep = np.flatnonzero(~same)
    return NetPhase(np.take(src, keep), np.take(dst, keep), np.take(per, keep), steps, nvlink_bytes_per_byte=nv)


def algorithm_for(kind: str, requested: str | None, size_bytes: float, shape: GroupShape,
                  hardware: CollectiveHardware) -> tuple[str, bool]:
    """``(algorithm, fell_back)`` for ``kind`` on a placed group: ``requested`` when the group can run it, else
    NCCL's choice (``requested`` None) or the ring (:func:`fabric.evaluate.collectives.resolve_algorithm`).
    NCCL's choice sees the group's GPUs per node; NVLS needs them in consecutive order on each node."""
    if requested == "hierarchical":
        return requested, False
    hw = replace(hardware, gpus_per_node=shape.per_domain if shape.uniform else 1,
                 nvls=hardware.nvls and shape.uniform)
    return resolve_algorithm(kind, requested, shape.size, size_bytes, nodes=shape.domains, hardware=hw)


def op_traffic(kind: str, size_bytes: float, instances_gpus: np.ndarray, gpu_domain: np.ndarray, *,
               in_network: bool = False, algorithm: str | None = None, nvls: bool = False,
               hardware: CollectiveHardware | None = None, shape: GroupShape | None = None) -> Traffic:
    """The traffic pattern of ``kind`` on every instance (rows of ``instances_gpus``, GPU ids).

    ``algorithm`` is the one to run (NCCL's choice when ``None``: an all-reduce then needs ``hardware``, the
    line rates NCCL's model weighs); one the group cannot run falls back to the ring
    (:func:`fabric.evaluate.collectives.resolve_algorithm`). ``nvls``: the GPUs have NVLink SHARP;
    ``in_network``: the network offers in-network reduction. ``shape`` may pass a precomputed
    :func:`group_shape`. Per algorithm see the module doc.
    """
    sh = shape or group_shape(instances_gpus, gpu_domain)
    members, I, n, N, g, uniform = sh.members, sh.instances, sh.size, sh.domains, sh.per_domain, sh.uniform
    if n <= 1 or kind == "barrier":
        return Traffic(kind, "none", n, I, n, 1, scaleup_steps=latency_steps(kind, "ring", n))
    if hardware is None:
        hardware = CollectiveHardware(g, nvls, 0.0, 0.0, in_network)
    two_level = uniform and g > 1 and N > 1
    alg, _ = algorithm_for(kind, algorithm, size_bytes, sh, hardware)
    if N == 1:
        if alg == "nvls":
            return Traffic(kind, alg, n, I, n, 1, scaleup_bytes_per_byte=bandwidth_factor(kind, alg, n),
                           scaleup_steps=latency_steps(kind, alg, n), scaleup_nvls=True)
        if alg == "tree":           # inside one node NCCL's tree is a chain: up and down it
            return Traffic(kind, alg, n, I, n, 1, scaleup_bytes_per_byte=bandwidth_factor(kind, alg, n),
                           scaleup_steps=2 * (n - 1))
        if kind in ("all_to_all", "all_to_allv", "send_recv"):
            alg = "direct"
        return Traffic(kind, alg, n, I, n, 1, scaleup_bytes_per_byte=bandwidth_factor(kind, alg, n),
                       scaleup_steps=latency_steps(kind, alg, n),
                       peers=n - 1 if kind in ("all_to_all", "all_to_allv") else 0)
    if kind in HIERARCHICAL_KINDS and two_level:
        return _two_level(kind, alg, size_bytes, members, I, n, N, g, gpu_domain, hardware)
    return Traffic(kind, alg, n, I, g, N, phases=_flat_phases(kind, alg, members, gpu_domain),
                   network_algorithm=alg, peers=n - 1 if kind in ("all_to_all", "all_to_allv") else 0)


def rail_rows(members: np.ndarray, N: int, g: int) -> np.ndarray:
    """The rails of a two-level group: row ``i g + j`` holds the ``j``-th member of every domain of instance ``i``
    (one GPU per node, the same local index: what crosses the network on one rail)."""
    I = members.shape[0]
    return members.reshape(I, N, g).transpose(0, 2, 1).reshape(I * g, N)


def _two_level(kind, alg, size_bytes, members, I, n, N, g, gpu_domain, hardware) -> Traffic:
    """An op of a group with ``g`` members in each of ``N`` domains (module doc)."""
    rails = rail_rows(members, N, g)
    ring_up = bandwidth_factor(kind if kind != "reduce" else "broadcast", "ring", g)
    if kind == "all_reduce":
        ring_up = 2.0 * (g - 1) / g             # reduce-scatter in, all-gather out
    ring_steps = latency_steps(kind, "ring", g)

    def per_rail(phases):
        for ph in phases:
            ph.bytes_per_byte = ph.bytes_per_byte / g
            ph.nvlink_bytes_per_byte /= g
        return phases

    if alg == "hierarchical":
        # one rank per node on each rail: the network part is what NCCL picks for a one-GPU-per-node group
        net_alg, _ = resolve_algorithm(kind, None, N, size_bytes / g, nodes=N,
                                       hardware=replace(hardware, gpus_per_node=1, nvls=False))
        phases = per_rail(_flat_phases(kind, net_alg, rails, gpu_domain))
        return Traffic(kind, f"hierarchical/{net_alg}", n, I, g, N, scaleup_bytes_per_byte=ring_up,
                       scaleup_steps=ring_steps, phases=phases, network_algorithm=net_alg, pipelined=False)
    if alg != "ring" and not (kind == "all_reduce" and alg in ("tree", "nvls_tree", "nvls", "in_network")):
        # chains (broadcast, reduce) and halving-doubling: the algorithm across nodes on each rail
        phases = per_rail(_flat_phases(kind, alg, rails, gpu_domain))
        return Traffic(kind, alg, n, I, g, N, scaleup_bytes_per_byte=ring_up, scaleup_steps=ring_steps,
                       phases=phases, network_algorithm=alg)
    if kind == "all_reduce" and alg in ("tree", "nvls_tree", "nvls", "in_network"):
        phases = per_rail(_flat_phases(kind, alg, rails, gpu_domain))
        if alg in ("nvls", "nvls_tree"):       # the NVSwitch reduces: (1 + 1/g) S per GPU, into it and back
            up, steps, nvls_up = bandwidth_factor(kind, "nvls", g), latency_steps(kind, "nvls", g), True
        elif alg == "tree":                    # a chain through the node, up and down, for each tree
            up, steps, nvls_up = bandwidth_factor(kind, "tree", g), 2 * (g - 1), False
        else:                                  # CollNet: ring reduce-scatter in, all-gather out
            up, steps, nvls_up = ring_up, ring_steps, False
        return Traffic(kind, alg, n, I, g, N, scaleup_bytes_per_byte=up, scaleup_steps=steps, phases=phases,
                       network_algorithm=alg, scaleup_nvls=nvls_up)
    # NCCL's flat ring over all p ranks: its channels cross every node boundary on the g rails, so each rail
    # carries the full ring volume over p ranks; the 2(p-1) steps are paid, 2(N-1) of them across the network
    phases = per_rail(_flat_phases(kind, "ring", rails, gpu_domain))
    flat = bandwidth_factor(kind, "ring", n) / max(bandwidth_factor(kind, "ring", N), 1e-300)
    for ph in phases:
        ph.bytes_per_byte = ph.bytes_per_byte * flat
    up_steps = max(0, latency_steps(kind, "ring", n) - sum(ph.steps for ph in phases))
    return Traffic(kind, "ring", n, I, g, N, scaleup_bytes_per_byte=ring_up, scaleup_steps=up_steps,
                   phases=phases, network_algorithm="ring")
