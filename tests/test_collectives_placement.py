"""Collective cost terms against facts.md section 1; placement and process-group expansion."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.errors import WorkloadError
from fabric.evaluate.collectives import (CollectiveHardware, bus_factor, choose_algorithm, collective_time,
                                         latency_steps, lower_bound_time, nccl_model_time_s, resolve_algorithm)
from fabric.evaluate.flows import dtree_parents
from fabric.evaluate.placement import group_instances, place_jobs
from fabric.topology import build_fabric
from fabric.workload.model import Job, ProcessGroup


@pytest.mark.parametrize("kind,p,factor", [
    ("all_reduce", 8, 2 * 7 / 8), ("all_gather", 16, 15 / 16), ("reduce_scatter", 4, 3 / 4),
    ("all_to_all", 64, 63 / 64), ("broadcast", 8, 1.0), ("reduce", 8, 1.0)])
def test_bus_factors_match_nccl_tests(kind, p, factor):
    assert bus_factor(kind, p) == pytest.approx(factor)


def test_ring_all_reduce_closed_form():
    # 2(p-1)/p * S/B + 2(p-1) alpha with p=8, S=1 GB, B=50 GB/s, alpha=5 us
    t = collective_time("all_reduce", "ring", 8, 1e9, 50e9, 5e-6)
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 50e9 + 14 * 5e-6)
    assert latency_steps("all_reduce", "halving_doubling", 64) == 12
    assert collective_time("all_reduce", "in_network", 64, 1e9, 50e9, 0.0) == pytest.approx(1e9 / 50e9)


KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
#: line rates of one GPU: DGX H100 (NVLink4 450 GB/s per direction, one 400G NIC), DGX A100 (NVLink3 300 GB/s,
#: one 200G NIC), AWS p5 (4 x 100G EFA per GPU: 50 GB/s)
H100 = dict(nvls=True, nvlink_bytes_per_s=450e9, nic_bytes_per_s=50e9)
A100 = dict(nvls=False, nvlink_bytes_per_s=300e9, nic_bytes_per_s=25e9)


def _hw(gpu, g, in_network=False):
    return CollectiveHardware(gpus_per_node=g, in_network=in_network, **gpu)


def test_nccl_model_times_follow_the_tuning_model_constants():
    """NVIDIA/nccl src/graph/tuning.cc (Simple): time = latency + size / algbw, written out by hand here."""
    S = 1 * GIB
    hw = _hw(H100, 8)
    # ring on 2 nodes of 8: 8.4 + (30 - 4) x 3.4 + 4 x 14 us, x 1.4; algbw = min(450, 8 x 50) x 16/30 GB/s
    ring = (8.4 + 26 * 3.4 + 4 * 14) * 1.4e-6 + S / (400e9 * 16 / 30)
    assert nccl_model_time_s("ring", S, 2, hw) == pytest.approx(ring, rel=1e-12)
    # NVLS tree on 128 nodes: 23 + 2 x 7 x 14 us; algbw = min(450, 400 / 2) x 5/6
    assert nccl_model_time_s("nvls_tree", S, 128, hw) == pytest.approx(219e-6 + S / (200e9 * 5 / 6), rel=1e-12)
    # tree on 16 nodes of 8 (A100): 2 (7 x 28 + 4 x 28) us; 0.92 x 200 / 2, corrected x 0.8 at 64 MiB
    # (log2(64 MiB / 64 B) = 20)
    assert nccl_model_time_s("tree", 64 * MIB, 16, _hw(A100, 8)) == pytest.approx(
        616e-6 + 64 * MIB / (0.92 * 200e9 / 2 * 0.8), rel=1e-12)
    assert nccl_model_time_s("nvls", S, 1, hw) == pytest.approx(23e-6 + S / (450e9 * 5 / 6), rel=1e-12)


# (GPU, GPUs per node, nodes, size, in-network reduction) -> NCCL's pick. Crossovers from the tuning model
# (collectives.py docstring), worked by hand; every size below sits at least 2x from its crossover:
# - one H100 node: NVLS (23 us, 5/6 x 450 GB/s) beats the ring (8.4 + 14 x 3.4 us, 450 x 8/14) at every size;
# - 2 H100 nodes: NVLS tree (51 us, 5/6 x 400) beats the ring (214 us, 400 x 16/30) at every size;
# - 4 H100 nodes: NVLS tree (79 us, 5/6 x 200) until ~0.3 GB, then the ring (426 us, 400 x 32/62);
# - 128 H100 nodes: NVLS tree (219 us, 167 GB/s) until ~1.0 GB, the tree (784 us, 184 GB/s) until ~29 GB,
#   then the ring (13.5 ms, 200 GB/s);
# - 2 A100 nodes: the ring (214 us, 200 x 16/30) beats the tree (448 us, 0.46 x 200) at every size;
# - 16 A100 nodes: the tree (616 us, 92 GB/s x correction) until ~1.1 GB, then the ring (1.70 ms, 100.8 GB/s);
# - 128 A100 ranks, one per node: the tree (392 us, 11.5 GB/s) until ~0.67 GB, then the ring (5.0 ms, 12.5 GB/s);
# - in-network reduction offered, several nodes: NVLS+SHARP on H100, CollNet on A100 (one node: as without).
CHOICE_TABLE = [
    (H100, 8, 1, 1 * KIB, False, "nvls"), (H100, 8, 1, 8 * GIB, False, "nvls"),
    (H100, 8, 2, 1 * MIB, False, "nvls_tree"), (H100, 8, 2, 16 * GIB, False, "nvls_tree"),
    (H100, 8, 4, 64 * MIB, False, "nvls_tree"), (H100, 8, 4, 1 * GIB, False, "ring"),
    (H100, 8, 128, 256 * MIB, False, "nvls_tree"), (H100, 8, 128, 4 * GIB, False, "tree"),
    (H100, 8, 128, 64 * GIB, False, "ring"),
    (A100, 8, 1, 1 * KIB, False, "ring"), (A100, 8, 1, 8 * GIB, False, "ring"),
    (A100, 8, 2, 1 * KIB, False, "ring"), (A100, 8, 2, 8 * GIB, False, "ring"),
    (A100, 8, 16, 64 * MIB, False, "tree"), (A100, 8, 16, 4 * GIB, False, "ring"),
    (A100, 1, 128, 64 * MIB, False, "tree"), (A100, 1, 128, 4 * GIB, False, "ring"),
    (H100, 1, 128, 64 * MIB, False, "tree"),                      # one GPU per node: no NVLS
    (H100, 8, 16, 1 * GIB, True, "nvls"), (A100, 8, 16, 1 * GIB, True, "in_network"),
    (H100, 8, 1, 1 * GIB, True, "nvls"), (A100, 8, 1, 1 * GIB, True, "ring"),
]


@pytest.mark.parametrize("gpu,g,nodes,size,inr,expected", CHOICE_TABLE)
def test_nccl_choice_table(gpu, g, nodes, size, inr, expected):
    hw = _hw(gpu, g, inr)
    assert choose_algorithm("all_reduce", g * nodes, size, nodes=nodes, hardware=hw) == expected


def test_choice_of_the_other_kinds_and_fallbacks():
    assert choose_algorithm("all_to_allv", 16, 1 << 20) == "direct"
    assert choose_algorithm("all_gather", 16, 1 << 20) == "ring"
    assert choose_algorithm("broadcast", 16, 1 << 20) == "chain"
    with pytest.raises(WorkloadError, match="hardware"):
        choose_algorithm("all_reduce", 16, 1 << 20, nodes=2)
    # NCCL_ALGO asking for what the group cannot run: NCCL falls back to the ring
    assert resolve_algorithm("all_reduce", "nvls", 16, GIB, nodes=2, hardware=_hw(H100, 8)) == ("ring", True)
    assert resolve_algorithm("all_reduce", "nvls_tree", 8, GIB, nodes=1, hardware=_hw(H100, 8)) == ("ring", True)
    assert resolve_algorithm("all_reduce", "nvls_tree", 16, GIB, nodes=2, hardware=_hw(A100, 8)) == ("ring", True)
    assert resolve_algorithm("all_reduce", "in_network", 16, GIB, nodes=2, hardware=_hw(A100, 8)) == ("ring", True)
    assert resolve_algorithm("all_reduce", "tree", 16, GIB, nodes=2, hardware=_hw(H100, 8)) == ("tree", False)
    assert resolve_algorithm("all_reduce", None, 16, GIB, nodes=2, hardware=_hw(H100, 8)) == ("nvls_tree", False)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 13, 16, 31, 32, 64, 100])
def test_double_binary_tree_is_nccls(n):
    """NCCL's double binary tree (src/graph/trees.cc): binary trees (at most 2 children), depth ceil(log2 n)
    for n a power of two, and for even n no rank is an inner node of both trees (the second tree mirrors the
    first), so each rank sends/receives at most 2 x S: S/2 per tree edge, 3 edges as an inner node, 1 as a leaf."""
    trees = dtree_parents(n)
    for parent in trees:
        assert (parent < 0).sum() == 1                         # one root
        assert np.bincount(parent[parent >= 0], minlength=n).max() <= 2
        # every rank reaches the root
        cur = np.arange(n)
        for _ in range(n):
            cur = np.where(parent[cur] >= 0, parent[cur], cur)
        assert (parent[cur] < 0).all()
    inner = [set(p[p >= 0].tolist()) for p in trees]
    if n % 2 == 0:
        assert not inner[0] & inner[1]
    if n & (n - 1) == 0:
        from fabric.evaluate.flows import _tree_depth
        assert max(_tree_depth(p) for p in trees) == max(1, int(np.log2(n)))
    members = np.arange(n)[None, :]
    from fabric.evaluate.flows import _dtree_flows
    src, dst, per, steps = _dtree_flows(members)
    out = np.bincount(src, weights=per, minlength=n)
    assert out.max() == pytest.approx(1.0 if n == 2 else 1.5 if n == 3 else 2.0)
    assert np.bincount(dst, weights=per, minlength=n).max() == pytest.approx(out.max())


def test_all_to_all_pays_a_round_trip_not_p_minus_1_steps():
    """facts.md section 7: NCCL's all-to-all posts every peer at once (grouped point-to-point)."""
    assert latency_steps("all_to_all", "direct", 256) == 2 == latency_steps("all_to_allv", "direct", 8)
    assert latency_steps("all_reduce", "ring", 8) == 14


@pytest.mark.parametrize("kind", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"])
@pytest.mark.parametrize("p", [2, 8, 64])
def test_no_algorithm_beats_the_lower_bound(kind, p):
    lb = lower_bound_time(kind, p, 1e8, 50e9)
    for alg in ("ring", "tree", "halving_doubling", "direct", "chain"):
        assert collective_time(kind, alg, p, 1e8, 50e9, 0.0) >= lb * (1 - 1e-12)


def _job(w, name="j"):
    return Job(name=name, world_size=w, groups=(ProcessGroup("world", w, "world"),))


def test_packed_and_rail_aligned_placement():
    fab = build_fabric(preset_design("dgx-h100-superpod", 1016))      # 32-node scalable units, 256 GPUs
    a, b = place_jobs([_job(12, "a"), _job(512, "b")], fab, "packed")
    assert (a == np.arange(12)).all() and b[0] == 12
    a, b = place_jobs([_job(12, "a"), _job(512, "b")], fab, "rail_aligned")
    assert b[0] == 256 and (b == np.arange(256, 768)).all()          # starts on the next unit boundary
    a, b = place_jobs([_job(12, "a"), _job(8, "b")], fab, "rail_aligned")
    assert b[0] == 16                                                  # small job: next node boundary
    with pytest.raises(WorkloadError, match="needs 2,048 GPUs but the design has 1,016"):
        place_jobs([_job(2048)], fab, "packed")


def test_fragmented_cluster_gives_whole_nodes_and_is_seeded():
    # a fully fragmented cluster (the old placement "scattered"): whole nodes drawn at random, from the seed
    fab = build_fabric(Design(gpus=512))
    g1 = place_jobs([_job(64)], fab, "packed", np.random.default_rng(3), fragmentation=1.0)[0]
    g2 = place_jobs([_job(64)], fab, "packed", np.random.default_rng(3), fragmentation=1.0)[0]
    g3 = place_jobs([_job(64)], fab, "packed", np.random.default_rng(4), fragmentation=1.0)[0]
    assert (g1 == g2).all() and not (g1 == g3).all()
    nodes = g1.reshape(8, 8) // 8
    assert (nodes == nodes[:, :1]).all() and len(set(nodes[:, 0])) == 8
    assert len(set(g1.tolist())) == 64


def test_megatron_group_instances_partition_the_world():
    world, tp, dp, pp = 64, 8, 4, 2
    groups = {
        "tp": ProcessGroup("tp", tp, "tp", rank_start=0, rank_stride=1),
        "dp": ProcessGroup("dp", dp, "dp", rank_start=0, rank_stride=tp),
        "pp": ProcessGroup("pp", pp, "pp", rank_start=0, rank_stride=tp * dp),
    }
    for name, g in groups.items():
        inst = group_instances(g, world)
        assert inst.shape == (world // g.size, g.size)
        assert sorted(inst.ravel().tolist()) == list(range(world))
    assert group_instances(groups["dp"], world)[1].tolist() == [1, 9, 17, 25]
    assert group_instances(groups["pp"], world)[0].tolist() == [0, 32]
    listed = ProcessGroup("x", 3, "unknown", ranks=(0, 5, 7))
    assert group_instances(listed, world).tolist() == [[0, 5, 7]]
