"""Link classes: the links of one kind that carry the same load shape, grouped so that the sampler draws each
shape once (:mod:`fabric.evaluate.network` builds them per phase, :mod:`fabric.evaluate.ports` for multi-port NICs,
:mod:`fabric.evaluate.innetwork` for in-network reduction trees).

A member is a link group (the uplinks of one leaf, the ports of one NIC, ...); its load is ``k`` balls (flows x
queue pairs, after merging flows of unequal size into an equivalent count) of ``ball`` bytes per op byte thrown onto
its ``n`` links, ``slow`` of them slow, with a share ``bg`` of their capacity taken by other jobs. Members with equal
(k, n, slow, bg in 1 % steps) form one :class:`LinkClass`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.arrays import group_index, unique_rows

__all__ = ["LinkClass"]


@dataclass
class LinkClass:
    """Members (link groups) with the same load shape; ``ball`` is bytes per ball per byte of op size."""

    kind: str
    k: int
    n: int
    slow: int
    members: int
    ball: float
    member_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    mean_load: float = 0.0       # mean bytes per link per op byte over the members
    bg: float = 0.0              # share of these links' capacity taken by other jobs
    member_loads: np.ndarray = field(default_factory=lambda: np.zeros(0))   # mean bytes per link per op byte
    joint: int = -1              # >= 0: drawn jointly with other classes by ``PhaseLoad.joint[joint]`` (ECMP paths)
    #: the load sits on given links, whatever the routing (in-network reduction trees, fabric.evaluate.innetwork):
    #: ``ball`` is the busiest member's busiest link, slow links already counted
    pinned: bool = False
    #: the balls are hashed onto the links whatever the routing (queue pairs onto a multi-port NIC's ports:
    #: :mod:`fabric.evaluate.ports`)
    hashed: bool = False




def _group_classes(kind: str, keys: np.ndarray, qps: np.ndarray, bytes_: np.ndarray, n_of_key, slow_of_key,
                   bg_of_key=None, sq: np.ndarray | None = None) -> list[LinkClass]:
    """Classes of the link groups ``keys`` (one per flow) load: per group its balls (flows x QPs with the same sum
    of squares), their size, its links and slow links. ``sq``: the flows' ``bytes_ ** 2 / qps`` when the caller has
    them (two calls over the same flows)."""
    if keys.size == 0:
        return []
    if sq is None:
        sq = bytes_ * bytes_ / qps
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    if span <= 4 * keys.size + 65536:
        # switch ids: sums per id by counting, read off at the ids present (the same sums, in the same order, as
        # over the ids renumbered 0 .. groups - 1)
        off = keys - lo if lo else keys
        full = np.bincount(off, weights=bytes_, minlength=span)
        # the ids present: where bytes were summed (every flow carries some: a sum of positive numbers is positive),
        # else by counting the flows
        uniq = np.flatnonzero(full if bytes_.min() > 0 else np.bincount(off, minlength=span))
        B = np.take(full, uniq)
        B2 = np.take(np.bincount(off, weights=sq, minlength=span), uniq)
        uniq = uniq + lo
    else:
        uniq, inv = group_index(keys)
        B = np.bincount(inv, weights=bytes_)
        B2 = np.bincount(inv, weights=sq)
    k_eff = np.maximum(1, np.rint(B * B / np.maximum(B2, 1e-300))).astype(np.int64)
    ball = B / k_eff
    n = np.asarray(n_of_key(uniq), dtype=np.int64)
    slow = np.asarray(slow_of_key(uniq), dtype=np.int64)
    bg = np.zeros(uniq.size) if bg_of_key is None else np.asarray(bg_of_key(uniq), dtype=float)
    return _classes(kind, uniq, k_eff, ball, n, slow, bg, B)


def _class_members(cinv: np.ndarray, n_classes: int):
    """Per class ``c`` (0 .. n_classes - 1), the positions ``i`` with ``cinv[i] == c`` in increasing order (one
    class: every position, as a slice)."""
    if n_classes == 1:
        return iter([slice(None)])
    if n_classes <= 8:
        return (np.flatnonzero(cinv == c) for c in range(n_classes))
    order = np.argsort(cinv, kind="stable")
    return np.split(order, np.cumsum(np.bincount(cinv, minlength=n_classes))[:-1])


def _classes(kind, keys, k, ball, n, slow, bg, total_bytes) -> list[LinkClass]:
    """Group members with equal (balls, links, slow links, background in 1 % steps) into classes."""
    bg_pct = np.rint(np.clip(bg, 0.0, 0.95) * 100).astype(np.int64)
    if k.size and slow.min() == slow.max() and bg_pct.min() == bg_pct.max() and n.min() >= 0:
        # the common case (a NIC's ports, a tier's uplink groups, some of them short of a failed link): only the
        # balls and the links differ, grouped as one number (balls x (most links + 1) + links): the same classes,
        # in the same order, as the rows' grouping below
        n_hi = int(n.max()) + 1
        uk, cinv = group_index(np.asarray(k, np.int64) * n_hi + n)
        csig = np.empty((uk.size, 4), np.int64)
        csig[:, 0], csig[:, 1], csig[:, 2], csig[:, 3] = uk // n_hi, uk % n_hi, slow.flat[0], bg_pct.flat[0]
    else:
        csig, cinv = unique_rows(np.stack([k, n, slow, bg_pct], axis=1))
    ball = np.broadcast_to(np.asarray(ball, dtype=float), k.shape)
    out = []
    for c, (kk, nn, sl, bp), m in zip(range(len(csig)), csig.tolist(), _class_members(cinv, len(csig))):
        per_link = total_bytes[m] / max(nn, 1)
        out.append(LinkClass(kind, int(kk), int(max(nn, 0)), int(sl), per_link.size, float(ball[m].max()), keys[m],
                             float(per_link.mean()), bp / 100.0, per_link))
    return out
