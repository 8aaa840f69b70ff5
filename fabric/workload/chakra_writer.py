"""Write a training job as Chakra execution traces, one ``<prefix>.<rank>.et`` per rank, and the communicator
groups file ASTRA-sim 2.x reads with ``--comm-group-configuration``.

The protobuf wire format is written directly from the field numbers of mlcommons/chakra ``et_def.proto`` (the
same numbers :mod:`fabric.workload.parsers.chakra` reads; no generated code): a varint-length-delimited
``GlobalMetadata`` (version ``0.0.4``) then one ``Node`` per operation.

One trace holds one iteration (one step) of the job:

- a ``COMP_NODE`` ``compute`` with ``duration_micros`` = the job's compute time per step;
- then each op of the job, ``round(count_per_step)`` times, in the job's order, on the ranks of its group's
  instances: ``COMM_COLL_NODE`` with ``comm_type`` and ``comm_size`` (ASTRA-sim's convention: an all-gather's
  ``comm_size`` is the per-rank input, the op's bytes divided by the group size; an uneven all-to-all sends this
  rank's own size), ``pg_name`` = the id of the rank's group instance in the communicator groups file;
  a ``send_recv`` becomes ``COMM_SEND_NODE`` to the next member of the group and ``COMM_RECV_NODE`` from the
  previous one (the evaluator's pipeline chain: no wrap around);
- every node depends on the one before (``data_deps``): compute and communication run one after another, so the
  trace's step is ``compute + every op's time`` (what the evaluator calls the step with no overlap).

What a trace cannot hold is returned as notes, never dropped silently: reduce and barrier ops (ASTRA-sim has no
such collective), counts that are not whole numbers (rounded), the job's overlap of communication with compute.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabric.errors import WorkloadError
from fabric.workload.groups import group_instances
from fabric.workload.model import Job

__all__ = ["ChakraExport", "job_to_chakra", "write_chakra", "ET_VERSION", "COMM_TYPE_CODES"]

ET_VERSION = "0.0.4"
#: Chakra CollectiveCommType codes of the op kinds a trace can carry
COMM_TYPE_CODES = {"all_reduce": 0, "all_gather": 2, "broadcast": 5, "all_to_all": 6, "all_to_allv": 6,
                   "reduce_scatter": 7}
_COMP, _SEND, _RECV, _COLL = 4, 5, 6, 7
_NOT_EXPRESSIBLE = {"reduce": "ASTRA-sim 2.x has no reduce collective",
                    "barrier": "ASTRA-sim 2.x has no barrier collective"}


# ---------------------------------------------------------------- protobuf wire format


def _varint(v: int) -> bytes:
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _len_field(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _attr_int(name: str, v: int) -> bytes:
    return _len_field(10, _len_field(1, name.encode()) + _key(9, 0) + _varint(int(v)))


def _attr_bool(name: str, v: bool) -> bytes:
    return _len_field(10, _len_field(1, name.encode()) + _key(27, 0) + _varint(1 if v else 0))


def _attr_str(name: str, v: str) -> bytes:
    return _len_field(10, _len_field(1, name.encode()) + _len_field(29, v.encode()))


_CPU_FALSE = _attr_bool("is_cpu_op", False)


def _node(nid: int, name: str, ntype: int, attrs: bytes, dep: int | None, duration_us: int | None = None) -> bytes:
    body = _key(1, 0) + _varint(nid) + _len_field(2, name.encode()) + _key(3, 0) + _varint(ntype)
    if dep is not None:
        body += _len_field(5, _varint(dep))          # data_deps, packed
    if duration_us is not None:
        body += _key(7, 0) + _varint(duration_us)
    body += attrs
    return _varint(len(body)) + body


def _chained(middle: bytes, nid: int) -> bytes:
    """A node with id ``nid`` depending on ``nid - 1``; ``middle`` = its name, type and attributes, encoded."""
    dep = _varint(nid - 1)
    body = b"\x08" + _varint(nid) + b"\x2a" + _varint(len(dep)) + dep + middle
    return _varint(len(body)) + body


def _middle(name: str, ntype: int, attrs: bytes) -> bytes:
    return _len_field(2, name.encode()) + _key(3, 0) + _varint(ntype) + attrs


def _metadata() -> bytes:
    body = _len_field(1, ET_VERSION.encode())
    return _varint(len(body)) + body


# ---------------------------------------------------------------- job -> traces


@dataclass(frozen=True)
class ChakraExport:
    """A job as Chakra traces: ``traces[rank]`` bytes, ``comm_groups`` {id: ranks}, and ``notes`` on what the
    traces leave out or round."""

    job_name: str
    world_size: int
    traces: tuple[bytes, ...]
    comm_groups: dict
    notes: tuple[str, ...]
    nodes_per_rank: int

    def comm_groups_json(self) -> str:
        """The communicator groups file (ASTRA-sim's ``--comm-group-configuration``): {"id": [ranks]}."""
        return json.dumps({str(k): list(v) for k, v in self.comm_groups.items()}, indent=None)


def job_to_chakra(job: Job) -> ChakraExport:
    """One iteration of a training ``job`` as one Chakra trace per rank (see the module docstring)."""
    if job.kind != "training":
        raise WorkloadError(f"job {job.name!r} is a {job.kind} job: only a training job's step is exported to Chakra "
                            f"(a serving job's requests and a storage job's bursts have no Chakra form)")
    world = int(job.world_size)
    notes: list[str] = []
    comm_groups: dict[int, tuple[int, ...]] = {}
    #: per group name: (array of instance ids per rank or -1, instances array)
    placed: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    next_id = 1
    for g in job.groups:
        inst = group_instances(g, world)
        of_rank = np.full(world, -1, dtype=np.int64)
        for row in inst:
            comm_groups[next_id] = tuple(int(r) for r in row)
            of_rank[row] = next_id
            next_id += 1
        placed[g.name] = (of_rank, inst)
        uncovered = int((of_rank < 0).sum())
        if uncovered:
            notes.append(f"group {g.name!r}: {uncovered} of {world} ranks are in no instance of it; their traces "
                         f"leave its ops out")
    per_rank: list[list[bytes]] = [[] for _ in range(world)]
    comp_us = int(round(job.compute_time_s * 1e6))
    for r in range(world):
        per_rank[r].append(_node(1, "compute", _COMP, _CPU_FALSE, None, comp_us))
    if any(op.overlap_fraction > 0 for op in job.ops):
        notes.append("communication the job overlaps with compute runs after the compute here (a trace of one "
                     "dependency chain); compare with the evaluator's step at no overlap")
    for k, op in enumerate(job.ops):
        if op.kind in _NOT_EXPRESSIBLE:
            notes.append(f"op {k} ({op.kind} on {op.group!r}) left out: {_NOT_EXPRESSIBLE[op.kind]}")
            continue
        count = int(math.floor(op.count_per_step + 0.5))
        if not math.isclose(count, op.count_per_step, rel_tol=0, abs_tol=1e-9):
            notes.append(f"op {k} ({op.kind} on {op.group!r}) runs {op.count_per_step:g} times per step: written "
                         f"{count} times (a trace holds whole operations)")
        if count == 0:
            continue
        if op.group not in placed:
            raise WorkloadError(f"job {job.name!r}: op {k} uses group {op.group!r}, which the job does not define")
        of_rank, inst = placed[op.group]
        size = inst.shape[1]
        label = op.name or f"{op.kind}_{k}"
        if op.kind == "broadcast":
            notes.append(f"op {k} (broadcast on {op.group!r}): ASTRA-sim replays a broadcast as a fixed 1 ns, not "
                         f"by its bytes")
        if op.kind == "send_recv":
            for row in inst:
                for pos, r in enumerate(row.tolist()):
                    for c in range(count):
                        if pos + 1 < size:
                            dst = int(row[pos + 1])
                            per_rank[r].append(_middle(f"{label}_send", _SEND, _attr_int("comm_src", r)
                                                + _attr_int("comm_dst", dst) + _attr_int("comm_size", op.bytes)
                                                + _attr_int("comm_tag", k * 1_000_000 + c)
                                                + _attr_str("pg_name", str(int(of_rank[r]))) + _CPU_FALSE))
                        if pos > 0:
                            src = int(row[pos - 1])
                            per_rank[r].append(_middle(f"{label}_recv", _RECV, _attr_int("comm_src", src)
                                                + _attr_int("comm_dst", r) + _attr_int("comm_size", op.bytes)
                                                + _attr_int("comm_tag", k * 1_000_000 + c)
                                                + _attr_str("pg_name", str(int(of_rank[r]))) + _CPU_FALSE))
            continue
        ctype = COMM_TYPE_CODES[op.kind]
        cache: dict[tuple[int, int], bytes] = {}
        for row in inst:
            for pos, r in enumerate(row.tolist()):
                if op.kind == "all_gather":
                    nbytes = op.bytes // size
                elif op.kind == "all_to_allv" and op.per_rank_bytes is not None:
                    nbytes = int(op.per_rank_bytes[pos])
                else:
                    nbytes = int(op.bytes)
                ck = (nbytes, int(of_rank[r]))
                mid = cache.get(ck)
                if mid is None:
                    mid = cache[ck] = _middle(label, _COLL, _CPU_FALSE + _attr_int("comm_type", ctype)
                                              + _attr_int("comm_size", nbytes) + _attr_str("pg_name", str(ck[1])))
                per_rank[r].extend([mid] * count)
        if op.kind == "all_gather" and op.bytes % size:
            notes.append(f"op {k} (all_gather on {op.group!r}): {op.bytes:,} B is not a multiple of the group "
                         f"size {size}: each rank's input written as {op.bytes // size:,} B")
    traces = []
    longest = 0
    for r in range(world):
        items = per_rank[r]
        out = [_metadata(), items[0]]
        out.extend(_chained(mid, i) for i, mid in enumerate(items[1:], start=2))
        longest = max(longest, len(items))
        traces.append(b"".join(out))
    return ChakraExport(job_name=job.name, world_size=world, traces=tuple(traces), comm_groups=comm_groups,
                        notes=tuple(notes), nodes_per_rank=longest)


def write_chakra(export: ChakraExport, directory: str | Path, prefix: str = "workload") -> list[Path]:
    """Write ``<directory>/<prefix>.<rank>.et`` for every rank and ``<prefix>.comm_groups.json``; the paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, data in enumerate(export.traces):
        p = d / f"{prefix}.{r}.et"
        p.write_bytes(data)
        paths.append(p)
    p = d / f"{prefix}.comm_groups.json"
    p.write_text(export.comm_groups_json())
    paths.append(p)
    return paths
