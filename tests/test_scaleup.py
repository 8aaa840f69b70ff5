"""Scale-up domains as a design choice: NVL72 keeps a 64-GPU expert-parallel group inside the rack, and the network
carries correspondingly fewer bytes (hand-computed below from the model's shape, not from the code's output)."""

import numpy as np
import pytest

from fabric.design import Design
from fabric.evaluate import evaluate
from fabric.evaluate.placement import domain_block, domain_layout, gpus_for_jobs, place_jobs
from fabric.evaluate.scaleup import traffic_split
from fabric.topology import build_fabric
from fabric.workload.presets import preset_workload

GIB = 2**30
# A Mixtral-like MoE with 64 fine-grained experts (ffn 14336 / 8 per expert), no tensor parallelism, EP 64.
W = 128
WL = preset_workload("mixtral-8x7b", gpus=W, experts=64, ffn_hidden=1792, tp=1, ep=64)
_NET = dict(family="clos", switch_model="ib-xdr-144x800", nic_model="nic-cx8-800", transport="infiniband",
            nccl_algo="ring")
HGX = Design(name="hgx-b200", gpus=W, gpu_model="b200", **_NET)                                     # 16 nodes of 8
NVL = Design(name="nvl72", gpus=144, gpu_model="gb200-nvl72", gpus_per_node=4, scale_up_size=72, **_NET)  # 2 racks

# Hand computation of the dispatch/combine all-to-all (fabric.workload.synth): each rank sends its tokens x top_k
# hidden vectors: micro-batch 1 x 4,096 tokens x top-2 x hidden 4,096 x 2 bytes = 64 MiB per call; 4 calls (dispatch
# and combine, forward and backward) per MoE layer (32) per micro-batch (1,024 sequences / (1 x DP 128) = 8).
A2A_BYTES = 1 * 4096 * 2 * 4096 * 2
A2A_CALLS = 4 * 32 * 8


def _op(split, group, kind="all_to_all"):
    rows = [o for o in split["ops"] if o["group"] == group and o["kind"] == kind]
    return {k: sum(o[k] for o in rows) for k in ("nvlink_bytes_per_step", "network_bytes_per_step")}


def test_the_workload_is_what_the_hand_computation_assumes():
    ep = [o for o in WL.jobs[0].ops if o.group == "ep"]
    assert [(o.bytes, o.count_per_step) for o in ep] == [(A2A_BYTES, A2A_CALLS)]
    assert WL.jobs[0].group("ep").size == 64


def test_nvl72_places_each_expert_group_inside_one_rack():
    job = WL.jobs[0]
    assert domain_block(job, 72) == 64
    assert domain_layout(job, 72, 4) == 64                       # 64 ranks per rack, 8 GPUs spare
    assert domain_layout(job, 8, 8) is None                      # an 8-GPU HGX node is one host: nothing to do
    assert gpus_for_jobs([job], 72, 4) == 144
    gpus = place_jobs([job], build_fabric(NVL), "packed")[0]
    assert gpus[:64].tolist() == list(range(64)) and gpus[64:].tolist() == list(range(72, 136))
    assert set((gpus // 72).tolist()) == {0, 1}


def test_expert_all_to_all_leaves_the_network_on_nvl72():
    hgx, nvl = traffic_split(HGX, WL), traffic_split(NVL, WL)
    per_step = W * A2A_BYTES * A2A_CALLS                          # bytes all ranks send per step (64 GiB each)
    # HGX-8: of each rank's 64 equal shares, 8 stay in its node (itself included) and 56 cross the network
    assert _op(hgx, "ep")["network_bytes_per_step"] == pytest.approx(per_step * 56 / 64)
    assert _op(hgx, "ep")["nvlink_bytes_per_step"] == pytest.approx(per_step * 7 / 64)
    assert _op(hgx, "ep")["network_bytes_per_step"] / GIB == pytest.approx(7168)
    # NVL72: the whole 64-rank group is in one rack; nothing reaches a NIC, 63 of 64 shares go over NVLink
    assert _op(nvl, "ep")["network_bytes_per_step"] == 0
    assert _op(nvl, "ep")["nvlink_bytes_per_step"] == pytest.approx(per_step * 63 / 64)


def test_scale_out_bytes_per_step_drop_by_the_hand_computed_amount():
    hgx, nvl = traffic_split(HGX, WL), traffic_split(NVL, WL)
    job = WL.jobs[0]
    dense = sum(o.bytes * o.count_per_step for o in job.ops if o.group == "dp")
    expert = sum(o.bytes * o.count_per_step for o in job.ops if o.group == "edp")
    # dense gradients: NCCL's flat ring over all p = 128 ranks, whose g channels cross every domain boundary on g
    # rails: 2(p-1) S / g on the network in all (g = 8 per HGX node, 64 per NVL72 rack)
    dense_hgx, dense_nvl = 2 * (W - 1) * dense / 8, 2 * (W - 1) * dense / 64
    # expert gradients: groups of 2 ranks 64 apart, in different nodes and different racks on both designs: a
    # 2-rank ring sends each rank's whole buffer once, 128 ranks
    expert_both = W * expert
    a2a = W * A2A_BYTES * A2A_CALLS * 56 / 64
    assert hgx["jobs"]["mixtral-8x7b"]["network_bytes_per_step"] == pytest.approx(a2a + dense_hgx + expert_both)
    assert nvl["jobs"]["mixtral-8x7b"]["network_bytes_per_step"] == pytest.approx(dense_nvl + expert_both)
    drop = hgx["jobs"]["mixtral-8x7b"]["network_bytes_per_step"] - nvl["jobs"]["mixtral-8x7b"]["network_bytes_per_step"]
    assert drop == pytest.approx(a2a + dense_hgx - dense_nvl)
    assert any("8 GPUs idle" in n for n in nvl["notes"])


def test_the_evaluator_charges_the_moved_traffic_to_nvlink():
    hgx, nvl = evaluate(HGX, WL, samples=64), evaluate(NVL, WL, samples=64)
    assert nvl.p99_breakdown["network_s"] < 0.05 * hgx.p99_breakdown["network_s"]
    assert nvl.p99_breakdown["nvlink_s"] > hgx.p99_breakdown["nvlink_s"]
    ep = [o for o in nvl.ops if o.group == "ep"]
    assert ep and all(o.bound_by == "nvlink" for o in ep)
    assert any("stay inside one domain" in n for n in nvl.notes)


def test_too_few_gpus_keeps_ranks_consecutive_and_says_so():
    tight = preset_workload("mixtral-8x7b", gpus=144, experts=64, ffn_hidden=1792, tp=1, ep=16)
    notes: list = []
    # EP 16 on 144 GPUs: 64 per rack would need 3 racks (216 GPUs); the 2-rack design keeps ranks consecutive
    gpus = place_jobs(tight.jobs, build_fabric(NVL), "packed", notes=notes)[0]
    assert np.array_equal(gpus, np.arange(144))
    assert notes and "straddle" in notes[0]
