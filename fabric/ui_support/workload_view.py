"""Tables of what a workload says (from :func:`fabric.workload.summary.summarize`), for the workload page."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from fabric.workload.summary import size_label

__all__ = ["files_table", "jobs_table", "groups_table", "ops_table", "unparsed_table", "gpus_needed",
           "cluster_gpus", "plan_degrees", "parallelism_text", "compute_comm_rows", "comm_split",
           "steps_observed_text"]


def files_table(reports) -> pd.DataFrame:
    """One row per input file: name, detected format, whether it parsed, the jobs it went into or the error."""
    return pd.DataFrame([{"file": r.name, "format": r.format or "?", "parsed": "yes" if r.ok else "no",
                          "jobs or error": ", ".join(r.jobs) if r.ok else (r.error or "")} for r in reports],
                        columns=["file", "format", "parsed", "jobs or error"])


def jobs_table(summary: Mapping) -> pd.DataFrame:
    """One row per job: kind, ranks, compute and communication per step, overlap."""
    rows = []
    for j in summary["jobs"]:
        rows.append({"job": j["name"], "kind": j["kind"], "ranks (GPUs)": j["world_size"],
                     "compute per step (s)": j["compute_time_s"],
                     "communication per step": size_label(j["comm_bytes_per_step"]),
                     "calls per step": j["comm_calls_per_step"],
                     "bytes hidden behind compute": f"{j['overlap_fraction_bytes_weighted']:.0%}",
                     "steps observed": steps_observed_text(j)})
    return pd.DataFrame(rows)


def steps_observed_text(job_summary: Mapping) -> str:
    """How many training steps the input showed for a job, or why there is no count (a synthesized job has no
    steps to observe; some traces mark none)."""
    n = int(job_summary.get("steps_observed") or 0)
    if n > 0:
        return f"{n:,}"
    if any(str(note).startswith("synthesized") for note in job_summary.get("notes", ())):
        return "n/a: synthesized from a plan"
    return "none marked in the input"


def comm_split(workload, gpus_per_node: int) -> dict[str, float]:
    """Bytes per step of the non-storage jobs (nccl-tests size convention) split by where the op's process groups
    run, with ranks placed on consecutive GPUs from a server boundary (fabric's ``packed`` placement of one job):

    - ``nvlink_bytes``: ops whose every group instance lies inside one server (scale-up domain, NVLink only);
    - ``network_bytes``: ops whose groups span servers, so they cross the scale-out network (a hierarchical
      algorithm still moves part of these bytes over NVLink).

    A group whose instances cannot be derived counts as spanning servers when it is larger than a server.
    """
    from fabric.errors import WorkloadError
    from fabric.evaluate.placement import group_instances

    gpn = max(1, int(gpus_per_node))
    out = {"nvlink_bytes": 0.0, "network_bytes": 0.0}
    for job in workload.jobs:
        if job.kind == "storage":
            continue
        inside: dict[str, bool] = {}
        for g in job.groups:
            try:
                inst = group_instances(g, job.world_size)
                inside[g.name] = bool(((inst // gpn) == (inst[:, :1] // gpn)).all())
            except WorkloadError:
                inside[g.name] = g.size <= 1
        for op in job.ops:
            where = "nvlink_bytes" if inside.get(op.group, False) else "network_bytes"
            out[where] += float(op.bytes_per_step)
    return out


def groups_table(summary: Mapping) -> pd.DataFrame:
    """One row per process group: job, name, size, parallelism role and how it was decided, ranks."""
    rows = []
    for j in summary["jobs"]:
        for g in j["groups"]:
            rows.append({"job": j["name"], "group": g["name"], "size (ranks)": g["size"], "role": g["role"],
                         "role from": g["role_source"], "ranks": g["ranks"] or "not in the trace"})
    return pd.DataFrame(rows, columns=["job", "group", "size (ranks)", "role", "role from", "ranks"])


def ops_table(summary: Mapping) -> pd.DataFrame:
    """One row per op: job, kind, message size, group, calls per step, bytes per step, overlap, label."""
    rows = []
    for j in summary["jobs"]:
        for op in j["ops"]:
            rows.append({"job": j["name"], "collective": op["kind"], "message size": size_label(op["bytes"]),
                         "group": op["group"], "calls per step": op["count_per_step"],
                         "bytes per step": size_label(op["bytes"] * op["count_per_step"]),
                         "hidden behind compute": f"{op['overlap_fraction']:.0%}", "label": op["name"]})
    return pd.DataFrame(rows, columns=["job", "collective", "message size", "group", "calls per step",
                                       "bytes per step", "hidden behind compute", "label"])


def unparsed_table(summary: Mapping) -> pd.DataFrame:
    """Communication seen in the traces but not turned into ops, with the reason."""
    return pd.DataFrame([{"file": u["source"], "what": u["name"], "count": u["count"],
                          "time in trace (s)": u["total_time_s"], "reason": u["reason"]}
                         for u in summary.get("unparsed", [])],
                        columns=["file", "what", "count", "time in trace (s)", "reason"])


def gpus_needed(workload) -> int:
    """GPUs the workload's jobs occupy together (storage jobs use none)."""
    return int(sum(j.world_size for j in workload.jobs if j.kind != "storage"))


def cluster_gpus(workload, gpus_per_node: int = 8) -> int:
    """The smallest whole number of ``gpus_per_node``-GPU servers that holds the workload, in GPUs."""
    need = max(1, gpus_needed(workload))
    return int(math.ceil(need / gpus_per_node) * gpus_per_node)


def plan_degrees(workload) -> dict[str, int]:
    """Parallelism degrees of the first training/inference job from its process groups: TP, PP, EP and CP are the
    largest group of that role (1 when there is none); DP is the largest data-parallel group, else the ranks the
    model-parallel groups leave, world size / (TP x PP x CP) (Megatron-LM's identity world = TP x PP x CP x DP;
    expert parallelism lies within DP). So a job whose only group spans every rank (role ``world``: a DLRM-style
    hybrid, or a trace without group information) is DP over the world, never DP 1, and a service of TP 8
    replicas on 256 GPUs is DP 32 (its replicas)."""
    out = {"tp": 1, "pp": 1, "ep": 1, "cp": 1, "dp": 1}
    job = _first_job(workload)
    if job is None:
        return out
    for g in job.groups:
        if g.role in out and g.size > out[g.role]:
            out[g.role] = g.size
    if not any(g.role == "dp" for g in job.groups):
        out["dp"] = max(1, int(job.world_size) // (out["tp"] * out["pp"] * out["cp"]))
    return out


def parallelism_text(workload) -> str:
    """The inferred parallelism in words (:func:`plan_degrees`): ``TP 2, EP 8, DP 512``; when no data-parallel
    group is recorded, where DP comes from."""
    job = _first_job(workload)
    deg = plan_degrees(workload)
    text = ", ".join(f"{k.upper()} {v:,}" for k, v in deg.items() if v > 1 or k == "dp")
    if job is None or any(g.role == "dp" for g in job.groups):
        return text
    world = [g for g in job.groups if g.role == "world" and g.size == job.world_size]
    if world and all(g.role in ("world", "unknown") for g in job.groups):
        return (f"{text} (one {job.world_size:,}-rank group spans every rank and no data-parallel group is "
                f"recorded: DP is the whole world)")
    what = "replicas: " if job.kind == "inference" else ""
    return (f"{text} ({what}the ranks that TP x PP x CP leave of {job.world_size:,}; no data-parallel group is "
            f"recorded)")


def _first_job(workload):
    return next((j for j in workload.jobs if j.kind != "storage"), None)


def compute_comm_rows(workload, evaluation) -> list[dict]:
    """Per job: compute per step, communication per step if every op ran back to back (p50 times on the
    evaluated fabric), and communication exposed in the p99 step."""
    rows = []
    for j in workload.jobs:
        if j.kind == "storage":
            continue
        ops = [o for o in evaluation.ops if o.job == j.name]
        rows.append({"job": j.name, "compute_s": float(j.compute_time_s),
                     "comm_s": float(sum(o.time_p50_s * o.count_per_step for o in ops)),
                     "exposed_s": float(sum(o.exposed_in_p99_sample_s for o in ops))})
    return rows
