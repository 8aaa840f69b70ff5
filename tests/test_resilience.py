"""Single points of failure on the actual cabling, against brute force on the full cabling (the rule:
fabric.failures.rule; its own checks: tests/test_review2_resilience.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

import fabric.failures.resilience as R
import fabric.failures.rule as SF
from fabric.design import Design
from fabric.errors import DesignError
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS


def brute_force(fab) -> tuple[bool, int]:
    """(does the design fail the single-failure rule, most GPUs one switch failure takes out of the job), by
    removing every switch and cable one at a time (tests/test_review2_resilience.py)."""
    from test_review2_resilience import brute_force as rule

    got = rule(fab)
    return not got["survives"], got["gpus_out"]


CASES = [Design(gpus=64, gpus_per_node=1, tiers=2), Design(gpus=256), Design(gpus=64, family="rail_optimized"),
         Design(gpus=256, family="rail_only"), Design(gpus=128, family="dragonfly", gpus_per_node=4),
         Design(gpus=256, nic_model="nic-2x200-dual", switch_model="eth-25t-64x400", transport="roce", planes=2),
         Design(gpus=128, gpus_per_node=1, tiers=3, oversubscription=(2.0, 2.0)),
         Design(gpus=256, switch_model="ib-xdr-144x800")]


@pytest.mark.parametrize("design", CASES, ids=lambda d: f"{d.family}-{d.gpus}-{d.planes}p-{d.switch_model}")
def test_against_brute_force(design):
    fab = build_fabric(design)
    got = R.failure_analysis(fab)
    fails, lost = brute_force(fab)
    assert (not got["survives_single_failure"]) == fails
    assert got["gpus_lost_on_worst_switch_failure"] == lost


def test_a_leaf_with_a_single_spine_is_found():
    # a 2-leaf, 2-spine fat tree whose leaf0 lost its cables to spine1: spine0 is now a single point of failure
    fab = build_fabric(Design(gpus=64, gpus_per_node=1, tiers=2))
    ls = fab.link_kind == LINK_KINDS.index("leaf-spine")
    leaf0, spine1 = fab.switch_base, fab.switch_base + fab.n_switches - 1
    drop = ls & (fab.link_a == leaf0) & (fab.link_b == spine1)
    keep = ~drop
    cut = replace(fab, link_a=fab.link_a[keep], link_b=fab.link_b[keep], link_kind=fab.link_kind[keep],
                  link_medium=fab.link_medium[keep], link_capacity_bps=fab.link_capacity_bps[keep],
                  link_reach_m=fab.link_reach_m[keep])
    got = R.failure_analysis(cut)
    assert got["partitions_on_single_failure"] and got["partitioning_switches"] == ["spine0"]
    assert got["min_uplink_switches"] == 1 and brute_force(cut)[0]
    # the structural check used for large fabrics finds the same
    with pytest.MonkeyPatch.context() as m:
        m.setattr(SF, "EXACT_MAX_PAIRS", 0)
        fast = R.failure_analysis(cut)
    assert fast["method"] == "structural" and fast["partitioning_switches"] == ["spine0"]


def test_one_switch_fabric_is_a_single_point():
    got = R.failure_analysis(build_fabric(Design(gpus=256, switch_model="ib-xdr-144x800", tiers=1)))
    assert not got["survives_single_failure"] and got["gpus_lost_on_worst_switch_failure"] == 256


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(fam=hs.sampled_from(["clos", "rail_optimized", "rail_only"]), nodes=hs.integers(2, 96),
       over=hs.sampled_from([1.0, 2.0, 3.0]), tiers=hs.sampled_from([None, 2, 3]))
def test_structural_check_agrees_with_the_exact_one(fam, nodes, over, tiers):
    try:
        fab = build_fabric(Design(gpus=8 * nodes, family=fam, oversubscription=(over, over), tiers=tiers))
    except DesignError:
        return
    exact = R.failure_analysis(fab)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(SF, "EXACT_MAX_PAIRS", 0)
        fast = R.failure_analysis(fab)
    for k in ("survives_single_failure", "partitions_on_single_failure", "partitioning_switch_count",
              "partitioning_link_count", "gpus_lost_on_worst_switch_failure", "min_uplink_switches"):
        assert exact[k] == fast[k], k


# ------------------------------------------------------------------ evaluated failures, constraints, search

def _mixtral():
    from pathlib import Path

    from fabric.workload.model import load_workload_json

    return load_workload_json((Path(__file__).resolve().parent.parent / "sample_traces" /
                               "mixtral-8x7b.json").read_text())


def test_failure_p99s_are_evaluated_under_the_named_failure():
    from fabric.evaluate import Scenario, evaluate

    wl = _mixtral()
    d = Design(gpus=256, oversubscription=(2.0, 1.0))
    r = R.resilience(d, wl, samples=64)
    assert r["survives_single_failure"] and r["worst_switch"].startswith("spine")
    direct = evaluate(d, wl, Scenario(name="x", fail_switches=(r["worst_switch"],)), samples=64)
    assert r["worst_switch_failure_p99_s"] == pytest.approx(max(direct.step_time_s["p99"], r["healthy_p99_s"]))
    assert r["worst_link_failure_p99_s"] >= r["healthy_p99_s"]
    # a one-switch cluster: no switch above the leaves to fail, and the one switch partitions everything
    one = R.resilience(Design(gpus=256, switch_model="ib-xdr-144x800", tiers=1), wl, samples=32)
    assert not one["survives_single_failure"] and one["worst_switch"] is None


def test_named_failures_are_checked():
    from fabric.evaluate import Scenario, evaluate

    wl = _mixtral()
    with pytest.raises(DesignError, match="leaf0 is a leaf"):
        evaluate(Design(gpus=256), wl, Scenario(name="x", fail_switches=("leaf0",)), samples=16)
    with pytest.raises(DesignError, match="no switch 'spine99'"):
        evaluate(Design(gpus=256), wl, Scenario(name="x", fail_switches=("spine99",)), samples=16)
    with pytest.raises(DesignError, match="name it by its two switches"):
        evaluate(Design(gpus=256), wl, Scenario(name="x", fail_links=("leaf0spine1",)), samples=16)


@pytest.mark.parametrize("which", ["sample", "plan"])
def test_no_front_design_has_a_single_point_of_failure_by_default(which):
    from fabric.search import Constraints, run_search
    from fabric.workload.presets import preset_workload

    wl, gpus = (_mixtral(), 256) if which == "sample" else (preset_workload("llama3-70b", 1024), 1024)
    res = run_search(wl, Constraints(gpus=gpus), budget_evals=200, seed=0, samples=32)
    assert res.front
    for r in res.front:
        d = Design(**{**_design_kwargs(r), "gpus": gpus})
        got = R.failure_analysis(build_fabric(d))
        assert got["survives_single_failure"], r["design"]
        assert got["min_uplink_switches"] != 1, r["design"]            # no leaf hangs off one spine
    if which == "sample":     # 256 GPUs fit one 288-port switch: with the check off such designs are feasible again
        off = run_search(wl, Constraints(gpus=gpus, survive_single_failure=False), budget_evals=200, seed=0,
                         samples=32)
        assert any(not r["survives_single_failure"] for r in off.records if r["feasible"])


def _design_kwargs(rec):
    from fabric.search.designs import design_from_record

    d = design_from_record(rec, gpus=8)
    from dataclasses import asdict

    kw = asdict(d)
    kw.pop("gpus")
    return kw


def test_failure_limit_and_objective():
    from fabric.errors import FabricError
    from fabric.search import Constraints, run_search

    wl = _mixtral()
    res = run_search(wl, Constraints(gpus=256, max_p99_under_failure_s=5.0, p99_objective="worst_single_failure"),
                     budget_evals=80, seed=0, samples=32)
    for r in res.front:
        assert r["p99_failure_s"] <= 5.0 and r["p99_failure_s"] >= r["p99_s"] - 1e-12
    with pytest.raises(FabricError, match="p99_objective"):
        Constraints(p99_objective="mean")


@pytest.mark.parametrize("kw", [
    dict(gpus=24, gpus_per_node=4, dragonfly_terminals=4, dragonfly_routers=2, dragonfly_globals=1),   # a = 2, 3 groups
    dict(gpus=40, gpus_per_node=2, dragonfly_terminals=4, dragonfly_routers=2, dragonfly_globals=2),   # 5 groups
    dict(gpus=96, gpus_per_node=4, dragonfly_terminals=8, dragonfly_routers=3, dragonfly_globals=2),
    dict(gpus=32, gpus_per_node=2, dragonfly_terminals=8, dragonfly_routers=2, dragonfly_globals=2,
         nic_model="nic-2x200-dual", switch_model="eth-25t-64x400", transport="roce"),           # 2 ports a node
    dict(gpus=32, gpus_per_node=4, dragonfly_terminals=4, dragonfly_routers=4, dragonfly_globals=1),   # 2 groups
    dict(gpus=16, gpus_per_node=4, dragonfly_terminals=4, dragonfly_routers=2, dragonfly_globals=1),   # 2 x 2 routers
], ids=["a2-g3", "a2-g5", "a3", "2ports", "g2", "g2-a2"])
def test_dragonflies_of_several_groups_take_the_structural_check_and_it_agrees_with_brute_force(kw, monkeypatch):
    # a dragonfly of 2+ groups of 2+ routers: the check is structural above EXACT_MAX_PAIRS (forced here to 0), and
    # what it finds matches removing every switch and every link one at a time
    fab = build_fabric(Design(family="dragonfly", **kw))
    assert fab.structure["groups"] >= 2 and fab.structure["routers_per_group"] >= 2
    monkeypatch.setattr(SF, "EXACT_MAX_PAIRS", 0)
    got = R.failure_analysis(fab)
    fails, lost = brute_force(fab)
    assert got["method"] == "structural"
    assert (not got["survives_single_failure"]) == fails is False
    assert got["gpus_lost_on_worst_switch_failure"] == lost


def test_a_one_group_dragonfly_keeps_the_exact_check(monkeypatch):
    # one group has no global links to route around a lost local link: the exact check runs whatever the size
    fab = build_fabric(Design(family="dragonfly", gpus=16, gpus_per_node=4, dragonfly_terminals=4,
                              dragonfly_routers=4, dragonfly_globals=1))
    assert fab.structure["groups"] == 1
    monkeypatch.setattr(SF, "EXACT_MAX_PAIRS", 0)
    assert R.failure_analysis(fab)["method"] == "exact"


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(p=hs.sampled_from([2, 4, 8]), a=hs.integers(2, 5), h=hs.integers(1, 3), gpn=hs.sampled_from([1, 2, 4]),
       nodes=hs.integers(2, 40))
def test_dragonfly_structural_check_agrees_with_brute_force(p, a, h, gpn, nodes):
    try:
        fab = build_fabric(Design(family="dragonfly", gpus=gpn * nodes, gpus_per_node=gpn, nics_per_gpu=1.0 / gpn,
                                  dragonfly_terminals=p, dragonfly_routers=a, dragonfly_globals=h))
    except DesignError:
        return
    with pytest.MonkeyPatch.context() as m:       # the structural check where failure_analysis takes it
        m.setattr(SF, "EXACT_MAX_PAIRS", 0)
        got = R.failure_analysis(fab)
    fails, lost = brute_force(fab)
    assert (not got["survives_single_failure"], got["gpus_lost_on_worst_switch_failure"]) == (fails, lost)
