"""Predicted congestion signals (issue 26 stage 5): the oversubscription share by hand, the per-tier estimate on the
packet-validation designs by hand, and (with ns-3) the switch-queue probe on a case whose answer is known."""

from __future__ import annotations

import math

import pytest

from fabric.audit.congestion import congestion_estimate, share_oversubscribed
from fabric.validate.packet import _design_for
from fabric.validate.scenarios import one_op_workload, validation_catalog, validation_design

RINGS = dict(group_size=4, stride=8)


def _est(o, routing, kind="all_reduce", size=2_000_000, **kw):
    d = _design_for(validation_design(o, routing=routing, hosts=32), routing)
    return congestion_estimate(d, one_op_workload(kind, size, 32, **kw), catalog=validation_catalog())


def test_share_oversubscribed_by_hand():
    # one ball fills a link (ratio 1): a ball meets a queue when any of the other k - 1 lands on its link
    assert share_oversubscribed(8, 8, 1.0, "ecmp") == pytest.approx(1 - (7 / 8) ** 7)
    assert share_oversubscribed(4, 2, 1.0, "ecmp") == pytest.approx(1 - (1 / 2) ** 3)
    # 15 balls of rate C/15 each: a link needs 16 or more; k = 40 on n = 4
    k, n = 40, 4
    tail = sum(math.comb(k - 1, j) * (1 / n) ** j * (1 - 1 / n) ** (k - 1 - j) for j in range(15, k))
    assert share_oversubscribed(k, n, 15.0, "ecmp") == pytest.approx(tail)
    assert share_oversubscribed(8, 4, 1.0, "spray") == 1.0       # 2 balls' worth per link
    assert share_oversubscribed(4, 4, 1.0, "spray") == 0.0       # exactly the line rate: no standing queue
    assert share_oversubscribed(1, 4, 1.0, "ecmp") == 0.0


def test_estimate_on_validation_rings_by_hand():
    # 8 rings x 4 ranks, one per leaf: each leaf's 8 hosts send one 10 Gb/s flow each across leaves
    one = _est(1, "ecmp", **RINGS)            # 1:1: 8 uplinks per leaf
    assert one["leaf->spine"].ecn_marked == pytest.approx(1 - (7 / 8) ** 7, rel=1e-9)
    assert one["leaf->host"].ecn_marked == 0.0
    spray = _est(1, "spray", **RINGS)
    assert all(t.ecn_marked == 0.0 for t in spray.values())
    two = _est(2, "spray", **RINGS)           # 2:1: 4 uplinks for 8 flows: twice the line rate on every uplink
    assert two["leaf->spine"].ecn_marked == 1.0
    assert two["spine->leaf"].ecn_marked == 0.0    # the uplinks deliver half: downlinks offered exactly their rate
    assert two["leaf->spine"].pause_exposure == two["leaf->spine"].ecn_marked


@pytest.mark.slow
def test_ns3_probe_counts_queues_where_the_estimate_says():
    from fabric.validate import ns3sim

    if not ns3sim.ns3_available():
        pytest.skip("ns-3 not installed (pip install .[packet])")
    from fabric.audit.ns3queues import QueueProbe, by_tier
    from fabric.evaluate.transport import profile_for
    from fabric.topology import build_fabric
    from fabric.validate.network import packet_network, switch_salts
    from fabric.validate.packet import _flows_tuples, op_slice, slice_flows

    cat = validation_catalog()
    out = {}
    for o in (1, 2):
        design = _design_for(validation_design(o, routing="spray_rr", hosts=32, transport="uec"), "spray_rr")
        wl = one_op_workload("all_reduce", 500_000, 32, **RINGS)
        fabric = build_fabric(design, cat)
        net = packet_network(fabric)
        _, job, op = op_slice(wl, 0)
        src, dst, nbytes, _ = slice_flows(fabric, design, job, op)
        probe = QueueProbe(net)
        sim = ns3sim.simulate(net, _flows_tuples(net, src, dst, nbytes), routing="spray_rr",
                              salts=switch_salts(net.n_switches, 0), seed=0,
                              config=ns3sim.SimConfig(reorder_buffer=profile_for(design).reorder_tolerant),
                              probe=probe)
        out[o] = by_tier(net, sim.extra["probe"])
    # 1:1 round-robin spray: an exactly even split, no standing queue; 2:1: the uplinks queue most of their bytes
    assert out[1]["leaf->spine"]["marked"] < 0.05
    assert out[2]["leaf->spine"]["marked"] > 0.5
    # the queue passes XOFF (128 KiB) for part of the time only: TCP's windows, not a rate-based sender
    assert out[1]["leaf->spine"]["pause"] < out[2]["leaf->spine"]["pause"] <= out[2]["leaf->spine"]["marked"]
