"""Write a realistic NEW-format PyTorch profiler (Kineto) trace for one rank of a :class:`~fabric.workload.model.Job`.

Used to generate sample traces and the parse benchmark, and to test the Kineto parser end to end (writer ->
parser reproduces ops, bytes, counts, overlap and compute time).

What a trace holds, per ``ProfilerStep#N`` (CPU ``user_annotation``):

- compute kernels (``aten::*`` ``cpu_op`` -> ``cudaLaunchKernel`` -> ``kernel`` on stream 7), back to back, adding
  up to the step's compute time ``C`` (``job.compute_time_s`` with a normal jitter of ``job.compute_cv``);
- for each op occurrence: ``record_param_comms`` (``Collective name``, ``In/Out msg nelems``, ``dtype``,
  ``Group size``, ``Process Group Name``/``Description``/``Ranks``, ``In/Out split size``) with its ``nccl:*``
  annotation and ``cudaLaunchKernelExC`` on a communication thread, and an NCCL kernel on stream 20 carrying the
  same args. A kernel of duration ``d`` (from a nominal 40 GB/s bus bandwidth, labelled synthetic) is overlapped by
  compute for ``overlap_fraction x d`` and exposed for the rest, so the step lasts ``C + sum((1 - f) d)``.

``op_us`` ({index into ``job.ops``: us}) gives the kernels of those ops a duration of their own instead of the
nominal one (e.g. an evaluator's predicted op time, :mod:`fabric.audit.synthetic`).

``wait_us`` makes a rank wait for a late peer: ``{(step, j): w}`` starts the ``j``-th collective of ``step`` (in
trace order) ``w`` us early, so its kernel lasts ``w + d`` and spins for the first ``w`` (GPU otherwise idle; the
hidden part of the transfer follows the wait), and the step lasts ``w`` longer. The parser must count that ``w`` as
compute (a perfect network would not remove it) once the kernel is paired with a peer's that did not wait.

Occurrences per step: ``floor(c (i + 1)) - floor(c i)`` for step ``i`` and ``count_per_step`` ``c`` (fractional
counts spread over steps). When the hidden parts of a step's kernels add up to more than ``C`` the overlaps of that
step are scaled down to fit. ``all_to_allv`` sends ``per_rank_bytes[position of the rank in the group]``.
Inference jobs are written without ``ProfilerStep`` markers (the parser then counts per trace, i.e.
``steps x count_per_step``). The sampled compute time of each step is recorded in the header field
``fabricSynthetic`` (ignored by the parser) so tests can compare exactly.
"""

from __future__ import annotations

import json
import math
from typing import IO, Iterator

import numpy as np

from fabric.errors import WorkloadError
from fabric.workload.model import CommOp, Job, ProcessGroup

__all__ = ["workload_to_kineto", "iter_kineto_events", "kineto_header", "write_kineto", "NOMINAL_BUSBW_BYTES_PER_S"]

#: nominal bus bandwidth used to give synthetic NCCL kernels a duration (a label, not a measurement)
NOMINAL_BUSBW_BYTES_PER_S = 40e9
#: fixed per-call latency of a synthetic NCCL kernel, us
_LATENCY_US = 8.0
#: how long before its kernel starts a kernel is launched on the CPU, us
_LEAD_US = 20.0
_BASE_TS_US = 1.0e9
_COMPUTE_STREAM = 7
_COMM_STREAM = 20

_COLL_NAME = {"all_reduce": "allreduce", "all_gather": "_allgather_base", "reduce_scatter": "_reduce_scatter_base",
              "all_to_all": "all_to_all", "all_to_allv": "all_to_allv", "broadcast": "broadcast",
              "reduce": "reduce", "send_recv": "send", "barrier": "barrier"}
_ANNOTATION = {"all_reduce": "nccl:all_reduce", "all_gather": "nccl:_all_gather_base",
               "reduce_scatter": "nccl:_reduce_scatter_base", "all_to_all": "nccl:all_to_all",
               "all_to_allv": "nccl:all_to_all", "broadcast": "nccl:broadcast", "reduce": "nccl:reduce",
               "send_recv": "nccl:send", "barrier": "nccl:all_reduce"}
_KERNEL = {"all_reduce": "AllReduce_Sum", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter_Sum",
           "all_to_all": "SendRecv", "all_to_allv": "SendRecv", "broadcast": "Broadcast", "reduce": "Reduce_Sum",
           "send_recv": "SendRecv", "barrier": "AllReduce_Sum"}
#: model dtype label -> (Kineto dtype name, element bytes)
_DTYPES = {"float32": ("Float", 4), "bfloat16": ("BFloat16", 2), "float16": ("Half", 2), "float64": ("Double", 8),
           "int64": ("Long", 8), "int32": ("Int", 4), "int16": ("Short", 2), "int8": ("Char", 1),
           "uint8": ("Byte", 1), "bool": ("Bool", 1), "fp32": ("Float", 4), "bf16": ("BFloat16", 2),
           "fp16": ("Half", 2)}
_COMPUTE_NAMES = (
    ("aten::mm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel"),
    ("aten::add_", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"),
    ("aten::_flash_attention_forward", "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>"),
    ("aten::native_layer_norm", "void at::native::vectorized_layer_norm_kernel<c10::BFloat16, float>"),
    ("aten::gelu", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"),
)


def _bus_factor(kind: str, p: int) -> float:
    if p <= 1:
        return 0.0 if kind != "send_recv" else 1.0
    if kind in ("all_reduce", "barrier"):
        return 2.0 * (p - 1) / p
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "all_to_allv"):
        return (p - 1) / p
    return 1.0


def _members(group: ProcessGroup, rank: int, world: int) -> tuple[int, ...] | None:
    """The global ranks of the instance of ``group`` that ``rank`` belongs to, or None when it is in none.

    An explicit ``ranks`` list is one communicator: other ranks are not members. A strided pattern
    (``rank_start``/``rank_stride``) describes a family of communicators tiling the world (every TP, DP or PP
    group of a parallelism plan): ``rank`` is in the translate of the pattern that contains it. Without either, a
    ``dp`` group is strided by ``world // size`` and any other group is a contiguous block.
    """
    size = max(1, min(group.size, world))
    if group.ranks is not None:
        return tuple(group.ranks) if rank in group.ranks else None
    if size >= world:
        return tuple(range(world))
    if group.rank_stride is not None:
        stride = group.rank_stride
        start = group.rank_start or 0
    elif group.role == "dp":
        stride, start = max(world // size, 1), 0
    else:
        stride, start = 1, 0
    span = stride * size
    if span > world or (stride > 1 and start >= stride):
        known = group.global_ranks()
        return tuple(known) if known is not None and rank in known else None
    block = ((rank - start) // span) * span + start if rank >= start else None
    if block is None:
        return None
    offset = (rank - block) % stride
    members = tuple(block + offset + i * stride for i in range(size))
    return members if rank in members and members[-1] < world else None


def _dtype_for(op: CommOp, nbytes: int, divisor: int) -> tuple[str, int]:
    """A (Kineto dtype, element size) that divides ``nbytes`` exactly (falling back to Byte)."""
    name, size = _DTYPES.get(op.dtype.lower(), ("Float", 4)) if isinstance(op.dtype, str) else ("Float", 4)
    if nbytes % (size * divisor) == 0:
        return name, size
    return "Byte", 1


def _fmt(x: float) -> float:
    return round(float(x), 3)


def _span(s: float, e: float) -> tuple[float, float]:
    """(ts, dur) rounded so that spans sharing an edge still share it after rounding."""
    a = _fmt(s)
    return a, round(_fmt(e) - a, 3)


class _Ids:
    def __init__(self):
        self.ext = 100
        self.corr = 1000

    def next_ext(self) -> int:
        self.ext += 1
        return self.ext

    def next_corr(self) -> int:
        self.corr += 1
        return self.corr


def kineto_header(job: Job, rank: int) -> dict:
    """The top-level fields of the trace of ``rank`` (everything but ``traceEvents``)."""
    if not isinstance(rank, int) or rank < 0 or rank >= job.world_size:
        raise WorkloadError(f"rank must be in 0..{job.world_size - 1} for job {job.name!r}, got {rank!r}")
    pg_config = []
    for i, g in enumerate(job.groups):
        members = _members(g, rank, job.world_size)
        if members is None:
            continue
        pg_config.append({"pg_name": str(i), "pg_desc": g.name, "backend_config": "cuda:nccl",
                          "pg_size": len(members), "ranks": list(members)})
    from fabric.catalog.devices import DEVICE_NAMES

    device = {"id": 0, "totalGlobalMem": 85_045_870_592, "computeMajor": 9, "computeMinor": 0,
              "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
              "sharedMemPerBlock": 49152, "numSms": 132}
    if job.compute_gpu:         # the GPU the job's compute is for; a job of unknown GPU names none
        device = {"id": 0, "name": f"{DEVICE_NAMES.get(job.compute_gpu, job.compute_gpu)} (synthetic)", **device}
    return {
        "schemaVersion": 1,
        "deviceProperties": [device],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": job.world_size,
                            "pg_count": len(pg_config), "pg_config": pg_config, "nccl_version": "2.21.5"},
        "record_shapes": 1,
        "with_stack": 0,
        "traceName": f"{job.name}_rank{rank}.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }


def _step_plan(job: Job, steps: int, rng: np.random.Generator) -> list[float]:
    """Compute time of each step, us."""
    base = job.compute_time_s * 1e6
    out = []
    for _ in range(steps):
        z = float(rng.standard_normal()) if job.compute_cv > 0 else 0.0
        out.append(max(base * (1.0 + job.compute_cv * z), 0.05 * base))
    return out


def iter_kineto_events(job: Job, rank: int, *, steps: int = 3, seed: int = 0,
                       compute_kernels_per_step: int = 48, compute_us: list[float] | None = None,
                       wait_us: dict | None = None, op_us: dict | None = None) -> Iterator[dict]:
    """Yield the trace events of ``rank`` one by one (see the module docstring); ``compute_us`` fixes step times,
    ``wait_us`` ({(step, collective index): us}) makes collectives wait for a late peer, ``op_us`` ({op index: us})
    sets kernel durations."""
    waits = _check_waits(wait_us)
    fixed = _check_op_us(op_us, len(job.ops))
    if steps < 1:
        raise WorkloadError(f"steps must be >= 1, got {steps}")
    if compute_kernels_per_step < 1:
        raise WorkloadError(f"compute_kernels_per_step must be >= 1, got {compute_kernels_per_step}")
    rng = np.random.default_rng([seed, rank])
    plan = compute_us if compute_us is not None else _step_plan(job, steps, rng)
    pid, tid_main, tid_comm = 10_000 + rank, 10_000 + rank, 10_100 + rank
    ids = _Ids()
    groups = {g.name: (i, g, _members(g, rank, job.world_size)) for i, g in enumerate(job.groups)}
    yield {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": f"python {pid}"}}
    yield {"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid_main, "args": {"name": "thread 1 (main)"}}
    yield {"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid_comm,
           "args": {"name": "thread 2 (autograd)"}}
    yield {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}
    t_cpu = _BASE_TS_US + 1000.0 * rank
    training = job.kind != "inference"
    kname_idx = 0
    for i in range(steps):
        occ = []
        op_index = []
        for k, op in enumerate(job.ops):
            gi = groups.get(op.group)
            if gi is None or gi[2] is None:
                continue
            c = float(op.count_per_step)
            n = math.floor(c * (i + 1) + 1e-9) - math.floor(c * i + 1e-9)
            occ.extend([(op, gi)] * n)
            op_index.extend([k] * n)
        durs = []
        for k, (op, (_, g, members)) in zip(op_index, occ):
            nb = _op_bytes(op, members, rank)
            durs.append(fixed[k] if k in fixed else
                        _LATENCY_US + nb * _bus_factor(op.kind, len(members)) / NOMINAL_BUSBW_BYTES_PER_S * 1e6)
        comp = plan[i]
        hidden = [op.overlap_fraction * d for (op, _), d in zip(occ, durs)]
        total_hidden = sum(hidden)
        if total_hidden > comp > 0:
            hidden = [h * comp / total_hidden for h in hidden]
        elif comp <= 0:
            hidden = [0.0] * len(hidden)
        free = max(comp - sum(hidden), 0.0)
        w = rng.uniform(0.5, 1.5, len(occ) + 1)
        pre = [free * x / w.sum() for x in w]
        wt = [waits.get((i, j), 0.0) for j in range(len(occ))]
        step_len = comp + sum(d - h for d, h in zip(durs, hidden)) + sum(wt)
        t_step = t_cpu
        if training:
            ts, dur = _span(t_step, t_step + step_len)
            yield {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": pid, "tid": tid_main,
                   "ts": ts, "dur": dur, "args": {"External id": ids.next_ext()}}
        g0 = t_step + _LEAD_US  # GPU time of the step's start
        t = g0
        for j, ((op, (gidx, g, members)), d, h) in enumerate(zip(occ, durs, hidden)):
            if wt[j] > 0:  # compute, then the kernel spins alone for the wait, then its transfer (h of it hidden)
                yield from _compute_region(t, pre[j], comp, compute_kernels_per_step, pid, tid_main, ids, kname_idx)
                yield from _compute_region(t + pre[j] + wt[j], h, comp, compute_kernels_per_step, pid, tid_main, ids,
                                           kname_idx + 1)
            else:
                yield from _compute_region(t, pre[j] + h, comp, compute_kernels_per_step, pid, tid_main, ids,
                                           kname_idx)
            kname_idx += 1
            yield from _comm_events(op, gidx, g, members, rank, t + pre[j], wt[j] + d, pid, tid_comm, ids)
            t = t + pre[j] + wt[j] + d
        yield from _compute_region(t, pre[-1], comp, compute_kernels_per_step, pid, tid_main, ids, kname_idx)
        kname_idx += 1
        t_cpu = t_step + step_len


def _check_op_us(op_us, n_ops: int) -> dict:
    if op_us is None:
        return {}
    if not isinstance(op_us, dict):
        raise WorkloadError(f"op_us must be a dict {{op index: microseconds}}, got {type(op_us).__name__}")
    for k, v in op_us.items():
        if not isinstance(k, int) or not 0 <= k < n_ops or not isinstance(v, (int, float)) or not v > 0:
            raise WorkloadError(f"op_us entry {k!r}: {v!r} must map an op index (0..{n_ops - 1}) to positive "
                                f"microseconds")
    return {k: float(v) for k, v in op_us.items()}


def _check_waits(wait_us) -> dict:
    if wait_us is None:
        return {}
    if not isinstance(wait_us, dict):
        raise WorkloadError(f"wait_us must be a dict {{(step, collective index): microseconds}}, got "
                            f"{type(wait_us).__name__}")
    out = {}
    for key, v in wait_us.items():
        ok_key = (isinstance(key, tuple) and len(key) == 2
                  and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in key))
        if not ok_key or isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1e12:
            raise WorkloadError(f"wait_us entry {key!r}: {v!r} must map (step, collective index) to microseconds "
                                f">= 0")
        out[key] = float(v)
    return out


def _op_bytes(op: CommOp, members, rank: int) -> int:
    if op.per_rank_bytes and members is not None and len(op.per_rank_bytes) == len(members) and rank in members:
        return int(op.per_rank_bytes[members.index(rank)])
    return int(op.bytes)


def _compute_region(t0: float, length: float, step_compute: float, per_step: int, pid, tid, ids: _Ids, salt: int):
    """Back-to-back compute kernels covering [t0, t0 + length) with their CPU ops and launches."""
    if length <= 0:
        return
    n = max(1, min(int(round(per_step * length / step_compute)) if step_compute > 0 else 1, 10_000))
    edges = [t0 + length * k / n for k in range(n + 1)]
    for k in range(n):
        s, e = edges[k], edges[k + 1]
        op_name, kernel = _COMPUTE_NAMES[(salt + k) % len(_COMPUTE_NAMES)]
        ext, corr = ids.next_ext(), ids.next_corr()
        c0 = s - _LEAD_US
        cdur = min(4.0, 0.4 * (e - s))
        yield {"ph": "X", "cat": "cpu_op", "name": op_name, "pid": pid, "tid": tid, "ts": _fmt(c0), "dur": _fmt(cdur),
               "args": {"External id": ext, "Record function id": 0, "Ev Idx": ext}}
        yield {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
               "ts": _fmt(c0 + 0.25 * cdur), "dur": _fmt(0.5 * cdur),
               "args": {"External id": ext, "cbid": 211, "correlation": corr}}
        yield {"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": _fmt(c0 + 0.25 * cdur), "cat": "ac2g",
               "name": "ac2g"}
        ks, kd = _span(s, e)
        yield {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": _COMPUTE_STREAM, "ts": ks,
               "dur": kd, "args": {"External id": ext, "queued": 0, "device": 0, "context": 1,
                                            "stream": _COMPUTE_STREAM, "correlation": corr, "registers per thread": 168,
                                            "shared memory": 213_000, "blocks per SM": 1, "warps per SM": 12,
                                            "grid": [132, 1, 1], "block": [384, 1, 1],
                                            "est. achieved occupancy %": 19}}
        yield {"ph": "f", "id": corr, "pid": 0, "tid": _COMPUTE_STREAM, "ts": _fmt(s), "cat": "ac2g", "name": "ac2g",
               "bp": "e"}


def _comm_args(op: CommOp, gidx: int, g: ProcessGroup, members, rank: int, nbytes: int, rng_splits) -> dict:
    p = len(members)
    kind = op.kind
    if kind == "all_gather":
        dname, es = _dtype_for(op, nbytes, 1)
        n_out = nbytes // es
        n_in = n_out // p
    elif kind == "reduce_scatter":
        dname, es = _dtype_for(op, nbytes, 1)
        n_in = nbytes // es
        n_out = n_in // p
    else:
        dname, es = _dtype_for(op, nbytes, 1)
        n_in = n_out = nbytes // es
    in_split = out_split = "[]"
    if kind == "all_to_allv":
        splits = rng_splits(n_in, p)
        in_split = "[" + ", ".join(str(x) for x in splits) + "]"
        out_split = in_split
    return {"Collective name": _COLL_NAME[kind], "dtype": dname, "In msg nelems": n_in, "Out msg nelems": n_out,
            "Group size": p, "In split size": in_split, "Out split size": out_split,
            "Global rank start": members[0], "Global rank stride": (members[1] - members[0]) if p > 1 else 1,
            "Process Group Name": str(gidx), "Process Group Description": g.name,
            "Process Group Ranks": "[" + ", ".join(str(r) for r in members) + "]", "Rank": rank}


def _uneven_splits(n: int, p: int) -> list[int]:
    """n elements over p peers, deliberately uneven (deterministic) so the trace reads as all_to_allv."""
    if p <= 1:
        return [n]
    base = n // p
    splits = [base] * p
    splits[-1] += n - base * p
    if base >= 2 and len(set(splits)) == 1:
        splits[0] -= 1
        splits[-1] += 1
    return splits


def _comm_events(op: CommOp, gidx: int, g: ProcessGroup, members, rank: int, g_start: float, d: float, pid, tid,
                 ids: _Ids):
    nbytes = _op_bytes(op, members, rank)
    args = _comm_args(op, gidx, g, members, rank, nbytes, _uneven_splits)
    ext, corr = ids.next_ext(), ids.next_corr()
    c0 = g_start - _LEAD_US
    cdur = min(0.5 * _LEAD_US, 0.5 * d)
    yield {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid, "ts": _fmt(c0),
           "dur": _fmt(cdur), "args": dict(args, **{"External id": ext, "Record function id": ext, "Ev Idx": ext})}
    yield {"ph": "X", "cat": "user_annotation", "name": _ANNOTATION[op.kind], "pid": pid, "tid": tid,
           "ts": _fmt(c0 + 0.1 * cdur), "dur": _fmt(0.8 * cdur), "args": {"External id": ext + 0, "Ev Idx": ext}}
    yield {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": pid, "tid": tid,
           "ts": _fmt(c0 + 0.3 * cdur), "dur": _fmt(0.4 * cdur),
           "args": {"External id": ext, "cbid": 430, "correlation": corr}}
    yield {"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": _fmt(c0 + 0.3 * cdur), "cat": "ac2g", "name": "ac2g"}
    kernel = (f"ncclDevKernel_{_KERNEL[op.kind]}_{'bf16' if args['dtype'] == 'BFloat16' else 'f32'}_RING_LL"
              f"(ncclDevKernelArgsStorage<4096ul>)")
    kargs = {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": _COMM_STREAM,
             "correlation": corr, "registers per thread": 96, "shared memory": 87_568, "blocks per SM": 0.12,
             "warps per SM": 2.0, "grid": [16, 1, 1], "block": [640, 1, 1], "est. achieved occupancy %": 3}
    kargs.update(args)
    ks, kd = _span(g_start, g_start + d)
    yield {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": _COMM_STREAM, "ts": ks,
           "dur": kd, "args": kargs}
    yield {"ph": "f", "id": corr, "pid": 0, "tid": _COMM_STREAM, "ts": _fmt(g_start), "cat": "ac2g", "name": "ac2g",
           "bp": "e"}


def _plan_and_header(job: Job, rank: int, steps: int, seed: int):
    if not isinstance(job, Job):
        raise WorkloadError(f"expected a Job, got {type(job).__name__}")
    header = kineto_header(job, rank)
    rng = np.random.default_rng([seed, rank])
    plan = _step_plan(job, steps, rng)
    header["fabricSynthetic"] = {"job": job.name, "rank": rank, "steps": steps, "seed": seed,
                                 "compute_us": [round(x, 3) for x in plan],
                                 "note": "synthetic trace written by fabric.workload.kineto_writer"}
    return header, plan


def workload_to_kineto(job: Job, rank: int, *, steps: int = 3, seed: int = 0,
                       compute_kernels_per_step: int = 48, wait_us: dict | None = None,
                       op_us: dict | None = None) -> dict:
    """The Kineto trace (a JSON-ready dict) of ``rank`` of ``job`` over ``steps`` profiler steps.

    The same (job, rank, steps, seed) always gives the same trace.

    Examples
    --------
    >>> from fabric.workload.model import CommOp, Job, ProcessGroup
    >>> job = Job("j", world_size=2, groups=(ProcessGroup("dp", 2, "dp"),),
    ...           ops=(CommOp("all_reduce", 1 << 20, "dp", 2.0),), compute_time_s=0.01)
    >>> t = workload_to_kineto(job, 0, steps=2)
    >>> sum(1 for e in t["traceEvents"] if e.get("name") == "record_param_comms")
    4
    """
    header, plan = _plan_and_header(job, rank, steps, seed)
    events = list(iter_kineto_events(job, rank, steps=steps, seed=seed,
                                     compute_kernels_per_step=compute_kernels_per_step,
                                     compute_us=[round(x, 3) for x in plan], wait_us=wait_us, op_us=op_us))
    return dict(header, traceEvents=events)


def write_kineto(fp: IO[str], job: Job, rank: int, *, steps: int = 3, seed: int = 0,
                 compute_kernels_per_step: int = 48, wait_us: dict | None = None, op_us: dict | None = None) -> int:
    """Stream the trace of ``rank`` to the text file ``fp`` without building it in memory; returns characters."""
    header, plan = _plan_and_header(job, rank, steps, seed)
    n = 0
    head = json.dumps(header, indent=2)
    chunk = head[:-2] + ',\n  "traceEvents": [\n'
    fp.write(chunk)
    n += len(chunk)
    first = True
    for ev in iter_kineto_events(job, rank, steps=steps, seed=seed, compute_kernels_per_step=compute_kernels_per_step,
                                 compute_us=[round(x, 3) for x in plan], wait_us=wait_us, op_us=op_us):
        s = ("  " if first else ",\n  ") + json.dumps(ev)
        first = False
        fp.write(s)
        n += len(s)
    tail = "\n  ]\n}\n"
    fp.write(tail)
    return n + len(tail)
