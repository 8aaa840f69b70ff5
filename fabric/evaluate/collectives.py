"""Collective algorithms: alpha-beta cost terms (facts.md section 1) and an NCCL-like algorithm choice.

``size_bytes`` follows the workload byte convention (nccl-tests ``size``): the all-reduce buffer, the gathered
output of an all-gather, the input of a reduce-scatter, the whole send buffer of an all-to-all.
``bw`` is the bottleneck bandwidth per rank in bytes/s.

Algorithm choice (documented rule, after NCCL's tuning model in src/graph/tuning.cc):

- all_reduce: in-network reduction when the transport offers it and the group spans nodes; the (double binary)
  tree when the message is small for the scale (``size_bytes < TREE_BYTES_PER_NODE x nodes``, more than 2 nodes),
  since its 2 log2(p) latency steps beat the ring's 2(p-1); the ring otherwise;
- all_gather, reduce_scatter: ring; broadcast, reduce: pipelined ring (chain);
- all_to_all(v): direct (every pair exchanges its share); send_recv: direct.
- halving-doubling is available for power-of-two groups and used by callers that ask for it explicitly.
"""

from __future__ import annotations

import math

from fabric.errors import WorkloadError

__all__ = [
    "ALGORITHMS", "TREE_BYTES_PER_NODE", "bus_factor", "bandwidth_factor", "latency_steps",
    "choose_algorithm", "collective_time", "lower_bound_time",
]

ALGORITHMS = ("ring", "tree", "halving_doubling", "direct", "in_network", "chain")
#: Below this many bytes per participating node an all-reduce uses the tree (NCCL switches ring->tree for small
#: messages at scale; the crossover grows with the node count).
TREE_BYTES_PER_NODE = 64 * 1024


def bus_factor(kind: str, p: int) -> float:
    """nccl-tests bus-bandwidth factor F (busbw = algbw x F)."""
    if p <= 1:
        return 0.0
    if kind == "all_reduce":
        return 2.0 * (p - 1) / p
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "all_to_allv"):
        return (p - 1) / p
    if kind in ("broadcast", "reduce", "send_recv"):
        return 1.0
    if kind == "barrier":
        return 0.0
    raise WorkloadError(f"unknown collective kind {kind!r}")


def bandwidth_factor(kind: str, algorithm: str, p: int) -> float:
    """Bytes each rank moves through its bottleneck link, as a multiple of ``size_bytes``."""
    if p <= 1 or kind == "barrier":
        return 0.0
    if kind == "all_reduce":
        if algorithm == "in_network":
            return 1.0                       # each rank sends and receives S once
        if algorithm == "tree":
            return 2.0                       # NCCL's model: ~ S / (0.5 busbw)
        return 2.0 * (p - 1) / p             # ring, halving-doubling
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "all_to_allv"):
        return (p - 1) / p
    return 1.0                               # broadcast, reduce (pipelined), send_recv


def latency_steps(kind: str, algorithm: str, p: int) -> int:
    """Number of sequential alpha (latency) steps."""
    if p <= 1:
        return 0
    lg = math.ceil(math.log2(p))
    if kind == "all_reduce":
        return {"ring": 2 * (p - 1), "tree": 2 * lg, "halving_doubling": 2 * lg, "in_network": 2}.get(algorithm,
                                                                                                      2 * (p - 1))
    if kind in ("all_gather", "reduce_scatter"):
        return lg if algorithm == "halving_doubling" else p - 1
    if kind in ("all_to_all", "all_to_allv"):
        return p - 1
    if kind in ("broadcast", "reduce"):
        return lg if algorithm == "tree" else p - 1
    if kind == "barrier":
        return 2 * lg
    return 1                                 # send_recv


def choose_algorithm(kind: str, p: int, size_bytes: float, *, nodes: int = 1, in_network: bool = False) -> str:
    """The algorithm NCCL would pick (see the module docstring for the rule)."""
    if kind == "all_reduce":
        if in_network and nodes > 1:
            return "in_network"
        if nodes > 2 and size_bytes < TREE_BYTES_PER_NODE * nodes:
            return "tree"
        return "ring"
    if kind in ("all_gather", "reduce_scatter"):
        return "ring"
    if kind in ("broadcast", "reduce"):
        return "chain"
    return "direct"


def collective_time(kind: str, algorithm: str, p: int, size_bytes: float, bw_bytes_per_s: float,
                    alpha_s: float) -> float:
    """Alpha-beta time of one collective: latency steps x alpha + bandwidth factor x size / bandwidth."""
    if bw_bytes_per_s <= 0:
        raise WorkloadError("bandwidth must be positive")
    return latency_steps(kind, algorithm, p) * alpha_s + bandwidth_factor(kind, algorithm, p) * size_bytes / bw_bytes_per_s


def lower_bound_time(kind: str, p: int, size_bytes: float, bw_bytes_per_s: float, *, in_network: bool = False) -> float:
    """Bandwidth-optimal bound (no latency): the smallest bandwidth term any algorithm can reach."""
    if kind == "all_reduce" and in_network and p > 1:
        return size_bytes / bw_bytes_per_s
    return bandwidth_factor(kind, "ring", p) * size_bytes / bw_bytes_per_s
