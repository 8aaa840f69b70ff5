"""Collective cost terms against facts.md section 1; placement and process-group expansion."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.design import Design
from fabric.design.presets import preset_design
from fabric.errors import WorkloadError
from fabric.evaluate.collectives import (bus_factor, choose_algorithm, collective_time, latency_steps,
                                         lower_bound_time)
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


def test_algorithm_choice_rule():
    assert choose_algorithm("all_reduce", 128, 256 * 1024, nodes=16) == "tree"
    assert choose_algorithm("all_reduce", 128, 1 << 30, nodes=16) == "ring"
    assert choose_algorithm("all_reduce", 8, 1024, nodes=1) == "ring"
    assert choose_algorithm("all_reduce", 128, 1 << 30, nodes=16, in_network=True) == "in_network"
    assert choose_algorithm("all_to_allv", 16, 1 << 20) == "direct"


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


def test_scattered_placement_is_whole_nodes_and_seeded():
    fab = build_fabric(Design(gpus=512))
    g1 = place_jobs([_job(64)], fab, "scattered", np.random.default_rng(3))[0]
    g2 = place_jobs([_job(64)], fab, "scattered", np.random.default_rng(3))[0]
    g3 = place_jobs([_job(64)], fab, "scattered", np.random.default_rng(4))[0]
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
