"""Collective algorithms: alpha-beta cost terms (facts.md section 1) and NCCL's algorithm choice.

``size_bytes`` follows the workload byte convention (nccl-tests ``size``): the all-reduce buffer, the gathered
output of an all-gather, the input of a reduce-scatter, the whole send buffer of an all-to-all.
``bw`` is the bottleneck bandwidth per rank in bytes/s.

Algorithm choice (:func:`choose_algorithm`; docs/evaluator.md, "NCCL's algorithm choice"):

- all_reduce: what NCCL's tuning model picks (NVIDIA/nccl ``src/graph/tuning.cc``, ``ncclTopoTuneModel`` and
  ``ncclTopoGetAlgoTime``): each algorithm enabled on the hardware gets the model time
  ``latency + size / algbw`` and the fastest runs (:func:`nccl_model_time_s`). Enabled: ``ring`` and ``tree``
  always; ``nvls`` on one node of NVLink-SHARP GPUs (catalog column ``nvls``) with >= 2 GPUs of the group in it;
  ``nvls_tree`` across nodes on such GPUs; with in-network reduction offered (transport and
  ``design.in_network_reduction``) and more than one node, NCCL's in-network algorithm runs at every size: NVLS
  with SHARP (``nvls``) on NVLS GPUs, CollNet (``in_network``) otherwise (their model latency, one network round
  trip, and bandwidth beat the others');
- all_gather, reduce_scatter: ring; broadcast, reduce: pipelined ring (chain);
- all_to_all(v), send_recv: direct (grouped point-to-point: every peer's transfer in flight at once).
- halving-doubling is available for power-of-two groups and used by callers that ask for it explicitly.

The tuning model (Simple protocol, the one large messages use; the LL/LL128 protocols of small messages are what
calibration's size regimes absorb) with ``p`` ranks on ``N`` nodes, ``g = p / N`` per node, latencies in us:

=========  ===============================================  ======================================================
algorithm  latency                                          algorithm bandwidth (B: graph bandwidth, see below)
=========  ===============================================  ======================================================
ring       8.4 + (2(p-1) - 2N) x 3.4 + 2N x 14, x 1.4 when  B x p / (2(p-1))
           N > 1 (NCCL's ring "plateau"); N = 1: 8.4 +
           2(p-1) x 3.4
tree       2 ((g-1) x 28 + log2(N) x 28)                    0.92 B / 2 x NCCL's tree correction (0.5-0.9 between
                                                            8 KiB and 256 MiB)
nvls       23 (one node)                                    B_nvlink x 5/6
nvls_tree  23 + 2 log2(N) x 14                              min(B_nvlink, B_nic (N <= 2) or B_nic / 2) x 5/6
=========  ===============================================  ======================================================

``B_nvlink`` is a GPU's NVLink bandwidth and ``B_nic`` the NIC bandwidth of the group's ``g`` GPUs on one node
(line rates). NCCL's graph bandwidth ``B`` (channels x per-channel bandwidth) is ``B_nvlink`` on one node; across
nodes a ring or tree channel crosses a NIC, so the topology search caps it at ``min(B_nvlink, B_nic)``.
``log2`` is NCCL's integer log2 (``log2i``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabric.errors import WorkloadError

__all__ = [
    "ALGORITHMS", "NCCL_ALGOS", "ALL_TO_ALL_STEPS", "CollectiveHardware", "bus_factor", "bandwidth_factor",
    "latency_steps", "choose_algorithm", "available_all_reduce_algorithms", "algorithm_available",
    "resolve_algorithm", "nccl_model_time_s",
    "collective_time", "lower_bound_time",
]

ALGORITHMS = ("ring", "tree", "halving_doubling", "direct", "in_network", "chain", "nvls", "nvls_tree")
#: ``NCCL_ALGO`` names (``design.nccl_algo``) -> the evaluator's algorithm names (CollNet is ``in_network``).
NCCL_ALGOS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls_tree", "collnet": "in_network"}
#: Network latency steps of a direct all-to-all: NCCL posts every peer's send and receive at once (grouped
#: point-to-point), so the transfers share one round trip (the receiver's clear-to-send, then the data) instead of
#: (p-1) steps in sequence (facts.md section 7); the per-peer issue cost is ``TransportProfile.peer_issue_s``.
ALL_TO_ALL_STEPS = 2

# NCCL's tuning model constants (NVIDIA/nccl src/graph/tuning.cc, Simple protocol), microseconds
_RING_BASE_US, _RING_INTRA_US, _RING_INTER_US, _RING_PLATEAU = 8.4, 3.4, 14.0, 1.4
_TREE_INTRA_US, _TREE_INTER_US, _TREE_BW_SHARE = 28.0, 28.0, 0.92
_NVLS_INTRA_US, _NVLS_INTER_US, _NVLSTREE_INTER_US, _NVLS_RATIO = 23.0, 18.0, 14.0, 5.0 / 6.0
#: ``treeCorrectionFactor`` for Simple, by log2(size / 64 B) from 0 (64 B) to 22 (256 MiB); 1 beyond
_TREE_CORRECTION = (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9)


@dataclass(frozen=True)
class CollectiveHardware:
    """What NCCL's choice sees of a group: its GPUs per node, whether they have NVLink SHARP, line rates.

    ``nvlink_bytes_per_s``: one GPU's NVLink bandwidth (one direction); ``nic_bytes_per_s``: one GPU's NIC
    bandwidth (its share of the node's NICs), so the group's GPUs on one node have ``gpus_per_node`` times it;
    ``in_network``: in-network reduction offered (transport and design).
    """

    gpus_per_node: int
    nvls: bool
    nvlink_bytes_per_s: float
    nic_bytes_per_s: float
    in_network: bool = False


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
        if algorithm == "nvls":
            return 1.0 + 1.0 / p             # through the NVSwitch: S out and S/p back, S/p out and S back
        return 2.0 * (p - 1) / p             # ring, halving-doubling
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "all_to_allv"):
        return (p - 1) / p
    return 1.0                               # broadcast, reduce (pipelined), send_recv


def latency_steps(kind: str, algorithm: str, p: int) -> int:
    """Sequential latency steps of a flat algorithm over ``p`` ranks (hops on its critical path).

    Pipelined algorithms pay each hop of the path once (the pipeline fill), as NCCL's tuning model does:
    ring all-reduce 2(p-1), tree 2 log2(p), NVLS 2 (into the switch and back), direct all-to-all
    :data:`ALL_TO_ALL_STEPS` (all peers at once).
    """
    if p <= 1:
        return 0
    lg = math.ceil(math.log2(p))
    if kind == "all_reduce":
        return {"ring": 2 * (p - 1), "tree": 2 * lg, "halving_doubling": 2 * lg, "in_network": 2, "nvls": 2,
                "nvls_tree": 2 * lg}.get(algorithm, 2 * (p - 1))
    if kind in ("all_gather", "reduce_scatter"):
        return lg if algorithm == "halving_doubling" else p - 1
    if kind in ("all_to_all", "all_to_allv"):
        return ALL_TO_ALL_STEPS
    if kind in ("broadcast", "reduce"):
        return lg if algorithm == "tree" else p - 1
    if kind == "barrier":
        return 2 * lg
    return 1                                 # send_recv


def _log2i(n: int) -> int:
    """NCCL's integer log2 (floor; 0 for n <= 1)."""
    return max(int(n), 1).bit_length() - 1


def available_all_reduce_algorithms(nodes: int, hw: CollectiveHardware) -> tuple[str, ...]:
    """The all-reduce algorithms NCCL enables for a group on ``nodes`` nodes (module doc)."""
    g = max(1, int(hw.gpus_per_node))
    nvls = hw.nvls and g >= 2
    if nodes <= 1:
        return ("ring", "tree", "nvls") if nvls else ("ring", "tree")
    if hw.in_network:
        return ("nvls",) if nvls else ("in_network",)
    return ("ring", "tree", "nvls_tree") if nvls else ("ring", "tree")


def nccl_model_time_s(algorithm: str, size_bytes: float, nodes: int, hw: CollectiveHardware) -> float:
    """NCCL's tuning-model time of an all-reduce (seconds): latency + size / algorithm bandwidth (module doc)."""
    n_nodes = max(1, int(nodes))
    g = max(1, int(hw.gpus_per_node))
    p = n_nodes * g
    nic = hw.nic_bytes_per_s * g
    nv = hw.nvlink_bytes_per_s if hw.nvlink_bytes_per_s > 0 and g > 1 else nic
    graph = nv if n_nodes == 1 else min(nv, nic)
    if graph <= 0:
        raise WorkloadError("NCCL's algorithm model needs positive NVLink or NIC bandwidth")
    lg = _log2i(n_nodes)
    if algorithm == "ring":
        if n_nodes == 1:
            lat = _RING_BASE_US + 2 * (p - 1) * _RING_INTRA_US
        else:
            inter = 2 * n_nodes
            lat = (_RING_BASE_US + max(2 * (p - 1) - inter, 0) * _RING_INTRA_US + inter * _RING_INTER_US) \
                * _RING_PLATEAU
        bw = graph * p / (2.0 * (p - 1)) if p > 1 else graph
    elif algorithm == "tree":
        lat = 2 * ((g - 1) * _TREE_INTRA_US + lg * _TREE_INTER_US)
        idx = _log2i(int(size_bytes) >> 6)
        corr = _TREE_CORRECTION[idx] if idx < len(_TREE_CORRECTION) else 1.0
        bw = _TREE_BW_SHARE * graph * 0.5 * corr
    elif algorithm == "nvls":
        lat = _NVLS_INTRA_US + (_NVLS_INTER_US if n_nodes > 1 else 0.0)
        bw = graph * _NVLS_RATIO
    elif algorithm == "nvls_tree":
        lat = _NVLS_INTRA_US + 2 * lg * _NVLSTREE_INTER_US
        bw = min(nv, nic if n_nodes <= 2 else nic / 2.0) * _NVLS_RATIO
    else:
        raise WorkloadError(f"NCCL's tuning model has no all-reduce algorithm {algorithm!r}")
    return lat * 1e-6 + float(size_bytes) / bw


def algorithm_available(algorithm: str, nodes: int, hw: CollectiveHardware) -> bool:
    """Whether NCCL can run all-reduce ``algorithm`` (forced or chosen) for this group."""
    g = max(1, int(hw.gpus_per_node))
    if algorithm == "nvls":
        return hw.nvls and g >= 2 and (nodes <= 1 or hw.in_network)
    if algorithm == "nvls_tree":
        return hw.nvls and g >= 2 and nodes > 1
    if algorithm == "in_network":
        return hw.in_network and nodes > 1
    return True


def resolve_algorithm(kind: str, requested: str | None, p: int, size_bytes: float, *, nodes: int,
                      hardware: CollectiveHardware | None) -> tuple[str, bool]:
    """``(algorithm that runs, fell_back)``: ``requested`` when NCCL can run it, NCCL's choice when nothing is
    requested; an all-reduce algorithm the group cannot run (NVLS without NVLink SHARP or on one GPU per node,
    NVLS tree on one node, CollNet without in-network reduction) falls back to the ring, as NCCL does when
    ``NCCL_ALGO`` leaves no usable algorithm."""
    if requested is None:
        return choose_algorithm(kind, p, size_bytes, nodes=nodes, hardware=hardware), False
    if kind == "all_reduce" and requested in ("nvls", "nvls_tree", "in_network") and (
            hardware is None or not algorithm_available(requested, nodes, hardware)):
        return "ring", True
    return requested, False


def choose_algorithm(kind: str, p: int, size_bytes: float, *, nodes: int = 1,
                     hardware: CollectiveHardware | None = None) -> str:
    """The algorithm NCCL would pick (see the module docstring for the rule).

    An all-reduce across ranks needs ``hardware`` (the choice depends on it); the other kinds do not.
    """
    if kind == "all_reduce":
        if p <= 1:
            return "ring"
        if hardware is None:
            raise WorkloadError("choose_algorithm needs the group's hardware to choose an all-reduce algorithm")
        algs = available_all_reduce_algorithms(nodes, hardware)
        if len(algs) == 1:
            return algs[0]
        return min(algs, key=lambda a: nccl_model_time_s(a, size_bytes, nodes, hardware))
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


def lower_bound_time(kind: str, p: int, size_bytes: float, bw_bytes_per_s: float, *, in_network: bool = False,
                     nvls: bool = False) -> float:
    """Bandwidth-optimal bound (no latency): the smallest bandwidth term any algorithm can reach.

    ``in_network``: the network's switches reduce; ``nvls``: the ranks share an NVSwitch that reduces (NVLink
    SHARP). Either way each rank need only send its S once and receive the result once (NCCL's NVLS moves
    (1 + 1/p) S per rank, SHARP S).
    """
    if kind == "all_reduce" and (in_network or nvls) and p > 1:
        return size_bytes / bw_bytes_per_s
    return bandwidth_factor(kind, "ring", p) * size_bytes / bw_bytes_per_s
