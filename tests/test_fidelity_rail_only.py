"""Issue 28, mechanism 4: rail-only forwarding over NVLink is a hop of its own.

On a rail-only fabric a byte for another rail first crosses NVLink to the source node's GPU on that rail, then the
network (Wang et al., arXiv 2307.12169). The expected extra time is counted here by hand from the all-to-all's
byte pattern: it is the forwarded bytes at NVLink speed, in series with the network.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabric.reference.presets import preset_design
from fabric.evaluate import evaluate
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GB = 1 << 30
#: transport with every efficiency 1 and no per-step latency: times are bytes over line rates
IDEAL = {"bandwidth_efficiency": 1.0, "nvlink_efficiency": 1.0, "step_alpha_s": 0.0, "nvlink_alpha_s": 0.0}
NVLINK = 3600e9 / 8                     # H100: 450 GB/s of NVLink per GPU per direction (catalog 3,600 Gb/s)
NIC = 400e9 / 8


def _all_to_all(gpus: int, size: int) -> Workload:
    g = ProcessGroup("ep", gpus, "ep", rank_start=0, rank_stride=1)
    return Workload((Job("moe", world_size=gpus, groups=(g,), ops=(CommOp("all_to_all", size, "ep"),)),))


def _mean(design, wl) -> float:
    return float(np.mean(evaluate(design, wl, seed=0, samples=64, transport_overrides=IDEAL).step_samples_s))


@pytest.mark.parametrize("nodes,size", [(2, 4 * GB), (4, 4 * GB), (2, 1 * GB)])
def test_rail_only_all_to_all_pays_the_nvlink_hop_by_bytes(nodes, size):
    """n = 8 x nodes ranks, each sends S/n to every other. Rail-optimized: a GPU's NIC carries its 8(nodes-1)
    cross-node pieces. Rail-only: the same volume per NIC (GPU j's NIC takes every local GPU's pieces for rail j),
    but 7(nodes-1) of a GPU's pieces (other rails, other nodes) first cross NVLink: 7(nodes-1) S/n more at
    NVLink speed, in series."""
    n = 8 * nodes
    ro = preset_design("rail-only", n)
    opt = ro.replace(name="rail-optimized", family="rail_optimized")
    wl = _all_to_all(n, size)
    t_ro, t_opt = _mean(ro, wl), _mean(opt, wl)
    net = 8 * (nodes - 1) * size / n / NIC
    assert t_opt == pytest.approx(net, rel=0.01)
    hop = 7 * (nodes - 1) * size / n / NVLINK
    assert t_ro - t_opt == pytest.approx(hop, rel=0.01)
    assert t_ro / t_opt == pytest.approx(1 + 7 / 8 * NIC / NVLINK, rel=0.01)       # 9.7 %: published 8-11 %


def test_ring_on_rails_forwards_nothing():
    """A data-parallel ring whose neighbours share a rail (one GPU per node, rail-aligned) needs no NVLink hop."""
    ro = preset_design("rail-only", 32)
    g = ProcessGroup("dp", 4, "dp", rank_start=0, rank_stride=8)
    wl = Workload((Job("dp", world_size=32, groups=(g,), ops=(CommOp("all_reduce", GB, "dp"),)),))
    opt = ro.replace(family="rail_optimized")
    a = evaluate(ro, wl, seed=0, samples=16, transport_overrides=IDEAL).step_time_s["p50"]
    b = evaluate(opt, wl, seed=0, samples=16, transport_overrides=IDEAL).step_time_s["p50"]
    assert a == pytest.approx(b, rel=1e-9)
