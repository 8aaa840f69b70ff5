"""Hash polarization between ECMP tiers (issue 28): a flow's hash at a spine correlated with its hash at the leaf.

A switch picks an ECMP member from a hash of the flow's header fields, ``h mod u`` over its ``u`` members. With
the same hash function and seed at every tier, a flow that left its leaf on uplink ``i = h mod u1`` reaches a spine
that picks uplink ``j = h mod u2``, so ``j = i (mod gcd(u1, u2))``: the flows a spine receives from one leaf uplink
can only leave on ``u2 / gcd(u1, u2)`` of its ``u2`` uplinks (one of 64 when u1 = u2 = 64), and the core that
receives them picks its link down into the destination pod the same way. Deployed fabrics give each switch its own
seed or hash bits, which breaks most of that correlation; how much is left is not published.

The model: each flow (queue pair) is *polarized* with probability ``rho`` (the transport profile's
``hash_correlation``): one uniform hash ``h`` picks its member at every tier, leaf, spine and core alike; otherwise
each tier hashes it independently (uniformly over the members, today's model). ``rho = 0`` is today's evaluator;
``rho = 1`` is identical hash functions and seeds everywhere. A flow-level mixture is an assumption: it is the
one-parameter family that runs from independent to identical hashing with the balls still independent, so the
busiest link has an exact distribution (:func:`fabric.evaluate.ballsbins.weighted_max_load_cdf`).

What it changes: the 3-tier link groups whose ECMP choice follows another switch's, i.e. a pod's core-facing
uplinks (chosen by the spine after the leaf) and core-facing downlinks (chosen by the core after the spine). A
polarized flow lands on those links with the probabilities :func:`polarized_shares` enumerates over the hash values
on the healthy cabling of one pod (pods are cabled alike); an independent flow lands uniformly. The first hashing
tier (leaf uplinks) is uniform either way, and 2-tier paths (a spine choosing among its parallel links to the
destination leaf) are left as they are. Only ``routing: ecmp`` hashes; adaptive routing, spraying and computed
paths are not affected.
"""

from __future__ import annotations

import math

import numpy as np

from fabric.topology.fabric import LINK_KINDS

__all__ = ["POLARIZED_KINDS", "polarized_shares", "mixture_groups", "check_hash_correlation"]

#: Link-group kinds whose ECMP choice follows a lower tier's (the spine's after the leaf's, the core's after the
#: spine's).
POLARIZED_KINDS = ("pod core uplinks", "pod core downlinks")

_LS = LINK_KINDS.index("leaf-spine")
_SC = LINK_KINDS.index("spine-core")

#: Enumerate every hash value below the least common multiple of the group sizes while it is at most this; beyond,
#: this many hash values drawn at random (seed 0) estimate the shares.
ENUMERATE_MAX = 1 << 21


def check_hash_correlation(value) -> float:
    """``value`` as a float in [0, 1]; a FabricError (DesignError) naming ``hash_correlation`` otherwise."""
    from fabric.errors import DesignError

    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DesignError(f"transport parameter hash_correlation must be a number between 0 and 1 (the share of "
                          f"flows whose spine and core hash follows the leaf's); got {value!r}")
    v = float(value)
    if not (0.0 <= v <= 1.0):            # also refuses NaN
        raise DesignError(f"transport parameter hash_correlation must be between 0 and 1 (0: independent hashes "
                          f"per switch, 1: identical hash and seed at every tier); got {value!r}")
    return v


def _members(a: np.ndarray, b: np.ndarray, ids: np.ndarray, owner: int) -> np.ndarray:
    """Link ids of ``ids`` whose end ``a`` is ``owner``, in ECMP member order (far end's node id, then link id)."""
    m = ids[a[ids] == owner]
    return m[np.lexsort((m, b[m]))]


def polarized_shares(fabric) -> dict:
    """Per kind of :data:`POLARIZED_KINDS`: the probabilities that a polarized flow uses each of one pod's
    core-facing links (an array over the pod's links, summing to 1), on the healthy cabling. Empty for fabrics
    without a core tier.

    One hash value ``h`` per flow: leaf uplink ``h mod u1`` (the leaf's uplinks ordered by spine), then the spine's
    uplink ``h mod u2`` (ordered by core), then the core's link ``h mod m`` among its ``m`` links into the
    destination pod (ordered by spine). Every ``h`` below the least common multiple of the group sizes is counted.
    """
    a, b, kind = fabric.link_a, fabric.link_b, fabric.link_kind
    sc = np.flatnonzero(kind == _SC)
    if sc.size == 0:
        return {}
    ls = np.flatnonzero(kind == _LS)
    leaf = int(a[ls].min())                               # the first leaf, in the first pod
    up1 = _members(a, b, ls, leaf)                        # its uplinks, in member order
    spine_of = b[up1]
    spines = np.unique(spine_of)
    up2 = {int(s): _members(a, b, sc, int(s)) for s in spines}
    pod_links = np.concatenate([up2[int(s)] for s in spines])
    cores = np.unique(b[pod_links])
    # a core's members into a pod: its links to that pod's spines (the same pod stands for every destination pod,
    # cabled alike), ordered by spine
    into = {}
    for c in cores.tolist():
        m = sc[(b[sc] == c) & np.isin(a[sc], spines)]
        into[c] = m[np.lexsort((m, a[m]))]
    sizes = [up1.size] + [v.size for v in up2.values()] + [v.size for v in into.values()]
    H = 1
    for s in sizes:
        H = H * s // math.gcd(H, s)
    if H <= ENUMERATE_MAX:
        h = np.arange(H, dtype=np.int64)
    else:
        h = np.random.default_rng(0).integers(0, np.iinfo(np.int64).max, ENUMERATE_MAX, dtype=np.int64)
    pos = {int(x): i for i, x in enumerate(pod_links.tolist())}
    # flat tables: spine s's uplink r is up_tab[up_off[s] + r]; core c's member x is dn_tab[dn_off[c] + x]
    sp_idx = np.searchsorted(spines, spine_of)
    up_n = np.array([up2[int(s)].size for s in spines], np.int64)
    up_off = np.concatenate([[0], np.cumsum(up_n)[:-1]])
    up_tab = np.concatenate([up2[int(s)] for s in spines])
    core_of_up = np.searchsorted(cores, b[up_tab])
    dn_n = np.array([into[c].size for c in cores.tolist()], np.int64)
    dn_off = np.concatenate([[0], np.cumsum(dn_n)[:-1]])
    dn_tab = np.concatenate([into[c] for c in cores.tolist()])
    s = sp_idx[h % up1.size]
    u = up_off[s] + h % up_n[s]                            # index into up_tab
    c = core_of_up[u]
    d = dn_off[c] + h % np.maximum(dn_n[c], 1)             # index into dn_tab
    to_pos = np.vectorize(pos.__getitem__, otypes=[np.int64])
    n = pod_links.size
    up_share = np.bincount(to_pos(up_tab)[u], minlength=n) / h.size
    dn_share = np.bincount(to_pos(dn_tab)[d], minlength=n) / h.size
    return {"pod core uplinks": up_share, "pod core downlinks": dn_share}


def mixture_groups(shares: np.ndarray, n: int, rho: float) -> tuple:
    """``((count, p), ...)``: the probability that one flow lands on each of ``n`` links when it is polarized with
    probability ``rho`` (then on link ``x`` with ``shares[x]``) and else uniform, grouped by equal probability.

    ``n`` may differ from ``shares.size`` (failed core-facing links): the polarized flows then keep the healthy
    fabric's profile, scaled to ``n`` links (each share's count scaled by ``n / shares.size``)."""
    vals, counts = np.unique(np.round(shares, 12), return_counts=True)
    if n != shares.size:
        counts = np.rint(counts * n / shares.size).astype(np.int64)
        big = int(np.argmax(counts))
        counts[big] += n - int(counts.sum())
        keep = counts > 0
        vals, counts = vals[keep], counts[keep]
        vals = vals / float((vals * counts).sum())
    p = rho * vals + (1.0 - rho) / n
    return tuple((int(c), float(round(x, 15))) for c, x in zip(counts.tolist(), p.tolist()))
