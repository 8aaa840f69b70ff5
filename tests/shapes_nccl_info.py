"""Generator of an nccl-tests run logged with NCCL_DEBUG=INFO (issue 27, shape 1): our own reproduction, written
from the description of a real file and from how nccl-tests and NCCL print (never a copy of a real log).

The run: ``all_reduce_perf -b 0 -e 1G -f 2`` on 2 ranks (one Tesla T4 on each of two g4dn hosts, EFA through the
aws-ofi-nccl plugin), NCCL 2.12.x with two channels, nccl-tests' newer columns (``redop``, ``root``, ``#wrong``).
Each rank's NCCL writes its INFO lines to the stdout nccl-tests prints on, so hundreds of them (bootstrap, network
plugin, topology, rings, trees, connections, thresholds, Init COMPLETE) come before the table; the second rank's
late ones and ``Launch mode`` fall between the header and the first row, some between rows, and the teardown after
the footer. With ``-b 0`` nccl-tests prints two 0-byte rows (0 B, and 2 B rounded down to 0 floats), then 4 B up.

``coll=True`` adds NCCL_DEBUG_SUBSYS=COLL lines of rank 0: one call is logged while its row is half printed, so the
message sits inside the row (after the size..root cells and after the out-of-place cells) and the row's rest
follows on later lines, as a real single-stdout run writes it.

:func:`rows` gives the table as numbers (the raw values every test checks against); :func:`log_text` the file.
"""

from __future__ import annotations

import random

NCCL_VERSION = "2.12.12+cuda11.7"
HOSTS = ("ip-172-31-21-114", "ip-172-31-27-63")
PIDS = (20911, 17342)
BUS_ID = "1e0"
GPU = "Tesla T4"
#: sizes of the run: 0 B twice, then 4 B .. 1 GiB in powers of two
SIZES = (0, 0) + tuple(2 ** k for k in range(2, 31))


def _time_us(size: int, in_place: bool) -> float:
    """A plausible 2-rank EFA all-reduce time: ~60 us latency plus 1.9 GB/s of bus bandwidth (T4 over 50 Gb/s)."""
    if size == 0:
        return 0.31 if in_place else 0.33
    t = 61.0 + size / 1.9e3          # us: bytes / (1.9e9 B/s) * 1e6
    return t * (1.004 if in_place else 1.0)


def _fmt_time(us: float) -> str:
    """nccl-tests' time cell: 2 decimals under 100 us, 1 under 10 ms, none above."""
    if us >= 10000.0:
        return f"{us:7.0f}"
    if us >= 100.0:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def rows(*, validation: bool = True) -> list[dict]:
    """The table's rows as printed values: size, count, time (us), algbw, busbw (GB/s, 2 decimals), #wrong."""
    out = []
    for size in SIZES:
        row = {"size": size, "count": size // 4}
        for place, ip in (("oop", False), ("ip", True)):
            t = float(_fmt_time(_time_us(size, ip)))
            algbw = round(size / (t * 1e-6) / 1e9, 2) if t > 0 else 0.0
            row[place] = {"time_us": t, "algbw": algbw, "busbw": algbw,      # 2(n-1)/n = 1 on 2 ranks
                          "wrong": "0" if validation else "N/A"}
        out.append(row)
    return out


def _info(rank: int, tid: int, msg: str) -> str:
    return f"{HOSTS[rank]}:{PIDS[rank]}:{tid} [0] NCCL INFO {msg}"


def _init_lines(rank: int) -> list[str]:
    """What one rank's NCCL 2.12 prints from bootstrap to Init COMPLETE (two channels, one EFA NIC)."""
    pid, tid = PIDS[rank], PIDS[rank] + 19
    peer = 1 - rank
    lines = [
        _info(rank, pid, "Bootstrap : Using ens5:172.31.%d.%d<0>" % (21 + 6 * rank, 114 - 51 * rank)),
        _info(rank, pid, "NET/OFI Using aws-ofi-nccl 1.4.0aws"),
        _info(rank, pid, "NET/OFI Setting FI_EFA_FORK_SAFE environment variable to 1"),
        _info(rank, pid, "NET/OFI Selected Provider is efa (found 1 nics)"),
        _info(rank, pid, "NET/Plugin: Failed to find ncclCollNetPlugin_v5 symbol."),
        _info(rank, pid, "Using network AWS Libfabric"),
    ]
    if rank == 0:
        lines.append(f"NCCL version {NCCL_VERSION}")
    lines += [
        _info(rank, tid, "Setting affinity for GPU 0 to ffff,ffffffff"),
        _info(rank, tid, "NET/OFI [%d] getCudaPath dev 0 busId 0000:00:1e.0 path /sys/devices/pci0000:00/" % rank),
        _info(rank, tid, "Topology detection : could not read /sys/devices/system/node/node0/cpumap, ignoring"),
    ]
    for ch in range(2):
        lines.append(_info(rank, tid, f"Channel {ch:02d}/02 :    0   1"))
    lines.append(_info(rank, tid, "Trees [0] %s [1] %s" % (("1/-1/-1->0->-1", "-1/-1/-1->0->1") if rank == 0
                                                          else ("-1/-1/-1->1->0", "0/-1/-1->1->-1"))))
    for ch in range(2):
        lines.append(_info(rank, tid, f"Channel {ch:02d}/0 : {peer}[{BUS_ID}] -> {rank}[{BUS_ID}] [receive] via "
                                      "NET/AWS Libfabric/0"))
        lines.append(_info(rank, tid, f"Channel {ch:02d}/0 : {rank}[{BUS_ID}] -> {peer}[{BUS_ID}] [send] via "
                                      "NET/AWS Libfabric/0"))
    lines.append(_info(rank, tid, "Connected all rings"))
    for ch in range(2):
        lines.append(_info(rank, tid, f"Channel {ch:02d}/0 : {peer}[{BUS_ID}] -> {rank}[{BUS_ID}] [receive] via "
                                      "NET/AWS Libfabric/0"))
        lines.append(_info(rank, tid, f"Channel {ch:02d}/0 : {rank}[{BUS_ID}] -> {peer}[{BUS_ID}] [send] via "
                                      "NET/AWS Libfabric/0"))
    lines += [
        _info(rank, tid, "Connected all trees"),
        _info(rank, tid, "threadThresholds 8/8/64 | 16/8/64 | 512 | 512"),
        _info(rank, tid, "2 coll channels, 2 p2p channels, 2 p2p channels per peer"),
        _info(rank, tid, f"comm 0x{0x55d3a1b2c000 + rank:x} rank {rank} nranks 2 cudaDev 0 busId {BUS_ID} - Init "
                         "COMPLETE"),
    ]
    return lines


def _chatter(rng: random.Random, n: int) -> list[str]:
    """Filler INFO lines the plugin and proxy threads print (the 'hundreds' of a real debug log)."""
    msgs = ["NET/OFI Libfabric provider associates MRs with domains", "NET/OFI Registering memory region",
            "Allocated 4194656 bytes of shared memory in /dev/shm/nccl-", "NET/OFI Creating one domain per process",
            "P2P Chunksize set to 131072", "NCCL_PROTO set by environment to simple",
            "NET/OFI Running on g4dn.12xlarge platform, NCCL_TOPO_FILE not set"]
    out = []
    for _ in range(n):
        rank = rng.randrange(2)
        out.append(_info(rank, PIDS[rank] + rng.choice((0, 19, 23)), rng.choice(msgs)))
    return out


def _row_cells(row: dict) -> tuple[str, str, str]:
    """(size..root, out-of-place, in-place) cells of a row, spaced as nccl-tests prints them."""
    lead = f"{row['size']:12d}  {row['count']:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}"
    parts = []
    for place in ("oop", "ip"):
        p = row[place]
        parts.append(f"  {_fmt_time(p['time_us'])}  {p['algbw']:6.2f}  {p['busbw']:6.2f}  {p['wrong']:>5s}")
    return lead, parts[0], parts[1]


def _coll(op: int, count: int) -> str:
    return _info(0, PIDS[0], f"AllReduce: opCount {op:x} sendbuff 0x7f5c1a000000 recvbuff 0x7f5c0a000000 count "
                             f"{count} datatype 7 op 0 root 0 comm 0x55d3a1b2c000 [nranks=2] stream 0x55d3a2f0e7d0")


def log_text(*, validation: bool = True, coll: bool = False, mpi_prefix: bool = False, seed: int = 27) -> str:
    """The whole stdout of the run (see the module doc)."""
    rng = random.Random(seed)
    out: list[str] = []
    if mpi_prefix:
        out.append("+ mpirun -np 2 --tag-output -x NCCL_DEBUG=INFO ./build/all_reduce_perf -b 0 -e 1G -f 2")
    out += [
        f"# nThread 1 nGpus 1 minBytes 0 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        f"validation: {int(validation)} graph: 0",
        "#",
        "# Using devices",
    ]
    for r in range(2):
        out.append(f"#  Rank {r:2d} Group  0 Pid {PIDS[r]:6d} on {HOSTS[r]:>16s} device  0 [0x00] {GPU}")
    init0, init1 = _init_lines(0), _init_lines(1)
    # both ranks initialise at once; rank 1 is slower, so its last lines arrive after rank 0 printed the header
    early1, late1 = init1[:-9], init1[-9:]
    merged = []
    a, b = list(init0), list(early1)
    while a or b:
        src = a if (a and (not b or rng.random() < 0.55)) else b
        merged.append(src.pop(0))
    out += merged + _chatter(rng, 120)
    out += [
        "#",
        "#                                                              out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
        "busbw #wrong",
        _info(1, PIDS[1], "NET/OFI Registering memory region"),          # between the two header lines
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
        "(GB/s)",
    ]
    out += late1 + [_info(0, PIDS[0], "Launch mode Parallel")] + _chatter(rng, 30)
    op = 12
    for i, row in enumerate(rows(validation=validation)):
        lead, oop, ip = _row_cells(row)
        if coll and 5 <= i <= 7:
            # one call is logged while the row is half printed: the message sits inside the row
            count = row["count"]
            out += [lead + _coll(op, count), _coll(op + 1, count), oop + _coll(op + 2, count),
                    _coll(op + 3, count), ip]
            op += 4
        else:
            out.append(lead + oop + ip)
        if i in (3, 11, 20):
            out += _chatter(rng, 8)                                        # the other rank's lines between rows
    avg = sum(r["oop"]["busbw"] + r["ip"]["busbw"] for r in rows(validation=validation)) / (2 * len(SIZES))
    out += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {avg:.5g}", "#"]
    out += [_info(r, PIDS[r], f"comm 0x{0x55d3a1b2c000 + r:x} rank {r} nranks 2 cudaDev 0 busId {BUS_ID} - "
                              "Destroy COMPLETE") for r in range(2)]
    out += _chatter(rng, 6)
    if mpi_prefix:
        out = [ln if ln.startswith("+ ") else f"[1,0]<stdout>:{ln}" for ln in out]
    return "\n".join(out) + "\n"


def info_line_count(text: str) -> int:
    """How many lines (or parts of lines) of ``text`` are NCCL INFO messages."""
    return text.count("NCCL INFO")
