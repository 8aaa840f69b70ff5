"""Chakra execution traces: the protobuf ``.et`` stream and the Chakra JSON ``workload_graph``.

Protobuf ``.et``
----------------
A stream of varint-length-delimited messages: one ``GlobalMetadata`` then ``Node`` messages (package
``ChakraProtoMsg``, mlcommons/chakra ``schema/protobuf/et_def.proto``). The wire format is decoded here directly
from the schema's field numbers (no generated code):

- ``GlobalMetadata``: 1 ``version`` (string), 2 ``attr`` (AttributeProto, repeated);
- ``Node``: 1 ``id``, 2 ``name``, 3 ``type`` (NodeType: 4 COMP, 5 COMM_SEND, 6 COMM_RECV, 7 COMM_COLL),
  4/5 ``ctrl_deps``/``data_deps``, 6 ``start_time_micros``, 7 ``duration_micros``, 8/9 ``inputs``/``outputs``,
  10 ``attr`` (repeated);
- ``AttributeProto``: 1 ``name``, then one value field: 3 double, 5 float, 7 int32, 9 int64, 11 uint32,
  13 uint64, 15 sint32, 17 sint64, 19 fixed32, 21 fixed64, 23 sfixed32, 25 sfixed64, 27 bool, 29 string,
  31 bytes, and the even numbers 4..32 for the matching ``*List`` messages (field 1 = values).

Sniffing decodes the first message and accepts the file only if it is a well-formed ``GlobalMetadata`` that
carries a version string (field 1) or a ``schema`` attribute.

What becomes an op
------------------
``COMM_COLL_NODE`` with a ``comm_type`` attribute (CollectiveCommType 0 ALL_REDUCE, 1 REDUCE, 2 ALL_GATHER,
5 BROADCAST, 6 ALL_TO_ALL, 7 REDUCE_SCATTER, 8 REDUCE_SCATTER_BLOCK, 9 BARRIER; 3 GATHER / 4 SCATTER are not
modelled) and ``comm_size`` in bytes; ``COMM_SEND_NODE`` -> send_recv (``COMM_RECV_NODE`` is the other half and
is not counted). CPU-side collective nodes (``is_cpu_op`` true, no ``comm_type``) only launch the GPU node and are
skipped. ``comm_size`` follows ASTRA-sim's convention, identical to the model's except for ALL_GATHER, where it is
the per-rank input (ASTRA-sim grows it by the group size), so the op's bytes are ``comm_size x group size``.
``pg_name`` names the process group (absent: the world group). An ET holds one iteration: counts are per
iteration, ``compute_time_s`` is the sum of the GPU compute nodes' durations (``is_cpu_op`` false; when no node
says, every compute node), and ``overlap_fraction`` is 0 (an ET has no timeline to measure it on).

Several ranks: files named ``<prefix>.<rank>.et`` (or ``.json``) with the same prefix are one job; the rank comes
from the name, the world size is ``max(rank) + 1`` (or the JSON's ``ngpus``) because the ET does not record it.
Ranks are merged as for Kineto (position-paired per group, per-rank sizes kept for uneven all-to-all).
"""

from __future__ import annotations

import math
import re
import struct

from fabric.errors import FabricError, ParseError
from fabric.limits import Limits, current_limits
from fabric.workload.io import load_json
from fabric.workload.model import UnparsedComm, Workload
from fabric.workload.parsers.kineto.events import RankTrace, _Call
from fabric.workload.parsers.kineto.merge import job_name_for, merge_ranks

__all__ = ["FORMAT", "sniff", "parse", "parse_groups", "load_rank", "load_comm_groups", "decode_et", "COMM_TYPES",
           "NODE_TYPES"]

FORMAT = "chakra"

NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE", 4: "COMP_NODE",
              5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE", 8: "STORAGE_NODE",
              9: "BATCH_NODE", 10: "CHECKPOINT_NODE"}
COMM_TYPES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
_KIND_OF_COMM = {0: "all_reduce", 1: "reduce", 2: "all_gather", 5: "broadcast", 6: "all_to_all",
                 7: "reduce_scatter", 8: "reduce_scatter", 9: "barrier"}
_COMP, _SEND, _RECV, _COLL = 4, 5, 6, 7

# ---------------------------------------------------------------- protobuf wire format


class _WireError(Exception):
    """Malformed protobuf bytes (turned into ParseError by the caller, with the message index)."""


def _varint(b: bytes, i: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if i >= end:
            raise _WireError("truncated varint")
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise _WireError("varint longer than 10 bytes")


def _fields(b: bytes, start: int, end: int):
    """Yield (field number, wire type, value) of one message; value is an int or a (start, end) slice."""
    i = start
    while i < end:
        key, i = _varint(b, i, end)
        fnum, wt = key >> 3, key & 7
        if fnum == 0:
            raise _WireError("field number 0")
        if wt == 0:
            v, i = _varint(b, i, end)
            yield fnum, 0, v
        elif wt == 2:
            n, i = _varint(b, i, end)
            if n > end - i:
                raise _WireError("length-delimited field runs past the end of its message")
            yield fnum, 2, (i, i + n)
            i += n
        elif wt == 1:
            if i + 8 > end:
                raise _WireError("truncated 64-bit field")
            yield fnum, 1, b[i:i + 8]
            i += 8
        elif wt == 5:
            if i + 4 > end:
                raise _WireError("truncated 32-bit field")
            yield fnum, 5, b[i:i + 4]
            i += 4
        else:
            raise _WireError(f"unsupported wire type {wt}")


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def _str(b: bytes, sl) -> str:
    try:
        return b[sl[0]:sl[1]].decode("utf-8")
    except UnicodeDecodeError as err:
        raise _WireError("string field is not UTF-8") from err


def _scalar(fnum: int, wt: int, v, b: bytes):
    """Value of an AttributeProto scalar field."""
    if fnum in (7,) and wt == 0:
        return _signed32(v)
    if fnum == 9 and wt == 0:
        return _signed64(v)
    if fnum in (11, 13) and wt == 0:
        return v
    if fnum in (15, 17) and wt == 0:
        return _zigzag(v)
    if fnum == 27 and wt == 0:
        return bool(v)
    if fnum == 3 and wt == 1:
        return struct.unpack("<d", v)[0]
    if fnum == 5 and wt == 5:
        return struct.unpack("<f", v)[0]
    if fnum == 19 and wt == 5:
        return struct.unpack("<I", v)[0]
    if fnum == 21 and wt == 1:
        return struct.unpack("<Q", v)[0]
    if fnum == 23 and wt == 5:
        return struct.unpack("<i", v)[0]
    if fnum == 25 and wt == 1:
        return struct.unpack("<q", v)[0]
    if fnum == 29 and wt == 2:
        return _str(b, v)
    if fnum == 31 and wt == 2:
        return b[v[0]:v[1]]
    raise _WireError(f"attribute value field {fnum} has wire type {wt}")


def _list(fnum: int, b: bytes, sl) -> list:
    """Values of a *List message (field 1, packed or not). Only integer, bool and string lists are decoded."""
    out: list = []
    for f, wt, v in _fields(b, sl[0], sl[1]):
        if f != 1:
            continue
        if fnum == 30 and wt == 2:
            out.append(_str(b, v))
        elif fnum in (8, 10, 12, 14, 16, 18, 28):
            vals = []
            if wt == 2:  # packed
                i, end = v
                while i < end:
                    x, i = _varint(b, i, end)
                    vals.append(x)
            elif wt == 0:
                vals.append(v)
            for x in vals:
                if fnum == 8:
                    x = _signed32(x)
                elif fnum == 10:
                    x = _signed64(x)
                elif fnum in (16, 18):
                    x = _zigzag(x)
                elif fnum == 28:
                    x = bool(x)
                out.append(x)
        if len(out) > 1_000_000:
            raise _WireError("attribute list too long")
    return out


def _attr(b: bytes, sl) -> tuple[str, object]:
    name = None
    value = None
    for f, wt, v in _fields(b, sl[0], sl[1]):
        if f == 1 and wt == 2:
            name = _str(b, v)
        elif f == 2:
            continue
        elif 3 <= f <= 32:
            if f % 2 == 0:
                if wt != 2:
                    raise _WireError(f"attribute list field {f} has wire type {wt}")
                value = _list(f, b, v)
            else:
                value = _scalar(f, wt, v, b)
    if name is None:
        raise _WireError("attribute without a name")
    return name, value


def _messages(b: bytes, max_messages: int):
    """Yield (index, start, end) of each length-delimited message."""
    i, n, end = 0, 0, len(b)
    while i < end:
        length, j = _varint(b, i, end)
        if length > end - j:
            raise _WireError(f"message {n} claims {length} bytes but only {end - j} remain (file truncated?)")
        yield n, j, j + length
        n += 1
        if n > max_messages:
            raise _WireError(f"more than {max_messages:,} messages")
        i = j + length


def _metadata(b: bytes, start: int, end: int) -> dict:
    meta: dict = {"version": None, "attr": {}}
    for f, wt, v in _fields(b, start, end):
        if f == 1:
            if wt != 2:
                raise _WireError("GlobalMetadata.version is not a string")
            meta["version"] = _str(b, v)
        elif f == 2:
            if wt != 2:
                raise _WireError("GlobalMetadata.attr is not a message")
            k, val = _attr(b, v)
            meta["attr"][k] = val
        else:
            raise _WireError(f"unexpected field {f} in GlobalMetadata")
    return meta


def _node(b: bytes, start: int, end: int, want_attrs) -> dict:
    node = {"id": 0, "name": "", "type": 0, "start": None, "dur": 0, "attr": {}}
    attr_slices = []
    for f, wt, v in _fields(b, start, end):
        if f == 1 and wt == 0:
            node["id"] = v
        elif f == 2 and wt == 2:
            node["name"] = _str(b, v)
        elif f == 3 and wt == 0:
            node["type"] = v
        elif f == 6 and wt == 0:
            node["start"] = v
        elif f == 7 and wt == 0:
            node["dur"] = v
        elif f == 10 and wt == 2:
            attr_slices.append(v)
        elif f in (1, 2, 3, 6, 7, 10):
            raise _WireError(f"Node field {f} has wire type {wt}")
    if want_attrs(node["type"]):
        for sl in attr_slices:
            k, val = _attr(b, sl)
            node["attr"][k] = val
    return node


def decode_et(data: bytes, source: str = "trace.et", limits: Limits | None = None) -> tuple[dict, list[dict]]:
    """Decode a Chakra ``.et`` stream into (metadata, nodes). Each node: id, name, type, start, dur, attr."""
    lim = current_limits() if limits is None else limits
    meta = None
    nodes: list[dict] = []
    idx = 0
    try:
        for i, s, e in _messages(data, lim.max_trace_events):
            idx = i
            if i == 0:
                meta = _metadata(data, s, e)
            else:
                nodes.append(_node(data, s, e, lambda t: True))
            idx = i + 1  # an error while reading the next length belongs to the next message
    except _WireError as err:
        what = "GlobalMetadata" if idx == 0 else f"node message #{idx}"
        raise ParseError(f"malformed Chakra protobuf in {what}: {err}", source=source, line=f"message {idx}") from err
    if meta is None:
        raise ParseError("empty Chakra trace: no GlobalMetadata message", source=source)
    return meta, nodes


def _sniff_et(head: bytes) -> bool:
    try:
        length, j = _varint(head, 0, len(head))
    except _WireError:
        return False
    if length == 0 or length > 1 << 20 or j + length > len(head):
        return False
    try:
        meta = _metadata(head, j, j + length)
    except (_WireError, ValueError, struct.error):
        return False
    version = meta.get("version")
    if isinstance(version, str) and version and version.isprintable():
        return True
    schema = meta["attr"].get("schema")
    return isinstance(schema, str) and bool(schema)


_JSON_GRAPH = re.compile(rb'"workload_graph"\s*:\s*\[')
_COMM_GROUPS_HEAD = re.compile(rb'^\s*\{\s*("\d+"\s*:\s*\[|\}\s*$)')


def sniff(head: bytes, name: str) -> bool:
    """A Chakra ``.et`` (first message decodes as GlobalMetadata with a version), Chakra JSON (workload_graph), or
    ASTRA-sim's communicator groups file ({"1": [ranks], ...})."""
    h = head.lstrip()
    if h.startswith(b"{"):
        return bool(_JSON_GRAPH.search(head)) or _is_comm_groups(head)
    return _sniff_et(head)


def _is_comm_groups(head: bytes) -> bool:
    return bool(_COMM_GROUPS_HEAD.match(head)) and not _JSON_GRAPH.search(head)


# ---------------------------------------------------------------- communicator groups (ASTRA-sim's file)


def load_comm_groups(name: str, data: bytes, limits: Limits | None = None) -> dict[str, tuple[int, ...]]:
    """ASTRA-sim's ``--comm-group-configuration`` file: {"<id>": [global ranks], ...} -> {id: ranks}."""
    lim = current_limits() if limits is None else limits
    doc = load_json(data, name, lim)
    if not isinstance(doc, dict):
        raise ParseError("a communicator groups file must be a JSON object {\"<id>\": [ranks]}", source=name)
    out: dict[str, tuple[int, ...]] = {}
    for k, v in doc.items():
        if not (isinstance(k, str) and k.isascii() and k.isdigit()) or int(k) == 0:
            raise ParseError(f"group id {k!r} is not a positive whole number (0 is the world group)", source=name,
                             line=str(k))
        if not isinstance(v, list) or not v or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 0
                                                       for r in v):
            raise ParseError(f"group {k}: expected a non-empty list of ranks (whole numbers >= 0), got {v!r:.80}",
                             source=name, line=str(k))
        if len(set(v)) != len(v):
            raise ParseError(f"group {k}: a rank is listed twice", source=name, line=str(k))
        out[str(int(k))] = tuple(v)
    return out


def _apply_comm_groups(trs: list[RankTrace], groups: dict[str, tuple[int, ...]], source: str) -> None:
    """Give every call on a listed group its group's size and ranks, and one key per family of groups.

    A family is what one communicator of the job is on every rank: the groups of one shape (size and rank steps),
    taken in id order on each rank (a rank's first group of 8 consecutive ranks with one for its second: tensor
    parallel, expert parallel). Calls are keyed by family so the instances merge into one process group."""
    world = max((t.world_size or 0) for t in trs) if trs else 0
    for k, ranks in groups.items():
        if world and max(ranks) >= world:
            raise ParseError(f"group {k} lists rank {max(ranks)}, beyond the {world} ranks of the traces",
                             source=source, line=k)
    shape = {k: (len(r), tuple(b - a for a, b in zip(r, r[1:]))) for k, r in groups.items()}
    family_of: dict[tuple[int, str], tuple] = {}
    first_id: dict[tuple, int] = {}
    for t in trs:
        used = sorted({c.group for c in t.calls if c.group in groups}, key=int)
        nth: dict[tuple, int] = {}
        for gid in used:
            if t.rank is not None and t.rank not in groups[gid]:
                raise ParseError(f"rank {t.rank} runs an operation on group {gid}, which does not list it",
                                 source=t.name, line=f"pg_name {gid}")
            s = shape[gid]
            fam = (s, nth.get(s, 0))
            nth[s] = fam[1] + 1
            family_of[(id(t), gid)] = fam
            first_id[fam] = min(first_id.get(fam, int(gid)), int(gid))
    for t in trs:
        for c in t.calls:
            fam = family_of.get((id(t), c.group))
            if fam is None:
                continue
            c.group_ranks = groups[c.group]
            c.group_size = len(c.group_ranks)
            c.group = f"pg{first_id[fam]}"


# ---------------------------------------------------------------- nodes -> one rank

_RANK_IN_NAME = re.compile(r"^(?P<prefix>.*?)[._-](?P<rank>\d+)\.(?:et|json)$", re.I)


def _rank_from_name(name: str) -> tuple[str, int | None]:
    base = re.sub(r"\.(gz|gzip)$", "", name, flags=re.I)
    m = _RANK_IN_NAME.match(base)
    if not m:
        return base, None
    return m.group("prefix"), int(m.group("rank"))


def _int_attr(v) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit():     # not '²' or other digit forms
        return int(v.strip())
    return None


def _rank_trace(name: str, nodes: list[dict], rank: int | None, world: int | None) -> RankTrace:
    """One rank's calls from decoded nodes (protobuf or JSON, same dict shape)."""
    calls: list[_Call] = []
    unparsed: dict[tuple[str, str], list] = {}
    warnings: list[str] = []
    any_flag = any(isinstance(n["attr"].get("is_cpu_op"), bool) for n in nodes)
    compute_us = 0.0
    recv = 0
    for n in nodes:
        t = n["type"]
        a = n["attr"]
        if t == _COMP:
            flag = a.get("is_cpu_op")
            if (flag is False) or (not any_flag):
                d = _int_attr(n.get("dur")) or 0
                compute_us += max(d, 0)
            continue
        if t not in (_SEND, _RECV, _COLL):
            continue
        if t == _RECV:
            recv += 1
            continue
        label = n["name"] or NODE_TYPES.get(t, str(t))
        pg = a.get("pg_name")
        gkey = "" if pg in (None, "") else str(pg)
        if t == _COLL:
            ct = _int_attr(a.get("comm_type"))
            if ct is None:
                if a.get("is_cpu_op") is True:
                    continue  # CPU-side launcher of the GPU collective node
                reason = "collective node without comm_type"
                kind_guess = _kind_from_kernel_name(label)
                if kind_guess:
                    reason = (f"{kind_guess} collective node without comm_type/comm_size: size unknown "
                              f"(no bytes invented)")
                unparsed.setdefault((label[:120], reason), [0, 0.0])
                rec = unparsed[(label[:120], reason)]
                rec[0] += 1
                rec[1] += (_int_attr(n.get("dur")) or 0) * 1e-6
                continue
            kind = _KIND_OF_COMM.get(ct)
            if kind is None:
                reason = (f"comm_type {COMM_TYPES[ct]} is not modelled by fabric" if ct in COMM_TYPES
                          else f"unknown comm_type {ct}")
                rec = unparsed.setdefault((label[:120], reason), [0, 0.0])
                rec[0] += 1
                rec[1] += (_int_attr(n.get("dur")) or 0) * 1e-6
                continue
        else:
            kind = "send_recv"
        size = _int_attr(a.get("comm_size"))
        if size is None and kind == "barrier":
            size = 0
        if size is None or size < 0:
            reason = "comm_size missing or negative: size unknown (no bytes invented)"
            rec = unparsed.setdefault((label[:120], reason), [0, 0.0])
            rec[0] += 1
            rec[1] += (_int_attr(n.get("dur")) or 0) * 1e-6
            continue
        start = _int_attr(n.get("start")) or 0
        c = _Call(coll=COMM_TYPES.get(_int_attr(a.get("comm_type")), "SEND") if kind != "send_recv" else "SEND",
                  kind=kind, nbytes=size, dtype="unknown", group=gkey, group_size=None, group_ranks=None,
                  group_desc=None, tid=0, ts=float(start), end=float(start), step=0,
                  per_rank_input=(kind == "all_gather"))
        calls.append(c)
    ups = [UnparsedComm(source=name, name=lab, count=cnt, total_time_s=tt, reason=reason)
           for (lab, reason), (cnt, tt) in sorted(unparsed.items())]
    if recv:
        warnings.append(f"{name}: {recv} COMM_RECV node(s) not counted (the matching send is)")
    if not calls:
        warnings.append(f"{name}: no communication node with a size could be read")
    return RankTrace(name=name, rank=rank, world_size=world, backend=None, pg_config={}, steps=[(0.0, 1.0)],
                     calls=calls, compute_us=[compute_us], busy_us=0.0, window_us=0.0, unparsed=ups,
                     warnings=warnings)


_KERNEL_COLL = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)|c10d::([a-z_]+)", re.I)


def _kind_from_kernel_name(name: str) -> str | None:
    m = _KERNEL_COLL.search(name)
    if not m:
        return None
    return (m.group(1) or m.group(2) or "").strip("_") or None


def _load_json_graph(name: str, data: bytes, limits: Limits) -> tuple[list[dict], int | None]:
    doc = load_json(data, name, limits)
    if not isinstance(doc, dict) or not isinstance(doc.get("workload_graph"), list):
        raise ParseError("expected a Chakra JSON object with a 'workload_graph' list", source=name,
                         line="workload_graph")
    ngpus = _int_attr(doc.get("ngpus"))
    if ngpus is not None and not (1 <= ngpus <= 10_000_000):
        raise ParseError(f"ngpus must be in 1..10000000, got {doc.get('ngpus')!r}", source=name, line="ngpus")
    nodes = []
    for i, raw in enumerate(doc["workload_graph"]):
        if not isinstance(raw, dict):
            raise ParseError("each workload_graph entry must be an object", source=name, line=f"workload_graph[{i}]")
        attrs: dict = {}
        if isinstance(raw.get("attr"), list):
            for at in raw["attr"]:
                if isinstance(at, dict) and isinstance(at.get("name"), str):
                    attrs[at["name"]] = at.get("value")
        for k in ("comm_type", "comm_size", "pg_name", "is_cpu_op", "comm_src", "comm_dst", "comm_tag"):
            if k in raw:
                attrs[k] = raw[k]
        t = _int_attr(raw.get("NodeType", raw.get("type", raw.get("node_type"))))
        if t is None:
            raise ParseError("node without a NodeType", source=name, line=f"workload_graph[{i}]")
        dur = raw.get("runtime", raw.get("duration_micros", 0))
        nm = raw.get("Name", raw.get("name", ""))
        nodes.append({"id": raw.get("Id", raw.get("id")), "name": nm if isinstance(nm, str) else str(nm), "type": t,
                      "start": None, "dur": _int_attr(dur) if _int_attr(dur) is not None else 0, "attr": attrs})
    return nodes, ngpus


def load_rank(name: str, data: bytes, limits: Limits | None = None) -> RankTrace:
    """One Chakra file (protobuf or JSON) as a rank trace; the rank comes from ``<prefix>.<rank>.et``."""
    lim = current_limits() if limits is None else limits
    _, rank = _rank_from_name(name)
    if data.lstrip()[:1] == b"{":
        nodes, ngpus = _load_json_graph(name, data, lim)
        world = ngpus
    else:
        meta, nodes = decode_et(data, name, lim)
        if not _sniff_et(data[:1 << 16]) and not (meta.get("version") or meta["attr"].get("schema")):
            raise ParseError("first message is not a Chakra GlobalMetadata with a version", source=name,
                             line="message 0")
        world = None
    if world is not None and rank is not None and rank >= world:
        raise ParseError(f"rank {rank} (from the file name) is not below ngpus {world}", source=name)
    return _rank_trace(name, nodes, rank, world)


# ---------------------------------------------------------------- entry points

_COMPUTE_NOTE = ("compute_time_s = sum of the GPU compute nodes' durations in the execution trace (one "
                 "iteration); overlap_fraction is 0 because an ET has no timeline to measure it on")


def parse_groups(files: list[tuple[str, bytes]], limits: Limits | None = None) -> list[tuple[tuple[str, ...], object]]:
    """Parse Chakra files into jobs: [(names of one job's files, Workload or ParseError)].

    Files named ``<prefix>.<rank>.et`` with the same prefix form one job; other files are jobs of their own.
    """
    results: list[tuple[tuple[str, ...], object]] = []
    loaded: list[tuple[str, RankTrace]] = []
    comm_files: dict[str, tuple[str, dict]] = {}          # job prefix -> (file name, groups)
    for name, data in files:
        try:
            if data.lstrip()[:1] == b"{" and _is_comm_groups(data[:4096]):
                comm_files[_comm_groups_prefix(name)] = (name, load_comm_groups(name, data, limits))
            else:
                loaded.append((name, load_rank(name, data, limits)))
        except FabricError as err:
            results.append(((name,), err if isinstance(err, ParseError) else ParseError(str(err), source=name)))
    groups: dict[str, list[RankTrace]] = {}
    for name, tr in loaded:
        prefix, rank = _rank_from_name(name)
        key = prefix if rank is not None else f"\0{name}"
        groups.setdefault(key, []).append(tr)
    if len(comm_files) == 1 and groups and not any(p in groups for p in comm_files):
        only = next(iter(comm_files.values()))        # one groups file, named otherwise: it serves every job
        comm_files = {key: only for key in groups}
    for prefix, (cname, _) in comm_files.items():
        if prefix not in groups:
            results.append(((cname,), ParseError(f"communicator groups file without its traces: no "
                                                 f"{prefix}.<rank>.et was given with it", source=cname)))
    for key, trs in groups.items():
        names = tuple(t.name for t in trs)
        comm = comm_files.get(key)
        if comm is not None:
            names = names + (comm[0],)
        try:
            ranks = [t.rank for t in trs]
            if len(trs) > 1:
                seen: dict[int, str] = {}
                for t in trs:
                    if t.rank in seen:
                        raise ParseError(f"{seen[t.rank]} and {t.name} both claim rank {t.rank}", source=t.name)
                    seen[t.rank] = t.name
            worlds = {t.world_size for t in trs if t.world_size}
            if len(worlds) > 1:
                raise ParseError(f"rank files disagree on ngpus ({sorted(worlds)})", source=trs[0].name, line="ngpus")
            recorded = bool(worlds)
            world = next(iter(worlds)) if worlds else None
            hint = "the world size (a Chakra ET does not record it)"
            if world is None:
                known = [r for r in ranks if r is not None]
                world = max([len(trs)] + [r + 1 for r in known])
            for t in trs:
                t.world_size = world
            if comm is not None:
                _apply_comm_groups(trs, comm[1], comm[0])
            wl = merge_ranks(trs, job_name_for(list(names), "chakra"), compute_note=_COMPUTE_NOTE,
                             trace_label="Chakra", world_hint=hint, compute_spread="ranks")
            if not recorded:
                wl = _with_warning(wl, f"{names[0]}: a Chakra ET does not record the world size: assumed {world} "
                                       f"(highest rank in the file names + 1); correct it if the job was larger")
            results.append((names, wl))
        except FabricError as err:
            results.append((names, err if isinstance(err, ParseError) else ParseError(str(err))))
    return results


def _comm_groups_prefix(name: str) -> str:
    """The job a groups file belongs to: ``<prefix>.comm_groups.json`` (or ``<prefix>_comm_group.json``)."""
    base = re.sub(r"\.(gz|gzip)$", "", name, flags=re.I)
    m = re.match(r"^(?P<prefix>.*?)[._-]comm[._-]?groups?\.json$", base, re.I)
    return m.group("prefix") if m else base


def _with_warning(wl: Workload, msg: str) -> Workload:
    from dataclasses import replace

    return replace(wl, warnings=wl.warnings + (msg,))


def parse(files: list[tuple[str, bytes]], limits: Limits | None = None) -> Workload:
    """Parse Chakra files into a workload; raises the first ParseError."""
    from fabric.workload.ingest import parse_grouped

    return parse_grouped(parse_groups, files, limits, "Chakra")
