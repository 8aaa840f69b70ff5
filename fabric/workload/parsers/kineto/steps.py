"""Kineto traces: one rank file read (:func:`load_rank`): its calls assigned to ``ProfilerStep`` windows (or one
request window without markers), the compute of each window and the GPU's busy time."""

from __future__ import annotations

import bisect

from fabric.limits import Limits
from fabric.workload.io import stream_trace
from fabric.workload.parsers.kineto.compute import _covered, _merge_intervals, _window_compute
from fabric.workload.parsers.kineto.events import RankTrace, _calls, _Collector, _device_name, _distributed_info, _fail


def load_rank(name: str, data: bytes, limits: Limits | None = None) -> RankTrace:
    """Extract one rank's communication calls, steps and GPU timeline from one Kineto JSON file."""
    col = _Collector()
    header = stream_trace(data, name, array_key="traceEvents", on_item=col, limits=limits)
    if "traceEvents" not in header:
        raise _fail(name, "no 'traceEvents' array: not a PyTorch profiler (Kineto) trace", "traceEvents")
    if not isinstance(header["traceEvents"], int):
        raise _fail(name, "'traceEvents' must be a JSON array of events", "traceEvents")
    warnings: list[str] = []
    if col.bad_events:
        warnings.append(f"{name}: {col.bad_events} malformed trace event(s) skipped")

    rank, world, backend, pgs = _distributed_info(header.get("distributedInfo"), name)
    calls, unparsed = _calls(col, name, world)
    return _analyse(name, col, header, rank, world, backend, pgs, calls, unparsed, warnings)


def _analyse(name, col, header, rank, world, backend, pgs, calls, unparsed, warnings) -> RankTrace:
    compute_merged = {dev: _merge_intervals(iv) for dev, iv in col.compute.items()}
    for c in calls:
        for dev, s, e in c.kernel_spans:
            c.kernel_us += e - s
            m = compute_merged.get(dev)
            if m is not None:
                c.overlap_us += _covered(m, s, e)

    steps = sorted(col.steps.values())
    calls.sort(key=lambda c: c.ts)
    orphan_spans = col.nccl
    if steps:
        starts = [s for s, _ in steps]
        outside = 0
        for c in calls:
            i = bisect.bisect_right(starts, c.ts) - 1
            if i >= 0 and c.ts < steps[i][1]:
                c.step = i
            else:
                outside += 1
        kept = [c for c in calls if c.step >= 0]
        if outside:
            n_comm = sum(1 for c in calls if c.step < 0 and c.kind not in ("",))
            if n_comm:
                warnings.append(f"{name}: {n_comm} collective call(s) outside the ProfilerStep windows were left out")
        # the GPU's collective time in a step is what runs inside its ProfilerStep span, whichever step launched
        # it: a rank that runs ahead of its GPU (or of its peers) has kernels of one step spinning into the next
        comm_other = [(d, s, e) for d, s, e, _ in orphan_spans]
        comm_other += [sp for c in calls if c.step < 0 for sp in c.kernel_spans]
        windows = [(float(s0), float(s1)) for s0, s1 in steps]
        compute_us = _window_compute(windows, [sp for c in kept for sp in c.kernel_spans] + comm_other,
                                     compute_merged)
        window = sum(s1 - s0 for s0, s1 in steps)
        window_len = [s1 - s0 for s0, s1 in steps]
        # GPU busy time inside the step windows (CPU windows: kernels lag their launches only slightly)
        busy = max((sum(_covered(m, s0, s1) for s0, s1 in steps) for m in compute_merged.values()), default=0.0)
        calls = kept
    else:
        spans = [sp for c in calls for sp in c.kernel_spans] + [(d, s, e) for d, s, e, _ in orphan_spans]
        all_iv = [iv for lst in col.compute.values() for iv in lst] + [(s, e) for _, s, e in spans]
        if all_iv:
            t0 = min(s for s, _ in all_iv)
            t1 = max(e for _, e in all_iv)
        else:
            t0 = t1 = 0.0
        window = t1 - t0
        windows = [(t0, t1)] if all_iv else []
        comm_other = [(d, s, e) for d, s, e, _ in orphan_spans]
        compute_us = _window_compute(windows, spans, compute_merged)
        window_len = [window] if all_iv else []
        for c in calls:
            c.step = 0
        busy = max((m[2][-1] for m in compute_merged.values()), default=0.0)
        warnings.append(
            f"{name}: no ProfilerStep#N markers: treated as one inference/request window; op counts are per trace, "
            f"not per training step")
    tn = header.get("traceName")
    return RankTrace(name=name, rank=rank, world_size=world, backend=backend, pg_config=pgs, steps=steps,
                     calls=calls, compute_us=compute_us, busy_us=busy, window_us=window, unparsed=unparsed,
                     warnings=warnings, trace_name=tn if isinstance(tn, str) else None,
                     window_len_us=window_len, windows=windows, comm_other=comm_other, compute_iv=compute_merged,
                     device_name=_device_name(header.get("deviceProperties")))
