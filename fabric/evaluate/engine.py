"""evaluate(): p50/p95/p99 step time of a workload on a design, with the per-op breakdown and hot spots.

A pure function of (design, workload, scenario, seed, samples): deterministic, cacheable, picklable. Each Monte
Carlo sample is one job launch (fresh ECMP hash outcomes, fault choices drawn from the seed) and one step of it
(compute jitter, whether a checkpoint burst overlaps).

Step time of a training job in one sample:

    compute x (1 + cv x max(0, Z_max(world)))                 slowest rank sets the pace (straggler effect)
  + sum over ops of count x T_op - hidden                     communication not hidden by compute
  + checkpoint interference                                   unless the design isolates storage traffic

``T_op`` = size x (seconds per byte of the op's traffic in this sample) + latency steps x per-step latency, never
below the small-message floor. An op with ``overlap_fraction`` f runs that share of its time beside compute, and
a step cannot hide more communication than it has compute: hidden = min(sum of count x f x T_op, compute).
``lower_bound_s`` is the same expression with every T_op at its bandwidth-optimal time at line rate and compute at
its mean: the largest of the NIC and NVLink terms of facts.md section 1 and the fabric's cut terms (what must cross a
leaf's or a pod's uplinks, :mod:`fabric.evaluate.bounds`); the step is non-decreasing in every T_op and in compute,
so no sample can fall below it. ``OpResult.bound_by`` and ``Evaluation.lower_bound_by`` name the binding resource.
Inference jobs report request latency percentiles (a "step" is one request).

The stages, each its own module, in the order a design goes through them (:func:`simulate` drives them):

1. **placement** (:mod:`fabric.evaluate.placement`): every job's ranks on GPUs, by the design's placement rule, and
   the network model of the fabric under the scenario (:mod:`fabric.evaluate.network_models`);
2. **traffic per op** (:mod:`fabric.evaluate.traffic`): each op's traffic pattern on its placed group
   (:mod:`fabric.evaluate.flows`, :mod:`fabric.evaluate.collectives`) and its phases' loads on the link groups
   (:mod:`fabric.evaluate.network`, :mod:`fabric.evaluate.innetwork` for in-network reduction);
3. **line-rate bounds** (:mod:`fabric.evaluate.lower_bound`);
4. **step assembly** (:mod:`fabric.evaluate.step`): per sample, every op's time, compute with stragglers, exposed
   communication, checkpoint interference; jobs sharing link groups;
5. **report** (:mod:`fabric.evaluate.report`): percentiles, per-op results, hot links, serving latency, breakdown.
"""

from __future__ import annotations

import numpy as np

from fabric.cost import bill_of_materials
from fabric.errors import WorkloadError
from fabric.evaluate.gpu_compute import on_gpu
from fabric.evaluate.innetwork import switch_tree_limit
from fabric.evaluate.network_models import network_model, reuse_slot
from fabric.evaluate.placement import place_jobs
from fabric.evaluate.report import Evaluation, OpResult, build_report, primary_job, step_stats
from fabric.evaluate.scenario import Scenario, scale_workload, shift_job_mix
from fabric.evaluate.step import class_shares, link_usage, run_job, with_background
from fabric.evaluate.transport import profile_for
from fabric.topology import build_fabric
from fabric.workload.model import Workload

__all__ = ["Evaluation", "OpResult", "evaluate", "step_time_stats", "scale_workload", "scaling_efficiency",
           "simulate", "DEFAULT_SAMPLES"]

DEFAULT_SAMPLES = 256


def simulate(design, workload: Workload, scenario, *, seed: int, samples: int, catalog, transport_overrides,
             algorithms, reuse) -> dict:
    """The step-time samples of every job of ``workload`` on ``design`` (what :func:`evaluate` reports on and
    :func:`step_time_stats` summarizes), with what the report needs besides."""
    algorithms = dict(algorithms or {})
    scenario = scenario or Scenario()
    primary = getattr(workload, "primary", None)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 16 or samples > 100_000:
        raise WorkloadError(f"samples must be a whole number between 16 and 100,000, got {samples!r}")
    if scenario.gpu_scale > 1:
        design = design.replace(gpus=design.gpus * scenario.gpu_scale)
        workload = scale_workload(workload, scenario.gpu_scale)
    workload = shift_job_mix(workload, scenario)
    workload, bases = on_gpu(workload, design.gpu_model, catalog)       # compute on the design's GPU
    slot = reuse_slot(reuse, design, catalog, transport_overrides, samples)
    if slot is not None and "fabric" in slot:
        fabric, bom = slot["fabric"], slot["bom"]
    else:
        fabric = build_fabric(design, catalog)
        bom = bill_of_materials(fabric, catalog)
        if slot is not None:
            slot.update(fabric=fabric, bom=bom)
    prof = profile_for(design, transport_overrides)
    seeds = np.random.SeedSequence(seed)
    s_fault, s_place, s_jobs = seeds.spawn(3)
    model, model_key = network_model(fabric, scenario, np.random.default_rng(s_fault), samples, slot)
    compute_jobs = [j for j in workload.jobs if j.kind != "storage"]
    if not compute_jobs:
        raise WorkloadError("the workload has no training or inference job to evaluate")
    notes: list = [b.note for b in bases if b.note]
    placements = place_jobs(compute_jobs, fabric, design.placement, np.random.default_rng(s_place),
                            fragmentation=scenario.fragmentation, notes=notes)
    storage = [j for j in workload.jobs if j.kind == "storage"]
    job_seeds = s_jobs.spawn(len(compute_jobs))
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    nvls = cat.gpu(design.gpu_model).has_nvls
    ctx = dict(fabric=fabric, design=design, prof=prof, storage=storage, samples=samples, scenario=scenario,
               algorithms=algorithms, nvls=nvls, notes=notes, memo=None if slot is None else slot["memo"],
               tree_limit=switch_tree_limit(cat.switch(design.switch_model)))
    plans = (slot["plans"], model_key) if slot is not None and model_key is not None else None
    def job_ctx(job):
        """A serving job's traffic routed its own way (``serving_routing``): the design it runs under."""
        r = design.serving_routing
        if job.serving is None or r is None or r == design.routing:
            return ctx
        return dict(ctx, design=design.replace(routing=r, qps_per_connection=design.qps_per_connection
                                               if r == "ecmp" else 1))

    runs = [run_job(job, gpus, model, seq, plans=plans, **job_ctx(job))
            for job, gpus, seq in zip(compute_jobs, placements, job_seeds)]
    alone, usage = runs, []
    if design.routing == "spray" and not prof.reorder_tolerant and prof.reorder_slowdown > 1.0:
        notes.append(f"per-packet spraying on transport {design.transport!r}, which does not tolerate reordering: "
                     f"sprayed phases take up to {prof.reorder_slowdown:g}x as long (docs/evaluator.md, "
                     "'Reordering'); a reorder-tolerant transport (uec, infiniband) avoids it")
    if len(compute_jobs) > 1:
        # jobs share leaf uplinks and pod links: each job sees the others' mean load on the groups it crosses
        usage = [link_usage(r, model) for r in runs]
        if any(u for u in usage):
            strict = design.serving_class and design.serving_priority == "strict"
            runs = [alone[i] if job.serving is not None and strict else
                    run_job(job, gpus, with_background(model, usage, i, shares=class_shares(design, compute_jobs, i)),
                            seq, **job_ctx(job))
                    for i, (job, gpus, seq) in enumerate(zip(compute_jobs, placements, job_seeds))]
            notes.append("jobs sharing link groups get a max-min fair share of them while the others are active")
    return dict(design=design, scenario=scenario, fabric=fabric, bom=bom, prof=prof, model=model,
                job_ctx=[job_ctx(j) for j in compute_jobs],
                compute_jobs=compute_jobs, placements=placements, job_seeds=job_seeds, ctx=ctx, runs=runs,
                alone=alone, usage=usage, notes=notes, bases=bases, storage=storage, primary=primary)


def step_time_stats(design, workload: Workload, scenario: Scenario | None = None, *, seed: int = 0,
                    samples: int = DEFAULT_SAMPLES, catalog=None, transport_overrides: dict | None = None,
                    reuse: dict | None = None) -> dict:
    """The primary job's step-time percentiles (``p50``, ``p95``, ``p99``, ``mean``) and ``compute_s``, exactly
    as :func:`evaluate` reports them, without the report (per-op results, hot links, breakdown): what ranking
    hundreds of parallelism plans on one design needs (:mod:`fabric.plans.best`)."""
    sim = simulate(design, workload, scenario, seed=seed, samples=samples, catalog=catalog,
                   transport_overrides=transport_overrides, algorithms=None, reuse=reuse)
    i = primary_job(sim["compute_jobs"], sim["primary"])
    return {**step_stats(sim["runs"][i]["step"]), "compute_s": float(sim["compute_jobs"][i].compute_time_s)}


def evaluate(design, workload: Workload, scenario: Scenario | None = None, *, seed: int = 0,
             samples: int = DEFAULT_SAMPLES, catalog=None, transport_overrides: dict | None = None,
             algorithms: dict | None = None, top_links: int = 10, serving_curve: bool = False,
             reuse: dict | None = None) -> Evaluation:
    """Evaluate ``workload`` on ``design`` under ``scenario``; deterministic for a given seed.

    ``algorithms`` forces an algorithm per collective kind (e.g. ``{"all_reduce": "hierarchical"}``) instead of
    the NCCL-like choice; ``transport_overrides`` replaces transport-profile values (calibration).

    ``reuse``: a dict the caller keeps across evaluations of one design on several workloads and scenarios (the
    robust objective, :mod:`fabric.search.robust`): the fabric and its bill of materials, the network model of
    each set of failed and slow switches and links, and each op's traffic pattern and link-group loads on a model
    are computed once and taken from it afterwards. Only deterministic intermediate results are kept (keyed by
    everything they depend on: design, catalog, calibration, samples, the model's failures, the op's placed group
    and algorithm); every random draw is made again, so the result is identical with or without ``reuse``.

    Serving jobs (with a ``serving`` request structure) also get request-level latency in ``Evaluation.serving``
    (:mod:`fabric.evaluate.serving`); ``serving_curve`` adds their latency-versus-load curve.
    """
    sim = simulate(design, workload, scenario, seed=seed, samples=samples, catalog=catalog,
                   transport_overrides=transport_overrides, algorithms=algorithms, reuse=reuse)
    return build_report(sim, seed=seed, samples=samples, top_links=top_links, serving_curve=serving_curve)


def scaling_efficiency(design, workload: Workload, factors=(1, 2, 4), **kwargs) -> list[dict]:
    """Step throughput at N, 2N, 4N GPUs relative to linear (weak scaling: data parallelism grows).

    For each factor k the design and the workload are grown k times (:func:`scale_workload`) and evaluated;
    ``efficiency_p50`` = step_p50(N) / step_p50(kN) (1.0 = linear), likewise for p99.
    """
    out = []
    base = None
    for k in factors:
        ev = evaluate(design.replace(gpus=design.gpus * k), scale_workload(workload, k), **kwargs)
        st = ev.step_time_s
        if base is None:
            base = st
        out.append({"factor": k, "gpus": design.gpus * k, "step_p50_s": st["p50"], "step_p99_s": st["p99"],
                    "efficiency_p50": base["p50"] / st["p50"], "efficiency_p99": base["p99"] / st["p99"],
                    "cost_usd": ev.cost_usd})
    return out
