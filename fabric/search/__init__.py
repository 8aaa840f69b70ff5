"""Multi-objective search over the design space: NSGA-II (pymoo) that stops on convergence or its budget and ends
with a neighbourhood check of its recommendation, exhaustive and random baselines, Pareto local search.

The names below load on first use (PEP 562): ``fabric evaluate`` reads the search's records and contexts without
importing pymoo, which the search loop alone needs.
"""

from fabric.search.constraints import Constraints, ConstraintError, constraints_from_dict, load_constraints

__all__ = ["Constraints", "ConstraintError", "constraints_from_dict", "load_constraints", "DesignSpace",
           "SearchResult", "SearchProgress", "run_search", "exhaustive_search", "random_search", "hypervolume",
           "pareto_mask", "pareto_local_search", "one_gene_neighbours", "InProcessRunner", "ProcessRunner",
           "DaskRunner", "make_runner", "GLOBAL_CACHE", "ConvergenceRule", "continue_search"]

_LAZY = {"SearchResult": "result", "hypervolume": "result", "pareto_mask": "result",
         "GLOBAL_CACHE": "run", "SearchProgress": "run", "exhaustive_search": "run", "random_search": "run",
         "run_search": "run", "DaskRunner": "runners", "InProcessRunner": "runners", "ProcessRunner": "runners",
         "make_runner": "runners", "DesignSpace": "space", "one_gene_neighbours": "local",
         "pareto_local_search": "local", "ConvergenceRule": "convergence", "continue_search": "run"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"fabric.search.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fabric.search' has no attribute {name!r}")
