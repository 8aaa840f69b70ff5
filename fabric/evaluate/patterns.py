"""Group shapes and traffic patterns kept across evaluations in one process.

Both are pure functions of what they are made from: a group's shape (:func:`fabric.evaluate.flows.group_shape`) of
the GPU each rank runs on and the fabric's scale-up layout (GPU -> domain); an op's traffic pattern
(:func:`fabric.evaluate.flows.op_traffic`) of the shape, the op, its algorithm and what NCCL's choice sees of the
hardware. A search evaluates hundreds of designs whose placements and scale-up domains repeat (at 131,072 GPUs: 6
distinct shapes and 60 distinct patterns in 1,280 ops of 300 designs), so each is made once, not per design.

The kept objects are shared: callers must not write to them (nothing in the evaluator does). Keys hold the full
bytes of the placement and the domain layout, so equal keys mean equal inputs; the few largest objects are kept
(:data:`MAX_PATTERN_FLOWS` flows in all).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

__all__ = ["shared_shape", "shared_traffic", "clear_patterns", "MAX_SHAPES", "MAX_PATTERN_FLOWS"]

#: Group shapes kept (each holds its members: one GPU id per rank of one group kind).
MAX_SHAPES = 32
#: Traffic patterns kept, by their flows in all (three 8-byte arrays per flow: ~24 bytes each).
MAX_PATTERN_FLOWS = 6_000_000

_LOCK = threading.Lock()
_DOMAINS: dict = {}                    # id(gpu_domain) -> (weak reference, its bytes)
_SHAPES: OrderedDict = OrderedDict()
_PATTERNS: OrderedDict = OrderedDict()


def _domain_bytes(gpu_domain: np.ndarray) -> bytes:
    """The bytes of a fabric's GPU -> domain array, one object per array (a bytes object keeps its hash, so a
    lookup by it hashes the megabyte once per built fabric, not once per op)."""
    hit = _DOMAINS.get(id(gpu_domain))
    if hit is not None and hit[0]() is gpu_domain:
        return hit[1]
    out = np.ascontiguousarray(gpu_domain, np.int64).tobytes()
    if len(_DOMAINS) >= 16:
        _DOMAINS.clear()
    try:
        _DOMAINS[id(gpu_domain)] = (weakref.ref(gpu_domain), out)
    except TypeError:                   # not weakly referable (a view of another array): not kept
        pass
    return out


def shared_shape(instances_key: bytes, group, world_size: int, gpu_domain: np.ndarray, make):
    """The shape of ``group`` (over a job of ``world_size`` ranks) placed as ``instances_key`` (the bytes of the
    GPU of each rank) on the domains ``gpu_domain``: ``make()`` the first time, the kept one after."""
    key = (instances_key, group, int(world_size), _domain_bytes(gpu_domain))
    with _LOCK:
        hit = _SHAPES.get(key)
        if hit is not None:
            _SHAPES.move_to_end(key)
            return hit
    shape = make()
    with _LOCK:
        _SHAPES[key] = shape
        while len(_SHAPES) > MAX_SHAPES:
            _SHAPES.popitem(last=False)
    return shape


def _flows(traffic) -> int:
    return sum(int(ph.src_gpu.shape[0]) + (0 if ph.all_pairs is None else int(ph.all_pairs.size))
               for ph in traffic.phases)


def shared_traffic(shape, gpu_domain: np.ndarray, kind: str, algorithm: str, size_key, hardware, make):
    """The traffic pattern of ``kind`` run as ``algorithm`` on ``shape`` (the domains ``gpu_domain``), NCCL's choice
    seeing ``hardware``; ``size_key`` is the op's size where the pattern depends on it (None elsewhere):
    ``make()`` the first time, the kept one after. ``shape`` is matched by identity (and held, so its id stays
    its own): shapes repeat through :func:`shared_shape`."""
    key = (id(shape), _domain_bytes(gpu_domain), kind, algorithm, size_key, hardware)
    with _LOCK:
        hit = _PATTERNS.get(key)
        if hit is not None and hit[0] is shape:
            _PATTERNS.move_to_end(key)
            return hit[1]
    traffic = make()
    n = _flows(traffic)
    if n > MAX_PATTERN_FLOWS // 2:
        return traffic                  # too large to keep beside others
    with _LOCK:
        _PATTERNS[key] = (shape, traffic, n)
        total = sum(v[2] for v in _PATTERNS.values())
        while len(_PATTERNS) > 1 and total > MAX_PATTERN_FLOWS:
            total -= _PATTERNS.popitem(last=False)[1][2]
    return traffic


def clear_patterns() -> None:
    """Forget the kept shapes and patterns (tests; a process that wants its memory back)."""
    with _LOCK:
        _SHAPES.clear()
        _PATTERNS.clear()
        _DOMAINS.clear()
