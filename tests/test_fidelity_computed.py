"""Issue 28, mechanism 2: computed path assignment (NSLB-style, path pinning) as a routing policy, and leaf
uplinks with more capacity than the downlinks (down:up below 1).

The max-min ideal of unsplittable flows is found here by brute force over every assignment of flows to links.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fabric.design import ROUTING_POLICIES, Design
from fabric.design.policy import policy_options
from fabric.errors import DesignError
from fabric.evaluate import evaluate
from fabric.evaluate.computed import computed_busiest_balls
from fabric.topology import build_fabric
from fabric.validate.scenarios import one_op_workload, table_design, validation_catalog

GB = 1 << 30
LINE = 10e9 / 8
IDEAL = {"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0}


def _best_assignment(k: int, speeds: list[float]) -> float:
    """min over every assignment of k equal flows to the links of the busiest link's time (in flows at speed 1)."""
    best = np.inf
    for a in itertools.product(range(len(speeds)), repeat=k):
        load = np.bincount(a, minlength=len(speeds)) / np.asarray(speeds)
        best = min(best, float(load.max()))
    return best


@pytest.mark.parametrize("n,slow", [(1, 0), (2, 0), (3, 0), (4, 0), (3, 1), (4, 2), (2, 2), (4, 1)])
def test_computed_placement_is_the_best_assignment(n, slow):
    for k in range(1, 8):
        speeds = [1.0] * (n - slow) + [0.5] * slow
        assert computed_busiest_balls(k, n, slow, 0.5) == pytest.approx(_best_assignment(k, speeds)), (k, n, slow)


def test_computed_is_a_routing_policy_everywhere_policies_are_listed():
    assert "computed" in ROUTING_POLICIES
    d = Design(gpus=64, routing="computed", storage_routing="computed")
    # searches and upgrade plans try it when asked for (it needs a controller that knows the job's flows)
    assert {p.routing for p in policy_options(d, qps=(1,))} == {"ecmp", "adaptive", "spray"}
    assert "computed" in {p.routing for p in policy_options(d, qps=(1,), routings=ROUTING_POLICIES)}
    from fabric.search.constraints import Constraints, constraints_from_dict

    assert "computed" not in Constraints().routings
    assert constraints_from_dict({"routings": ["computed", "ecmp"]}).routings == ("computed", "ecmp")


def _mean(design, wl, cat):
    ev = evaluate(design, wl, seed=0, samples=1024, catalog=cat, algorithms={"all_gather": "ring"},
                  transport_overrides=IDEAL)
    return float(np.mean(ev.step_samples_s)), float(np.max(ev.step_samples_s))


def test_computed_paths_reach_the_ideal_where_ecmp_collides():
    """4 leaves x 4 single-GPU hosts, one 10G uplink to each of 4 spines; 4 rings of 4 ranks, one rank per leaf: each
    leaf sends 4 flows of 3/4 of the buffer to the next leaf. Computed paths put one flow on each uplink (and each
    spine's downlink into the next leaf), so the op takes one flow's time at line rate, in every sample; ECMP's mean
    busiest uplink carries 2.66 flows (brute force, tests/test_ecmp_paths.py)."""
    cat = validation_catalog()
    wl = one_op_workload("all_gather", 4 * GB, 16, group_size=4, stride=4)
    flow_s = 0.75 * 4 * GB / LINE
    mean, worst = _mean(table_design("1:1", routing="computed"), wl, cat)
    assert mean == pytest.approx(flow_s, rel=1e-3) and worst == pytest.approx(flow_s, rel=1e-3)
    ecmp, _ = _mean(table_design("1:1"), wl, cat)
    assert ecmp == pytest.approx(2.656 * flow_s, rel=0.04)


def test_computed_keeps_flows_whole_where_spraying_splits_them():
    """The 2:1 leaves by slower uplinks (4 x 5G uplinks per leaf, 4 hosts): 2 rings of 8 ranks (every other host),
    so each leaf sends 2 whole flows to the next leaf. Computed paths put each on its own 5G uplink: twice a flow's
    time at the NIC's 10G. Spraying (a reorder-tolerant transport) splits both over the 4 uplinks, half a flow
    each, so the NIC binds: one flow's time. ECMP can only do as well as the computed placement."""
    cat = validation_catalog()
    wl = one_op_workload("all_gather", 4 * GB, 16, group_size=8, stride=2)
    flow_s = 7 / 8 * 4 * GB / LINE              # an 8-rank ring all-gather: (p-1)/p of the buffer per flow
    base = table_design("2:1 slower uplinks", transport="uec")
    computed, worst = _mean(base.replace(routing="computed"), wl, cat)
    assert computed == pytest.approx(2 * flow_s, rel=1e-3) and worst == pytest.approx(computed, rel=1e-9)
    spray, _ = _mean(base.replace(routing="spray"), wl, cat)
    assert spray == pytest.approx(flow_s, rel=1e-3)
    ecmp, _ = _mean(base.replace(routing="ecmp"), wl, cat)
    assert ecmp >= computed * 0.999


def test_leaf_uplinks_above_the_downlinks_are_allowed():
    # down:up 0.5 on 128 x 400G ports (51.2T as 400G): 5 nodes of 8 NICs = 40 downlinks, twice as many uplinks
    d = Design(gpus=1024, family="clos", nic_model="nic-eth-400", switch_model="eth-51t-64x800", transport="roce",
               oversubscription=(0.5, 1.0))
    s = build_fabric(d).structure
    assert s["leaf_up"] == 2 * s["leaf_down"]
    with pytest.raises(DesignError, match="below 0.25"):
        Design(oversubscription=(0.2, 1.0))
