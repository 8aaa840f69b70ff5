"""The workload of one plan: the given plan's as it came (measured for a trace), any other synthesized from the
model shape by :func:`fabric.workload.synth.synthesize` with the compute of its own kernels
(:meth:`fabric.plans.basis.PlanBasis.compute_s`).

The training job is replaced; the workload's other jobs (checkpoints, other tenants) stay. A derived job carries
the GPU its compute is stated for (``compute_gpu``, ``compute_gpu_tflops``), so :mod:`fabric.evaluate.gpu_compute`
takes it to the design's GPU exactly as it takes the measured one. When the basis' GPU is unknown (a trace that
names none), the derived compute is kept as it is, like the measured one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

from fabric.plans.basis import PlanBasis, plan_key, primary_training_job
from fabric.workload.model import Workload
from fabric.workload.synth import ParallelPlan, synthesize

__all__ = ["plan_workload", "provenance"]

_CACHE: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
_MAX = 4096


def provenance(basis: PlanBasis, plan: ParallelPlan) -> str:
    """``"measured"`` (the trace's own plan: compute and bytes as traced) or ``"derived"`` (synthesized from the
    recognised model shape); a basis that is not a trace gives ``"synthesized"`` for every plan."""
    if not basis.measured:
        return "synthesized"
    return "measured" if basis.is_given(plan) else "derived"


def plan_workload(basis: PlanBasis, plan: ParallelPlan) -> Workload:
    """The workload of ``plan`` (see the module docstring); cached by (basis, plan): a pure function of both."""
    key = (basis.key, plan_key(plan), plan.bucket_bytes, plan.dp_overlap, plan.tp_overlap, plan.pp_overlap,
           plan.ep_overlap, plan.cp_overlap, plan.grad_dtype_bytes)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    wl = _build(basis, plan)
    with _LOCK:
        _CACHE[key] = wl
        while len(_CACHE) > _MAX:
            _CACHE.popitem(last=False)
    return wl


def _build(basis: PlanBasis, plan: ParallelPlan) -> Workload:
    if basis.workload is not None and basis.is_given(plan):
        return basis.workload
    name = basis.job_name or basis.model.name
    syn = synthesize(basis.model, plan, gpu_flops=basis.gpu_flops, mfu=basis.mfu, gpus=basis.gpus, name=name,
                     attention_flops=basis.attention_flops, compute_cv=basis.compute_cv,
                     compute_time_s=basis.compute_s(plan))
    job = syn.jobs[0]
    job = replace(job, compute_gpu=basis.compute_gpu,
                  compute_gpu_tflops=job.compute_gpu_tflops if basis.rate_known else None)
    if basis.workload is None:
        return replace(syn.with_jobs([job]), name=name)
    original = primary_training_job(basis.workload)
    jobs = [job if j is original else j for j in basis.workload.jobs]
    return basis.workload.with_jobs(jobs)
