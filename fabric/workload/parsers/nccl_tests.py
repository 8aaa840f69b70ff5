"""Parser for nccl-tests stdout (``all_reduce_perf``, ``all_gather_perf``, ... from NVIDIA/nccl-tests).

What it reads
-------------
- the run header ``# nThread N nGpus N minBytes N maxBytes N step: ... iters: N validation: N``;
- the device list ``#  Rank  R Group G Pid P on HOST device D [busid] GPU-NAME`` (old layout: no ``Group``);
- one or more result tables. Columns are mapped from each table's own header line, because the column set differs
  per collective and per nccl-tests version: new layout ``size count type redop root time algbw busbw #wrong`` x2,
  old layout ``size count type [redop] [root] time algbw busbw error`` x2. The first half of the metric columns is
  out-of-place, the second half in-place. ``#wrong``/``error`` may be ``N/A``;
- the footer ``# Out of bounds values : N OK`` and ``# Avg bus bandwidth : X``.

Lines may carry an OpenMPI ``[1,N]<stdout>:`` prefix and be interleaved with ``NCCL INFO`` lines and shell-trace
(``+ cmd``) lines; those are noise and skipped, wherever they fall: before, between and after the table's lines, and
inside a row (NCCL shares nccl-tests' stdout, so a message logged while a row is printed splits it: the row's
cells before the message and on the next row line are joined). A line inside a table whose first field is a number
but which does not parse as a row raises :class:`ParseError` with its line number (a truncated or corrupted table is
never silently shortened; neither is a row whose interrupted rest never comes).

The collective kind of a table comes from the content: a ``# Collective test starting: all_reduce_perf`` line, a
``*_perf`` binary named in the log, and otherwise from the numbers themselves (which optional columns the header has,
the ``redop``/``root`` cells, ``size / (count x dtype)`` which is 1 for all-reduce-like tests and the rank count for
gather-like ones, and busbw/algbw which is nccl-tests' bus factor 2(n-1)/n, (n-1)/n or 1). When these leave more
than one kind, the in-place error column decides where it can: nccl-tests checks in-place results for every test
but sendrecv and alltoall (no in-place mode: N/A there while the out-of-place cell is a count), so on 2 ranks,
where all_reduce's bus factor 2(n-1)/n is sendrecv's 1, a checked in-place column says all_reduce. Inside an
NCCL_DEBUG log with COLL lines the collectives called decide next; then the file name breaks the tie
(``nccl_allreduce.log``); when it still cannot be decided the parser raises :class:`ParseError` saying so.

Output: one :class:`Measurement` per row and placement (out-of-place, in-place), facts, and one job per file that
represents the benchmark: one op per measured size (bytes > 0), once per "step", in a ``world`` group of all ranks.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath

from fabric.errors import ParseError, WorkloadError
from fabric.workload.model import (
    MAX_RANKS, CommOp, Job, Measurement, ProcessGroup, Workload, validate_workload,
)

__all__ = [
    "FORMAT", "sniff", "parse",
    "TestsRow", "TestsTable", "TestsLog", "scan_text", "measurements_of", "job_of", "facts_of",
    "strip_mpi_prefix", "debug_log_signals", "debug_hosts", "split_inline_message",
    "kind_from_name", "resolve_kinds", "rank_count", "unique_job_names",
    "checked", "DTYPE_NAMES",
]

FORMAT = "nccl_tests"

#: nccl-tests binary / file-name stem -> fabric collective kind (None: a test fabric does not model).
_BINARY_KINDS = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all", "broadcast": "broadcast", "bcast": "broadcast", "reduce": "reduce",
    "sendrecv": "send_recv", "gather": None, "scatter": None, "hypercube": None,
}
#: nccl-tests ``type`` column -> canonical dtype name and its size in bytes.
DTYPE_NAMES = {
    "int8": ("int8", 1), "char": ("int8", 1), "uint8": ("uint8", 1), "int32": ("int32", 4), "int": ("int32", 4),
    "uint32": ("uint32", 4), "int64": ("int64", 8), "uint64": ("uint64", 8), "half": ("float16", 2),
    "float16": ("float16", 2), "float": ("float32", 4), "float32": ("float32", 4), "double": ("float64", 8),
    "float64": ("float64", 8), "bfloat16": ("bfloat16", 2), "f8e4m3": ("float8_e4m3", 1),
    "f8e5m2": ("float8_e5m2", 1),
}

_MPI_PREFIX = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:")
_HEADER = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)(.*)$")
_KV = re.compile(r"(step|warmup iters|iters|agg iters|validation|graph)\s*:\s*(\S+)")
_DEVICE = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_START = re.compile(r"Collective test starting:\s*(\w+)")
_BINARY = re.compile(r"\b([a-z]+(?:_[a-z]+)*)_perf(?:_mpi)?\b")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_NUMERIC_START = re.compile(r"^\s*\d")
_LEADING = ("size", "count", "type", "redop", "root")
_METRICS = ("time", "algbw", "busbw")
_WRONG = ("#wrong", "wrong", "error")

# NCCL_DEBUG=INFO output (used by both sniffers so the formats never overlap): any INFO message except "Launch
# mode", which nccl-tests logs keep even when the rest of the debug output was filtered out. A bare "NCCL version"
# line (NCCL_DEBUG=VERSION) is not one.
_DEBUG_SIGNALS = re.compile(r"\bNCCL INFO (?!Launch mode)")
#: the prefix NCCL puts on every debug line: ``host:pid:tid [localDev] NCCL INFO`` (group 1: the host)
_DEBUG_LINE = re.compile(r"^([^\s:]+):\d+:\d+ \[[^\]]*\] NCCL (?:INFO|WARN|TRACE)\b")
#: the same prefix anywhere in a line, after other text (group 1: the host, maybe with text glued before it)
_INLINE_MESSAGE = re.compile(r"(\S+):\d+:\d+ \[[^\]]*\] NCCL (?:INFO|WARN|TRACE)\b")


def strip_mpi_prefix(line: str) -> str:
    """A line without its OpenMPI ``--tag-output`` prefix (``[1,3]<stdout>:``)."""
    return _MPI_PREFIX.sub("", line, count=1)


def debug_log_signals(text: str) -> int:
    """How many lines of ``text`` only an NCCL_DEBUG=INFO log would have (rings, trees, Init COMPLETE, COLL...)."""
    n = 0
    for raw in text.splitlines():
        if _DEBUG_SIGNALS.search(strip_mpi_prefix(raw)):
            n += 1
    return n


def kind_from_name(name: str) -> str | None | bool:
    """The collective named by a binary or file name (``all_reduce_perf``, ``nccl_allreduce.log``).

    Returns the fabric kind, ``None`` for a known nccl-tests collective fabric does not model (gather, scatter,
    hypercube), or ``False`` when the name says nothing.
    """
    stem = re.sub(r"[^a-z]", "", PurePath(name).name.lower())
    stem = stem.replace("perf", "").replace("nccl", "").replace("log", "").replace("txt", "").replace("out", "")
    # longest keys first, so "allreduce" wins over "reduce" and "reducescatter" over "scatter"
    for key in sorted(_BINARY_KINDS, key=len, reverse=True):
        if key in stem:
            return _BINARY_KINDS[key]
    return False


@dataclass(frozen=True)
class TestsRow:
    """One table row: size in bytes, element count, dtype, optional redop/root, and the two placements."""

    line: int
    size: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    oop: tuple[float, float, float, str]      # time_s, algbw B/s, busbw B/s, #wrong
    ip: tuple[float, float, float, str] | None


@dataclass
class TestsTable:
    """A result table: its header columns, layout, rows, and the collective kind with how it was decided."""

    header_line: int
    columns: tuple[str, ...]
    layout: str
    rows: list[TestsRow] = field(default_factory=list)
    declared_kind: str | None = None      # from a "Collective test starting" line just before it
    kind: str | None = None
    kind_evidence: str = ""
    kind_source: str = ""                 # "declared", "binary", "content", "COLL lines", "file name" or ""
    implied_ranks: int | None = None      # rank count the numbers imply (gather ratio or bus factor)


@dataclass
class TestsLog:
    """Everything read from one nccl-tests output."""

    source: str
    header: dict[str, str] = field(default_factory=dict)
    devices: list[tuple[int, str, int, str, str]] = field(default_factory=list)   # rank, host, device, busid, gpu
    tables: list[TestsTable] = field(default_factory=list)
    binaries: list[str] = field(default_factory=list)
    avg_busbw_gbps: float | None = None
    out_of_bounds: str | None = None

    @property
    def ranks(self) -> int | None:
        """Rank count: the device list, else the element/size ratio of a gather-like table; ``None`` if unknown."""
        if self.devices:
            return len({d[0] for d in self.devices})
        return None


# ---------------------------------------------------------------- scanning


def _header_columns(body: str) -> tuple[str, ...] | None:
    toks = body.split()
    if len(toks) < 6 or toks[0] != "size" or toks[1] != "count":
        return None
    return tuple(toks)


def _float(cell: str, what: str, source: str, line: int) -> float:
    try:
        v = float(cell)
    except ValueError:
        raise ParseError(f"table row: {what} {cell!r} is not a number", source=source, line=line) from None
    if not math.isfinite(v) or v < 0:
        raise ParseError(f"table row: {what} {cell!r} is not a finite non-negative number", source=source, line=line)
    return v


def _int(cell: str, what: str, source: str, line: int, *, signed: bool = False) -> int:
    if not re.fullmatch(r"-?\d+" if signed else r"\d+", cell):
        raise ParseError(f"table row: {what} {cell!r} is not a whole number", source=source, line=line)
    v = int(cell)
    if abs(v) > 2 ** 62:
        raise ParseError(f"table row: {what} {cell!r} is out of range", source=source, line=line)
    return v


def _parse_row(toks: list[str], table: TestsTable, source: str, line: int) -> TestsRow:
    cols = table.columns
    n_lead = next((i for i, c in enumerate(cols) if c == "time"), None)
    if n_lead is None or n_lead < 3:
        raise ParseError("table header has no 'time' column after size/count/type", source=source,
                         line=table.header_line)
    metric_cols = cols[n_lead:]
    half = len(metric_cols) // 2 if len(metric_cols) >= 8 else len(metric_cols)
    n_metric = len(metric_cols)
    if len(toks) < 3 + n_metric or len(toks) > n_lead + n_metric:
        raise ParseError(
            f"table row has {len(toks)} fields; the header at line {table.header_line} expects "
            f"{n_lead + n_metric} ({' '.join(cols)})", source=source, line=line)
    lead = toks[: len(toks) - n_metric]
    metrics = toks[len(toks) - n_metric:]
    size = _int(lead[0], "size", source, line)
    count = _int(lead[1], "count", source, line)
    dtype = lead[2]
    if re.fullmatch(r"[\d.eE+-]+", dtype):
        raise ParseError(f"table row: type {dtype!r} is not a data type name", source=source, line=line)
    redop: str | None = None
    root: int | None = None
    extra = lead[3:]
    header_extra = [c for c in cols[3:n_lead]]
    if len(extra) == len(header_extra):
        for c, v in zip(header_extra, extra):
            if c == "redop":
                redop = v
            elif c == "root":
                root = _int(v, "root", source, line, signed=True)
    elif len(extra) == 1 and len(header_extra) == 2:
        # a blank cell (old layout prints nothing for redop of all-to-all): a number is the root, else the redop
        if re.fullmatch(r"-?\d+", extra[0]):
            root = int(extra[0])
        else:
            redop = extra[0]
    elif extra:
        raise ParseError(f"table row has unexpected cells {' '.join(extra)!r} before the time column",
                         source=source, line=line)

    def placement(cells: list[str], names: tuple[str, ...]) -> tuple[float, float, float, str]:
        vals = dict(zip(names, cells))
        missing = [m for m in _METRICS if m not in vals]
        if missing:
            raise ParseError(f"table header lacks column(s) {', '.join(missing)}", source=source,
                             line=table.header_line)
        t = _float(vals["time"], "time", source, line) * 1e-6
        algbw = _float(vals["algbw"], "algbw", source, line) * 1e9
        busbw = _float(vals["busbw"], "busbw", source, line) * 1e9
        wrong = next((vals[w] for w in _WRONG if w in vals), "")
        return t, algbw, busbw, wrong

    oop = placement(metrics[:half], metric_cols[:half])
    ip = placement(metrics[half:], metric_cols[half:]) if half < n_metric else None
    return TestsRow(line=line, size=size, count=count, dtype=dtype, redop=redop, root=root, oop=oop, ip=ip)


def debug_hosts(lines) -> set[str]:
    """Host names of the NCCL debug lines (``host:pid:tid [dev] NCCL INFO ...``) that start a line of ``lines``."""
    hosts: set[str] = set()
    for raw in lines:
        if " NCCL " not in raw:
            continue
        line = (strip_mpi_prefix(raw) if raw.startswith("[") else raw).lstrip()
        if line.split(":", 1)[0] in hosts:
            continue
        m = _DEBUG_LINE.match(line)
        if m:
            hosts.add(m.group(1))
    return hosts


def split_inline_message(line: str, hosts) -> tuple[str, str | None]:
    """``(text before, NCCL message)`` when an NCCL debug message of one of ``hosts`` follows other text in
    ``line``, else ``(line, None)``.

    NCCL writes its messages to the same stdout as nccl-tests, so a message logged while a row is being printed
    (a COLL line, or a connection set up by the first call of a size) lands inside that row: ``... sum
    -1host:12:12 [0] NCCL INFO ...``, the rest of the row on a later line. ``hosts`` are the host names of the
    log's own debug lines (:func:`debug_hosts`): the message starts at the longest known host name ending the token
    before ``:pid:tid``, so the glued ``-1`` stays the row's.
    """
    if not hosts or " NCCL " not in line or line.lstrip().split(":", 1)[0] in hosts:
        return line, None                # no message, or one that starts the line
    m = _INLINE_MESSAGE.search(line)
    if m is None:
        return line, None
    token, start = m.group(1), m.start(1)
    for k in range(len(token)):
        if token[k:] in hosts:
            pos = start + k
            return (line[:pos], line[pos:]) if line[:pos].strip() else (line, None)
    return line, None


def scan_text(text: str, source: str, hosts: set[str] | None = None) -> TestsLog:
    """Read header, devices and every result table of an nccl-tests output.

    Rows are validated as they are read; a malformed row inside a table raises :class:`ParseError` naming the line.
    NCCL_DEBUG lines may fall anywhere: before, between and after the table's lines, and inside a row (the row's
    cells before and after the message are joined; see :func:`split_inline_message`). Kinds are not decided here
    (see :func:`resolve_kinds`). ``hosts``: the log's :func:`debug_hosts` when already known.
    """
    log = TestsLog(source=source)
    table: TestsTable | None = None
    pending_kind: str | None = None
    lines = text.splitlines()
    hosts = debug_hosts(lines) if hosts is None else hosts
    cut_row: list[str] = []          # cells of a row an NCCL message interrupted, waiting for the rest
    cut_line = 0

    def unfinished() -> ParseError:
        return ParseError("table row interrupted by an NCCL message and never completed", source=source,
                          line=cut_line)

    for lineno, raw in enumerate(lines, start=1):
        line = strip_mpi_prefix(raw).rstrip()
        line, message = split_inline_message(line, hosts)
        body = line.strip()
        if not body:
            continue
        if message is None and ("NCCL INFO" in body or "NCCL WARN" in body or body.startswith("+ ")):
            for b in _BINARY.findall(body) if body.startswith("+ ") else ():
                log.binaries.append(b)
            continue
        if body.startswith("#"):
            if cut_row:
                raise unfinished()
            inner = body[1:].strip()
            m = _HEADER.match(body)
            if m:
                log.header.update(nThread=m.group(1), nGpus=m.group(2), minBytes=m.group(3), maxBytes=m.group(4))
                for k, v in _KV.findall(m.group(5)):
                    log.header[k] = v
                continue
            m = _START.search(body)
            if m:
                pending_kind = m.group(1)
                log.binaries.append(re.sub(r"_perf$", "", m.group(1)))
                table = None
                continue
            m = _DEVICE.match(body)
            if m:
                log.devices.append((int(m.group(1)), m.group(4), int(m.group(5)), m.group(6), m.group(7)))
                continue
            cols = _header_columns(inner)
            if cols is not None:
                layout = "old" if "error" in cols else "new"
                table = TestsTable(header_line=lineno, columns=cols, layout=layout)
                if pending_kind is not None:
                    table.declared_kind = pending_kind
                    pending_kind = None
                log.tables.append(table)
                continue
            m = _AVG_BUSBW.match(body)
            if m:
                try:
                    log.avg_busbw_gbps = float(m.group(1))
                except ValueError:
                    raise ParseError(f"average bus bandwidth {m.group(1)!r} is not a number", source=source,
                                     line=lineno) from None
                table = None
                continue
            m = _OOB.match(body)
            if m:
                log.out_of_bounds = f"{m.group(1)} {m.group(2)}".strip()
                table = None
            continue
        if table is not None and _NUMERIC_START.match(line):
            if not cut_row:
                cut_line = lineno
            cut_row.extend(body.split())
            if message is None:          # the row ends with this line
                cells, cut_row = cut_row, []
                try:
                    table.rows.append(_parse_row(cells, table, source, cut_line))
                except ParseError as err:
                    if cut_line == lineno:
                        raise
                    raise ParseError(f"table row interrupted by an NCCL message (its cells continue on line "
                                     f"{lineno}): {err.message}", source=source, line=cut_line) from None
            continue
        for b in _BINARY.findall(body):
            log.binaries.append(b)
    if cut_row:
        raise unfinished()
    return log


# ---------------------------------------------------------------- deciding the collective kind

# kind -> (elements per size: "1" or "n", bus factor, needs redop, rooted)
_KIND_PROPS = {
    "all_reduce": ("1", lambda n: 2 * (n - 1) / n, True, False),
    "broadcast": ("1", lambda n: 1.0, False, True),
    "reduce": ("1", lambda n: 1.0, True, True),
    "send_recv": ("1", lambda n: 1.0, True, False),
    "all_gather": ("n", lambda n: (n - 1) / n, False, False),
    "reduce_scatter": ("n", lambda n: (n - 1) / n, True, False),
    "all_to_all": ("n", lambda n: (n - 1) / n, False, False),
}


def _content_candidates(table: TestsTable, nranks: int | None) -> tuple[set[str], int | None, list[str]]:
    """Kinds the numbers and columns of ``table`` allow, the rank count they imply, and the evidence used."""
    cands = set(_KIND_PROPS)
    evidence: list[str] = []
    cols = table.columns
    lead = cols[: cols.index("time")] if "time" in cols else cols
    # element ratio size / (count x dtype): 1 for all-reduce-like tests, the rank count for gather-like ones
    ratios = set()
    for r in table.rows:
        if r.count > 0 and r.size > 0 and r.dtype in DTYPE_NAMES:
            ratios.add(r.size / (r.count * DTYPE_NAMES[r.dtype][1]))
    if len(ratios) == 1:
        ratio = ratios.pop()
        if abs(ratio - 1) < 1e-9:
            cands &= {k for k, p in _KIND_PROPS.items() if p[0] == "1"}
            evidence.append("size = count x dtype")
        elif ratio > 1 and abs(ratio - round(ratio)) < 1e-9:
            cands &= {k for k, p in _KIND_PROPS.items() if p[0] == "n"}
            if nranks is None:
                nranks = int(round(ratio))
            evidence.append(f"size = {int(round(ratio))} x count x dtype")
    redops = {r.redop for r in table.rows}
    roots = {r.root for r in table.rows}
    if table.layout == "old":
        has_redop_col, has_root_col = "redop" in lead, "root" in lead
        if not has_redop_col:
            cands -= {"all_reduce", "reduce", "reduce_scatter", "all_to_all", "send_recv"}
            evidence.append("no redop column")
        if has_root_col:
            cands &= {"broadcast", "reduce"}
            evidence.append("root column")
        else:
            cands -= {"broadcast", "reduce"}
        if has_redop_col and redops == {None}:
            cands &= {"all_to_all"}
            evidence.append("blank redop cells")
        elif has_redop_col and None not in redops:
            cands -= {"all_to_all", "all_gather", "broadcast"}
            evidence.append(f"redop {'/'.join(sorted(redops))}")
    else:
        if redops and redops <= {"none", None}:
            cands = {k for k in cands if not _KIND_PROPS[k][2]}
            evidence.append("redop none")
        elif redops and None not in redops and "none" not in redops:
            cands = {k for k in cands if _KIND_PROPS[k][2]}
            evidence.append(f"redop {'/'.join(sorted(redops))}")
        if roots and None not in roots:
            if all(r >= 0 for r in roots):
                cands = {k for k in cands if _KIND_PROPS[k][3]}
                evidence.append("root >= 0")
            elif all(r < 0 for r in roots):
                cands = {k for k in cands if not _KIND_PROPS[k][3]}
                evidence.append("root -1")
    # bus factor busbw / algbw (nccl-tests: 2(n-1)/n all-reduce, (n-1)/n gather/scatter/all-to-all, 1 broadcast,
    # reduce, sendrecv), from the out-of-place and in-place columns of the row with the largest algbw (2-decimal
    # rounding is < 1 % there); both placements must agree
    factors = []
    for pick in (lambda r: r.oop, lambda r: r.ip):
        best = max((r for r in table.rows if pick(r) is not None), key=lambda r: pick(r)[1], default=None)
        if best is not None and pick(best)[1] >= 0.5e9:
            factors.append(pick(best)[2] / pick(best)[1])
    if factors and max(factors) - min(factors) <= 0.03 * max(max(factors), 1e-9):
        factor = sum(factors) / len(factors)
        ip_note = f" (in-place {factors[1]:.3f})" if len(factors) > 1 else ""
        if nranks and nranks >= 2:
            fits = {k for k in cands if abs(_KIND_PROPS[k][1](nranks) - factor) <= 0.03 * max(factor, 1e-9)}
            if fits:
                cands = fits
                evidence.append(f"busbw/algbw = {factors[0]:.3f} with {nranks} ranks{ip_note}")
        else:
            # the rank count is not printed: each kind implies one from the factor; keep the kinds it fits
            fits = set()
            implied = {}
            for k in cands:
                n = _ranks_from_factor(k, factor)
                if n is not None:
                    fits.add(k)
                    implied[k] = n
            if fits:
                cands = fits
                shown = ", ".join(f"{k} with {implied[k]} ranks" if implied[k] else k for k in sorted(fits))
                evidence.append(f"busbw/algbw = {factors[0]:.3f}{ip_note}, which fits {shown}")
                if len(fits) == 1 and implied[next(iter(fits))]:
                    nranks = implied[next(iter(fits))]
    if len(cands) > 1:
        # the in-place error count: nccl-tests checks it for every test but sendrecv and alltoall, which print N/A
        # there (they have no in-place mode) while checking out-of-place; with validation off both are N/A
        checked = _in_place_checked(table)
        if checked is not None:
            narrowed = (cands - _NO_IN_PLACE_CHECK) if checked else (cands & _NO_IN_PLACE_CHECK)
            if narrowed and narrowed != cands:
                cands = narrowed
                col = next((c for c in table.columns if c in _WRONG), "#wrong")
                evidence.append(f"in-place {col} checked (sendrecv and alltoall print N/A there)" if checked
                                else f"in-place {col} N/A while out-of-place is checked (sendrecv or alltoall)")
    return cands, nranks, evidence


#: nccl-tests collectives with no in-place mode: their in-place error column reads N/A even when validating
_NO_IN_PLACE_CHECK = frozenset({"send_recv", "all_to_all"})


def _wrong_cell_checked(cell: str) -> bool | None:
    """True for a number in an error column, False for N/A, None for anything else (blank, garbage)."""
    if cell.strip().upper() == "N/A":
        return False
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return None


def _in_place_checked(table: TestsTable) -> bool | None:
    """Whether the rows' in-place error cells are numbers (True) or N/A (False) wherever the out-of-place one is a
    number; None when no row says or the rows disagree."""
    seen = set()
    for r in table.rows:
        if r.ip is None or _wrong_cell_checked(r.oop[3]) is not True:
            continue
        seen.add(_wrong_cell_checked(r.ip[3]))
    return seen.pop() if len(seen) == 1 and None not in seen else None


def _ranks_from_factor(kind: str, factor: float) -> int | None | bool:
    """The rank count for which ``kind``'s bus factor equals ``factor`` (within 3 %); 0 when any count fits
    (factor 1 kinds), None when none does."""
    if kind in ("broadcast", "reduce", "send_recv"):
        return 0 if abs(factor - 1.0) <= 0.03 else None
    if kind == "all_reduce":
        if not 0.97 <= factor < 2.0:
            return None
        n = max(2, round(2.0 / (2.0 - factor)))
        return n if abs(2 * (n - 1) / n - factor) <= 0.03 * factor else None
    if not 0.45 <= factor < 1.0:
        return None
    n = max(2, round(1.0 / (1.0 - factor)))
    return n if abs((n - 1) / n - factor) <= 0.03 * factor else None


def resolve_kinds(log: TestsLog, name_hint: str | None = None, *, strict: bool = True,
                  called: set[str] | None = None) -> list[str]:
    """Decide every table's collective kind: a ``Collective test starting`` line, else a ``*_perf`` binary named in
    the log, else the table's content, else the collectives the run called (``called``: the kinds of an
    NCCL_DEBUG_SUBSYS=COLL log's calls), else the file name as tie-breaker.

    Returns warnings for every table whose kind was inferred (content or file name): what was inferred and from
    what, and whether the content alone was ambiguous. A table whose kind cannot be decided raises ParseError
    (``strict``) or is left with ``kind = None`` and a warning saying which kinds it allows (``strict=False``, used
    for tables inside NCCL_DEBUG logs, whose other content still stands).
    """
    nranks = log.ranks
    binaries = sorted({b for b in log.binaries if kind_from_name(b) is not False})
    warnings: list[str] = []
    where = log.source
    for table in log.tables:
        at = f"{where}: nccl-tests table at line {table.header_line}"
        if table.declared_kind is not None:
            k = kind_from_name(table.declared_kind)
            if k is None:
                raise ParseError(f"the {table.declared_kind} test is not a collective fabric models "
                                 "(all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, sendrecv)",
                                 source=log.source, line=table.header_line)
            if k is not False:
                table.kind, table.kind_evidence = k, f"'Collective test starting: {table.declared_kind}'"
                table.kind_source = "declared"
                continue
        cands, n_implied, evidence = _content_candidates(table, nranks)
        table.implied_ranks = n_implied if n_implied != nranks else None
        if len(binaries) == 1:
            k = kind_from_name(binaries[0])
            if k is None:
                raise ParseError(f"the {binaries[0]}_perf test is not a collective fabric models",
                                 source=log.source, line=table.header_line)
            if k in cands or not cands:
                table.kind, table.kind_evidence = k, f"binary {binaries[0]}_perf named in the log"
                table.kind_source = "binary"
                continue
        if len(cands) == 1:
            table.kind = cands.pop()
            table.kind_evidence = "content: " + ", ".join(evidence)
            table.kind_source = "content"
            warnings.append(f"{at} has no test name: collective inferred as {table.kind} from its content "
                            f"({', '.join(evidence)})")
            continue
        among = (cands & called) if (called and cands) else set(called or ())
        if len(among) == 1:
            table.kind = among.pop()
            shown = ", ".join(sorted(called))
            table.kind_evidence = f"the log's COLL lines (calls: {shown})" + (
                f"; content allows {', '.join(sorted(cands))}" if cands else "")
            table.kind_source = "COLL lines"
            warnings.append(f"{at} has no test name: collective taken as {table.kind} from the log's COLL lines "
                            f"(calls: {shown}; content allows {', '.join(sorted(cands)) or 'none'})")
            continue
        hint = kind_from_name(name_hint) if name_hint else False
        if hint and (hint in cands or not cands):
            table.kind = hint
            table.kind_evidence = f"file name {PurePath(name_hint).name!r}" + (
                f" (content allows {', '.join(sorted(cands))})" if cands else "")
            table.kind_source = "file name"
            ev = ", ".join(evidence) or "no evidence"
            amb = (f"its content is ambiguous (allows {', '.join(sorted(cands))}: {ev})" if len(cands) > 1
                   else "its content allows no modelled collective")
            warnings.append(f"{at} has no test name and {amb}: {hint} taken from the file name "
                            f"{PurePath(name_hint).name!r}")
            continue
        allowed = ", ".join(sorted(cands)) or "none"
        msg = (f"cannot determine the collective of this nccl-tests table from its content: it is ambiguous "
               f"(it allows: {allowed}; evidence: {', '.join(evidence) or 'none'}); keep the '# Collective test "
               "starting: <name>_perf' line or name the file after the test binary (e.g. all_reduce_perf.log)"
               + ("; a run with validation on (-c 1) tells sendrecv and alltoall apart by their N/A in-place "
                  "#wrong column" if cands & _NO_IN_PLACE_CHECK and len(cands) > 1 else ""))
        if strict:
            raise ParseError(msg, source=log.source, line=table.header_line)
        table.kind = None
        warnings.append(f"{at}: {msg}; its {len(table.rows)} row(s) were not used")
    return warnings


# ---------------------------------------------------------------- turning a scanned log into fabric objects


def _nranks(log: TestsLog) -> int:
    return rank_count_and_source(log)[0]


def rank_count_and_source(log: TestsLog) -> tuple[int, str]:
    """The run's rank count and where it comes from ("device list", or what it was inferred from)."""
    if log.ranks:
        return log.ranks, "device list"
    for t in log.tables:
        if t.kind and _KIND_PROPS[t.kind][0] == "n":
            for r in t.rows:
                if r.count > 0 and r.dtype in DTYPE_NAMES:
                    n = max(1, round(r.size / (r.count * DTYPE_NAMES[r.dtype][1])))
                    return n, f"size = {n} x count x dtype in the {t.kind} table"
    for t in log.tables:
        best = max(t.rows, key=lambda r: r.oop[1], default=None)
        if best is not None and t.kind == "all_reduce" and best.oop[1] > 0.5e9:
            f = best.oop[2] / best.oop[1]           # 2(n-1)/n = f  ->  n = 2 / (2 - f)
            if f < 1.99:
                n = max(1, round(2 / (2 - f)))
                return n, f"all_reduce busbw/algbw = {f:.3f} = 2(n-1)/n"
    try:
        n = max(1, int(log.header.get("nThread", "1")) * int(log.header.get("nGpus", "1")))
    except ValueError:
        return 1, "nothing (assumed 1)"
    return n, "nThread x nGpus of the header (one process's GPUs: an MPI run has more ranks)"


def rank_count(log: TestsLog) -> int:
    """The run's rank count (device list, else implied by the numbers); ParseError when implausible."""
    n = _nranks(log)
    if n > MAX_RANKS:
        raise ParseError(f"implausible rank count {n} (more than {MAX_RANKS})", source=log.source)
    return n


def _dtype(name: str) -> str:
    return DTYPE_NAMES.get(name, (name, 0))[0]


def measurements_of(log: TestsLog) -> list[Measurement]:
    """One Measurement per row and placement (kinds must be resolved)."""
    n = rank_count(log)
    out = []
    for t in log.tables:
        for r in t.rows:
            for placement, in_place in ((r.oop, False), (r.ip, True)):
                if placement is None:
                    continue
                out.append(Measurement(
                    source=log.source, kind=t.kind or "unknown", bytes=r.size, time_s=placement[0], ranks=n,
                    algbw_bytes_per_s=placement[1], busbw_bytes_per_s=placement[2], in_place=in_place,
                    dtype=_dtype(r.dtype)))
    return out


def facts_of(log: TestsLog) -> list[tuple[str, str]]:
    """Facts of the run: header values, ranks, hosts, GPUs, sizes, peak and average bus bandwidth."""
    facts: list[tuple[str, str]] = []
    for k in ("nThread", "nGpus", "minBytes", "maxBytes", "step", "warmup iters", "iters", "agg iters",
              "validation", "graph"):
        if k in log.header:
            facts.append((k, log.header[k]))
    facts.append(("ranks", str(_nranks(log))))
    if log.devices:
        hosts = Counter(d[1] for d in log.devices)
        facts.append(("hosts", f"{len(hosts)} ({', '.join(f'{h}: {c}' for h, c in hosts.items())})"))
        gpus = Counter(d[4] for d in log.devices)
        facts.append(("devices", ", ".join(f"{c} x {g or 'unknown GPU'}" for g, c in gpus.items())))
    kinds = [t.kind for t in log.tables]
    facts.append(("collectives", ", ".join(dict.fromkeys(k for k in kinds if k))))
    facts.append(("kind decided by", "; ".join(dict.fromkeys(t.kind_evidence for t in log.tables))))
    facts.append(("layout", ", ".join(dict.fromkeys(t.layout for t in log.tables))))
    rows = [r for t in log.tables for r in t.rows]
    facts.append(("rows", str(len(rows))))
    if rows:
        facts.append(("min bytes measured", str(min(r.size for r in rows))))
        facts.append(("max bytes measured", str(max(r.size for r in rows))))
        peak = max(max(r.oop[2], r.ip[2] if r.ip else 0.0) for r in rows)
        facts.append(("peak busbw GB/s", f"{peak / 1e9:.2f}"))
    if log.avg_busbw_gbps is not None:
        facts.append(("avg bus bandwidth GB/s (reported)", f"{log.avg_busbw_gbps:g}"))
    if log.out_of_bounds is not None:
        facts.append(("out of bounds values", log.out_of_bounds))
    return facts


def job_of(log: TestsLog, name: str) -> Job:
    """The benchmark as a job: one op per (kind, size, dtype) measured with size > 0, in a world group."""
    n = rank_count(log)
    ops: dict[tuple[str, int, str], CommOp] = {}
    for t in log.tables:
        for r in t.rows:
            if r.size <= 0 or t.kind is None:
                continue
            key = (t.kind, r.size, _dtype(r.dtype))
            if key not in ops:
                ops[key] = CommOp(kind=t.kind, bytes=r.size, group="world", count_per_step=1.0, dtype=key[2],
                                  name=f"{t.kind} {r.size} B")
    per_host = Counter(d[1] for d in log.devices)
    gpn = next(iter(set(per_host.values()))) if per_host and len(set(per_host.values())) == 1 else None
    kinds = ", ".join(dict.fromkeys(t.kind for t in log.tables if t.kind))
    return Job(
        name=name, kind="training", world_size=n,
        groups=(ProcessGroup(name="world", size=n, role="world", rank_start=0, rank_stride=1, role_source="trace"),),
        ops=tuple(ops.values()), compute_time_s=0.0, gpus_per_node_hint=gpn,
        notes=(f"nccl-tests benchmark ({kinds}) over {n} ranks: one op per measured size, each once per step; "
               "no compute (a benchmark, not a training step)",),
    )


# ---------------------------------------------------------------- module interface


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def sniff(head: bytes, name: str) -> bool:
    """True when ``head`` holds an nccl-tests table or run header and no NCCL_DEBUG=INFO output (that is nccl_log's)."""
    text = _decode(head)
    found = False
    for raw in text.splitlines():
        body = strip_mpi_prefix(raw).strip()
        if body.startswith("#") and (_HEADER.match(body) or _START.search(body)
                                     or _header_columns(body[1:].strip()) is not None):
            found = True
            break
    if not found:
        return False
    # a debug log that also contains a table is the nccl_log format's job
    return debug_log_signals(text) == 0


def unique_job_names(files: list[tuple[str, bytes]]) -> list[str]:
    """Job names from file names without their extension, made unique with a ``#N`` suffix."""
    seen: Counter = Counter()
    names = []
    for fname, _ in files:
        stem = PurePath(fname).name
        for suffix in (".gz", ".log", ".txt", ".out", ".csv", ".json"):
            if stem.endswith(suffix) and len(stem) > len(suffix):
                stem = stem[: -len(suffix)]
        seen[stem] += 1
        names.append(stem if seen[stem] == 1 else f"{stem}#{seen[stem]}")
    return names


def parse(files: list[tuple[str, bytes]]) -> Workload:
    """Parse nccl-tests outputs; each file becomes its own benchmark job. See the module docstring."""
    if not files:
        raise ParseError("no files given")
    jobs, measurements, facts, warnings = [], [], [], []
    multi = len(files) > 1
    for (fname, data), jname in zip(files, unique_job_names(files)):
        log = scan_text(_decode(data), fname)
        if not log.tables or not any(t.rows for t in log.tables):
            raise ParseError("no nccl-tests result table found (expected a '#  size  count  type ...' header "
                             "followed by rows)", source=fname)
        for t in log.tables:
            if not t.rows:
                warnings.append(f"{fname}: table at line {t.header_line} has no rows")
        log.tables = [t for t in log.tables if t.rows]
        warnings.extend(resolve_kinds(log, fname))
        hint = kind_from_name(fname)
        for t in log.tables:
            if hint and t.kind != hint:
                warnings.append(f"{fname}: the file name suggests {hint} but the content says {t.kind} "
                                f"({t.kind_evidence}); using {t.kind}")
        n, n_from = rank_count_and_source(log)
        if n_from != "device list":
            warnings.append(f"{fname}: no device list: {n} rank(s) taken from {n_from}")
        jobs.append(job_of(log, jname))
        measurements.extend(measurements_of(log))
        facts.extend(((f"{fname}: {k}" if multi else k), v) for k, v in facts_of(log))
    wl = Workload(
        jobs=tuple(jobs), sources=tuple(f for f, _ in files), measurements=tuple(measurements),
        facts=tuple(facts), warnings=tuple(warnings), name=jobs[0].name if len(jobs) == 1 else "nccl-tests",
    )
    return checked(wl, files[0][0] if len(files) == 1 else None)


def checked(wl: Workload, source: str | None) -> Workload:
    """``validate_workload`` with its WorkloadError re-raised as a ParseError naming the file."""
    try:
        return validate_workload(wl)
    except WorkloadError as err:
        raise ParseError(f"the parsed workload is inconsistent: {err}", source=source) from err
