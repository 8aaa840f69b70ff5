"""Array helpers the hot paths share.

:func:`unique` exists because numpy 2.3+ finds the distinct values of an integer array with a hash table when no
index, inverse or count is asked for, and that is one to two orders of magnitude slower than sorting once the array
holds many distinct values (600,000 int64 of 10^9 possible values: 165 ms against 4.5 ms on this project's 2-core
machine; ``python benchmarks/bench_unique.py``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique", "group_index", "unique_rows", "any_per_row"]

#: below this many elements numpy's own ``np.unique`` is used (either way is fast)
_SMALL = 256


def unique(a) -> np.ndarray:
    """``np.unique(a)`` (the sorted distinct values of ``a``, flattened, in its dtype): by one sort for integer
    arrays of 2+ bytes per value, by ``np.unique`` otherwise (floats keep its NaN rule; 1-byte values have few
    distinct values, where its hash table is fast)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu" or a.dtype.itemsize < 2 or a.size < _SMALL:
        return np.unique(a)
    s = np.sort(a, axis=None)
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def group_index(keys: np.ndarray):
    """``(unique keys, inverse)`` of an integer array (``np.unique(keys, return_inverse=True)``): by counting when
    the keys span a small range (switch ids, whole metres), else by sorting."""
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    if span <= 4 * keys.size + 65536:
        off = keys - lo if lo else keys
        present = np.bincount(off, minlength=span) > 0
        uniq = np.flatnonzero(present)
        lookup = np.zeros(span, np.int64)
        lookup[uniq] = np.arange(uniq.size)
        return uniq + lo, np.take(lookup, off)
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, inv.ravel()


def unique_rows(sig: np.ndarray):
    """``(unique rows, inverse)`` of an integer matrix, rows in lexicographic order: what ``np.unique(sig, axis=0,
    return_inverse=True)`` gives, without its sort of the rows as opaque records (slow on 100,000s of rows). Each
    row is packed into one integer (column offsets and spans keep the order lexicographic) and grouped by
    :func:`group_index`; rows whose spans do not fit 62 bits go the general way."""
    if sig.shape[0] == 0 or sig.dtype.kind not in "iu":
        csig, cinv = np.unique(sig, axis=0, return_inverse=True)
        return csig, cinv.ravel()
    lo = sig.min(axis=0)
    span = sig.max(axis=0) - lo + 1
    if float(np.prod(span.astype(float))) >= 2.0 ** 62:
        csig, cinv = np.unique(sig, axis=0, return_inverse=True)
        return csig, cinv.ravel()
    stride = np.ones(span.size, np.int64)
    for j in range(span.size - 2, -1, -1):
        stride[j] = stride[j + 1] * span[j + 1]
    key = (sig - lo) @ stride if sig.shape[1] > 1 else sig[:, 0] - lo[0]
    uniq, inv = group_index(np.asarray(key, dtype=np.int64))
    csig = (uniq[:, None] // stride) % span + lo
    return csig.astype(sig.dtype, copy=False), inv


def any_per_row(m: np.ndarray) -> np.ndarray:
    """``m.any(axis=1)`` of a boolean matrix with few columns (NIC ports), without numpy's slow reduction over a
    short inner axis: C-contiguous rows of 2, 4 or 8 bytes are read as one integer, others OR their columns."""
    w = m.shape[1]
    if w in (2, 4, 8) and m.flags.c_contiguous and m.dtype == np.bool_:
        return m.view(f"u{w}").ravel() != 0
    out = m[:, 0].copy()
    for j in range(1, w):
        out |= m[:, j]
    return out
