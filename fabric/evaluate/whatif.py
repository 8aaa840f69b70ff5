"""Whether a what-if scenario can apply to a design and a workload at all.

A scenario that changes nothing the design has (failing a spine of a fabric without spines, a checkpoint burst
for a workload without training jobs) evaluates to the healthy figures; shown as a change it would read "+0.0 %",
as if the design had shrugged it off. :func:`not_applicable` says why such a scenario does not apply, so that the
Design page, the brief and ``fabric evaluate`` say so instead. The evaluation itself is unchanged (a search judged
under ``fail-spine`` rightly sees a spineless design unaffected).
"""

from __future__ import annotations

__all__ = ["not_applicable"]


def _no_spines_why(fabric) -> str:
    if fabric.family == "dragonfly":
        return "a dragonfly's routers are joined directly"
    if fabric.family == "rail_only" and fabric.tiers == 1:
        return "each rail is one switch"
    return "one tier of switches"


def not_applicable(scenario, fabric, workload) -> str | None:
    """Why ``scenario`` cannot apply to ``fabric`` (a built design) and ``workload``; None when it can.

    A scenario applies when at least one thing it changes exists here: spines for ``failed_spines`` and
    ``slow_switches`` (they are drawn among the spines), leaf-spine cables for ``failed_links`` and
    ``link_failure_prob``, a training job for a checkpoint burst, a job larger than one server for
    ``fragmentation`` (ranks stay together inside a server). Named failures, background load, a shifted job mix
    and a bigger cluster always apply (or are refused by the evaluator with a message).
    """
    import numpy as np

    from fabric.topology.fabric import LINK_KINDS, SWITCH

    if (scenario.fail_switches or scenario.fail_links or scenario.background_load or scenario.comm_scale != 1.0
            or scenario.compute_scale != 1.0 or scenario.gpu_scale != 1):
        return None
    reasons = []
    spines = int(np.count_nonzero((fabric.node_kind == SWITCH) & (fabric.node_tier == 1)))
    if scenario.failed_spines or scenario.slow_switches:
        if spines:
            return None
        reasons.append(f"this design has no spines, {_no_spines_why(fabric)}")
    if scenario.failed_links or scenario.link_failure_prob > 0:
        if np.count_nonzero(fabric.link_kind == LINK_KINDS.index("leaf-spine")):
            return None
        reasons.append(f"this design has no leaf-spine cables, {_no_spines_why(fabric)}")
    if scenario.checkpoint_bytes:
        if any(j.kind == "training" for j in workload.jobs):
            return None
        reasons.append("the workload has no training job, and only training jobs write checkpoints")
    if scenario.fragmentation > 0:
        gpn = int(fabric.design.gpus_per_node)
        if any(j.kind != "storage" and j.world_size > gpn for j in workload.jobs):
            return None
        reasons.append(f"every job fits in one server of {gpn} GPUs, where its ranks stay together")
    return "; ".join(dict.fromkeys(reasons)) or None
