"""From a communication op on a placed process group to its traffic: the scale-up part and network phases.

An op runs on every instance of its process group at once (all DP groups all-reduce together), so the traffic of
one op is the union over instances. Members of an instance are ordered by GPU id, as NCCL orders rings by
topology. With ``g`` members per scale-up domain in ``N`` domains:

- ``N == 1``: the op stays inside the NVLink domain;
- all-reduce / all-gather / reduce-scatter / broadcast / reduce with ``g > 1`` and ``N > 1``: two levels: the
  domain's share inside NVLink, and the network collective of ``S/g`` bytes across the ``N`` domains on each of
  the ``g`` rails in parallel (facts.md section 1). NCCL's rings stream chunks through both levels at once, so by
  default the levels overlap (``pipelined``: the slower level sets the pace); ``algorithm="hierarchical"`` runs
  them one after the other (reduce-scatter in, all-reduce across, all-gather out: the sum of the two terms);
- otherwise flat: the algorithm's flows between members; flows inside a domain use NVLink.

A :class:`Traffic` is a pattern: its byte figures are per byte of the op's ``size``, so the same pattern serves
every op of the same group, kind and algorithm (their ECMP hash outcomes are shared too: hashes are fixed per
connection for a job launch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.evaluate.collectives import bandwidth_factor, choose_algorithm, latency_steps

__all__ = ["NetPhase", "Traffic", "op_traffic", "HIERARCHICAL_KINDS"]

HIERARCHICAL_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


@dataclass
class NetPhase:
    """One bulk-synchronous round of network flows. ``bytes_per_byte`` scales with the op's size.

    ``injection_only`` marks in-network reduction: every member sends/receives its share once through its NIC and
    the switches aggregate, so only NIC links bound the phase.
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


def _ring_pairs(members: np.ndarray, wrap: bool = True):
    """(src, dst) of a ring (or chain) over each row of ``members``."""
    nxt = np.roll(members, -1, axis=1)
    if not wrap:
        return members[:, :-1].ravel(), nxt[:, :-1].ravel()
    return members.ravel(), nxt.ravel()


def _tree_pairs(members: np.ndarray):
    n = members.shape[1]
    child = np.arange(1, n)
    parent = (child - 1) // 2
    a, b = members[:, child].ravel(), members[:, parent].ravel()
    return np.concatenate([a, b]), np.concatenate([b, a])


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
            return [NetPhase(empty, empty, np.zeros(0), n - 1, nvlink_bytes_per_byte=nv, all_pairs=members)]
        src, dst = _all_pairs(members)
        per = np.full(src.shape[0], 1.0 / n)
        return [_split_nvlink(src, dst, per, n - 1, domain_of)]
    if kind == "send_recv":
        src, dst = _ring_pairs(members, wrap=False)
        return [_split_nvlink(src, dst, np.ones(src.shape[0]), 1, domain_of)]
    if kind == "all_reduce" and alg == "in_network":
        g = members.ravel()
        return [NetPhase(g, g, np.ones(g.shape[0]), latency_steps(kind, alg, n), injection_only=True)]
    if kind == "all_reduce" and alg == "tree":
        src, dst = _tree_pairs(members)
        return [_split_nvlink(src, dst, np.ones(src.shape[0]), latency_steps(kind, alg, n), domain_of)]
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
    same = domain_of[src] == domain_of[dst]
    nv = 0.0
    if same.any():
        # the busiest GPU's NVLink egress inside this phase
        counts = np.bincount(src[same], weights=per[same])
        nv = float(counts.max())
    keep = ~same
    return NetPhase(src[keep], dst[keep], per[keep], steps, nvlink_bytes_per_byte=nv)


def op_traffic(kind: str, size_bytes: float, instances_gpus: np.ndarray, gpu_domain: np.ndarray, *,
               in_network: bool = False, algorithm: str | None = None, nvls: bool = False) -> Traffic:
    """The traffic pattern of ``kind`` on every instance (rows of ``instances_gpus``, GPU ids).

    Two-level groups (``g`` per domain, ``N`` domains): with ``nvls`` (NVSwitch in-switch reduction, H100 and
    later) an all-reduce runs as NCCL's NVLS tree: the domain reduces in the switch and each rail carries the
    bandwidth-optimal 2(N-1)/N x S/g. Otherwise NCCL's flat ring over all p = N g ranks, whose g channels cross
    every node boundary on the g rails: each rail then carries 2(p-1)/p x S/g (all-gather, reduce-scatter:
    (p-1)/p x S/g), more than the two-level optimum when N is small (1.875x for 2 nodes of 8), and the ring's
    2(p-1) steps are paid in full (2(p-N) of them inside the domain).
    """
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
    if n <= 1 or kind == "barrier":
        return Traffic(kind, "none", n, I, n, 1, scaleup_steps=latency_steps(kind, "ring", n))
    if N == 1:
        alg = algorithm or ("ring" if kind not in ("all_to_all", "all_to_allv", "send_recv") else "direct")
        return Traffic(kind, alg, n, I, n, 1, scaleup_bytes_per_byte=bandwidth_factor(kind, alg, n),
                       scaleup_steps=latency_steps(kind, alg, n))
    if kind in HIERARCHICAL_KINDS and uniform and g > 1:
        sequential = algorithm == "hierarchical"
        net_alg = (None if sequential else algorithm) or choose_algorithm(kind, N, size_bytes / g, nodes=N,
                                                                          in_network=in_network)
        up_factor = bandwidth_factor(kind if kind != "reduce" else "broadcast", "ring", g)
        if kind == "all_reduce":
            up_factor = 2.0 * (g - 1) / g       # reduce-scatter in, all-gather out
        up_steps = latency_steps(kind, "ring", g)
        rails = members.reshape(I, N, g).transpose(0, 2, 1).reshape(I * g, N)
        phases = _flat_phases(kind, net_alg, rails, gpu_domain)
        for ph in phases:
            ph.bytes_per_byte = ph.bytes_per_byte / g
            ph.nvlink_bytes_per_byte /= g
        label = f"hierarchical/{net_alg}" if sequential else net_alg
        if not sequential and net_alg == "ring" and not (kind == "all_reduce" and nvls):
            # NCCL's flat ring: every node boundary carries the full ring volume over p ranks
            flat = bandwidth_factor(kind, "ring", n) / max(bandwidth_factor(kind, "ring", N), 1e-300)
            for ph in phases:
                ph.bytes_per_byte = ph.bytes_per_byte * flat
            up_steps = max(0, latency_steps(kind, "ring", n) - sum(ph.steps for ph in phases))
        elif not sequential and kind == "all_reduce" and nvls and net_alg == "ring":
            label = "nvls_tree"
        return Traffic(kind, label, n, I, g, N, scaleup_bytes_per_byte=up_factor, scaleup_steps=up_steps,
                       phases=phases, network_algorithm=net_alg, pipelined=not sequential)
    alg = algorithm or choose_algorithm(kind, n, size_bytes, nodes=N, in_network=in_network)
    return Traffic(kind, alg, n, I, g, N, phases=_flat_phases(kind, alg, members, gpu_domain),
                   network_algorithm=alg)
