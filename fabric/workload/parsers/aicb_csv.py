"""Parser for AICB communication CSVs (aliyun/aicb ``*_workload.csv`` and ``*_log.csv``).

Header ``comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,algbw,busbw,count``
(columns are mapped by name; the first four are required). Generated workload files start with a non-CSV line
``[rank0 ~ rankN]`` that gives the world size N + 1. Values: ``CommType.<kind>``, ``CommGroup.<dp|tp|ep|pp>_group``
or ``CommGroup.all``, ``msg_size`` in bytes (AICB uses nccl-tests' size convention: all-gather output,
reduce-scatter input), ``None`` where nothing was measured, ``_elapsed_time`` in milliseconds (AICB
``log_analyzer``: "time (ms)").

``CommType.epoch_end`` rows split the file into iterations; as AICB's own log analyzer does, everything before the
first ``epoch_end`` is initialisation (kept as facts, not ops) and every later segment is one training iteration.
Ops are the rows of the training iterations, merged by (kind, group, bytes, stage), with ``count`` summed and
divided by the number of iterations. When timings are present each measured row also becomes a
:class:`Measurement`; algbw and busbw are recomputed from bytes and time with nccl-tests' bus factors (AICB's own
columns use bytes/ms/2^20), and ``CommType.computation`` rows add to the compute time.

Missing fields (measured cluster logs have them) never reject the file. A row whose ``comm_group_size`` is
``None`` takes its group's size from the group's other rows, else from the parallel layout: the sizes in the file
name (``..._tp2_pp1_ep8_...``, ``world_size16``), ``CommGroup.all`` = the world, and for tp/pp/dp the world size
divided by the other three of tp x pp x dp x cp (each from the rows or the name; cp 1 when neither gives it); a
warning names the rows and where the size came from. Rows whose size still cannot be found (an ``ep_group`` row
with no ``ep`` in the name and no other ep row), and rows without ``comm_group`` or ``msg_size``, are listed as
:class:`UnparsedComm` with their line numbers and the reason.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from pathlib import PurePath

from fabric.errors import ParseError
from fabric.workload.model import (
    MAX_OP_BYTES, MAX_RANKS, CommOp, Job, Measurement, ProcessGroup, UnparsedComm, Workload,
)
from fabric.workload.parsers import nccl_tests

__all__ = ["FORMAT", "REQUIRED_COLUMNS", "sniff", "parse", "bus_factor", "layout_from_name"]

FORMAT = "aicb_csv"

REQUIRED_COLUMNS = ("comm_type", "comm_group", "comm_group_size", "msg_size")
_RANKS_LINE = re.compile(r"^\[rank(\d+)\s*~\s*rank(\d+)\]\s*$")
_KINDS = {
    "all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
    "all_to_all": "all_to_all", "all_to_allv": "all_to_allv", "alltoall": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "barrier": "barrier", "isend": "send_recv",
    "irecv": "send_recv", "send": "send_recv", "recv": "send_recv", "sendrecv": "send_recv",
}
_ROLES = {"dp_group": "dp", "tp_group": "tp", "ep_group": "ep", "pp_group": "pp", "cp_group": "cp",
          "all": "world"}


def bus_factor(kind: str, n: int) -> float:
    """nccl-tests bus-bandwidth factor of ``kind`` over ``n`` ranks (facts.md section 1)."""
    if n <= 1:
        return 1.0 if kind in ("broadcast", "reduce", "send_recv") else 0.0
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "all_to_allv"):
        return (n - 1) / n
    return 1.0


def _none(v: str | None) -> bool:
    return v is None or v.strip() in ("", "None", "none", "nan")


def _strip_enum(v: str, prefix: str) -> str:
    v = v.strip()
    return v[len(prefix):] if v.startswith(prefix) else v


def _num(v: str, what: str, source: str, line: int, *, integer: bool) -> float:
    try:
        x = float(v)
    except ValueError:
        raise ParseError(f"{what} {v!r} is not a number", source=source, line=line) from None
    if not math.isfinite(x) or x < 0:
        raise ParseError(f"{what} {v!r} is not a finite non-negative number", source=source, line=line)
    if integer and not x.is_integer():
        raise ParseError(f"{what} {v!r} is not a whole number", source=source, line=line)
    return x


def _split_lines(text: str) -> list[tuple[int, str]]:
    return [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]


def sniff(head: bytes, name: str) -> bool:
    """True when one of the first two non-empty lines is an AICB CSV header (after an optional rank line)."""
    lines = _split_lines(head.decode("utf-8", errors="replace"))[:2]
    for _, ln in lines:
        cols = [c.strip() for c in ln.split(",")]
        if all(c in cols for c in REQUIRED_COLUMNS):
            return True
    return False


def _parse_one(fname: str, text: str, jname: str):
    lines = _split_lines(text)
    if not lines:
        raise ParseError("empty file; expected an AICB CSV", source=fname)
    world: int | None = None
    pos = 0
    m = _RANKS_LINE.match(lines[0][1].strip())
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi < lo or hi - lo + 1 > MAX_RANKS:
            raise ParseError(f"rank range {lines[0][1].strip()} is not plausible", source=fname, line=lines[0][0])
        world = hi - lo + 1
        pos = 1
    if pos >= len(lines):
        raise ParseError("missing the CSV header line", source=fname, line=lines[-1][0] + 1)
    hline, htext = lines[pos]
    header = [c.strip() for c in next(csv.reader([htext]))]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ParseError(f"CSV header lacks column(s) {', '.join(missing)}; expected "
                         "comm_type,comm_group,comm_group_size,msg_size,stage,...", source=fname, line=hline)
    col = {c: i for i, c in enumerate(header)}
    segments: list[list[tuple]] = [[]]
    epoch_times: list[float] = []
    unknown: Counter = Counter()
    dropped: list[tuple] = []     # (comm type, group, line, count, time ms, reason): rows that cannot be used
    ctypes: dict[int, str] = {}   # line -> CommType name of a communication row
    for lineno, ln in lines[pos + 1:]:
        try:
            cells = next(csv.reader([ln]))
        except csv.Error as err:
            raise ParseError(f"malformed CSV row ({err})", source=fname, line=lineno) from None
        if len(cells) != len(header):
            raise ParseError(f"row has {len(cells)} cells; the header has {len(header)}", source=fname, line=lineno)

        def cell(name: str, default: str | None = None) -> str | None:
            return cells[col[name]] if name in col else default

        ctype = _strip_enum(cell("comm_type"), "CommType.")
        elapsed = cell("_elapsed_time")
        t_ms = None if _none(elapsed) else _num(elapsed, "_elapsed_time", fname, lineno, integer=False)
        if ctype == "epoch_end":
            if segments[-1]:
                segments.append([])
            if t_ms is not None:
                epoch_times.append(t_ms)
            continue
        cnt_cell = cell("count", "1")
        count = 1.0 if _none(cnt_cell) else _num(cnt_cell, "count", fname, lineno, integer=False)
        stage = (cell("stage", "") or "").strip()
        if ctype == "computation":
            segments[-1].append(("compute", None, 0, 0, stage, count, t_ms, lineno))
            continue
        if not re.fullmatch(r"[A-Za-z_]+", ctype):
            raise ParseError(f"comm_type {cell('comm_type')!r} is not a CommType name", source=fname, line=lineno)
        kind = _KINDS.get(ctype)
        if kind is None:
            unknown[ctype] += count
            continue
        grp = _strip_enum(cell("comm_group"), "CommGroup.")
        if _none(grp):
            dropped.append((ctype, "", lineno, count, t_ms, "comm_group is None: the row names no group"))
            continue
        if _none(cell("msg_size")):
            dropped.append((ctype, grp, lineno, count, t_ms, "msg_size is None: the row has no message size"))
            continue
        gsize_cell = cell("comm_group_size")
        gsize = None if _none(gsize_cell) else int(_num(gsize_cell, "comm_group_size", fname, lineno, integer=True))
        nbytes = int(_num(cell("msg_size"), "msg_size", fname, lineno, integer=True))
        if (gsize is not None and not 1 <= gsize <= MAX_RANKS) or nbytes > MAX_OP_BYTES:
            raise ParseError("comm_group_size or msg_size out of range", source=fname, line=lineno)
        segments[-1].append((kind, grp, gsize, nbytes, stage, count, t_ms, lineno))
        ctypes[lineno] = ctype
    sizes: dict[str, int] = {}
    for seg in segments:
        for kind, grp, gsize, *_ in seg:
            if kind == "compute" or gsize is None:
                continue
            if grp in sizes and sizes[grp] != gsize:
                raise ParseError(f"group {grp} appears with sizes {sizes[grp]} and {gsize}", source=fname)
            sizes[grp] = gsize
    warnings: list[str] = []
    layout = layout_from_name(fname)
    if world is None and layout.get("world"):
        world = layout["world"]
        warnings.append(f"{fname}: no [rank0 ~ rankN] line; world size {world} taken from the file name")
    if world is None:
        world = max(sizes.values(), default=1)
        warnings.append(f"{fname}: no [rank0 ~ rankN] line; world size assumed to be the largest group, {world}")
    segments, inferred = _fill_group_sizes(segments, sizes, layout, world, dropped, ctypes)
    for grp, (size, why, lines) in sorted(inferred.items()):
        if size is not None:
            warnings.append(f"{fname}: comm_group_size is None in {len(lines)} {grp} row(s) (line(s) "
                            f"{_lines(lines)}): {size} taken from {why}")
    segments = [s for s in segments if s]
    if not segments:
        if dropped:
            raise ParseError(f"no usable communication row: {len(dropped)} row(s) lack a field (first: line "
                             f"{dropped[0][2]}, {dropped[0][5]})", source=fname, line=dropped[0][2])
        raise ParseError("no communication rows", source=fname, line=hline + 1)
    init, train = ([], segments) if len(segments) == 1 else (segments[0], segments[1:])
    steps = len(train)
    for grp, gsize in sizes.items():
        if gsize > world:
            raise ParseError(f"group {grp} has {gsize} ranks, more than the world of {world}", source=fname)
    groups = {}
    for grp, gsize in sizes.items():
        gname = _ROLES.get(grp, grp.removesuffix("_group"))
        groups[grp] = ProcessGroup(name=gname, size=gsize, role=_ROLES.get(grp, "unknown"),
                                   role_source="trace" if grp in _ROLES else "default")
    agg: dict[tuple, float] = {}
    compute_ms = 0.0
    measurements = []
    for seg in train:
        for kind, grp, gsize, nbytes, stage, count, t_ms, _ in seg:
            if kind == "compute":
                compute_ms += (t_ms or 0.0) * count
                continue
            key = (kind, groups[grp].name, nbytes, stage)
            agg[key] = agg.get(key, 0.0) + count
    for seg in segments:
        for kind, grp, gsize, nbytes, stage, count, t_ms, _ in seg:
            if kind != "compute" and t_ms is not None and t_ms > 0 and kind != "barrier":
                t = t_ms * 1e-3
                measurements.append(Measurement(
                    source=fname, kind=kind, bytes=nbytes, time_s=t, ranks=gsize, algbw_bytes_per_s=nbytes / t,
                    busbw_bytes_per_s=nbytes / t * bus_factor(kind, gsize)))
    ops = tuple(CommOp(kind=k[0], bytes=k[2], group=k[1], count_per_step=c / steps, name=k[3] or k[0])
                for k, c in agg.items())
    used = {o.group for o in ops}
    job_groups = tuple(g for g in groups.values() if g.name in used) or (
        ProcessGroup(name="world", size=world, role="world", rank_start=0, rank_stride=1, role_source="trace"),)
    notes = [f"AICB comm list, {world} ranks, {steps} training iteration(s); init rows kept as facts"]
    job = Job(name=jname, kind="training", world_size=world, groups=job_groups, ops=ops,
              compute_time_s=compute_ms * 1e-3 / steps, steps_observed=steps if epoch_times else 0,
              notes=tuple(notes))
    per_type = Counter()
    for seg in train:
        for kind, grp, gsize, nbytes, stage, count, *_ in seg:
            if kind != "compute":
                per_type[(kind, groups[grp].name)] += count
    init_bytes = sum(r[3] * r[5] for r in init if r[0] != "compute")
    facts = [("world size", str(world)), ("iterations", str(steps)),
             ("init rows", str(len(init))), ("init bytes", f"{init_bytes:.0f}")]
    facts += [(f"group {g.name}", str(g.size)) for g in groups.values()]
    facts += [(f"{k} in {g} per iteration", f"{c / steps:g}") for (k, g), c in sorted(per_type.items())]
    facts.append(("timings", "measured" if measurements else "none (workload file)"))
    if epoch_times:
        facts.append(("iteration time s (mean)", f"{sum(epoch_times) / len(epoch_times) * 1e-3:.6g}"))
    unparsed = [UnparsedComm(source=fname, name=f"CommType.{k}", count=int(c), total_time_s=0.0,
                             reason="AICB comm type with no fabric collective kind") for k, c in unknown.items()]
    by_reason: dict[tuple[str, str, str], list] = {}
    for ctype, grp, lineno, count, t_ms, reason in dropped:
        rec = by_reason.setdefault((ctype, grp, reason), [[], 0.0, 0.0])
        rec[0].append(lineno)
        rec[1] += count
        rec[2] += (t_ms or 0.0) * 1e-3
    for (ctype, grp, reason), (lines, count, secs) in by_reason.items():
        unparsed.append(UnparsedComm(
            source=fname, name=f"CommType.{ctype}" + (f" on CommGroup.{grp}" if grp else ""), count=int(round(count)),
            total_time_s=secs, reason=f"{reason} (line(s) {_lines(lines)}); row(s) not used"))
    if dropped:
        warnings.append(f"{fname}: {len(dropped)} row(s) could not be used (listed as unparsed with the reason)")
    return job, facts, warnings, measurements, unparsed


_LAYOUT = re.compile(r"(?<![A-Za-z])(tp|pp|dp|ep|cp)[-_]?(\d+)(?![A-Za-z])", re.I)
_WORLD = re.compile(r"world[-_]?size[-_]?(\d+)", re.I)


def layout_from_name(name: str) -> dict[str, int]:
    """Parallel sizes written in an AICB file name: ``..._tp2_pp1_ep8_...`` -> {"tp": 2, "pp": 1, "ep": 8}; also
    ``world_size16`` -> {"world": 16}. Zero or implausible values are ignored."""
    base = PurePath(name).name
    out: dict[str, int] = {}
    for key, val in _LAYOUT.findall(base):
        v = int(val)
        if 1 <= v <= MAX_RANKS:
            out.setdefault(key.lower(), v)
    m = _WORLD.search(base)
    if m and 1 <= int(m.group(1)) <= MAX_RANKS:
        out["world"] = int(m.group(1))
    return out


def _lines(lines: list[int]) -> str:
    shown = ", ".join(str(x) for x in lines[:10])
    return shown + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")


def _fill_group_sizes(segments, sizes: dict[str, int], layout: dict[str, int], world: int, dropped: list,
                      ctypes: dict[int, str]):
    """Rows whose comm_group_size is None get their group's size from the group's other rows, else from the
    parallel layout (file name, the other groups' sizes, the world size: world = tp x pp x dp x cp); rows whose size
    cannot be found move to ``dropped``. Returns (segments, {group: (size or None, where from, lines)})."""
    known = {_ROLES.get(g, g.removesuffix("_group")): n for g, n in sizes.items()}
    inferred: dict[str, tuple] = {}

    def from_layout(grp: str) -> tuple[int | None, str]:
        role = _ROLES.get(grp, grp.removesuffix("_group"))
        if role == "world":
            return world, "the world size (CommGroup.all spans every rank)"
        if role in layout:
            return layout[role], f"the file name ({role}{layout[role]})"
        if role in ("tp", "pp", "dp"):
            par: dict[str, tuple[int, str]] = {}
            for r in ("tp", "pp", "dp", "cp"):
                if r in known:
                    par[r] = (known[r], "rows")
                elif r in layout:
                    par[r] = (layout[r], "file name")
            par.setdefault("cp", (1, "assumed, no cp in the name or rows"))
            others = [r for r in ("tp", "pp", "dp", "cp") if r != role]
            if all(r in par for r in others):
                prod = 1
                for r in others:
                    prod *= par[r][0]
                if prod and world % prod == 0:
                    detail = " x ".join(f"{r} {par[r][0]} ({par[r][1]})" for r in others)
                    return world // prod, f"the layout: world {world} / ({detail})"
        return None, ""

    out = []
    for seg in segments:
        new_seg = []
        for row in seg:
            kind, grp, gsize, nbytes, stage, count, t_ms, lineno = row
            if kind == "compute" or gsize is not None:
                new_seg.append(row)
                continue
            if grp not in inferred:
                if grp in sizes:
                    inferred[grp] = (sizes[grp], "the group's other rows", [])
                else:
                    size, why = from_layout(grp)
                    if size is not None and size > world:
                        size, why = None, ""
                    inferred[grp] = (size, why, [])
            size, _, lines = inferred[grp]
            lines.append(lineno)
            if size is None:
                dropped.append((ctypes.get(lineno, kind), grp, lineno, count, t_ms,
                                "comm_group_size is None and neither the group's other rows nor the parallel "
                                "layout (file name, other groups, world size) give it"))
                continue
            new_seg.append((kind, grp, size, nbytes, stage, count, t_ms, lineno))
        out.append(new_seg)
    for grp, (size, _, _) in inferred.items():
        if size is not None:
            sizes.setdefault(grp, size)
    return out, inferred


def parse(files: list[tuple[str, bytes]]) -> Workload:
    """Parse AICB comm CSVs; each file becomes its own training job (see the module docstring)."""
    if not files:
        raise ParseError("no files given")
    jobs, facts, warnings, measurements, unparsed = [], [], [], [], []
    multi = len(files) > 1
    for (fname, data), jname in zip(files, nccl_tests.unique_job_names(files)):
        job, f, w, m, u = _parse_one(fname, data.decode("utf-8", errors="replace"), jname)
        jobs.append(job)
        facts.extend(((f"{fname}: {k}" if multi else k), v) for k, v in f)
        warnings.extend(w)
        measurements.extend(m)
        unparsed.extend(u)
    wl = Workload(jobs=tuple(jobs), sources=tuple(f for f, _ in files), unparsed=tuple(unparsed),
                  measurements=tuple(measurements), facts=tuple(facts), warnings=tuple(warnings),
                  name=jobs[0].name if len(jobs) == 1 else PurePath(files[0][0]).stem)
    return nccl_tests.checked(wl, files[0][0] if len(files) == 1 else None)

