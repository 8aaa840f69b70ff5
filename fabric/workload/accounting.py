"""One accounting of a job's work per step: what a "step" is, its compute, its calls and bytes, NVLink vs network.

Every view of a workload (the Workload page's tiles, its Jobs and operations tables, the compute-versus-communication
chart, the Design page's scale-up table, ``fabric parse`` summaries) and the evaluator count per the same step:

- a **training** job: one training step (``CommOp.count_per_step`` as the workload gives it);
- an **inference** job: one request. A serving job's prefill, KV-transfer and KV-offload ops are counted per
  request in the workload, its decode ops per token step (decode iteration); one request runs ``output_tokens - 1``
  decode iterations after its prefill (its first token comes from prefill), so per request a decode op runs
  ``count_per_step x (output_tokens - 1)`` times (:func:`step_ops`). The compute per request is likewise
  ``prefill_s + (output_tokens - 1) x decode_step_s`` (``Job.compute_time_s``): the request's critical path,
  unloaded. Each decode iteration carries the whole decode batch, so these are the bytes on the request's path,
  not its share of the replica's traffic (that is the decode part divided by the batch: docs/serving.md).

Bytes follow the nccl-tests size convention of :mod:`fabric.workload.model` (per rank, per call). An op's bytes are
NVLink bytes when every instance of its process group lies inside one server (ranks packed on consecutive GPUs from
a server boundary, fabric's ``packed`` placement of one job), network bytes otherwise (a hierarchical algorithm still
moves part of those over NVLink); a group whose instances cannot be derived counts as spanning servers when it has
more than one rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.errors import WorkloadError
from fabric.workload.model import CommOp, Job, step_ops

__all__ = ["OpAccount", "JobAccount", "step_unit", "step_text", "step_ops", "job_account"]


def step_unit(job: Job) -> str:
    """What one step of ``job`` is: ``"request"`` for an inference job, ``"step"`` (a training step) otherwise."""
    return "request" if job.kind == "inference" else "step"


def step_text(job: Job) -> str:
    """The step of ``job`` in words: "training step", or for a serving job "request: prefill + N token steps"."""
    if job.serving is not None:
        n = max(job.serving.output_tokens - 1, 0)
        return f"request: prefill + {n:,} token step{'s' if n != 1 else ''}"
    return "request" if job.kind == "inference" else "training step"


@dataclass(frozen=True)
class OpAccount:
    """One op per step of its job: calls, bytes (nccl-tests convention) and where they go ("nvlink"/"network")."""

    op: CommOp
    calls_per_step: float
    bytes_per_step: float
    where: str


@dataclass(frozen=True)
class JobAccount:
    """A job per step of its own (``unit``: "step" or "request"; ``unit_text`` in words)."""

    job: str
    kind: str
    unit: str
    unit_text: str
    compute_s: float
    ops: tuple[OpAccount, ...]

    @property
    def calls_per_step(self) -> float:
        return float(sum(o.calls_per_step for o in self.ops))

    @property
    def bytes_per_step(self) -> float:
        return float(sum(o.bytes_per_step for o in self.ops))

    @property
    def nvlink_bytes_per_step(self) -> float:
        return float(sum(o.bytes_per_step for o in self.ops if o.where == "nvlink"))

    @property
    def network_bytes_per_step(self) -> float:
        return float(sum(o.bytes_per_step for o in self.ops if o.where == "network"))


def _inside_server(job: Job, gpus_per_node: int) -> dict[str, bool]:
    from fabric.workload.groups import group_instances

    gpn = max(1, int(gpus_per_node))
    inside: dict[str, bool] = {}
    for g in job.groups:
        try:
            inst = group_instances(g, job.world_size)
            inside[g.name] = bool(((inst // gpn) == (inst[:, :1] // gpn)).all())
        except WorkloadError:
            inside[g.name] = g.size <= 1
    return inside


def job_account(job: Job, gpus_per_node: int, *, compute_s: float | None = None) -> JobAccount:
    """``job`` per step of its own (module docstring) with its process groups on ``gpus_per_node``-GPU servers;
    ``compute_s`` replaces the workload's compute per step (e.g. scaled to the cluster's GPU,
    :func:`fabric.evaluate.gpu_compute.compute_basis`)."""
    inside = _inside_server(job, gpus_per_node)
    ops = tuple(OpAccount(op, float(op.count_per_step), float(op.bytes_per_step),
                          "nvlink" if inside.get(op.group, False) else "network") for op in step_ops(job))
    return JobAccount(job.name, job.kind, step_unit(job), step_text(job),
                      float(job.compute_time_s if compute_s is None else compute_s), ops)
