"""Kineto traces: the events of one rank file and their formats: collective calls in the new (``record_param_comms``)
and old (``nccl:<op>``) formats, their kernels, ``ProfilerStep`` windows, compute kernels, the process groups and
the distributed info; what one rank's trace holds (:class:`RankTrace`)."""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

from fabric.errors import ParseError
from fabric.workload.model import UnparsedComm
from fabric.workload.parsers.kineto.collectives import (_CLASS_COMPUTE, _CLASS_NCCL, _NOT_MODELLED, _classify_kernel,
    collective_kind, dtype_info)

FORMAT = "kineto"


#: Workload fact holding the measured step time in seconds (mean ProfilerStep duration over ranks and steps).
MEASURED_STEP_FACT = "measured step time (s)"


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


def _fail(source: str, msg: str, where=None) -> ParseError:
    return ParseError(msg, source=source, line=where)


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


def _device_name(props) -> str | None:
    """The GPU a Kineto trace's ``deviceProperties`` names: the one name every listed device has, else None."""
    if not isinstance(props, list):
        return None
    names = {p["name"].strip() for p in props if isinstance(p, dict) and isinstance(p.get("name"), str)
             and p["name"].strip()}
    return names.pop()[:200] if len(names) == 1 else None
