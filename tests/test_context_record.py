"""One record per design in context (issue 34): the context is a value, a record made in it equals the search's
record of the design, robust figures are robust only, and every part of the context makes a new record."""

from __future__ import annotations

import pytest

from fabric.evaluate import SCENARIO_PRESETS, Scenario, evaluate
from fabric.review import compose_scenarios, design_record, prepare_context
from fabric.search import Constraints, DesignSpace, run_search
from fabric.search.baselines import baseline_designs
from fabric.search.robust import RobustObjective, on_front_for_case, robust_combine
from fabric.search.designs import design_from_record
from fabric.workload.presets import preset_workload

C = Constraints(gpus=256)

@pytest.fixture(scope="module")
def mix():
    return preset_workload("mixtral-8x7b", 256), preset_workload("llama3-70b-online", 256)

def test_robust_combine_is_the_rule_by_hand():
    wl = preset_workload("mixtral-8x7b", 64)
    obj = RobustObjective((("a", wl, 1.0), ("b", wl, 3.0)), mode="mean", references={"a|baseline": 2.0,
                                                                                        "b|baseline": 4.0})
    # slowdowns 3/2 and 6/4 = 1.5 both; weights 1/4, 3/4; scale 1/4 * 2 + 3/4 * 4 = 3.5 s
    p, slow = robust_combine(obj, {"a|baseline": 3.0, "b|baseline": 6.0})
    assert slow == pytest.approx(1.5) and p == pytest.approx(5.25)
    worst = RobustObjective(obj.workloads, mode="worst", references=obj.references)
    # slowdowns 2.5/2 = 1.25 and 6/4 = 1.5: the worst is 1.5
    assert robust_combine(worst, {"a|baseline": 2.5, "b|baseline": 6.0}) == (pytest.approx(5.25), 1.5)
    with pytest.raises(Exception, match="cases are"):
        robust_combine(worst, {"a|baseline": 2.5})

def test_compose_scenarios_lays_a_what_if_over_a_case():
    over = compose_scenarios(SCENARIO_PRESETS["checkpoint-burst"], SCENARIO_PRESETS["fail-spine"])
    assert over.failed_spines == 1 and over.checkpoint_bytes == 2e12 and over.name == "checkpoint-burst+fail-spine"
    assert compose_scenarios(Scenario(), SCENARIO_PRESETS["fail-spine"]) == SCENARIO_PRESETS["fail-spine"]
    assert compose_scenarios(SCENARIO_PRESETS["fail-link"], Scenario()) == SCENARIO_PRESETS["fail-link"]

def test_every_part_of_the_context_makes_another_key(mix):
    a, b = mix
    base = prepare_context(a, C, samples=32)
    keys = {base.key,
            prepare_context(a, C, samples=64).key,
            prepare_context(a, C, samples=32, seed=1).key,
            prepare_context(a, C, samples=32, scenario=SCENARIO_PRESETS["fail-spine"]).key,
            prepare_context(a, C, samples=32, catalog_key="edited").key,
            prepare_context(a, C, samples=32, transport_overrides={"efficiency": 0.9}).key,
            prepare_context(a, Constraints(gpus=256, gpu_model="b200"), samples=32).key,
            prepare_context(RobustObjective((("a", a, 1.0), ("b", b, 1.0))), C, samples=32).key,
            prepare_context(RobustObjective((("a", a, 1.0), ("b", b, 2.0))), C, samples=32).key,
            base.under(SCENARIO_PRESETS["fail-spine"]).key}
    assert len(keys) == 10
    assert prepare_context(a, C, samples=32).key == base.key          # and the same inputs the same key
    line = base.describe()
    assert "at its own plan" in line and "256 h100-sxm GPUs" in line and "seed 0, 32 samples" in line

def test_a_record_is_the_searchs_record_in_each_kind_of_context(mix):
    """The record of a design in a search's context equals the search's own record of it, field by field (made
    again, not copied), in a single, a robust and a plan context."""
    from fabric.ui_support.plans_view import plan_objective

    a, b = mix
    for objective in (a, RobustObjective((("mixtral", a, 1.0), ("online", b, 1.0)), mode="worst"),
                      plan_objective(a)):
        res = run_search(objective, C, budget_evals=30, seed=0, samples=32)
        ctx = prepare_context(objective, C, samples=32)
        for row in res.front[:2] + res.baselines[:1]:
            if not row.get("buildable", True):
                continue
            rec = design_record(design_from_record(row, gpus=256), ctx)
            for k in ("cost_usd", "p99_s", "power_w", "usd_per_step", "max_rack_power_w", "it_power_w",
                      "facility_power_w", "p99_by_case", "p50_by_case", "plan", "serving_tpot_p99_s"):
                assert rec.row.get(k) == row.get(k), (ctx.kind, k)
            if ctx.kind == "robust":
                assert rec.figures["robust_p99_s"] == row["p99_s"] and rec.figures["p50_s"] is None
                assert "p50_s" not in row and set(row["p50_by_case"]) == set(row["p99_by_case"])
                for c in rec.cases:       # each case's figures: that case's own evaluation
                    assert c.figures["p99_s"] == row["p99_by_case"][c.name]
            else:
                assert rec.figures["p99_s"] == row["p99_s"] == rec.evaluation.step_time_s["p99"]

def test_a_robust_what_if_and_failure_combine_like_the_record(mix):
    a, b = mix
    obj = RobustObjective((("mixtral", a, 1.0), ("online", b, 1.0)), mode="worst")
    ctx = prepare_context(obj, C, samples=32)
    d = baseline_designs(DesignSpace(C, ctx.catalog))[1]              # the fat tree 2:1 (it has spines to fail)
    rec = design_record(d, ctx)
    w = rec.what_if(SCENARIO_PRESETS["fail-spine"])
    by_hand = {}
    for name, wl, sc, _ in obj.cases:
        by_hand[name] = evaluate(d, wl, SCENARIO_PRESETS["fail-spine"], seed=0, samples=32,
                                 catalog=ctx.catalog).step_time_s["p99"]
    assert w["cases"] == pytest.approx(by_hand, rel=1e-12)
    assert w["p99_s"] == pytest.approx(robust_combine(ctx.objective, by_hand)[0], rel=1e-12)
    assert w["change"] == pytest.approx(w["p99_s"] / rec.p99_s - 1)
    assert set(w["serving"]) == {"online|baseline: llama3-70b-online"}

def test_fixes_are_judged_in_the_context(mix):
    """In a robust context the best free policy is the one with the lowest robust p99 over the mix (checked by
    evaluating every free policy's robust record), not the first workload's."""
    from fabric.design.policy import policy_options
    from fabric.search.records import evaluate_record

    a, b = mix
    obj = RobustObjective((("mixtral", a, 1.0), ("online", b, 1.0)), mode="worst")
    ctx = prepare_context(obj, C, samples=32)
    d = baseline_designs(DesignSpace(C, ctx.catalog))[1]
    best = design_record(d, ctx).best_free_fix
    p99s = [evaluate_record(x, ctx.objective, Scenario(), 0, 32, ctx.catalog, C)["p99_s"] for x in policy_options(d)]
    assert best["p99_s"] == pytest.approx(min(p99s), rel=1e-12)

def test_a_tie_on_cost_and_p99_counts_as_on_the_robust_front():
    own = {"key": "x", "cost_usd": 10.0, "p99_by_case": {"c": 1.0}}
    twin = {"key": "y", "cost_usd": 10.0, "p99_by_case": {"c": 1.0, "d": 2.0}}
    other = {"key": "z", "cost_usd": 10.0, "p99_by_case": {"c": 1.1}}
    assert on_front_for_case(own, [twin], "c") and not on_front_for_case(own, [other], "c")
    assert on_front_for_case(own, [own], "c")
