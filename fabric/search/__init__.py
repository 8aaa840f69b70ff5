"""Multi-objective search over the design space: NSGA-II (pymoo) that stops on convergence or its budget and ends
with a neighbourhood check of its recommendation, exhaustive and random baselines, Pareto local search."""

from fabric.search.constraints import Constraints, ConstraintError, constraints_from_dict, load_constraints
from fabric.search.result import SearchResult, hypervolume, pareto_mask
from fabric.search.run import GLOBAL_CACHE, SearchProgress, exhaustive_search, random_search, run_search
from fabric.search.runners import DaskRunner, InProcessRunner, ProcessRunner, make_runner
from fabric.search.space import DesignSpace
from fabric.search.local import one_gene_neighbours, pareto_local_search
from fabric.search.convergence import ConvergenceRule, continue_search

__all__ = ["Constraints", "ConstraintError", "constraints_from_dict", "load_constraints", "DesignSpace",
           "SearchResult", "SearchProgress", "run_search", "exhaustive_search", "random_search", "hypervolume",
           "pareto_mask", "pareto_local_search", "one_gene_neighbours", "InProcessRunner", "ProcessRunner",
           "DaskRunner", "make_runner", "GLOBAL_CACHE", "ConvergenceRule", "continue_search"]
