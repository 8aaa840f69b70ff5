"""Staged growth (fabric/brownfield/growth.py): 1,024 -> 4,096 -> 16,384 GPUs without throwing away what was
bought, against designing each stage from scratch. Checked against counts taken from each design's own bill of
materials and against identities that hold whatever the prices (a plan that discards nothing buys exactly its
last stage's fabric)."""

from __future__ import annotations

import pytest

from fabric.brownfield.growth import Candidate, GrowthStage, _shortest, parse_stages, plan_growth
from fabric.brownfield.inventory import Inventory
from fabric.cost import bill_of_materials
from fabric.errors import FabricError
from fabric.evaluate import Scenario, evaluate
from fabric.topology import build_fabric
from fabric.workload.scale import scale_to

STAGES = (1024, 4096, 16384)


@pytest.fixture(scope="module")
def growth():
    from fabric.cli.common import load_workload_files

    w = load_workload_files(["sample_traces/mixtral-8x7b.json"])
    stages = [GrowthStage(g, scale_to(w, g)) for g in STAGES]
    return stages, plan_growth(stages, samples=64)


def _switches(design):
    out = {}
    for i in bill_of_materials(build_fabric(design)).items:
        if i.category == "switch":
            out[i.model] = out.get(i.model, 0) + i.count
    return out


def test_stage_one_switches_are_all_in_use_at_stage_three(growth):
    _, plan = growth
    first, last = _switches(plan.plan[0].design), _switches(plan.plan[-1].design)
    assert first
    for model, n in first.items():
        assert last.get(model, 0) >= n, model                # every stage-1 switch still has a place
    # and in every stage between, in the same tier (leaves stay leaves, spines stay spines)
    assert plan.roles_kept()
    for a, b in zip(plan.plan, plan.plan[1:]):
        ca, cb = build_fabric(a.design).switch_counts(), build_fabric(b.design).switch_counts()
        assert all(cb.get(t, 0) >= n for t, n in ca.items()), (ca, cb)
    assert plan.discarded_usd == 0 and not any(plan.discarded)
    assert plan.first_stage_switches_in_use() == {m: [n, n] for m, n in first.items()}


def test_plan_total_against_three_from_scratch_designs(growth):
    _, plan = growth
    # nothing is taken out, so the purchases telescope: the plan buys exactly its last stage's fabric
    assert plan.total_usd == pytest.approx(bill_of_materials(build_fabric(plan.plan[-1].design)).cost_usd)
    # three from-scratch designs, each bought new
    scratch = sum(bill_of_materials(build_fabric(c.design)).cost_usd for c in plan.scratch)
    assert plan.scratch_total_usd == pytest.approx(scratch)
    assert plan.total_usd < scratch
    # the last stage's from-scratch design is the cheapest that meets its target: the plan can cost no less
    assert plan.total_usd >= plan.scratch[-1].cost_usd - 1e-6
    assert plan.scratch_grown_usd >= plan.total_usd - 1e-6
    d = plan.to_dict()
    assert d["saving_usd"] == pytest.approx(scratch - plan.total_usd) and len(d["stages"]) == 3
    assert "nothing bought is taken out" in plan.answer


def test_every_stage_meets_its_target(growth):
    stages, plan = growth
    for st, c, target in zip(stages, plan.plan, plan.targets_s):
        p99 = evaluate(c.design, st.workload, Scenario(), seed=0, samples=64).step_time_s["p99"]
        assert p99 <= target * (1 + 1e-9)
        assert c.design.gpus == st.gpus


def _cand(name, switches, cost):
    inv = Inventory({("switch", "A"): switches}, {("switch", "A"): 1.0}, {})
    return Candidate(name, inv, {"leaf": switches}, {("leaf", "A"): switches}, cost, 1.0, True)


def test_shortest_plan_by_hand():
    # stage 1: 4 switches ($4) or 2 ($2); stage 2: 3 switches ($3) or 6 ($6)
    s1 = [_cand("a4", 4, 4.0), _cand("a2", 2, 2.0)]
    s2 = [_cand("b3", 3, 3.0), _cand("b6", 6, 6.0)]
    # a2 -> b3 buys 2 + 1 = 3 and takes nothing out; a4 -> b3 would take one switch out
    plan, allowed = _shortest([s1, s2], False)
    assert [c.design for c in plan] == ["a2", "b3"] and not allowed
    # with only 4 -> 3 possible, no plan keeps every switch; allowing it gives that one
    assert _shortest([[s1[0]], [s2[0]]], False)[0] is None
    assert [c.design for c in _shortest([[s1[0]], [s2[0]]], True)[0]] == ["a4", "b3"]
    # equal totals: the plan that spends later wins (a2 -> b6 and a4 -> b6 both buy 6)
    assert [c.design for c in _shortest([s1, [s2[1]]], False)[0]] == ["a2", "b6"]


def test_parse_stages_errors():
    assert parse_stages("1024, 4096,16_384") == [1024, 4096, 16384]
    with pytest.raises(FabricError, match="more GPUs than the one before"):
        parse_stages("4096,1024")
    with pytest.raises(FabricError, match="GPU counts separated by commas"):
        parse_stages("1k,4k")
    with pytest.raises(FabricError, match="give 2 to"):
        parse_stages("1024")


# ------------------------------------------------------------------------------------------------ targets


@pytest.fixture(scope="module")
def mixtral():
    from fabric.cli.common import load_workload_files

    return load_workload_files(["sample_traces/mixtral-8x7b.json"])


def test_default_target_is_the_full_bisection_fabric_even_for_an_oversubscribed_base(mixtral):
    from fabric.reference.presets import preset_design

    base = preset_design("fat-tree", 1024).replace(oversubscription=(2.0, 1.0), name="2:1 base")
    stages = [GrowthStage(g, scale_to(mixtral, g)) for g in (1024, 4096)]
    plan = plan_growth(stages, base, samples=32)
    for st, target, src in zip(stages, plan.targets_s, plan.target_from):
        full = float(evaluate(preset_design("fat-tree", st.gpus), st.workload, Scenario(), seed=0,
                              samples=32).step_time_s["p99"])
        own = float(evaluate(base.replace(gpus=st.gpus, tiers=None, spines=None), st.workload, Scenario(), seed=0,
                             samples=32).step_time_s["p99"])
        assert target == pytest.approx(full * 1.02)            # the 1:1 fabric's p99 + 2 %, not the base's own
        assert own > target                                     # the 2:1 base itself does not qualify
        assert src.startswith("full-bisection clos on ib-ndr-64x400")
    assert plan.notes[0].startswith("no p99 target given for stage(s) 1, 2")
    assert plan.to_dict()["stages"][0]["p99_target_from"] == plan.target_from[0]
    given = plan_growth([GrowthStage(g, scale_to(mixtral, g), 10.0) for g in (1024, 4096)], base, samples=32)
    assert given.target_from == ["given", "given"] and not any("no p99 target" in n for n in given.notes)


def test_a_tighter_target_changes_the_plan(mixtral):
    stages = [GrowthStage(g, scale_to(mixtral, g)) for g in (1024, 4096)]
    loose = plan_growth(stages, samples=32)
    # a stage-2 target just under the default plan's stage-2 p99: that fabric no longer qualifies. (Stage 2, not
    # stage 1: since NCCL's channels count as flows (issue 28) the default plan's stage-1 fabric is among the
    # fastest there, tied with the other 1:1 and 2:1 XDR fabrics, so no target under it can be met.)
    second = loose.plan[1]
    tight_target = second.p99_s * (1 - 1e-6)
    tight = plan_growth([GrowthStage(1024, stages[0].workload, loose.targets_s[0]),
                         GrowthStage(4096, stages[1].workload, tight_target)], samples=32)
    assert tight.plan[1].design != second.design
    assert tight.plan[1].p99_s <= tight_target
    # the qualifying set shrank, so the cheapest plan can only cost as much or more
    assert tight.total_usd >= loose.total_usd - 1e-6
    assert len(tight.candidates[1]) < len(loose.candidates[1])


def test_candidate_counts_say_how_many_miss_the_target(mixtral):
    # the counts per stage are of every candidate evaluated, not only those that qualify
    from fabric.brownfield.growth import stage_candidates
    from fabric.reference.presets import preset_design

    base = preset_design("fat-tree", 1024)
    stages = [GrowthStage(g, scale_to(mixtral, g)) for g in (1024, 4096)]
    plan = plan_growth(stages, samples=32)
    for st, row, target in zip(stages, plan.to_dict()["stages"], plan.targets_s):
        cs = stage_candidates(base, st.gpus)
        p99 = [float(evaluate(c.design, st.workload, Scenario(), seed=0, samples=32).step_time_s["p99"]) for c in cs]
        assert row["candidates"] == len(cs)
        assert row["candidates_meeting_target"] == sum(p <= target * (1 + 1e-9) for p in p99)
    # the 2:1 fabrics on 64 x 400G NDR switches are over 2 % slower than the 1:1 one at 1,024 GPUs here
    assert plan.to_dict()["stages"][0]["candidates_meeting_target"] < plan.to_dict()["stages"][0]["candidates"]
