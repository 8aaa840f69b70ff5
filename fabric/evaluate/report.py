"""The evaluation's report (stage 5 of :mod:`fabric.evaluate.engine`): what :func:`fabric.evaluate.evaluate` returns,
made from the step-time samples of every job (:mod:`fabric.evaluate.step`): percentiles, per-op results, hot link
groups, serving latency and the p99 step's breakdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.evaluate.serving import serving_for_job
from fabric.evaluate.step import burst_duration, class_shares, competition, run_job, with_background

__all__ = ["Evaluation", "OpResult", "build_report", "step_stats", "primary_job"]


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


def step_stats(x: np.ndarray) -> dict:
    # nearest-rank percentiles (numpy's "inverted_cdf"): each is one of the samples, so the p99 step is exactly the
    # sample the p99 breakdown describes (the ceil(0.99 n)-th smallest, as ``i99`` below), and every page that shows
    # the p99 and its parts shows one number
    p = np.percentile(x, _PERCENTILES, method="inverted_cdf")
    return {"p50": float(p[0]), "p95": float(p[1]), "p99": float(p[2]), "mean": float(x.mean())}


def primary_job(compute_jobs: list, name: str | None = None) -> int:
    """The index of the job whose step time an evaluation reports: the job called ``name`` (the workload's
    ``primary``), else the largest training job (else the first)."""
    if name is not None:
        for i, job in enumerate(compute_jobs):
            if job.name == name:
                return i
    best = None
    for i, job in enumerate(compute_jobs):
        if best is None or (job.kind == "training" and (compute_jobs[best].kind != "training"
                                                        or job.world_size > compute_jobs[best].world_size)):
            best = i
    return best


def accumulate_hot(hot: dict, job, ops, op_meta, i99: int, step: np.ndarray, fabric, model) -> None:
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


def build_report(sim: dict, *, seed: int, samples: int, top_links: int = 10,
                 serving_curve: bool = False) -> Evaluation:
    """The :class:`Evaluation` of a simulation (:func:`fabric.evaluate.engine.simulate`): each job's percentiles and
    bound, every op's times and its part of the p99 sample, the hot link groups, serving jobs' request latency
    (:mod:`fabric.evaluate.serving`) and the primary job's p99 step by where its time goes."""
    design, scenario, fabric, bom, prof, model = (sim[k] for k in ("design", "scenario", "fabric", "bom", "prof",
                                                                    "model"))
    compute_jobs, placements, job_seeds = sim["compute_jobs"], sim["placements"], sim["job_seeds"]
    runs, alone, usage, notes, bases, storage = (sim[k] for k in ("runs", "alone", "usage", "notes", "bases",
                                                                  "storage"))

    job_results = {}
    all_ops: list[OpResult] = []
    hot: dict = {}
    for job, r in zip(compute_jobs, runs):
        step, i99 = r["step"], r["i99"]
        label = "latency_s" if job.kind == "inference" else "step_time_s"
        job_results[job.name] = {"kind": job.kind, label: step_stats(step), "lower_bound_s": r["lower"],
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
        accumulate_hot(hot, job, r["ops"], r["op_meta"], i99, step, fabric, model)
    serving = {}
    for i, job in enumerate(compute_jobs):
        if job.serving is not None:      # request-level latency (fabric.evaluate.serving)
            busy = None
            if usage and usage[i] and (not design.serving_class or design.serving_priority == "weighted"):
                busy = run_job(job, placements[i], with_background(model, usage, i, active=True,
                                                                   shares=class_shares(design, compute_jobs, i)),
                               job_seeds[i], **sim["job_ctx"][i])
            serving[job.name] = serving_for_job(
                job, alone[i], busy, competition(usage, i, runs, compute_jobs), storage, design,
                lambda per_nic, g=placements[i]: burst_duration(per_nic, design, fabric, prof, g), seed=seed, samples=samples,
                world_of={j.name: j.world_size for j in compute_jobs}, curve=serving_curve)
            job_results[job.name]["serving"] = serving[job.name]

    main_job = primary_job(compute_jobs, sim.get("primary"))
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
        design_name=design.name, scenario=scenario.name, seed=seed, samples=samples, step_time_s=step_stats(r["step"]),
        step_samples_s=r["step"], lower_bound_s=float(r["lower"]), compute_s=float(job.compute_time_s),
        ops=tuple(all_ops), hot_links=tuple(hot_list), jobs=job_results, cost_usd=bom.cost_usd, power_w=bom.power_w,
        p99_breakdown=breakdown, notes=tuple(notes), cable_count=bom.cable_count,
        radix=int(fabric.structure.get("radix", 0)), tiers=fabric.tiers, cost_by_category=bom.by_category(),
        lower_bound_by=r["lower_by"], lower_bound_split_s=r["lower_split"], serving=serving)
