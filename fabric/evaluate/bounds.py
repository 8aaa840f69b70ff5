"""The fabric's part of the bandwidth-optimal lower bound: what must cross each leaf's and each pod's uplinks.

facts.md section 1 bounds an op by its NIC and NVLink terms. On an oversubscribed fabric the uplinks bind too: a
group spread over leaves must move part of its traffic through them, whatever the algorithm. This module finds the
cuts and the bytes that must cross them.

**Islands.** The GPUs, NICs and leaves that reach each other without a leaf uplink form an island: a leaf with its
nodes on a top-of-rack Clos; all the rail leaves of a scalable unit on a rail-optimized fabric (the unit's nodes join
its rails over NVLink); the leaves of an NVLink domain that spans several of them. Everything leaving an island
crosses its leaves' uplinks, whose line rate per direction is ``uplinks x uplink speed`` (``Design.uplink_gbps``).
In a 3-tier fabric a pod (with the islands it holds) is an island one level up, left through its spine-core links.
The spine and core layers are sized to carry every link below them, so these cuts are the fabric's bisection.

**Bytes that must cross.** Inside an island data moves freely, so an island acts as one party holding its ``k``
members' inputs. For a group of ``n`` members in ``m`` islands and an op of ``S`` bytes (workload convention), any
algorithm moves at least (per direction unless said otherwise):

=========================  =========================================  ==============================================
kind                       through one island's uplinks               through all the group's islands together
=========================  =========================================  ==============================================
all-reduce                 ``S`` out and ``S`` in                     ``2 (m - 1) S`` (reduce over m parties, then
                                                                      spread: m - 1 transfers each, Patarasuk & Yuan)
all-gather                 ``k/n S`` out, ``(n - k)/n S`` in          ``(m - 1) S`` (every shard reaches m - 1 others)
reduce-scatter             ``(n - k)/n S`` out, ``k/n S`` in          ``(m - 1) S``
broadcast / reduce         ``S`` out of the root's island, in to the  ``(m - 1) S``
                           others (reversed for reduce)
all-to-all                 ``k (n - k)/n S`` each way (exact)         the sum of those
send/recv (chain)          ``S`` per chain edge leaving / entering    ``S`` per crossing edge
=========================  =========================================  ==============================================

The bound of a cut level is then ``max(max over islands of max(out, in) / capacity, total / capacity of the islands
the spanning groups touch)``: the busiest island, and the traffic spread over every island's uplinks at best (any
split of the total over the islands leaves one at least at the average; instances share the islands they touch).
In-network reduction (SHARP-like) aggregates inside the switches: each island still sends S once out and gets it once
in, and its aggregation trees' link loads are in the op time (:mod:`fabric.evaluate.innetwork`); its bound keeps the
NIC term, so its fabric term is left out; instances that find no tree add their fallback's bound, charged to the
resource they lacked (``switch tree slots`` when the switches' tree limit binds; :mod:`fabric.evaluate.innetwork`).
Dragonfly fabrics have no leaf uplinks: only the NIC and NVLink terms apply.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.lru import BytesLRU
from fabric.topology.fabric import LINK_KINDS, kind_index

__all__ = ["RESOURCES", "Cuts", "fabric_cuts", "cut_bound_per_byte"]

#: The resources a lower bound can be bound by, in the order ties are broken.
RESOURCES = ("nic", "nvlink", "leaf uplinks", "pod uplinks", "switch tree slots")

_LS = LINK_KINDS.index("leaf-spine")
_SC = LINK_KINDS.index("spine-core")


@dataclass(frozen=True)
class Cuts:
    """One level of cuts: the island of every GPU and each island's uplink line rate (bytes/s per direction)."""

    resource: str                 # "leaf uplinks" or "pod uplinks"
    island_of_gpu: np.ndarray     # island id per GPU, 0 .. islands - 1
    capacity_bytes_per_s: np.ndarray
    monotone: bool                # island ids never decrease with the GPU id (runs of sorted members are islands)


def _components(dom: np.ndarray, node: np.ndarray, n_nodes: int, n_dom: int,
                starts: np.ndarray | None = None) -> np.ndarray:
    """Connected components of the bipartite graph domain -- node (edges ``dom[i] -- node[i]``): the smallest node
    id of each node's component (label propagation; converges in a step or two for real fabrics). ``starts``: where
    each domain's edges begin when they come domain by domain, every domain in order (each domain's minimum is
    then one segmented reduction instead of a scatter)."""
    label = np.arange(n_nodes)
    big = np.iinfo(np.int64).max
    while True:
        if starts is not None:
            of_dom = np.minimum.reduceat(np.take(label, node), starts)
        else:
            of_dom = np.full(n_dom, big)
            np.minimum.at(of_dom, dom, label[node])
        new = label.copy()
        np.minimum.at(new, node, of_dom[dom])
        new = new[new]                                # jump along labels: fewer rounds on long chains
        if np.array_equal(new, label):
            return label
        label = new


def _cuts(resource: str, label_of_gpu: np.ndarray, cap_of_label: np.ndarray) -> Cuts | None:
    present = np.zeros(cap_of_label.size, bool)
    present[label_of_gpu] = True
    cap = cap_of_label[present]
    if cap.size < 2 or not (cap > 0).all():
        return None                                   # one island (nothing to cross) or a partitioned fabric
    island = (np.cumsum(present) - 1)[label_of_gpu]   # labels in order, renumbered 0 .. islands - 1
    monotone = bool((np.diff(island) >= 0).all())
    return Cuts(resource, island, cap, monotone)


#: Cuts kept by cabling (:func:`fabric_cuts`), up to this many bytes: a search meets a cabling again after its
#: fabric left the build cache, and finding the cuts is most of a healthy network model's cost.
CUTS_CACHE_BYTES = 64 * 2 ** 20
_CUTS_CACHE = BytesLRU(CUTS_CACHE_BYTES,
                       lambda cuts: sum(c.island_of_gpu.nbytes + c.capacity_bytes_per_s.nbytes for c in cuts))


def fabric_cuts(fabric, pod_of_switch: np.ndarray | None = None) -> tuple[Cuts, ...]:
    """The leaf-level (and for 3-tier fabrics the pod-level) cuts of a healthy ``fabric``, kept by its cabling
    (``fabric.cache_key``: equal keys, equal arrays) and pods (:data:`CUTS_CACHE_BYTES`).

    ``pod_of_switch``: pod id per switch index (``NetworkModel.pod_of_switch``; -1 for none).
    """
    if not fabric.cache_key:
        return _fabric_cuts(fabric, pod_of_switch)
    key = (fabric.cache_key, None if pod_of_switch is None else pod_of_switch.tobytes())
    out = _CUTS_CACHE.get(key)
    if out is None:
        out = _fabric_cuts(fabric, pod_of_switch)
        _CUTS_CACHE.put(key, out)
    return out


def _fabric_cuts(fabric, pod_of_switch: np.ndarray | None) -> tuple[Cuts, ...]:
    if fabric.family == "dragonfly" or fabric.n_switches == 0:
        return ()
    kind = fabric.link_kind
    ls = kind_index(kind, _LS)                  # the builder's per-kind link ids: no pass over every link
    if ls.size == 0:
        return ()
    sb, ns = fabric.switch_base, fabric.n_switches
    G = fabric.n_gpus
    nic_rows = fabric.gpu_nics - fabric.nic_base
    leaf = (np.take(fabric.nic_ports, nic_rows, axis=0).reshape(G, -1) - sb)   # switch index of every GPU port
    dom = np.repeat(fabric.gpu_domain, leaf.shape[1])
    n_dom = int(fabric.gpu_domain.max()) + 1
    starts = None
    if G % n_dom == 0 and np.array_equal(fabric.gpu_domain, np.arange(G) // (G // n_dom)):
        starts = np.arange(n_dom) * (G // n_dom * leaf.shape[1])     # the builder's domains: GPUs in order
    label = _components(dom, leaf.ravel(), ns, n_dom, starts)
    up_bytes = np.bincount(np.take(fabric.link_a, ls) - sb, weights=np.take(fabric.link_capacity_bps, ls) / 8.0,
                           minlength=ns)
    out = []
    leaf_label = label[leaf[:, 0]]
    c = _cuts("leaf uplinks", leaf_label, np.bincount(label, weights=up_bytes, minlength=ns))
    if c is not None:
        out.append(c)
    sc = kind_index(kind, _SC)
    if sc.size and pod_of_switch is not None and (pod_of_switch >= 0).any():
        pods = int(pod_of_switch.max()) + 1
        pod = pod_of_switch[leaf.ravel()]
        plabel = _components(dom, pod, pods, n_dom, starts)
        core_bytes = np.bincount(pod_of_switch[np.take(fabric.link_a, sc) - sb],
                                 weights=np.take(fabric.link_capacity_bps, sc) / 8.0, minlength=pods)
        c = _cuts("pod uplinks", plabel[pod_of_switch[leaf[:, 0]]], np.bincount(plabel, weights=core_bytes,
                                                                                    minlength=pods))
        if c is not None:
            out.append(c)
    return tuple(out)


def cut_bound_per_byte(kind: str, members: np.ndarray, cuts: Cuts) -> float:
    """Seconds per op byte the ``cuts`` level needs at line rate for ``kind`` on every instance (rows of
    ``members``, GPU ids sorted within a row; see the module docstring)."""
    isl = cuts.island_of_gpu[members]
    cap = cuts.capacity_bytes_per_s
    K = cap.size
    I, n = isl.shape
    if n <= 1 or kind == "barrier":
        return 0.0
    if kind == "send_recv":
        src, dst = isl[:, :-1], isl[:, 1:]
        cross = src != dst
        if not cross.any():
            return 0.0
        out = np.bincount(src[cross], minlength=K)
        inn = np.bincount(dst[cross], minlength=K)
        touched = (out + inn) > 0
        return max(float((np.maximum(out, inn) / cap).max()), float(cross.sum()) / float(cap[touched].sum()))
    root = isl[:, 0]
    if not cuts.monotone:
        isl = np.sort(isl, axis=1)
    new = np.ones((I, n), bool)
    new[:, 1:] = isl[:, 1:] != isl[:, :-1]
    m = new.sum(axis=1)
    span = m > 1
    if not span.any():
        return 0.0
    if not span.all():
        isl, new, m, root = isl[span], new[span], m[span], root[span]
    flat = isl.ravel()
    starts = np.flatnonzero(new.ravel())
    k = np.diff(np.append(starts, flat.size)).astype(float)    # members of each (instance, island) run
    run_island = flat[starts]
    if kind == "all_reduce":
        out = inn = np.ones(k.size)
        total = float(np.sum(2.0 * (m - 1)))
    elif kind in ("all_gather", "reduce_scatter"):
        out, inn = k / n, (n - k) / n
        if kind == "reduce_scatter":
            out, inn = inn, out
        total = float(np.sum(m - 1))
    elif kind in ("broadcast", "reduce"):
        is_root = (run_island == np.repeat(root, m)).astype(float)
        out, inn = is_root, 1.0 - is_root
        if kind == "reduce":
            out, inn = inn, out
        total = float(np.sum(m - 1))
    elif kind in ("all_to_all", "all_to_allv"):
        out = inn = k * (n - k) / n
        total = float(out.sum())
    else:
        return 0.0
    per_island = np.maximum(np.bincount(run_island, weights=out, minlength=K),
                            np.bincount(run_island, weights=inn, minlength=K))
    touched = np.bincount(run_island, minlength=K) > 0
    return max(float((per_island / cap).max()), total / float(cap[touched].sum()))
