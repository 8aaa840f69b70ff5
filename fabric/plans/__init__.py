"""Co-design of the parallelism plan with the network (docs/plans.md).

A plan space from a model shape (:mod:`~fabric.plans.space`, limited by the model and by GPU memory,
:mod:`~fabric.plans.memory`), each plan's workload (:mod:`~fabric.plans.workloads`: a trace's own plan as measured,
the others derived from the recognised model, :mod:`~fabric.plans.basis`), and the best plans of a design
(:mod:`~fabric.plans.best`), all over :func:`fabric.evaluate.evaluate`.
"""

from fabric.plans.basis import PlanBasis, basis_from_model, basis_from_preset, basis_from_workload
from fabric.plans.best import PlanRanking, PlanResult, rank_plans
from fabric.plans.memory import MemoryUse, plan_memory
from fabric.plans.space import Candidate, PlanSpace, check_plan, plan_label, plan_space
from fabric.plans.workloads import plan_workload, provenance

__all__ = ["PlanBasis", "basis_from_model", "basis_from_preset", "basis_from_workload", "PlanRanking", "PlanResult",
           "rank_plans", "MemoryUse", "plan_memory", "Candidate", "PlanSpace", "check_plan", "plan_label",
           "plan_space", "plan_workload", "provenance"]
