"""Pareto local search: the one-gene neighbours of a front, until no single change improves it.

A front nothing in its one-gene neighbourhood improves is *1-opt*: no design one decision away from a front design
dominates a front design or joins the front. Checking that is how a front found on a space too large to enumerate
is shown to be a local optimum rather than the last state of a search that stopped early (benchmarks use it to
polish the best-known front they compare searches against).
"""

from __future__ import annotations

import time

import numpy as np

from fabric.search.constraints import Constraints
from fabric.search.run import _HV, _feasible_front, _objective_keys, _result, open_session
from fabric.search.neighbourhood import one_gene_neighbours

__all__ = ["one_gene_neighbours", "pareto_local_search"]


def pareto_local_search(workload, constraints: Constraints, genomes, *, max_rounds: int = 20, samples: int = 256,
                        eval_seed: int = 0, scenario=None, runner=None, catalog=None):
    """Expand every front design's one-gene neighbourhood, starting from ``genomes``, until the front is 1-opt
    (a round adds no new front design) or ``max_rounds`` rounds have run. Returns the :class:`SearchResult` of
    every design evaluated; ``result.generations`` is the number of rounds and ``result.stopped_because`` says
    whether the front was 1-opt."""
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    t0 = time.perf_counter()
    session = open_session(workload, constraints, seed=eval_seed, samples=samples, scenario=scenario, runner=runner,
                           catalog=catalog)
    space, n_obj = session.space, _objective_keys(constraints)
    expanded: set[str] = set()
    rounds, stopped = 0, f"{max_rounds} rounds run (the front may not be 1-opt)"
    try:
        session.evaluate_genomes([space.repair(np.asarray(g, dtype=np.int64)) for g in genomes])
        while True:
            todo = [r for r in _feasible_front(list(session.records.values()), n_obj) if r["key"] not in expanded]
            if not todo:
                stopped = "1-opt: no one-gene change of a front design improves the front"
                break
            if rounds == max_rounds:
                break
            rounds += 1
            batch = []
            for rec in todo:
                expanded.add(rec["key"])
                batch.extend(one_gene_neighbours(space, rec["genome"]))
            session.evaluate_genomes(batch)
    finally:
        session.runner.close()
    return _result(session, [], _HV(n_obj), [], rounds, stopped, eval_seed, n_obj, constraints, t0)
