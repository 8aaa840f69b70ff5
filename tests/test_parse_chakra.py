"""Chakra ET (protobuf) and Chakra JSON parser: real files, hand-encoded traces, malformed input, fuzzing."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import TRACES_DIR, trace_path
from tests.conftest import fuzz_deadline, fuzz_examples
from fabric.errors import FabricError, ParseError
from fabric.workload.parsers import chakra

# ---------------------------------------------------------------- a tiny protobuf encoder for hand-made traces


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wt: int) -> bytes:
    return _varint(field << 3 | wt)


def _len(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _attr(name: str, value) -> bytes:
    body = _len(1, name.encode())
    if isinstance(value, bool):
        body += _key(27, 0) + _varint(int(value))
    elif isinstance(value, int):
        body += _key(9, 0) + _varint(value)  # int64_val
    elif isinstance(value, str):
        body += _len(29, value.encode())
    elif isinstance(value, float):
        body += _key(3, 1) + struct.pack("<d", value)
    return body


def _meta(version="0.0.4", **attrs) -> bytes:
    body = _len(1, version.encode()) if version is not None else b""
    for k, v in attrs.items():
        body += _len(2, _attr(k, v))
    return body


def _node(nid, name, ntype, dur=0, **attrs) -> bytes:
    body = _key(1, 0) + _varint(nid) + _len(2, name.encode()) + _key(3, 0) + _varint(ntype)
    if dur:
        body += _key(7, 0) + _varint(dur)
    for k, v in attrs.items():
        body += _len(10, _attr(k, v))
    return body


def _et(*messages) -> bytes:
    return b"".join(_varint(len(m)) + m for m in messages)


def _coll(nid, comm_type, size, **kw):
    return _node(nid, f"coll{nid}", 7, is_cpu_op=False, comm_type=comm_type, comm_size=size, **kw)


# ---------------------------------------------------------------- real files


def test_chakra_0_et_matches_the_nccl_data_model():
    p = trace_path("chakra_et/chakra.0.et")
    meta, nodes = chakra.decode_et(p.read_bytes(), str(p))
    assert meta["version"] is None and meta["attr"]["schema"] == "1.0.1" and meta["attr"]["pid"] == 114598
    assert len(nodes) == 3664
    wl = chakra.parse([(str(p), p.read_bytes())])
    (job,) = wl.jobs
    ops = {(o.kind, o.bytes): o.count_per_step for o in job.ops}
    assert ops == {("all_reduce", 8_196_000): 1.0, ("all_reduce", 9_724_160): 1.0, ("all_reduce", 26_255_360): 1.0,
                   ("all_reduce", 26_550_272): 1.0, ("all_reduce", 31_502_336): 1.0,
                   ("broadcast", 212_480): 1.0, ("broadcast", 424): 1.0}
    # sum of duration_micros of the 1209 GPU COMP nodes (is_cpu_op false)
    assert job.compute_time_s == pytest.approx(0.292828)
    assert job.world_size == 1 and job.steps_observed == 1
    assert any("does not record the world size" in w for w in wl.warnings)
    assert all(o.overlap_fraction == 0.0 for o in job.ops)


@pytest.mark.parametrize("coll, kind, nbytes", [
    ("all_reduce", "all_reduce", 1_048_576),
    ("all_gather", "all_gather", 8 * 1_048_576),  # comm_size is the per-rank input (ASTRA-sim): output = 8 x 1 MiB
    ("reduce_scatter", "reduce_scatter", 1_048_576),
    ("all_to_all", "all_to_all", 1_048_576),
])
def test_astra_sim_microbenchmarks_merge_eight_ranks(coll, kind, nbytes):
    d = TRACES_DIR / "chakra_et/astra_sim_microbenchmarks" / coll / "8npus_1MB"
    paths = sorted(d.glob("*.et"))
    if len(paths) != 8:
        pytest.skip(f"{d} not present")
    for p in paths:
        _, nodes = chakra.decode_et(p.read_bytes())
        (n,) = nodes
        assert n["type"] == 7 and n["attr"]["comm_size"] == 1_048_576 and n["attr"]["is_cpu_op"] is False
    results = chakra.parse_groups([(str(p), p.read_bytes()) for p in paths])
    ((names, wl),) = results
    assert len(names) == 8
    (job,) = wl.jobs
    assert job.name == coll and job.world_size == 8
    (g,) = job.groups
    assert g.size == 8 and g.global_ranks() == tuple(range(8))
    (op,) = job.ops
    assert (op.kind, op.bytes, op.count_per_step, op.per_rank_bytes) == (kind, nbytes, 1.0, None)
    assert g.role == ("ep" if kind == "all_to_all" else "dp")


def test_small_chakra_json():
    p = trace_path("chakra_et/small_chakra.0.json")
    wl = chakra.parse([(str(p), p.read_bytes())])
    (job,) = wl.jobs
    assert job.world_size == 8  # "ngpus": 8
    assert job.ops == ()
    (u,) = wl.unparsed
    assert u.name.startswith("ncclKernel_Broadcast") and u.count == 1 and u.total_time_s == pytest.approx(28e-6)
    assert "size unknown" in u.reason
    assert job.compute_time_s == pytest.approx(4e-6)  # node 430, the only GPU compute node
    assert not any("does not record the world size" in w for w in wl.warnings)


def test_real_files_sniff(traces_dir):
    for p in traces_dir.glob("chakra_et/**/*"):
        if p.is_file():
            assert chakra.sniff(p.read_bytes()[:65536], p.name), p
    for p in traces_dir.glob("kineto/param_dlrm_kineto/*"):
        assert not chakra.sniff(p.read_bytes()[:65536], p.name)


# ---------------------------------------------------------------- hand-made traces


def test_hand_encoded_ranks_with_groups_send_recv_and_uneven_all_to_all():
    files = []
    for r in range(4):
        msgs = [_meta(), _node(1, "gemm", 4, dur=100 + r, is_cpu_op=False), _node(2, "cpu", 4, dur=999, is_cpu_op=True),
                _coll(3, 6, 1000 * (r + 1), pg_name="ep"),
                _coll(4, 0, 4096, pg_name="ep"),
                _node(5, "send", 5, comm_size=777, comm_dst=(r + 1) % 4, is_cpu_op=False),
                _node(6, "recv", 6, comm_size=777, comm_src=(r - 1) % 4, is_cpu_op=False),
                _coll(7, 3, 64),  # GATHER: not modelled
                _node(8, "c10d::allreduce_(0)", 7, is_cpu_op=True),  # CPU launcher: skipped
                _coll(9, 9, 0)]
        files.append((f"moe.{r}.et", _et(*msgs)))
    wl = chakra.parse(files)
    (job,) = wl.jobs
    assert job.world_size == 4 and job.name == "moe"
    ops = {o.kind: o for o in job.ops}
    assert ops["all_to_allv"].per_rank_bytes == (1000, 2000, 3000, 4000) and ops["all_to_allv"].bytes == 4000
    assert ops["all_to_allv"].group == "ep" and ops["all_reduce"].bytes == 4096
    assert ops["send_recv"].bytes == 777 and ops["send_recv"].group == "world"
    assert ops["barrier"].bytes == 0
    # group sizes are not in an ET: assumed the world; ep carries all_to_all + all_reduce, world only send/recv
    assert {g.name: g.role for g in job.groups} == {"ep": "world", "world": "pp"}
    assert any("size of group 'ep' not recorded" in n for n in job.notes)
    gathers = [u for u in wl.unparsed if "GATHER" in u.reason]  # one entry per rank file
    assert [u.source for u in gathers] == [f"moe.{r}.et" for r in range(4)]
    assert all(u.count == 1 and "not modelled" in u.reason for u in gathers)
    assert job.compute_time_s == pytest.approx(101.5e-6)
    assert any("COMM_RECV" in w for w in wl.warnings)


def test_metadata_with_schema_attribute_but_no_version_is_accepted():
    data = _et(_meta(version=None, schema="1.0.2-chakra.0.0.4"), _coll(1, 0, 10))
    assert chakra.sniff(data, "x.et")
    assert chakra.parse([("x.0.et", data)]).jobs[0].ops[0].bytes == 10


@pytest.mark.parametrize("data", [
    b"",
    b"\x05abc",  # length runs past the end
    _et(_node(1, "n", 4)),  # first message is a Node, not GlobalMetadata
    _et(_meta(version=None)),  # no version, no schema
    _et(b"\x0a\x03\xff\xfe\xfd"),  # version not UTF-8
    b"\xff" * 12,  # varint too long
    b"hello world, plain text",
])
def test_sniff_rejects_non_chakra(data):
    assert not chakra.sniff(data[:65536], "x.et")


def test_truncated_and_corrupt_streams_raise_parse_errors_naming_the_message():
    good = _et(_meta(), _coll(1, 0, 10), _coll(2, 0, 20))
    with pytest.raises(ParseError, match=r"x\.0\.et \(message 2\).*truncated"):
        chakra.parse([("x.0.et", good[:-3])])
    bad = _et(_meta(), _coll(1, 0, 10)) + _varint(4) + b"\x0f\x00\x00\x00"  # wire type 7
    with pytest.raises(ParseError, match="wire type"):
        chakra.parse([("x.0.et", bad)])


def test_unknown_comm_type_and_missing_size():
    data = _et(_meta(), _coll(1, 42, 10), _node(2, "ncclKernel_AllReduce_x", 7, is_cpu_op=False, comm_type=0),
               _node(3, "ncclKernel_AllGather_RING", 7, is_cpu_op=False))
    wl = chakra.parse([("x.et", data)])
    reasons = sorted(u.reason for u in wl.unparsed)
    assert any("unknown comm_type 42" in r for r in reasons)
    assert any("comm_size missing" in r for r in reasons)
    assert any(r.startswith("AllGather collective node without comm_type") for r in reasons)


def test_duplicate_ranks_and_ngpus_conflicts():
    a = _et(_meta(), _coll(1, 0, 10))
    res = chakra.parse_groups([("j.0.et", a), ("sub/../j.0.et", a)])
    assert all(not isinstance(r, Exception) for _, r in res)  # different prefixes: separate jobs
    j1 = json.dumps({"workload_graph": [], "ngpus": 4}).encode()
    j2 = json.dumps({"workload_graph": [], "ngpus": 8}).encode()
    ((names, err),) = chakra.parse_groups([("g.0.json", j1), ("g.1.json", j2)])
    assert isinstance(err, ParseError) and "ngpus" in str(err)
    ((_, err),) = chakra.parse_groups([("g.9.json", j1)])
    assert isinstance(err, ParseError) and "not below ngpus 4" in str(err)


def test_json_graph_errors():
    for doc, msg in [({"workload_graph": {}}, "workload_graph"), ({"workload_graph": [1]}, "must be an object"),
                     ({"workload_graph": [{"Id": 1}]}, "NodeType"), ({"workload_graph": [], "ngpus": -3}, "ngpus")]:
        with pytest.raises(ParseError, match=msg):
            chakra.parse([("c.json", json.dumps(doc).encode())])


def test_json_graph_with_comm_attributes():
    doc = {"workload_graph": [
        {"Id": 1, "Name": "ag", "NodeType": 7, "is_cpu_op": False, "comm_type": 2, "comm_size": 100},
        {"Id": 2, "Name": "rs", "NodeType": 7, "attr": [{"name": "comm_type", "value": 7},
                                                         {"name": "comm_size", "value": 800},
                                                         {"name": "pg_name", "value": "tp"}]}],
           "ngpus": 4}
    (job,) = chakra.parse([("c.json", json.dumps(doc).encode())]).jobs
    assert {(o.kind, o.bytes, o.group) for o in job.ops} == {("all_gather", 400, "world"),
                                                              ("reduce_scatter", 800, "tp")}


# ---------------------------------------------------------------- fuzz

_VALID = _et(_meta(schema="1.0.1"), _node(1, "g", 4, dur=5, is_cpu_op=False), _coll(2, 0, 4096, pg_name="dp"),
             _coll(3, 6, 100), _node(4, "s", 5, comm_size=9))


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(_VALID)), st.binary(min_size=1, max_size=16))
def test_fuzz_mutated_et_only_raises_parse_errors(pos, patch):
    data = _VALID[:pos] + patch + _VALID[pos + len(patch):]
    chakra.sniff(data, "f.et")
    try:
        chakra.parse([("f.3.et", data)])
    except FabricError:
        pass


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data):
    chakra.sniff(data, "r.et")
    try:
        chakra.parse([("r.et", data)])
    except FabricError:
        pass


_jv = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=6),
                   lambda i: st.lists(i, max_size=3) | st.dictionaries(st.text(max_size=6), i, max_size=3),
                   max_leaves=10)
_jnode = st.dictionaries(st.sampled_from(["Id", "Name", "NodeType", "runtime", "is_cpu_op", "comm_type", "comm_size",
                                          "pg_name", "attr"]), _jv | st.integers(0, 10), max_size=7)


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_jnode, max_size=6), _jv)
@example([], "²")              # str.isdigit() accepts a superscript two, int() does not: found by this test
def test_fuzz_json_graph(nodes, ngpus):
    doc = {"workload_graph": nodes, "ngpus": ngpus}
    try:
        chakra.parse([("j.1.json", json.dumps(doc).encode())])
    except FabricError:
        pass
