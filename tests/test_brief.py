"""The review brief: every figure is the one the other modules compute for the designs it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.review.brief import brief_sections, review_brief
from fabric.cost.economics import economics
from fabric.evaluate import evaluate
from fabric.search import Constraints, run_search
from fabric.search.recommend import recommend
from fabric.search.designs import design_from_record
from fabric.workload.model import load_workload_json

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def searched():
    wl = load_workload_json((ROOT / "sample_traces" / "mixtral-8x7b.json").read_text())
    c = Constraints(gpus=256)
    return wl, c, run_search(wl, c, budget_evals=120, seed=0, samples=64)


def test_brief_names_the_recommended_design_and_its_runner_up(searched):
    wl, c, res = searched
    from fabric.review import prepare_context

    b = review_brief(res.front, res.baselines, prepare_context(wl, c, samples=64))
    rec = recommend(res.front, res.baselines).record
    assert b["design"] == rec["design"] and b["rule"] == recommend(res.front, res.baselines).rule
    d = design_from_record(rec, gpus=256)
    ev = evaluate(d, wl, samples=64)
    assert b["p99_s"] == pytest.approx(ev.step_time_s["p99"]) and b["cost_usd"] == pytest.approx(ev.cost_usd)
    ru = b["runner_up"]
    other = next(r for r in res.front if r["design"] == ru["design"])
    assert ru["delta_cost_usd"] == pytest.approx(other["cost_usd"] - rec["cost_usd"])
    if ru["relation"] == "cheaper":                       # the cheaper neighbour on the front, when there is one
        assert ru["delta_cost_usd"] < 0
        assert not any(rec["cost_usd"] > r["cost_usd"] > other["cost_usd"] for r in res.front)
    assert b["economics"]["usd_per_step"] == pytest.approx(economics(ev, d)["usd_per_step"])
    assert [w["scenario"] for w in b["what_ifs"]] == ["fail-spine", "slow-switch", "checkpoint-burst",
                                                      "job-mix-shift"]
    heads = [h for h, _ in brief_sections(b)]
    assert heads[:9] == ["The design to buy", "Against the baselines", "Constraints", "Bill of materials",
                         "The runner-up", "Resilience", "What if", "Cheapest fixes", "Cost per step"]
    text = " ".join(line for _, lines in brief_sections(b) for line in lines)
    assert f"Buy '{b['design']}'" in text and "per p99 step" in text
