"""Compute on the design's GPU: one rule for a workload whose compute times come from another GPU.

A job's compute times were measured on one GPU (a trace) or synthesized for one (a plan): ``Job.compute_gpu``
names it (a catalog GPU model, or the device name a trace gives) and ``Job.compute_gpu_tflops`` gives the dense
BF16 rate a synthesized job was computed at. Evaluated on a design of another GPU model, the compute is scaled by
the ratio of the dense BF16 rates, source over target::

    compute on the design = compute in the workload x (source bf16_tflops / design's bf16_tflops)

with the source rate from ``compute_gpu_tflops`` when the workload gives it, else the catalog row of
``compute_gpu``, and the design's from the catalog row of ``design.gpu_model``.

What scales: the compute per step (``compute_time_s``) and with it its jitter (``compute_cv`` is a coefficient of
variation, so the straggler spread scales with the mean), and a serving job's ``prefill_s`` and ``decode_step_s``.
What does not: communication (bytes are the same on any GPU; their time is what the fabric model computes) and op
counts.

When the source GPU is unknown (a trace that names no device, a workload file without ``compute_gpu``) or has no
row in the catalog (a V100 trace), the compute is kept as it is and the evaluation carries a note saying so
(:func:`compute_basis`; the same sentence on the Workload and Design pages, in the brief, the HTML report and
``fabric evaluate``).

Known limit: one rate for all compute. A decode iteration bound by HBM bandwidth scales with HBM instead (B200 over
H100: 8 / 3.35 TB/s = 2.39x, against 2,250 / 989 = 2.28x in BF16), and a different MFU on the new GPU is not
modelled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from fabric.units import time_text as _t
from fabric.workload.model import Job, Workload

__all__ = ["ComputeBasis", "compute_basis", "scaled_job", "on_gpu", "basis_notes"]


@dataclass(frozen=True)
class ComputeBasis:
    """How a job's compute is taken on a GPU: ``factor`` = compute on ``target`` / compute in the workload.

    ``status``: "same" (the source's BF16 rate equals the target's), "scaled", or "kept" (unknown source, or a
    source without a catalog row: factor 1 and a ``note`` saying so). ``compute_s`` is the compute per step on the
    target, ``workload_compute_s`` the workload's."""

    job: str
    source: str | None
    source_tflops: float | None
    target: str
    target_tflops: float
    factor: float
    status: str
    workload_compute_s: float
    compute_s: float
    unit: str
    note: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def _rate(cat, model: str | None) -> float | None:
    if not model or model not in cat.models("gpus"):
        return None
    return cat.gpu(model).bf16_flops / 1e12


def compute_basis(job: Job, gpu_model: str, catalog=None) -> ComputeBasis:
    """The rule of the module docstring for ``job`` on GPU ``gpu_model`` (a catalog row)."""
    from fabric.catalog import default_catalog
    from fabric.workload.accounting import step_unit

    cat = catalog or default_catalog()
    target = cat.gpu(gpu_model).bf16_flops / 1e12
    unit = step_unit(job)
    src = job.compute_gpu
    src_rate = job.compute_gpu_tflops if job.compute_gpu_tflops is not None else _rate(cat, src)
    before = float(job.compute_time_s)
    if before <= 0 and job.serving is None:          # no compute to scale (e.g. measured collectives only)
        return ComputeBasis(job.name, src, src_rate, gpu_model, target, 1.0, "same", 0.0, 0.0, unit, None)
    if src_rate is None:
        why = (f"it was measured on {src}, which has no row in the catalog (no BF16 rate to scale by)" if src else
               "the input does not name the GPU it ran on")
        note = (f"{job.name}: compute kept as in the workload ({_t(before)} per {unit}): {why}, so it is not scaled "
                f"to the cluster's {gpu_model} ({target:,.4g} TFLOPS BF16); if it ran on another GPU, the compute is "
                f"off by the ratio of their BF16 rates")
        return ComputeBasis(job.name, src, None, gpu_model, target, 1.0, "kept", before, before, unit, note)
    factor = src_rate / target
    if factor == 1.0:
        return ComputeBasis(job.name, src, src_rate, gpu_model, target, 1.0, "same", before, before, unit, None)
    after = before * factor
    what = f"{src} ({src_rate:,.4g} TFLOPS BF16)" if src else f"a GPU of {src_rate:,.4g} TFLOPS BF16"
    note = (f"{job.name}: compute scaled from {what} to the cluster's {gpu_model} ({target:,.4g} TFLOPS): x "
            f"{src_rate:,.4g} / {target:,.4g} = {factor:.4g}, {_t(before)} -> {_t(after)} per {unit} (compute and "
            f"its jitter; communication is timed on the fabric)")
    return ComputeBasis(job.name, src, src_rate, gpu_model, target, factor, "scaled", before, after, unit, note)


def scaled_job(job: Job, basis: ComputeBasis) -> Job:
    """``job`` with its compute (and a serving job's prefill and decode compute) multiplied by ``basis.factor``."""
    if basis.factor == 1.0:
        return job
    f = basis.factor
    serving = job.serving
    if serving is not None:
        serving = replace(serving, prefill_s=serving.prefill_s * f, decode_step_s=serving.decode_step_s * f)
    return replace(job, compute_time_s=job.compute_time_s * f, serving=serving)


def on_gpu(workload: Workload, gpu_model: str, catalog=None) -> tuple[Workload, tuple[ComputeBasis, ...]]:
    """``workload`` with every training and inference job's compute on ``gpu_model``, and each such job's basis
    (storage jobs have no compute and are left out)."""
    bases, jobs = [], []
    for job in workload.jobs:
        if job.kind == "storage":
            jobs.append(job)
            continue
        b = compute_basis(job, gpu_model, catalog)
        bases.append(b)
        jobs.append(scaled_job(job, b))
    return workload.with_jobs(jobs), tuple(bases)


def basis_notes(evaluation) -> list[tuple[str, str]]:
    """``(status, note)`` of every job of an evaluation whose compute was scaled or kept (the notes the Design,
    Compare and Brief pages, the HTML reports and ``fabric evaluate`` show)."""
    out = []
    for j in evaluation.jobs.values():
        b = j.get("compute_basis") or {}
        if b.get("note"):
            out.append((b["status"], b["note"]))
    return out
