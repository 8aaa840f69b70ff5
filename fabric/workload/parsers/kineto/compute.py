"""Kineto traces: compute and communication time on the GPU: kernel intervals merged per device, the exposed part of
collective kernels, each step window's compute, and a collective's kernel time split into waiting for the slowest
peer and transfer once ranks are paired."""

from __future__ import annotations

import bisect

from fabric.workload.parsers.kineto.events import RankTrace


def _merge_intervals(iv: list[tuple[float, float]]) -> tuple[list[float], list[float], list[float]]:
    """Sorted disjoint (starts, ends, cumulative covered length before each interval) of a set of intervals."""
    iv = sorted(iv)
    starts: list[float] = []
    ends: list[float] = []
    for s, e in iv:
        if e <= s:
            continue
        if ends and s <= ends[-1]:
            if e > ends[-1]:
                ends[-1] = e
        else:
            starts.append(s)
            ends.append(e)
    cum = [0.0]
    for s, e in zip(starts, ends):
        cum.append(cum[-1] + (e - s))
    return starts, ends, cum


def _covered(merged, s: float, e: float) -> float:
    """Length of [s, e) covered by the merged intervals (O(log n))."""
    starts, ends, cum = merged
    if e <= s or not starts:
        return 0.0
    i = bisect.bisect_right(ends, s)
    j = bisect.bisect_left(starts, e)
    if i >= j:
        return 0.0
    total = cum[j] - cum[i]
    if starts[i] < s:
        total -= s - starts[i]
    if ends[j - 1] > e:
        total -= ends[j - 1] - e
    return max(total, 0.0)


def _exposed(spans, compute_merged) -> float:
    """Length of the union of NCCL kernel spans not covered by compute kernels of the same device."""
    by_dev: dict = {}
    for dev, s, e in spans:
        by_dev.setdefault(dev, []).append((s, e))
    total = 0.0
    for dev, iv in by_dev.items():
        starts, ends, _ = _merge_intervals(iv)
        m = compute_merged.get(dev)
        for s, e in zip(starts, ends):
            total += (e - s) - (_covered(m, s, e) if m is not None else 0.0)
    return total


def _window_compute(windows, spans, compute_merged) -> list[float]:
    """Compute time of each window (us): its length minus the exposed part of the collective ``spans`` (device,
    start, end) that fall inside it, clipped to it. Collective and compute kernels of every stream of a device
    count, so a window's compute is never below its compute kernels' busy time nor above its length."""
    out = []
    for a, b in windows:
        inside = [(d, max(s, a), min(e, b)) for d, s, e in spans if e > a and s < b]
        out.append(max((b - a) - _exposed(inside, compute_merged), 0.0))
    return out


def _transfer_spans(spans, wait_us: float) -> list:
    """The kernel spans of one call without their first ``wait_us`` of kernel time (waiting precedes transfer)."""
    if wait_us <= 0:
        return list(spans)
    out = []
    left = wait_us
    for dev, s, e in sorted(spans, key=lambda x: x[1]):
        cut = min(left, max(e - s, 0.0))
        left -= cut
        if e > s + cut:
            out.append((dev, s + cut, e))
    return out


def _assign_waits(pairs) -> bool:
    """Split the kernel time of one collective, paired across ranks, into waiting and transfer.

    A collective ends at about the same time on every member; the rank that reaches it last does not wait, so the
    shortest kernel among the traced ranks is the transfer and the excess of each rank's kernel over it is time
    spent waiting for the slowest peer. ``pairs`` = [(RankTrace, _Call)] of one position of one group. Updates each
    call's ``wait_us`` and measures its overlap on the transfer part only; returns whether it could be done (every
    rank has kernel time for the call, at least two ranks are traced, and every rank moves the same bytes: when
    sizes differ, as in an uneven all_to_allv, kernel times may differ for the transfer itself, so nothing is
    counted as waiting).
    """
    durs = [c.kernel_us for _, c in pairs]
    if len(pairs) < 2 or not all(d > 0 for d in durs):
        return False
    if len({c.nbytes for _, c in pairs}) > 1 or any(c.uneven or c.kind == "send_recv" for _, c in pairs):
        return False  # (the n-th sends of two pipeline ranks are different transfers, not one collective)
    shortest = min(durs)
    for t, c in pairs:
        c.wait_us = c.kernel_us - shortest
        if c.wait_us > 0:
            spans = _transfer_spans(c.kernel_spans, c.wait_us)
            c.kernel_us = sum(e - s for _, s, e in spans)
            c.overlap_us = sum(_covered(t.compute_iv[d], s, e) for d, s, e in spans if d in t.compute_iv)
    return True


def _recompute_compute(t: RankTrace) -> None:
    """Compute per window of one rank with only the transfer part of its calls' kernels counted as communication."""
    if not t.windows or not any(c.wait_us > 0 for c in t.calls):
        return
    spans = list(t.comm_other) + [sp for c in t.calls for sp in _transfer_spans(c.kernel_spans, c.wait_us)]
    t.compute_us = _window_compute(t.windows, spans, t.compute_iv)


def _compute_gpu(traces, notes: list) -> str | None:
    """The GPU the traces' compute ran on (``Job.compute_gpu``): the catalog row of the device name every trace
    gives (:func:`fabric.catalog.devices.gpu_model_for`), else that name, else None (unknown); noted."""
    from fabric.catalog.devices import gpu_model_for

    names = {getattr(t, "device_name", None) for t in traces}
    if len(names) != 1 or None in names:
        if any(n for n in names):
            notes.append("the rank files name different GPUs (" + ", ".join(sorted(n for n in names if n))
                         + "): the GPU the compute ran on is taken as unknown")
        return None
    name = names.pop()
    model = gpu_model_for(name)
    notes.append(f"compute measured on {name}" + (f" (catalog GPU {model})" if model else
                                                  " (no catalog GPU row: its compute cannot be scaled to another GPU)"))
    return model or name
