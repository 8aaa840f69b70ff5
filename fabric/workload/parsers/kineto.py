"""PyTorch profiler (Kineto) JSON traces -> a training (or inference) :class:`~fabric.workload.model.Job`.

What is read
------------
- Collective calls. NEW format (PyTorch >= 2.1): ``cpu_op`` ``record_param_comms`` with ``Collective name``,
  ``In msg nelems``/``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group Name`` (or ``... ID``),
  ``Process Group Ranks``, ``In split size``. OLD format: the ``nccl:<op>`` ``user_annotation`` with ``Input Dims``
  and ``Input type`` (the process group is not recorded: the world group is assumed). NCCL kernels whose CPU call
  is missing but whose args carry ``Collective name`` are read from the kernel args.
- Bytes follow the model's convention (see :mod:`fabric.workload.model`): all_gather = output bytes (old format:
  input x group size), reduce_scatter = input bytes, all_to_all(v) = total send bytes; ``recv`` calls are not
  counted (the matching ``send`` on the peer is).
- Steps: ``ProfilerStep#N`` windows (CPU side). A call belongs to the step whose window holds its CPU start;
  ``count_per_step`` = occurrences / steps. Calls outside every window are left out (with a warning).
- Collective kernels are told by name: NCCL's and RCCL's own (``nccl...``/``rccl...``, including the generic
  ``ncclDevKernel_Generic`` that names no collective) and RCCL's MSCCL ``mscclKernel_...``; every other kernel, on
  any stream (HIP or CUDA), is compute.
- Compute time of a step = ProfilerStep duration minus the *exposed transfer* time inside that ProfilerStep span:
  the part of the union of the collective kernels running inside the span (clipped to it, whichever step
  launched them: a rank whose CPU runs ahead of its GPU has one step's kernels spinning into the next span) not
  overlapped by compute kernels of any stream of the same device, where a kernel that waited for a late peer counts
  only its transfer part. So a step's compute is never below its compute kernels' busy time inside the span, nor
  above the span. A collective ends at about the same time on every member, so when ranks are merged the
  shortest kernel of one call over the traced ranks (the last rank to arrive) is its transfer and the rest of
  each rank's kernel is waiting (load imbalance or compute elsewhere, which a perfect network would not remove):
  that waiting stays in compute. With one rank (or calls that do not pair up, uneven all_to_allv sizes, send/recv)
  waiting cannot be told from transfer and the whole kernel counts as communication (a note says so). So compute +
  exposed transfer reproduces the measured step time; idle/CPU-bound gaps count as compute. The GPU's busy time
  (union of non-communication kernels) is reported in the job notes for comparison. ``compute_cv`` is the
  step-to-step spread within each rank, pooled over ranks (0 with a warning when each rank has one step: the
  rank-to-rank difference of one step is waiting and phase, not jitter).
- ``overlap_fraction`` of an op = share of its NCCL kernels' transfer time overlapped by compute kernels (any
  other stream of the same device), averaged over occurrences and ranks.
- No ``ProfilerStep#`` markers: the trace is treated as one request window (job kind "inference", counts per
  trace, compute = GPU activity span minus exposed NCCL time) and a warning says so.
- Never dropped silently: NCCL kernels with no annotation (size unknown), communication kernels not issued through
  NCCL (DeepEP dispatch/combine, ``multimem_all_reduce``, vLLM ``cross_device_reduce``, custom all-reduce ...),
  unknown collective names and unknown dtypes become :class:`~fabric.workload.model.UnparsedComm` with a reason.

Several rank files of one job
-----------------------------
:func:`parse_groups` puts files into jobs: files whose paths are equal once every run of digits is masked (e.g.
``worker#_step_#.#.pt.trace.json``) are rank files of one job. Within such a set every file must carry
``distributedInfo.rank``, the same ``world_size`` and distinct ranks, or the whole set fails with an error naming
the disagreement (no silent merge). The collectives of one process group are paired across ranks by position
(collectives on a communicator run in the same order on every member); per-rank sizes of all_to_allv are kept in
``per_rank_bytes`` (group-rank order) when every rank of the group is present. When ranks disagree on the
sequence (e.g. down-sampled traces) counts are averaged over ranks and a warning says so.

Process-group roles (``role_source="inferred"``)
------------------------------------------------
all_to_all(v) on a group -> "ep" (expert / embedding parallel), except a world-spanning group that also carries
other collectives -> "world"; send/recv only -> "pp"; a world-spanning group -> "dp"; a sub-group of contiguous
ranks (stride 1, e.g. Megatron tensor parallel; an FSDP/HSDP shard group looks the same and also lives inside a
node) -> "tp"; a strided sub-group (one rank per model-parallel slice) -> "dp"; otherwise "unknown". When the
members differ from rank to rank (one group per slice) the common stride is still used.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import statistics
from dataclasses import dataclass, field

from fabric.errors import FabricError, ParseError
from fabric.limits import Limits
from fabric.workload.io import stream_trace
from fabric.workload.model import CommOp, Job, ProcessGroup, UnparsedComm, Workload, validate_job

__all__ = [
    "FORMAT", "sniff", "parse", "parse_groups", "load_rank", "merge_ranks", "merge_rank_files", "RankTrace",
    "DTYPE_BYTES", "dtype_info", "collective_kind", "infer_group_role", "job_key", "job_name_for",
]

FORMAT = "kineto"
#: Workload fact holding the measured step time in seconds (mean ProfilerStep duration over ranks and steps).
MEASURED_STEP_FACT = "measured step time (s)"

# ---------------------------------------------------------------- vocabularies

#: element size and canonical label of every dtype spelling seen in traces (ScalarType names and C++ type names)
DTYPE_BYTES: dict[str, tuple[int, str]] = {}
for _names, _size, _label in (
    (("float", "float32", "fp32"), 4, "float32"),
    (("double", "float64", "fp64"), 8, "float64"),
    (("half", "float16", "fp16", "c10::half"), 2, "float16"),
    (("bfloat16", "bf16", "c10::bfloat16"), 2, "bfloat16"),
    (("long", "long int", "int64", "long long", "int64_t"), 8, "int64"),
    (("int", "int32", "int32_t"), 4, "int32"),
    (("short", "short int", "int16"), 2, "int16"),
    (("char", "signed char", "int8", "int8_t"), 1, "int8"),
    (("byte", "unsigned char", "uint8", "uint8_t"), 1, "uint8"),
    (("bool",), 1, "bool"),
    (("uint16", "unsigned short"), 2, "uint16"),
    (("uint32", "unsigned int"), 4, "uint32"),
    (("uint64", "unsigned long", "unsigned long int"), 8, "uint64"),
    (("complexfloat", "complex64", "c10::complex<float>"), 8, "complex64"),
    (("complexdouble", "complex128", "c10::complex<double>"), 16, "complex128"),
    (("complexhalf", "c10::complex<c10::half>"), 4, "complex32"),
    (("float8_e4m3fn", "c10::float8_e4m3fn", "float8_e4m3fnuz", "c10::float8_e4m3fnuz"), 1, "float8_e4m3"),
    (("float8_e5m2", "c10::float8_e5m2", "float8_e5m2fnuz", "c10::float8_e5m2fnuz"), 1, "float8_e5m2"),
    (("qint8", "c10::qint8"), 1, "qint8"),
    (("quint8", "c10::quint8"), 1, "quint8"),
    (("qint32", "c10::qint32"), 4, "qint32"),
):
    for _n in _names:
        DTYPE_BYTES[_n] = (_size, _label)


def dtype_info(name) -> tuple[int, str] | None:
    """(element bytes, canonical label) of a trace dtype spelling, or None when unknown."""
    if not isinstance(name, str):
        return None
    return DTYPE_BYTES.get(name.strip().lower())


_KINDS = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "all_reduce_coalesced": "all_reduce", "allreduce_sparse": "all_reduce",
    "allgather": "all_gather", "all_gather": "all_gather", "_allgather_base": "all_gather",
    "_all_gather_base": "all_gather", "all_gather_into_tensor": "all_gather", "allgather_coalesced": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather", "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "all_to_all": "all_to_all", "alltoall": "all_to_all", "alltoall_base": "all_to_all",
    "all_to_all_single": "all_to_all", "all_to_allv": "all_to_allv", "alltoallv": "all_to_allv",
    "broadcast": "broadcast", "broadcast_coalesced": "broadcast", "reduce": "reduce",
    "send": "send_recv", "recv": "recv", "recvanysource": "recv",
    "barrier": "barrier",
}
#: bookkeeping records that are not communication
_NOT_COMM = {"wait", "init", "startcoalescing", "endcoalescing", "coalesced", "split", "abort", "shutdown",
             "comm_split", "monitoredbarrier", ""}
#: collectives that exist but that the evaluator does not model
_NOT_MODELLED = {"gather", "scatter", "allgather_object", "gather_object", "scatter_object"}


def collective_kind(name: str) -> str | None:
    """Model kind of a collective name from a trace ("allreduce", "nccl:_all_gather_base" ...), else None.

    Returns "recv" for receive calls (not counted, see module doc) and "" for bookkeeping records.
    """
    n = name.strip().lower()
    if n.startswith("nccl:"):
        n = n[5:]
    if n.startswith("c10d::"):
        n = n[6:].rstrip("_")
    if n in _NOT_COMM:
        return ""
    return _KINDS.get(n)


# ---------------------------------------------------------------- kernel classification

#: collective kernels of NCCL and RCCL, by name: the library's own prefix (``ncclKernel_AllReduce_RING_LL_Sum_float``,
#: ``ncclDevKernel_<Coll>_..`` since NCCL 2.19, ``ncclAllReduceRingLLKernel_sum_f32`` before 2.4,
#: ``ncclDevKernel_Generic[_N]`` in NCCL and RCCL, which says nothing about the collective, ``rccl...``), and RCCL's
#: MSCCL algorithms ``mscclKernel_<Op>_<type>_<proto>`` (run inside the NCCL API call, unlike MSCCL++)
_NCCL_KERNEL = re.compile(r"^(?:void\s+)?(?:(nccl|rccl)|(msccl)(?!pp))\w*", re.I)
_NCCL_COLL = re.compile(r"(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv|AllToAll|Generic)", re.I)
_OTHER_COMM = (
    (re.compile(r"deep_?ep|dpsk::ep|\bep::|internode|intranode", re.I),
     re.compile(r"dispatch|combine|notify", re.I), "DeepEP expert-parallel dispatch/combine kernel"),
    (re.compile(r"multimem_all_?reduce|multimem_all_?gather|multimem", re.I), None,
     "NVLS multimem (symmetric-memory) collective kernel"),
    (re.compile(r"cross_device_reduce|custom_?all_?reduce|one_?shot_?all_?reduce|two_?shot_?all_?reduce|"
                r"allreduce_fusion|lamport", re.I), None, "custom all-reduce kernel (vLLM/TensorRT-LLM style)"),
    (re.compile(r"nvshmem|mscclpp|symm_mem", re.I), None, "NVSHMEM/MSCCL++ communication kernel"),
    (re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all", re.I), None,
     "communication kernel not issued through NCCL"),
)
_NCCL_CANON = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv", "AllToAll", "Generic")
_NCCL_NAME_KIND = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "send/recv or all_to_all",
}

_CLASS_COMPUTE, _CLASS_NCCL, _CLASS_OTHER = 0, 1, 2


def _classify_kernel(name: str) -> tuple[int, str, str]:
    """(class, short label, reason) of a kernel name."""
    m = _NCCL_KERNEL.match(name)
    if m:
        lib = (m.group(1) or m.group(2)).lower()
        c = _NCCL_COLL.search(m.group(0))
        coll = c.group(1) if c else "Generic"
        coll = {k.lower(): k for k in _NCCL_CANON}.get(coll.lower(), coll)
        return _CLASS_NCCL, f"{lib} {coll}", _NCCL_NAME_KIND.get(coll.lower(), coll)
    for pat, pat2, reason in _OTHER_COMM:
        if pat.search(name) and (pat2 is None or pat2.search(name)):
            return _CLASS_OTHER, _short_kernel_name(name), reason
    return _CLASS_COMPUTE, "", ""


def _short_kernel_name(name: str) -> str:
    s = name.split("(", 1)[0]
    s = re.sub(r"<.*", "", s)
    s = s.replace("void ", "").strip()
    return s[:120] or name[:120]


# ---------------------------------------------------------------- small parsing helpers

_INT_LIST = re.compile(r"-?\d+")


def _int_list(v) -> list[int] | None:
    """A list of ints from a JSON list or its string form "[0, 1, 2]"; None when absent/malformed."""
    if v is None:
        return None
    if isinstance(v, list):
        out = []
        for x in v:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                return None
            out.append(int(x))
        return out
    if isinstance(v, str):
        if "..." in v:
            return None
        return [int(x) for x in _INT_LIST.findall(v)][:1_000_000]
    return None


def _as_int(v, *, lo: int = 0) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v >= lo else None
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v) if v >= lo else None
    if isinstance(v, str) and v.strip().isascii() and v.strip().lstrip("-").isdigit():
        i = int(v.strip())
        return i if i >= lo else None
    return None


def _numel(dims) -> int | None:
    """Elements of one tensor from its dims list ([] means a scalar tensor: 1 element)."""
    if not isinstance(dims, list):
        return None
    n = 1
    for d in dims:
        d = _as_int(d)
        if d is None:
            return None
        n *= d
    return n


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


# ---------------------------------------------------------------- per-rank extraction


@dataclass
class _Call:
    """One collective call of one rank."""

    coll: str                  # name as in the trace ("allreduce", "nccl:all_to_all")
    kind: str                  # model kind ("" when it could not be turned into an op)
    nbytes: int | None
    dtype: str
    group: str                 # process-group key ("" = the world group of an old-format trace)
    group_size: int | None
    group_ranks: tuple[int, ...] | None
    group_desc: str | None
    tid: object
    ts: float
    end: float
    uneven: bool = False
    reason: str = ""           # why it is unparsed, when kind == ""
    per_rank_input: bool = False  # nbytes is the per-rank input of an all_gather: x group size when merged
    step: int = -1
    kernel_us: float = 0.0
    overlap_us: float = 0.0
    kernel_spans: list = field(default_factory=list)
    wait_us: float = 0.0       # part of the kernel time spent waiting for the slowest peer (set when merging ranks)


@dataclass
class RankTrace:
    """What one Kineto file says about one rank (compact; the event list itself is not kept)."""

    name: str
    rank: int | None
    world_size: int | None
    backend: str | None
    pg_config: dict[str, dict]          # pg_name -> {"size", "ranks", "desc"}
    steps: list[tuple[float, float]]    # CPU ProfilerStep windows (us)
    calls: list[_Call]                  # calls inside the steps (all calls when there are no steps)
    compute_us: list[float]             # compute time per step (us)
    busy_us: float                      # union of compute kernels over the analysed window(s)
    window_us: float                    # total analysed time (sum of steps or the GPU span)
    unparsed: list[UnparsedComm]
    warnings: list[str]
    trace_name: str | None = None
    # the analysed windows (ProfilerStep spans, or the one request window) as (start, end) us and their lengths,
    # and the collective-kernel spans (device, start, end) of no kept call (kernels without an annotation, calls
    # outside every step); the kept calls' spans are reached through ``calls``. Kept so that compute per window can
    # be recomputed once the waiting part of each call is known (merge_ranks).
    window_len_us: list[float] = field(default_factory=list)
    windows: list[tuple[float, float]] = field(default_factory=list)
    comm_other: list[tuple] = field(default_factory=list)
    compute_iv: dict = field(default_factory=dict)      # device -> merged compute-kernel intervals
    device_name: str | None = None      # the GPU the trace names (deviceProperties), when it names one


def _hk(v):
    """A hashable stand-in for an id field (ints and strings as they are; anything else by its repr)."""
    if v is None or type(v) is int or type(v) is str:
        return v
    return repr(v)


class _Collector:
    """Receives trace events one by one and keeps only what the parser needs."""

    __slots__ = ("steps", "rpc", "ann", "launch", "nccl", "other", "compute", "kclass", "bad_events")

    def __init__(self):
        self.steps: dict[str, tuple[float, float]] = {}
        self.rpc: list = []      # (tid, ts, end, args)
        self.ann: list = []      # (tid, ts, end, name, args)
        self.launch: dict = {}   # correlation -> (tid, ts)
        self.nccl: list = []     # (device, stream, ts, end, corr, ext_id, args-or-None, label)
        self.other: dict = {}    # label -> [count, total_us, reason]
        self.compute: dict = {}  # device -> list of (ts, end)
        self.kclass: dict = {}
        self.bad_events = 0

    def __call__(self, ev):
        if type(ev) is not dict:
            self.bad_events += 1
            return
        if ev.get("ph") != "X":
            return
        cat = ev.get("cat")
        name = ev.get("name")
        if type(name) is not str:
            return
        if cat == "kernel":
            ts = ev.get("ts")
            dur = ev.get("dur")
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or not dur >= 0:
                self.bad_events += 1
                return
            args = ev.get("args")
            if type(args) is not dict:
                args = {}
            cls = self.kclass.get(name)
            if cls is None:
                cls = self.kclass[name] = _classify_kernel(name)
            dev = _hk(args.get("device", ev.get("pid")))
            if cls[0] == _CLASS_COMPUTE:
                lst = self.compute.get(dev)
                if lst is None:
                    lst = self.compute[dev] = []
                lst.append((ts, ts + dur))
            elif cls[0] == _CLASS_NCCL:
                self.nccl.append((dev, _hk(args.get("stream", ev.get("tid"))), ts, ts + dur,
                                  _hk(args.get("correlation")), _hk(args.get("External id")),
                                  args if "Collective name" in args else None, cls[1]))
            else:
                rec = self.other.get(cls[1])
                if rec is None:
                    rec = self.other[cls[1]] = [0, 0.0, cls[2]]
                rec[0] += 1
                rec[1] += dur
            return
        if cat == "cuda_runtime" or cat == "cuda_driver" or cat == "hip_runtime":
            if "aunch" in name:
                args = ev.get("args")
                if type(args) is dict:
                    corr = _hk(args.get("correlation"))
                    if corr is not None and isinstance(ev.get("ts"), (int, float)):
                        self.launch[corr] = (_hk(ev.get("tid")), ev["ts"])
            return
        if cat == "cpu_op" or cat == "user_annotation":  # (GPU-side copies of annotations are not needed)
            c0 = name[:1]
            if c0 == "P" and name.startswith("ProfilerStep#"):
                ts, dur = ev.get("ts"), ev.get("dur")
                if isinstance(ts, (int, float)) and isinstance(dur, (int, float)) and dur >= 0:
                    prev = self.steps.get(name)
                    if prev is None or (prev[1] - prev[0]) < dur:
                        self.steps[name] = (float(ts), float(ts) + float(dur))
                return
            if c0 == "r" and name == "record_param_comms":
                args = ev.get("args")
                ts, dur = ev.get("ts"), ev.get("dur")
                if type(args) is dict and isinstance(ts, (int, float)) and isinstance(dur, (int, float)):
                    self.rpc.append((_hk(ev.get("tid")), float(ts), float(ts) + max(float(dur), 0.0), args))
                return
            if c0 == "n" and name.startswith("nccl:"):
                args = ev.get("args")
                ts, dur = ev.get("ts"), ev.get("dur")
                if isinstance(ts, (int, float)) and isinstance(dur, (int, float)):
                    self.ann.append((_hk(ev.get("tid")), float(ts), float(ts) + max(float(dur), 0.0), name,
                                     args if type(args) is dict else {}))


def sniff(head: bytes, name: str) -> bool:
    """True for a JSON object that looks like a Chrome/Kineto trace (``traceEvents``, or Kineto's header keys)."""
    h = head.lstrip()
    if h.startswith(b"\xef\xbb\xbf"):
        h = h[3:].lstrip()
    if not h.startswith(b"{"):
        return False
    if b'"traceEvents"' in head:
        return True
    return b'"schemaVersion"' in head and (b'"deviceProperties"' in head or b'"distributedInfo"' in head)


def _fail(source: str, msg: str, where=None) -> ParseError:
    return ParseError(msg, source=source, line=where)


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


def _distributed_info(di, name):
    rank = world = backend = None
    pgs: dict[str, dict] = {}
    if di is None:
        return rank, world, backend, pgs
    if not isinstance(di, dict):
        raise _fail(name, "'distributedInfo' must be an object", "distributedInfo")
    if "rank" in di:
        rank = _as_int(di.get("rank"))
        if rank is None:
            raise _fail(name, f"distributedInfo.rank must be a whole number >= 0, got {di.get('rank')!r}",
                        "distributedInfo.rank")
    if "world_size" in di:
        world = _as_int(di.get("world_size"), lo=1)
        if world is None or world > 10_000_000:
            raise _fail(name, f"distributedInfo.world_size must be a whole number in 1..10000000, got "
                              f"{di.get('world_size')!r}", "distributedInfo.world_size")
    if rank is not None and world is not None and rank >= world:
        raise _fail(name, f"distributedInfo.rank {rank} is not below world_size {world}", "distributedInfo.rank")
    backend = di.get("backend") if isinstance(di.get("backend"), str) else None
    cfg = di.get("pg_config")
    if isinstance(cfg, dict):  # some versions write {pg_name: {...}}
        cfg = [dict(v, pg_name=k) for k, v in cfg.items() if isinstance(v, dict)]
    if isinstance(cfg, list):
        for i, pg in enumerate(cfg):
            if not isinstance(pg, dict):
                continue
            key = pg.get("pg_name")
            if key is None:
                continue
            key = str(key)
            ranks = _int_list(pg.get("ranks"))
            size = _as_int(pg.get("pg_size"), lo=1)
            if size is None and ranks:
                size = len(ranks)
            if ranks is not None and (size is None or len(ranks) != size):
                ranks = None
            if ranks is not None and world is not None and any(r < 0 or r >= world for r in ranks):
                raise _fail(name, f"process group {key!r} lists ranks outside world_size {world}",
                            f"distributedInfo.pg_config[{i}].ranks")
            desc = pg.get("pg_desc")
            pgs[key] = {"size": size, "ranks": tuple(ranks) if ranks else None,
                        "desc": desc if isinstance(desc, str) and desc else None}
    return rank, world, backend, pgs


def _new_format_call(args: dict, tid, ts: float, end: float, world) -> _Call | None:
    coll = args.get("Collective name")
    if not isinstance(coll, str):
        return None
    kind = collective_kind(coll)
    if kind == "":
        return None
    pg = args.get("Process Group Name", args.get("Process Group ID"))
    gkey = "" if pg is None else str(pg)
    gsize = _as_int(args.get("Group size"), lo=1)
    if gsize is not None and gsize > 10_000_000:
        gsize = None                         # implausible: ignored (never expanded into a member list)
    granks = _int_list(args.get("Process Group Ranks"))
    if granks is not None and (not granks or (gsize is not None and len(granks) != gsize)):
        granks = None
    if granks is None and gsize:
        start, stride = _as_int(args.get("Global rank start")), _as_int(args.get("Global rank stride"), lo=1)
        if start is not None and stride is not None:
            granks = [start + i * stride for i in range(gsize)]
    if gkey == "" and gsize is not None and world is not None and gsize != world:
        gkey = f"size{gsize}"
    desc = args.get("Process Group Description")
    call = _Call(coll=coll, kind=kind or "", nbytes=None, dtype="unknown", group=gkey, group_size=gsize,
                 group_ranks=tuple(granks) if granks else None,
                 group_desc=desc if isinstance(desc, str) and desc else None, tid=tid, ts=ts, end=end)
    if kind is None:
        low = coll.strip().lower()
        call.reason = (f"collective {coll!r} is not modelled by fabric" if low in _NOT_MODELLED
                       else f"unknown collective name {coll!r}")
        return call
    if kind == "recv":
        call.kind = "recv"
        return call
    dt = dtype_info(args.get("dtype"))
    if dt is None:
        call.kind = ""
        call.reason = f"unknown dtype {args.get('dtype')!r}: element size unknown, bytes not computed"
        return call
    size, label = dt
    call.dtype = label
    n_in = _as_int(args.get("In msg nelems"))
    n_out = _as_int(args.get("Out msg nelems"))
    if n_in is None and n_out is None:
        dims = args.get("Input Dims")
        if isinstance(dims, list) and dims:
            n_in = _numel(dims[0])
    if kind == "all_gather":
        n = n_out if n_out else (n_in * gsize if n_in is not None and gsize else None)
    elif kind == "reduce_scatter":
        n = n_in if n_in else (n_out * gsize if n_out is not None and gsize else None)
    else:
        n = n_in if n_in is not None else n_out
    if n is None:
        call.kind = ""
        call.reason = "message size missing (no 'In msg nelems'/'Out msg nelems')"
        return call
    call.nbytes = n * size
    if kind in ("all_to_all", "all_to_allv"):
        splits = _int_list(args.get("In split size"))
        if splits and len(set(splits)) > 1:
            call.uneven = True
            call.kind = "all_to_allv"
    return call


def _old_format_call(args: dict, tid, ts: float, end: float, name: str, world) -> _Call:
    coll = name
    kind = collective_kind(name)
    call = _Call(coll=coll, kind=kind or "", nbytes=None, dtype="unknown", group="", group_size=world,
                 group_ranks=None, group_desc=None, tid=tid, ts=ts, end=end)
    if kind is None:
        low = name[5:].strip().lower()
        call.reason = (f"collective {name!r} is not modelled by fabric" if low in _NOT_MODELLED
                       else f"unknown collective annotation {name!r}")
        return call
    if kind in ("", "recv"):
        return call
    dims = args.get("Input Dims")
    types = args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list) or not dims:
        call.kind = ""
        call.reason = "old-format annotation without 'Input Dims'/'Input type': size unknown"
        return call
    total = 0
    label = None
    for d, t in zip(dims, types):
        info = dtype_info(t)
        if info is None:
            continue
        n = _numel(d)
        if n is None:
            continue
        total += n * info[0]
        label = label or info[1]
        if kind not in ("all_reduce",):  # only coalesced all-reduce lists several tensors
            break
    if label is None:
        call.kind = ""
        call.reason = f"unknown dtype {types[:1]!r}: element size unknown, bytes not computed"
        return call
    call.dtype = label
    call.nbytes = total
    call.per_rank_input = kind == "all_gather"  # the annotation records the input; x group size when merged
    return call


def _calls(col: _Collector, name: str, world) -> tuple[list[_Call], list[UnparsedComm]]:
    """Turn the collected events into calls, matching NCCL kernels to them."""
    new_format = any("Collective name" in a for (_, _, _, a) in col.rpc)
    calls: list[_Call] = []
    by_ext: dict = {}
    if new_format:
        for tid, ts, end, args in col.rpc:
            c = _new_format_call(args, tid, ts, end, world)
            if c is None:
                continue
            calls.append(c)
            ext = _hk(args.get("External id"))
            if ext is not None:
                by_ext[ext] = c
    else:
        for tid, ts, end, nm, args in col.ann:
            calls.append(_old_format_call(args, tid, ts, end, nm, world))
    # per-thread index for "which call was running when this kernel was launched"
    by_tid: dict = {}
    for c in calls:
        by_tid.setdefault(c.tid, []).append(c)
    tid_index = {}
    for tid, lst in by_tid.items():
        lst.sort(key=lambda c: c.ts)
        tid_index[tid] = ([c.ts for c in lst], lst)

    orphan: dict[str, list] = {}
    for dev, stream, ts, end, corr, ext, kargs, label in col.nccl:
        call = None
        if ext is not None and by_ext:
            call = by_ext.get(ext)
        launch = col.launch.get(corr) if corr is not None else None
        if call is None and launch is not None:
            idx = tid_index.get(launch[0])
            if idx is not None:
                i = bisect.bisect_right(idx[0], launch[1]) - 1
                # the innermost call whose CPU interval holds the launch
                while i >= 0:
                    c = idx[1][i]
                    if c.ts <= launch[1] <= c.end:
                        call = c
                        break
                    if launch[1] - c.ts > 10_000_000:  # 10 s back: give up
                        break
                    i -= 1
        if call is None and kargs is not None:
            t0 = launch[1] if launch is not None else ts
            call = _new_format_call(kargs, ("kernel", dev, stream), t0, t0, world)
            if call is not None:
                calls.append(call)
                ext_key = _hk(kargs.get("External id"))
                if ext_key is not None and ext_key not in by_ext:
                    by_ext[ext_key] = call
        if call is None:
            rec = orphan.setdefault(label, [0, 0.0, []])
            rec[0] += 1
            rec[1] += end - ts
            rec[2].append((dev, ts, end, launch[1] if launch is not None else None))
            continue
        call.kernel_spans.append((dev, ts, end))
    unparsed: list[UnparsedComm] = []
    col_orphans = []
    for label, (count, us, spans) in sorted(orphan.items()):
        unparsed.append(UnparsedComm(
            source=name, name=f"{label} kernel", count=count, total_time_s=us * 1e-6,
            reason="NCCL kernel with no record_param_comms / nccl:* annotation: the collective's size is not in "
                   "the trace (no bytes invented)"))
        col_orphans.extend(spans)
    for label, (count, us, reason) in sorted(col.other.items()):
        unparsed.append(UnparsedComm(
            source=name, name=label, count=count, total_time_s=us * 1e-6,
            reason=f"{reason}: size not recorded, not turned into an op; its time stays in compute_time_s"))
    col.nccl = col_orphans  # kept only for the exposed-time accounting
    return calls, unparsed


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


def _device_name(props) -> str | None:
    """The GPU a Kineto trace's ``deviceProperties`` names: the one name every listed device has, else None."""
    if not isinstance(props, list):
        return None
    names = {p["name"].strip() for p in props if isinstance(p, dict) and isinstance(p.get("name"), str)
             and p["name"].strip()}
    return names.pop()[:200] if len(names) == 1 else None


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


# ---------------------------------------------------------------- merging ranks into one job


def infer_group_role(size: int, world: int, kinds: set[str], ranks: tuple[int, ...] | None,
                     stride: int | None = None) -> str:
    """Parallelism role of a process group from what runs on it (rule in the module docstring).

    ``stride`` is the spacing of the group's global ranks (1: contiguous), taken from ``ranks`` when omitted.
    """
    a2a = bool(kinds & {"all_to_all", "all_to_allv"})
    others = kinds - {"all_to_all", "all_to_allv", "barrier"}
    if a2a:
        return "world" if (size == world and others) else "ep"
    if kinds and kinds <= {"send_recv", "barrier"} and "send_recv" in kinds:
        return "pp"
    if size <= 1:
        return "unknown"
    if size == world:
        return "dp"
    if stride is None and ranks and len(ranks) > 1:
        diffs = {b - a for a, b in zip(ranks, ranks[1:])}
        stride = diffs.pop() if len(diffs) == 1 else None
    if stride == 1:
        return "tp"
    if stride is not None and stride > 1:
        return "dp"
    return "unknown"


_DIGITS = re.compile(r"\d+")
_COMPRESS_EXT = re.compile(r"\.(gz|gzip)$", re.I)


def job_key(name: str) -> str:
    """The grouping key of a rank file: its path with every run of digits masked and .gz dropped.

    (Sets under one key that repeat a rank are split by folder when that makes each part consistent, so
    ``run1/rank0.json`` and ``run2/rank0.json`` become two jobs.)
    """
    return _DIGITS.sub("#", _COMPRESS_EXT.sub("", name))


def job_name_for(names: list[str], default: str = "job") -> str:
    """A readable job name from the file names of its ranks (common prefix of the base names)."""
    stems = []
    for n in names:
        b = os.path.basename(_COMPRESS_EXT.sub("", re.sub(r" \(\d+\)$", "", n)))
        for ext in (".json", ".pt.trace", ".trace", ".et"):
            if b.lower().endswith(ext):
                b = b[: -len(ext)]
        stems.append(b)
    if len(stems) == 1:
        s = stems[0]
    else:
        s = os.path.commonprefix(stems)
    s = s.strip(" ._-#")
    s = re.sub(r"[^A-Za-z0-9_.+-]+", "_", s).strip("_")
    if len(stems) > 1:
        s = re.sub(r"[._-]*(rank|worker|node|gpu)?[._-]*$", "", s, flags=re.I) or s
    return s[:80] or default


def _group_display_names(keys: list[str], info: dict[str, dict]) -> dict[str, str]:
    names: dict[str, str] = {}
    taken: set[str] = set()
    desc_count: dict[str, int] = {}
    for k in keys:
        d = info[k].get("desc")
        if d and d != "undefined":
            desc_count[d] = desc_count.get(d, 0) + 1
    for k in keys:
        d = info[k].get("desc")
        if k == "":
            cand = "world"
        elif d and d != "undefined" and desc_count.get(d) == 1:
            cand = d
        elif d and d != "undefined":
            cand = f"{d}:{k}"
        else:
            cand = f"pg{k}" if k[:1].isdigit() else k
        base, i = cand, 2
        while cand in taken:
            cand = f"{base}-{i}"
            i += 1
        taken.add(cand)
        names[k] = cand
    return names


def merge_ranks(traces: list[RankTrace], job_name: str, *, compute_note: str | None = None,
                trace_label: str = "Kineto", world_hint: str = "distributedInfo.world_size",
                compute_spread: str = "steps", rank_hint: str = "distributedInfo.rank",
                world_missing: str | None = None) -> Workload:
    """Merge the rank traces of one job into a one-job :class:`Workload` (see the module docstring).

    Also used by the Chakra and PyTorch ET parsers, which pass their own ``compute_note``, ``trace_label`` and
    ``world_hint`` (where the world size is read from), and ``world_missing`` (what to say when it is not there;
    default "<world_hint> not recorded"). ``compute_spread`` says what ``compute_cv`` measures: ``"steps"``
    (Kineto) the step-to-step spread within each rank, pooled over ranks; ``"ranks"`` the spread over every (rank,
    step) sample (Chakra, where a rank's compute is its own kernels' time and holds no waiting).
    """
    if not traces:
        raise ParseError("no Kineto trace to merge")
    names = [t.name for t in traces]
    if len(traces) > 1:
        _check_consistent(traces, rank_hint)
    traces = sorted(traces, key=lambda t: (t.rank if t.rank is not None else -1, t.name))
    warnings: list[str] = [w for t in traces for w in t.warnings]
    notes: list[str] = []
    world = next((t.world_size for t in traces if t.world_size), None)
    max_group = 0
    for t in traces:
        for c in t.calls:
            if c.group_size:
                max_group = max(max_group, c.group_size)
        for pg in t.pg_config.values():
            if pg.get("size"):
                max_group = max(max_group, pg["size"])
    if world is None:
        ranks_seen = [t.rank for t in traces if t.rank is not None]
        world = max([len(traces), max_group, (max(ranks_seen) + 1) if ranks_seen else 1])
        warnings.append(f"{names[0]}: {world_missing or world_hint + ' not recorded'}: world size assumed {world} "
                        f"(from the rank files and group sizes given)")
    elif max_group > world:
        raise ParseError(f"a process group of {max_group} ranks is larger than world_size {world}",
                         source=names[0], line=world_hint)
    old_format = any(c.group == "" for t in traces for c in t.calls)
    if old_format:
        notes.append(f"{trace_label} trace without process-group information: those collectives are put on the "
                     f"world group")

    # -- process groups
    info: dict[str, dict] = {}
    for t in traces:
        for c in t.calls:
            if c.kind in ("", "recv"):
                continue
            g = info.setdefault(c.group, {"size": None, "ranks": {}, "desc": None, "kinds": set()})
            g["kinds"].add(c.kind)
            if c.group == "":
                g["size"] = world
            size = c.group_size or (t.pg_config.get(c.group) or {}).get("size")
            if size and not g["size"]:
                g["size"] = size
            ranks = c.group_ranks or (t.pg_config.get(c.group) or {}).get("ranks")
            if ranks:
                g["ranks"][ranks] = g["ranks"].get(ranks, 0) + 1
            d = c.group_desc or (t.pg_config.get(c.group) or {}).get("desc")
            if d and not g["desc"]:
                g["desc"] = d
    keys = sorted(info)
    disp = _group_display_names(keys, info)
    groups: list[ProcessGroup] = []
    group_ranks: dict[str, tuple[int, ...] | None] = {}
    for k in keys:
        g = info[k]
        if not g["size"]:
            notes.append(f"size of group {disp[k]!r} not recorded in the trace: assumed the world size ({world})")
        size = g["size"] or world
        if size > world:
            raise ParseError(f"process group {disp[k]!r} has {size} ranks, more than world_size {world}",
                             source=names[0], line="Group size")
        ranks = None
        if k == "" or (size == world and not g["ranks"]):
            ranks = tuple(range(world))
        elif len(g["ranks"]) == 1:
            ranks = next(iter(g["ranks"]))
            if len(ranks) != size or any(r >= world for r in ranks):
                ranks = None
        elif len(g["ranks"]) > 1:
            notes.append(f"group {disp[k]!r} has different members on different ranks (one group per slice): "
                         f"ranks not listed")
        group_ranks[k] = ranks
        strides = set()
        for rl in ([ranks] if ranks else list(g["ranks"])):
            if len(rl) > 1:
                diffs = {b - a for a, b in zip(rl, rl[1:])}
                strides.add(diffs.pop() if len(diffs) == 1 else None)
        stride = strides.pop() if len(strides) == 1 else None
        role = infer_group_role(size, world, g["kinds"], ranks, stride)
        strided = bool(ranks) and (len(ranks) == 1 or (stride is not None and stride >= 1))
        groups.append(ProcessGroup(
            name=disp[k], size=size, role=role, ranks=None if strided else ranks,
            rank_start=ranks[0] if strided else None,
            rank_stride=(stride or 1) if strided else (stride if stride and stride >= 1 else None),
            role_source="inferred"))

    # -- ops: pair calls across ranks by position within each group
    steps_by_rank = {id(t): max(len(t.steps), 1) for t in traces}
    agg: dict[tuple, list] = {}
    order: list[tuple] = []

    def add(key, weight, ov, label):
        rec = agg.get(key)
        if rec is None:
            rec = agg[key] = [0.0, 0.0, 0.0, label]
            order.append(key)
        rec[0] += weight
        if ov is not None:
            rec[1] += ov * weight
            rec[2] += weight

    for t in traces:
        for c in t.calls:
            if c.per_rank_input and c.nbytes is not None and c.kind not in ("", "recv"):
                c.nbytes *= info[c.group]["size"] or 1
                c.per_rank_input = False

    recv_calls = 0
    wait_pairs = 0
    partial_wait_groups: set[str] = set()
    for k in keys:
        seqs = []
        for t in traces:
            seq = [c for c in t.calls if c.group == k and c.kind not in ("", "recv")]
            if seq:
                seqs.append((t, seq))
        aligned = (
            len(seqs) > 1
            and len({len(s) for _, s in seqs}) == 1
            and len({steps_by_rank[id(t)] for t, _ in seqs}) == 1
            and all(len({s[i].kind for _, s in seqs}) == 1 for i in range(len(seqs[0][1])))
        )
        granks = group_ranks.get(k)
        full = False
        pos_of_rank: dict[int, int] = {}
        if granks is not None:
            pos_of_rank = {r: i for i, r in enumerate(granks)}
            present = {t.rank for t, _ in seqs}
            full = present >= set(granks) and len(seqs) == len(granks)
        if aligned:
            steps = steps_by_rank[id(seqs[0][0])]
            for i in range(len(seqs[0][1])):
                cs = [(t, s[i]) for t, s in seqs]
                if _assign_waits(cs):
                    wait_pairs += 1
                    if not full:
                        partial_wait_groups.add(k)
                kind = cs[0][1].kind
                by = [c.nbytes for _, c in cs]
                uneven = any(c.uneven for _, c in cs) or len(set(by)) > 1
                per_rank = None
                if kind in ("all_to_all", "all_to_allv") and uneven:
                    kind = "all_to_allv"
                    if full:
                        arr = [0] * len(granks)
                        for t, c in cs:
                            arr[pos_of_rank[t.rank]] = c.nbytes
                        per_rank = tuple(arr)
                    else:
                        note = (f"per-rank sizes of all_to_allv on group {disp[k]!r} are known for only "
                                f"{len(cs)} rank(s) of the group: the largest is used")
                        if note not in notes:
                            notes.append(note)
                elif len(set(by)) > 1:
                    warnings.append(f"{names[0]}: ranks disagree on the size of {cs[0][1].coll} #{i} on group "
                                    f"{disp[k]!r} ({min(by)}..{max(by)} B); the largest is used")
                ovs = [c.overlap_us / c.kernel_us for _, c in cs if c.kernel_us > 0]
                ov = sum(ovs) / len(ovs) if ovs else None
                key = (kind, k, max(by), cs[0][1].dtype, per_rank)
                add(key, 1.0 / steps, ov, cs[0][1].coll)
        else:
            if len(seqs) > 1:
                lens = ", ".join(f"rank {t.rank}: {len(s)}" for t, s in seqs)
                warnings.append(f"{names[0]}: ranks disagree on the sequence of collectives on group {disp[k]!r} "
                                f"({lens}); counts are averaged over ranks and per-rank sizes are not paired")
            denom = sum(steps_by_rank[id(t)] for t, _ in seqs)
            for t, seq in seqs:
                for c in seq:
                    ov = c.overlap_us / c.kernel_us if c.kernel_us > 0 else None
                    add((c.kind, k, c.nbytes, c.dtype, None), 1.0 / denom, ov, c.coll)
    for t in traces:
        recv_calls += sum(1 for c in t.calls if c.kind == "recv")
    if recv_calls:
        notes.append(f"{recv_calls} recv call(s) not counted: each is the other half of a counted send")

    ops = []
    for key in order:
        kind, k, nbytes, dtype, per_rank = key
        weight, ov_sum, ov_w, label = agg[key]
        ov = min(max(ov_sum / ov_w, 0.0), 1.0) if ov_w > 0 else 0.0
        ops.append(CommOp(kind=kind, bytes=int(nbytes), group=disp[k], count_per_step=_round_count(weight),
                          dtype=dtype, overlap_fraction=round(ov, 6), per_rank_bytes=per_rank, name=label))

    unparsed: list[UnparsedComm] = [u for t in traces for u in t.unparsed]
    for t in traces:
        bad: dict[tuple[str, str], int] = {}
        for c in t.calls:
            if c.kind == "" and c.reason:
                bad[(c.coll, c.reason)] = bad.get((c.coll, c.reason), 0) + 1
        for (coll, reason), n in sorted(bad.items()):
            tus = sum(c.kernel_us for c in t.calls if c.kind == "" and c.coll == coll and c.reason == reason)
            unparsed.append(UnparsedComm(source=t.name, name=coll, count=n, total_time_s=tus * 1e-6, reason=reason))

    waited_us = [sum(c.wait_us for c in t.calls) / max(len(t.window_len_us), 1) for t in traces
                 if t.window_len_us]
    for t in traces:
        _recompute_compute(t)
    samples = [x * 1e-6 for t in traces for x in t.compute_us]
    compute = statistics.fmean(samples) if samples else 0.0
    has_steps = all(t.steps for t in traces)
    if compute_spread == "ranks":
        cv = (statistics.pstdev(samples) / compute) if len(samples) > 1 and compute > 0 else 0.0
    else:
        per_rank = [[x * 1e-6 for x in t.compute_us] for t in traces if len(t.compute_us) > 1]
        n_dev = sum(len(p) for p in per_rank)
        ss = sum((x - statistics.fmean(p)) ** 2 for p in per_rank for x in p)
        cv = math.sqrt(ss / n_dev) / compute if n_dev and compute > 0 else 0.0
        if samples and not per_rank:
            msg = (f"one {'ProfilerStep' if has_steps else 'window'} per rank: the step-to-step spread of compute "
                   f"cannot be measured, so compute_cv is 0 (the rank-to-rank difference of one step is mostly "
                   f"waiting and phase, not compute jitter); set compute_cv by hand if it is known")
            if has_steps:
                warnings.append(f"{names[0]}: {msg}")
            else:
                notes.append(msg)
    if not has_steps and any(t.steps for t in traces):
        raise ParseError("some rank files have ProfilerStep markers and others do not; profile every rank the same "
                         "way", source=names[0])
    steps_obs = min(len(t.steps) for t in traces)
    if has_steps and len({len(t.steps) for t in traces}) > 1:
        warnings.append(f"{names[0]}: rank files hold different numbers of ProfilerSteps "
                        f"({sorted({len(t.steps) for t in traces})}); counts are per step of each rank")
    if compute_note:
        notes.append(compute_note)
    elif has_steps:
        notes.append("compute_time_s = ProfilerStep duration minus the exposed transfer part of the NCCL kernels "
                     "(time spent waiting for the slowest peer counts as compute), mean over steps and ranks; "
                     "compute_cv = step-to-step spread within each rank")
    if wait_pairs and any(w > 0 for w in waited_us):
        notes.append(f"NCCL kernels waited for peers {statistics.fmean(waited_us) * 1e-3:.3f} ms per step per rank "
                     f"on average ({wait_pairs} collective(s) paired across ranks; wait = kernel time beyond the "
                     f"shortest kernel of the same call on any traced rank): counted as compute, not communication")
        if partial_wait_groups:
            notes.append("not every rank of group(s) " + ", ".join(sorted(disp[k] for k in partial_wait_groups))
                         + " is traced: the last rank to arrive may be missing, so waiting may be under-counted")
    elif trace_label == "Kineto" and any(t.window_len_us for t in traces) and not wait_pairs:
        notes.append("waiting for peers cannot be told apart from transfer with one rank (or ranks whose "
                     "collectives do not pair up): the whole NCCL kernel time is treated as communication; upload "
                     "every rank's trace to count the waiting as compute")
    if has_steps:
        window = sum(t.window_us for t in traces)
        busy = sum(t.busy_us for t in traces)
        if window > 0:
            notes.append(f"GPU compute-kernel busy time: {busy / window:.1%} of the step time "
                         f"({busy / max(sum(len(t.steps) for t in traces), 1) * 1e-3:.3f} ms per step)")
    elif not compute_note:
        notes.append("no ProfilerStep markers: one request window per trace; compute_time_s = GPU activity span "
                     "minus exposed NCCL time")
    if groups:
        notes.append("process-group roles inferred from the collectives they carry: "
                     + ", ".join(f"{g.name}={g.role}" for g in groups))
    ranks_present = sorted(t.rank for t in traces if t.rank is not None)
    if len(traces) > 1 or (world and world > 1):
        notes.append(f"ranks traced: {_ranges(ranks_present) or 'unknown'} of world size {world}")
    gpu = _compute_gpu(traces, notes)
    job = Job(
        name=job_name, kind="training" if has_steps else "inference", world_size=world, groups=tuple(groups),
        ops=tuple(ops), compute_time_s=compute, compute_cv=min(cv, 10.0), steps_observed=steps_obs if has_steps else 0,
        notes=tuple(notes), compute_gpu=gpu)
    try:
        validate_job(job, f"job {job_name!r}")
    except FabricError as err:
        raise ParseError(f"the trace does not make a valid job: {err}", source=names[0]) from err
    facts = [(f"{trace_label} ranks", _ranges(ranks_present) or "unknown"), (f"{trace_label} world size", str(world))]
    if traces[0].backend:
        facts.append(("distributed backend", traces[0].backend))
    if has_steps:       # what a rollout check compares with the evaluator's prediction (fabric.calibrate.rollout)
        durations = [(s1 - s0) * 1e-6 for t in traces for s0, s1 in t.steps]
        facts.append((MEASURED_STEP_FACT, f"{statistics.fmean(durations):.9g}"))
    return Workload(jobs=(job,), sources=tuple(names), unparsed=tuple(unparsed), warnings=tuple(warnings),
                    facts=tuple(facts), name=job_name)


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


def _round_count(x: float) -> float:
    r = round(x)
    return float(r) if abs(x - r) < 1e-9 else round(x, 9)


def _ranges(xs: list[int]) -> str:
    if not xs:
        return ""
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ",".join(out)


def _check_consistent(traces: list[RankTrace], rank_hint: str = "distributedInfo.rank") -> None:
    """Raise ParseError when files that look like one job's ranks cannot be merged."""
    names = ", ".join(t.name for t in traces)
    missing = [t.name for t in traces if t.rank is None]
    if missing:
        raise ParseError(f"cannot merge rank files ({names}): {missing[0]} does not say its rank ({rank_hint}); "
                         f"upload it on its own or fix it", source=missing[0], line=rank_hint)
    worlds = {t.world_size for t in traces}
    if len(worlds) > 1:
        detail = ", ".join(f"{t.name}: {t.world_size}" for t in traces)
        raise ParseError(f"these files look like rank files of one job (same name pattern) but disagree on "
                         f"world_size ({detail}); they come from different jobs: upload them separately or "
                         f"rename them", source=traces[0].name, line="distributedInfo.world_size")
    seen: dict[int, str] = {}
    for t in traces:
        if t.rank in seen:
            raise ParseError(f"{seen[t.rank]} and {t.name} both claim rank {t.rank}: they belong to different "
                             f"jobs or are duplicates; upload one job's rank files at a time",
                             source=t.name, line="distributedInfo.rank")
        seen[t.rank] = t.name
    backends = {t.backend for t in traces if t.backend}
    if len(backends) > 1:
        raise ParseError(f"rank files disagree on the distributed backend ({', '.join(sorted(backends))})",
                         source=traces[0].name, line="distributedInfo.backend")
    # the world-spanning process group must be described the same way by every rank that records it
    sigs = {}
    for t in traces:
        for key, pg in t.pg_config.items():
            if pg.get("size") == t.world_size:
                sigs.setdefault(key, set()).add((pg.get("size"), pg.get("ranks")))
    for key, s in sigs.items():
        if len(s) > 1:
            raise ParseError(f"rank files disagree on the members of process group {key!r}; they come from "
                             f"different jobs", source=traces[0].name, line="distributedInfo.pg_config")


# ---------------------------------------------------------------- entry points


def parse_groups(files: list[tuple[str, bytes]], limits: Limits | None = None) -> list[tuple[tuple[str, ...], object]]:
    """Parse Kineto files into jobs: [(file names of one job, Workload or the ParseError that stopped it)].

    Files are grouped by :func:`job_key`; a file that fails to load fails alone, a set that cannot be merged fails
    as a whole.
    """
    loaded: list[RankTrace] = []
    results: list[tuple[tuple[str, ...], object]] = []
    for name, data in files:
        try:
            loaded.append(load_rank(name, data, limits))
        except FabricError as err:
            results.append(((name,), err if isinstance(err, ParseError) else ParseError(str(err), source=name)))
    return results + merge_rank_files(loaded, "kineto")


def merge_rank_files(loaded: list[RankTrace], default_name: str, **merge_kw) -> list[tuple[tuple[str, ...], object]]:
    """Put loaded rank traces into jobs by :func:`job_key` and merge each: [(file names, Workload or ParseError)].

    Shared by the Kineto and PyTorch ET parsers; ``merge_kw`` goes to :func:`merge_ranks`.
    """
    results: list[tuple[tuple[str, ...], object]] = []
    by_key: dict[str, list[RankTrace]] = {}
    for tr in loaded:
        by_key.setdefault(job_key(tr.name), []).append(tr)
    for key in list(by_key):
        # the same rank twice under one pattern: maybe two runs in numbered folders (run1/, run2/) -> split by folder
        trs = by_key[key]
        ranks = [t.rank for t in trs]
        if len(set(ranks)) < len(ranks):
            by_dir: dict[str, list[RankTrace]] = {}
            for t in trs:
                by_dir.setdefault(os.path.dirname(t.name), []).append(t)
            if len(by_dir) > 1 and all(len({t.rank for t in v}) == len(v) for v in by_dir.values()):
                del by_key[key]
                for d, v in by_dir.items():
                    by_key[f"{key}\0{d}"] = v
    for key, trs in by_key.items():
        group_names = tuple(t.name for t in trs)
        try:
            results.append((group_names, merge_ranks(trs, job_name_for(list(group_names), default_name),
                                                     **merge_kw)))
        except FabricError as err:
            results.append((group_names, err if isinstance(err, ParseError) else ParseError(str(err))))
    return results


def parse(files: list[tuple[str, bytes]], limits: Limits | None = None) -> Workload:
    """Parse Kineto trace files (already decompressed) into a workload; raises the first ParseError."""
    from fabric.workload.ingest import parse_grouped

    return parse_grouped(parse_groups, files, limits, "Kineto")
