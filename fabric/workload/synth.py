"""Parametric synthesis: a workload from a model shape and a parallelism plan (no trace needed).

Training (:func:`synthesize`): one job whose step is one optimizer step of a Megatron-style transformer with data,
tensor (optionally sequence), pipeline (1F1B, optionally interleaved), expert and context parallelism and ZeRO/FSDP
sharding. Inference (:func:`synthesize_inference`): one job whose step is one request (prefill, then decode
iterations). Recommendation (:func:`synthesize_dlrm`): a DLRM-style model (embedding all-to-all + MLP all-reduce).
Checkpoints (:func:`checkpoint_job`): a storage job writing weights and optimizer state every period.

Every formula is written out in ``docs/synthesis.md``; byte counts follow the convention of
:mod:`fabric.workload.model` (all-reduce: buffer; all-gather: output; reduce-scatter: input; all-to-all: bytes each
rank sends; send/recv: bytes sent per call). Everything is SI: bytes, seconds, FLOP/s.

Rank layout: ``ParallelPlan.order`` lists the dimensions fastest-varying first (Megatron-Core's ``order``); the
default ``tp-cp-ep-dp-pp`` is Megatron-LM's: ``rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))``.
Expert parallelism is carved out of the data x context dimension, so an EP group is ``ep`` consecutive members of a
DP group, and ``cp-ep-dp`` always stay together (the gradient group spans dp x cp ranks): the orders are the six
arrangements of the blocks ``tp``, ``cp-ep-dp`` and ``pp`` (:data:`RANK_ORDERS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from fabric.errors import WorkloadError
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload, validate_workload

__all__ = [
    "ModelSpec", "ParallelPlan", "InferencePlan", "RecSpec",
    "synthesize", "synthesize_inference", "synthesize_dlrm", "checkpoint_job",
    "training_flops_per_step", "pipeline_bubble_fraction", "validate_plan", "megatron_groups", "rank_strides",
    "DDP_BUCKET_BYTES", "ADAM_OPTIMIZER_BYTES_PER_PARAM", "RANK_ORDERS", "DEFAULT_ORDER", "RECOMPUTE_CHOICES",
]

#: PyTorch DistributedDataParallel's default gradient bucket (``bucket_cap_mb=25``).
DDP_BUCKET_BYTES = 25 * 2 ** 20
#: Mixed-precision Adam keeps fp32 master weights, momentum and variance: 4 + 4 + 4 bytes per parameter
#: (Rajbhandari et al., "ZeRO", SC 2020, section 3.1).
ADAM_OPTIMIZER_BYTES_PER_PARAM = 12
#: Megatron-LM's rank order, fastest-varying dimension first.
DEFAULT_ORDER = "tp-cp-ep-dp-pp"
#: Every rank order a plan may take: the arrangements of the blocks tp, cp-ep-dp and pp (fastest first).
RANK_ORDERS = ("tp-cp-ep-dp-pp", "tp-pp-cp-ep-dp", "cp-ep-dp-tp-pp", "cp-ep-dp-pp-tp", "pp-tp-cp-ep-dp",
               "pp-cp-ep-dp-tp")


def _fail(field_name: str, msg: str) -> None:
    raise WorkloadError(f"{field_name}: {msg}")


def _pos_int(value, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _fail(field_name, f"must be a whole number >= 1, got {value!r}")
    return value


def _pos_num(value, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        _fail(field_name, f"must be a positive number, got {value!r}")
    return float(value)


def _fraction(value, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        _fail(field_name, f"must be within 0..1, got {value!r}")
    return float(value)


# ---------------------------------------------------------------- inputs


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer (dense or mixture-of-experts).

    ``parameters`` counts every trainable parameter (all experts); ``active_parameters`` those one token touches
    (derived from the expert shape when ``None``). ``ffn_hidden`` is the MLP width of one expert; ``gated_mlp``
    (SwiGLU) means three ``hidden x ffn_hidden`` matrices per MLP instead of two. ``kv_heads`` < ``heads`` is
    grouped-query attention. ``experts`` = 1 is a dense model; otherwise every ``moe_layer_every``-th layer is MoE
    with ``top_k`` experts per token. ``dtype_bytes`` is the weight/activation type (2 = bf16).
    """

    name: str
    parameters: float
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    seq_len: int
    vocab: int = 32000
    dtype_bytes: int = 2
    kv_heads: int | None = None
    experts: int = 1
    top_k: int = 1
    moe_layer_every: int = 1
    active_parameters: float | None = None
    gated_mlp: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V): kv_heads x head_dim."""
        return (self.kv_heads or self.heads) * self.head_dim

    @property
    def moe_layers(self) -> int:
        return self.layers // self.moe_layer_every if self.experts > 1 else 0

    @property
    def expert_parameters(self) -> float:
        """Parameters of all experts: moe_layers x experts x (3 or 2) x hidden x ffn_hidden."""
        per_expert = (3 if self.gated_mlp else 2) * self.hidden * self.ffn_hidden
        return float(self.moe_layers * self.experts * per_expert)

    @property
    def dense_parameters(self) -> float:
        """Parameters outside the experts (attention, embeddings, norms, dense MLPs, routers)."""
        return float(self.parameters) - self.expert_parameters

    @property
    def active(self) -> float:
        """Parameters used per token: all dense ones plus top_k of the experts."""
        if self.active_parameters is not None:
            return float(self.active_parameters)
        if self.experts <= 1:
            return float(self.parameters)
        return self.dense_parameters + self.expert_parameters * self.top_k / self.experts

    def validate(self) -> "ModelSpec":
        """Check every field; WorkloadError names the field."""
        if not isinstance(self.name, str) or not self.name:
            _fail("model.name", "must be a non-empty string")
        _pos_num(self.parameters, "model.parameters")
        for f in ("layers", "hidden", "ffn_hidden", "heads", "seq_len", "vocab", "experts", "top_k",
                  "moe_layer_every"):
            _pos_int(getattr(self, f), f"model.{f}")
        if self.dtype_bytes not in (1, 2, 4):
            _fail("model.dtype_bytes", f"must be 1, 2 or 4 bytes, got {self.dtype_bytes!r}")
        if self.hidden % self.heads:
            _fail("model.heads", f"{self.heads} heads do not divide hidden {self.hidden}")
        if self.kv_heads is not None:
            _pos_int(self.kv_heads, "model.kv_heads")
            if self.heads % self.kv_heads:
                _fail("model.kv_heads", f"{self.kv_heads} KV heads do not divide {self.heads} heads")
        if self.top_k > self.experts:
            _fail("model.top_k", f"top_k {self.top_k} exceeds experts {self.experts}")
        if self.dense_parameters <= 0:
            _fail("model.parameters", f"{self.parameters:g} is smaller than the experts alone "
                                      f"({self.expert_parameters:g}); check experts/ffn_hidden/hidden")
        if self.active_parameters is not None:
            _pos_num(self.active_parameters, "model.active_parameters")
            if self.active_parameters > self.parameters:
                _fail("model.active_parameters", "exceeds model.parameters")
        return self


#: Activation recomputation of a training plan: "none" (attention scores kept), "selective" (the attention core
#: recomputed in backward: flash attention), "full" (each layer's forward recomputed in backward).
RECOMPUTE_CHOICES = ("none", "selective", "full")


@dataclass(frozen=True)
class ParallelPlan:
    """How a training job is split across GPUs, in Megatron-LM terms.

    World size = dp x tp x pp x cp. ``ep`` experts-parallel ranks are taken from the dp x cp ranks. ZeRO stage 0/1
    synchronizes gradients with bucketed all-reduce, stage 2 with reduce-scatter + all-gather of parameters, stage 3
    (or ``fsdp``) additionally all-gathers each layer's parameters in forward and backward. ``micro_batch`` is in
    sequences; give ``global_batch`` (sequences) or ``grad_accum`` (micro-batches per step), not both differently.
    ``virtual_stages`` > 1 is the interleaved 1F1B schedule. ``*_overlap`` are the shares of each traffic class hidden
    behind compute (assumptions; see docs/synthesis.md). ``order`` is how ranks map onto GPUs, fastest-varying
    dimension first (:data:`RANK_ORDERS`; consecutive ranks share a server). ``recompute`` is the activation
    recomputation (:data:`RECOMPUTE_CHOICES`: "none" keeps the attention scores, "selective" recomputes the
    attention core in backward as flash attention does, "full" recomputes every layer's forward): it trades the
    activation memory of :mod:`fabric.plans.memory` for the compute of :mod:`fabric.workload.compute_model`.
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    zero_stage: int = 0
    fsdp: bool = False
    sequence_parallel: bool = False
    micro_batch: int = 1
    global_batch: int | None = None
    grad_accum: int | None = None
    virtual_stages: int = 1
    bucket_bytes: int = DDP_BUCKET_BYTES
    grad_dtype_bytes: int | None = None
    gpus_per_node: int = 8
    dp_overlap: float = 0.8
    tp_overlap: float = 0.0
    pp_overlap: float = 0.0
    ep_overlap: float = 0.0
    cp_overlap: float = 0.5
    order: str = DEFAULT_ORDER
    recompute: str = "selective"
    #: the matrix multiplies' precision: "bf16", or "fp8" (Transformer Engine: GEMMs in FP8, attention and the rest
    #: in BF16); only the compute model reads it (:mod:`fabric.workload.compute_model`)
    gemm_precision: str = "bf16"

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def effective_zero(self) -> int:
        return 3 if self.fsdp else self.zero_stage

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline (gradient-accumulation steps)."""
        if self.grad_accum is not None:
            return self.grad_accum
        if self.global_batch is not None:
            return self.global_batch // (self.micro_batch * self.dp)
        return 1

    @property
    def sequences_per_step(self) -> int:
        """Global batch in sequences: micro_batch x dp x micro_batches."""
        return self.micro_batch * self.dp * self.micro_batches


@dataclass(frozen=True)
class InferencePlan:
    """A serving deployment: ``replicas`` model copies of tp x pp GPUs each; ``ep`` (1 or tp) spreads experts over
    the TP ranks. A request has ``prompt_tokens`` then ``output_tokens``; decode runs ``decode_batch`` sequences per
    iteration. ``request_rate_per_s`` is the total offered load; ``latency_slo_s`` the end-to-end target."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    replicas: int = 1
    prompt_tokens: int = 1024
    output_tokens: int = 256
    decode_batch: int = 32
    request_rate_per_s: float = 1.0
    latency_slo_s: float | None = None
    gpus_per_node: int = 8

    @property
    def world_size(self) -> int:
        return self.replicas * self.tp * self.pp


@dataclass(frozen=True)
class RecSpec:
    """A DLRM-style recommender: ``embedding_tables`` tables of ``embedding_dim`` columns sharded table-wise over all
    ranks (model parallel), and ``dense_parameters`` of MLPs replicated (data parallel)."""

    name: str
    dense_parameters: float
    embedding_tables: int
    embedding_dim: int
    embedding_rows: float
    dtype_bytes: int = 4
    grad_dtype_bytes: int = 4

    def validate(self) -> "RecSpec":
        if not isinstance(self.name, str) or not self.name:
            _fail("model.name", "must be a non-empty string")
        _pos_num(self.dense_parameters, "model.dense_parameters")
        _pos_int(self.embedding_tables, "model.embedding_tables")
        _pos_int(self.embedding_dim, "model.embedding_dim")
        _pos_num(self.embedding_rows, "model.embedding_rows")
        for f in ("dtype_bytes", "grad_dtype_bytes"):
            if getattr(self, f) not in (1, 2, 4):
                _fail(f"model.{f}", f"must be 1, 2 or 4 bytes, got {getattr(self, f)!r}")
        return self


# ---------------------------------------------------------------- checks and closed forms


def validate_plan(model: ModelSpec, plan: ParallelPlan, gpus: int | None = None) -> ParallelPlan:
    """Check a plan against a model (and a GPU count); WorkloadError names the field and how to fix it."""
    model.validate()
    for f in ("dp", "tp", "pp", "ep", "cp", "micro_batch", "virtual_stages", "bucket_bytes", "gpus_per_node"):
        _pos_int(getattr(plan, f), f"plan.{f}")
    if plan.zero_stage not in (0, 1, 2, 3):
        _fail("plan.zero_stage", f"must be 0, 1, 2 or 3, got {plan.zero_stage!r}")
    for f in ("dp_overlap", "tp_overlap", "pp_overlap", "ep_overlap", "cp_overlap"):
        _fraction(getattr(plan, f), f"plan.{f}")
    if plan.order not in RANK_ORDERS:
        _fail("plan.order", f"{plan.order!r} is not a rank order; choose one of {', '.join(RANK_ORDERS)} (fastest-"
                            "varying first; cp-ep-dp stay together)")
    if plan.gemm_precision not in ("bf16", "fp8"):
        _fail("plan.gemm_precision", f"{plan.gemm_precision!r}: choose bf16 or fp8")
    if plan.recompute not in RECOMPUTE_CHOICES:
        _fail("plan.recompute", f"{plan.recompute!r}: choose {', '.join(RECOMPUTE_CHOICES)}")
    if plan.grad_dtype_bytes is not None and plan.grad_dtype_bytes not in (1, 2, 4):
        _fail("plan.grad_dtype_bytes", f"must be 1, 2 or 4, got {plan.grad_dtype_bytes!r}")
    if gpus is not None:
        _pos_int(gpus, "gpus")
        if plan.world_size != gpus:
            _fail("plan", f"dp x tp x pp x cp = {plan.dp} x {plan.tp} x {plan.pp} x {plan.cp} = {plan.world_size} "
                          f"but gpus = {gpus}; the degrees must multiply to the world size")
    if model.heads % plan.tp:
        _fail("plan.tp", f"tp {plan.tp} must divide the {model.heads} attention heads")
    if model.ffn_hidden % plan.tp:
        _fail("plan.tp", f"tp {plan.tp} must divide ffn_hidden {model.ffn_hidden}")
    if model.layers % (plan.pp * plan.virtual_stages):
        _fail("plan.pp", f"pp x virtual_stages = {plan.pp} x {plan.virtual_stages} must divide the "
                         f"{model.layers} layers")
    if plan.virtual_stages > 1 and plan.pp == 1:
        _fail("plan.virtual_stages", "interleaving needs pp > 1")
    if model.seq_len % plan.cp:
        _fail("plan.cp", f"cp {plan.cp} must divide seq_len {model.seq_len}")
    if plan.sequence_parallel and (model.seq_len // plan.cp) % plan.tp:
        _fail("plan.sequence_parallel", f"seq_len / cp = {model.seq_len // plan.cp} must be divisible by tp "
                                        f"{plan.tp}")
    if plan.ep > 1:
        if model.experts <= 1:
            _fail("plan.ep", f"ep {plan.ep} needs a mixture-of-experts model (model.experts > 1)")
        if model.experts % plan.ep:
            _fail("plan.ep", f"ep {plan.ep} must divide the {model.experts} experts")
        if (plan.dp * plan.cp) % plan.ep:
            _fail("plan.ep", f"ep {plan.ep} must divide dp x cp = {plan.dp * plan.cp} (experts are spread over "
                             "data-parallel ranks)")
    if plan.grad_accum is not None:
        _pos_int(plan.grad_accum, "plan.grad_accum")
    if plan.global_batch is not None:
        _pos_int(plan.global_batch, "plan.global_batch")
        per = plan.micro_batch * plan.dp
        if plan.global_batch % per:
            _fail("plan.global_batch", f"{plan.global_batch} sequences is not a multiple of micro_batch x dp = "
                                       f"{per}")
        if plan.grad_accum is not None and plan.grad_accum * per != plan.global_batch:
            _fail("plan.grad_accum", f"grad_accum {plan.grad_accum} x micro_batch x dp = {plan.grad_accum * per} "
                                     f"contradicts global_batch {plan.global_batch}; give one of them")
    return plan


def training_flops_per_step(model: ModelSpec, plan: ParallelPlan, *, attention: bool = True) -> float:
    """Model FLOPs of one step: tokens x (6 x active parameters + 12 x layers x hidden x seq_len).

    6N per token is forward (2N) + backward (4N) of the matrix multiplies (Kaplan et al. 2020); the attention term
    12 L h s per token is the score and value products (Chowdhery et al., PaLM, 2022, appendix B).
    """
    tokens = plan.sequences_per_step * model.seq_len
    per_token = 6.0 * model.active
    if attention:
        per_token += 12.0 * model.layers * model.hidden * model.seq_len
    return tokens * per_token


def pipeline_bubble_fraction(plan: ParallelPlan) -> float:
    """Idle share of the 1F1B schedule relative to the ideal compute: (pp - 1) / (virtual_stages x micro-batches)
    (Narayanan et al., SC 2021, sections 2.2.1 and 2.2.2)."""
    return (plan.pp - 1) / (plan.virtual_stages * plan.micro_batches)


def rank_strides(plan: ParallelPlan) -> dict[str, int]:
    """Rank distance between neighbours of each dimension (``tp``, ``cp``, ``dp``, ``pp``) in ``plan.order``: the
    product of the sizes of the dimensions before it (``ep`` lives inside ``dp``)."""
    sizes = {"tp": plan.tp, "cp": plan.cp, "dp": plan.dp, "pp": plan.pp}
    out, stride = {}, 1
    for dim in plan.order.split("-"):
        if dim == "ep":
            continue
        out[dim] = stride
        stride *= sizes[dim]
    return out


def megatron_groups(plan: ParallelPlan, *, moe: bool) -> dict[str, ProcessGroup]:
    """The first instance of each process group, ranks laid out in ``plan.order`` (see the module docstring).

    Only groups of more than one rank are returned: ``tp``, ``cp``, ``dp`` (gradient group, dp x cp ranks),
    ``ep`` and ``edp`` (expert data parallel, dp x cp / ep ranks) for MoE, ``pp``.
    """
    tp, cp, dp, pp, ep = plan.tp, plan.cp, plan.dp, plan.pp, plan.ep
    stride = rank_strides(plan)
    out = {}

    def add(name, size, role, step):
        if size > 1:
            out[name] = ProcessGroup(name=name, size=size, role=role, rank_start=0, rank_stride=step,
                                     role_source="plan")

    add("tp", tp, "tp", stride["tp"])
    add("cp", cp, "cp", stride["cp"])
    add("dp", dp * cp, "dp", stride["cp"])
    if moe:
        add("ep", ep, "ep", stride["cp"])
        add("edp", dp * cp // ep, "dp", stride["cp"] * ep)
    add("pp", pp, "pp", stride["pp"])
    return out


def _buckets(total: int, bucket: int, kind: str, group: str, overlap: float, label: str, dtype: str) -> list[CommOp]:
    """``total`` bytes as ``floor(total / bucket)`` full buckets plus one remainder bucket."""
    if total <= 0:
        return []
    full, rem = divmod(total, bucket)
    ops = []
    if full:
        ops.append(CommOp(kind=kind, bytes=bucket, group=group, count_per_step=float(full), dtype=dtype,
                          overlap_fraction=overlap, name=f"{label} ({bucket} B buckets)"))
    if rem:
        ops.append(CommOp(kind=kind, bytes=rem, group=group, count_per_step=1.0, dtype=dtype,
                          overlap_fraction=overlap, name=f"{label} (last bucket)"))
    return ops


_DTYPE_NAME = {1: "float8", 2: "bfloat16", 4: "float32"}

#: Names of the data-parallel sync ops that wait for the last micro-batch's backward pass (gradients), and of those
#: that run in the next step's first forward pass (ZeRO parameter all-gather).
_GRAD_SYNC = ("gradient all-reduce", "gradient reduce-scatter")
_PARAM_SYNC = ("parameter all-gather",)


def _sync_windows(ops: list, per_micro_batch_s: float) -> list:
    """The data-parallel syncs' overlap windows (issue 28). Under gradient accumulation a rank's gradients are final
    only after its last micro-batch, so their all-reduce or reduce-scatter can hide behind that micro-batch's
    backward pass only (2/3 of its compute: backward is twice the forward FLOPs), not behind the step; a ZeRO
    parameter all-gather, behind the next step's first forward pass (1/3). Ops sharing a window share it by bytes."""
    from dataclasses import replace as _replace

    out = list(ops)
    for names, window in ((_GRAD_SYNC, 2.0 / 3.0 * per_micro_batch_s), (_PARAM_SYNC, per_micro_batch_s / 3.0)):
        idx = [i for i, op in enumerate(out) if op.group in ("dp", "edp") and "per-layer" not in op.name
               and any(n in op.name for n in names)]
        total = sum(out[i].bytes * out[i].count_per_step for i in idx)
        for i in idx:
            share = out[i].bytes * out[i].count_per_step / total if total > 0 else 0.0
            out[i] = _replace(out[i], overlap_window_s=window * share)
    return out


# ---------------------------------------------------------------- training


def synthesize(model: ModelSpec, plan: ParallelPlan, *, gpu_flops: float, mfu: float = 0.4,
               gpus: int | None = None, name: str | None = None, attention_flops: bool = True,
               compute_cv: float = 0.02, checkpoint_period_s: float | None = None,
               compute_time_s: float | None = None) -> Workload:
    """A training job (one step = one optimizer step) from a model and a parallelism plan.

    Parameters
    ----------
    gpu_flops : peak dense FLOP/s of one GPU in the model's dtype (e.g. 989e12 for H100 BF16).
    mfu : model FLOPs utilization while computing (0..1]; the pipeline bubble comes on top.
    gpus : when given, the plan's degrees must multiply to it.
    attention_flops : include the 12 L h s attention term in the FLOPs.
    compute_cv : step-to-step coefficient of variation of compute (straggler input of the evaluator).
    checkpoint_period_s : when given, add a storage job (see :func:`checkpoint_job`).
    compute_time_s : the step's compute (bubble included) when the caller has it (a plan's compute from its kernel
        shapes, :meth:`fabric.plans.basis.PlanBasis.compute_s`) instead of the ``mfu`` rule.

    Examples
    --------
    >>> m = ModelSpec("tiny", parameters=1e9, layers=16, hidden=2048, ffn_hidden=8192, heads=16, seq_len=2048)
    >>> wl = synthesize(m, ParallelPlan(dp=4, tp=2, grad_accum=4), gpu_flops=989e12)
    >>> wl.jobs[0].world_size
    8
    """
    validate_plan(model, plan, gpus)
    gpu_flops = _pos_num(gpu_flops, "gpu_flops")
    mfu = _pos_num(mfu, "mfu")
    if mfu > 1:
        _fail("mfu", f"must be at most 1, got {mfu}")
    if isinstance(compute_cv, bool) or not isinstance(compute_cv, (int, float)) or not 0 <= compute_cv <= 10:
        _fail("compute_cv", f"must be within 0..10, got {compute_cv!r}")

    moe = model.experts > 1
    groups = megatron_groups(plan, moe=moe)
    d = model.dtype_bytes
    g = plan.grad_dtype_bytes or d
    dname, gname = _DTYPE_NAME[d], _DTYPE_NAME[g]
    b, m, v = plan.micro_batch, plan.micro_batches, plan.virtual_stages
    s_local = model.seq_len // plan.cp
    layers_stage = model.layers // plan.pp
    moe_layers_stage = model.moe_layers / plan.pp
    act = b * s_local * model.hidden * d                       # one micro-batch's activations on a rank
    ops: list[CommOp] = []

    # tensor parallelism: 2 all-reduces forward + 2 backward per layer and micro-batch (Megatron-LM, Shoeybi et
    # al. 2019, fig. 4); with sequence parallelism each becomes a reduce-scatter + all-gather pair (Korthikanti et
    # al. 2022) of the same message
    if "tp" in groups:
        n = 4.0 * layers_stage * m
        if plan.sequence_parallel:
            ops.append(CommOp(kind="all_gather", bytes=act, group="tp", count_per_step=n, dtype=dname,
                              overlap_fraction=plan.tp_overlap, name="tp sequence-parallel all-gather"))
            ops.append(CommOp(kind="reduce_scatter", bytes=act, group="tp", count_per_step=n, dtype=dname,
                              overlap_fraction=plan.tp_overlap, name="tp sequence-parallel reduce-scatter"))
        else:
            ops.append(CommOp(kind="all_reduce", bytes=act, group="tp", count_per_step=n, dtype=dname,
                              overlap_fraction=plan.tp_overlap, name="tp all-reduce (2 fwd + 2 bwd per layer)"))

    # context parallelism: every layer gathers the K and V of the whole sequence forward and reduce-scatters their
    # gradients backward; heads are split by TP
    if "cp" in groups:
        kv = 2 * b * model.seq_len * model.kv_dim * d // plan.tp
        ops.append(CommOp(kind="all_gather", bytes=kv, group="cp", count_per_step=float(layers_stage * m),
                          dtype=dname, overlap_fraction=plan.cp_overlap, name="cp KV all-gather (fwd)"))
        ops.append(CommOp(kind="reduce_scatter", bytes=kv, group="cp", count_per_step=float(layers_stage * m),
                          dtype=dname, overlap_fraction=plan.cp_overlap, name="cp KV-gradient reduce-scatter (bwd)"))

    # expert parallelism: dispatch + combine all-to-all, forward and backward, per MoE layer and micro-batch; each
    # rank sends its tokens x top_k hidden vectors
    if "ep" in groups:
        tokens = b * s_local // (plan.tp if plan.sequence_parallel else 1)
        a2a = tokens * model.top_k * model.hidden * d
        ops.append(CommOp(kind="all_to_all", bytes=a2a, group="ep", count_per_step=4.0 * moe_layers_stage * m,
                          dtype=dname, overlap_fraction=plan.ep_overlap,
                          name="ep all-to-all (dispatch + combine, fwd + bwd)"))

    # pipeline parallelism: a middle stage sends activations forward and gradients backward once per micro-batch
    # and model chunk
    if "pp" in groups:
        p2p = act // (plan.tp if plan.sequence_parallel else 1)
        ops.append(CommOp(kind="send_recv", bytes=p2p, group="pp", count_per_step=2.0 * m * v, dtype=dname,
                          overlap_fraction=plan.pp_overlap, name="pp activations (fwd) + gradients (bwd)"))

    # data parallelism: gradients of the parameters a rank holds
    dense_rank = model.dense_parameters / (plan.tp * plan.pp)
    expert_rank = model.expert_parameters / (plan.tp * plan.pp * plan.ep)
    for params, grp, label in ((dense_rank, "dp", "dp"), (expert_rank, "edp", "expert dp")):
        if grp not in groups or params <= 0:
            continue
        grad_bytes = int(round(g * params))
        param_bytes = int(round(d * params))
        z = plan.effective_zero
        if z <= 1:
            ops += _buckets(grad_bytes, plan.bucket_bytes, "all_reduce", grp, plan.dp_overlap,
                            f"{label} gradient all-reduce", gname)
        elif z == 2:
            ops += _buckets(grad_bytes, plan.bucket_bytes, "reduce_scatter", grp, plan.dp_overlap,
                            f"{label} gradient reduce-scatter", gname)
            ops += _buckets(param_bytes, plan.bucket_bytes, "all_gather", grp, plan.dp_overlap,
                            f"{label} parameter all-gather", dname)
        else:
            per_layer_g = int(round(grad_bytes / layers_stage))
            per_layer_p = int(round(param_bytes / layers_stage))
            ops.append(CommOp(kind="all_gather", bytes=per_layer_p, group=grp,
                              count_per_step=2.0 * layers_stage * m, dtype=dname, overlap_fraction=plan.dp_overlap,
                              name=f"{label} per-layer parameter all-gather (fwd + bwd)"))
            ops.append(CommOp(kind="reduce_scatter", bytes=per_layer_g, group=grp,
                              count_per_step=float(layers_stage * m), dtype=gname, overlap_fraction=plan.dp_overlap,
                              name=f"{label} per-layer gradient reduce-scatter"))

    flops = training_flops_per_step(model, plan, attention=attention_flops)
    bubble = pipeline_bubble_fraction(plan)
    if compute_time_s is not None:
        ideal = _pos_num(compute_time_s, "compute_time_s") / (1.0 + bubble)
        mfu = flops / (plan.world_size * gpu_flops * ideal)
    else:
        ideal = flops / (plan.world_size * gpu_flops * mfu)
    if plan.effective_zero <= 2:
        ops = _sync_windows(ops, ideal / m)
    compute = ideal * (1.0 + bubble)
    jname = name or model.name
    notes = (
        f"synthesized: {model.name}, dp {plan.dp} x tp {plan.tp} x pp {plan.pp} x cp {plan.cp}"
        + (f", ep {plan.ep}" if moe else "") + f", ZeRO {plan.effective_zero}"
        + (", sequence parallel" if plan.sequence_parallel else "")
        + (f", rank order {plan.order}" if plan.order != DEFAULT_ORDER else "")
        + ("" if plan.recompute == "selective" else f", {plan.recompute} recomputation"),
        f"{plan.sequences_per_step} sequences x {model.seq_len} tokens per step; {m} micro-batches of {b}",
        f"compute {ideal:.4g} s at {mfu:.0%} MFU of {gpu_flops / 1e12:g} TFLOP/s plus a {bubble:.1%} pipeline bubble"
        + (" (this plan's kernels: fabric.workload.compute_model)" if compute_time_s is not None else ""),
        "overlap assumptions: dp {:.0%}, tp {:.0%}, pp {:.0%}, ep {:.0%}, cp {:.0%}".format(
            plan.dp_overlap, plan.tp_overlap, plan.pp_overlap, plan.ep_overlap, plan.cp_overlap),
    )
    job = Job(name=jname, kind="training", world_size=plan.world_size, groups=tuple(groups.values()),
              ops=tuple(ops), compute_time_s=compute, compute_cv=compute_cv, gpus_per_node_hint=plan.gpus_per_node,
              notes=notes, compute_gpu_tflops=gpu_flops / 1e12)
    jobs = [job]
    if checkpoint_period_s is not None:
        jobs.append(checkpoint_job(model, world_size=plan.world_size, period_s=checkpoint_period_s,
                                   name=f"{jname}-checkpoint"))
    facts = (
        ("world size", str(plan.world_size)), ("tokens per step", str(plan.sequences_per_step * model.seq_len)),
        ("global batch (sequences)", str(plan.sequences_per_step)), ("micro-batches per step", str(m)),
        ("micro-batch (sequences)", str(b)),
        ("active parameters", f"{model.active:.4g}"), ("model FLOPs per step", f"{flops:.4g}"),
        ("pipeline bubble", f"{bubble:.4f}"), ("dense parameters per rank", f"{dense_rank:.4g}"),
        ("expert parameters per rank", f"{expert_rank:.4g}"),
    )
    return _checked(Workload(jobs=tuple(jobs), sources=("synthesized",), facts=facts, name=jname))


def _checked(wl: Workload) -> Workload:
    return validate_workload(wl)


# ---------------------------------------------------------------- inference


def synthesize_inference(model: ModelSpec, plan: InferencePlan, *, gpu_flops: float, mfu: float = 0.4,
                         hbm_bytes_per_s: float = 3.35e12, name: str | None = None) -> Workload:
    """A serving job; one step = one request on its critical path (prefill, then ``output_tokens`` decode
    iterations of a ``decode_batch``-sequence batch).

    Per request: TP all-reduces of the prompt (2 per layer), then 2 per layer per decode iteration carrying the
    batch's tokens; PP sends of the same activations; MoE all-to-all (dispatch + combine) per MoE layer. Compute:
    prefill 2 N_active x prompt FLOPs at ``mfu``; each decode iteration takes the longer of its FLOPs
    (2 N_active x decode_batch) and reading the weights of a TP shard from HBM (``hbm_bytes_per_s``, 3.35 TB/s =
    H100 SXM). Pipeline stages run one after another for a single request, so PP does not shorten the latency.
    """
    model.validate()
    for f in ("tp", "pp", "ep", "replicas", "prompt_tokens", "output_tokens", "decode_batch", "gpus_per_node"):
        _pos_int(getattr(plan, f), f"plan.{f}")
    _pos_num(plan.request_rate_per_s, "plan.request_rate_per_s")
    if plan.latency_slo_s is not None:
        _pos_num(plan.latency_slo_s, "plan.latency_slo_s")
    gpu_flops = _pos_num(gpu_flops, "gpu_flops")
    mfu = _pos_num(mfu, "mfu")
    hbm = _pos_num(hbm_bytes_per_s, "hbm_bytes_per_s")
    if model.heads % plan.tp:
        _fail("plan.tp", f"tp {plan.tp} must divide the {model.heads} attention heads")
    if model.layers % plan.pp:
        _fail("plan.pp", f"pp {plan.pp} must divide the {model.layers} layers")
    if plan.ep not in (1, plan.tp):
        _fail("plan.ep", f"ep must be 1 or equal to tp ({plan.tp}): experts are spread over the TP ranks")
    if plan.ep > 1 and model.experts <= 1:
        _fail("plan.ep", "ep > 1 needs a mixture-of-experts model")
    d, h = model.dtype_bytes, model.hidden
    dname = _DTYPE_NAME[d]
    layers_stage = model.layers // plan.pp
    iters = plan.output_tokens
    groups = {}
    if plan.tp > 1:
        groups["tp"] = ProcessGroup(name="tp", size=plan.tp, role="tp", rank_start=0, rank_stride=1,
                                    role_source="plan")
    if plan.pp > 1:
        groups["pp"] = ProcessGroup(name="pp", size=plan.pp, role="pp", rank_start=0, rank_stride=plan.tp,
                                    role_source="plan")
    if plan.ep > 1:
        groups["ep"] = ProcessGroup(name="ep", size=plan.ep, role="ep", rank_start=0, rank_stride=1,
                                    role_source="plan")
    ops: list[CommOp] = []
    if "tp" in groups:
        ops.append(CommOp(kind="all_reduce", bytes=plan.prompt_tokens * h * d, group="tp",
                          count_per_step=2.0 * layers_stage, dtype=dname, name="prefill tp all-reduce"))
        ops.append(CommOp(kind="all_reduce", bytes=plan.decode_batch * h * d, group="tp",
                          count_per_step=2.0 * layers_stage * iters, dtype=dname, name="decode tp all-reduce"))
    if "pp" in groups:
        ops.append(CommOp(kind="send_recv", bytes=plan.prompt_tokens * h * d, group="pp", count_per_step=1.0,
                          dtype=dname, name="prefill pp send"))
        ops.append(CommOp(kind="send_recv", bytes=plan.decode_batch * h * d, group="pp",
                          count_per_step=float(iters), dtype=dname, name="decode pp send"))
    if "ep" in groups:
        moe_stage = model.moe_layers / plan.pp
        ops.append(CommOp(kind="all_to_all", bytes=plan.prompt_tokens * model.top_k * h * d // plan.ep,
                          group="ep", count_per_step=2.0 * moe_stage, dtype=dname, name="prefill ep all-to-all"))
        ops.append(CommOp(kind="all_to_all", bytes=max(1, plan.decode_batch * model.top_k * h * d // plan.ep),
                          group="ep", count_per_step=2.0 * moe_stage * iters, dtype=dname,
                          name="decode ep all-to-all"))
    n_act = model.active
    prefill = 2.0 * n_act * plan.prompt_tokens / (plan.tp * gpu_flops * mfu)
    decode_iter = max(2.0 * n_act * plan.decode_batch / (plan.tp * gpu_flops * mfu), n_act * d / (plan.tp * hbm))
    compute = prefill + iters * decode_iter
    jname = name or f"{model.name}-serving"
    job = Job(name=jname, kind="inference", world_size=plan.world_size, groups=tuple(groups.values()),
              ops=tuple(ops), compute_time_s=compute, gpus_per_node_hint=plan.gpus_per_node,
              compute_gpu_tflops=gpu_flops / 1e12,
              request_rate_per_s=plan.request_rate_per_s, latency_slo_s=plan.latency_slo_s,
              notes=(f"serving {model.name}: {plan.replicas} replicas of tp {plan.tp} x pp {plan.pp}; a step is "
                     f"one request ({plan.prompt_tokens} prompt + {plan.output_tokens} output tokens, decode batch "
                     f"{plan.decode_batch}); groups describe one replica",
                     f"compute per request {compute:.4g} s (prefill {prefill:.4g} s, decode {decode_iter:.4g} s "
                     "per token)"))
    return _checked(Workload(jobs=(job,), sources=("synthesized",), name=jname))


# ---------------------------------------------------------------- recommendation


def synthesize_dlrm(model: RecSpec, *, gpus: int, global_batch: int, gpu_flops: float, mfu: float = 0.3,
                    bucket_bytes: int = DDP_BUCKET_BYTES, dp_overlap: float = 0.8, gpus_per_node: int = 8,
                    compute_cv: float = 0.02, name: str | None = None) -> Workload:
    """A DLRM-style training job: table-wise sharded embeddings (all-to-all of pooled embeddings forward and of
    their gradients backward) and data-parallel MLPs (bucketed gradient all-reduce).

    Each rank sends ``local_batch x tables x dim x dtype`` bytes per all-to-all (it looks up its tables for the whole
    global batch and returns each sample's vectors to the sample's owner; Naumov et al., "DLRM", 2019, section 4).
    Compute counts only the MLPs (6 x dense parameters x samples FLOPs); embedding lookups are memory-bound and
    left to the all-to-all and the MFU assumption.
    """
    model.validate()
    _pos_int(gpus, "gpus")
    _pos_int(global_batch, "global_batch")
    if global_batch % gpus:
        _fail("global_batch", f"{global_batch} samples must be a multiple of gpus {gpus}")
    gpu_flops = _pos_num(gpu_flops, "gpu_flops")
    mfu = _pos_num(mfu, "mfu")
    _fraction(dp_overlap, "dp_overlap")
    local = global_batch // gpus
    group = ProcessGroup(name="world", size=gpus, role="world", rank_start=0, rank_stride=1, role_source="plan")
    a2a = local * model.embedding_tables * model.embedding_dim * model.dtype_bytes
    ops = [CommOp(kind="all_to_all", bytes=a2a, group="world", count_per_step=2.0,
                  dtype=_DTYPE_NAME[model.dtype_bytes], name="embedding all-to-all (fwd lookups + bwd gradients)")]
    ops += _buckets(int(round(model.grad_dtype_bytes * model.dense_parameters)), bucket_bytes, "all_reduce",
                    "world", dp_overlap, "MLP gradient all-reduce", _DTYPE_NAME[model.grad_dtype_bytes])
    compute = 6.0 * model.dense_parameters * global_batch / (gpus * gpu_flops * mfu)
    jname = name or model.name
    job = Job(name=jname, kind="training", world_size=gpus, groups=(group,), ops=tuple(ops), compute_time_s=compute,
              compute_cv=compute_cv, gpus_per_node_hint=gpus_per_node, compute_gpu_tflops=gpu_flops / 1e12,
              notes=(f"DLRM-style: {model.embedding_tables} tables x dim {model.embedding_dim} sharded over {gpus} "
                     f"ranks, {model.dense_parameters:.3g} dense parameters replicated; global batch {global_batch}",))
    return _checked(Workload(jobs=(job,), sources=("synthesized",), name=jname))


# ---------------------------------------------------------------- checkpoints


def checkpoint_job(model: ModelSpec | RecSpec, *, world_size: int, period_s: float, name: str | None = None,
                   optimizer_bytes_per_param: float = ADAM_OPTIMIZER_BYTES_PER_PARAM,
                   target: str = "storage") -> Job:
    """A storage job: every ``period_s`` the ranks write weights (dtype bytes) plus optimizer state
    (``optimizer_bytes_per_param``, 12 for mixed-precision Adam) for every parameter (embeddings included)."""
    _pos_int(world_size, "world_size")
    _pos_num(period_s, "period_s")
    if target not in ("storage", "peers"):
        _fail("target", f"must be 'storage' or 'peers', got {target!r}")
    if isinstance(model, RecSpec):
        params = model.dense_parameters + model.embedding_rows * model.embedding_dim
    else:
        params = float(model.parameters)
    burst = int(round(params * (model.dtype_bytes + optimizer_bytes_per_param)))
    return Job(name=name or f"{model.name}-checkpoint", kind="storage", world_size=world_size,
               burst_bytes=burst, burst_period_s=float(period_s), burst_target=target,
               notes=(f"checkpoint of {params:.4g} parameters x ({model.dtype_bytes} + {optimizer_bytes_per_param:g}) "
                      f"bytes every {period_s:g} s",))


def replace_known(obj, overrides: dict, what: str):
    """``dataclasses.replace`` that names unknown fields in a WorkloadError."""
    names = {f.name for f in fields(obj)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise WorkloadError(f"{what}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(names))}")
    return replace(obj, **overrides)
