"""Issue 27, shape 2: compute per step of a newest-format Kineto trace of rank 0 of an 8 x MI300X DDP run (RCCL,
generic collective kernel names, HIP streams, three ~16 ms ProfilerStep spans). The trace is our own reproduction
(tests/shapes_rocm_kineto.py); every expected value is computed here from the raw kernel spans with plain interval
arithmetic, not from the parser."""

from __future__ import annotations

import copy
import json
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.errors import FabricError
from fabric.workload.ingest import ingest
from fabric.workload.parsers import kineto
from tests import shapes_rocm_kineto as shape
from tests.conftest import fuzz_deadline, fuzz_examples

NAME = "rank0.mi300x.pt.trace.json"


# ---------------------------------------------------------------- interval arithmetic on the raw spans


def _union(spans):
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
            out.append([a, b])
    return out


def _length(spans) -> float:
    return sum(b - a for a, b in spans)


def _minus(spans, cover):
    out = []
    for a, b in spans:
        parts = [(a, b)]
        for c, d in cover:
            parts = [p for x, y in parts for p in ((x, min(y, c)), (max(x, d), y)) if p[1] > p[0]]
        out += parts
    return out


def _clip(spans, a, b):
    return [(max(x, a), min(y, b)) for x, y in spans if y > a and x < b]


def expected_per_step(kernels, windows, *, queues=None):
    """(compute, busy, exposed) of every ProfilerStep span in us: the span minus the time inside it when only
    collective kernels run (compute kernels of the given queues, all by default, cover them)."""
    comp = _union([(k.ts, k.end) for k in kernels if not k.collective and (queues is None or k.queue in queues)])
    coll = _union([(k.ts, k.end) for k in kernels if k.collective])
    out = []
    for a, b in windows:
        exposed = _length(_minus(_union(_clip(coll, a, b)), comp))
        out.append(((b - a) - exposed, _length(_clip(comp, a, b)), exposed))
    return out


def _data(**kw) -> bytes:
    return json.dumps(shape.trace(**kw)).encode()


# ---------------------------------------------------------------- the shape


@pytest.mark.parametrize("tracer", ["rocprofiler-sdk", "roctracer"])
def test_compute_per_step_counts_every_stream_inside_the_profiler_step_spans(tracer):
    kernels, windows = shape.kernels(), shape.windows()
    exp = expected_per_step(kernels, windows)
    # the reproduction is what the issue describes: ~16 ms steps whose GPU work spills into the next span
    assert [round(b - a) for a, b in windows] == [16210, 15880, 16140]
    assert max(k.end for k in kernels) > windows[-1][1] + 10_000
    assert {k.name for k in kernels if k.collective} == {shape.RCCL_KERNEL}
    res = ingest([(NAME, _data(tracer=tracer))])
    (rep,) = res.files
    assert rep.ok and rep.format == "kineto", rep.error
    job = res.workload.jobs[0]
    rt = kineto.load_rank(NAME, _data(tracer=tracer))
    assert rt.compute_us == pytest.approx([c for c, _, _ in exp], abs=0.01)
    # by hand from the spans: 8.892 / 6.360 / 4.889 ms
    assert [round(c / 1000, 3) for c, _, _ in exp] == [8.892, 6.360, 4.889]
    for compute, busy, _ in exp:                 # never below the step's compute kernels, never above the span
        assert busy <= compute
    for (compute, _, _), (a, b) in zip(exp, windows):
        assert compute <= b - a
    values = [c * 1e-6 for c, _, _ in exp]
    assert job.compute_time_s == pytest.approx(statistics.fmean(values), rel=1e-9)
    assert job.compute_cv == pytest.approx(statistics.pstdev(values) / statistics.fmean(values), rel=1e-9)
    # the bounds: between 4.3 and 17 ms every step, stable over the three steps
    assert all(4.3e-3 <= v <= 17e-3 for v in values)
    assert job.compute_cv < 0.5
    assert job.steps_observed == 3 and job.world_size == 8
    # the collectives of the newest format, every generic RCCL kernel tied to its call
    wl = res.workload
    ops = sorted((o.kind, o.bytes, o.dtype, o.count_per_step) for o in job.ops)
    assert ops == sorted([
        ("all_reduce", shape.BUCKETS[0] * 2, "bfloat16", 1.0), ("all_reduce", shape.BUCKETS[1] * 2, "bfloat16", 1.0),
        ("broadcast", 9600 * 2, "bfloat16", 1.0), ("broadcast", 20 * 8, "int64", 1.0)])
    (group,) = job.groups
    assert group.size == 8 and group.role == "dp"
    assert wl.unparsed == ()
    # the overlap of each all-reduce's kernels with compute kernels of any stream, from the spans, averaged over
    # its three occurrences
    comp = _union([(k.ts, k.end) for k in kernels if not k.collective])
    for nelems in shape.BUCKETS:
        ks = [k for k in kernels if k.collective and k.call["In msg nelems"] == nelems]
        shares = [1 - _length(_minus([(k.ts, k.end)], comp)) / (k.end - k.ts) for k in ks]
        op = next(o for o in job.ops if o.bytes == nelems * 2)
        assert len(ks) == 3 and op.overlap_fraction == pytest.approx(statistics.fmean(shares), abs=1e-5)
    assert any("AMD Instinct MI300X" in n for n in job.notes)


def test_side_streams_cover_collective_time():
    """The prefetcher's and DDP's copy streams run while RCCL spins: leaving them out would change the figures, so
    the check above holds only when every HIP stream is counted."""
    kernels, windows = shape.kernels(), shape.windows()
    every = expected_per_step(kernels, windows)
    default_only = expected_per_step(kernels, windows, queues={shape.Q_DEFAULT})
    assert [round(c) for c, _, _ in every] != [round(c) for c, _, _ in default_only]
    rt = kineto.load_rank(NAME, _data())
    assert rt.compute_us == pytest.approx([c for c, _, _ in every], abs=0.01)
    assert {k.queue for k in kernels if not k.collective} == {shape.Q_DEFAULT, shape.Q_SIDE, shape.Q_COPY}


_NAMES = [
    (shape.RCCL_KERNEL, True),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", True),
    ("mscclKernel_Sum_bf16_LL128(ncclDevComm*, mscclAlgo*, mscclWork*)", True),    # RCCL's MSCCL all-reduce
    ("rcclAllReduceKernel_Sum_bf16(...)", True),
    ("ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)", True),                 # NCCL before 2.4
    ("void mscclpp::allreduce8<__hip_bfloat16>(...)", False),                    # MSCCL++: not through NCCL
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32", False),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(...)", False),
]


def test_collective_kernels_are_told_by_their_nccl_rccl_names():
    """One kernel spinning 600 us over a 100 us compute kernel on another stream, inside a 1 ms ProfilerStep: a
    collective leaves 1000 - (600 - 100) = 500 us of compute, any other kernel exposes nothing."""
    got = {}
    for name, _ in _NAMES:
        ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
               "dur": 1000},
              {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 100, "dur": 600,
               "args": {"device": 0, "stream": 7}},
              {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_BBS_BH_MT256x256x64", "pid": 0, "tid": 3,
               "ts": 200, "dur": 100, "args": {"device": 0, "stream": 3}}]
        got[name] = kineto.load_rank("one.json", json.dumps({"traceEvents": ev}).encode()).compute_us
    assert got == {name: [500.0 if coll else 1000.0] for name, coll in _NAMES}


# ---------------------------------------------------------------- fuzz targets


@settings(max_examples=fuzz_examples(40), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(0, 12_000), min_size=3, max_size=3),
       st.lists(st.tuples(st.floats(0, 12_000), st.floats(0, 9_000)), min_size=3, max_size=3),
       st.floats(0.3, 1.5), st.integers(0, 3))
def test_fuzz_rank_ahead_of_its_gpu(wait_bcast, wait_ar, scale, seed):
    """However far the GPU falls behind (waits for peers, kernel durations), each step's compute is its span minus
    the collective-only time inside it: between the compute kernels' busy time and the span."""
    kw = {"wait_bcast": tuple(wait_bcast), "wait_ar": tuple(wait_ar), "scale": scale}
    rt = kineto.load_rank(NAME, _data(seed=seed, **kw))
    exp = expected_per_step(shape.kernels(seed=seed, **kw), shape.windows())
    assert rt.compute_us == pytest.approx([c for c, _, _ in exp], abs=0.01)
    for compute, busy, _ in exp:
        assert busy - 0.01 <= compute


_EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["drop", "dup", "shift", "field", "junk"]),
                            st.one_of(st.none(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                                      st.text(max_size=8), st.lists(st.integers(), max_size=3))),
                  min_size=1, max_size=8)


@settings(max_examples=fuzz_examples(60), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(_EDITS)
def test_fuzz_damaged_rocm_trace_only_raises_parse_errors(edits):
    base = shape.trace()
    trace = copy.deepcopy(base)
    ev = trace["traceEvents"]
    keys = ["ts", "dur", "pid", "tid", "cat", "name", "args", "ph"]
    arg_keys = ["device", "stream", "correlation", "External id", "Collective name", "In msg nelems", "dtype",
                "Group size", "Process Group Ranks", "Rank", "Concrete Inputs"]
    for pos, what, value in edits:
        i = pos % len(ev)
        if what == "drop":
            del ev[i]
        elif what == "dup":
            ev.insert(i, copy.deepcopy(ev[i]))
        elif what == "shift":
            if isinstance(ev[i], dict) and isinstance(ev[i].get("ts"), (int, float)):
                ev[i]["ts"] = ev[i]["ts"] + (value if isinstance(value, (int, float)) else 5000.0)
        elif what == "field":
            e = ev[i]
            if not isinstance(e, dict):
                continue
            if isinstance(e.get("args"), dict) and pos % 2:
                e["args"][arg_keys[pos % len(arg_keys)]] = value
            else:
                e[keys[pos % len(keys)]] = value
        else:
            ev.insert(i, value)
    try:
        data = json.dumps(trace).encode()
    except (TypeError, ValueError):
        return
    try:
        wl = kineto.parse([(NAME, data)])
    except FabricError:
        return
    assert wl.jobs
    for j in wl.jobs:
        assert j.compute_time_s >= 0 and j.compute_cv >= 0
    # while the step spans and the kernels stay readable, each step's compute stays between its compute kernels'
    # busy time and its span, whatever else was damaged
    bounds = _raw_bounds(trace["traceEvents"])
    if bounds is not None:
        rt = kineto.load_rank(NAME, data)
        assert len(rt.compute_us) == len(bounds)
        for compute, (busy, span) in zip(rt.compute_us, bounds):
            assert busy - 0.01 <= compute <= span + 0.01


def _raw_bounds(events):
    """(busy, span) per ProfilerStep of a (damaged) generated trace, or None when its steps or kernels are no
    longer plainly readable (then the parser's view of them is not the test's to guess)."""
    steps: dict = {}
    kernels = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur, name = e.get("ts"), e.get("dur"), e.get("name")
        numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) < 1e12
                      for x in (ts, dur))
        if e.get("cat") in ("cpu_op", "user_annotation") and isinstance(name, str) and name.startswith("Profiler"):
            if not numeric or dur < 0 or not name.startswith("ProfilerStep#"):
                return None
            if name not in steps or steps[name][1] - steps[name][0] < dur:
                steps[name] = (ts, ts + dur)
        elif e.get("cat") == "kernel":
            args = e.get("args")
            if (not numeric or dur < 0 or name not in _KNOWN or e.get("pid") != shape.DEVICE
                    or not isinstance(args, dict) or args.get("device", shape.DEVICE) != shape.DEVICE):
                return None
            kernels.append(shape.Kernel(name, 0, ts, ts + dur, 0, 0, 0, 0, {} if name == shape.RCCL_KERNEL else None))
        elif isinstance(name, str) and name.startswith("ProfilerStep"):
            return None
    if not steps:
        return None
    windows = sorted(steps.values())
    return [(busy, b - a) for (_, busy, _), (a, b) in zip(expected_per_step(kernels, windows), windows)]


_KNOWN = {k.name for k in shape.kernels()}
