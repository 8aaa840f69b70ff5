"""Pareto local search (fabric.search.local), checked against the exhaustive ground truth of a small space."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.search import Constraints, DesignSpace, exhaustive_search, pareto_mask
from fabric.search.local import one_gene_neighbours, pareto_local_search
from test_search import SMALL, _workload      # the small MoE space test_search.py checks the GA on


@pytest.fixture(scope="module")
def truth():
    """Every design of the space, keyed by its canonical genome."""
    ex = exhaustive_search(_workload(), Constraints(**SMALL), samples=64)
    return ex, {tuple(r["genome"]): r for r in ex.records if r.get("genome") is not None}


def _points(recs):
    return np.array([[r["cost_usd"], r["p99_s"]] for r in recs])


def test_neighbours_are_the_designs_one_decision_away(truth):
    ex, by_genome = truth
    space = DesignSpace(Constraints(**SMALL), None, _workload())
    x = np.array(ex.front[0]["genome"])
    got = {tuple(y.tolist()) for y in one_gene_neighbours(space, x)}
    # independently: every enumerated design whose genome differs from x's in exactly one gene is a neighbour
    hamming_one = {g for g in by_genome if sum(a != b for a, b in zip(g, x.tolist())) == 1}
    assert hamming_one and hamming_one <= got
    assert tuple(x.tolist()) not in got
    assert got <= set(by_genome)             # every neighbour is a canonical design of the space


def test_the_exact_front_is_one_opt_at_once(truth):
    ex, _ = truth
    res = pareto_local_search(_workload(), Constraints(**SMALL), [r["genome"] for r in ex.front], samples=64)
    assert res.stopped_because.startswith("1-opt")
    assert res.generations == 1                                   # one round of neighbours, nothing new
    assert sorted(r["key"] for r in res.front) == sorted(r["key"] for r in ex.front)


def test_from_a_poor_design_the_result_is_one_opt_by_the_ground_truth(truth):
    ex, by_genome = truth
    # a design its genome describes whole (a baseline drawn with a fixed number of tiers is not: its genome builds
    # the one-switch design, which does not survive a single failure)
    feas = [r for r in ex.records if r["feasible"] and r.get("genome") is not None and not r.get("design_tiers")]
    worst = max(feas, key=lambda r: (r["cost_usd"], r["p99_s"]))          # the most expensive design
    res = pareto_local_search(_workload(), Constraints(**SMALL), [worst["genome"]], samples=64)
    assert res.stopped_because.startswith("1-opt")
    assert res.generations >= 2 and res.evaluations < ex.evaluations
    # checked with the exhaustive records, not the search's: no one-gene neighbour of a front design joins the front
    front = res.front
    space = DesignSpace(Constraints(**SMALL), None, _workload())
    for rec in front:
        for y in one_gene_neighbours(space, rec["genome"]):
            other = by_genome[tuple(y.tolist())]
            if not other["feasible"]:
                continue
            pts = _points(front + [other])
            assert not pareto_mask(pts)[-1] or any(
                np.allclose(pts[-1], p) for p in pts[:-1]), f"{other['key']} would join the front"
    # and the local search's front lies on or above the exact one (it can only be as good)
    exact = _points(ex.front)
    for p in _points(front):
        assert any(np.all(q <= p + 1e-12) for q in exact)


def test_bad_round_limit_is_refused():
    with pytest.raises(ValueError, match="max_rounds"):
        pareto_local_search(_workload(), Constraints(**SMALL), [], max_rounds=0)
