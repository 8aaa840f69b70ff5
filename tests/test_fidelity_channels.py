"""Issue 28, mechanism 1: NCCL channels per NIC set the flows per rank pair that ECMP hashes.

Expected values come from NCCL's rules as read from its source (fabric/evaluate/channels.py cites them), the
2 x p4d NCCL 2.9.9 trace's "8 coll channels" on 4 NICs per node, and a brute-force enumeration of ECMP hashes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fabric.evaluate import evaluate
from fabric.evaluate.channels import channels_for_bytes, flows_per_pair, nccl_channels
from fabric.validate.scenarios import one_op_workload, table_design, validation_catalog

GB = 1 << 30


def test_channel_count_follows_nccl_rules():
    # 2 x p4d (A100, 4 EFA NICs per node, NCCL 2.9.9): "8 coll channels" in the trace = 4 rings doubled
    assert nccl_channels(4, hopper=False, multi_node=True, version="2.9.9") == 8
    # DGX H100: 8 NICs -> 8 rings -> 16 channels; no further doubling at 16
    assert nccl_channels(8, hopper=True, multi_node=True) == 16
    # one NIC (a communicator with one GPU per node): 2 channels, doubled on Hopper across nodes (NCCL >= 2.19)
    assert nccl_channels(1, hopper=True, multi_node=True) == 4
    assert nccl_channels(1, hopper=True, multi_node=True, version="2.18") == 2
    assert nccl_channels(1, hopper=False, multi_node=True) == 2
    assert nccl_channels(32, hopper=False, multi_node=True) == 32          # MAXCHANNELS


def test_small_messages_use_fewer_channels():
    # Simple protocol: a channel needs 512 threads x 64 bytes = 32 KiB of the op
    assert channels_for_bytes(16, 512 * 1024) == 16
    assert channels_for_bytes(16, 100 * 1024) == 3
    assert channels_for_bytes(16, 1000) == 1


def test_flows_per_pair():
    kw = dict(nics_per_node=8, hopper=True, multi_node=True)
    assert flows_per_pair("all_reduce", GB, qps_per_connection=1, **kw) == 2           # 16 channels / 8 NICs
    assert flows_per_pair("all_reduce", GB, qps_per_connection=4, **kw) == 8
    assert flows_per_pair("all_reduce", 64 * 1024, qps_per_connection=1, **kw) == 1    # 2 channels on 8 NICs
    assert flows_per_pair("all_to_all", GB, qps_per_connection=4, **kw) == 4           # one p2p channel per peer
    assert flows_per_pair("all_reduce", GB, qps_per_connection=3, channels_per_nic=5, **kw) == 15
    assert flows_per_pair("all_reduce", GB, qps_per_connection=2, nics_per_node=1, hopper=False,
                          multi_node=False) == 2                                       # inside one node


def _expected_max_load(balls: int, bins: int, groups: int) -> float:
    """E[busiest bin over ``groups`` independent hash experiments]: every split of the balls over the bins with its
    multinomial probability."""
    from math import factorial

    p_max = np.zeros(balls + 1)
    for counts in itertools.product(range(balls + 1), repeat=bins):
        if sum(counts) != balls:
            continue
        ways = factorial(balls)
        for c in counts:
            ways //= factorial(c)
        p_max[max(counts)] += ways / bins ** balls
    cdf = np.cumsum(p_max)
    return float(np.sum(1.0 - cdf ** groups))            # E[X] = sum over m >= 0 of P(X > m)


def test_ecmp_busiest_uplink_counts_channels_as_flows():
    """4 leaves of 4 single-GPU hosts, 4 x 5 Gb/s uplinks per leaf (one per spine); 4 rings of 4 ranks, one rank per
    leaf, so each leaf's 4 hosts send one ring flow each to the next leaf (4 independent leaf pairs; the op ends with
    the busiest). NCCL's rule for one NIC per host on H100s (the
    design's GPU) across nodes: 2 channels doubled on Hopper = 4, so 16 flows of a quarter of the bytes hash onto
    the 4 uplinks instead of 4 whole ones."""
    cat = validation_catalog()
    design = table_design("2:1 slower uplinks").replace(channels_per_nic=None)
    size = 4 * GB
    wl = one_op_workload("all_gather", size, 16, group_size=4, stride=4)
    ev = evaluate(design, wl, seed=0, samples=4096, catalog=cat, algorithms={"all_gather": "ring"},
                  transport_overrides={"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0})
    flow = 0.75 * size                       # a 4-rank ring all-gather moves (p-1)/p of the buffer per flow
    uplink = 5e9 / 8
    ball = flow / 4
    expected = _expected_max_load(16, 4, 4) * ball / uplink
    assert float(np.mean(ev.step_samples_s)) == pytest.approx(expected, rel=0.03)
    # one connection per pair (the design field pinned at 1): 4 whole flows on 4 uplinks, a clearly slower mean
    one = evaluate(design.replace(channels_per_nic=1), wl, seed=0, samples=4096, catalog=cat,
                   algorithms={"all_gather": "ring"},
                   transport_overrides={"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0})
    assert float(np.mean(one.step_samples_s)) == pytest.approx(_expected_max_load(4, 4, 4) * flow / uplink, rel=0.03)
