"""nccl-tests stdout and NCCL_DEBUG=INFO logs: real files checked against values read off them by hand, hand-made
layouts and malformed inputs, and a fuzz test (only ParseError/FabricError may escape)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.errors import FabricError, ParseError
from fabric.workload.parsers import nccl_log, nccl_tests
from tests.conftest import trace_path, fuzz_examples, fuzz_deadline

SUPERBENCH = "nccl_tests/superbench/"
AWS_LOG = "nccl_debug/aws_efa_eks_p4d_16rank/README.md.nccl-tests-efa-16.log"

# file -> (kind, ops with size > 0, last row: time us, algbw GB/s, busbw GB/s out-of-place; in-place busbw, avg)
# values typed from the files (the 8 GiB row and the "# Avg bus bandwidth" footer)
SUPERBENCH_FILES = {
    "nccl_allreduce.log": ("all_reduce", 32, 63896, 134.44, 235.26, 235.03, 68.4048),
    "nccl_allgather.log": ("all_gather", 29, 33646, 255.31, 223.39, 230.07, 58.2651),
    "nccl_alltoall.log": ("all_to_all", 29, 33508, 256.36, 224.31, 226.16, 58.6481),
    "nccl_broadcast.log": ("broadcast", 32, 36896, 232.81, 232.81, 234.70, 64.8653),
    "nccl_reduce.log": ("reduce", 32, 37613, 228.38, 228.38, 228.83, 65.018),
    "nccl_reducescatter.log": ("reduce_scatter", 29, 32464, 264.60, 231.52, 231.25, 60.168),
}


def _read(rel: str) -> tuple[str, bytes]:
    p = trace_path(rel)
    return p.name, p.read_bytes()


# ---------------------------------------------------------------- real nccl-tests files


@pytest.mark.parametrize("fname", sorted(SUPERBENCH_FILES))
def test_superbench_file(fname):
    kind, n_ops, t_us, algbw, busbw, ip_busbw, avg = SUPERBENCH_FILES[fname]
    name, data = _read(SUPERBENCH + fname)
    assert nccl_tests.sniff(data[:65536], name)
    assert not nccl_log.sniff(data[:65536], name)
    wl = nccl_tests.parse([(name, data)])
    job = wl.jobs[0]
    assert job.world_size == 8 and job.groups[0].size == 8 and job.groups[0].role == "world"
    assert job.gpus_per_node_hint == 8
    assert len(job.ops) == n_ops and {o.kind for o in job.ops} == {kind}
    assert min(o.bytes for o in job.ops) in (4, 32)   # 4 B for all-reduce-like, 32 B = 8 ranks x 1 float
    assert max(o.bytes for o in job.ops) == 8589934592
    # 34 rows, each out-of-place and in-place
    assert len(wl.measurements) == 68
    assert sum(m.in_place for m in wl.measurements) == 34
    assert {m.kind for m in wl.measurements} == {kind} and {m.ranks for m in wl.measurements} == {8}
    last_oop = [m for m in wl.measurements if m.bytes == 8589934592 and not m.in_place]
    last_ip = [m for m in wl.measurements if m.bytes == 8589934592 and m.in_place]
    assert last_oop[0].time_s == pytest.approx(t_us * 1e-6)
    assert last_oop[0].algbw_bytes_per_s == pytest.approx(algbw * 1e9)
    assert last_oop[0].busbw_bytes_per_s == pytest.approx(busbw * 1e9)
    assert last_ip[0].busbw_bytes_per_s == pytest.approx(ip_busbw * 1e9)
    assert last_oop[0].dtype == "float32"
    peak = max(m.busbw_bytes_per_s for m in wl.measurements if not m.in_place)
    assert 223e9 <= peak <= 236e9
    facts = dict(wl.facts)
    assert facts["nGpus"] == "8" and facts["nThread"] == "1" and facts["ranks"] == "8"
    assert facts["devices"] == "8 x A100-SXM4-40GB"
    assert facts["maxBytes"] == "8589934592" and facts["rows"] == "34"
    assert float(facts["avg bus bandwidth GB/s (reported)"]) == pytest.approx(avg)
    assert facts["layout"] == "old"


@pytest.mark.parametrize("fname", sorted(SUPERBENCH_FILES))
def test_superbench_kind_comes_from_content_not_name(fname):
    _, data = _read(SUPERBENCH + fname)
    wl = nccl_tests.parse([("benchmark.txt", data)])
    assert wl.jobs[0].ops[0].kind == SUPERBENCH_FILES[fname][0]
    assert dict(wl.facts)["kind decided by"].startswith("content")


def test_superbench_specific_rows():
    _, data = _read(SUPERBENCH + "nccl_reduce.log")
    wl = nccl_tests.parse([("nccl_reduce.log", data)])
    row = [m for m in wl.measurements if m.bytes == 4294967296]
    assert [round(m.time_s * 1e6, 1) for m in row] == [18594.0, 18570.0]
    assert [m.busbw_bytes_per_s for m in row] == pytest.approx([230.99e9, 231.28e9])
    _, data = _read(SUPERBENCH + "nccl_allreduce.log")
    wl = nccl_tests.parse([("nccl_allreduce.log", data)])
    one_mib = [m for m in wl.measurements if m.bytes == 1048576 and not m.in_place][0]
    assert one_mib.time_s == pytest.approx(74.78e-6) and one_mib.busbw_bytes_per_s == pytest.approx(24.54e9)


def test_several_files_become_several_jobs():
    files = [_read(SUPERBENCH + f) for f in ("nccl_allreduce.log", "nccl_alltoall.log")]
    wl = nccl_tests.parse(files)
    assert [j.name for j in wl.jobs] == ["nccl_allreduce", "nccl_alltoall"]
    assert len(wl.measurements) == 136
    assert dict(wl.facts)["nccl_alltoall.log: ranks"] == "8"


# ---------------------------------------------------------------- tables without a test name (issue 16 item 3)


def _nameless(tmp_path, fname, *, keep_devices=False):
    """A copy of a SuperBench table in tmp_path with nothing naming the test: a neutral file name, no 'Collective
    test starting' or *_perf line (these files have none), and (by default) no '# Rank ...' device list either."""
    lines = trace_path(SUPERBENCH + fname).read_text().splitlines()
    lines = [ln for ln in lines if "_perf" not in ln and "Collective test starting" not in ln
             and (keep_devices or not ln.lstrip("# ").startswith("Rank"))]
    p = tmp_path / "results.txt"
    p.write_text("\n".join(lines) + "\n")
    return str(p), p.read_bytes()


@pytest.mark.parametrize("fname,kind,evidence", [
    # 8 GiB row, read by hand: 235.26 / 134.44 = 1.750 = 2(8-1)/8 (in-place 235.03 / 134.31 = 1.750)
    ("nccl_allreduce.log", "all_reduce", "busbw/algbw = 1.750 (in-place 1.750), which fits all_reduce with 8 ranks"),
    # 8589934592 B / (268435456 x 4 B) = 8 -> gather-like over 8 ranks; 223.39 / 255.31 = 0.875 = (8-1)/8
    ("nccl_allgather.log", "all_gather", "size = 8 x count x dtype, no redop column, busbw/algbw = 0.875"),
    # the same ratio and factor, but a redop column with blank cells: all-to-all
    ("nccl_alltoall.log", "all_to_all", "blank redop cells, busbw/algbw = 0.875"),
    ("nccl_reducescatter.log", "reduce_scatter", "size = 8 x count x dtype, redop sum, busbw/algbw = 0.875"),
    # busbw = algbw (232.81 / 232.81) and a root column
    ("nccl_broadcast.log", "broadcast", "root column, busbw/algbw = 1.000"),
])
def test_table_without_test_name_collective_inferred_and_said(tmp_path, fname, kind, evidence):
    name, data = _nameless(tmp_path, fname)
    wl = nccl_tests.parse([(name, data)])
    (job,) = wl.jobs
    assert {o.kind for o in job.ops} == {kind} and job.world_size == 8
    assert {m.kind for m in wl.measurements} == {kind} and len(wl.measurements) == 68
    said = [w for w in wl.warnings if "has no test name" in w]
    assert len(said) == 1 and f"collective inferred as {kind} from its content" in said[0]
    assert evidence in said[0] and name in said[0]
    # the rank count is not printed either: the warning says what it was taken from
    assert any("no device list: 8 rank(s) taken from" in w for w in wl.warnings)


def _new_layout(tmp_path, fname):
    """The SuperBench all_gather table rewritten in nccl-tests' new layout (redop 'none', root -1, '#wrong') as run
    with validation off (-c 0: every '#wrong' cell N/A), where all_gather and alltoall print identical columns (with
    validation on, all_gather's checked in-place column tells it from alltoall's N/A)."""
    out = []
    for ln in trace_path(SUPERBENCH + fname).read_text().splitlines():
        toks = ln.split()
        if ln.startswith("#       size"):
            out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time"
                       "   algbw   busbw #wrong")
        elif toks and toks[0].isdigit() and len(toks) == 11:
            toks = toks[:3] + ["none", "-1"] + [t if i % 4 != 3 else "N/A" for i, t in enumerate(toks[3:])]
            out.append("  ".join(toks))
        elif not ln.lstrip("# ").startswith("Rank"):
            out.append(ln)
    p = tmp_path / "results.txt"
    p.write_text("\n".join(out) + "\n")
    return str(p), p.read_bytes()


def test_ambiguous_table_says_so_instead_of_guessing(tmp_path):
    name, data = _new_layout(tmp_path, "nccl_allgather.log")
    with pytest.raises(ParseError, match="ambiguous") as err:
        nccl_tests.parse([(name, data)])
    assert "all_gather, all_to_all" in str(err.value) and err.value.line == 6  # the header, devices removed
    # a telling file name breaks the tie, and the warning says the content alone was ambiguous
    wl = nccl_tests.parse([("all_gather_perf.txt", data)])
    assert {o.kind for o in wl.jobs[0].ops} == {"all_gather"}
    (w,) = [w for w in wl.warnings if "no test name" in w]
    assert "ambiguous (allows all_gather, all_to_all" in w and "taken from the file name" in w
    # inside an NCCL_DEBUG log the log still reads: the table is left out with the same reason
    log = ("host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n"
           + data.decode())
    wl = nccl_log.parse([("debug.log", log.encode())])
    assert wl.measurements == () and wl.jobs[0].world_size == 8
    assert any("ambiguous" in w and "34 row(s) were not used" in w for w in wl.warnings)


def test_debug_log_table_without_test_name(tmp_path):
    # the AWS EFA log names no *_perf binary and prints no 'Collective test starting': all_reduce from the numbers
    name, data = _read(AWS_LOG)
    assert b"_perf" not in data and b"Collective test starting" not in data
    wl = nccl_log.parse([(name, data)])
    said = [w for w in wl.warnings if "has no test name" in w]
    assert len(said) == 1 and "inferred as all_reduce" in said[0] and "1.875 with 16 ranks" in said[0]


# ---------------------------------------------------------------- the AWS EFA NCCL_DEBUG log


def test_aws_efa_log_facts_and_measurements():
    name, data = _read(AWS_LOG)
    assert nccl_log.sniff(data[:65536], name)
    assert not nccl_tests.sniff(data[:65536], name)
    wl = nccl_log.parse([(name, data)])
    facts = dict(wl.facts)
    assert facts["NCCL version"] == "2.9.9+cuda11.2"
    assert facts["ranks"] == "16"
    assert facts["hosts"].startswith("2 (")
    assert facts["ranks per host"] == "nccl-tests-efa-16-worker-0: 8, nccl-tests-efa-16-worker-1: 8"
    assert facts["network"] == "AWS Libfabric" and facts["libfabric provider"] == "efa"
    assert facts["ring channels"] == "8" and facts["tree channels"] == "8"
    assert facts["ring 00"] == "0 7 6 5 4 3 2 1 8 15 14 13 12 11 10 9"
    assert facts["ring 01"] == "0 3 10 15 14 13 12 9 8 11 2 7 6 5 4 1"
    assert facts["channels"] == "8 coll channels, 8 p2p channels, 1 p2p channels per peer"
    # 256 intra-node P2P/IPC connection lines; 64 NET lines = 32 connections printed by both ends
    assert facts["transports (connections)"] == "P2P/IPC: 256, NET/AWS Libfabric: 32"
    assert facts["COLL lines"] == "0"
    job = wl.jobs[0]
    assert job.world_size == 16 and job.ops == () and job.gpus_per_node_hint == 8
    assert any("no per-call (COLL) lines" in w for w in wl.warnings)
    # the all_reduce_perf table: 8 B .. 4 GiB, 30 rows x 2 placements
    assert len(wl.measurements) == 60
    assert {m.kind for m in wl.measurements} == {"all_reduce"} and {m.ranks for m in wl.measurements} == {16}
    sizes = sorted({m.bytes for m in wl.measurements})
    assert sizes[0] == 8 and sizes[-1] == 4294967296 and len(sizes) == 30
    peak = max(wl.measurements, key=lambda m: m.busbw_bytes_per_s)
    assert peak.busbw_bytes_per_s == pytest.approx(43.81e9) and peak.bytes == 4294967296
    assert peak.time_s == pytest.approx(183834e-6)
    assert facts["nccl-tests peak busbw GB/s"] == "43.81"


def test_aws_efa_log_read_as_nccl_tests_too():
    name, data = _read(AWS_LOG)
    wl = nccl_tests.parse([(name, data)])
    job = wl.jobs[0]
    assert job.world_size == 16 and len(job.ops) == 30
    assert dict(wl.facts)["hosts"].startswith("2 (")
    assert "busbw/algbw = 1.875 with 16 ranks" in dict(wl.facts)["kind decided by"]


# ---------------------------------------------------------------- hand-made layouts

NEW_LAYOUT = """\
[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#  Rank  0 Group  0 Pid  101 on     node1 device  0 [0x18] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  1 Group  0 Pid  102 on     node1 device  1 [0x2a] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  2 Group  0 Pid  201 on     node2 device  0 [0x18] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  3 Group  0 Pid  202 on     node2 device  1 [0x2a] NVIDIA H100 80GB HBM3
node1:101:101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
[1,0]<stdout>:#
[1,0]<stdout>:# Collective test starting: all_gather_perf
[1,0]<stdout>:#                                                              out-of-place                       in-place
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:          32             2     float    none      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0
+ echo hello
[1,0]<stdout>:     1048576         65536     float    none      -1    100.0   10.49    7.86    N/A    100.0   10.49    7.86    N/A
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 3.93
"""


def test_new_layout_with_prefixes_and_collective_line():
    wl = nccl_tests.parse([("run.log", NEW_LAYOUT.encode())])
    job = wl.jobs[0]
    assert job.world_size == 4 and job.gpus_per_node_hint == 2
    assert [(o.kind, o.bytes) for o in job.ops] == [("all_gather", 32), ("all_gather", 1048576)]
    m = [x for x in wl.measurements if x.bytes == 1048576 and not x.in_place][0]
    assert m.time_s == pytest.approx(100e-6) and m.busbw_bytes_per_s == pytest.approx(7.86e9)
    facts = dict(wl.facts)
    assert facts["layout"] == "new" and facts["graph"] == "0" and facts["agg iters"] == "1"
    assert facts["devices"] == "4 x NVIDIA H100 80GB HBM3"
    assert "Collective test starting" in facts["kind decided by"]


def test_new_layout_gather_like_needs_a_name_when_content_is_ambiguous():
    text = NEW_LAYOUT.replace("[1,0]<stdout>:# Collective test starting: all_gather_perf\n", "")
    # all_gather and alltoall print identical columns in the new layout: the content allows both (validation off, so
    # no in-place '#wrong' count tells them apart: alltoall prints N/A there, all_gather a count)
    text = text.replace("0.00      0    10.00    0.00    0.00      0", "0.00    N/A    10.00    0.00    0.00    N/A")
    with pytest.raises(ParseError, match="cannot determine the collective") as err:
        nccl_tests.parse([("run.log", text.encode())])
    assert err.value.source == "run.log" and err.value.line == 11
    wl = nccl_tests.parse([("alltoall_perf.log", text.encode())])
    assert wl.jobs[0].ops[0].kind == "all_to_all"
    assert "file name" in dict(wl.facts)["kind decided by"]
    # a binary named in a shell-trace line is content too
    wl = nccl_tests.parse([("run.log", ("+ mpirun -np 4 ./build/all_gather_perf -b 8\n" + text).encode())])
    assert wl.jobs[0].ops[0].kind == "all_gather"


def test_new_layout_all_reduce_decided_by_bus_factor():
    rows = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n"
            "     4194304       1048576     float     sum      -1    200.0   20.97   31.46      0    200.0   20.97   "
            "31.46      0\n")
    head = "\n".join(NEW_LAYOUT.splitlines()[:7]) + "\n"
    wl = nccl_tests.parse([("x.log", (head + rows).encode())])
    assert wl.jobs[0].ops[0].kind == "all_reduce"          # 31.46 / 20.97 = 1.5 = 2(4-1)/4
    # the same numbers with a bus factor of 1 are a sendrecv
    wl = nccl_tests.parse([("x.log", (head + rows.replace("31.46", "20.97")).encode())])
    assert wl.jobs[0].ops[0].kind == "send_recv"


def test_unmodelled_test_is_refused():
    text = NEW_LAYOUT.replace("all_gather_perf", "hypercube_perf")
    with pytest.raises(ParseError, match="hypercube"):
        nccl_tests.parse([("run.log", text.encode())])


# ---------------------------------------------------------------- malformed inputs


def _superbench_text() -> str:
    return trace_path(SUPERBENCH + "nccl_allreduce.log").read_text()


def test_truncated_row_names_file_and_line():
    lines = _superbench_text().splitlines()
    idx = next(i for i, ln in enumerate(lines) if ln.strip().startswith("1048576 "))
    lines[idx] = lines[idx][:60]
    with pytest.raises(ParseError) as err:
        nccl_tests.parse([("cut.log", "\n".join(lines).encode())])
    assert err.value.source == "cut.log" and err.value.line == idx + 1
    assert "cut.log (line" in str(err.value)


def test_row_with_a_non_number_is_an_error():
    text = _superbench_text().replace("   74.78   14.02   24.54", "   74.78   14.02   abc", 1)
    with pytest.raises(ParseError, match="busbw 'abc'"):
        nccl_tests.parse([("bad.log", text.encode())])


def test_table_cut_off_after_header_and_junk():
    head = "\n".join(_superbench_text().splitlines()[:15])
    with pytest.raises(ParseError, match="no nccl-tests result table"):
        nccl_tests.parse([("short.log", head.encode())])
    with pytest.raises(ParseError, match="no nccl-tests result table"):
        nccl_tests.parse([("junk.bin", b"\x00\xff garbage \x01" * 100)])
    with pytest.raises(ParseError):
        nccl_tests.parse([])


def test_wrong_columns():
    text = _superbench_text().replace("     time   algbw   busbw  error     time   algbw   busbw  error",
                                      "     tmie   algbw   busbw  error     tmie   algbw   busbw  error")
    with pytest.raises(ParseError, match="time"):
        nccl_tests.parse([("cols.log", text.encode())])


# ---------------------------------------------------------------- NCCL_DEBUG logs with COLL lines

COLL_LOG = """\
h1:11:11 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
h1:11:30 [0] NCCL INFO Channel 00/02 :    0   1   2   3
h1:11:30 [0] NCCL INFO Channel 01/02 :    0   1   2   3
h1:11:30 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1
h1:11:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h1:11:30 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0(0)/GDRDMA
h2:21:40 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [receive] via NET/IB/0(0)/GDRDMA
h2:21:40 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[1] via SHM/direct/direct
h1:11:30 [0] NCCL INFO comm 0xaa rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0x77 - Init COMPLETE
h1:12:31 [1] NCCL INFO comm 0xab rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 commId 0x77 - Init COMPLETE
h2:21:40 [0] NCCL INFO comm 0xba rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0x77 - Init COMPLETE
h2:22:41 [1] NCCL INFO comm 0xbb rank 3 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 commId 0x77 - Init COMPLETE
h1:11:30 [0] NCCL INFO comm 0xc0 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE
h2:21:40 [0] NCCL INFO comm 0xd0 rank 1 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE
h1:11:11 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1048576 datatype 7 op 0 root 0 comm 0xaa [nranks=4] stream 0x9
h1:12:12 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1048576 datatype 7 op 0 root 0 comm 0xab [nranks=4] stream 0x9
h1:11:11 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 1048576 datatype 7 op 0 root 0 comm 0xaa [nranks=4] stream 0x9
h1:11:11 [0] NCCL INFO AllGather: opCount 2 sendbuff 0x1 recvbuff 0x2 count 1000 datatype 9 op 0 root 0 comm 0xaa [nranks=4] stream 0x9
h1:11:11 [0] NCCL INFO ReduceScatter: opCount 0 sendbuff 0x1 recvbuff 0x2 count 500 datatype 6 op 0 root 0 comm 0xc0 [nranks=2] stream 0x9
h2:21:21 [0] NCCL INFO ReduceScatter: opCount 0 sendbuff 0x1 recvbuff 0x2 count 500 datatype 6 op 0 root 0 comm 0xd0 [nranks=2] stream 0x9
h1:11:11 [0] NCCL INFO Gather: opCount 3 sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root 0 comm 0xaa [nranks=4] stream 0x9
"""


def test_coll_lines_become_ops_per_communicator():
    assert nccl_log.sniff(COLL_LOG.encode(), "x.log") and not nccl_tests.sniff(COLL_LOG.encode(), "x.log")
    wl = nccl_log.parse([("coll.log", COLL_LOG.encode())])
    job = wl.jobs[0]
    assert job.world_size == 4
    world = job.group("world")
    assert world.size == 4 and world.role == "world"
    ops = {(o.group, o.kind): o for o in job.ops}
    ar = ops[("world", "all_reduce")]
    assert ar.bytes == 1048576 * 4 and ar.count_per_step == 2 and ar.dtype == "float32"
    ag = ops[("world", "all_gather")]
    assert ag.bytes == 1000 * 2 * 4 and ag.dtype == "bfloat16"         # send count x bf16 x 4 ranks (output)
    sub = [g for g in job.groups if g.size == 2][0]
    rs = ops[(sub.name, "reduce_scatter")]
    assert rs.bytes == 500 * 2 * 2 and rs.count_per_step == 1            # recv count x fp16 x 2 ranks (input)
    assert sub.ranks == (0, 2)                                            # via each process's world rank
    assert [(u.name, u.count) for u in wl.unparsed] == [("Gather", 1)]
    facts = dict(wl.facts)
    assert facts["NCCL version"] == "2.18.3+cuda12.2" and facts["ring channels"] == "2"
    assert facts["transports (connections)"] == "P2P/CUMEM: 1, NET/IB: 1, SHM: 1"
    assert any("no step markers" in w for w in wl.warnings)


def test_coll_line_with_a_bad_datatype():
    bad = COLL_LOG.replace("datatype 9", "datatype 42")
    with pytest.raises(ParseError, match="datatype 42") as err:
        nccl_log.parse([("coll.log", bad.encode())])
    assert err.value.line == 18


def test_log_without_communicators_is_an_error():
    with pytest.raises(ParseError, match="no communicator"):
        nccl_log.parse([("x.log", b"h1:1:1 [0] NCCL INFO Bootstrap : Using eth0\n")])


# ---------------------------------------------------------------- fuzz

_LINES = NEW_LAYOUT.splitlines() + COLL_LOG.splitlines() + [
    "           8             2   float     sum    179.1    0.00    0.00  2e-07    176.3    0.00    0.00  1e-07",
    "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
    "# Avg bus bandwidth    : nan", "", "    12  x", "#  Rank  0 Pid 1 on h device 0 [0x0] GPU",
]


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_LINES), st.text(max_size=80)), max_size=30),
       st.sampled_from(["a.log", "all_reduce_perf.log", "x"]))
def test_fuzz_only_parse_errors_escape(lines, fname):
    data = "\n".join(lines).encode("utf-8", errors="replace")
    for mod in (nccl_tests, nccl_log):
        mod.sniff(data, fname)
        try:
            wl = mod.parse([(fname, data)])
        except FabricError:
            continue
        assert wl.jobs


_HEADERS = [
    "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
    "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error",
    "#       size         count    type   redop    root     time   algbw   busbw  error     time   algbw   busbw  error",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong",
]
_num = st.one_of(st.integers(0, 2**40).map(str), st.floats(0, 1e4, allow_nan=False).map(lambda x: f"{x:.2f}"),
                 st.sampled_from(["0.00", "N/A", "-1", "nan", "1e-07"]))


@st.composite
def _nameless_table(draw):
    """A table with no test name: a random header and rows of random numbers (drives the content inference)."""
    lines = draw(st.lists(st.sampled_from(["# nThread 1 nGpus 8 minBytes 1 maxBytes 8 step: 2(factor) warmup "
                                           "iters: 5 iters: 20 validation: 0", "#  Rank  0 Pid 1 on h device 0 "
                                           "[0x0] GPU", "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 "
                                           "busId 1 - Init COMPLETE"]), max_size=3))
    lines.append(draw(st.sampled_from(_HEADERS)))
    for _ in range(draw(st.integers(0, 6))):
        cells = [draw(_num), draw(_num), draw(st.sampled_from(["float", "half", "int8", "bfloat16", "x"]))]
        cells += draw(st.lists(st.sampled_from(["sum", "none", "-1", "0", "max", ""]), max_size=2))
        cells += [draw(_num) for _ in range(8)]
        lines.append("  ".join(cells))
    return "\n".join(lines)


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(_nameless_table(), st.sampled_from(["results.txt", "all_gather_perf.log", "nccl_reduce.log"]))
def test_fuzz_nameless_tables(text, fname):
    data = text.encode()
    for mod in (nccl_tests, nccl_log):
        try:
            wl = mod.parse([(fname, data)])
        except FabricError:
            continue
        assert wl.jobs


@settings(max_examples=fuzz_examples(100), deadline=fuzz_deadline())
@given(st.binary(max_size=400))
def test_fuzz_bytes(data):
    for mod in (nccl_tests, nccl_log):
        try:
            mod.parse([("b.log", data)])
        except FabricError:
            pass


def test_sniffers_never_overlap():
    plain = "\n".join(ln for ln in NEW_LAYOUT.splitlines() if "NCCL INFO" not in ln)
    versioned = "NCCL version 2.19.3+cuda12.3\n" + plain          # NCCL_DEBUG=VERSION only
    for text, fmt in ((plain, "tests"), (versioned, "tests"), (NEW_LAYOUT, "log"), (COLL_LOG, "log")):
        data = text.encode()
        assert nccl_tests.sniff(data, "x.log") == (fmt == "tests")
        assert nccl_log.sniff(data, "x.log") == (fmt == "log")
    wl = nccl_log.parse([("run.log", NEW_LAYOUT.encode())])          # a debug log around a table: measurements kept
    assert len(wl.measurements) == 4 and wl.jobs[0].world_size == 4 and wl.jobs[0].ops == ()
