"""Design versus operating conditions: a fragmented cluster is a scenario, not a placement; free policy versus
hardware has one definition, read by the advisor, the search, the front and the comparison of designs. Every
expected number is worked by hand from the hardware (400G NICs and uplinks, InfiniBand at 0.96 of line rate)."""

from __future__ import annotations

import json
import warnings
from dataclasses import fields

import numpy as np
import pytest

from fabric.review.advisor import FREE, HARDWARE, candidate_changes
from fabric.cli.main import main
from fabric.cost import bill_of_materials
from fabric.design import Design, design_from_dict, load_design
from fabric.design.policy import (
    HARDWARE_FIELDS, POLICY, POLICY_FIELDS, edit_kind, gene_kind, policy_options, with_policy,
)
from fabric.errors import DesignError
from fabric.evaluate import SCENARIO_PRESETS, Scenario, evaluate
from fabric.evaluate.placement import group_instances, place_jobs
from fabric.search.constraints import ConstraintError, Constraints
from fabric.search.records import evaluate_record
from fabric.search.result import SearchResult
from fabric.search.run import random_search
from fabric.search.space import DesignSpace
from fabric.topology import build_fabric
from fabric.design.policy import best_free_policy
from fabric.ui_support.compare import money_split
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 2 ** 30
#: 400G NIC or link at the InfiniBand profile's 0.96 efficiency, bytes/s
LINK_BPS = 400e9 / 8 * 0.96


def _moe(world: int = 192, n: int = 48) -> tuple[Workload, ProcessGroup]:
    """Expert-parallel groups of ``n`` contiguous ranks, each an all-to-all of 1 GiB per rank (no compute)."""
    g = ProcessGroup("ep", n, "ep")
    return Workload(jobs=(Job(name="moe", world_size=world, groups=(g,),
                              ops=(CommOp("all_to_all", GIB, "ep"),)),)), g


def _leaf_3to1() -> Design:
    # 192 one-GPU hosts; 64-port leaves at 3:1 keep ceil(64 / 4) = 16 ports up and 48 down: 4 leaves of 48 hosts
    return Design(name="3:1", gpus=192, gpus_per_node=1, oversubscription=(3.0,), routing="spray", tiers=2)


# ------------------------------------------------------------------ fragmentation is a scenario


def test_fragmented_cluster_slows_a_job_whose_packed_groups_stayed_under_their_leaf():
    wl, g = _moe()
    d = _leaf_3to1()
    fab = build_fabric(d)
    assert (fab.structure["leaf_down"], fab.structure["leaf_up"], fab.structure["leaves"]) == (48, 16, 4)
    seq = np.random.SeedSequence(0).spawn(3)[1]                  # the evaluator's placement stream for seed 0
    leaf_of = {}
    for frag in (0.0, 1.0):
        gpus = place_jobs(list(wl.jobs), fab, d.placement, np.random.default_rng(seq), fragmentation=frag)[0]
        leaf_of[frag] = gpus[group_instances(g, 192)] // 48          # host h sits under leaf h // 48
    # packed: expert group k is hosts 48k..48k+47, all under leaf k: nothing crosses a leaf's uplinks
    assert all(len(set(row)) == 1 for row in leaf_of[0.0].tolist())
    # fragmented: every group spreads over several leaves
    assert all(len(set(row)) >= 3 for row in leaf_of[1.0].tolist())

    packed = evaluate(d, wl, samples=64).step_time_s["p99"]
    frag = evaluate(d, wl, SCENARIO_PRESETS["fragmented"], samples=64).step_time_s["p99"]
    # packed: each rank sends 47/48 of 1 GiB out of its NIC
    assert packed == pytest.approx(GIB * 47 / 48 / LINK_BPS, rel=0.02)
    # fragmented: a member of group k on leaf L sends (48 - m) / 48 GiB across L's uplinks (m: the group's members
    # on L), and receives as much; with spraying the busiest leaf's 16 uplinks set the pace
    members = [[int((row == leaf).sum()) for row in leaf_of[1.0]] for leaf in range(4)]     # m per group and leaf
    loads = [sum(m * (48 - m) / 48 for m in per_group) for per_group in members]
    assert frag == pytest.approx(max(loads) * GIB / (16 * LINK_BPS), rel=0.05)
    assert frag > 2.0 * packed
    # half the node slots reshuffled: in between
    half = evaluate(d, wl, Scenario(fragmentation=0.5), samples=64).step_time_s["p99"]
    assert packed < half < frag


def test_fragmentation_keeps_nodes_whole_and_moves_the_share_asked():
    fab = build_fabric(Design(gpus=512))                               # 64 nodes of 8 GPUs
    job = Job(name="j", world_size=512, groups=(ProcessGroup("world", 512, "world"),))
    gpus = place_jobs([job], fab, "packed", np.random.default_rng(1), fragmentation=0.25)[0]
    nodes = gpus.reshape(64, 8) // 8
    assert (nodes == nodes[:, :1]).all()                              # ranks stay consecutive inside a node
    moved = int((nodes[:, 0] != np.arange(64)).sum())
    assert 0 < moved <= 16                                            # round(0.25 x 64) slots trade places
    assert sorted(nodes[:, 0].tolist()) == list(range(64))            # every node used once
    with pytest.raises(DesignError, match="scenario 'fragmented'"):
        place_jobs([job], fab, "scattered")
    with pytest.raises(Exception, match="fragmentation"):
        Scenario(fragmentation=1.5)


def test_old_scattered_designs_load_as_a_rule_with_a_warning(tmp_path):
    with pytest.warns(FutureWarning, match="'scattered' is a fragmented cluster.*scenario 'fragmented'"):
        d = design_from_dict({"gpus": 64, "placement": "scattered"})
    assert d.placement == "packed"
    f = tmp_path / "old.json"
    f.write_text(json.dumps({"name": "old", "gpus": 64, "placement": "scattered"}))
    with pytest.warns(FutureWarning):
        assert load_design(f).placement == "packed"
    with pytest.raises(DesignError, match="placement"):
        Design(placement="random")


def test_cli_evaluates_an_old_design_and_the_fragmented_scenario(tmp_path, capsys):
    wl, _ = _moe()
    from fabric.workload.model import dump_workload_json

    w = tmp_path / "moe.json"
    w.write_text(dump_workload_json(wl))
    f = tmp_path / "old.json"
    f.write_text(json.dumps({"name": "old", "gpus": 192, "gpus_per_node": 1, "oversubscription": [3], "tiers": 2,
                             "routing": "spray", "placement": "scattered"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["evaluate", "-w", str(w), "-d", str(f), "--samples", "32", "--json"]) == 0
    assert any("fragmented" in str(x.message) for x in caught)
    packed = json.loads(capsys.readouterr().out)["step_time_s"]["p99"]
    with pytest.warns(FutureWarning):
        assert main(["evaluate", "-w", str(w), "-d", str(f), "--samples", "32", "--json", "-s", "fragmented"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "fragmented" and out["step_time_s"]["p99"] > 2 * packed


# ------------------------------------------------------------------ the search never proposes "scattered"


def test_search_space_has_only_placement_rules():
    space = DesignSpace(Constraints(gpus=64))
    assert dict((g.name, g.choices) for g in space.genes)["placement"] == ("packed", "rail_aligned")
    wl, _ = _moe(64, 16)
    res = random_search(wl, Constraints(gpus=64, gpus_per_node=8), budget_evals=60, seed=1)
    assert {r["placement"] for r in res.records} <= {"packed", "rail_aligned"}
    with pytest.raises(ConstraintError, match="scenario 'fragmented'"):
        Constraints(placements=("scattered",))
    with pytest.warns(FutureWarning, match="left out"):
        assert Constraints(placements=("packed", "scattered")).placements == ("packed",)


# ------------------------------------------------------------------ one definition of free policy


def test_policy_and_hardware_partition_the_design_and_policy_costs_nothing():
    names = {f.name for f in fields(Design)} - {"name"}
    assert set(POLICY_FIELDS) | set(HARDWARE_FIELDS) == names and not set(POLICY_FIELDS) & set(HARDWARE_FIELDS)
    assert {"routing", "qps_per_connection", "placement", "pxn"} <= set(POLICY_FIELDS)
    assert {"oversubscription", "nic_model", "switch_model", "storage_isolation", "planes"} <= set(HARDWARE_FIELDS)
    # every free policy of a design buys the same bill of materials
    for d in (Design(gpus=256, oversubscription=(2.0,)), Design(gpus=256, family="rail_optimized"),
              Design(gpus=256, family="dragonfly")):
        cost = bill_of_materials(build_fabric(d)).cost_usd
        opts = policy_options(d)
        assert len(opts) == (24 if d.family == "rail_optimized" else 12)
        assert all(bill_of_materials(build_fabric(o)).cost_usd == cost for o in opts)


def test_advisor_search_and_front_read_the_same_definition():
    d = Design(gpus=256, family="rail_optimized", oversubscription=(2.0, 2.0))
    for _, kind, edit in candidate_changes(d):
        assert kind == (FREE if all(k in POLICY_FIELDS for k in edit) else HARDWARE)
    space = DesignSpace(Constraints(gpus=256))
    assert set(space.policy_genes) == {"routing", "qps_per_connection", "placement", "pxn"}
    assert "oversub_leaf" in space.hardware_genes and gene_kind("uplink_leaf_gbps") != POLICY
    assert edit_kind({"routing": "spray", "planes": 2}) != POLICY


def _shift(world: int, stride: int, size: int) -> Workload:
    g = ProcessGroup("pair", 2, "pp", rank_start=0, rank_stride=stride)
    return Workload(jobs=(Job(name="shift", world_size=world, groups=(g,), ops=(CommOp("send_recv", size, "pair"),)),))


def test_front_marks_a_baselines_hardware_with_a_better_policy_as_a_free_upgrade():
    # 64 one-GPU hosts on 2 leaves of 32 at 1:1: ranks 0-31 send 1 GiB to 32-63 over 32 uplinks. ECMP with one
    # hash per flow piles several flows on some uplinks; adaptive routing splits them evenly: the line rate
    wl = _shift(64, 32, GIB)
    ecmp = Design(name="fat tree", gpus=64, gpus_per_node=1, tiers=2, routing="ecmp")
    adaptive = ecmp.replace(name="adaptive fat tree", routing="adaptive")
    cons = Constraints(gpus=64, gpus_per_node=1)
    recs = [evaluate_record(x, wl, Scenario(), 0, 64, None, cons) for x in (ecmp, adaptive)]
    base = dict(recs[0], design="baseline: fat tree", feasible=True)
    front = [dict(recs[1], feasible=True)]
    res = SearchResult(records=front, baselines=[base], front=front, hv_history=[], reference_point=[],
                       normalisation=[], evaluations=2, elapsed_s=0.0, generations=0, stopped_because="", seed=0)
    ff = res.front_frame()
    assert ff.loc[0, "free_upgrade_of"] == "baseline: fat tree" and ff.loc[0, "policy"] == "adaptive packed"
    assert front[0]["cost_usd"] == base["cost_usd"]
    assert front[0]["p99_s"] == pytest.approx(GIB / LINK_BPS, rel=0.10)
    up = res.summary()["free_upgrades"][0]
    assert up["changes"] == ["routing ecmp -> adaptive"] and up["speedup"] > 2.0
    line = [x for x in res.summary_lines() if "free policy change" in x][0]
    assert "hardware of 'baseline: fat tree'" in line and "at the same cost" in line
    # another hardware (2:1 leaves) is no free upgrade of the 1:1 baseline
    other = dict(front[0], oversub_leaf=2.0)
    res.front = [other]
    assert res.front_frame().loc[0, "free_upgrade_of"] == ""


# ------------------------------------------------------------------ compare: what free policy gives, what money buys


def _ev(workload):
    cache = {}

    def run(design):
        key = json.dumps(design.__dict__, sort_keys=True, default=str)
        if key not in cache:
            cache[key] = evaluate(design, workload, samples=64)
        return cache[key]
    return run


def test_money_split_same_hardware_other_routing_is_all_free_policy():
    wl = _shift(64, 32, GIB)
    ecmp = Design(name="ecmp", gpus=64, gpus_per_node=1, tiers=2, routing="ecmp")
    ev = _ev(wl)
    (s,) = money_split({"ecmp": ecmp, "adaptive": ecmp.replace(name="adaptive", routing="adaptive")}, ev)
    assert s["hardware_changes"] == [] and s["policy_changes"] == ["routing ecmp -> adaptive"]
    assert s["delta_cost_usd"] == 0 and s["hardware_delta_p99_s"] == 0.0
    assert s["free_delta_p99_s"] == s["delta_p99_s"]
    # ECMP collisions (a bad launch puts 3+ flows on an uplink) down to the line rate: all of it for free
    assert ev(ecmp).step_time_s["p99"] > 2 * GIB / LINK_BPS
    assert ev(ecmp).step_time_s["p99"] + s["free_delta_p99_s"] == pytest.approx(GIB / LINK_BPS, rel=0.10)
    assert "all of the difference is free policy" in s["sentences"][1] and "at no cost" in s["sentences"][0]
    # the best free policy on the ECMP fabric's hardware reaches the line rate too (adaptive or spraying)
    best = best_free_policy(ecmp, ev)
    assert best["p99_s"] == pytest.approx(GIB / LINK_BPS, rel=0.10) and best["changes"]


def test_money_split_other_oversubscription_same_policy_is_all_hardware():
    # all-to-all of 4 GiB per rank over 128 one-GPU hosts, spraying. 3:1 leaves (48 down, 16 up): each leaf's 48
    # hosts send 80/128 of their bytes to other leaves over 16 uplinks, 1.875 S/B; at 1.5:1 (38 down, 26 up)
    # 38 x 90/128 / 26 = 1.03 S/B
    world = 128
    g = ProcessGroup("world", world, "world")
    wl = Workload(jobs=(Job(name="a2a", world_size=world, groups=(g,),
                            ops=(CommOp("all_to_all", 4 * GIB, "world"),)),))
    lean = Design(name="3:1", gpus=world, gpus_per_node=1, oversubscription=(3.0,), routing="spray")
    rich = lean.replace(name="1.5:1", oversubscription=(1.5,))
    ev = _ev(wl)
    (s,) = money_split({"3:1": lean, "1.5:1": rich}, ev)
    assert s["policy_changes"] == [] and s["free_delta_p99_s"] == 0.0
    assert s["hardware_changes"] == ["leaf oversubscription 3:1 -> 1.5:1"]
    t_lean, t_rich = 48 * 80 / 128 / 16 * 4 * GIB / LINK_BPS, 38 * 90 / 128 / 26 * 4 * GIB / LINK_BPS
    assert ev(lean).step_time_s["p99"] == pytest.approx(t_lean, rel=0.05)
    assert s["hardware_delta_p99_s"] == pytest.approx(t_rich - t_lean, rel=0.10)
    assert s["delta_cost_usd"] > 0
    assert s["usd_per_ms_hardware"] == pytest.approx(s["delta_cost_usd"] / (-s["hardware_delta_p99_s"] * 1e3))
    assert "free policy: '1.5:1' runs the policy of '3:1'" in s["sentences"][0]
    assert "per ms of p99" in s["sentences"][1] and "on the same policy" in s["sentences"][1]


def test_money_split_adds_up_when_both_change():
    wl = _shift(64, 32, GIB)
    ref = Design(name="ecmp 2:1", gpus=64, gpus_per_node=1, tiers=2, routing="ecmp", oversubscription=(2.0,))
    other = ref.replace(name="adaptive 1:1", routing="adaptive", oversubscription=(1.0,))
    ev = _ev(wl)
    (s,) = money_split({"a": ref, "b": other}, ev)
    assert s["free_delta_p99_s"] + s["hardware_delta_p99_s"] == pytest.approx(s["delta_p99_s"], abs=1e-12)
    mid = with_policy(ref, other)
    assert mid.routing == "adaptive" and mid.oversubscription == ref.oversubscription
    assert s["free_delta_p99_s"] == pytest.approx(ev(mid).step_time_s["p99"] - ev(ref).step_time_s["p99"])


def test_a_search_state_saved_with_scattered_designs_resumes_without_them(tmp_path):
    from fabric.search.run import run_search

    wl, _ = _moe(64, 16)
    cons = Constraints(gpus=64, families=("clos",), nics_per_gpu=(1.0,))
    state = tmp_path / "state.json"
    run_search(wl, cons, budget_evals=40, pop_size=12, seed=3, samples=32, state_path=state)
    saved = json.loads(state.read_text())
    # what an earlier release saved: a third placement choice ("scattered", index 2) and its records
    i = DesignSpace(cons).names.index("placement")
    saved["pop_X"][0][i] = 2
    saved["records"].append(dict(saved["records"][0], key="old-scattered", placement="scattered"))
    state.write_text(json.dumps(saved))
    res = run_search(wl, cons, budget_evals=60, pop_size=12, seed=3, samples=32, state_path=state)
    assert {r["placement"] for r in res.records} <= {"packed", "rail_aligned"}
    assert all(r["key"] != "old-scattered" for r in res.records)
