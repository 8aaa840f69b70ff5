"""What a design review reads: one record per design in one stated context.

:mod:`fabric.review.context` makes the context a value (workloads with weights and the robust rule, plans,
scenario, catalog, calibration, GPU system, seed, samples); :mod:`fabric.review.record` evaluates a design in it once
and holds every figure any view shows.
"""

from fabric.review.context import Context, compose_scenarios, prepare_context
from fabric.review.record import CaseResult, DesignRecord, context_judge, design_record

__all__ = ["Context", "prepare_context", "compose_scenarios", "DesignRecord", "CaseResult", "design_record",
           "context_judge"]
