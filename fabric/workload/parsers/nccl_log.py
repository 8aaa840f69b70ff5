"""Parser for NCCL_DEBUG=INFO logs (optionally with NCCL_DEBUG_SUBSYS=COLL per-call lines).

What it reads (lines may carry an OpenMPI ``[1,N]<stdout>:`` prefix; the NCCL prefix is
``HOST:PID:TID [localDev] NCCL INFO``):

- ``NCCL version 2.x.y+cudaZ`` (bare or after the prefix);
- ``comm 0x.. rank R nranks N cudaDev D ... busId B ... - Init COMPLETE``: communicators, ranks, world size;
- ``Channel 00/08 :    0   7   6 ...``: ring order per channel (rank 0 prints them); ``Trees [0] c/c/c->r->p ...``;
- ``Channel 00 : 7[a01d0] -> 8[101c0] [send] via NET/AWS Libfabric/0/GDRDMA``: one connection and its transport
  (P2P/IPC, P2P/CUMEM, SHM, NET/IB, NET/Socket, NET/<plugin> ...);
- ``8 coll channels, 8 p2p channels, 1 p2p channels per peer``, ``Using network X``, ``NET/OFI Selected Provider``;
- COLL lines ``AllReduce: opCount 3 sendbuff 0x.. recvbuff 0x.. count N datatype T op O root R comm 0x..
  [nranks=N] stream 0x..`` (RCCL adds ``task T globalrank G``). Bytes follow fabric's convention (see
  :mod:`fabric.workload.model`): NCCL's ``count`` is the per-rank send count of AllGather and the per-rank receive
  count of ReduceScatter, so those two are multiplied by the communicator size; the element size comes from
  ncclDataType_t (0 int8, 1 uint8, 2 int32, 3 uint32, 4 int64, 5 uint64, 6 fp16, 7 fp32, 8 fp64, 9 bf16;
  10 fp8-e4m3 and 11 fp8-e5m2 since NCCL 2.24, per nccl.h).

Calls are grouped per communicator (ranks of one communicator issue the same sequence of calls; one rank's view is
taken as the representative) and become ops counted over the whole log (the log has no step markers). A log
without COLL lines gives facts only and a job with no ops, plus a warning; no op is made up. An nccl-tests table
inside the log (an ``all_reduce_perf`` run with NCCL_DEBUG=INFO) is read with :mod:`.nccl_tests` and kept as
measurements, wherever the INFO lines fall (before, between and after its lines, or inside a row that NCCL
interrupted: such a message is read here too); when its content leaves the collective open, the kinds the log's
COLL lines call decide it.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from fabric.errors import ParseError
from fabric.workload.model import MAX_RANKS, CommOp, Job, ProcessGroup, UnparsedComm, Workload
from fabric.workload.parsers import nccl_tests

__all__ = ["FORMAT", "sniff", "parse", "NCCL_DTYPES", "NcclLog", "scan_log"]

FORMAT = "nccl_log"

#: ncclDataType_t value -> (name, bytes per element). 0-9 per FIELDS.md / nccl.h; 10-11 added in NCCL 2.24.
NCCL_DTYPES = {
    0: ("int8", 1), 1: ("uint8", 1), 2: ("int32", 4), 3: ("uint32", 4), 4: ("int64", 8), 5: ("uint64", 8),
    6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2),
    10: ("float8_e4m3", 1), 11: ("float8_e5m2", 1),
}
#: NCCL / RCCL collective names in COLL lines -> fabric kind.
_COLL_KINDS = {
    "AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
    "Broadcast": "broadcast", "Bcast": "broadcast", "Reduce": "reduce", "Send": "send_recv", "Recv": "send_recv",
    "AllToAll": "all_to_all", "AllToAllv": "all_to_allv", "Alltoall": "all_to_all", "Alltoallv": "all_to_allv",
}

_PREFIX = re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[^\]]*)\] NCCL (?P<lvl>INFO|WARN) "
                     r"(?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (\S+)")
_INIT = re.compile(r"comm (0x[0-9a-fA-F]+|\(nil\)) rank (\d+) nranks (\d+) cudaDev (\d+)(?P<rest>.*?)"
                   r"(?:- Init COMPLETE|Init COMPLETE)")
_RING = re.compile(r"^Channel (\d+)/(\d+) :((?:\s+\d+)+)\s*$")
_TREES = re.compile(r"^Trees((?: \[\d+\] \S+)+)")
_CONN = re.compile(r"^Channel (\d+)(?:/\d+)? : (\d+)\[([^\]]*)\] -> (\d+)\[([^\]]*)\](?: \[(send|receive)\])? "
                   r"via (.+?)\s*$")
_CHANNELS = re.compile(r"(\d+) coll channels.*?(\d+) p2p channels, (\d+) p2p channels per peer")
_COLL = re.compile(r"^(\w+): opCount ([0-9a-fA-Fx]+) (.*)$")
_NRANKS = re.compile(r"\[nranks=(\d+)\]")


@dataclass
class _Call:
    coll: str
    count: int
    dtype: int
    nranks: int
    line: int


@dataclass
class NcclLog:
    """What one NCCL_DEBUG log says."""

    source: str
    version: str | None = None
    hosts: Counter = field(default_factory=Counter)          # host -> distinct (pid) seen
    comms: dict = field(default_factory=dict)                # (host, pid, comm) -> (rank, nranks, cudaDev, commId)
    rings: dict = field(default_factory=dict)                # channel -> tuple of ranks
    ring_channels: int | None = None
    tree_channels: int | None = None
    tree_lines: int = 0
    transports: Counter = field(default_factory=Counter)     # class -> connections
    transport_detail: Counter = field(default_factory=Counter)
    coll_channels: str | None = None
    network: str | None = None
    provider: str | None = None
    calls: dict = field(default_factory=lambda: defaultdict(list))   # (host, pid, comm) -> [_Call]
    unparsed: Counter = field(default_factory=Counter)       # coll name -> count
    info_lines: int = 0
    pids: set = field(default_factory=set)


def _transport_class(via: str) -> str:
    parts = [p for p in via.split("/") if p]
    if not parts:
        return via
    head = parts[0]
    if head == "NET" and len(parts) > 1:
        return "NET/" + re.sub(r"\(\d+\)$", "", parts[1])
    if head == "P2P" and len(parts) > 1:
        return f"P2P/{parts[1]}"
    return head


def _kv_fields(rest: str) -> dict[str, str]:
    toks = rest.split()
    out = {}
    i = 0
    while i < len(toks) - 1:
        if re.fullmatch(r"[a-zA-Z]+", toks[i]):
            out[toks[i]] = toks[i + 1]
            i += 2
        else:
            i += 1
    return out


def scan_log(text: str, source: str, hosts: set[str] | None = None) -> NcclLog:
    """Read the NCCL INFO lines of ``text`` (malformed COLL lines raise ParseError with their line number);
    ``hosts``: the log's :func:`~.nccl_tests.debug_hosts` when already known."""
    log = NcclLog(source=source)
    host_pids: dict[str, set] = defaultdict(set)
    lines = text.splitlines()
    hosts = nccl_tests.debug_hosts(lines) if hosts is None else hosts
    for lineno, raw in enumerate(lines, start=1):
        line = nccl_tests.strip_mpi_prefix(raw).strip()
        if not line:
            continue
        # a message logged while nccl-tests printed a row sits after the row's first cells
        line = (nccl_tests.split_inline_message(line, hosts)[1] or line).strip()
        m = _PREFIX.match(line)
        if not m:
            mv = re.match(r"^NCCL version (\S+)", line)
            if mv and log.version is None:
                log.version = mv.group(1)
            continue
        host, pid, msg = m.group("host"), m.group("pid"), m.group("msg")
        host_pids[host].add(pid)
        if m.group("lvl") != "INFO":
            continue
        log.info_lines += 1
        mv = _VERSION.match(msg)
        if mv:
            log.version = log.version or mv.group(1)
            continue
        mc = _COLL.match(msg)
        if mc:
            coll, rest = mc.group(1), mc.group(3)
            kv = _kv_fields(rest)
            mn = _NRANKS.search(rest)
            try:
                count = int(kv["count"])
                dtype = int(kv["datatype"])
                comm = kv["comm"]
                nranks = int(mn.group(1)) if mn else 0
            except (KeyError, ValueError):
                raise ParseError(f"COLL line for {coll} lacks a numeric count, datatype or comm field",
                                 source=source, line=lineno) from None
            if count < 0 or count > 2 ** 50:
                raise ParseError(f"COLL line count {count} is out of range", source=source, line=lineno)
            if not 0 < nranks <= MAX_RANKS:
                raise ParseError(f"COLL line has no plausible [nranks=N] (got {nranks})", source=source,
                                 line=lineno)
            if coll not in _COLL_KINDS:
                log.unparsed[coll] += 1
                continue
            if dtype not in NCCL_DTYPES:
                raise ParseError(f"COLL line datatype {dtype} is not an ncclDataType_t (0-11)", source=source,
                                 line=lineno)
            log.calls[(host, pid, comm)].append(_Call(coll, count, dtype, nranks, lineno))
            continue
        mi = _INIT.search(msg)
        if mi:
            rank, nranks = int(mi.group(2)), int(mi.group(3))
            if not 0 < nranks <= MAX_RANKS or rank >= nranks:
                raise ParseError(f"Init COMPLETE line has rank {rank} of nranks {nranks}", source=source,
                                 line=lineno)
            cid = re.search(r"commId (0x[0-9a-fA-F]+)", mi.group("rest"))
            log.comms[(host, pid, mi.group(1))] = (rank, nranks, int(mi.group(4)), cid.group(1) if cid else None)
            continue
        mr = _RING.match(msg)
        if mr:
            ch, total = int(mr.group(1)), int(mr.group(2))
            log.ring_channels = max(log.ring_channels or 0, total)
            log.rings.setdefault(ch, tuple(int(x) for x in mr.group(3).split()))
            continue
        mt = _TREES.match(msg)
        if mt:
            log.tree_lines += 1
            log.tree_channels = max(log.tree_channels or 0, len(re.findall(r"\[\d+\]", mt.group(1))))
            continue
        mconn = _CONN.match(msg)
        if mconn:
            via = mconn.group(7)
            # each connection is printed by both ends ([send] and [receive]) for NET; count it once (send side)
            if mconn.group(6) == "receive":
                continue
            log.transports[_transport_class(via)] += 1
            log.transport_detail[via] += 1
            continue
        mch = _CHANNELS.search(msg)
        if mch:
            log.coll_channels = (f"{mch.group(1)} coll channels, {mch.group(2)} p2p channels, "
                                 f"{mch.group(3)} p2p channels per peer")
            continue
        mnet = re.match(r"Using network (.+)$", msg)
        if mnet:
            log.network = mnet.group(1).strip()
            continue
        mprov = re.search(r"Selected Provider is (\S+)", msg)
        if mprov:
            log.provider = mprov.group(1)
    log.hosts = Counter({h: len(p) for h, p in host_pids.items()})
    return log


def _world_size(log: NcclLog) -> int:
    sizes = [c[1] for c in log.comms.values()] + [c.nranks for calls in log.calls.values() for c in calls]
    if sizes:
        return max(sizes)
    if log.rings:
        return max(len(r) for r in log.rings.values())
    return 0


def _communicators(log: NcclLog) -> list[list[tuple]]:
    """Cluster per-rank communicator handles into communicators.

    NCCL's ``comm 0x..`` is a per-process pointer, so handles of one communicator differ between ranks. Handles are
    merged by ``commId`` when the log prints it, else by (nranks, sequence of calls), which the ranks of one
    communicator share.
    """
    clusters: dict = defaultdict(list)
    for key, calls in log.calls.items():
        info = log.comms.get(key)
        nranks = calls[0].nranks
        if info is not None and info[3] is not None:
            ckey = ("id", info[3])
        else:
            ckey = ("seq", nranks, tuple((c.coll, c.count, c.dtype) for c in calls))
        clusters[ckey].append(key)
    return list(clusters.values())


def _global_ranks(log: NcclLog, members: list[tuple], world: int) -> tuple[int, ...] | None:
    """Global ranks of a communicator's member processes, via each process's rank in the world communicator."""
    world_rank: dict[tuple[str, str], int] = {}
    for (host, pid, _), (rank, nranks, _dev, _cid) in log.comms.items():
        if nranks == world:
            world_rank[(host, pid)] = rank
    ranks = []
    for host, pid, _ in members:
        if (host, pid) not in world_rank:
            return None
        ranks.append(world_rank[(host, pid)])
    return tuple(sorted(set(ranks)))


def _facts(log: NcclLog, world: int, tests_facts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    if log.version:
        facts.append(("NCCL version", log.version))
    facts.append(("ranks", str(world)))
    if log.hosts:
        facts.append(("hosts", f"{len(log.hosts)} ({', '.join(sorted(log.hosts))})"))
    per_host = Counter(h for (h, _p, _c), (_r, n, _d, _i) in log.comms.items() if n == world)
    if per_host:
        facts.append(("ranks per host", ", ".join(f"{h}: {c}" for h, c in sorted(per_host.items()))))
    if log.network:
        facts.append(("network", log.network))
    if log.provider:
        facts.append(("libfabric provider", log.provider))
    if log.ring_channels is not None:
        facts.append(("ring channels", str(log.ring_channels)))
        for ch in sorted(log.rings):
            facts.append((f"ring {ch:02d}", " ".join(str(r) for r in log.rings[ch])))
    if log.tree_channels is not None:
        facts.append(("tree channels", str(log.tree_channels)))
        facts.append(("tree lines (ranks printing trees)", str(log.tree_lines)))
    if log.coll_channels:
        facts.append(("channels", log.coll_channels))
    if log.transports:
        facts.append(("transports (connections)", ", ".join(f"{k}: {v}" for k, v in log.transports.most_common())))
        facts.append(("transport paths", ", ".join(f"{k}: {v}" for k, v in log.transport_detail.most_common())))
    n_calls = sum(len(c) for c in log.calls.values())
    facts.append(("COLL lines", str(n_calls)))
    facts.extend((f"nccl-tests {k}", v) for k, v in tests_facts)
    return facts


def _job(log: NcclLog, name: str, world: int) -> tuple[Job, list[str]]:
    warnings: list[str] = []
    groups: list[ProcessGroup] = []
    ops: list[CommOp] = []
    gpn = None
    per_host = Counter(h for (h, _p, _c), (_r, n, _d, _i) in log.comms.items() if n == world)
    if per_host and len(set(per_host.values())) == 1:
        gpn = next(iter(per_host.values()))
    clusters = _communicators(log)
    clusters.sort(key=lambda members: (-log.calls[members[0]][0].nranks, min(c.line for c in log.calls[members[0]])))
    for i, members in enumerate(clusters):
        rep = max(members, key=lambda k: len(log.calls[k]))
        calls = log.calls[rep]
        nranks = calls[0].nranks
        gname = "world" if nranks == world and not any(g.name == "world" for g in groups) else f"comm{i}"
        ranks = _global_ranks(log, members, world) if len(members) == nranks else None
        if nranks == world:
            groups.append(ProcessGroup(name=gname, size=nranks, role="world", rank_start=0, rank_stride=1,
                                       role_source="trace"))
        else:
            groups.append(ProcessGroup(name=gname, size=nranks, role="unknown",
                                       ranks=ranks if ranks and len(ranks) == nranks else None,
                                       role_source="trace"))
        agg: Counter = Counter()
        for c in calls:
            kind = _COLL_KINDS[c.coll]
            dname, dsize = NCCL_DTYPES[c.dtype]
            nbytes = c.count * dsize * (nranks if kind in ("all_gather", "reduce_scatter") else 1)
            agg[(kind, nbytes, dname)] += 1
        for (kind, nbytes, dname), cnt in agg.items():
            ops.append(CommOp(kind=kind, bytes=nbytes, group=gname, count_per_step=float(cnt), dtype=dname,
                              name=f"{gname} {kind} {nbytes} B"))
    if ops:
        warnings.append(f"{log.source}: the log has no step markers; op counts are per whole log "
                        f"({sum(len(log.calls[m[0]]) for m in clusters)} calls seen by one rank per communicator)")
    if not any(g.name == "world" for g in groups):
        groups.insert(0, ProcessGroup(name="world", size=world, role="world", rank_start=0, rank_stride=1,
                                      role_source="trace"))
    notes = [f"NCCL_DEBUG log, {world} ranks" + (f", NCCL {log.version}" if log.version else "")]
    job = Job(name=name, kind="training", world_size=world, groups=tuple(groups), ops=tuple(ops),
              gpus_per_node_hint=gpn, notes=tuple(notes))
    return job, warnings


def sniff(head: bytes, name: str) -> bool:
    """True when ``head`` holds NCCL_DEBUG=INFO lines (any ``NCCL INFO`` message but ``Launch mode``)."""
    text = head.decode("utf-8", errors="replace")
    return nccl_tests.debug_log_signals(text) > 0


def parse(files: list[tuple[str, bytes]]) -> Workload:
    """Parse NCCL_DEBUG logs; each file becomes its own job. See the module docstring."""
    if not files:
        raise ParseError("no files given")
    jobs, measurements, facts, warnings, unparsed = [], [], [], [], []
    multi = len(files) > 1
    names = nccl_tests.unique_job_names(files)
    for (fname, data), jname in zip(files, names):
        text = data.decode("utf-8", errors="replace")
        hosts = nccl_tests.debug_hosts(text.splitlines())
        log = scan_log(text, fname, hosts)
        tests = nccl_tests.scan_text(text, fname, hosts)
        tests.tables = [t for t in tests.tables if t.rows]
        tests_facts: list[tuple[str, str]] = []
        if tests.tables:
            called = {_COLL_KINDS[c.coll] for calls in log.calls.values() for c in calls}
            warnings.extend(nccl_tests.resolve_kinds(tests, fname, strict=False, called=called))
            tests.tables = [t for t in tests.tables if t.kind is not None]
        if tests.tables:
            measurements.extend(nccl_tests.measurements_of(tests))
            tests_facts = [(k, v) for k, v in nccl_tests.facts_of(tests)
                           if k in ("collectives", "rows", "min bytes measured", "max bytes measured",
                                    "peak busbw GB/s", "avg bus bandwidth GB/s (reported)", "devices")]
        world = _world_size(log)
        if world <= 0 and tests.tables:
            world = nccl_tests.rank_count(tests)
        if world <= 0:
            raise ParseError("no communicator found (no 'Init COMPLETE', ring or COLL line with a rank count)",
                             source=fname)
        job, w = _job(log, jname, world)
        warnings.extend(w)
        if not job.ops:
            msg = (f"{fname}: the log carries no per-call (COLL) lines, so it gives topology facts only and a job "
                   "with no ops; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL to record every call")
            if tests.tables:
                msg += f"; its nccl-tests table was kept as {len(nccl_tests.measurements_of(tests))} measurements"
            warnings.append(msg)
        for coll, cnt in log.unparsed.items():
            unparsed.append(UnparsedComm(source=fname, name=coll, count=cnt, total_time_s=0.0,
                                         reason=f"NCCL call {coll} has no fabric collective kind"))
        jobs.append(job)
        facts.extend(((f"{fname}: {k}" if multi else k), v) for k, v in _facts(log, world, tests_facts))
    wl = Workload(jobs=tuple(jobs), sources=tuple(f for f, _ in files), unparsed=tuple(unparsed),
                  measurements=tuple(measurements), facts=tuple(facts), warnings=tuple(warnings),
                  name=jobs[0].name if len(jobs) == 1 else "nccl-logs")
    return nccl_tests.checked(wl, files[0][0] if len(files) == 1 else None)

