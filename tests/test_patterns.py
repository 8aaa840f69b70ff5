"""Group shapes and traffic patterns kept across evaluations (fabric.evaluate.patterns): the same figures as made
afresh, reused only for equal inputs."""

from __future__ import annotations

import numpy as np

from fabric.design import Design
from fabric.evaluate import evaluate
from fabric.evaluate.flows import group_shape
from fabric.evaluate.patterns import clear_patterns, shared_shape, shared_traffic
from fabric.workload.presets import preset_workload


def test_a_shape_is_made_once_per_placement_and_domain_layout():
    made = []

    def make(dom):
        def f():
            made.append(1)
            return group_shape(np.arange(16).reshape(2, 8), dom)
        return f

    clear_patterns()
    placed = np.arange(16, dtype=np.int64).tobytes()
    by8 = np.arange(16) // 8
    a = shared_shape(placed, "dp", 16, by8, make(by8))
    # an equal placement and an equal layout held in other arrays (another design's fabric): the kept shape
    b = shared_shape(bytes(placed), "dp", 16, np.arange(16) // 8, make(np.arange(16) // 8))
    assert b is a and len(made) == 1
    # the same placement on domains of 4 GPUs: another shape (2 domains per instance of 8, not 1)
    by4 = np.arange(16) // 4
    c = shared_shape(placed, "dp", 16, by4, make(by4))
    assert len(made) == 2 and c is not a
    assert (a.domains, a.per_domain) == (1, 8) and (c.domains, c.per_domain) == (2, 4)
    # another group name or world size is another key
    shared_shape(placed, "tp", 16, by8, make(by8))
    shared_shape(placed, "dp", 32, by8, make(by8))
    assert len(made) == 4
    clear_patterns()


def test_a_pattern_is_kept_per_shape_op_algorithm_and_hardware():
    clear_patterns()
    dom = np.arange(16) // 8
    shape = group_shape(np.arange(16).reshape(1, 16), dom)
    made = []

    def make():
        made.append(1)
        return object.__new__(type("T", (), {"phases": []}))

    t1 = shared_traffic(shape, dom, "all_reduce", "ring", None, "hw-a", make)
    assert shared_traffic(shape, np.arange(16) // 8, "all_reduce", "ring", None, "hw-a", make) is t1
    for args in (("all_gather", "ring", None, "hw-a"), ("all_reduce", "tree", None, "hw-a"),
                 ("all_reduce", "ring", 1024.0, "hw-a"), ("all_reduce", "ring", None, "hw-b")):
        assert shared_traffic(shape, dom, *args, make) is not t1
    # an equal shape made separately is another object: matched by identity, so made again (never mixed up)
    other = group_shape(np.arange(16).reshape(1, 16), dom)
    shared_traffic(other, dom, "all_reduce", "ring", None, "hw-a", make)
    assert len(made) == 6
    clear_patterns()


def test_evaluations_with_kept_patterns_equal_fresh_ones():
    """Designs of two scale-up layouts (HGX-8 and NVL72) evaluated one after the other share the process's kept
    shapes and patterns: each gives exactly what it gives with nothing kept."""
    wl = preset_workload("llama3-70b", gpus=576)
    hgx = Design(family="rail_optimized", gpus=576, gpu_model="b200", nic_model="nic-cx7-400")
    nvl = Design(family="clos", gpus=576, gpu_model="gb200-nvl72", gpus_per_node=4, scale_up_size=72,
                 switch_model="ib-xdr-144x800", nic_model="nic-cx8-800")
    fresh = {}
    for d in (hgx, nvl):
        clear_patterns()
        fresh[d.gpu_model] = evaluate(d, wl, seed=3, samples=64)
    clear_patterns()
    for d in (hgx, nvl, hgx, nvl.replace(routing="adaptive"), nvl):
        ev = evaluate(d, wl, seed=3, samples=64)
        if d.routing == nvl.routing or d is hgx:
            want = fresh[d.gpu_model]
            assert np.array_equal(ev.step_samples_s, want.step_samples_s)
            assert [o.time_p99_s for o in ev.ops] == [o.time_p99_s for o in want.ops]
    clear_patterns()


def test_a_failure_scenario_takes_the_kept_healthy_cuts_and_gives_the_same_step():
    """A failure scenario's network model takes the pods and cuts of the healthy model of its cabling (made once,
    also for another copy of the same build: each design gets its own copy): the step is the one made with no model
    kept, and the cuts are the healthy model's own."""
    from fabric.evaluate import Scenario
    from fabric.evaluate import network_models as nm
    from fabric.topology import build_fabric
    from fabric.topology.build import clear_fabric_cache

    wl = preset_workload("llama3-70b", gpus=1024)
    d = Design(gpus=1024, tiers=3)
    sc = Scenario(name="x", fail_switches=("spine1",))
    clear_fabric_cache()
    nm._HEALTHY_MODELS.clear()
    first = evaluate(d, wl, sc, seed=2, samples=64)
    kept = nm._HEALTHY_MODELS[build_fabric(d).cache_key]
    copy = build_fabric(d.replace(routing="adaptive"))          # another design, the same build's arrays
    assert copy is not kept.fabric and copy.link_a is kept.fabric.link_a
    model, _ = nm.network_model(copy, sc, np.random.default_rng(0), 64)
    assert model.cuts and model.cuts is kept.cuts
    again = evaluate(d, wl, sc, seed=2, samples=64)
    assert np.array_equal(first.step_samples_s, again.step_samples_s)
    clear_fabric_cache()
    nm._HEALTHY_MODELS.clear()
    alone = nm.NetworkModel.build(copy, failed_switches=[copy.switch_base + int(np.flatnonzero(
        copy.node_tier[copy.switch_base:copy.switch_base + copy.n_switches] == 1)[1])])
    assert [c.capacity_bytes_per_s.tolist() for c in alone.cuts] == \
        [c.capacity_bytes_per_s.tolist() for c in kept.cuts]
