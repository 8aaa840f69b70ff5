"""Issue 24, item 2: in-network reduction (SHARP) loads the leaf-spine uplinks its aggregation trees hold.

Every expected figure is computed by hand from the fabric's shape: a tree's leaf sends its share S (or S/g per rail)
once up one uplink to the tree's spine and gets the result once down (fabric/evaluate/innetwork.py,
docs/evaluator.md "In-network reduction"). A 400 Gb/s InfiniBand port moves 400e9 / 8 x 0.96 = 48e9 B/s of goodput
(transport profile ``infiniband``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fabric.catalog import default_catalog, load_catalog
from fabric.design import Design
from fabric.errors import CatalogError
from fabric.evaluate import Scenario, evaluate
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

#: the app under test (FABRIC_TEST_APP: another checkout's, to see this test fail on the code before the fix)
APP = os.environ.get("FABRIC_TEST_APP", str(Path(__file__).resolve().parent.parent / "app.py"))
GIB = 1 << 30
GOODPUT = 400e9 / 8 * 0.96          # bytes/s of one 400G InfiniBand NIC port


def all_reduce(size: int, world: int, *, group: int, stride: int = 1) -> Workload:
    g = ProcessGroup("g", group, "dp", rank_start=0, rank_stride=stride)
    return Workload(jobs=(Job("job", world_size=world, groups=(g,), ops=(CommOp("all_reduce", size, "g"),)),))


def rows(ev, kind: str) -> list[dict]:
    return [h for h in ev.hot_links if h["links"] == kind]


def test_one_tree_over_four_leaves_by_hand():
    """128 one-GPU hosts on 4 leaves (32 down, 32 up) under 2 spines; one all-reduce of S = 1 GiB over all 128:
    one tree. Each leaf sends S once up one of its 32 uplinks and gets S once down it: the busiest uplink carries S,
    the mean uplink S / 32; the op takes S / 48e9 (each NIC sends and receives S once) plus a few us of latency."""
    d = Design(name="hand", gpus=128, gpus_per_node=1, family="clos", in_network_reduction=True)
    s = build_fabric(d).structure
    assert (s["leaves"], s["spines"], s["leaf_up"]) == (4, 2, 32)
    ev = evaluate(d, all_reduce(GIB, 128, group=128), samples=32)
    for kind in ("leaf uplinks", "leaf downlinks"):
        assert len(rows(ev, kind)) == 1, ev.hot_links
        (h,) = rows(ev, kind)
        assert (h["groups"], h["links_per_group"]) == (4, 32)
        assert h["p99_bytes"] == pytest.approx(GIB, rel=1e-9)          # one link of each leaf carries S
        assert h["mean_bytes"] == pytest.approx(GIB / 32, rel=1e-9)
    op = ev.ops[0]
    assert op.time_p99_s == pytest.approx(GIB / GOODPUT, rel=0.01)
    assert op.algorithm == "in_network" and op.aggregation_trees == 1 and op.fallback_instances == 0


def test_eight_trees_spread_move_on_failure_and_slow_on_a_slow_spine():
    """16 hosts of 8 GPUs on 4 leaves (4 hosts each) under 2 spines (16 links from each leaf to each); the DP
    group is one GPU per host (stride 8): 8 instances, 8 trees, each over all 4 leaves, 4 on each spine (fewest
    trees first). Each leaf: 8 of its 32 uplinks carry S each way, mean 8 S / 32 = S / 4.
    Spine 0 down: its 4 trees move to spine 1 (16 free links per leaf >= 8): the op time does not change, the
    leaf's 16 uplinks average 8 S / 16. Spine at half speed: the 4 trees on it take 2 S / 48e9."""
    d = Design(name="hand8", gpus=128, gpus_per_node=8, family="clos", in_network_reduction=True)
    s = build_fabric(d).structure
    assert (s["leaves"], s["spines"], s["leaf_up"], s["leaf_spine_bundle"]) == (4, 2, 32, 16)
    wl = all_reduce(GIB, 128, group=16, stride=8)
    base = evaluate(d, wl, samples=32)
    op = base.ops[0]
    assert op.time_p99_s == pytest.approx(GIB / GOODPUT, rel=0.01)
    slow = evaluate(d, wl, Scenario(name="slow", slow_switches=1, slow_factor=0.5), samples=32)
    assert slow.ops[0].time_p99_s == pytest.approx(2 * GIB / GOODPUT, rel=0.01)
    assert slow.step_time_s["p99"] > 1.9 * base.step_time_s["p99"]
    assert len(rows(base, "leaf uplinks")) == 1, base.hot_links
    (h,) = rows(base, "leaf uplinks")
    assert h["p99_bytes"] == pytest.approx(GIB, rel=1e-9) and h["mean_bytes"] == pytest.approx(GIB / 4, rel=1e-9)
    assert op.aggregation_trees == 8

    failed = evaluate(d, wl, Scenario(name="spine0 down", fail_switches=("spine0",)), samples=32)
    assert failed.ops[0].time_p99_s == pytest.approx(op.time_p99_s, rel=1e-9)
    (h,) = rows(failed, "leaf uplinks")
    assert h["links_per_group"] == 16 and h["mean_bytes"] == pytest.approx(GIB / 2, rel=1e-9)
    assert failed.ops[0].aggregation_trees == 8 and failed.ops[0].fallback_instances == 0


@pytest.fixture(scope="module")
def one_tree_catalog(tmp_path_factory):
    """The 64 x 400G InfiniBand switch taking part in one tree at a time (NVIDIA Quantum's limit)."""
    row = {"model": "ib-one-tree-64x400", "vendor": "test", "fabric": "infiniband", "ports": 64,
           "port_speed_gbps": 400, "price_usd": 40000, "power_w": 750, "latency_ns": 130, "source": "test",
           "sharp_trees": 1}
    p = tmp_path_factory.mktemp("cat") / "c.json"
    p.write_text(json.dumps({"switches": [row]}))
    return load_catalog(p)


def test_switch_tree_limit_sends_the_other_instances_to_the_ring_or_tree(one_tree_catalog):
    """The 8-instance case on switches that take part in one tree each: the first instance's tree takes every leaf's
    one slot, the other 7 instances find none and run without SHARP, which moves at least 2 (p - 1) / p S = 1.875 S
    per NIC for p = 16 ranks (facts.md section 1), and the evaluation says so."""
    d = Design(name="one-tree", gpus=128, gpus_per_node=8, family="clos", switch_model="ib-one-tree-64x400",
               in_network_reduction=True)
    ev = evaluate(d, all_reduce(GIB, 128, group=16, stride=8), catalog=one_tree_catalog, samples=32)
    op = ev.ops[0]
    assert (op.aggregation_trees, op.fallback_instances) == (1, 7)
    assert op.fallback_algorithm in ("ring", "tree")
    assert op.time_p99_s >= 1.875 * GIB / GOODPUT
    assert any("7 of 8 instance(s) found no aggregation tree" in n and "1 per switch" in n for n in ev.notes)


def test_catalog_gives_each_switch_its_tree_limit(tmp_path):
    cat = default_catalog()
    # NVIDIA SHARP release notes: Quantum runs one streaming tree per switch, Quantum-2 one per port (64)
    assert cat.switch("ib-hdr-40x200").sharp_trees == 1
    assert cat.switch("ib-ndr-64x400").sharp_trees == 64
    assert cat.switch("eth-51t-64x800").sharp_trees is None
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"switches": [{"model": "x", "vendor": "t", "fabric": "infiniband", "ports": 8,
                                           "port_speed_gbps": 400, "price_usd": 1, "power_w": 1, "latency_ns": 1,
                                           "source": "t", "sharp_trees": -1}]}))
    with pytest.raises(CatalogError, match="sharp_trees"):
        load_catalog(p)


@pytest.fixture(scope="module")
def mixtral():
    from fabric.workload.presets import preset_workload

    return preset_workload("mixtral-8x7b", gpus=1024)


@pytest.fixture(scope="module")
def clos22():
    """The review's design: 1,024 H100 on a 3:1 Clos, 128 servers on 22 leaves (48 down, 16 up) under 8 spines."""
    d = Design(name="clos 3:1 +SHARP", gpus=1024, family="clos", oversubscription=(3.0, 1.0), routing="adaptive",
               placement="rail_aligned", in_network_reduction=True)
    s = build_fabric(d).structure
    assert (s["leaves"], s["spines"], s["leaf_up"], s["leaf_spine_bundle"]) == (22, 8, 16, 2)
    return d


def test_review_case_uplinks_carry_the_dp_all_reduce(mixtral, clos22):
    """The DP all-reduce (512 ranks, 4 GPUs of each of 128 servers) runs NVLS + SHARP on 2 instances x 4 rails = 8
    trees; each tree link carries S / 4 per op up and down. Per step: 61 x 26,214,400 B + 3,764,992 B, over 4."""
    ev = evaluate(clos22, mixtral, samples=32, top_links=40)
    dp = [o for o in ev.ops if o.group == "dp"]
    per_step = sum(o.bytes * o.count_per_step for o in dp)
    assert per_step == 61 * 26_214_400 + 3_764_992
    dp_rows = [h for h in ev.hot_links if h["links"] == "leaf uplinks" and all("@dp" in x for x in h["ops"])]
    assert len(dp_rows) == 1 and dp_rows[0]["groups"] == 22, ev.hot_links
    assert dp_rows[0]["p99_bytes"] == pytest.approx(per_step / 4, rel=1e-9)
    assert dp_rows[0]["mean_bytes"] == pytest.approx(8 * per_step / 4 / 16, rel=1e-9)
    assert {o.aggregation_trees for o in dp} == {8}


def test_review_case_failure_and_slow_switch_cost_something(mixtral, clos22):
    """The expert-DP all-reduce has 16 instances (one GPU on every other server), each over all 22 leaves: 16 trees
    hold all 16 uplinks of every leaf. With a spine down a leaf has 14: 2 instances find no tree and run without
    SHARP, so fail-spine costs; a half-speed spine roots 2 of those trees and 1 DP tree, so slow-switch costs."""
    base = evaluate(clos22, mixtral, samples=32)
    failed = evaluate(clos22, mixtral, Scenario(name="fail-spine", failed_spines=1), samples=32)
    assert failed.step_time_s["p99"] > 1.01 * base.step_time_s["p99"]
    slow = evaluate(clos22, mixtral, Scenario(name="slow-switch", slow_switches=1), samples=32)
    assert slow.step_time_s["p99"] > 1.01 * base.step_time_s["p99"]
    from fabric.failures.resilience import resilience

    res = resilience(clos22, mixtral, samples=32, healthy_p99_s=base.step_time_s["p99"])
    assert res["worst_switch_failure_p99_s"] > 1.01 * base.step_time_s["p99"]
    assert {o.aggregation_trees for o in base.ops if o.group == "edp"} == {16}
    edp = [o for o in failed.ops if o.group == "edp"]
    assert {(o.aggregation_trees, o.fallback_instances) for o in edp} == {(14, 2)}


def test_design_page_lists_the_tree_uplinks_and_says_what_ran_in_network():
    from streamlit.testing.v1 import AppTest

    from fabric.search.designs import design_genes
    from fabric.ui_support.urlstate import encode_genes

    d = Design(family="clos", oversubscription=(3.0, 1.0), routing="adaptive", placement="rail_aligned",
               in_network_reduction=True)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["evals"] = "60"
    at.query_params["gpus"] = "1024"
    at.query_params["design"] = encode_genes(design_genes(d))
    at.run()
    at.switch_page("pages/design.py").run()
    assert not at.exception, [e.value for e in at.exception]
    hot = next(t.value for t in at.dataframe if "ops crossing" in t.value.columns)
    uplinks = hot[hot["links"] == "leaf uplinks"]
    assert len(uplinks) and uplinks["ops crossing"].str.contains("dp gradient all-reduce").any()
    captions = "\n".join(str(c.value) for c in at.caption)
    assert "In-network reduction (SHARP)" in captions and "aggregation tree" in captions


def test_search_reuse_keeps_sharp_evaluations_identical(mixtral, clos22, one_tree_catalog):
    """The search shares network models, tree placements and loads between the scenarios of one design
    (``evaluate(reuse=...)``, fabric.search.robust); each evaluation must equal evaluating alone, with the trees
    moved or fallen back under fail-spine (the 16-tree expert-DP op loses 2 trees) and, on switches that take one
    tree each, the fallback path too."""
    from fabric.evaluate.scenario import SCENARIO_PRESETS

    reuse: dict = {}
    cases = [(clos22, None, n) for n in ("baseline", "fail-spine", "slow-switch", "job-mix-shift", "fail-spine")]
    one = clos22.replace(switch_model="ib-one-tree-64x400")
    cases += [(one, one_tree_catalog, n) for n in ("baseline", "fail-spine", "baseline")]
    got = {}
    for design, cat, name in cases:
        alone = evaluate(design, mixtral, SCENARIO_PRESETS[name], seed=3, samples=32, catalog=cat)
        shared = evaluate(design, mixtral, SCENARIO_PRESETS[name], seed=3, samples=32, catalog=cat, reuse=reuse)
        assert shared.to_dict(include_samples=True) == alone.to_dict(include_samples=True), (design.name, name)
        got[(design.switch_model, name)] = shared
    assert got[("ib-ndr-64x400", "fail-spine")].step_time_s["p99"] > \
        1.01 * got[("ib-ndr-64x400", "baseline")].step_time_s["p99"]
    edp = [o for o in got[("ib-one-tree-64x400", "baseline")].ops if o.group == "edp"]
    assert all(o.fallback_instances > 0 for o in edp)
