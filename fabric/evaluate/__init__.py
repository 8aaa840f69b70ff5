"""Evaluation of a workload on a fabric: placement, collective algorithms, flows, routing, tail."""

from fabric.evaluate.engine import (DEFAULT_SAMPLES, Evaluation, OpResult, evaluate, scale_workload,
                                    scaling_efficiency)
from fabric.evaluate.scenario import SCENARIO_PRESETS, Scenario, load_scenario, scenario_from_dict

__all__ = ["evaluate", "Evaluation", "OpResult", "scale_workload", "scaling_efficiency", "DEFAULT_SAMPLES", "Scenario",
           "SCENARIO_PRESETS", "load_scenario", "scenario_from_dict"]
