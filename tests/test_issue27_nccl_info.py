"""Issue 27, shape 1: an nccl-tests all_reduce_perf run whose stdout interleaves hundreds of NCCL_DEBUG=INFO lines
(2 ranks, NCCL 2.12, EFA, T4, 0 B .. 1 GiB, new columns). The file is our own reproduction
(tests/shapes_nccl_info.py); every expected value is read from the generator's raw rows, not from the parser."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fabric.calibrate.data import load_measurements, merge_points
from fabric.calibrate.system import CalibrationError
from fabric.errors import FabricError, ParseError
from fabric.workload.ingest import ingest
from fabric.workload.parsers import nccl_log, nccl_tests
from tests import shapes_nccl_info as shape
from tests.conftest import fuzz_deadline, fuzz_examples

GIB = 1 << 30


def _ingest(text: str, name: str = "nccl-tests-efa.log"):
    res = ingest([(name, text.encode())])
    (rep,) = res.files
    assert rep.ok, rep.error
    return rep, res.workload


def _positions(lines):
    header = next(i for i, ln in enumerate(lines) if ln.startswith("#       size"))
    first_row = next(i for i, ln in enumerate(lines) if re.match(r"^\s+0\s+0\s+float", ln))
    footer = next(i for i, ln in enumerate(lines) if ln.startswith("# Out of bounds"))
    return header, first_row, footer


def test_every_size_is_read_wherever_the_info_lines_fall():
    text = shape.log_text()
    lines = text.splitlines()
    header, first_row, footer = _positions(lines)
    info = [i for i, ln in enumerate(lines) if "NCCL INFO" in ln]
    assert len(info) > 200
    assert sum(i < header for i in info) > 100                        # before the header
    assert sum(header < i < first_row for i in info) > 10             # between the header and the rows
    assert sum(first_row < i < footer for i in info) >= 20            # between rows
    assert sum(i > footer for i in info) > 0                          # after the table
    rep, wl = _ingest(text)
    assert rep.format == "nccl_log"
    rows = shape.rows()
    assert len(wl.measurements) == 2 * len(rows) == 62
    assert {m.kind for m in wl.measurements} == {"all_reduce"} and {m.ranks for m in wl.measurements} == {2}
    assert sorted(m.bytes for m in wl.measurements if not m.in_place) == sorted(r["size"] for r in rows)
    for m in wl.measurements:
        row = next(r for r in rows if r["size"] == m.bytes)
        raw = row["ip" if m.in_place else "oop"]
        assert m.time_s == pytest.approx(raw["time_us"] * 1e-6)
        assert m.busbw_bytes_per_s == pytest.approx(raw["busbw"] * 1e9)
    big = [m for m in wl.measurements if m.bytes == GIB and not m.in_place]
    assert len(big) == 1 and big[0].time_s == pytest.approx(rows[-1]["oop"]["time_us"] * 1e-6)
    # 1 GiB at ~1.9 GB/s: about 0.565 s, busbw = algbw on 2 ranks
    assert 0.5 < big[0].time_s < 0.6 and big[0].busbw_bytes_per_s == pytest.approx(big[0].algbw_bytes_per_s)
    # the collective is decided by the in-place #wrong column: on 2 ranks all_reduce and sendrecv have one bus factor
    said = [w for w in wl.warnings if "has no test name" in w]
    assert len(said) == 1 and "inferred as all_reduce" in said[0] and "in-place #wrong checked" in said[0]


def test_the_info_lines_are_used_for_what_they_tell():
    _, wl = _ingest(shape.log_text())
    facts = dict(wl.facts)
    assert facts["NCCL version"] == shape.NCCL_VERSION
    assert facts["ranks"] == "2"
    assert facts["hosts"] == f"2 ({', '.join(sorted(shape.HOSTS))})"
    assert facts["ranks per host"] == ", ".join(f"{h}: 1" for h in sorted(shape.HOSTS))
    assert facts["ring channels"] == "2" and facts["ring 00"] == "0 1" and facts["ring 01"] == "0 1"
    assert facts["tree channels"] == "2"
    assert facts["channels"] == "2 coll channels, 2 p2p channels, 2 p2p channels per peer"
    assert facts["network"] == "AWS Libfabric" and facts["libfabric provider"] == "efa"
    # each rank prints 2 channels x (ring + tree) [send] lines: 8 connections over EFA
    assert facts["transports (connections)"] == "NET/AWS Libfabric: 8"
    assert facts["nccl-tests devices"] == "2 x Tesla T4"
    assert facts["nccl-tests max bytes measured"] == str(GIB)
    job = wl.jobs[0]
    assert job.world_size == 2 and job.gpus_per_node_hint == 1


def test_calibrate_reads_the_table():
    rows = shape.rows()
    ms = load_measurements_from_text(shape.log_text())
    assert len(ms.measurements) == 62
    assert ms.system.ranks == 2 and ms.system.gpus_per_node == 1 and ms.system.network == "efa"
    points, notes = merge_points(ms.measurements)
    assert [p.bytes for p in points] == [r["size"] for r in rows if r["size"] > 0]
    assert notes == ["4 measurements dropped: zero-byte rows"]
    top = points[-1]
    raw = rows[-1]
    assert top.kind == "all_reduce" and top.bytes == GIB and top.ranks == 2
    assert top.time_s == pytest.approx(math.sqrt(raw["oop"]["time_us"] * raw["ip"]["time_us"]) * 1e-6)


def load_measurements_from_text(text: str, **kw):
    """load_measurements on ``text`` written to a temporary file (the T4 has no catalog row: a stand-in GPU)."""
    import tempfile
    from pathlib import Path

    d = tempfile.mkdtemp(prefix="fabric-i27-")
    p = Path(d) / "nccl-tests-efa.log"
    p.write_text(text)
    kw.setdefault("gpu_model", "a100-sxm-80gb")
    kw.setdefault("nic_gbps", 50)
    return load_measurements([p], **kw)


def test_calibrate_cli_finds_the_table(tmp_path, capsys):
    from fabric.cli.main import main

    p = tmp_path / "nccl-tests-efa.log"
    p.write_text(shape.log_text())
    assert main(["calibrate", str(p), "--gpu-model", "a100-sxm-80gb", "--nic-gbps", "50"]) == 0
    out = capsys.readouterr().out
    assert "all_reduce" in out and "1 GiB" in out
    # without a catalog GPU the error names the real missing piece, not the table
    assert main(["calibrate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "Tesla T4" in err and "--gpu-model" in err and "topology lines only" not in err


def test_rows_interrupted_by_coll_lines_are_joined_and_the_calls_decide_the_kind():
    # validation off: no in-place count to read; the COLL lines (some inside rows) say the calls are AllReduce
    text = shape.log_text(validation=False, coll=True)
    assert re.search(r"sum\s+-1ip-172-31-21-114:\d+:\d+ \[0\] NCCL INFO AllReduce", text)
    _, wl = _ingest(text)
    rows = shape.rows(validation=False)
    assert len(wl.measurements) == 62 and {m.kind for m in wl.measurements} == {"all_reduce"}
    for i in (5, 6, 7):                                  # the interrupted rows, read whole
        raw = rows[i]
        got = sorted((m.in_place, m.time_s) for m in wl.measurements if m.bytes == raw["size"])
        assert got == [(False, pytest.approx(raw["oop"]["time_us"] * 1e-6)),
                       (True, pytest.approx(raw["ip"]["time_us"] * 1e-6))]
    said = [w for w in wl.warnings if "has no test name" in w]
    assert len(said) == 1 and "from the log's COLL lines" in said[0]
    # the COLL lines glued to rows are read too: 4 calls for each of the 3 interrupted sizes (count x fp32)
    ops = sorted((o.bytes, o.count_per_step) for o in wl.jobs[0].ops)
    assert ops == [(rows[i]["count"] * 4, 4.0) for i in (5, 6, 7)]
    assert dict(wl.facts)["COLL lines"] == "12"


def test_with_mpi_prefixes_and_the_binary_named():
    _, wl = _ingest(shape.log_text(mpi_prefix=True, coll=True))
    assert len(wl.measurements) == 62 and max(m.bytes for m in wl.measurements) == GIB
    assert not [w for w in wl.warnings if "has no test name" in w]      # the shell-trace line names the binary
    wl2 = nccl_tests.parse([("run.log", shape.log_text(mpi_prefix=True).encode())])
    assert {o.kind for o in wl2.jobs[0].ops} == {"all_reduce"} and max(o.bytes for o in wl2.jobs[0].ops) == GIB


def test_undecidable_table_gives_a_clear_calibrate_error():
    # validation off and no COLL lines: on 2 ranks all_reduce and sendrecv print identical tables
    text = shape.log_text(validation=False)
    _, wl = _ingest(text)
    assert wl.measurements == ()
    with pytest.raises(CalibrationError) as err:
        load_measurements_from_text(text)
    msg = str(err.value)
    assert "could not be used" in msg and "all_reduce, send_recv" in msg and "-c 1" in msg
    assert "topology lines only" not in msg


def test_a_row_whose_rest_never_comes_is_an_error():
    text = shape.log_text(coll=True)
    lines = text.splitlines()
    cut = next(i for i, ln in enumerate(lines) if re.search(r"-1ip-172-31-21-114:\S+ \[0\] NCCL INFO AllReduce", ln))
    # drop the rest of the interrupted row (its out-of-place and in-place cells)
    rest = [i for i in range(cut + 1, cut + 5) if not lines[i].startswith("ip-")]
    damaged = "\n".join(ln for i, ln in enumerate(lines) if i not in rest[-1:]) + "\n"
    with pytest.raises(ParseError) as err:
        nccl_log.parse([("cut.log", damaged.encode())])
    # the next row's cells are not taken for the rest: the error names the interrupted row
    assert err.value.line == cut + 1 and "interrupted by an NCCL message" in str(err.value)
    # a row cut at the end of the file
    last = next(i for i, ln in enumerate(lines) if ln.startswith("  1073741824"))
    ended = "\n".join(lines[:last] + [lines[last][:60] + shape._info(0, shape.PIDS[0], "Launch mode Parallel")])
    with pytest.raises(ParseError, match="never completed") as err:
        nccl_log.parse([("end.log", ended.encode())])
    assert err.value.line == last + 1


# ---------------------------------------------------------------- fuzz targets

_INFO = [shape._info(r, shape.PIDS[r], m) for r in (0, 1) for m in (
    "NET/OFI Registering memory region", "Launch mode Parallel", "Connected all rings",
    "Channel 01/0 : 1[1e0] -> 0[1e0] [send] via NET/AWS Libfabric/0", "2 coll channels, 2 p2p channels, 2 p2p channels "
    "per peer")]


@settings(max_examples=fuzz_examples(60), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_info_lines_anywhere_never_lose_a_row(data):
    """INFO lines put at random places (between any two lines, or inside a row at a cell boundary, the row's rest on
    the next line) never change what is read: every size, the same times."""
    lines = shape.log_text().splitlines()
    n = data.draw(st.integers(1, 12))
    for _ in range(n):
        i = data.draw(st.integers(0, len(lines)))
        msg = data.draw(st.sampled_from(_INFO))
        row = i < len(lines) and re.match(r"^\s+\d", lines[i]) and len(lines[i].split()) == 13
        if row and data.draw(st.booleans()):
            # NCCL writes between nccl-tests' prints: after size..root and after the out-of-place cells
            cells = lines[i].split()
            k = data.draw(st.sampled_from([5, 9]))
            lines[i:i + 1] = ["  ".join(cells[:k]) + msg, "  " + "  ".join(cells[k:])]
        else:
            lines.insert(i, msg)
    _, wl = _ingest("\n".join(lines) + "\n")
    rows = shape.rows()
    assert len(wl.measurements) == 62
    big = [m for m in wl.measurements if m.bytes == GIB and not m.in_place]
    assert big[0].time_s == pytest.approx(rows[-1]["oop"]["time_us"] * 1e-6)


@settings(max_examples=fuzz_examples(150), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["drop", "cut", "junk", "dup"]),
                          st.text(max_size=30)), min_size=1, max_size=6),
       st.booleans(), st.booleans())
@example(edits=[(1106, "cut", "")], coll=True, validation=True)
def test_fuzz_damaged_info_logs_only_raise_parse_errors(edits, coll, validation):
    original = shape.log_text(coll=coll, validation=validation).splitlines()
    lines = list(original)
    for pos, what, junk in edits:
        i = pos % len(lines)
        if what == "drop":
            del lines[i]
        elif what == "cut":
            lines[i] = lines[i][: pos % (len(lines[i]) + 1)]
        elif what == "junk":
            lines.insert(i, junk)
        else:
            lines.insert(i, lines[i])
    data = ("\n".join(lines) + "\n").encode()
    for mod in (nccl_log, nccl_tests):
        try:
            wl = mod.parse([("fz.log", data)])
        except FabricError:
            continue
        assert wl.jobs
    res = ingest([("fz.log", data)])
    assert len(res.files) == 1
    # damage that left the table's own lines whole and in order (only INFO/other lines dropped, cut, doubled or
    # junk added without a leading digit or '#') loses no row
    table = [ln for ln in original if ln.startswith("#") or re.match(r"^\s+\d", ln)]
    now = [ln for ln in lines if ln.lstrip().startswith("#") or re.match(r"^\s*\d", ln)]
    # a damaged COLL line is a documented error naming its line (the calls it counts would be wrong), not a lost row
    damaged_coll = [ln for ln in lines if re.search(r"NCCL INFO \w+:", ln) and ln not in original]
    if now == table and "NCCL INFO" in data.decode() and validation:
        (rep,) = res.files
        if damaged_coll and not rep.ok:
            assert "COLL line" in rep.error and "(line " in rep.error, rep.error
        else:
            assert rep.ok and len(res.workload.measurements) == 62, rep.error
