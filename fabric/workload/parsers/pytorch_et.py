"""PyTorch Execution Traces (the JSON ``torch.profiler.ExecutionTraceObserver`` writes) -> a training job.

This is the host-side trace Chakra's converter starts from: ``{"schema", "pid", "time", "start_ts", "nodes": [...],
"finish_ts"}``, one file per rank. Two node layouts exist:

- schema ``1.0.1``: flat nodes ``id, name, parent, tid, inputs[], input_shapes[], input_types[], outputs[],
  output_shapes[], output_types[]``;
- schema ``1.0.2-chakra.0.0.4`` and later (``1.0.3``, ``1.0.4``, ``1.1.0``, ``1.1.1``...): ``id, name, ctrl_deps,
  inputs{values, shapes, types[, strides]}, outputs{...}, attrs[{name, type, value}]``.

What becomes a call
-------------------
Every ``record_param_comms`` node. Its input values are those of PyTorch's ``RECORD_PARAM_COMMS(_DATA)``:
``[input tensors,] seq, process group, rank, collective name, in split sizes, out split sizes[, global rank start,
global rank stride, group size]`` (the input tensors come first when the call has data; ``wait``/``barrier``
records start with ``seq``, an int or ``[int, bool]``). Where each field comes from:

- collective name: attr ``collective_name`` (>= 1.1.0), else the name value; ``wait``, ``init`` and coalescing
  markers are bookkeeping; names fabric does not model (gather, scatter) and unknown names are unparsed;
- message size: attrs ``in_msg_nelems``/``out_msg_nelems`` x the size of attr ``dtype`` (>= 1.1.0), else the
  recorded tensors: a tensor value is ``[tensor id, storage id, offset, numel, element size, device]``, its type
  ``Tensor(float)`` (lists: ``GenericList[Tensor(float),...]``), so bytes = sum of numel x element size over the
  input (output) tensors. Model convention (:mod:`fabric.workload.model`): all_gather = output bytes (else input x
  group size), reduce_scatter = input bytes (else output x group size), all_to_all(v) = input (send) bytes, and
  all_to_all with unequal ``in split sizes`` is all_to_allv; ``recv`` is not counted (the peer's ``send`` is);
- process group: attrs ``pg_name``/``pg_desc``/``pg_size`` (>= 1.1.0), else the process-group value: a
  ``[name, desc]`` pair (>= 1.0.3), a name (1.0.2), or, in 1.0.1, the ProcessGroup's address, which differs from
  process to process. Names are global (``"0"`` is the default group on every rank), so calls pair up across ranks
  by name. Addresses are mapped to names through ``## process_group:init ##`` when it lists ``backend_id``/``uid``;
  otherwise one address in a file is an unnamed group (put on the world group, as Kineto traces without group
  information are), several addresses are numbered in order of first use and a warning says so;
- group size and members: attr ``pg_size``, the recorded group size, the ``## process_group:init ##`` node (a JSON
  string of ``[{pg_name, pg_desc, ranks, group_size, group_count}]``; ``ranks`` empty = every rank), else the
  length of the split-size lists; the global rank start and stride when recorded;
- the file's rank: the recorded rank of a call mapped through its group's member list (the recorded rank is the
  rank inside the group), else the recorded rank of an unnamed group, else the last number of the file name; the
  world size: the largest group in ``## process_group:init ##``, else what merging the ranks implies (warning).

``nccl:*`` nodes are the child of their ``record_param_comms`` in 1.0.1 traces and are skipped as duplicates; an
``nccl:*`` node without a ``record_param_comms`` parent is read on its own (size from its input tensors, world
group).

Steps and timing
----------------
An ET has no timestamps per node, so there is no compute time: ``compute_time_s`` is 0 and a warning says so (the
Kineto trace of the same run has the timeline); warnings name only what the trace format has. Steps are delimited by ``ProfilerStep#N`` nodes when the
profiler ran alongside (a call belongs to the step whose marker is the last one before it in node-id order, ids
being assigned in execution order); counts are then per step. Without markers, the ET covers whatever ran between
``ExecutionTraceObserver.start()`` and ``stop()`` (usually one iteration) and counts are per captured window; a
warning says so and ``steps_observed`` is 0. ``overlap_fraction`` is 0 (no timeline).

Several rank files of one job are grouped and merged exactly as Kineto rank files are
(:func:`fabric.workload.parsers.kineto.merge_rank_files`): files whose paths are equal once digits are masked are
one job, calls of one group are paired across ranks by position, uneven all_to_allv sizes are kept per rank.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from dataclasses import replace

from fabric.errors import FabricError, ParseError
from fabric.limits import Limits
from fabric.workload.io import load_json, stream_trace
from fabric.workload.model import MAX_OP_BYTES, MAX_RANKS, Workload
from fabric.workload.parsers.kineto import merge_rank_files
from fabric.workload.parsers.kineto.collectives import _NOT_MODELLED, collective_kind, dtype_info
from fabric.workload.parsers.kineto.events import RankTrace, _Call, _int_list

__all__ = ["FORMAT", "sniff", "parse", "parse_groups", "load_rank", "KNOWN_SCHEMAS"]

FORMAT = "pytorch_et"

#: schema versions whose layout this parser was written against (newer ones are read the same way, with a warning)
KNOWN_SCHEMAS = ("1.0.1", "1.0.2-chakra.0.0.4", "1.0.3-chakra.0.0.4", "1.0.4-chakra.0.0.4", "1.1.0-chakra.0.0.4",
                 "1.1.1-chakra.0.0.4")

_SCHEMA_RE = re.compile(rb'"schema"\s*:\s*"\d+\.\d+\.\d+(?:-chakra\.\d+\.\d+\.\d+)?"')
_SCHEMA_STR = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-chakra\.\d+\.\d+\.\d+)?$")
_NODES_RE = re.compile(rb'"nodes"\s*:\s*\[')
_TENSOR_TYPE = re.compile(r"Tensor\(([^)]*)\)")
_NAME_RANK = re.compile(r"(\d+)(?:\D*)$")
_COMPRESS = re.compile(r"\.(gz|gzip)$", re.I)
_MAX_WALK = 100_000   # tensors looked at in one value (an ET caps lists at 4096 elements)
#: the one window of a trace without ProfilerStep markers
_NO_MARKERS = [(-1.0, -1.0)]


def sniff(head: bytes, name: str) -> bool:
    """A JSON object with an ET ``schema`` (``1.0.1``, ``1.1.0-chakra.0.0.4`` ...) and a ``nodes`` array."""
    h = head.lstrip()
    if h.startswith(b"\xef\xbb\xbf"):
        h = h[3:].lstrip()
    if not h.startswith(b"{"):
        return False
    if b'"traceEvents"' in head or b'"workload_graph"' in head:
        return False
    return bool(_SCHEMA_RE.search(head)) and bool(_NODES_RE.search(head))


# ---------------------------------------------------------------- reading nodes


def _int(v, lo: int | None = 0) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            v = int(v)
        else:
            return None
    if lo is not None and v < lo:
        return None
    return v


def _norm(node: dict) -> dict | None:
    """One node in a layout-independent form, or None when its fields are not the ET's."""
    nid = _int(node.get("id"))
    ins, outs = node.get("inputs"), node.get("outputs")
    attrs: dict = {}
    if isinstance(ins, dict) or isinstance(outs, dict) or "attrs" in node:   # >= 1.0.2
        ins = ins if isinstance(ins, dict) else {}
        outs = outs if isinstance(outs, dict) else {}
        in_v, in_t, in_s = ins.get("values"), ins.get("types"), ins.get("shapes")
        out_v, out_t, out_s = outs.get("values"), outs.get("types"), outs.get("shapes")
        raw = node.get("attrs")
        if isinstance(raw, list):
            for a in raw:
                if isinstance(a, dict) and isinstance(a.get("name"), str):
                    attrs[a["name"]] = a.get("value")
        parent = node.get("ctrl_deps")
        tid = attrs.get("tid")
    else:                                                                     # 1.0.1
        in_v, in_t, in_s = ins, node.get("input_types"), node.get("input_shapes")
        out_v, out_t, out_s = outs, node.get("output_types"), node.get("output_shapes")
        parent = node.get("parent")
        tid = node.get("tid")
    lists = []
    for x in (in_v, in_t, in_s, out_v, out_t, out_s):
        lists.append(x if isinstance(x, list) else [])
    return {"id": nid, "name": node.get("name"), "parent": _int(parent), "tid": _int(tid),
            "in_v": lists[0], "in_t": lists[1], "in_s": lists[2], "out_v": lists[3], "out_t": lists[4],
            "out_s": lists[5], "attrs": attrs}


class _Collector:
    """Keeps the nodes the parser needs while the ``nodes`` array streams by."""

    def __init__(self):
        self.rpc: list[dict] = []
        self.nccl: list[dict] = []
        self.pg_init: list[dict] = []
        self.steps: list[tuple[int, str]] = []
        self.bad = 0

    def __call__(self, node):
        if type(node) is not dict:
            self.bad += 1
            return
        name = node.get("name")
        if type(name) is not str:
            self.bad += 1
            return
        if name == "record_param_comms":
            self.rpc.append(_norm(node))
        elif name.startswith("nccl:"):
            self.nccl.append(_norm(node))
        elif "process_group:init" in name:
            self.pg_init.append(_norm(node))
        elif name.startswith("ProfilerStep#"):
            nid = _int(node.get("id"))
            if nid is not None:
                self.steps.append((nid, name))


def _is_seq(x) -> bool:
    """A ``seq`` value: an int, or ``[int, bool]`` (PyTorch >= 2.4 separates p2p sequence numbers)."""
    if _int(x, lo=None) is not None:
        return True
    return isinstance(x, list) and len(x) == 2 and _int(x[0], lo=None) is not None and isinstance(x[1], bool)


def _is_tensor_value(v) -> bool:
    return (isinstance(v, list) and len(v) == 6 and all(_int(x) is not None for x in v[:5])
            and isinstance(v[5], str))


def _tensors(values, types, shapes) -> tuple[int, int, str | None] | None:
    """(total bytes, tensors, dtype spelling of the first) of the tensors in the first value, or None if none."""
    if not values:
        return None
    first_t = types[0] if types and isinstance(types[0], str) else ""
    m = _TENSOR_TYPE.search(first_t)
    dtype = m.group(1) if m else None
    total = 0
    count = 0
    stack = [values[0]]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        if seen > _MAX_WALK:
            break
        if _is_tensor_value(v):
            numel, size = v[3], v[4]
            total += numel * size
            count += 1
        elif isinstance(v, list):
            stack.extend(v)
    if not count:
        return None
    return total, count, dtype


def _pg_table(node: dict, name: str, warnings: list[str]) -> tuple[dict, dict]:
    """(pg_name -> {size, ranks, desc}, backend id -> pg_name) from a ``## process_group:init ##`` node."""
    raw = node["in_v"][0] if node["in_v"] else None
    if not isinstance(raw, str):
        warnings.append(f"{name}: '## process_group:init ##' node {node['id']} has no JSON string of groups; "
                        f"group sizes come from the calls")
        return {}, {}
    try:
        table = load_json(raw, f"{name} (## process_group:init ##)")
    except ParseError as err:
        warnings.append(f"{name}: the process-group table of node {node['id']} is not readable JSON (truncated?): "
                        f"{err}; group sizes come from the calls")
        return {}, {}
    if isinstance(table, dict):
        table = [dict(v, pg_name=k) if isinstance(v, dict) else v for k, v in table.items()]
    if not isinstance(table, list):
        warnings.append(f"{name}: the process-group table of node {node['id']} is not a list; ignored")
        return {}, {}
    groups: dict[str, dict] = {}
    backends: dict[int, str] = {}
    for entry in table:
        if not isinstance(entry, dict) or entry.get("pg_name") is None:
            continue
        key = str(entry["pg_name"])
        size = _int(entry.get("group_size", entry.get("pg_size")), lo=1)
        if size is not None and size > MAX_RANKS:
            raise ParseError(f"process group {key!r} claims {size} ranks (more than {MAX_RANKS})", source=name,
                             line="## process_group:init ##")
        ranks = _int_list(entry.get("ranks"))
        if ranks == [] and size:
            ranks = list(range(size))        # "ranks is empty when all ranks are in the group"
        if ranks is not None and (len(ranks) == 0 or any(r < 0 for r in ranks)):
            ranks = None
        if size is None and ranks:
            size = len(ranks)
        if ranks is not None and size != len(ranks):
            ranks = None
        desc = entry.get("pg_desc")
        groups[key] = {"size": size, "ranks": tuple(ranks) if ranks else None,
                       "desc": desc if isinstance(desc, str) and desc else None}
        for bk in ("backend_id", "uid"):
            b = _int(entry.get(bk), lo=None)
            if b is not None:
                backends[b] = key
    return groups, backends


def _size_call(kind: str, in_b: int | None, out_b: int | None, gsize: int | None) -> tuple[int | None, bool]:
    """(bytes in the model's convention, whether they are a per-rank input still to be multiplied by the group)."""
    if kind == "all_gather":
        if out_b is not None:
            return out_b, False
        if in_b is None:
            return None, False
        return (in_b * gsize, False) if gsize else (in_b, True)
    if kind == "reduce_scatter":
        if in_b is not None:
            return in_b, False
        if out_b is None:
            return None, False
        return (out_b * gsize, False) if gsize else (None, False)
    return (in_b if in_b is not None else out_b), False


def _rank_from_name(name: str) -> int | None:
    base = _COMPRESS.sub("", name).rsplit("/", 1)[-1]
    base = re.sub(r"\.json$", "", base, flags=re.I)
    m = _NAME_RANK.search(base)
    return int(m.group(1)) if m else None


def load_rank(name: str, data: bytes, limits: Limits | None = None) -> RankTrace:
    """One ET file as a rank trace (calls with sizes and groups; no timing)."""
    col = _Collector()
    header = stream_trace(data, name, array_key="nodes", on_item=col, limits=limits)
    if "nodes" not in header:
        raise ParseError("no 'nodes' array: not a PyTorch execution trace", source=name, line="nodes")
    schema = header.get("schema")
    if not isinstance(schema, str) or not _SCHEMA_STR.match(schema):
        raise ParseError(f"'schema' must be an execution-trace version such as '1.0.1' or '1.1.0-chakra.0.0.4', "
                         f"got {schema!r}", source=name, line="schema")
    warnings: list[str] = []
    if schema not in KNOWN_SCHEMAS:
        warnings.append(f"{name}: execution-trace schema {schema!r} is not one this parser was written against "
                        f"({', '.join(KNOWN_SCHEMAS)}); read with the newest layout it matches")
    if col.bad:
        warnings.append(f"{name}: {col.bad} malformed node(s) skipped (not an object, or no name)")

    pg_config: dict[str, dict] = {}
    backends: dict[int, str] = {}
    for node in col.pg_init[:1]:
        pg_config, backends = _pg_table(node, name, warnings)
    world = max((g["size"] for g in pg_config.values() if g["size"]), default=None)

    rpc_ids = {n["id"] for n in col.rpc if n["id"] is not None}
    raw_calls: list[tuple[dict, dict]] = []     # (node, decoded fields)
    unparsed_calls: list[_Call] = []
    pointers: list[int] = []
    for n in col.rpc:
        f = _decode_rpc(n)
        if f is None:
            c = _Call(coll="record_param_comms", kind="", nbytes=None, dtype="unknown", group="", group_size=None,
                      group_ranks=None, group_desc=None, tid=n["tid"], ts=float(n["id"] or 0), end=0.0,
                      reason="record_param_comms node whose inputs are not the RECORD_PARAM_COMMS layout "
                             "(no collective name)")
            unparsed_calls.append(c)
            continue
        if f["kind"] == "":
            continue                         # wait, init, coalescing markers
        pg = f["pg"]
        if f["pg_name"] is None and _int(pg, lo=None) is not None and not isinstance(pg, bool):
            if pg in backends:
                f["pg_name"] = backends[pg]
            elif pg not in pointers:
                pointers.append(pg)
        raw_calls.append((n, f))
    for n in col.nccl:
        if n["parent"] is not None and n["parent"] in rpc_ids:
            continue                         # the child of a record_param_comms: same call
        kind = collective_kind(n["name"])
        if kind == "":
            continue
        t = _tensors(n["in_v"], n["in_t"], n["in_s"])
        raw_calls.append((n, {"coll": n["name"], "kind": kind, "pg": None, "pg_name": None, "pg_desc": None,
                              "rank": None, "in_split": None, "out_split": None, "start": None, "stride": None,
                              "gsize": None, "in_b": t[0] if t else None, "out_b": None,
                              "dtype": t[2] if t else None, "standalone": True}))
    if len(pointers) > 1:
        warnings.append(f"{name}: calls use {len(pointers)} process groups identified only by their address (schema "
                        f"{schema}); they are numbered group#1..#{len(pointers)} in order of first use on every "
                        f"rank, which pairs them across ranks only if every rank creates and first uses them in the "
                        f"same order")

    calls: list[_Call] = list(unparsed_calls)
    rank_votes: Counter = Counter()
    unnamed_rank: Counter = Counter()
    for n, f in raw_calls:
        c = _make_call(n, f, pointers, pg_config, name)
        calls.append(c)
        r = f.get("rank")
        if r is None or c.kind in ("",):
            continue
        if c.group_ranks and 0 <= r < len(c.group_ranks):
            rank_votes[c.group_ranks[r]] += 1
        elif c.group == "":
            unnamed_rank[r] += 1
    calls.sort(key=lambda c: c.ts)

    rank = None
    if rank_votes:
        rank = rank_votes.most_common(1)[0][0]
        if len(rank_votes) > 1:
            warnings.append(f"{name}: calls imply different global ranks ({sorted(rank_votes)}); using {rank}")
    elif unnamed_rank:
        rank = unnamed_rank.most_common(1)[0][0]
    by_name = _rank_from_name(name)
    if rank is None:
        rank = by_name
    elif by_name is not None and by_name != rank and (rank_votes or unnamed_rank):
        warnings.append(f"{name}: the file name suggests rank {by_name} but the trace records rank {rank}; "
                        f"using {rank}")
    if rank is not None and rank > MAX_RANKS:
        raise ParseError(f"rank {rank} is implausible", source=name)
    if world is not None and rank is not None and rank >= world:
        raise ParseError(f"rank {rank} is not below the world size {world} of the process-group table",
                         source=name, line="## process_group:init ##")

    # steps: ProfilerStep#N markers in node-id order
    markers = sorted(col.steps)
    if markers:
        starts = [i for i, _ in markers]
        outside = 0
        for c in calls:
            idx = bisect.bisect_right(starts, c.ts) - 1
            c.step = idx
            if idx < 0 and c.kind not in ("",):
                outside += 1
        if outside:
            warnings.append(f"{name}: {outside} collective call(s) before the first ProfilerStep marker were left "
                            f"out")
        calls = [c for c in calls if c.step >= 0]
        ids = [float(i) for i, _ in markers]
        steps = list(zip(ids, ids[1:] + [math.inf]))   # (marker id, next marker id): node-id windows
    else:
        for c in calls:
            c.step = 0
        steps = list(_NO_MARKERS)
    backend = "nccl" if col.nccl else None
    return RankTrace(name=name, rank=rank, world_size=world, backend=backend, pg_config=pg_config, steps=steps,
                     calls=calls, compute_us=[], busy_us=0.0, window_us=0.0, unparsed=[], warnings=warnings,
                     trace_name=None)


def _decode_rpc(n: dict) -> dict | None:
    """The RECORD_PARAM_COMMS fields of a node (see the module docstring), or None when they cannot be found."""
    v = n["in_v"]
    a = n["attrs"]
    base = None
    if v:
        base = 0 if _is_seq(v[0]) else 1
    coll = a.get("collective_name") if isinstance(a.get("collective_name"), str) else None
    if coll is None and base is not None and len(v) > base + 3 and isinstance(v[base + 3], str):
        coll = v[base + 3]
    if coll is None:
        return None
    kind = collective_kind(coll)
    get = (lambda i: v[base + i] if base is not None and len(v) > base + i else None)
    pg = get(1)
    pg_name = a.get("pg_name") if isinstance(a.get("pg_name"), str) else None
    pg_desc = a.get("pg_desc") if isinstance(a.get("pg_desc"), str) else None
    if pg_name is None:
        if isinstance(pg, list) and pg and isinstance(pg[0], str):
            pg_name = pg[0]
            if len(pg) > 1 and isinstance(pg[1], str):
                pg_desc = pg_desc or pg[1]
        elif isinstance(pg, str):
            pg_name = pg
    in_split = a.get("in_split_size", get(4))
    out_split = a.get("out_split_size", get(5))
    gsize = _int(a.get("pg_size"), lo=1) or _int(get(8), lo=1)
    if gsize is not None and gsize > MAX_RANKS:
        gsize = None                         # not a group size (and never expanded into a member list)
    f = {"coll": coll, "kind": kind, "pg": pg, "pg_name": pg_name, "pg_desc": pg_desc, "rank": _int(get(2)),
         "in_split": _int_list(in_split), "out_split": _int_list(out_split),
         "start": _int(a.get("global_rank_start", get(6))), "stride": _int(a.get("global_rank_stride", get(7)), lo=1),
         "gsize": gsize, "in_b": None, "out_b": None, "dtype": None, "standalone": False}
    if kind in ("", None, "recv", "barrier"):
        return f
    # sizes: the comms attrs, else the recorded tensors
    dt = dtype_info(a.get("dtype"))
    n_in, n_out = _int(a.get("in_msg_nelems")), _int(a.get("out_msg_nelems"))
    if dt is not None and (n_in is not None or n_out is not None):
        f["dtype"] = a.get("dtype")
        f["in_b"] = n_in * dt[0] if n_in is not None else None
        f["out_b"] = n_out * dt[0] if n_out is not None else None
        f["from"] = "attrs"
        return f
    t_in = _tensors(v, n["in_t"], n["in_s"]) if base == 1 else None
    t_out = _tensors(n["out_v"], n["out_t"], n["out_s"])
    f["in_b"] = t_in[0] if t_in else None
    f["out_b"] = t_out[0] if t_out else None
    f["dtype"] = (t_in or t_out or (0, 0, None))[2]
    f["from"] = "tensors"
    return f


def _make_call(n: dict, f: dict, pointers: list[int], pg_config: dict, name: str) -> _Call:
    kind = f["kind"]
    coll = f["coll"]
    if f["pg_name"] is not None:
        gkey = f["pg_name"]
    elif f.get("standalone") or len(pointers) <= 1:
        gkey = ""
    else:
        gkey = f"group#{pointers.index(f['pg']) + 1}" if f["pg"] in pointers else ""
    cfg = pg_config.get(gkey) or {}
    splits = f["in_split"] or f["out_split"]
    gsize = f["gsize"] or cfg.get("size") or (len(splits) if splits else None)
    granks = cfg.get("ranks")
    if granks is None and gsize and f["start"] is not None and f["stride"] is not None:
        granks = tuple(f["start"] + i * f["stride"] for i in range(gsize))
    if granks is not None and gsize and len(granks) != gsize:
        granks = None
    desc = f["pg_desc"] or cfg.get("desc")
    c = _Call(coll=coll, kind=kind or "", nbytes=None, dtype="unknown", group=gkey, group_size=gsize,
              group_ranks=tuple(granks) if granks else None, group_desc=desc, tid=n["tid"],
              ts=float(n["id"] if n["id"] is not None else 0), end=0.0)
    if kind is None:
        low = coll.strip().lower()
        c.reason = (f"collective {coll!r} is not modelled by fabric" if low in _NOT_MODELLED
                    else f"unknown collective name {coll!r}")
        return c
    if kind == "recv":
        return c
    if kind == "barrier":
        c.nbytes = 0
        return c
    info = dtype_info(f["dtype"]) if f["dtype"] else None
    c.dtype = info[1] if info else (str(f["dtype"]) if f["dtype"] else "unknown")
    nbytes, per_rank_input = _size_call(kind, f["in_b"], f["out_b"], gsize)
    if nbytes is None:
        c.kind = ""
        c.reason = ("message size not recorded (no in/out_msg_nelems with a known dtype and no input/output "
                    "tensors)")
        return c
    if nbytes > MAX_OP_BYTES:
        c.kind = ""
        c.reason = f"message size {nbytes:,} B is implausible (more than {MAX_OP_BYTES:,} B in one call)"
        return c
    c.nbytes = nbytes
    c.per_rank_input = per_rank_input
    if kind in ("all_to_all", "all_to_allv") and f["in_split"] and len(set(f["in_split"])) > 1:
        c.uneven = True
        c.kind = "all_to_allv"
    return c


# ---------------------------------------------------------------- entry points

_COMPUTE_NOTE = ("compute per step 0 and no overlap: the nodes of a PyTorch execution trace carry no durations (the "
                 "Kineto trace of the same run has them)")


def parse_groups(files: list[tuple[str, bytes]], limits: Limits | None = None) -> list[tuple[tuple[str, ...], object]]:
    """Parse ET files into jobs: [(file names of one job, Workload or the ParseError that stopped it)]."""
    loaded: list[RankTrace] = []
    results: list[tuple[tuple[str, ...], object]] = []
    for name, data in files:
        try:
            loaded.append(load_rank(name, data, limits))
        except FabricError as err:
            results.append(((name,), err if isinstance(err, ParseError) else ParseError(str(err), source=name)))
    step_marked = {t.name: t.steps != _NO_MARKERS for t in loaded}
    merged = merge_rank_files(loaded, "pytorch_et", compute_note=_COMPUTE_NOTE, trace_label="PyTorch ET",
                              world_hint="## process_group:init ##",
                              world_missing="the trace records no world size (it has no '## process_group:init ##' "
                                            "node, the table of process groups newer execution traces write)",
                              rank_hint="the recorded rank or a rank number in the file name")
    out = []
    for names, res in merged:
        if isinstance(res, Workload):
            res = _finish(res, names, step_marked)
        out.append((names, res))
    return results + out


def _finish(wl: Workload, names: tuple[str, ...], step_marked: dict) -> Workload:
    marked = all(step_marked.get(n, False) for n in names)
    (job,) = wl.jobs
    warnings = list(dict.fromkeys(wl.warnings))
    warnings.append(f"{names[0]}: a PyTorch execution trace records no timing (its nodes carry no durations): the "
                    f"compute per step is 0 and nothing overlaps, so an evaluation sees communication only; the "
                    f"Kineto (PyTorch profiler) trace of the same run has the compute time")
    notes = list(job.notes)
    if marked:
        notes.append("steps delimited by ProfilerStep#N nodes (node-id order); counts are per step")
        steps_obs = job.steps_observed
    else:
        warnings.append(f"{names[0]}: no ProfilerStep#N nodes: counts are per captured window (what ran between "
                        f"ExecutionTraceObserver start and stop, usually one iteration), taken as one step")
        steps_obs = 0
    job = replace(job, steps_observed=steps_obs, notes=tuple(notes))
    return replace(wl, jobs=(job,), warnings=tuple(warnings))


def parse(files: list[tuple[str, bytes]], limits: Limits | None = None) -> Workload:
    """Parse PyTorch ET files into a workload; raises the first ParseError."""
    from fabric.workload.ingest import parse_grouped

    return parse_grouped(parse_groups, files, limits, "PyTorch execution trace")
