"""networkx views of a fabric, built on demand (for drawing and for structural checks)."""

from __future__ import annotations

import networkx as nx
import numpy as np

from fabric.errors import DesignError
from fabric.topology.fabric import LINK_KINDS, NODE_KINDS, Fabric

__all__ = ["to_networkx", "MAX_GRAPH_NODES"]

#: Building a networkx graph costs ~microseconds per edge in Python; beyond this many nodes use the arrays.
MAX_GRAPH_NODES = 300_000


def to_networkx(fabric: Fabric, *, include_scale_up: bool = True) -> nx.Graph:
    """An undirected graph: one node per GPU/NIC/switch/NVSwitch (attributes ``kind``, ``tier``, ``plane``,
    ``label``) and one edge per connected pair, with ``links`` (parallel physical links), ``capacity_bps``
    (their sum, per direction) and ``kind``.
    """
    if fabric.n_nodes > MAX_GRAPH_NODES:
        raise DesignError(f"the fabric has {fabric.n_nodes:,} nodes; networkx views are limited to "
                          f"{MAX_GRAPH_NODES:,} (use the Fabric arrays directly)")
    g = nx.Graph()
    kinds = fabric.node_kind
    tier_names = fabric.tier_names
    for n in range(fabric.n_nodes):
        k = int(kinds[n])
        if not include_scale_up and NODE_KINDS[k] == "nvswitch":
            continue
        t = int(fabric.node_tier[n])
        g.add_node(n, kind=NODE_KINDS[k], tier=tier_names[t] if t >= 0 else NODE_KINDS[k],
                   plane=int(fabric.node_plane[n]))
    keep = np.ones(fabric.n_links, bool)
    if not include_scale_up:
        keep &= fabric.link_kind != LINK_KINDS.index("nvlink")
    a, b = fabric.link_a[keep], fabric.link_b[keep]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pairs, inverse, counts = np.unique(np.stack([lo, hi], 1), axis=0, return_inverse=True, return_counts=True)
    cap = np.bincount(inverse.ravel(), weights=fabric.link_capacity_bps[keep], minlength=pairs.shape[0])
    first = np.zeros(pairs.shape[0], np.int64)
    first[inverse.ravel()[::-1]] = np.arange(inverse.size)[::-1]
    kind = fabric.link_kind[keep][first]
    for (u, v), c, bw, k in zip(pairs.tolist(), counts.tolist(), cap.tolist(), kind.tolist()):
        g.add_edge(u, v, links=c, capacity_bps=bw, kind=LINK_KINDS[k])
    return g
