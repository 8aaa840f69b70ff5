"""The neighbourhood check of the recommendation (fabric.search.neighbourhood): on a hand-built front whose
recommended design a one-gene neighbour dominates, and on the exhaustive ground truth of a small space."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.search import Constraints, DesignSpace, exhaustive_search, pareto_mask, run_search
from fabric.search.neighbourhood import check_recommendation, dominates, one_gene_neighbours, polish_front
from fabric.search.recommend import recommend
from fabric.search.run import _feasible_front
from test_search import SMALL, _workload      # the small MoE space test_search.py checks the GA on

BASELINE = {"design": "baseline: hand-made", "cost_usd": 100.0, "p99_s": 5.0, "feasible": True, "buildable": True}


class HandMadeSession:
    """A search session over the real small design space whose records are made by hand: ``table`` gives the
    (cost, p99, feasible) of chosen genomes, every other design costs 60 at p99 4.5 (feasible)."""

    def __init__(self, space, table):
        self.space, self.table, self.records = space, table, {}

    @property
    def evaluations(self) -> int:
        return len(self.records)

    def evaluate_genomes(self, X) -> list[dict]:
        out = []
        for x in X:
            g = tuple(int(v) for v in self.space.repair(np.asarray(x, dtype=np.int64)))
            cost, p99, feasible = self.table.get(g, (60.0, 4.5, True))
            rec = {"key": "k" + "".join(map(str, g)), "genome": list(g), "design": f"design {g}", "cost_usd": cost,
                   "p99_s": p99, "feasible": feasible, "buildable": True}
            out.append(self.records.setdefault(rec["key"], rec))
        return out

    def front(self) -> list[dict]:
        return _feasible_front(list(self.records.values()), 2)


def _pick(front):
    return recommend(front, [BASELINE]).record


def _one_change(space, genome, gene: str, choice: int):
    y = np.array(genome, dtype=np.int64)
    y[space.names.index(gene)] = choice
    y = space.repair(y)
    assert sum(a != b for a, b in zip(y, genome)) == 1, f"changing {gene} should change one gene"
    return tuple(int(v) for v in y)


@pytest.fixture(scope="module")
def space():
    return DesignSpace(Constraints(**SMALL), None, _workload())


@pytest.fixture()
def chain(space):
    """R (the recommended design), N1 one gene from R dominating it, N2 one gene from N1 dominating N1 (two genes
    from R), and a neighbour of R that would dominate everything but is infeasible."""
    r = tuple(int(v) for v in space.repair(np.zeros(space.n_var, dtype=np.int64)))
    n1 = _one_change(space, r, "oversub_leaf", 1)
    n2 = _one_change(space, n1, "oversub_spine", 1)
    bad = _one_change(space, r, "routing", 1)
    return r, n1, n2, bad, {r: (50.0, 4.0, True), n1: (50.0, 3.0, True), n2: (40.0, 3.0, True),
                            bad: (1.0, 0.1, False)}


def test_dominates_needs_feasible_no_worse_and_one_strict():
    a = {"feasible": True, "cost_usd": 1.0, "p99_s": 2.0}
    assert dominates(a, {"cost_usd": 1.0, "p99_s": 3.0}) and dominates(a, {"cost_usd": 2.0, "p99_s": 2.0})
    assert not dominates(a, {"cost_usd": 1.0, "p99_s": 2.0})           # equal: a tie, not a domination
    assert not dominates(a, {"cost_usd": 0.5, "p99_s": 3.0})           # a trade-off
    assert not dominates({**a, "feasible": False}, {"cost_usd": 9.0, "p99_s": 9.0})


def test_a_dominating_neighbour_moves_the_recommendation_until_none_dominates(space, chain):
    r, n1, n2, bad, table = chain
    session = HandMadeSession(space, table)
    session.evaluate_genomes([r])
    assert _pick(session.front())["genome"] == list(r)
    check = check_recommendation(session, session.front, _pick)
    final = _pick(session.front())
    assert final["genome"] == list(n2)                     # R -> N1 (one gene) -> N2 (one gene from N1)
    assert [m["to"] for m in check.moves] == [f"design {n1}", f"design {n2}"]
    assert check.rounds == 3 and check.local_optimum       # N2's neighbourhood was evaluated: nothing beats it
    assert check.recommended == final["design"]
    # every one-gene change of R, N1 and N2 was evaluated, and counted
    expected = {r} | {tuple(map(int, y)) for g in (r, n1, n2) for y in one_gene_neighbours(space, g)}
    assert {tuple(x["genome"]) for x in session.records.values()} == expected
    assert check.evaluated == len(expected) - 1 and check.checked >= check.evaluated
    # the infeasible neighbour that would have dominated everything was evaluated and did not move it
    assert session.records["k" + "".join(map(str, bad))]["feasible"] is False
    assert "moved from" in check.sentence() and "no one-gene change" in check.sentence()


def test_the_round_limit_bounds_the_check_and_says_it_did_not_settle(space, chain):
    r, n1, _, _, table = chain
    session = HandMadeSession(space, table)
    session.evaluate_genomes([r])
    check = check_recommendation(session, session.front, _pick, max_rounds=1)
    assert check.rounds == 1 and not check.local_optimum
    assert _pick(session.front())["genome"] == list(n1)    # moved once, N1's neighbourhood not yet looked at
    assert "round limit" in check.sentence()
    with pytest.raises(ValueError, match="max_rounds"):
        check_recommendation(session, session.front, _pick, max_rounds=0)


def test_a_recommendation_no_neighbour_dominates_stays_after_one_round(space, chain):
    r, _, _, _, _ = chain
    session = HandMadeSession(space, {r: (10.0, 1.0, True)})
    session.evaluate_genomes([r])
    check = check_recommendation(session, session.front, _pick)
    assert check.rounds == 1 and check.local_optimum and not check.moves
    assert _pick(session.front())["genome"] == list(r)


def test_nothing_to_check_on_an_empty_front(space):
    session = HandMadeSession(space, {})
    check = check_recommendation(session, session.front, _pick)
    assert check.rounds == 0 and check.evaluated == 0 and not check.local_optimum and check.sentence() == ""


def test_a_converged_search_polishes_its_whole_front_first(space, chain):
    """The recommendation (cheap F1) has no dominating neighbour, but a neighbour of another front design (F2)
    joins the front: only the front's polish finds it, and it goes on from the new front design until none is
    left unexpanded (1-opt)."""
    r, n1, n2, _, _ = chain
    f1, f2, joins = r, n1, n2               # n2 is one gene from n1
    table = {f1: (10.0, 5.0, True), f2: (50.0, 1.0, True), joins: (30.0, 2.0, True)}
    session = HandMadeSession(space, table)
    session.evaluate_genomes([f1, f2])
    check = check_recommendation(session, session.front, _pick)               # the recommendation only
    assert not any(x["genome"] == list(joins) for x in session.front())
    session = HandMadeSession(space, table)
    session.evaluate_genomes([f1, f2])
    check = check_recommendation(session, session.front, _pick, front_evaluations=1000)
    assert {tuple(x["genome"]) for x in session.front()} == {f1, joins, f2}
    assert check.front_one_opt and check.front_rounds == 2                    # F1 and F2, then the new one
    assert check.evaluated == check.front_evaluated == session.evaluations - 2   # the recommendation's were known
    assert check.local_optimum and check.rounds == 1 and _pick(session.front())["genome"] == list(f1)
    assert "(1-opt)" in check.sentence()
    capped = HandMadeSession(space, table)
    capped.evaluate_genomes([f1, f2])
    out = polish_front(capped, capped.front, max_evaluations=1)              # one round, then the cap
    assert out.front_rounds == 1 and out.front_one_opt is False
    assert "evaluation cap" in out.sentence()


@pytest.fixture(scope="module")
def truth():
    ex = exhaustive_search(_workload(), Constraints(**SMALL), samples=64)
    return {tuple(r["genome"]): r for r in ex.records if r.get("genome") is not None}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_search_ends_on_a_recommendation_no_neighbour_dominates(truth, space, seed):
    """Checked with the exhaustive records, not the search's: at a budget far from convergence the search still
    recommends a design none of its one-gene changes dominates, and says how many it evaluated."""
    res = run_search(_workload(), Constraints(**SMALL), budget_evals=24, seed=seed, pop_size=16, samples=64,
                     eval_seed=0)          # the exhaustive run's Monte Carlo seed: the same objectives
    rec = recommend(res.front, res.baselines).record
    for y in one_gene_neighbours(space, rec["genome"]):
        assert not dominates(truth[tuple(int(v) for v in y)], rec)
    nb = res.neighbourhood
    assert nb["local_optimum"] and nb["rounds"] >= 1 and nb["recommended"] == rec["design"]
    assert 0 <= nb["evaluated"] <= nb["checked"]
    assert res.summary()["neighbourhood_check"] == nb
    assert any(line.startswith("Neighbourhood check of the recommendation") for line in res.summary_lines())


def test_the_check_can_be_left_out_and_a_cancelled_search_skips_it():
    import threading

    off = run_search(_workload(), Constraints(**SMALL), budget_evals=24, seed=0, pop_size=16, samples=64,
                     check_neighbourhood=False)
    assert off.neighbourhood == {}
    stop = threading.Event()
    stop.set()
    cancelled = run_search(_workload(), Constraints(**SMALL), budget_evals=24, seed=0, pop_size=16, samples=64,
                           cancel=stop)
    assert cancelled.stopped_because == "cancelled" and cancelled.neighbourhood == {}


def test_a_converged_search_ends_on_a_one_opt_front_by_the_ground_truth(truth, space):
    res = run_search(_workload(), Constraints(**SMALL), budget_evals=3000, seed=0, pop_size=16, samples=64,
                     eval_seed=0)
    assert res.converged and res.neighbourhood["front_one_opt"] is True
    front = res.front
    for rec in front:
        for y in one_gene_neighbours(space, rec["genome"]):
            other = truth[tuple(int(v) for v in y)]
            assert not any(dominates(other, f) for f in front), other["key"]
            if other["feasible"]:         # nor does it join the front (unless it ties a front design)
                pts = np.array([[f["cost_usd"], f["p99_s"]] for f in front + [other]])
                assert not pareto_mask(pts)[-1] or any(np.allclose(pts[-1], p) for p in pts[:-1])
