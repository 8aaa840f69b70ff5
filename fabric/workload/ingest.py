"""Turn a set of uploaded/read trace files into one :class:`~fabric.workload.model.Workload`, file by file.

:func:`ingest` reads each file safely (:func:`fabric.workload.io.read_input`: size cap, gzip by magic bytes,
decompression cap), detects its format from its content, parses every format's files, and reports per file:
format, success, the error (naming the file) and the jobs it went into. A bad file never stops the others.

Format detection asks the parser modules in this order, first match wins: ``native``, ``kineto``, ``chakra``,
``pytorch_et``, ``nccl_tests``, ``nccl_log``, ``astra_text``, ``aicb_csv`` (``fabric.workload.parsers.<name>``,
imported lazily;
a module that is not installed is skipped). Each module has ``FORMAT``, ``sniff(head, name)`` (``head`` = the first
64 KiB of the decompressed bytes) and ``parse(files) -> Workload``. A module may also offer
``parse_groups(files, limits=None) -> [(names, Workload | ParseError)]`` to put several files into one job
(Kineto, Chakra and PyTorch ET rank files); otherwise each file is parsed on its own and becomes its own job(s).

Job names are made unique across the combined workload by suffixing ``-2``, ``-3``, ...
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, replace

from fabric.errors import FabricError, ParseError
from fabric.limits import Limits, current_limits
from fabric.workload.io import read_input
from fabric.workload.model import Workload

__all__ = ["SNIFF_ORDER", "HEAD_BYTES", "FileReport", "IngestResult", "ingest", "ingest_paths", "detect_format",
           "combine_workloads", "parser_module"]

#: parser modules asked, in order, whether a file is theirs
SNIFF_ORDER = ("native", "kineto", "chakra", "pytorch_et", "nccl_tests", "nccl_log", "astra_text", "aicb_csv")
#: how much of the decompressed file the sniffers see
HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class FileReport:
    """What happened to one input file."""

    name: str
    format: str | None
    ok: bool
    error: str | None = None
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class IngestResult:
    """The combined workload of every file that parsed (None if none did) and one report per input file."""

    workload: Workload | None
    files: tuple[FileReport, ...]
    unparsed: tuple = ()

    @property
    def ok(self) -> bool:
        """True when every file parsed."""
        return all(f.ok for f in self.files)

    @property
    def errors(self) -> tuple[str, ...]:
        """The error message of every failed file."""
        return tuple(f.error for f in self.files if not f.ok and f.error)


_MODULES: dict[str, object] = {}


def parser_module(fmt: str):
    """The parser module of format ``fmt`` (imported on first use), or None if it is not installed."""
    if fmt not in _MODULES:
        try:
            _MODULES[fmt] = importlib.import_module(f"fabric.workload.parsers.{fmt}")
        except ModuleNotFoundError as err:
            if err.name != f"fabric.workload.parsers.{fmt}":
                raise
            _MODULES[fmt] = None
    return _MODULES[fmt]


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if b"\x00" in head[:4096]:
        return True
    try:
        head[:4096].decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start < len(head[:4096]) - 4  # a multi-byte char cut at the end is fine
    return False


def detect_format(name: str, data: bytes) -> str:
    """The format of decompressed ``data``; ParseError naming the file when no parser recognises it."""
    if not data.strip():
        raise ParseError("file is empty", source=name)
    head = data[:HEAD_BYTES]
    for fmt in SNIFF_ORDER:
        mod = parser_module(fmt)
        if mod is None:
            continue
        try:
            if mod.sniff(head, name):
                return getattr(mod, "FORMAT", fmt)
        except Exception:  # a sniffer must never take the whole upload down
            continue
    if _looks_binary(head):
        raise ParseError("binary data in no format fabric reads (expected Kineto/PyTorch profiler JSON, Chakra "
                         ".et/.json, PyTorch execution trace JSON, nccl-tests output, NCCL_DEBUG log, ASTRA-sim text "
                         "or AICB CSV)", source=name)
    raise ParseError("unknown trace format: not Kineto/PyTorch profiler JSON, Chakra ET/JSON, PyTorch execution trace "
                     "JSON, fabric workload JSON, nccl-tests output, NCCL_DEBUG log, ASTRA-sim/SimAI text or AICB CSV",
                     source=name)


def _unique(name: str, taken: set[str]) -> str:
    cand, i = name, 2
    while cand in taken:
        cand = f"{name}-{i}"
        i += 1
    taken.add(cand)
    return cand


def combine_workloads(workloads: list[Workload], *, name: str | None = None) -> Workload:
    """One workload holding every job of ``workloads`` (job names made unique), with sources/unparsed/... joined."""
    taken: set[str] = set()
    jobs = []
    for wl in workloads:
        for j in wl.jobs:
            n = _unique(j.name, taken)
            jobs.append(j if n == j.name else replace(j, name=n))
    return Workload(
        jobs=tuple(jobs),
        sources=tuple(s for w in workloads for s in w.sources),
        unparsed=tuple(u for w in workloads for u in w.unparsed),
        measurements=tuple(m for w in workloads for m in w.measurements),
        facts=tuple(f for w in workloads for f in w.facts),
        warnings=tuple(x for w in workloads for x in w.warnings),
        name=name or (workloads[0].name if len(workloads) == 1 else "workload"),
    )


def _err_text(err: Exception, name: str) -> str:
    msg = " ".join(str(err).split())
    return msg if name in msg else f"{name}: {msg}"


def ingest(files: list[tuple[str, bytes]], limits: Limits | None = None) -> IngestResult:
    """Read, detect and parse ``files`` ((name, raw bytes) pairs); never raises for a bad file.

    Returns an :class:`IngestResult`: ``workload`` combines every job that parsed (None when nothing did),
    ``files`` has one :class:`FileReport` per input in input order, ``unparsed`` the communication that could not
    be turned into ops.

    Examples
    --------
    >>> r = ingest([("empty.json", b"")])
    >>> r.files[0].ok, r.files[0].error
    (False, 'empty.json: file is empty')
    """
    lim = current_limits() if limits is None else limits
    reports: dict[int, FileReport] = {}
    by_format: dict[str, list[tuple[int, str, bytes]]] = {}
    seen_names: dict[str, int] = {}
    for i, item in enumerate(files):
        try:
            name, raw = item
        except (TypeError, ValueError):
            reports[i] = FileReport(name=f"file #{i + 1}", format=None, ok=False,
                                    error=f"file #{i + 1}: expected a (name, bytes) pair")
            continue
        name = str(name)
        if name in seen_names:  # two uploads with one name: keep both, tell them apart
            seen_names[name] += 1
            name = f"{name} ({seen_names[name]})"
        else:
            seen_names[name] = 1
        try:
            data = read_input(name, raw, lim)
            fmt = detect_format(name, data)
        except FabricError as err:
            reports[i] = FileReport(name=name, format=None, ok=False, error=_err_text(err, name))
            continue
        by_format.setdefault(fmt, []).append((i, name, data))
        reports[i] = FileReport(name=name, format=fmt, ok=False)

    workloads: list[tuple[int, tuple[int, ...], Workload]] = []
    for fmt, items in by_format.items():
        mod = parser_module(fmt)
        index_of = {name: i for i, name, _ in items}
        if hasattr(mod, "parse_groups"):
            try:
                results = mod.parse_groups([(n, d) for _, n, d in items], limits=lim)
            except FabricError as err:  # pragma: no cover - parse_groups reports per group
                results = [(tuple(n for _, n, _ in items), err)]
            except Exception as err:  # a parser bug must not hide the other files
                results = [(tuple(n for _, n, _ in items), ParseError(f"internal error in the {fmt} parser: "
                                                                       f"{type(err).__name__}: {err}"))]
            for names, res in results:
                idxs = tuple(index_of[n] for n in names if n in index_of)
                if isinstance(res, Exception):
                    for n in names:
                        if n in index_of:
                            reports[index_of[n]] = FileReport(name=n, format=fmt, ok=False,
                                                              error=_err_text(res, n))
                else:
                    workloads.append((min(idxs) if idxs else 0, idxs, res))
        else:
            for i, name, data in items:
                try:
                    wl = mod.parse([(name, data)])
                    if not isinstance(wl, Workload) or not wl.jobs:
                        raise ParseError("no job could be read", source=name)
                except FabricError as err:
                    reports[i] = FileReport(name=name, format=fmt, ok=False, error=_err_text(err, name))
                    continue
                except Exception as err:
                    reports[i] = FileReport(name=name, format=fmt, ok=False,
                                            error=f"{name}: internal error in the {fmt} parser: "
                                                  f"{type(err).__name__}: {err}")
                    continue
                workloads.append((i, (i,), wl))

    for i, r in reports.items():  # a parser that forgot a file must not leave it looking "not ok, no error"
        if not r.ok and r.error is None and not any(i in idxs for _, idxs, _ in workloads):
            reports[i] = replace(r, error=f"{r.name}: the {r.format} parser returned no result for this file")
    workloads.sort(key=lambda x: x[0])
    taken: set[str] = set()
    renamed: list[Workload] = []
    for _, idxs, wl in workloads:
        jobs = []
        for j in wl.jobs:
            n = _unique(j.name, taken)
            jobs.append(j if n == j.name else replace(j, name=n))
        wl = replace(wl, jobs=tuple(jobs))
        renamed.append(wl)
        for i in idxs:
            r = reports[i]
            reports[i] = replace(r, ok=True, error=None, jobs=tuple(j.name for j in jobs))
    combined = combine_workloads(renamed, name=_workload_name(renamed)) if renamed else None
    return IngestResult(workload=combined, files=tuple(reports[i] for i in range(len(files))),
                        unparsed=combined.unparsed if combined else ())


def _workload_name(wls: list[Workload]) -> str:
    if len(wls) == 1 and len(wls[0].jobs) == 1:
        return wls[0].jobs[0].name
    return "workload"


def ingest_paths(paths, limits: Limits | None = None) -> IngestResult:
    """:func:`ingest` over files on disk, each named by its path. Unreadable paths get a failed report."""
    lim = current_limits() if limits is None else limits
    files: list[tuple[str, bytes]] = []
    pre_fail: dict[int, FileReport] = {}
    for i, p in enumerate(paths):
        name = os.fspath(p)
        try:
            size = os.path.getsize(name)
            if size > lim.max_upload_bytes:
                raise ParseError(f"file is {size:,} bytes, more than the limit max_upload_bytes="
                                 f"{lim.max_upload_bytes:,}; raise it with the environment variable "
                                 f"FABRIC_LIMIT_MAX_UPLOAD_BYTES", source=name)
            with open(name, "rb") as fh:
                files.append((name, fh.read()))
        except FabricError as err:
            pre_fail[i] = FileReport(name=name, format=None, ok=False, error=str(err))
        except OSError as err:
            pre_fail[i] = FileReport(name=name, format=None, ok=False,
                                     error=f"{name}: cannot read the file ({err.strerror or err})")
    res = ingest(files, lim) if files else IngestResult(workload=None, files=())
    if not pre_fail:
        return res
    it = iter(res.files)
    reports = [pre_fail[i] if i in pre_fail else next(it) for i in range(len(paths))]
    return replace(res, files=tuple(reports))


def parse_grouped(parse_groups, files, limits, fmt_name: str) -> Workload:
    """``parse`` of a parser that merges files into jobs (``parse_groups``): one workload, or the first error."""
    if not files:
        raise ParseError(f"no {fmt_name} trace given")
    wls = []
    for _, res in parse_groups(files, limits):
        if isinstance(res, Exception):
            raise res
        wls.append(res)
    return wls[0] if len(wls) == 1 else combine_workloads(wls)

