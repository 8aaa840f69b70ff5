"""What every plan of a training job shares: the model, the GPU count, the global batch and the compute rule.

A :class:`PlanBasis` comes from a synth preset (:func:`basis_from_preset`), a model shape (:func:`basis_from_model`,
``fabric plans --params ...``) or a workload whose model fabric recognises (:func:`basis_from_workload`). Every plan
of one basis trains the same tokens per step (``global_batch`` sequences of ``seq_len``), so their step times compare.

Compute of a plan (the one rule, :func:`fabric.workload.synth.synthesize`)::

    compute per step = model FLOPs per step / (gpus x gpu_flops x mfu) x (1 + pipeline bubble)

with the same ``mfu`` for every plan, and the result taken to the design's GPU by :mod:`fabric.evaluate.gpu_compute`
(the ratio of BF16 rates). A preset's MFU is its source's; a trace's is the one its measured compute implies at its
own plan, so a plan fabric derives is on the same footing as the measured one.

Recognising a workload (:func:`basis_from_workload`): the model is the preset a synthesized workload names in its
facts, else a training model whose name is the job's (or the workload's), e.g. a Kineto trace of ``llama3-70b``. The
plan is read from the job itself: tp, pp, cp and ep from its process groups' sizes (dp = world / (tp x pp x cp)),
the micro-batch size from the tensor-parallel message (``micro_batch x seq_len / cp x hidden x dtype_bytes``), the
micro-batches per step from the tensor-parallel call count (``4 x layers / pp`` per micro-batch), the interleaving
from the pipeline send count (``2 x micro-batches x chunks``), the ZeRO stage from the data-parallel collectives, and
sequence parallelism from the tensor-parallel kinds (all-gather and reduce-scatter). The model is recognised only
when its shape explains the trace: the tensor-parallel message is a whole number of sequences, and the
data-parallel gradient bytes per step are a rank's parameters times 1, 2 or 4 bytes (within 2 %); otherwise :class:`fabric.errors.WorkloadError` says what
did not match and how to give the shape instead.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

from fabric.errors import WorkloadError
from fabric.workload.model import Job, Workload
from fabric.workload.synth import (
    ModelSpec, ParallelPlan, pipeline_bubble_fraction, training_flops_per_step, validate_plan,
)

__all__ = ["PlanBasis", "basis_from_preset", "basis_from_model", "basis_from_workload", "primary_training_job",
           "plan_key"]


def plan_key(plan: ParallelPlan) -> tuple:
    """What tells two plans apart: degrees, ZeRO stage, micro-batch, rank order, chunks, sequence parallelism."""
    return (plan.tp, plan.pp, plan.dp, plan.cp, plan.ep, plan.effective_zero, plan.micro_batch, plan.micro_batches,
            plan.order, plan.virtual_stages, plan.sequence_parallel, plan.recompute, plan.gemm_precision)


@dataclass(frozen=True)
class PlanBasis:
    """The fixed part of every plan of one training job (see the module docstring).

    ``given`` is the workload's own plan (None when the basis comes from a bare model shape without one);
    ``measured`` says the given plan's job is a trace's (its compute and bytes are kept as measured); ``workload``
    is the original workload, whose other jobs (checkpoints, other tenants) every plan keeps."""

    model: ModelSpec
    gpus: int
    global_batch: int
    mfu: float
    gpu_flops: float
    compute_gpu: str | None
    given: ParallelPlan | None
    source: str
    measured: bool = False
    job_name: str = ""
    compute_cv: float = 0.02
    attention_flops: bool = True
    #: False when the GPU the compute was measured on is unknown: ``gpu_flops`` x ``mfu`` is then the rate the
    #: measurement implies, and derived plans keep their compute as the measured one is kept (not scaled)
    rate_known: bool = True
    workload: Workload | None = field(default=None, compare=False, repr=False)

    @cached_property
    def key(self) -> str:
        """A stable key of the basis' content (for caches)."""
        from fabric.workload.model import workload_key

        parts = [asdict(self.model), self.gpus, self.global_batch, self.mfu, self.gpu_flops, self.compute_gpu,
                 None if self.given is None else asdict(self.given), self.measured, self.job_name, self.compute_cv,
                 self.attention_flops, self.rate_known, None if self.workload is None else workload_key(self.workload)]
        return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def is_given(self, plan: ParallelPlan) -> bool:
        """True when ``plan`` is the workload's own plan."""
        return self.given is not None and plan_key(plan) == plan_key(self.given)

    def mfu_rule_s(self, plan: ParallelPlan) -> float:
        """Compute per step of ``plan`` at ``gpu_flops`` and the basis' ``mfu`` (the same MFU for every plan)."""
        flops = training_flops_per_step(self.model, plan, attention=self.attention_flops)
        return flops / (self.gpus * self.gpu_flops * self.mfu) * (1.0 + pipeline_bubble_fraction(plan))

    @cached_property
    def reference_plan(self) -> ParallelPlan:
        """The plan the basis' compute is stated at: the given plan, else plain data parallelism (every GPU a whole
        model replica, micro-batches of one sequence)."""
        if self.given is not None:
            return self.given
        return ParallelPlan(dp=self.gpus, micro_batch=1, grad_accum=max(1, -(-self.global_batch // self.gpus)),
                            zero_stage=1)

    @cached_property
    def roofline(self):
        """The roofline of the GPU the compute is stated for (:func:`fabric.workload.compute_model.roofline_for`;
        an unknown GPU: H100's curve at ``gpu_flops``)."""
        from types import SimpleNamespace

        from fabric.catalog import default_catalog
        from fabric.errors import CatalogError
        from fabric.workload.compute_model import roofline_for

        try:
            gpu = default_catalog().gpu(self.compute_gpu) if self.compute_gpu else None
        except CatalogError:
            gpu = None
        return roofline_for(gpu if gpu is not None and gpu.bf16_flops == self.gpu_flops else
                            SimpleNamespace(model=self.compute_gpu or "h100-sxm", bf16_flops=self.gpu_flops))

    @cached_property
    def _scale(self) -> float:
        from fabric.workload.compute_model import step_compute

        ref = self.reference_plan
        return self.mfu_rule_s(ref) / step_compute(self.model, ref, self.roofline).step_s

    def compute_s(self, plan: ParallelPlan) -> float:
        """Compute per step of ``plan`` at ``gpu_flops``: the compute model's time of the plan's kernels
        (:func:`fabric.workload.compute_model.step_compute`), scaled so that the reference plan (the given one)
        takes what the basis states for it (measured, or its source's MFU): plans differ by their kernel shapes,
        recomputation and bubble, and the given plan keeps its compute."""
        from fabric.workload.compute_model import step_compute

        if self.given is not None and plan_key(plan) == plan_key(self.given):
            return self.mfu_rule_s(plan)
        return step_compute(self.model, plan, self.roofline).step_s * self._scale


def primary_training_job(workload: Workload) -> Job:
    """The largest training job (the one evaluate reports); WorkloadError when there is none."""
    jobs = [j for j in workload.jobs if j.kind == "training"]
    if not jobs:
        raise WorkloadError("plans are for training: the workload has no training job (serving and recommendation "
                            "jobs keep their deployment)")
    return max(jobs, key=lambda j: j.world_size)


def basis_from_preset(name: str, gpus: int, **overrides) -> PlanBasis:
    """The basis of transformer training preset ``name`` at ``gpus`` GPUs (its default plan is the given plan)."""
    from fabric.workload.presets import H100_BF16_FLOPS, preset_mfu, preset_plan, preset_workload

    model, plan = preset_plan(name, gpus, **overrides)
    syn = {k: overrides[k] for k in ("gpu_flops", "mfu") if k in overrides}
    wl = preset_workload(name, gpus, **overrides)
    rate = float(syn.get("gpu_flops", H100_BF16_FLOPS))
    return PlanBasis(model=model, gpus=gpus, global_batch=plan.sequences_per_step,
                     mfu=float(syn.get("mfu", preset_mfu(name, gpus))), gpu_flops=rate,
                     compute_gpu="h100-sxm" if rate == H100_BF16_FLOPS else None, given=plan,
                     source=f"preset {name}", job_name=name, workload=wl)


def basis_from_model(model: ModelSpec, gpus: int, global_batch: int, *, mfu: float = 0.4,
                     gpu_model: str = "h100-sxm", catalog=None, given: ParallelPlan | None = None) -> PlanBasis:
    """The basis of a model shape (``fabric plans --params ...``): ``global_batch`` sequences per step on ``gpus``
    GPUs at ``mfu`` of catalog GPU ``gpu_model``'s BF16 rate; ``given``, when set, is the plan to compare with."""
    from fabric.catalog import default_catalog

    model.validate()
    for value, what in ((gpus, "gpus"), (global_batch, "global_batch")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WorkloadError(f"{what}: must be a whole number >= 1, got {value!r}")
    if not 0 < mfu <= 1:
        raise WorkloadError(f"mfu: must be within (0, 1], got {mfu!r}")
    rate = (catalog or default_catalog()).gpu(gpu_model).bf16_flops
    if given is not None:
        validate_plan(model, given, gpus)
    return PlanBasis(model=model, gpus=gpus, global_batch=global_batch, mfu=float(mfu), gpu_flops=rate,
                     compute_gpu=gpu_model, given=given, source="model shape", job_name=model.name)


# ---------------------------------------------------------------- recognising a workload


def _group_size(job: Job, role: str) -> int:
    sizes = [g.size for g in job.groups if g.role == role]
    return max(sizes) if sizes else 1


def _ops(job: Job, group_role: str, kinds: tuple[str, ...]) -> list:
    names = {g.name for g in job.groups if g.role == group_role}
    return [o for o in job.ops if o.group in names and o.kind in kinds]


def _read_plan(job: Job, model: ModelSpec) -> ParallelPlan:
    """The plan of the module docstring read from ``job`` for ``model``; WorkloadError when the shape does not
    explain the job."""
    tp, pp, cp = _group_size(job, "tp"), _group_size(job, "pp"), _group_size(job, "cp")
    ep = _group_size(job, "ep")
    w = job.world_size
    if w % (tp * pp * cp):
        raise WorkloadError(f"job {job.name!r}: its groups (tp {tp}, pp {pp}, cp {cp}) do not divide its "
                            f"{w:,} ranks")
    dp = w // (tp * pp * cp)
    d = model.dtype_bytes
    tp_ops = _ops(job, "tp", ("all_gather", "reduce_scatter", "all_reduce"))
    layers_stage = model.layers // pp if model.layers % pp == 0 else None
    if layers_stage is None:
        raise WorkloadError(f"job {job.name!r}: pp {pp} does not divide {model.name}'s {model.layers} layers")
    micro_batch, micro_batches, sp = 1, None, False
    if tp_ops:
        per_sequence = (model.seq_len // cp) * model.hidden * d
        op = max(tp_ops, key=lambda o: o.bytes)
        if op.bytes % per_sequence:
            raise WorkloadError(
                f"job {job.name!r} is not recognised as {model.name}: its tensor-parallel message of {op.bytes:,} B "
                f"is not a whole number of sequences of seq_len / cp x hidden x {d} B = {per_sequence:,} B; give the "
                f"model shape instead (fabric plans --params ... --layers ...)")
        micro_batch = op.bytes // per_sequence
        sp = any(o.kind in ("all_gather", "reduce_scatter") for o in tp_ops)
        calls = max(o.count_per_step for o in tp_ops if o.bytes == op.bytes)
        micro_batches = calls / (4 * layers_stage)
    pp_ops = _ops(job, "pp", ("send_recv",))
    v = 1
    if micro_batches is None and pp_ops:
        micro_batches = max(o.count_per_step for o in pp_ops) / 2
    elif micro_batches and pp_ops:
        chunks = max(o.count_per_step for o in pp_ops) / (2 * micro_batches)
        v = max(1, int(round(chunks)))
    m = int(round(micro_batches or 1))
    if m < 1 or abs((micro_batches or 1) - m) > 1e-6:
        raise WorkloadError(f"job {job.name!r} is not recognised as {model.name}: its tensor-parallel call count "
                            f"gives {micro_batches:g} micro-batches per step, not a whole number")
    dp_ops = _ops(job, "dp", ("all_reduce", "reduce_scatter", "all_gather"))
    kinds = {o.kind for o in dp_ops}
    per_layer = any("per-layer" in (o.name or "") for o in dp_ops)
    zero = 3 if per_layer else 2 if {"reduce_scatter", "all_gather"} <= kinds else 1
    grad_bytes = None
    plan = ParallelPlan(dp=dp, tp=tp, pp=pp, ep=ep, cp=cp, zero_stage=zero, sequence_parallel=sp,
                        micro_batch=micro_batch, grad_accum=m, virtual_stages=v,
                        grad_dtype_bytes=grad_bytes, gpus_per_node=job.gpus_per_node_hint or 8,
                        **_overlaps(job))
    if model.layers % (pp * v):
        plan = replace(plan, virtual_stages=1)
    validate_plan(model, plan, w)
    width = _check_gradients(job, model, plan, dp_ops)
    if width is not None and width != model.dtype_bytes:
        plan = replace(plan, grad_dtype_bytes=width)
    return plan


def _check_gradients(job: Job, model: ModelSpec, plan: ParallelPlan, dp_ops: list) -> int | None:
    """The gradient width in bytes (1, 2 or 4): the data-parallel gradient bytes per step must be the model's
    parameters on a rank times it (ZeRO 3 reduces them once per micro-batch), within 2 %; WorkloadError when not.
    None when the job has no gradient collective."""
    grads = sum(o.bytes * o.count_per_step for o in dp_ops if o.kind in ("all_reduce", "reduce_scatter"))
    if not grads:
        return None
    per_rank = model.dense_parameters / (plan.tp * plan.pp) + model.expert_parameters / (plan.tp * plan.pp * plan.ep)
    if plan.effective_zero == 3:
        grads /= plan.micro_batches
    width = grads / per_rank
    fit = [b for b in (1, 2, 4) if abs(width - b) <= 0.02 * b]
    if fit:
        return fit[0]
    raise WorkloadError(
        f"job {job.name!r} is not recognised as {model.name}: its data-parallel gradients of {grads / 1e9:,.3g} GB "
        f"per step are {width:.3g} B per parameter of a rank's {per_rank / 1e9:,.4g} B parameters, not 1, 2 or 4; "
        f"give the model shape instead (fabric plans --params ... --layers ...)")


def _overlaps(job: Job) -> dict:
    """The overlap shares the job's ops state per traffic class (the synthesizer's defaults where none is given)."""
    out = {}
    for role, key in (("dp", "dp_overlap"), ("tp", "tp_overlap"), ("pp", "pp_overlap"), ("ep", "ep_overlap"),
                      ("cp", "cp_overlap")):
        names = {g.name for g in job.groups if g.role == role}
        vals = [o.overlap_fraction for o in job.ops if o.group in names]
        if vals:
            out[key] = float(max(vals))
    return out


def _compute_rate(job: Job, catalog) -> tuple[float | None, str | None]:
    """The BF16 rate (FLOP/s) the job's compute was measured or synthesized at, and its catalog GPU."""
    from fabric.catalog import default_catalog

    cat = catalog or default_catalog()
    if job.compute_gpu_tflops is not None:
        return job.compute_gpu_tflops * 1e12, job.compute_gpu
    if job.compute_gpu and job.compute_gpu in cat.models("gpus"):
        return cat.gpu(job.compute_gpu).bf16_flops, job.compute_gpu
    return None, job.compute_gpu


def basis_from_workload(workload: Workload, *, model: ModelSpec | str | None = None, catalog=None) -> PlanBasis:
    """The basis of ``workload``'s training job with its model recognised (see the module docstring), or the
    ``model`` given (a ModelSpec or a preset's model name)."""
    from fabric.workload.presets import training_models

    job = primary_training_job(workload)
    known = training_models()
    facts = dict(workload.facts)
    if isinstance(model, str):
        if model not in known:
            raise WorkloadError(f"unknown model {model!r}; known: {', '.join(known)} (or give the shape with "
                                f"--params --layers --hidden --ffn-hidden --heads --seq-len)")
        model = known[model]
    preset = facts.get("preset")
    how = "given"
    if model is None:
        for name in (preset, job.name, workload.name):
            if name in known:
                model, how = known[name], f"named {name!r}"
                break
    if model is None:
        raise WorkloadError(
            f"the workload's model is not recognised: job {job.name!r} names none of the known models "
            f"({', '.join(known)}); name the model with --model NAME, or give a preset (--preset) or a model shape "
            f"(--params --layers --hidden --ffn-hidden --heads --seq-len) instead of the workload")
    plan = _read_plan(job, model)
    rate, gpu = _compute_rate(job, catalog)
    flops = training_flops_per_step(model, plan)
    bubble = pipeline_bubble_fraction(plan)
    if job.compute_time_s <= 0:
        raise WorkloadError(f"job {job.name!r} has no compute time: plans need it to derive the other plans' compute")
    effective = flops * (1 + bubble) / (job.world_size * job.compute_time_s)     # FLOP/s per GPU actually reached
    rate_known = rate is not None
    if not rate_known:
        rate, mfu = effective, 1.0        # the GPU is unknown: the product is all the other plans need
    else:
        mfu = effective / rate
    if not 0 < mfu <= 1:
        raise WorkloadError(f"job {job.name!r} is not recognised as {model.name}: its compute of "
                            f"{job.compute_time_s:.4g} s per step implies {mfu:.0%} MFU at its plan (model FLOPs "
                            f"{flops:.4g} per step)")
    synthesized = bool(workload.sources) and all(s.startswith(("preset:", "synthesized")) for s in workload.sources)
    measured = not synthesized
    src = (f"preset {preset}" if synthesized and preset in known else
           f"trace recognised as {model.name} ({how})" if measured else f"synthesized {model.name}")
    return PlanBasis(model=model, gpus=job.world_size, global_batch=plan.sequences_per_step, mfu=float(mfu),
                     gpu_flops=float(rate), compute_gpu=gpu if gpu else None, given=plan, source=src,
                     measured=bool(measured), job_name=job.name, compute_cv=job.compute_cv, rate_known=rate_known,
                     workload=workload)
