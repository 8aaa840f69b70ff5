"""Max-min fairness by progressive filling, and the equivalence the evaluator relies on."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.evaluate.maxmin import fluid_completion_times, max_min_rates


def test_textbook_max_min_example():
    # link 0 (cap 10) carries flows 0,1,2; link 1 (cap 4) carries flow 2 and 3 -> flow 2,3 get 2, flows 0,1 get 4
    flow_of = np.array([0, 1, 2, 2, 3])
    link_of = np.array([0, 0, 0, 1, 1])
    rates = max_min_rates(4, flow_of, link_of, np.array([10.0, 4.0]))
    assert rates.tolist() == pytest.approx([4.0, 4.0, 2.0, 2.0])


def test_slowest_flow_equals_most_loaded_link_for_equal_flows():
    """ECMP: equal flows hashed onto paths of two hops; the fluid finish of the slowest flow is max load / cap."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        flows, up, down = 64, 16, 16
        u = rng.integers(0, up, flows)
        d = up + rng.integers(0, down, flows)
        flow_of = np.repeat(np.arange(flows), 2)
        link_of = np.stack([u, d], 1).ravel()
        cap = np.full(up + down, 5.0)
        finish = fluid_completion_times(np.full(flows, 10.0), flow_of, link_of, cap)
        load = np.bincount(link_of, minlength=up + down) * 10.0
        assert finish.max() == pytest.approx((load / cap).max(), rel=1e-9)
