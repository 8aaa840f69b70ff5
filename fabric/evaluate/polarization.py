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

from fabric.arrays import unique
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
    up1 = ls[a[ls] == leaf]
    up1 = up1[np.lexsort((up1, b[up1]))]                  # its uplinks in member order: by spine, then link id
    spines = unique(b[up1])
    # the pod's core-facing links by (spine, core, link id): spine s's uplinks in member order are a contiguous run
    pod = sc[np.isin(a[sc], spines)]
    pod = pod[np.lexsort((pod, b[pod], a[pod]))]
    # and by (core, spine, link id): a core's members into a pod (the same pod stands for every destination pod,
    # cabled alike) are a contiguous run
    by_core = np.lexsort((pod, a[pod], b[pod]))
    cores = unique(b[pod])
    up_n = np.bincount(np.searchsorted(spines, a[pod]), minlength=spines.size)
    dn_n = np.bincount(np.searchsorted(cores, b[pod]), minlength=cores.size)
    H = 1
    for size in [up1.size] + up_n.tolist() + dn_n.tolist():
        H = H * size // math.gcd(H, max(size, 1))
    if H <= ENUMERATE_MAX:
        h = np.arange(H, dtype=np.int64)
    else:
        h = np.random.default_rng(0).integers(0, np.iinfo(np.int64).max, ENUMERATE_MAX, dtype=np.int64)
    up_off = np.concatenate([[0], np.cumsum(up_n)[:-1]])
    dn_off = np.concatenate([[0], np.cumsum(dn_n)[:-1]])
    core_of = np.searchsorted(cores, b[pod])              # core index of each pod link (by position)
    s = np.searchsorted(spines, b[up1])[h % up1.size]      # the spine the leaf's hash picks
    u = up_off[s] + h % up_n[s]                            # position of the spine's pick among the pod's links
    c = core_of[u]
    d = by_core[dn_off[c] + h % np.maximum(dn_n[c], 1)]    # position of the core's pick into the destination pod
    n = pod.size
    return {"pod core uplinks": np.bincount(u, minlength=n) / h.size,
            "pod core downlinks": np.bincount(d, minlength=n) / h.size}


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
