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
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from statistics import NormalDist

import numpy as np

from fabric.cost import bill_of_materials
from fabric.errors import WorkloadError
from fabric.evaluate.bounds import RESOURCES, cut_bound_per_byte
from fabric.evaluate.channels import op_flows_per_pair
from fabric.evaluate.collectives import NCCL_ALGOS, CollectiveHardware, bandwidth_factor, lower_bound_time
from fabric.evaluate.flows import algorithm_for, group_shape, op_traffic
from fabric.evaluate.gpu_compute import on_gpu
from fabric.evaluate.innetwork import runs_on_trees, switch_tree_limit, tree_phase_load, tree_traffic
from fabric.evaluate.network import NetworkModel, phase_load, sample_phase_factor
from fabric.evaluate.placement import group_instances, place_jobs
from fabric.evaluate.scenario import Scenario
from fabric.evaluate.serving import serving_for_job
from fabric.evaluate.transport import profile_for, small_message_floor_s
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS
from fabric.workload.accounting import step_ops
from fabric.workload.model import CommOp, Job, Workload

__all__ = ["Evaluation", "OpResult", "evaluate", "step_time_stats", "scale_workload", "scaling_efficiency",
           "DEFAULT_SAMPLES"]

DEFAULT_SAMPLES = 256
_PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class OpResult:
    """One op of a job: its time distribution and its part of the p99 sample. ``count_per_step`` is per step of
    the job (per request for a serving job: :func:`fabric.workload.accounting.step_ops`), ``time_in_p99_sample_s``
    one call's time in the p99 sample, so ``exposed_in_p99_sample_s <= count_per_step x time_in_p99_sample_s``."""

    job: str
    name: str
    kind: str
    group: str
    group_size: int
    bytes: int
    count_per_step: float
    algorithm: str
    time_p50_s: float
    time_p99_s: float
    lower_bound_s: float
    exposed_in_p99_sample_s: float
    #: the resource whose line rate sets ``lower_bound_s``: "nic", "nvlink", "leaf uplinks", "pod uplinks",
    #: "router links" (dragonfly), or "none" (a group of one)
    bound_by: str = "none"
    time_in_p99_sample_s: float = 0.0
    #: in-network reduction: the aggregation trees the op ran on, and the group instances that found none and ran
    #: ``fallback_algorithm`` instead (:mod:`fabric.evaluate.innetwork`)
    aggregation_trees: int = 0
    fallback_instances: int = 0
    fallback_algorithm: str = ""
    #: in-network reduction: what the trees did under the scenario, as figures (trees, fallback, failed and slow
    #: spines and the trees on them, seconds per op byte of the NIC ports and tree links); words:
    #: :func:`fabric.evaluate.innetwork.in_network_lines`
    in_network: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Evaluation:
    """The result of :func:`evaluate`. ``step_time_s`` is the primary job's (the largest training job)."""

    design_name: str
    scenario: str
    seed: int
    samples: int
    step_time_s: dict
    step_samples_s: np.ndarray
    lower_bound_s: float
    compute_s: float
    ops: tuple
    hot_links: tuple
    jobs: dict
    cost_usd: float
    power_w: float
    p99_breakdown: dict = field(default_factory=dict)
    notes: tuple = ()
    cable_count: int = 0
    radix: int = 0
    tiers: int = 0
    cost_by_category: dict = field(default_factory=dict)
    #: what binds ``lower_bound_s``: the resource with the most exposed bound communication ("nic", "nvlink",
    #: "leaf uplinks", "pod uplinks", "router links"), or "compute" when no bound communication is exposed
    lower_bound_by: str = "compute"
    #: ``lower_bound_s`` split into compute and the exposed bound communication of each resource (seconds)
    lower_bound_split_s: dict = field(default_factory=dict)
    #: serving jobs' request-level latency by job name (fabric.evaluate.serving.serving_metrics)
    serving: dict = field(default_factory=dict)

    def to_dict(self, *, include_samples: bool = False) -> dict:
        d = {
            "design": self.design_name, "scenario": self.scenario, "seed": self.seed, "samples": self.samples,
            "step_time_s": dict(self.step_time_s), "lower_bound_s": self.lower_bound_s,
            "lower_bound_by": self.lower_bound_by, "lower_bound_split_s": dict(self.lower_bound_split_s),
            "compute_s": self.compute_s, "ops": [o.to_dict() for o in self.ops],
            "hot_links": [dict(h) for h in self.hot_links], "jobs": self.jobs,
            "cost_usd": self.cost_usd, "power_w": self.power_w, "p99_breakdown": self.p99_breakdown,
            "notes": list(self.notes), "cable_count": self.cable_count, "radix": self.radix, "tiers": self.tiers,
            "cost_by_category": self.cost_by_category, "serving": self.serving,
        }
        if include_samples:
            d["step_samples_s"] = self.step_samples_s.tolist()
        return d


def _stats(x: np.ndarray) -> dict:
    # nearest-rank percentiles (numpy's "inverted_cdf"): each is one of the samples, so the p99 step is exactly the
    # sample the p99 breakdown describes (the ceil(0.99 n)-th smallest, as ``i99`` below), and every page that shows
    # the p99 and its parts shows one number
    p = np.percentile(x, _PERCENTILES, method="inverted_cdf")
    return {"p50": float(p[0]), "p95": float(p[1]), "p99": float(p[2]), "mean": float(x.mean())}


def _zmax_samples(n: int, u: np.ndarray) -> np.ndarray:
    """Max of n standard normals by inversion: Phi^-1(u^(1/n))."""
    nd = NormalDist()
    q = np.clip(u ** (1.0 / max(n, 1)), 1e-12, 1 - 1e-16)
    return np.array([nd.inv_cdf(float(v)) for v in q])


# ------------------------------------------------------------------ workload transformations


def scale_workload(workload: Workload, factor: int) -> Workload:
    """Weak scaling: every training/inference job's data-parallel degree (and world) grows ``factor`` times."""
    if factor == 1:
        return workload
    jobs = []
    for job in workload.jobs:
        if job.kind == "storage":
            jobs.append(job)
            continue
        if job.serving is not None:      # checked first: a service's world group is its replicas, not data parallelism
            raise WorkloadError(
                f"job {job.name!r} is a serving job, which weak scaling (--scaling, the bigger-cluster scenario) "
                f"cannot grow: it adds data-parallel ranks to a training step at a fixed work per GPU, while a "
                f"service grows by replicas that each take a share of the requests. Evaluate a larger service "
                f"instead: fabric synth --preset NAME --gpus N at the larger size (more replicas), with the job's "
                f"request_rate_per_s set to the load it must carry; fabric evaluate's latency-versus-load curve "
                f"shows this service's headroom")
        dp = [g for g in job.groups if g.role == "dp"] or [g for g in job.groups if g.size == job.world_size]
        if not dp:
            raise WorkloadError(f"job {job.name!r} cannot be scaled: it has no data-parallel or world group")
        names = {g.name for g in dp}
        groups = []
        for g in job.groups:
            if g.name in names or g.size == job.world_size:
                groups.append(replace(g, size=g.size * factor, ranks=None))
            else:
                groups.append(g)
        jobs.append(replace(job, world_size=job.world_size * factor, groups=tuple(groups)))
    return workload.with_jobs(jobs)


def _shift_job_mix(workload: Workload, scenario: Scenario) -> Workload:
    jobs = []
    for job in workload.jobs:
        if job.kind == "storage":
            jobs.append(job)
            continue
        ops = tuple(replace(o, bytes=int(round(o.bytes * scenario.comm_scale)),
                            per_rank_bytes=None if o.per_rank_bytes is None else tuple(
                                int(round(b * scenario.comm_scale)) for b in o.per_rank_bytes))
                    for o in job.ops) if scenario.comm_scale != 1.0 else job.ops
        jobs.append(replace(job, ops=ops, compute_time_s=job.compute_time_s * scenario.compute_scale))
    if scenario.checkpoint_bytes:
        for job in list(jobs):
            if job.kind == "training":
                jobs.append(Job(name=f"{job.name}/checkpoint", kind="storage", world_size=job.world_size,
                                burst_bytes=int(scenario.checkpoint_bytes),
                                burst_period_s=scenario.checkpoint_period_s, burst_target=job.name))
    return workload.with_jobs(jobs)


# ------------------------------------------------------------------ per-op traffic


@dataclass
class _TrafficSamples:
    per_byte: np.ndarray           # seconds per op byte, per sample
    latency_s: float
    lb_per_byte: float
    algorithm: str
    group_size: int
    link_loads: list               # (class, busiest bytes-per-op-byte per sample, phase index)
    issue_s: float = 0.0           # serial per-peer posting that overlaps the transfer (direct all-to-all)
    bound_by: str = "none"         # the resource that sets lb_per_byte
    up_per_byte: float = 0.0       # seconds per op byte on NVLink (scale-up) alone
    net_per_byte: np.ndarray | None = None   # seconds per op byte on the network alone, per sample
    nv_latency_s: float = 0.0      # the part of latency_s spent in scale-up steps
    pipelined: bool = False        # NVLink and network overlap (the op takes the longer of the two)
    trees: int = 0                 # in-network aggregation trees (fabric.evaluate.innetwork)
    fallback_instances: int = 0    # group instances that found no tree and ran fallback_algorithm
    fallback_algorithm: str = ""
    traffic: object = None         # the traffic pattern (flows.Traffic) the samples come from
    #: the lower bound per op byte by resource when it has several parts (an in-network op some of whose instances
    #: fell back: the trees' bound, then the fallback's excess charged to the resource it lacked); () = bound_by only
    bound_parts: tuple = ()
    story: dict | None = None      # what the aggregation trees did (fabric.evaluate.innetwork._story)


@dataclass(frozen=True)
class _TrafficPlan:
    """The deterministic part of an op's traffic on a network model: what :func:`_traffic_samples` computes before
    and around the random draws (the traffic pattern and each phase's link-group loads)."""

    tr: object
    loads: tuple
    #: the op's line-rate lower bound per (in-network, NVLink SHARP), memoized (:func:`_line_rate_bound`)
    bounds: dict = field(default_factory=dict, compare=False, repr=False)


def _traffic_plan(fabric, model, design, shape, kind: str, size_bytes: float, algorithm: str,
                  hardware: CollectiveHardware, samples: int, plans, trees=None) -> _TrafficPlan:
    """The traffic pattern of the op and its phases' loads; taken from ``plans`` when an evaluation of the same
    design on the same network model (another workload's scenario, see :func:`evaluate`'s ``reuse``) made it.

    The pattern depends on the op's size only through NCCL's choice of algorithm, which is ``algorithm`` here
    (resolved), except for the hierarchical all-reduce, whose network algorithm is chosen by size again. ``trees``:
    the op's in-network aggregation trees (:func:`fabric.evaluate.innetwork.place_trees`), whose links load the
    in-network phase."""
    key = tr = memo = None
    flows = op_flows_per_pair(design, shape, kind, size_bytes, hopper=hardware.nvls)
    if plans is not None:
        table, model_key = plans
        members = np.ascontiguousarray(shape.members)
        # the pattern does not depend on the network model (failures), its loads do
        tr_key = ("traffic", kind, algorithm, size_bytes if algorithm.startswith("hierarchical") else None,
                  members.shape, members.tobytes())
        key = (model_key, samples, trees is not None, flows) + tr_key
        hit = table.get(key)
        if hit is not None:
            return hit
        tr = table.get(tr_key)
        # a pattern that another network model of this design used already (failure scenarios): its flows at the
        # NIC ports, which do not depend on the model's failures, are kept for the next models too
        memo = table if tr is not None else None
    if tr is None:
        tr = op_traffic(kind, size_bytes, shape.members, fabric.gpu_domain, in_network=hardware.in_network,
                        algorithm=algorithm, nvls=hardware.nvls, hardware=hardware, shape=shape)
        if plans is not None:
            table[tr_key] = tr
    loads = tuple(phase_load(ph, model, qps=flows, pxn=design.pxn, routing=design.routing,
                             samples=samples, memo=memo) for ph in tr.phases)
    if trees is not None:
        loads = tuple(tree_phase_load(load, trees, model) if ph.injection_only else load
                      for ph, load in zip(tr.phases, loads))
    plan = _TrafficPlan(tr, loads)
    if key is not None:
        table[key] = plan
    return plan


def _traffic_samples(fabric, model, design, prof, shape, kind: str, size_bytes: float, algorithm: str,
                     hardware: CollectiveHardware, rng: np.random.Generator, samples: int,
                     background: float, plans=None, trees=None) -> _TrafficSamples:
    in_net = hardware.in_network
    plan = _traffic_plan(fabric, model, design, shape, kind, size_bytes, algorithm, hardware, samples, plans, trees)
    tr = plan.tr
    nv_line = _nvlink_bytes_per_s(fabric)
    nv_eff = nv_line * prof.nvlink_efficiency
    net_eff = prof.bandwidth_efficiency * (1.0 - background)
    sw_lat = float(fabric.node_latency_s[fabric.switch_base]) if fabric.n_switches else 0.0
    nic_lat = float(fabric.node_latency_s[fabric.nic_base]) if fabric.n_nics else 0.0
    up_eff = nv_eff * (prof.nvls_efficiency_scale if tr.scaleup_nvls else 1.0)
    up = tr.scaleup_bytes_per_byte / up_eff if up_eff > 0 else 0.0
    net = np.zeros(samples)
    latency = tr.scaleup_steps * prof.nvlink_alpha_s
    link_loads = []
    for pi, (ph, load) in enumerate(zip(tr.phases, plan.loads)):
        reorder = prof.reorder_slowdown if design.routing == "spray" and not prof.reorder_tolerant else 1.0
        t, per_class = sample_phase_factor(load, model, design.routing, net_eff, nv_eff, prof.adaptive_imbalance,
                                           rng, samples, reorder_slowdown=reorder,
                                           reorder_floor=prof.reorder_floor,
                                           hash_correlation=prof.hash_correlation)
        net += t
        prop = 2 * 50.0 * 5e-9 if load.hops > 1 else 2 * 30.0 * 5e-9
        latency += ph.steps * (prof.step_alpha_s + load.hops * sw_lat + 2 * nic_lat + prop
                               + (prof.nvlink_alpha_s if load.forward_nvlink > 0 else 0.0))
        link_loads += [(c, b, pi) for c, b in zip(load.classes, per_class)]
    per_byte = np.maximum(up, net) if tr.pipelined else up + net
    memo = (bool(in_net), bool(hardware.nvls))
    if memo not in plan.bounds:
        plan.bounds[memo] = _line_rate_bound(fabric, model, plan, kind, shape.members, nv_line, in_net,
                                             hardware.nvls)
    lb, bound_by = plan.bounds[memo]
    return _TrafficSamples(per_byte, latency, lb, tr.algorithm, tr.group_size, link_loads,
                           issue_s=tr.peers * prof.peer_issue_s, bound_by=bound_by, up_per_byte=float(up),
                           net_per_byte=net, nv_latency_s=float(tr.scaleup_steps * prof.nvlink_alpha_s),
                           pipelined=bool(tr.pipelined), traffic=tr)


def _line_rate_bound(fabric, model, plan: _TrafficPlan, kind: str, members, nv_line: float, in_net: bool,
                     nvls: bool) -> tuple[float, str]:
    """An op's lower bound per byte and the resource that sets it: the bandwidth-optimal bound, unless this
    placement moves fewer bytes than it assumes (irregular groups whose pairs share a node): then the line-rate time
    of the traffic itself (every NIC port, NVLink and link group at its mean load) bounds every sample. A function
    of the traffic plan alone (no random draw), so it is computed once per plan."""
    tr = plan.tr
    port_line = fabric.link_speed_bps / 8.0
    injection = 0.0                 # seconds per op byte the busiest NIC port, NVLink or link needs at line rate
    moved_by = dict.fromkeys(RESOURCES, 0.0)
    for load in plan.loads:
        terms = {"nic": load.nic_max / port_line, "nvlink": load.nvlink_max / nv_line if nv_line > 0 else 0.0}
        for c in load.classes:      # a group's busiest link carries at least its mean
            res = _RESOURCE_OF_GROUP.get(c.kind, "router links")
            mean = float(c.member_loads.max()) / (model.link_bps(c.kind) / 8.0) if c.member_loads.size else 0.0
            terms[res] = max(terms.get(res, 0.0), mean)
        injection += max(terms.values())
        for res, v in terms.items():
            moved_by[res] = moved_by.get(res, 0.0) + v
    up_line = tr.scaleup_bytes_per_byte / nv_line if nv_line > 0 else 0.0
    moved = max(up_line, injection) if tr.pipelined else up_line + injection
    moved_by["nvlink"] = max(moved_by["nvlink"], up_line) if tr.pipelined else moved_by["nvlink"] + up_line
    optimal = _op_lower_bound_terms(fabric, model, tr, kind, members, nv_line, in_net, nvls)
    best = max(optimal.values(), default=0.0)
    lb, by = (best, optimal) if best <= moved else (moved, moved_by)
    return lb, (_binding(by) if lb > 0 else "none")


#: The lower-bound resource of each link-group kind (dragonfly groups are "router links").
_RESOURCE_OF_GROUP = {"nic ports": "nic", "leaf uplinks": "leaf uplinks", "leaf downlinks": "leaf uplinks",
                      "pod core uplinks": "pod uplinks", "pod core downlinks": "pod uplinks"}


def _binding(terms: dict) -> str:
    """The resource with the largest term (ties: the order of :data:`RESOURCES`, NIC first)."""
    order = {r: i for i, r in enumerate(RESOURCES)}
    return max(terms, key=lambda r: (terms[r], -order.get(r, len(order))))


def _nvlink_bytes_per_s(fabric) -> float:
    nv = fabric.link_kind == LINK_KINDS.index("nvlink")
    return float(fabric.link_capacity_bps[nv][0]) / 8.0 if nv.any() else 0.0


def _gpu_net_bytes_per_s(fabric) -> float:
    """Line-rate network bandwidth of one GPU (its NICs' ports; shared NICs divided)."""
    d = fabric.design
    ports = fabric.nic_ports.shape[1]
    return ports * fabric.link_speed_bps / 8.0 * d.nics_per_gpu


def _op_lower_bound_terms(fabric, model, tr, kind: str, gpus: np.ndarray, nv_line: float, in_net: bool,
                          nvls: bool = False) -> dict:
    """Bandwidth-optimal time per op byte at line rate, per resource: ``{"nic": .., "nvlink": .., "leaf uplinks":
    .., "pod uplinks": ..}`` (empty for a group of one). NIC and NVLink: facts.md section 1; the fabric's tiers:
    what must cross each leaf's and pod's uplinks (:mod:`fabric.evaluate.bounds`). With NVLink SHARP (``nvls``)
    the NVSwitch reduces, so a domain's all-reduce need only move S once each way per GPU (like in-network
    reduction), below the ring's 2(g-1)/g S."""
    n, g, N = tr.group_size, tr.per_domain, tr.domains
    if n <= 1 or kind == "barrier":
        return {}
    net_bw = _gpu_net_bytes_per_s(fabric)
    if N == 1:
        return {"nvlink": lower_bound_time(kind, n, 1.0, nv_line, nvls=nvls) if nv_line > 0 else 0.0}
    if kind in ("all_to_all", "all_to_allv"):
        terms = {"nic": (n - g) / n / net_bw, "nvlink": (g - 1) / n / nv_line if nv_line > 0 and g > 1 else 0.0}
    elif kind == "send_recv":
        terms = {"nic": 1.0 / net_bw}
    else:
        nv = bandwidth_factor(kind, "ring", g) / nv_line if g > 1 and nv_line > 0 else 0.0
        if kind == "all_reduce" and g > 1 and nv_line > 0:
            nv = lower_bound_time(kind, g, 1.0, nv_line, nvls=nvls)
        terms = {"nic": lower_bound_time(kind, N, 1.0 / g, net_bw, in_network=in_net), "nvlink": nv}
    if model.cuts and not (kind == "all_reduce" and tr.network_algorithm == "in_network"):
        members = gpus if gpus.shape[1] < 2 or (np.diff(gpus, axis=1) > 0).all() else np.sort(gpus, axis=1)
        for cuts in model.cuts:
            terms[cuts.resource] = cut_bound_per_byte(kind, members, cuts)
    return terms


def _canonical_kind(kind: str) -> str:
    return "all_to_all" if kind == "all_to_allv" else kind


# ------------------------------------------------------------------ evaluate


def _simulate(design, workload: Workload, scenario, *, seed: int, samples: int, catalog, transport_overrides,
              algorithms, reuse) -> dict:
    """The step-time samples of every job of ``workload`` on ``design`` (what :func:`evaluate` reports on and
    :func:`step_time_stats` summarizes), with what the report needs besides."""
    algorithms = dict(algorithms or {})
    scenario = scenario or Scenario()
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 16 or samples > 100_000:
        raise WorkloadError(f"samples must be a whole number between 16 and 100,000, got {samples!r}")
    if scenario.gpu_scale > 1:
        design = design.replace(gpus=design.gpus * scenario.gpu_scale)
        workload = scale_workload(workload, scenario.gpu_scale)
    workload = _shift_job_mix(workload, scenario)
    workload, bases = on_gpu(workload, design.gpu_model, catalog)       # compute on the design's GPU
    slot = _reuse_slot(reuse, design, catalog, transport_overrides, samples)
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
    model, model_key = _network_model(fabric, scenario, np.random.default_rng(s_fault), samples, slot)
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
    runs = [_run_job(job, gpus, model, seq, plans=plans, **ctx)
            for job, gpus, seq in zip(compute_jobs, placements, job_seeds)]
    alone, usage = runs, []
    if design.routing == "spray" and not prof.reorder_tolerant and prof.reorder_slowdown > 1.0:
        notes.append(f"per-packet spraying on transport {design.transport!r}, which does not tolerate reordering: "
                     f"sprayed phases take up to {prof.reorder_slowdown:g}x as long (docs/evaluator.md, "
                     "'Reordering'); a reorder-tolerant transport (uec, infiniband) avoids it")
    if len(compute_jobs) > 1:
        # jobs share leaf uplinks and pod links: each job sees the others' mean load on the groups it crosses
        usage = [_link_usage(r, model) for r in runs]
        if any(u for u in usage):
            runs = [alone[i] if job.serving is not None and design.serving_class else
                    _run_job(job, gpus, _with_background(model, usage, i), seq, **ctx)
                    for i, (job, gpus, seq) in enumerate(zip(compute_jobs, placements, job_seeds))]
            notes.append("jobs sharing link groups get a max-min fair share of them while the others are active")
    return dict(design=design, scenario=scenario, fabric=fabric, bom=bom, prof=prof, model=model,
                compute_jobs=compute_jobs, placements=placements, job_seeds=job_seeds, ctx=ctx, runs=runs,
                alone=alone, usage=usage, notes=notes, bases=bases, storage=storage)


def _primary(compute_jobs: list) -> int:
    """The index of the job whose step time an evaluation reports: the largest training job (else the first)."""
    best = None
    for i, job in enumerate(compute_jobs):
        if best is None or (job.kind == "training" and (compute_jobs[best].kind != "training"
                                                        or job.world_size > compute_jobs[best].world_size)):
            best = i
    return best


def step_time_stats(design, workload: Workload, scenario: Scenario | None = None, *, seed: int = 0,
                    samples: int = DEFAULT_SAMPLES, catalog=None, transport_overrides: dict | None = None,
                    reuse: dict | None = None) -> dict:
    """The primary job's step-time percentiles (``p50``, ``p95``, ``p99``, ``mean``) and ``compute_s``, exactly
    as :func:`evaluate` reports them, without the report (per-op results, hot links, breakdown): what ranking
    hundreds of parallelism plans on one design needs (:mod:`fabric.plans.best`)."""
    sim = _simulate(design, workload, scenario, seed=seed, samples=samples, catalog=catalog,
                    transport_overrides=transport_overrides, algorithms=None, reuse=reuse)
    i = _primary(sim["compute_jobs"])
    return {**_stats(sim["runs"][i]["step"]), "compute_s": float(sim["compute_jobs"][i].compute_time_s)}


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
    sim = _simulate(design, workload, scenario, seed=seed, samples=samples, catalog=catalog,
                    transport_overrides=transport_overrides, algorithms=algorithms, reuse=reuse)
    design, scenario, fabric, bom, prof, model = (sim[k] for k in ("design", "scenario", "fabric", "bom", "prof",
                                                                    "model"))
    compute_jobs, placements, job_seeds, ctx = sim["compute_jobs"], sim["placements"], sim["job_seeds"], sim["ctx"]
    runs, alone, usage, notes, bases, storage = (sim[k] for k in ("runs", "alone", "usage", "notes", "bases",
                                                                  "storage"))

    job_results = {}
    all_ops: list[OpResult] = []
    hot: dict = {}
    for job, r in zip(compute_jobs, runs):
        step, i99 = r["step"], r["i99"]
        label = "latency_s" if job.kind == "inference" else "step_time_s"
        job_results[job.name] = {"kind": job.kind, label: _stats(step), "lower_bound_s": r["lower"],
                                 "lower_bound_by": r["lower_by"], "gpus": int(job.world_size),
                                 "compute_s": job.compute_time_s,
                                 "compute_basis": next(b.to_dict() for b in bases if b.job == job.name)}
        times = np.array([np.broadcast_to(t, (samples,)) for t in r["op_times"]]).reshape(-1, samples)
        pct = np.percentile(times, (50, 99), axis=1) if len(times) else np.zeros((2, 0))   # one call for all ops
        for k, (lb, ex, op, (_, ts, _)) in enumerate(zip(r["op_lb"], r["exposed"], r["ops"], r["op_meta"])):
            ex = np.broadcast_to(ex, (samples,))
            t, t50, t99 = times[k], pct[0, k], pct[1, k]
            all_ops.append(OpResult(
                job=job.name, name=op.name, kind=op.kind, group=op.group, group_size=ts.group_size,
                bytes=int(op.bytes), count_per_step=float(op.count_per_step), algorithm=ts.algorithm,
                time_p50_s=float(t50), time_p99_s=float(t99),
                lower_bound_s=float(lb), exposed_in_p99_sample_s=float(ex[i99]), bound_by=ts.bound_by,
                time_in_p99_sample_s=float(t[i99]),
                aggregation_trees=ts.trees, fallback_instances=ts.fallback_instances,
                fallback_algorithm=ts.fallback_algorithm, in_network=dict(ts.story or {})))
        _accumulate_hot(hot, job, r["ops"], r["op_meta"], i99, step, fabric, model)
    serving = {}
    for i, job in enumerate(compute_jobs):
        if job.serving is not None:      # request-level latency (fabric.evaluate.serving)
            busy = None
            if usage and usage[i] and not design.serving_class:
                busy = _run_job(job, placements[i], _with_background(model, usage, i, active=True), job_seeds[i],
                                **ctx)
            serving[job.name] = serving_for_job(
                job, alone[i], busy, _competition(usage, i, runs, compute_jobs), storage, design,
                lambda per_nic: _burst_duration(per_nic, design, fabric, prof), seed=seed, samples=samples,
                world_of={j.name: j.world_size for j in compute_jobs}, curve=serving_curve)
            job_results[job.name]["serving"] = serving[job.name]

    main_job = _primary(compute_jobs)
    job, r = compute_jobs[main_job], runs[main_job]
    i99 = r["i99"]
    per_op: dict = {}
    for o in all_ops:
        if o.job == job.name:          # ops sharing a label (e.g. per-layer calls of one kind) add up
            label = f"{o.name or o.kind}@{o.group}"
            per_op[label] = per_op.get(label, 0.0) + o.exposed_in_p99_sample_s
    nv99 = float(sum(float(np.broadcast_to(ex, (samples,))[i99]) * float(sh[i99])
                     for ex, sh in zip(r["exposed"], r["nv_shares"])))
    comm99 = float(sum(float(np.broadcast_to(ex, (samples,))[i99]) for ex in r["exposed"]))
    breakdown = {"compute_s": float(r["compute"][i99]), "interference_s": float(r["interference"][i99]),
                 "ops": per_op,
                 # the same p99 step by where the time goes (fabric.evaluate.explain)
                 "compute_mean_s": float(min(job.compute_time_s, r["compute"][i99])),
                 "stragglers_s": float(max(0.0, r["compute"][i99] - job.compute_time_s)),
                 "nvlink_s": nv99, "network_s": comm99 - nv99}
    hot_list = sorted(hot.values(), key=lambda h: -h["p99_sample_utilization"])[:top_links]
    return Evaluation(
        design_name=design.name, scenario=scenario.name, seed=seed, samples=samples, step_time_s=_stats(r["step"]),
        step_samples_s=r["step"], lower_bound_s=float(r["lower"]), compute_s=float(job.compute_time_s),
        ops=tuple(all_ops), hot_links=tuple(hot_list), jobs=job_results, cost_usd=bom.cost_usd, power_w=bom.power_w,
        p99_breakdown=breakdown, notes=tuple(notes), cable_count=bom.cable_count,
        radix=int(fabric.structure.get("radix", 0)), tiers=fabric.tiers, cost_by_category=bom.by_category(),
        lower_bound_by=r["lower_by"], lower_bound_split_s=r["lower_split"], serving=serving)


def _run_job(job: Job, gpus_of_rank, model, seq, *, fabric, design, prof, storage, samples, scenario,
             algorithms, nvls, notes=None, plans=None, memo=None, tree_limit=None) -> dict:
    """One job's step-time samples on ``model`` (its random draws come from ``seq``, so a rerun repeats them)."""
    rng_hash, rng_compute, rng_burst = (np.random.default_rng(x) for x in seq.spawn(3))
    cache: dict = {}
    shapes: dict = {}
    op_times, op_lb, op_meta, nv_shares = [], [], [], []
    hardware = CollectiveHardware(gpus_per_node=1, nvls=nvls, nvlink_bytes_per_s=_nvlink_bytes_per_s(fabric),
                                  nic_bytes_per_s=_gpu_net_bytes_per_s(fabric),
                                  in_network=design.in_network_reduction and prof.in_network_reduction)
    forced_nccl = NCCL_ALGOS.get(design.nccl_algo) if design.nccl_algo else None
    for op in job.ops:
        kind = _canonical_kind(op.kind)
        group = job.group(op.group)
        size = float(op.bytes)
        if op.group not in shapes:
            skey = None if memo is None else ("shape", group, job.world_size, gpus_of_rank.tobytes())
            shapes[op.group] = memo.get(skey) if skey is not None else None
            if shapes[op.group] is None:
                shapes[op.group] = group_shape(gpus_of_rank[group_instances(group, job.world_size)],
                                               fabric.gpu_domain)
                if skey is not None:
                    memo[skey] = shapes[op.group]
        shape = shapes[op.group]
        by_design = kind not in algorithms and kind == "all_reduce" and forced_nccl is not None
        requested = forced_nccl if by_design else algorithms.get(kind)
        alg, fell_back = algorithm_for(kind, requested, size, shape, hardware)
        if fell_back and notes is not None:
            asked = f"NCCL_ALGO {design.nccl_algo!r}" if by_design else f"algorithm {requested!r}"
            note = (f"{job.name}: {asked} cannot run the all-reduce on group "
                    f"{op.group!r} ({shape.domains} node(s) x {shape.per_domain} GPU(s), "
                    f"{'NVLink SHARP' if nvls else 'no NVLink SHARP'}"
                    f"{', in-network reduction' if hardware.in_network else ''}): NCCL falls back to ring")
            if note not in notes:
                notes.append(note)
        key = (op.group, kind, alg)
        if key not in cache and runs_on_trees(kind, alg, shape, hardware.in_network):
            def run(sh, a, hw, m, trees, pl, _kind=kind, _size=size):
                return _traffic_samples(fabric, m, design, prof, sh, _kind, _size, a, hw, rng_hash, samples,
                                        scenario.background_load, pl, trees)
            cache[key] = tree_traffic(run, kind=kind, size_bytes=size, algorithm=alg, requested=requested,
                                      shape=shape, hardware=hardware, fabric=fabric, model=model,
                                      limit=tree_limit, plans=plans, notes=notes,
                                      label=f"{job.name}, in-network reduction of group {op.group!r}",
                                      net_eff=prof.bandwidth_efficiency * (1.0 - scenario.background_load),
                                      pxn=design.pxn, routing=design.routing, samples=samples,
                                      healthy=lambda: _healthy_model(fabric))
        elif key not in cache:
            cache[key] = _traffic_samples(fabric, model, design, prof, shape, kind, size, alg, hardware, rng_hash,
                                          samples, scenario.background_load, plans)
        ts = cache[key]
        eff_scale, alpha_scale, overhead = prof.scales_for(size)
        t = np.maximum(size * ts.per_byte / eff_scale, ts.issue_s) + ts.latency_s * alpha_scale \
            + (overhead if ts.group_size > 1 else 0.0)
        t = np.maximum(t, small_message_floor_s(ts.group_size, size))
        op_times.append(t)
        op_lb.append(size * ts.lb_per_byte)
        op_meta.append((op, ts, key))
        nv_shares.append(_nvlink_share(ts, size, eff_scale, alpha_scale, samples))
    ops = step_ops(job)                 # counted per step of the job (a serving job: per request)
    compute = _compute_samples(job, rng_compute, samples, memo)
    exposed, comm = _exposed(op_times, ops, compute, samples)
    interference = _checkpoint_interference(job, storage, design, fabric, prof, comm, compute, rng_burst, samples)
    step = compute + comm + interference
    lb_exposed, lb_comm = _exposed([np.array([lb]) for lb in op_lb], ops, np.array([job.compute_time_s]), 1)
    split = _bound_split(op_lb, lb_exposed, op_meta, ops, job.compute_time_s)
    comm_split = {k: v for k, v in split.items() if k != "compute"}
    lower_by = _binding(comm_split) if comm_split else "compute"
    order = np.argsort(step, kind="stable")
    i99 = int(order[min(samples - 1, int(math.ceil(0.99 * samples)) - 1)])
    return {"op_times": op_times, "op_lb": op_lb, "op_meta": op_meta, "ops": ops, "compute": compute,
            "exposed": exposed,
            "interference": interference, "step": step, "lower": job.compute_time_s + float(lb_comm[0]),
            "lower_by": lower_by, "lower_split": split, "i99": i99, "nv_shares": nv_shares}


def _bound_split(op_lb: list, lb_exposed: list, op_meta: list, ops: list, compute_s: float) -> dict:
    """``lower_bound_s`` split into compute and the exposed bound communication of each resource.

    An op whose bound has several parts (``bound_parts``: an in-network op some of whose instances fell back) is
    split by counterfactual: the exposed bound with every such op at its first part (what its trees need) is
    charged to each op's first resource, as if the trees had served every instance; what the step's exposed bound
    grows by when the excess parts are added goes to the resources they name (the leaf uplinks, pod uplinks or
    switch tree slots the fallback lacked), in proportion to each op's growth. So a scenario that takes trees away
    moves the resource whose loss made instances fall back, not the NIC term.
    """
    split = {"compute": float(compute_s)}
    base_lb = [ts.bound_parts[0][1] * (lb / ts.lb_per_byte) if ts.bound_parts and ts.lb_per_byte > 0 else lb
               for lb, (_, ts, _) in zip(op_lb, op_meta)]
    multi = any(len(ts.bound_parts) > 1 for _, ts, _ in op_meta)
    base_ex = _exposed([np.array([lb]) for lb in base_lb], ops, np.array([compute_s]), 1)[0] if multi \
        else lb_exposed
    for ex, (_, ts, _) in zip(base_ex, op_meta):
        res = ts.bound_parts[0][0] if ts.bound_parts else ts.bound_by
        if res != "none" and float(ex[0]) > 0:
            split[res] = split.get(res, 0.0) + float(ex[0])
    if not multi:
        return split
    grow = float(sum(float(e[0]) for e in lb_exposed) - sum(float(e[0]) for e in base_ex))
    if grow <= 0:
        return split
    # each excess op weighs by how much its own exposed bound grew (by its excess x count when all of it hides)
    rows = [(max(float(full[0]) - float(base[0]), 0.0), (lb - blb) * op.count_per_step, ts.bound_parts[1:])
            for full, base, lb, blb, (op, ts, _) in zip(lb_exposed, base_ex, op_lb, base_lb, op_meta)
            if len(ts.bound_parts) > 1]
    use = 0 if sum(r[0] for r in rows) > 0 else 1
    weights: dict = {}
    for row in rows:
        extra = sum(x for _, x in row[2])
        for res, x in row[2]:
            weights[res] = weights.get(res, 0.0) + row[use] * x / extra
    total = sum(weights.values())
    for res, w in weights.items():
        split[res] = split.get(res, 0.0) + grow * (w / total if total > 0 else 1.0 / len(weights))
    return split


def _nvlink_share(ts, size: float, eff_scale: float, alpha_scale: float, samples: int) -> np.ndarray:
    """Per sample, the share of an op's time that is scale-up (NVLink) communication: the NVLink time over the
    NVLink plus network time, or all of it to whichever of the two binds when they overlap (pipelined)."""
    net = ts.net_per_byte if ts.net_per_byte is not None else np.zeros(samples)
    nv_t = size * ts.up_per_byte / eff_scale + ts.nv_latency_s * alpha_scale
    net_t = size * np.broadcast_to(net, (samples,)) / eff_scale + (ts.latency_s - ts.nv_latency_s) * alpha_scale
    if ts.pipelined:
        return (nv_t >= net_t).astype(float)
    total = nv_t + net_t
    return np.divide(nv_t, total, out=np.zeros(samples), where=total > 0)


def _link_usage(run: dict, model) -> dict:
    """Per link group a job crosses: (its mean share of the capacity, its bytes per step per link).

    ``{kind: {key: [utilization, bytes_per_step_per_link]}}``.
    """
    step = float(run["step"].mean())
    usage: dict = {}
    if step <= 0:
        return usage
    for op, (_, ts, _) in zip(run["ops"], run["op_meta"]):
        per_step = float(op.bytes) * op.count_per_step
        for cls, _busiest, _pi in ts.link_loads:
            d = usage.setdefault(cls.kind, {})
            cap = model.link_bps(cls.kind) / 8.0
            for key, load in zip(cls.member_ids.tolist(), cls.member_loads.tolist()):
                u = d.setdefault(key, [0.0, 0.0])
                u[0] += per_step * load / (cap * step)
                u[1] += per_step * load
    return usage


def _with_background(model, usage: list, me: int, *, active: bool = False):
    """A copy of ``model`` in which job ``me`` sees the other jobs on the link groups it shares with them.

    While two jobs move data through a group at once, max-min fairness splits it by their demand; another job
    is active there for the share ``u`` of the time it uses it alone. So job A loses, on each group,
    sum over other jobs B of u_B x bytes_B / (bytes_A + bytes_B) of the capacity (at most 90 %); with ``active``,
    the others are taken as active all the time (u = 1): what a request meets during their bursts.
    """
    from dataclasses import replace as _replace

    bg: dict = {}
    sb, ns = model.fabric.switch_base, model.fabric.n_switches
    mine = usage[me]
    for i, u in enumerate(usage):
        if i == me:
            continue
        for kind, per_key in u.items():
            if not kind.startswith(("leaf", "pod")):
                continue
            size = ns if kind.startswith("leaf") else max(model.pod_bins.size, 1)
            arr = bg.setdefault(kind, np.zeros(size))
            for key, (util, volume) in per_key.items():
                own = mine.get(kind, {}).get(key, (0.0, 0.0))[1]
                if own <= 0:
                    continue                      # a group this job never uses cannot slow it
                share = volume / (own + volume)
                arr[key - sb if kind.startswith("leaf") else key] += (1.0 if active else util) * share
    bg = {k: np.clip(v, 0.0, 0.9) for k, v in bg.items()}
    return _replace(model, background=bg)


def _competition(usage: list, me: int, runs: list, jobs: list) -> tuple[float, float]:
    """``(active share, period)`` of the other jobs on the link groups job ``me`` shares with them: the largest
    utilization any of them has of such a group (when alone), and the mean step of that job."""
    if not usage or not usage[me]:
        return 0.0, 0.0
    best, period = 0.0, 0.0
    for i, u in enumerate(usage):
        if i == me or jobs[i].serving is not None:
            continue
        for kind, per_key in u.items():
            if not kind.startswith(("leaf", "pod")):
                continue
            for key, (util, _vol) in per_key.items():
                if usage[me].get(kind, {}).get(key, (0.0, 0.0))[1] > 0 and util > best:
                    best, period = util, float(runs[i]["step"].mean())
    return min(best, 1.0), period


def _exposed(op_times: list, ops: list, compute: np.ndarray, samples: int):
    """Per-op exposed time (count included) and its sum: overlappable time is hidden up to the compute time."""
    if not ops:
        return [], np.zeros(samples)
    total = [t * op.count_per_step for t, op in zip(op_times, ops)]
    overl = [t * op.overlap_fraction if op.overlap_window_s is None else np.minimum(t * op.overlap_fraction,
                                                                                 op.overlap_window_s)
             for t, op in zip(total, ops)]
    sum_over = np.sum(overl, axis=0)
    hidden = np.minimum(sum_over, compute)
    share = np.divide(hidden, sum_over, out=np.zeros_like(sum_over, dtype=float), where=sum_over > 0)
    with np.errstate(invalid="ignore"):
        exposed = [np.where(np.isfinite(o), t - o * share, t) for t, o in zip(total, overl)]
    return exposed, np.sum(exposed, axis=0)


_HEALTHY_MODELS: dict = {}


def _healthy_model(fabric) -> NetworkModel:
    """The network model of ``fabric`` without failures or slow switches (what the trees of a healthy fabric are
    placed on: :mod:`fabric.evaluate.innetwork` compares a scenario's trees with them)."""
    return _network_model(fabric, Scenario(), np.random.default_rng(0), 16)[0]


def _healthy(scenario: Scenario) -> bool:
    return not (scenario.failed_links or scenario.failed_spines or scenario.slow_switches or scenario.fail_switches
                or scenario.fail_links or scenario.link_failure_prob > 0)


def _reuse_slot(reuse: dict | None, design, catalog, transport_overrides, samples: int) -> dict | None:
    """The part of ``reuse`` (see :func:`evaluate`) for this design, catalog, calibration and sample count."""
    if reuse is None:
        return None
    import json

    key = (design, id(catalog), json.dumps(transport_overrides, sort_keys=True, default=str), samples)
    slot = reuse.get(key)
    if slot is None:
        # the catalog is kept so that its id, part of the key, cannot be reused by another catalog
        slot = reuse[key] = {"catalog": catalog, "models": {}, "plans": {}, "memo": {}}
    return slot


def _network_model(fabric, scenario: Scenario, rng: np.random.Generator, samples: int, slot: dict | None = None):
    """``(model, key)``: the network model under ``scenario``'s failures and slow switches, and a key of what it
    depends on (None when it is not shared: random component faults per sample); from ``slot`` when there. The
    healthy fabric's model depends on the cabling only: kept per cabling, like the fabric itself."""
    if fabric.cache_key and _healthy(scenario):
        hit = _HEALTHY_MODELS.get(fabric.cache_key)
        if hit is None:
            hit = NetworkModel.build(fabric)
            if len(_HEALTHY_MODELS) >= 4:
                _HEALTHY_MODELS.pop(next(iter(_HEALTHY_MODELS)))
            _HEALTHY_MODELS[fabric.cache_key] = hit
        return hit, ((), (), (), 1.0)
    ls = np.flatnonzero(fabric.link_kind == LINK_KINDS.index("leaf-spine"))
    spines = np.flatnonzero((fabric.node_kind == 2) & (fabric.node_tier == 1))
    failed = rng.choice(ls, size=min(scenario.failed_links, ls.size), replace=False) if scenario.failed_links else []
    pick = rng.permutation(spines) if spines.size else spines
    failed_sw = pick[: scenario.failed_spines].tolist()
    slow_sw = pick[scenario.failed_spines: scenario.failed_spines + scenario.slow_switches].tolist()
    if scenario.fail_switches or scenario.fail_links:
        named_sw, named_links = resolve_failures(fabric, scenario.fail_switches, scenario.fail_links)
        failed_sw = sorted(set(failed_sw) | set(named_sw))
        failed = np.union1d(np.asarray(failed, np.int64), np.asarray(named_links, np.int64))
    slow_factor = scenario.slow_factor if slow_sw else 1.0
    key = None
    if not (scenario.link_failure_prob > 0 and ls.size):
        key = (tuple(sorted(int(x) for x in np.asarray(failed, np.int64).ravel())), tuple(int(x) for x in failed_sw),
               tuple(int(x) for x in slow_sw), float(slow_factor))
    if slot is not None and key is not None and key in slot["models"]:
        return slot["models"][key], key
    # the healthy model of this cabling, when kept, gives the pods and cuts (they do not depend on failures)
    healthy = _HEALTHY_MODELS.get(fabric.cache_key) if fabric.cache_key else None
    model = NetworkModel.build(fabric, failed_links=failed, failed_switches=failed_sw, slow_switches=slow_sw,
                               slow_factor=slow_factor, healthy=healthy)
    if slot is not None and key is not None:
        slot["models"][key] = model
    if scenario.link_failure_prob > 0 and ls.size:
        # component faults per sampled launch: each leaf-spine link down with the given probability
        counts = rng.binomial(ls.size, scenario.link_failure_prob, size=samples)
        faults = []
        for c in counts:
            down = rng.choice(ls, size=int(c), replace=False) if c else np.zeros(0, np.int64)
            leaves, per_leaf = np.unique(fabric.link_a[down], return_counts=True)
            faults.append(dict(zip(leaves.tolist(), per_leaf.tolist())))
        model.sample_faults = faults
    return model, key


def switch_labels(fabric) -> dict[str, int]:
    """Every switch's label (``fabric.node_label``: ``leaf3``, ``spine0@p1``, ...) -> its node id."""
    out = {}
    sw = np.arange(fabric.switch_base, fabric.switch_base + fabric.n_switches)
    tiers, planes = fabric.node_tier[sw], fabric.node_plane[sw]
    for t in np.unique(tiers):
        for p in np.unique(planes):
            ids = sw[(tiers == t) & (planes == p)]
            suffix = f"@p{int(p)}" if fabric.planes > 1 else ""
            for i, node in enumerate(ids.tolist()):
                out[f"{fabric.tier_names[int(t)]}{i}{suffix}"] = node
    return out


def resolve_failures(fabric, switches, links) -> tuple[list[int], list[int]]:
    """Node ids of the named switches and link ids of the named links (one cable each); DesignError naming any
    name the fabric does not have, or a leaf/router holding every NIC port of its servers (whose failure takes
    them out of the job: :func:`fabric.evaluate.dualtor.check_leaf_failure`)."""
    from fabric.errors import DesignError

    labels = switch_labels(fabric)

    def node(name: str) -> int:
        if name not in labels:
            tiers = ", ".join(sorted({re.sub(r"\d+(@p\d+)?$", "", k) for k in labels}))
            raise DesignError(f"scenario: this fabric has no switch {name!r} (its switches are named {tiers} "
                              f"followed by a number, e.g. {next(iter(labels), 'none')})")
        return labels[name]

    sw_ids = []
    for name in switches:
        n = node(name)
        if int(fabric.node_tier[n]) == 0:       # only where every NIC on it has another leaf (dualtor.py)
            from fabric.evaluate.dualtor import check_leaf_failure

            check_leaf_failure(fabric, n, name)
        sw_ids.append(n)
    link_ids = []
    for text in links:
        a, sep, b = str(text).partition("-")
        if not sep:
            raise DesignError(f"scenario: link {text!r}: name it by its two switches, e.g. leaf0-spine1")
        na, nb = node(a.strip()), node(b.strip())
        hit = np.flatnonzero(((fabric.link_a == na) & (fabric.link_b == nb)) |
                             ((fabric.link_a == nb) & (fabric.link_b == na)))
        if hit.size == 0:
            raise DesignError(f"scenario: no cable joins {a.strip()} and {b.strip()}")
        link_ids.append(int(hit[0]))
    return sw_ids, link_ids


def _compute_samples(job: Job, rng: np.random.Generator, samples: int, memo: dict | None = None) -> np.ndarray:
    if job.compute_time_s <= 0:
        return np.zeros(samples)
    if job.compute_cv <= 0:
        return np.full(samples, job.compute_time_s)
    u = rng.random(samples)
    if memo is None:
        z = _zmax_samples(job.world_size, u)
    else:       # the same job under other scenarios draws the same u (its seed): the maxima are the same
        key = ("zmax", job.world_size, u.tobytes())
        z = memo.get(key)
        if z is None:
            z = memo[key] = _zmax_samples(job.world_size, u)
    return job.compute_time_s * (1.0 + job.compute_cv * np.maximum(z, 0.0))


def _checkpoint_interference(job, storage, design, fabric, prof, comm, compute, rng, samples) -> np.ndarray:
    """Extra time when a checkpoint burst of this job's storage traffic overlaps the step (not with isolation).

    During a burst each NIC shares its link with one storage flow (fair share: half the bandwidth), so the part
    of the step's exposed communication that overlaps the burst takes twice as long.
    """
    out = np.zeros(samples)
    if design.storage_isolation or (job.serving is not None and design.serving_class):
        return out
    for s in storage:
        # a burst aimed at another job leaves this one alone; "storage"/"peers" bursts come from every job
        if not s.burst_bytes or s.burst_target not in (job.name, None, "storage", "peers"):
            continue
        nics = max(1, int(round(job.world_size * design.nics_per_gpu)))
        per_nic = s.burst_bytes / nics
        duration = _burst_duration(per_nic, design, fabric, prof)
        step = compute + comm
        p_overlap = np.minimum(1.0, (step + duration) / s.burst_period_s)
        hit = rng.random(samples) < p_overlap
        out += np.where(hit, np.minimum(duration, comm), 0.0)
    return out


def _burst_duration(per_nic: float, design, fabric, prof) -> float:
    """How long a checkpoint burst lasts: each NIC writes ``per_nic`` bytes to storage outside its leaf.

    The storage traffic class has its own routing (``design.storage_routing``, default the design's): all the
    leaf's NICs send through its uplinks, one flow each; under ECMP the burst lasts until the busiest uplink
    (the expected maximum over all leaves of the balls-in-bins load) has drained.
    """
    from fabric.evaluate.ballsbins import max_load_cdf

    ports = fabric.nic_ports.shape[1]
    rate = fabric.link_speed_bps / 8.0 * prof.bandwidth_efficiency
    nic_time = per_nic / (rate * ports)
    up_bps = fabric.structure.get("uplink_speed_gbps", [fabric.link_speed_bps / 1e9])[0] * 1e9
    up_rate = up_bps / 8.0 * prof.bandwidth_efficiency         # leaf uplinks may run at another speed
    s = fabric.structure
    down, up, leaves = int(s.get("leaf_down", 0)), int(s.get("leaf_up", 0)), int(s.get("leaves", 1) or 1)
    if fabric.tiers < 2 or up <= 0 or down <= 0:
        return nic_time
    flow = per_nic / ports
    routing = design.storage_routing or design.routing
    if routing == "ecmp":
        off, cdf = max_load_cdf(down, up)
        cdf_l = cdf ** max(leaves, 1)
        busiest = off + float(np.sum(1.0 - cdf_l[:-1]))
    elif routing == "adaptive":
        busiest = down / up * (1.0 + prof.adaptive_imbalance)
    elif routing == "computed":
        from fabric.evaluate.computed import computed_busiest_balls

        busiest = computed_busiest_balls(down, up)
    else:
        busiest = down / up
    link_time = busiest * flow / up_rate
    duration = max(nic_time, link_time)
    if routing == "spray" and not prof.reorder_tolerant and prof.reorder_slowdown > 1.0:
        from fabric.evaluate.transport import reorder_factor

        # one storage flow per NIC port; down / up of them per leaf uplink (docs/evaluator.md, "Reordering")
        duration *= float(reorder_factor(prof.reorder_slowdown, link_time / duration, up, 1.0, down / up,
                                         prof.reorder_floor))
    return duration


def _accumulate_hot(hot: dict, job, ops, op_meta, i99: int, step: np.ndarray, fabric, model) -> None:
    mean_step = float(step.mean())
    p99_step = float(step[i99])
    labels: dict = {}               # (kind, member) -> where, once per call (node_label builds a string)
    for op, (_, ts, _) in zip(ops, op_meta):
        size = float(op.bytes) * op.count_per_step
        for cls, busiest, _pi in ts.link_loads:
            member = int(cls.member_ids[0])
            where = labels.get((cls.kind, member))
            if where is None:
                where = labels[(cls.kind, member)] = fabric.node_label(member) \
                    if cls.kind.startswith(("leaf", "router local")) and \
                    fabric.switch_base <= member < fabric.switch_base + fabric.n_switches else f"#{member}"
            key = (job.name, cls.kind, cls.k, cls.n, cls.slow, where)
            h = hot.setdefault(key, {"job": job.name, "links": cls.kind, "example": where,
                                     "groups": cls.members, "links_per_group": cls.n,
                                     "link_gbps": model.link_bps(cls.kind) / 1e9, "mean_bytes": 0.0,
                                     "p99_bytes": 0.0, "ops": []})
            h["mean_bytes"] += size * cls.mean_load
            h["p99_bytes"] += size * float(busiest[i99])
            label = f"{op.name or op.kind}@{op.group}"
            if label not in h["ops"]:
                h["ops"].append(label)
    for h in hot.values():
        cap_bytes = h["link_gbps"] * 1e9 / 8.0
        h["mean_utilization"] = h["mean_bytes"] / (cap_bytes * mean_step) if mean_step > 0 else 0.0
        h["p99_sample_utilization"] = h["p99_bytes"] / (cap_bytes * p99_step) if p99_step > 0 else 0.0


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
