"""Tables of what a workload says (from :func:`fabric.workload.summary.summarize`), for the workload page."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from fabric.workload.summary import size_label

__all__ = ["batch_text", "files_table", "jobs_table", "groups_table", "ops_table", "unparsed_table", "gpus_needed",
           "cluster_gpus", "plan_degrees", "parallelism_text", "compute_comm_rows", "workload_figures",
           "figures_caption", "steps_observed_text", "plan_field_reasons", "PLAN_FIELD_HELP"]


def files_table(reports) -> pd.DataFrame:
    """One row per input file: name, detected format, whether it parsed, the jobs it went into or the error."""
    return pd.DataFrame([{"file": r.name, "format": r.format or "?", "parsed": "yes" if r.ok else "no",
                          "jobs or error": ", ".join(r.jobs) if r.ok else (r.error or "")} for r in reports],
                        columns=["file", "format", "parsed", "jobs or error"])


def jobs_table(summary: Mapping, compute_s: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per job: kind, ranks, what its step is, compute and communication per step, overlap.
    ``compute_s`` (job name -> seconds) replaces the workload's compute per step, e.g. on the cluster's GPU
    (:func:`fabric.evaluate.gpu_compute.compute_basis`)."""
    rows = []
    for j in summary["jobs"]:
        rows.append({"job": j["name"], "kind": j["kind"], "ranks (GPUs)": j["world_size"],
                     "step": j.get("step", "training step"),
                     "compute per step (s)": (compute_s or {}).get(j["name"], j["compute_time_s"]),
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


def workload_figures(workload, gpus_per_node: int, gpu_model: str, catalog=None) -> dict | None:
    """The Workload page's headline figures: the first training/inference job per step of its own
    (:func:`fabric.workload.accounting.job_account`: a training step, or one request of a serving job) with its
    compute on ``gpu_model``, and every such job's compute basis on it
    (:func:`fabric.evaluate.gpu_compute.compute_basis`). ``{"account", "basis", "bases": {job name: basis},
    "jobs"}`` (``jobs``: how many training/inference jobs), or None when the workload has none."""
    from fabric.evaluate.gpu_compute import compute_basis
    from fabric.workload.accounting import job_account

    jobs = [j for j in workload.jobs if j.kind != "storage"]
    if not jobs:
        return None
    bases = {j.name: compute_basis(j, gpu_model, catalog) for j in jobs}
    first = bases[jobs[0].name]
    return {"account": job_account(jobs[0], gpus_per_node, compute_s=first.compute_s), "basis": first,
            "bases": bases, "jobs": len(jobs)}


def figures_caption(figs: Mapping, gpus_per_node: int) -> str:
    """What the headline figures of :func:`workload_figures` count: the step, bytes convention, NVLink vs network."""
    acc = figs["account"]
    job = f"{acc.job}'s" if figs["jobs"] > 1 else "the job's"
    if acc.unit == "request":
        what = (f"Per request ({acc.unit_text}; each token step is one decode iteration of the whole batch, so these "
                f"are the bytes on a request's path): {job} ")
    else:
        what = f"Per training step: {job} "
    return (what + f"{acc.calls_per_step:,.6g} calls, {size_label(acc.bytes_per_step)} per rank (nccl-tests size "
            f"convention), split by where the ops' process groups run with ranks packed on {gpus_per_node}-GPU "
            "servers: groups inside one server stay on NVLink; groups spanning servers cross the network (their "
            "hierarchical algorithms still move part of those bytes over NVLink). docs/serving.md has the hand count.")


def batch_text(workload) -> str | None:
    """The global batch of a workload built from a plan, in words: sequences and tokens per step, micro-batches per
    data-parallel replica and the pipeline bubble (None for a workload read from traces, which records no batch)."""
    f = dict(workload.facts)
    try:
        seqs, tokens = int(f["global batch (sequences)"]), int(f["tokens per step"])
        micro, per, bubble = int(f["micro-batches per step"]), int(f["micro-batch (sequences)"]), float(f["pipeline bubble"])
    except (KeyError, ValueError):
        return None
    return (f"Global batch {seqs:,} sequences = {tokens / 1e6:.3g} M tokens per step; each data-parallel replica runs "
            f"{micro:,} micro-batch{'es' if micro != 1 else ''} of {per:,} sequence{'s' if per != 1 else ''}; "
            f"pipeline bubble {bubble:.0%} of the step's compute.")


def groups_table(summary: Mapping) -> pd.DataFrame:
    """One row per process group: job, name, size, parallelism role and how it was decided, ranks."""
    rows = []
    for j in summary["jobs"]:
        for g in j["groups"]:
            rows.append({"job": j["name"], "group": g["name"], "size (ranks)": g["size"], "role": g["role"],
                         "role from": g["role_source"], "ranks": g["ranks"] or "not in the trace"})
    return pd.DataFrame(rows, columns=["job", "group", "size (ranks)", "role", "role from", "ranks"])


def ops_table(summary: Mapping) -> pd.DataFrame:
    """One row per op: job, kind, message size, group, calls and bytes per step of its job (a serving job's: per
    request, its decode ops once per token step), overlap, label."""
    rows = []
    for j in summary["jobs"]:
        for op in j["ops"]:
            calls = op.get("calls_per_step", op["count_per_step"])
            rows.append({"job": j["name"], "collective": op["kind"], "message size": size_label(op["bytes"]),
                         "group": op["group"], "calls per step": calls,
                         "bytes per step": size_label(op["bytes"] * calls),
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
    mp = out["tp"] * out["pp"] * out["cp"]
    if not any(g.role == "dp" for g in job.groups):
        out["dp"] = max(1, int(job.world_size) // mp)
    elif out["cp"] > 1 and out["dp"] * mp > job.world_size and out["dp"] % out["cp"] == 0:
        out["dp"] //= out["cp"]         # Megatron's gradient group holds the context-parallel ranks too: DP x CP
    return out


#: What each field of the Workload page's plan form sets, when it applies.
PLAN_FIELD_HELP = {
    "tp": "GPUs that split every layer's matrices (tensor parallelism); they exchange activations at every layer, "
          "so the group should stay inside one server's NVLink.",
    "pp": "Pipeline stages the layers are split into; neighbouring stages send activations point to point.",
    "ep": "GPUs the experts of a mixture-of-experts layer are spread over; tokens reach their experts by all-to-all.",
    "zero_stage": "ZeRO shards the optimizer state (1), the gradients too (2) and the weights too (3) over the "
                  "data-parallel GPUs, trading memory for communication.",
}


def plan_field_reasons(preset) -> dict[str, str | None]:
    """For each plan setting of the Workload page's form (``tp``, ``pp``, ``ep``, ``zero_stage``), None when it
    applies to ``preset`` (:class:`fabric.workload.presets.Preset`), else why not, in words for the field's help:
    a recommender has no model parallelism, a service no pipeline and no optimizer, and expert parallelism needs a
    model with experts (a dense model has none)."""
    kind = preset.kind
    model = preset.model
    experts = int(getattr(model, "experts", 1) or 1)
    name = getattr(model, "name", preset.name)
    out: dict[str, str | None] = {k: None for k in ("tp", "pp", "ep", "zero_stage")}
    if kind == "recommendation":
        why = (f"{name} is a recommender: its embedding tables are sharded table by table over every GPU "
               "(all-to-all) and its small MLPs are replicated, so its plan has no tensor, pipeline or expert "
               "parallelism and no ZeRO stage")
        return {k: why for k in out}
    if kind in ("inference", "serving"):
        out["zero_stage"] = "a service keeps no optimizer state, so ZeRO does not apply"
    if kind == "serving":
        out["pp"] = ("this service runs replicas without pipeline stages (prefill and decode on each replica's "
                     "tensor-parallel GPUs)")
    if experts <= 1:
        out["ep"] = (f"{name} is a dense model (no experts): expert parallelism applies to mixture-of-experts "
                     "models only")
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
    """Per job, per step of its own (a serving job: one request), all from the evaluation: compute (on the
    design's GPU), and in the p99 sample the communication if every op ran back to back (calls x each call's time
    in that sample) and the part of it left exposed. Both communication figures come from the same sample, and
    exposed time is what compute does not hide of the same calls, so ``exposed_s <= comm_s``."""
    rows = []
    for j in workload.jobs:
        if j.kind == "storage" or j.name not in evaluation.jobs:
            continue
        ops = [o for o in evaluation.ops if o.job == j.name]
        rows.append({"job": j.name, "compute_s": float(evaluation.jobs[j.name]["compute_s"]),
                     "comm_s": float(sum(o.time_in_p99_sample_s * o.count_per_step for o in ops)),
                     "exposed_s": float(sum(o.exposed_in_p99_sample_s for o in ops))})
    return rows
