"""ASTRA-sim 1.0 / SimAI text workloads and AICB CSVs: real files checked against values read off them by hand
(layer counts, comm types, bytes of named layers, group sizes), malformed inputs and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.errors import FabricError, ParseError
from fabric.workload.parsers import aicb_csv, astra_text, nccl_log, nccl_tests
from tests.conftest import trace_path, fuzz_examples, fuzz_deadline


def _read(rel: str) -> tuple[str, bytes]:
    p = trace_path(rel)
    return p.name, p.read_bytes()


def _op(job, name, kind=None):
    found = [o for o in job.ops if o.name == name and (kind is None or o.kind == kind)]
    assert found, f"no op {name} {kind or ''} in {[o.name for o in job.ops]}"
    return found[0]


# ---------------------------------------------------------------- ASTRA-sim 1.0 examples

ASTRA_FILES = {  # file -> (policy, layer lines, comm-type counts)
    "Resnet50_DataParallel.txt": ("DATA", 54, "ALLREDUCE: 54"),
    "Transformer_HybridParallel.txt": ("HYBRID_TRANSFORMER", 57, "ALLGATHER: 8, ALLREDUCE: 62"),
    "DLRM_HybridParallel.txt": ("HYBRID_DLRM", 8, "ALLREDUCE: 7, ALLTOALL: 2"),
    "MLP_HybridParallel_Data_Model.txt": ("HYBRID_DATA_MODEL", 6, "ALLGATHER: 6, ALLREDUCE: 12"),
    "microAllReduce.txt": ("MICRO", 1, "ALLREDUCE: 1"),
    "microAllToAll.txt": ("MICRO", 1, "ALLTOALL: 1"),
}


@pytest.mark.parametrize("fname", sorted(ASTRA_FILES))
def test_astra_sim_examples(fname):
    policy, layers, types = ASTRA_FILES[fname]
    name, data = _read("astra_sim/" + fname)
    assert astra_text.sniff(data[:65536], name)
    assert not aicb_csv.sniff(data[:65536], name) and not nccl_tests.sniff(data[:65536], name)
    assert not nccl_log.sniff(data[:65536], name)
    wl = astra_text.parse([(name, data)], world_size=32)
    facts = dict(wl.facts)
    assert facts["policy"] == policy and facts["layers declared"] == str(layers)
    assert facts["comm types"] == types and facts["dialect"] == "ASTRA-sim 1.0"
    assert wl.jobs[0].world_size == 32
    n_comms = sum(int(x.split(": ")[1]) for x in types.split(", "))
    assert sum(o.count_per_step for o in wl.jobs[0].ops) == n_comms


def test_resnet50_data_parallel():
    name, data = _read("astra_sim/Resnet50_DataParallel.txt")
    job = astra_text.parse([(name, data)], world_size=64).jobs[0]
    assert len(job.ops) == 54 and {o.kind for o in job.ops} == {"all_reduce"}
    assert [(g.name, g.size, g.role) for g in job.groups] == [("world", 64, "dp")]
    assert _op(job, "conv1.wg").bytes == 37632
    assert _op(job, "layer_64_1_conv2.wg").bytes == 147456
    assert sum(o.bytes for o in job.ops) == 102011648            # awk '{s+=$11}' over the layer lines
    assert job.compute_time_s == pytest.approx(1095314e-9)       # sum of fwd+ig+wg cycles at 1 GHz
    slow = astra_text.parse([(name, data)], world_size=64, clock_hz=0.5e9).jobs[0]
    assert slow.compute_time_s == pytest.approx(2 * 1095314e-9)


def test_transformer_hybrid_groups_and_bytes():
    name, data = _read("astra_sim/Transformer_HybridParallel.txt")
    job = astra_text.parse([(name, data)], world_size=16).jobs[0]
    tp, dp = job.group("tp"), job.group("dp")
    assert (tp.size, dp.size) == (4, 4) and tp.global_ranks() == (0, 1, 2, 3) and dp.global_ranks() == (0, 4, 8, 12)
    emb = _op(job, "Embedding.fwd")
    assert (emb.kind, emb.bytes, emb.group) == ("all_gather", 8388608, "tp")
    q_ig, q_wg = _op(job, "Q1.ig"), _op(job, "Q1.wg")
    assert (q_ig.kind, q_ig.bytes, q_ig.group) == ("all_reduce", 8388608, "tp")
    assert (q_wg.kind, q_wg.bytes, q_wg.group) == ("all_reduce", 33554432, "dp")
    assert _op(job, "Concat1.ig").bytes == 134217728 and _op(job, "Concat1.ig").kind == "all_gather"
    assert _op(job, "fc.fwd").bytes == 73728000


def test_dlrm_all_to_all_on_all_ranks():
    name, data = _read("astra_sim/DLRM_HybridParallel.txt")
    wl = astra_text.parse([(name, data)], world_size=8)
    job = wl.jobs[0]
    assert dict(wl.facts)["DLRM_LAST_BOTTOM_LAYER"] == "4"
    emb = _op(job, "Embedding.fwd")
    assert (emb.kind, emb.bytes, emb.group) == ("all_to_all", 98304, "world")
    assert _op(job, "MLP_Top_0.wg").bytes == 1064960


def test_world_size_is_asked_or_assumed():
    name, data = _read("astra_sim/microAllReduce.txt")
    wl = astra_text.parse([(name, data)])
    assert wl.jobs[0].world_size == astra_text.DEFAULT_WORLD_SIZE
    assert any("does not state the world size" in w for w in wl.warnings)
    assert astra_text.parse([(name, data)], world_size=8).warnings == ()


# ---------------------------------------------------------------- SimAI / AICB text


def test_simai_moe_9216():
    name, data = _read("simai_aicb/workload_analytical.txt")
    assert astra_text.sniff(data[:65536], name)
    wl = astra_text.parse([(name, data)])
    facts = dict(wl.facts)
    job = wl.jobs[0]
    assert facts["layers declared"] == "1789" and facts["dialect"] == "SimAI/AICB"
    assert facts["model_parallel_NPU_group"] == "2" and facts["ep"] == "16" and facts["pp"] == "12"
    assert facts["vpp"] == "8" and facts["ga"] == "24" and facts["all_gpus"] == "9216"
    assert facts["comm types"] == ("ALLGATHER: 1177, ALLGATHER_DP_EP: 1, ALLREDUCE: 32, ALLTOALL: 768, "
                                   "ALLTOALL_EP: 768, REDUCESCATTER: 793, REDUCESCATTER_DP_EP: 1")
    assert job.world_size == 9216
    # dp = 9216 / (2 x 12) = 384; the expert-data-parallel group = dp / ep = 24
    sizes = {g.name: g.size for g in job.groups}
    assert sizes == {"tp": 2, "dp": 384, "ep": 16, "dp_ep": 24, "pp": 12}
    a2a_ep = _op(job, "mlp_moelayer.fwd", "all_to_all")
    ep_ops = [o for o in job.ops if o.group == "ep"]
    assert {(o.name, o.bytes, o.count_per_step) for o in ep_ops} == {
        ("mlp_moelayer.fwd", 100663296, 384.0), ("mlp_moelayer.ig", 100663296, 384.0)}
    assert a2a_ep.bytes in (25165824, 100663296)
    tp_a2a = [o for o in job.ops if o.group == "tp" and o.kind == "all_to_all"]
    assert {(o.bytes, o.count_per_step) for o in tp_a2a} == {(25165824, 384.0)}
    norm1 = _op(job, "moe_grad_norm1.wg")
    assert (norm1.kind, norm1.bytes, norm1.group) == ("all_gather", 19327352832, "dp_ep")
    assert _op(job, "moe_grad_norm2.wg").group == "dp_ep"
    assert _op(job, "grad_param_comm.wg").group == "dp" and _op(job, "grad_param_comm.wg").bytes == 5615517696
    emb = _op(job, "embedding_layer.fwd")
    assert (emb.bytes, emb.group, emb.count_per_step) == (50331648, "tp", 24.0)
    pp = [o for o in job.ops if o.group == "pp"][0]
    assert (pp.kind, pp.bytes, pp.count_per_step) == ("send_recv", 50331648, 48.0)   # 2 x ga
    assert _op(job, "attention_column.fwd").count_per_step == 192
    assert facts["zero-byte collectives skipped"] == "216"


def test_simai_llama7b_text_with_world_size():
    name, data = _read("simai_aicb/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt")
    wl = astra_text.parse([(name, data)], world_size=128)
    job = wl.jobs[0]
    assert dict(wl.facts)["layers declared"] == "76"
    assert {g.name: g.size for g in job.groups} == {"tp": 2, "dp": 64}
    att_f, att_i = _op(job, "attention_layer.fwd"), _op(job, "attention_layer.ig")
    assert (att_f.bytes, att_f.count_per_step, att_f.group) == (16777216, 32.0, "tp")
    assert (att_i.bytes, att_i.count_per_step) == (16777216, 32.0)
    gn = [o for o in job.ops if o.name == "grad_norm.wg"][0]
    assert (gn.kind, gn.bytes, gn.group) == ("reduce_scatter", 13509853184, "dp")
    assert _op(job, "norm.fwd").kind == "broadcast"
    assert job.compute_time_s == pytest.approx(104618147e-9)     # SimAI ticks are nanoseconds


def test_simai_micro_allreduce():
    name, data = _read("simai_aicb/microAllReduce.txt")
    job = astra_text.parse([(name, data)]).jobs[0]
    assert job.world_size == 8 and job.group("tp").size == 8
    assert sorted(o.bytes for o in job.ops) == [16777216, 67108864]


# ---------------------------------------------------------------- AICB CSVs


def test_aicb_megatron_tp2():
    name, data = _read("simai_aicb/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv")
    assert aicb_csv.sniff(data[:65536], name) and not astra_text.sniff(data[:65536], name)
    wl = aicb_csv.parse([(name, data)])
    job = wl.jobs[0]
    facts = dict(wl.facts)
    assert job.world_size == 128 and facts["iterations"] == "1" and facts["init rows"] == "7"
    assert {g.name: (g.size, g.role) for g in job.groups} == {"dp": (64, "dp"), "tp": (2, "tp")}
    assert facts["all_reduce in tp per iteration"] == "135"
    assert facts["broadcast in tp per iteration"] == "2"
    assert facts["reduce_scatter in dp per iteration"] == "1"
    row_linear = [o for o in job.ops if o.name == "forward.MegatronRowLinear"][0]
    assert (row_linear.kind, row_linear.bytes, row_linear.count_per_step) == ("all_reduce", 16777216, 64.0)
    rs = [o for o in job.ops if o.kind == "reduce_scatter"][0]
    ag = [o for o in job.ops if o.kind == "all_gather"][0]
    assert (rs.bytes, rs.group, ag.bytes) == (10366697472, "dp", 5183348736)
    assert sum(o.count_per_step for o in job.ops if o.group == "tp") == 137
    assert wl.measurements == () and facts["timings"] == "none (workload file)"


def test_aicb_deepspeed_zero2():
    name, data = _read("simai_aicb/L7B-D1-C01_Llama7B_zero2_mbs1.csv")
    wl = aicb_csv.parse([(name, data)])
    job = wl.jobs[0]
    facts = dict(wl.facts)
    assert job.world_size == 128 and facts["init rows"] == "292"       # 291 broadcasts + 1 barrier
    assert [(g.name, g.size) for g in job.groups] == [("dp", 128)]
    assert facts["all_reduce in dp per iteration"] == "8" and facts["all_gather in dp per iteration"] == "6"
    ag = [o for o in job.ops if o.kind == "all_gather"][0]
    assert (ag.bytes, ag.count_per_step) == (2246138624, 6.0)
    buckets = [o for o in job.ops if o.name == "backward.allreduce_bucket"]
    assert sum(o.count_per_step for o in buckets) == 6
    assert sum(o.bytes * o.count_per_step for o in buckets) == (1971396608 + 1933656064 + 1990270976
                                                               + 3 * 1990279168)


def _blank_sizes(tmp_path, rel, lines_to_blank, extra_rows=(), rename=None):
    """A copy of a shared AICB file (in tmp_path) with comm_group_size set to None on the given 1-based lines."""
    src = trace_path(rel)
    lines = src.read_text().splitlines()
    for ln in lines_to_blank:
        cells = lines[ln - 1].split(",")
        cells[2] = "None"
        lines[ln - 1] = ",".join(cells)
    lines[-1:-1] = list(extra_rows)            # before the last epoch_end: inside the training iteration
    out = tmp_path / (rename or src.name)
    out.write_text("\n".join(lines) + "\n")
    return out


def test_aicb_missing_group_sizes_are_inferred_and_unusable_rows_listed(tmp_path):
    # Issue 16 item 2. L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv (128 ranks, rows read by hand): dp_group rows
    # are lines 3-7, 9 (init), 81, 147, 148 (size 64); tp_group rows are lines 8 and 11-146, 149, 150 (size 2).
    # Blank every dp row's size and the first three tp rows of the iteration (11, 12, 13), and add an ep_group
    # all_to_all whose size is None (measured clusters log such rows).
    rel = "simai_aicb/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv"
    dp_lines = [3, 4, 5, 6, 7, 9, 81, 147, 148]
    ep_row = "CommType.all_to_all,CommGroup.ep_group,None,4194304,forward.moe,None,None,,None,None,None,2"
    path = _blank_sizes(tmp_path, rel, dp_lines + [11, 12, 13], [ep_row])
    wl = aicb_csv.parse([(str(path), path.read_bytes())])
    (job,) = wl.jobs
    # tp: 2 from the other tp rows; dp: no dp row keeps a size, so world 128 / (tp 2 x pp 1 (file name) x cp 1) = 64
    assert {g.name: g.size for g in job.groups} == {"dp": 64, "tp": 2}
    w = " | ".join(wl.warnings)
    assert "3 tp_group row(s) (line(s) 11, 12, 13): 2 taken from the group's other rows" in w
    assert "9 dp_group row(s) (line(s) 3, 4, 5, 6, 7, 9, 81, 147, 148): 64 taken from the layout: world 128" in w
    # the ep row cannot be sized (no ep in the name, no other ep row): listed with its line, never dropped silently
    (u,) = wl.unparsed
    assert (u.name, u.count) == ("CommType.all_to_all on CommGroup.ep_group", 2)
    assert "comm_group_size is None" in u.reason and "line(s) 151" in u.reason
    # everything else reads as from the untouched file
    ref = aicb_csv.parse([(rel, trace_path(rel).read_bytes())]).jobs[0]
    assert sorted((o.kind, o.bytes, o.group, o.count_per_step) for o in job.ops) == sorted(
        (o.kind, o.bytes, o.group, o.count_per_step) for o in ref.ops)
    # with the expert-parallel size in the file name the ep row is sized too
    named = _blank_sizes(tmp_path, rel, dp_lines + [11, 12, 13], [ep_row],
                         rename="L7B-M1-C04_Llama7B_megatron_tp2_pp1_ep4_mbs1.csv")
    wl2 = aicb_csv.parse([(str(named), named.read_bytes())])
    assert {g.name: g.size for g in wl2.jobs[0].groups} == {"dp": 64, "tp": 2, "ep": 4}
    a2a = [o for o in wl2.jobs[0].ops if o.kind == "all_to_all"]
    assert [(o.bytes, o.group, o.count_per_step) for o in a2a] == [(4194304, "ep", 2.0)]
    assert not wl2.unparsed and any("4 taken from the file name (ep4)" in x for x in wl2.warnings)


def test_aicb_rows_missing_group_or_size_are_listed():
    rows = TIMED_CSV.splitlines()
    rows.insert(3, "CommType.all_reduce,None,4,8,forward,None,None,,None,None,None,1")
    rows.insert(4, "CommType.all_reduce,CommGroup.tp_group,2,None,forward,None,None,,None,None,None,3")
    wl = aicb_csv.parse([("t.csv", "\n".join(rows).encode())])
    reasons = {(u.name, u.count): u.reason for u in wl.unparsed}
    assert "comm_group is None" in reasons[("CommType.all_reduce", 1)]
    assert "msg_size is None" in reasons[("CommType.all_reduce on CommGroup.tp_group", 3)]
    assert "line(s) 4" in reasons[("CommType.all_reduce", 1)]


TIMED_CSV = """\
comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,algbw,busbw,count
CommType.all_reduce,CommGroup.dp_group,4,8,init,None,None,,0.1,None,None,1
CommType.epoch_end,None,None,0,,None,None,,None,None,None,1
CommType.all_reduce,CommGroup.tp_group,2,1000000,forward,None,None,,0.5,None,None,2
CommType.computation,CommGroup.all,8,0,forward,None,None,,3.0,None,None,1
CommType.all_to_all,CommGroup.ep_group,4,4000000,forward,None,None,,2.0,None,None,1
CommType.gather,CommGroup.dp_group,4,10,step,None,None,,None,None,None,1
CommType.epoch_end,None,None,0,,None,None,,12.0,None,None,1
CommType.all_reduce,CommGroup.tp_group,2,1000000,forward,None,None,,0.5,None,None,2
CommType.computation,CommGroup.all,8,0,forward,None,None,,5.0,None,None,1
CommType.all_to_all,CommGroup.ep_group,4,4000000,forward,None,None,,2.0,None,None,1
CommType.epoch_end,None,None,0,,None,None,,14.0,None,None,1
"""


def test_aicb_with_timings():
    wl = aicb_csv.parse([("timed_log.csv", TIMED_CSV.encode())])
    job = wl.jobs[0]
    assert job.world_size == 4 and any("world size assumed" in w for w in wl.warnings)
    assert dict(wl.facts)["iterations"] == "2" and job.steps_observed == 2
    ar = [o for o in job.ops if o.kind == "all_reduce"][0]
    assert (ar.group, ar.count_per_step) == ("tp", 2.0)
    assert job.compute_time_s == pytest.approx((3.0 + 5.0) / 2 * 1e-3)
    a2a = [m for m in wl.measurements if m.kind == "all_to_all"]
    assert len(a2a) == 2 and a2a[0].time_s == pytest.approx(2e-3)
    assert a2a[0].algbw_bytes_per_s == pytest.approx(4e6 / 2e-3)
    assert a2a[0].busbw_bytes_per_s == pytest.approx(4e6 / 2e-3 * 3 / 4)
    ar_m = [m for m in wl.measurements if m.kind == "all_reduce" and m.ranks == 2][0]
    assert ar_m.busbw_bytes_per_s == pytest.approx(1e6 / 0.5e-3 * 1.0)     # 2(n-1)/n = 1 for n = 2
    assert [(u.name, u.count) for u in wl.unparsed] == [("CommType.gather", 1)]
    assert dict(wl.facts)["iteration time s (mean)"] == "0.013"


# ---------------------------------------------------------------- malformed inputs


def test_astra_truncated_file():
    name, data = _read("astra_sim/Resnet50_DataParallel.txt")
    lines = data.decode().splitlines()[:30]
    with pytest.raises(ParseError, match="declares 54 layers but the file has only 28") as err:
        astra_text.parse([("cut.txt", "\n".join(lines).encode())])
    assert err.value.source == "cut.txt" and err.value.line == 30


@pytest.mark.parametrize("text,match,line", [
    ("DATAX\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n", "unknown parallelism policy", 1),
    ("DATA\nx\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n", "layer count 'x'", 2),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8\n", "11 fields; expected 12", 3),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLSCATTER 8 1\n", "unknown communication type 'ALLSCATTER'", 3),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8.5 1\n", "wg communication size '8.5'", 3),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\nextra -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n",
     "more lines follow", 4),
    ("HYBRID_TRANSFORMER model_parallel_NPU_group: 3\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n",
     "not a multiple", 1),
    ("HYBRID_TRANSFORMER model_parallel_NPU_group: four\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n",
     "not a whole number", 1),
])
def test_astra_malformed(text, match, line):
    with pytest.raises(ParseError, match=match) as err:
        astra_text.parse([("bad.txt", text.encode())], world_size=16)
    assert err.value.line == line and err.value.source == "bad.txt"


def test_aicb_malformed():
    good = TIMED_CSV.splitlines()
    with pytest.raises(ParseError, match="lacks column"):
        aicb_csv.parse([("a.csv", "\n".join(["comm_type,comm_group,msg_size"] + good[1:]).encode())])
    with pytest.raises(ParseError, match="row has 11 cells") as err:
        aicb_csv.parse([("a.csv", "\n".join(good[:3] + [good[3].rsplit(",", 1)[0]]).encode())])
    assert err.value.line == 4
    with pytest.raises(ParseError, match="msg_size 'big'") as err:
        aicb_csv.parse([("a.csv", "\n".join(good[:3] + [good[3].replace("1000000", "big")]).encode())])
    assert err.value.line == 4
    with pytest.raises(ParseError, match="more than the world"):
        aicb_csv.parse([("a.csv", ("[rank0 ~ rank1]\n" + TIMED_CSV).encode())])
    with pytest.raises(ParseError):
        aicb_csv.parse([("a.csv", b"")])


# ---------------------------------------------------------------- fuzz

_ASTRA_LINES = ["DATA", "HYBRID_TRANSFORMER model_parallel_NPU_group: 2", "2", "3",
                "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 vpp: 1 ga: 2 all_gpus: 16 "
                "checkpoints: 0 checkpoint_initiates: 0 pp_comm 64",
                "l -1 5 ALLTOALL_EP 16 5 NONE 0 5 ALLREDUCE 64 1", "m -1 5 NONE 0 5 ALLGATHER_DP_EP 8 5 NONE 0 1",
                "x -1 1 ALLREDUCEALLTOALL 8 1 NONE 0 1 NONE 0 1", "\t", "-1 -1 -1"]
_CSV_LINES = TIMED_CSV.splitlines() + [
    "[rank0 ~ rank7]", "CommType.all_reduce,,,,", ",,,,,,,,,,,",
    "CommType.all_to_all,CommGroup.ep_group,None,4194304,forward,None,None,,None,None,None,2",
    "CommType.all_reduce,CommGroup.dp_group,None,8,init,None,None,,0.2,None,None,1",
    "CommType.all_reduce,CommGroup.tp_group,None,None,forward,None,None,,None,None,None,1",
    "CommType.barrier,CommGroup.all,None,0,init,None,None,,None,None,None,1",
    "CommType.all_gather,None,None,64,step,None,None,,None,None,None,1"]


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_ASTRA_LINES), st.text(max_size=60)), max_size=12),
       st.one_of(st.none(), st.integers(min_value=1, max_value=64)))
def test_fuzz_astra(lines, world):
    data = "\n".join(lines).encode("utf-8", errors="replace")
    astra_text.sniff(data, "f.txt")
    try:
        wl = astra_text.parse([("f.txt", data)], world_size=world)
    except FabricError:
        return
    assert wl.jobs


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_CSV_LINES), st.text(max_size=60)), max_size=12),
       st.sampled_from(["f.csv", "m_tp2_pp1_ep4_mbs1.csv", "x_world_size8_tp0_dp3.csv", "tp8_pp8.csv"]))
def test_fuzz_aicb(lines, fname):
    data = "\n".join(lines).encode("utf-8", errors="replace")
    aicb_csv.sniff(data, fname)
    try:
        wl = aicb_csv.parse([(fname, data)])
    except FabricError:
        return
    assert wl.jobs


@settings(max_examples=fuzz_examples(100), deadline=fuzz_deadline())
@given(st.binary(max_size=300))
def test_fuzz_bytes(data):
    for mod in (astra_text, aicb_csv):
        try:
            mod.parse([("b", data)])
        except FabricError:
            pass
