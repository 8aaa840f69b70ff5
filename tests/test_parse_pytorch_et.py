"""PyTorch Execution Trace (ExecutionTraceObserver JSON) parser: the 8 real DLRM ranks checked against sizes read
off the files by hand, hand-made traces in the newer (1.1.x-chakra) layout, malformed input, fuzzing."""

from __future__ import annotations

import glob
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TRACES_DIR, trace_path
from tests.conftest import fuzz_deadline, fuzz_examples
from fabric.errors import FabricError, ParseError
from fabric.workload.ingest import detect_format, ingest
from fabric.workload.parsers import chakra, kineto, pytorch_et

DLRM = "pytorch_et/param_dlrm_8ranks"


@pytest.fixture(scope="module")
def dlrm_files():
    paths = sorted(glob.glob(str(TRACES_DIR / DLRM / "dlrm_eg_*.json")))
    if len(paths) != 8:
        pytest.skip("PyTorch ET DLRM ranks not present")
    return [(p, open(p, "rb").read()) for p in paths]


@pytest.fixture(scope="module")
def dlrm(dlrm_files):
    return pytorch_et.parse(dlrm_files)


def _ops(job):
    out = {}
    for o in job.ops:
        out.setdefault((o.kind, o.bytes), []).append(o)
    return out


# ---------------------------------------------------------------- detection


def test_detected_as_pytorch_et_and_not_as_kineto_or_chakra(dlrm_files):
    name, data = dlrm_files[0]
    head = data[:65536]
    assert pytorch_et.sniff(head, name)
    assert not kineto.sniff(head, name) and not chakra.sniff(head, name)
    assert detect_format(name, data) == "pytorch_et"
    # and the other JSON formats are not taken for an ET
    k = trace_path("kineto/param_dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json").read_bytes()
    c = trace_path("chakra_et/small_chakra.0.json").read_bytes()
    assert not pytorch_et.sniff(k[:65536], "k.json") and detect_format("k.json", k) == "kineto"
    assert not pytorch_et.sniff(c[:65536], "c.json") and detect_format("c.json", c) == "chakra"


# ---------------------------------------------------------------- real: 8 DLRM ranks (schema 1.0.1)


def test_dlrm_sizes_per_op_read_by_hand(dlrm):
    # dlrm_eg_0.json, record_param_comms nodes read by hand (schema 1.0.1: inputs = [input tensor(s), seq,
    # ProcessGroup address, rank, collective name, in split sizes, out split sizes]; a tensor value is
    # [tensor id, storage id, offset, numel, element size, device]):
    #   id  727 all_to_allv  Tensor(float)    [718,715,0,6144,4]  splits [768]*8        -> 6144 x 4   = 24576 B
    #   id 1068 all_to_all   Tensor(long int) [1062,610,0,24,8]                         -> 24 x 8     =   192 B
    #   id 1098 all_to_allv  Tensor(int)      [996,661,0,384,4]   splits [48]*8         -> 384 x 4    =  1536 B
    #   id 1103 all_to_allv  Tensor(int)      [1002,658,0,3392,4] splits [96,224,288,1664,592,96,192,240]
    #                                                                                   -> 3392 x 4   = 13568 B
    #   id 1246 allreduce    GenericList[Tensor(float)] [[1244,1156,0,394241,4]]        -> 394241 x 4 = 1576964 B
    #   id 1593 all_to_allv  Tensor(float)    [1589,724,0,6144,4] splits [768]*8        -> 24576 B
    #   id 1666 allreduce    [[1664,6,0,112,4]]                                         ->   448 B
    #   id 1841 allreduce    [[1839,1273,0,226960,4]]                                   -> 907840 B
    # plus 5 'wait' records (ids 606, 607, 767, 1073, 1670) and an nccl:* child under each call (728, 1069, 1099,
    # 1104, 1247, 1594, 1667, 1842) repeating its input. The 7 other ranks record the same calls and sizes.
    (job,) = dlrm.jobs
    assert job.world_size == 8 and job.name == "dlrm_eg"
    ops = _ops(job)
    assert sorted(ops) == sorted([("all_to_allv", 24576), ("all_to_all", 192), ("all_to_allv", 1536),
                                  ("all_to_allv", 13568), ("all_reduce", 1576964), ("all_reduce", 448),
                                  ("all_reduce", 907840)])
    assert [o.count_per_step for o in ops[("all_to_allv", 24576)]] == [2.0]  # ids 727 and 1593
    assert all(o.count_per_step == 1.0 for k, lst in ops.items() if k != ("all_to_allv", 24576) for o in lst)
    assert {o.dtype for o in ops[("all_reduce", 1576964)]} == {"float32"}
    assert ops[("all_to_all", 192)][0].dtype == "int64"
    assert ops[("all_to_allv", 13568)][0].dtype == "int32"
    # id 1103: unequal send splits -> every rank sends 3392 ints; all 8 ranks traced, so per rank in group order
    assert ops[("all_to_allv", 13568)][0].per_rank_bytes == (13568,) * 8
    assert ops[("all_to_allv", 1536)][0].per_rank_bytes is None      # equal splits [48]*8
    assert job.comm_bytes_per_step == 2 * 24576 + 192 + 1536 + 13568 + 1576964 + 448 + 907840
    assert not dlrm.unparsed


def test_dlrm_groups_ranks_steps_and_timing(dlrm):
    (job,) = dlrm.jobs
    # one ProcessGroup address per file (it differs between processes): an unnamed group, the world here; its
    # size 8 is the length of the split lists; the rank of each file is the one recorded (inputs[3])
    (g,) = job.groups
    assert (g.name, g.size, g.role) == ("world", 8, "world") and g.global_ranks() == tuple(range(8))
    assert dict(dlrm.facts)["PyTorch ET ranks"] == "0-7"
    # no ProfilerStep nodes: counts are per captured window, and no timing at all
    assert job.steps_observed == 0 and job.kind == "training"
    assert job.compute_time_s == 0.0 and all(o.overlap_fraction == 0.0 for o in job.ops)
    w = " | ".join(dlrm.warnings)
    assert "no timing" in w and "no ProfilerStep#N nodes" in w and "world size assumed 8" in w
    assert any("without process-group information" in n for n in job.notes)


def test_dlrm_rank_recorded_in_the_trace_not_taken_from_the_name(dlrm_files):
    name, data = dlrm_files[3]
    renamed = ("renamed.json", data)
    tr = pytorch_et.load_rank(*renamed)
    assert tr.rank == 3 and not tr.warnings
    # rank 3 receives 1664 ints from each of 8 peers at call 1103 (its output tensor is [13312]); sends 3392
    c = [c for c in tr.calls if c.ts == 1103.0][0]
    assert (c.kind, c.nbytes, c.uneven) == ("all_to_allv", 13568, True)


def test_dlrm_two_files_claiming_one_rank_do_not_merge(dlrm_files):
    twin = dlrm_files[0][0].replace("dlrm_eg_0", "dlrm_eg_9")  # same folder and name pattern, same content
    res = pytorch_et.parse_groups([dlrm_files[0], (twin, dlrm_files[0][1])])
    ((names, err),) = res
    assert isinstance(err, ParseError) and "both claim rank 0" in str(err) and len(names) == 2


def test_dlrm_via_ingest_one_job(dlrm_files):
    res = ingest(dlrm_files)
    assert res.ok and [f.format for f in res.files] == ["pytorch_et"] * 8
    assert {f.jobs for f in res.files} == {("dlrm_eg",)}


# ---------------------------------------------------------------- hand-made: schema 1.1.0-chakra layout


def _node(nid, name, parent=1, values=(), types=(), shapes=(), out_values=(), out_types=(), out_shapes=(),
          attrs=()):
    a = [{"name": "rf_id", "type": "uint64", "value": nid}, {"name": "tid", "type": "uint64", "value": 1}]
    a += [{"name": k, "type": "string" if isinstance(v, str) else "uint64", "value": v} for k, v in attrs]
    return {"id": nid, "name": name, "ctrl_deps": parent,
            "inputs": {"values": list(values), "shapes": list(shapes), "types": list(types), "strides": []},
            "outputs": {"values": list(out_values), "shapes": list(out_shapes), "types": list(out_types),
                        "strides": []},
            "attrs": a}


def _tensor(tid, numel, size):
    return [tid, tid + 1000, 0, numel, size, "cuda:0"]


def _rank_et(rank, *, with_attrs=True, schema="1.1.0-chakra.0.0.4", extra=()):
    """Rank ``rank`` (0 or 1) of a DP 2 x TP 2 job on 4 GPUs, two ProfilerSteps, each with one bf16 all_reduce of
    1048576 elements (2 MiB) on the DP group and one fp32 _allgather_base of 262144 -> 524288 elements (2 MiB out)
    on the TP group, then a wait."""
    dp = [rank, rank + 2]
    groups = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [], "group_size": 4,
               "group_count": 3},
              {"pg_name": "1", "pg_desc": "tp", "backend_config": "cuda:nccl", "ranks": [0, 1], "group_size": 2,
               "group_count": 3},
              {"pg_name": "2", "pg_desc": "dp", "backend_config": "cuda:nccl", "ranks": dp, "group_size": 2,
               "group_count": 3}]
    nodes = [_node(2, "## process_group:init ##", values=[json.dumps(groups)], types=["String"], shapes=[[]])]
    nid = 10
    seq = 0
    for step in (5, 6):
        nodes.append(_node(nid, f"ProfilerStep#{step}"))
        parent = nid
        nid += 1
        for coll, pg, n_in, n_out, dname, tname, size in (("allreduce", ("2", "dp"), 1048576, 1048576, "BFloat16",
                                                          "Tensor(c10::BFloat16)", 2),
                                                         ("_allgather_base", ("1", "tp"), 262144, 524288, "Float",
                                                          "Tensor(float)", 4)):
            seq += 1
            attrs = [("collective_name", coll), ("dtype", dname), ("in_msg_nelems", n_in),
                     ("out_msg_nelems", n_out), ("in_split_size", "[]"), ("out_split_size", "[]"),
                     ("global_rank_start", 0), ("global_rank_stride", 1), ("pg_name", pg[0]), ("pg_desc", pg[1]),
                     ("pg_size", 2)] if with_attrs else []
            local = 0 if pg[1] == "dp" else rank
            nodes.append(_node(nid, "record_param_comms", parent,
                               values=[_tensor(nid, n_in, size), [seq, False], list(pg), local, coll, [], [], 0, 1,
                                       2],
                               types=[tname, "GenericList[Int,Bool]", "Tuple[String,String]", "Int", "String",
                                      "GenericList[]", "GenericList[]", "Int", "Int", "Int"],
                               shapes=[[n_in], [[], []], [[], []], [], [], [], [], [], [], []],
                               out_values=[_tensor(nid + 1, n_out, size)], out_types=[tname], out_shapes=[[n_out]],
                               attrs=attrs))
            nodes.append(_node(nid + 1, f"nccl:{'all_reduce' if coll == 'allreduce' else '_all_gather_base'}",
                               nid, values=[_tensor(nid, n_in, size)], types=[tname], shapes=[[n_in]]))
            nid += 2
        nodes.append(_node(nid, "record_param_comms", parent, values=[[seq, False], ["2", "dp"], 0, "wait", [], []],
                           types=["GenericList[Int,Bool]", "Tuple[String,String]", "Int", "String", "GenericList[]",
                                  "GenericList[]"],
                           attrs=[("collective_name", "wait"), ("dtype", "Float")] if with_attrs else []))
        nid += 1
    nodes.extend(extra)
    return {"schema": schema, "pid": 100 + rank, "time": "2024-05-01 10:00:00", "start_ts": 1000, "nodes": nodes,
            "finish_ts": 2000}


def _parse(docs: dict):
    return pytorch_et.parse([(n, json.dumps(d).encode()) for n, d in docs.items()])


@pytest.mark.parametrize("with_attrs,schema", [(True, "1.1.0-chakra.0.0.4"), (False, "1.0.3-chakra.0.0.4")])
def test_newer_layout_attrs_or_tensors_groups_and_steps(with_attrs, schema):
    docs = {f"job/rank-{r}.et.json": _rank_et(r, with_attrs=with_attrs, schema=schema) for r in (0, 1)}
    assert all(pytorch_et.sniff(json.dumps(d).encode(), n) for n, d in docs.items())
    wl = _parse(docs)
    (job,) = wl.jobs
    assert job.world_size == 4 and job.steps_observed == 2
    # 1048576 bf16 = 2 MiB all_reduce; _allgather_base output 524288 fp32 = 2 MiB; once per step each
    assert {(o.kind, o.bytes, o.group, o.dtype, o.count_per_step) for o in job.ops} == {
        ("all_reduce", 2 * 1048576, "dp", "bfloat16", 1.0), ("all_gather", 4 * 524288, "tp", "float32", 1.0)}
    groups = {g.name: g for g in job.groups}
    assert (groups["tp"].size, groups["tp"].role, groups["tp"].global_ranks()) == (2, "tp", (0, 1))
    # the DP group differs per rank ([0, 2] and [1, 3]): size and stride kept, role from the stride
    assert (groups["dp"].size, groups["dp"].role, groups["dp"].rank_stride) == (2, "dp", 2)
    assert dict(wl.facts)["PyTorch ET ranks"] == "0-1"
    assert any("ProfilerStep#N nodes" in n for n in job.notes)
    assert not wl.unparsed


def test_rank_from_the_group_members_not_the_file_name():
    tr = pytorch_et.load_rank("whatever_7.json", json.dumps(_rank_et(1)).encode())
    assert tr.rank == 1  # dp call: local rank 0 in [1, 3]; tp call: local rank 1 in [0, 1]
    assert any("file name suggests rank 7" in w for w in tr.warnings)


def test_unusable_calls_are_listed_not_dropped():
    base = _rank_et(0)
    bad = [
        _node(900, "record_param_comms", 10, values=[[99, False], ["0", "default_pg"], 0, "gather", [], []],
              attrs=[("collective_name", "gather"), ("dtype", "Float"), ("in_msg_nelems", 8),
                     ("out_msg_nelems", 32), ("pg_name", "0")]),
        _node(901, "record_param_comms", 10, values=[[100, False], ["0", "default_pg"], 0, "fancy_coll", [], []],
              attrs=[("collective_name", "fancy_coll"), ("pg_name", "0")]),
        _node(902, "record_param_comms", 10, values=[[101, False], ["0", "default_pg"], 0, "allreduce", [], []],
              attrs=[("collective_name", "allreduce"), ("pg_name", "0")]),  # no size anywhere
        _node(903, "record_param_comms", 10, values=["garbage"]),
    ]
    base["nodes"].extend(bad)
    wl = _parse({"r0.json": base})
    reasons = {(u.name, u.reason.split(":")[0].split(" (")[0]) for u in wl.unparsed}
    assert ("gather", "collective 'gather' is not modelled by fabric") in reasons
    assert ("fancy_coll", "unknown collective name 'fancy_coll'") in reasons
    assert any(u.name == "allreduce" and "message size not recorded" in u.reason for u in wl.unparsed)
    assert any(u.name == "record_param_comms" and "RECORD_PARAM_COMMS layout" in u.reason for u in wl.unparsed)
    assert len(wl.jobs[0].ops) == 2  # the good calls are still there


def test_standalone_nccl_node_and_several_unnamed_groups():
    # 1.0.1 layout: two ProcessGroup addresses in one file; an nccl:broadcast node with no record_param_comms parent
    nodes = [
        {"id": 5, "name": "record_param_comms", "parent": 1, "tid": 1,
         "inputs": [[[11, 12, 0, 100, 4, "cuda:0"]], 1, 555, 0, "allreduce", [], []],
         "input_types": ["GenericList[Tensor(float)]", "Int", "Int", "Int", "String", "GenericList[]",
                         "GenericList[]"], "input_shapes": [[[100]], [], [], [], [], [], []],
         "outputs": [], "output_types": [], "output_shapes": []},
        {"id": 6, "name": "record_param_comms", "parent": 1, "tid": 1,
         "inputs": [[13, 14, 0, 50, 2, "cuda:0"], 2, 777, 0, "all_to_all", [], []],
         "input_types": ["Tensor(c10::Half)", "Int", "Int", "Int", "String", "GenericList[]", "GenericList[]"],
         "input_shapes": [[50], [], [], [], [], [], []], "outputs": [], "output_types": [], "output_shapes": []},
        {"id": 7, "name": "nccl:broadcast", "parent": 3, "tid": 1, "inputs": [[15, 16, 0, 10, 8, "cuda:0"]],
         "input_types": ["Tensor(long int)"], "input_shapes": [[10]], "outputs": [], "output_types": [],
         "output_shapes": []},
    ]
    wl = pytorch_et.parse([("solo.json", json.dumps({"schema": "1.0.1", "pid": 1, "nodes": nodes}).encode())])
    (job,) = wl.jobs
    assert {(o.kind, o.bytes, o.group) for o in job.ops} == {("all_reduce", 400, "group#1"),
                                                              ("all_to_all", 100, "group#2"),
                                                              ("broadcast", 80, "world")}
    assert any("numbered group#1..#2" in w for w in wl.warnings)


def _deep(n):
    x: list = []
    for _ in range(n):
        x = [x]
    return x


@pytest.mark.parametrize("doc,match", [
    ({"schema": 5, "nodes": []}, "'schema' must be an execution-trace version"),
    ({"schema": "1.0.1"}, "no 'nodes' array"),
    ({"schema": "1.0.1", "nodes": {}}, "'nodes' must be a JSON array"),
    ({"schema": "1.0.1", "nodes": [{"id": 1, "name": "x"}], "extra": _deep(80)}, "deeper"),
])
def test_malformed_files_give_one_line_errors(doc, match):
    with pytest.raises(ParseError, match=match) as err:
        pytorch_et.parse([("bad.json", json.dumps(doc).encode())])
    assert "bad.json" in str(err.value) and "\n" not in str(err.value)


def test_truncated_file_names_the_line(dlrm_files):
    name, data = dlrm_files[0]
    with pytest.raises(ParseError, match="invalid JSON") as err:
        pytorch_et.parse([(name, data[: len(data) // 2])])
    assert err.value.source == name and isinstance(err.value.line, int)


def test_unknown_schema_version_is_read_with_a_warning():
    wl = _parse({"r0.json": _rank_et(0, schema="1.2.0-chakra.0.0.5")})
    assert wl.jobs[0].ops and any("not one this parser was written against" in w for w in wl.warnings)


# ---------------------------------------------------------------- fuzz


@pytest.fixture(scope="module")
def dlrm_rank0_nodes():
    p = trace_path(f"{DLRM}/dlrm_eg_0.json")
    doc = json.loads(p.read_bytes())
    return doc, [i for i, n in enumerate(doc["nodes"]) if n["name"] in ("record_param_comms", "nccl:all_to_all",
                                                                          "nccl:all_reduce")]


_jv = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=8),
                   lambda i: st.lists(i, max_size=4) | st.dictionaries(st.text(max_size=6), i, max_size=3),
                   max_leaves=12)
_FIELDS = ["id", "name", "parent", "inputs", "input_types", "input_shapes", "outputs", "output_types",
           "output_shapes", "tid"]


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_mutated_real_et(dlrm_rank0_nodes, data):
    doc, comm_idx = dlrm_rank0_nodes
    nodes = list(doc["nodes"])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.sampled_from(comm_idx))
        node = dict(nodes[i])
        field = data.draw(st.sampled_from(_FIELDS))
        if field == "inputs" and isinstance(node.get("inputs"), list) and node["inputs"] and data.draw(st.booleans()):
            ins = list(node["inputs"])
            ins[data.draw(st.integers(0, len(ins) - 1))] = data.draw(_jv)
            node["inputs"] = ins
        else:
            node[field] = data.draw(_jv)
        nodes[i] = node
    mutated = dict(doc, nodes=nodes)
    if data.draw(st.booleans()):
        mutated["schema"] = data.draw(st.sampled_from(["1.0.1", "1.1.0-chakra.0.0.4", "9.9.9"]) | _jv)
    try:
        wl = pytorch_et.parse([("dlrm_eg_0.json", json.dumps(mutated).encode())])
    except FabricError:
        return
    assert wl.jobs


_node_names = st.sampled_from(["record_param_comms", "nccl:all_reduce", "nccl:bogus", "## process_group:init ##",
                               "ProfilerStep#1", "ProfilerStep#2", "aten::mm", "c10d::allreduce_"])
_colls = st.sampled_from(["allreduce", "all_to_allv", "_allgather_base", "reduce_scatter", "send", "recv", "wait",
                          "gather", "barrier", "broadcast", "zz"])


@st.composite
def _gen_node(draw):
    layout = draw(st.sampled_from(["flat", "new"]))
    name = draw(_node_names)
    tensor = st.lists(st.integers(0, 10**6), min_size=5, max_size=5).map(lambda x: x + ["cuda:0"])
    values = draw(st.lists(st.one_of(_jv, tensor, _colls, st.lists(tensor, max_size=2)), max_size=10))
    types = draw(st.lists(st.sampled_from(["Tensor(float)", "GenericList[Tensor(float)]", "Int", "String",
                                           "Tensor(c10::BFloat16)", "Tensor(nope)"]) | _jv, max_size=10))
    nid = draw(st.integers(0, 50) | _jv)
    if layout == "flat":
        return {"id": nid, "name": name, "parent": draw(st.integers(0, 50) | _jv), "inputs": values,
                "input_types": types, "input_shapes": draw(_jv), "outputs": draw(_jv), "output_types": draw(_jv)}
    attrs = draw(st.lists(st.fixed_dictionaries({
        "name": st.sampled_from(["collective_name", "dtype", "in_msg_nelems", "out_msg_nelems", "pg_name",
                                 "pg_desc", "pg_size", "in_split_size", "global_rank_start", "tid"]),
        "value": _jv | _colls | st.integers(0, 10**15)}), max_size=6))
    return {"id": nid, "name": name, "ctrl_deps": draw(st.integers(0, 50) | _jv),
            "inputs": {"values": values, "types": types, "shapes": draw(_jv)},
            "outputs": draw(st.fixed_dictionaries({"values": _jv, "types": _jv}) | _jv), "attrs": attrs}


@settings(max_examples=fuzz_examples(300), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_gen_node(), max_size=8), st.sampled_from(["1.0.1", "1.1.1-chakra.0.0.4"]),
       st.lists(st.sampled_from(["a_0.json", "a_1.json", "b.json"]), min_size=1, max_size=3, unique=True))
def test_fuzz_generated_nodes(nodes, schema, names):
    docs = [(n, json.dumps({"schema": schema, "pid": 1, "nodes": nodes}).encode()) for n in names]
    try:
        wl = pytorch_et.parse(docs)
    except FabricError:
        return
    assert wl.jobs


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(data):
    pytorch_et.sniff(data, "r.json")
    try:
        pytorch_et.parse([("r.json", data)])
    except FabricError:
        pass
