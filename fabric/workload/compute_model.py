"""Compute time of a training plan from its kernel shapes (issue 36): each plan at its own compute speed.

One MFU for every plan makes two plans whose kernels differ by 20-30 % equal. Here the compute of one training step
comes from the matrix multiplies (GEMMs) and attention each plan gives the GPU, timed on a roofline of the GPU:

- **GEMMs per layer and micro-batch** (``T = micro_batch x seq_len / cp`` tokens on the GPU; tensor parallelism
  splits one dimension of each): QKV ``T x h -> (h + 2 kv) / tp``, attention output ``T x h / tp -> h``, MLP
  ``T x h -> (2 f if gated else f) / tp`` and ``T x f / tp -> h``; an MoE layer's experts see ``ep x T x top_k /
  experts`` tokens each (the grouped GEMMs of the ``experts / ep`` local experts, each split by tp), plus the router;
  the last stage's LM head ``T x h -> vocab / tp``. Backward is two GEMMs of the same shape per forward GEMM (data
  and weight gradients).
- **GEMM time** = ``max(FLOPs / (peak x efficiency), bytes moved / HBM bandwidth)`` with the efficiency of
  :func:`gemm_efficiency`: near the GPU's best matmul rate for large GEMMs, lower as the GEMM shrinks (a thin
  tensor-parallel slice, an expert's few tokens), fitted once per GPU generation to published GEMM rates
  (:data:`ROOFLINES`, with sources; ``benchmarks/fit_gemm.py``).
- **Attention** (fused flash attention, causal): ``2 x b x (s / cp) x s x h / tp`` FLOPs forward at the GPU's
  published fused-attention rate, backward twice the FLOPs at its backward rate (:data:`ROOFLINES`).
- **Element-wise work** (norms, residual adds, the MLP's activation, rotary embedding): memory-bound, ``~10 x T x h``
  (split by tp with sequence parallelism) plus ``3 x T x f / tp`` elements forward, twice that backward.
- **Activation recomputation** (the plan's ``recompute``): ``selective`` is flash attention (the attention core
  recomputed inside its backward, Korthikanti et al. 2022); ``none`` keeps the scores (attention as two GEMMs
  batched over micro-batch and heads and the memory traffic over the scores, no recomputation); ``full`` adds every
  layer's forward to the backward pass. ``step_compute(..., attention="materialized")`` times runs from before
  fused attention kernels, whose selective recomputation recomputes the written-out scores.
- **Pipeline**: each stage holds ``layers / pp`` layers (the last also the LM head); the step runs at the slowest
  stage's pace: ``micro-batches x stage time x (1 + bubble)`` (:func:`fabric.workload.synth.pipeline_bubble_fraction`)
  plus a fixed cost per micro-batch and model chunk (:data:`CHUNK_OVERHEAD_S`).
- **Optimizer step**: Adam on the GPU's share of the parameters (divided by dp under a distributed optimizer,
  ZeRO >= 1), memory-bound at 16 bytes read and written per parameter.

Communication is not here: the evaluator charges it (and what of it hides under this compute) on the network.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Roofline", "ROOFLINES", "roofline_for", "gemm_efficiency", "gemm_time_s", "StepCompute", "step_compute",
           "CHUNK_OVERHEAD_S"]

#: Fixed time per micro-batch and model chunk on a stage (kernel launches, the stage's send/receive bookkeeping):
#: what makes more virtual stages cost something beyond their bubble saving (an assumption, stated in docs/plans.md).
CHUNK_OVERHEAD_S = 50e-6


@dataclass(frozen=True)
class Roofline:
    """What a GPU computes at: dense BF16 peak (FLOP/s), HBM bandwidth (bytes/s), the GEMM efficiency curve
    (``gemm_max``, ``gemm_w0``, ``gemm_a``: :func:`gemm_efficiency`), fused attention's forward share of peak and
    its backward time over its forward time, with the sources they come from."""

    model: str
    peak_flops: float
    hbm_bytes_per_s: float
    gemm_max: float
    fp8_max: float | None
    gemm_w0: float
    gemm_a: float
    attention_share: float
    attention_backward: float
    source: str
    #: the GEMMs' peak when they run in another precision than BF16 (FP8: twice it); None: ``peak_flops``
    gemm_peak_flops: float | None = None


#: GEMM and attention efficiency per GPU generation. ``gemm_max``: the best published BF16 matmul rate over the dense
#: peak (stas00/ml-engineering's "maximum achievable matmul FLOPS": A100 SXM 271.2 of 312, H100 SXM 794.5 of 989,
#: B200 1,745 of 2,250, GB200 1,822 of 2,500 TFLOP/s); ``gemm_w0`` and ``gemm_a`` fitted to published size-dependent
#: rates (``python benchmarks/fit_gemm.py``: XLA's GPU cost-model table, 73 H100 points, median error 6 %; 39 B200
#: points with cuBLAS's 1,006 / 1,532 / 1,610 TFLOP/s at 2048^3 / 4096^3 / 8192^3); A100 takes H100's shape (no
#: size-dependent A100 table was found). ``fp8_max``: the best published FP8 matmul rate over the dense FP8 peak (twice
#: the BF16 one: H100 SXM 1,402.6 of 1,979, B200 3,432.5 of 4,500 TFLOP/s, the same table; A100 has no FP8).
#: ``attention_share``: the causal attention kernel's forward rate over peak and
#: ``attention_backward`` its backward time over its forward time (twice the FLOPs at the backward rate): A100,
#: FlashAttention-2 (Dao 2023: ~170 TFLOP/s forward and backward together at head dim 128 and 2-8k tokens, backward
#: 2.5x the forward); H100 and B200, cuDNN's fused attention (553 / 422 TFLOP/s forward / backward on H100 and
#: 1,324 / 1,083 on B200 at 4,096 tokens: the Megatron-Core MoE report's Table 9, as transcribed).
#: Peak and HBM bandwidth come from the catalog row of the design's GPU (:func:`roofline_for`).
ROOFLINES = {
    "a100": dict(gemm_max=271.2 / 312, fp8_max=None, gemm_w0=1457.0, gemm_a=2.81, attention_share=0.64,
                 attention_backward=2.5,
                 source="A100 SXM: best BF16 matmul 271.2 of 312 TFLOP/s; curve shape of H100; FlashAttention-2"),
    "h100": dict(gemm_max=794.5 / 989, fp8_max=1402.6 / 1979, gemm_w0=1457.0, gemm_a=2.81,
                 attention_share=553 / 989,
                 attention_backward=2 * 553 / 422,
                 source="H100 SXM: best BF16 matmul 794.5 of 989 TFLOP/s; XLA table fit; cuDNN fused attention"),
    "b200": dict(gemm_max=1745.0 / 2250, fp8_max=3432.5 / 4500, gemm_w0=1924.0, gemm_a=2.80,
                 attention_share=1324 / 2250,
                 attention_backward=2 * 1324 / 1083,
                 source="B200: best BF16 matmul 1,745 of 2,250 TFLOP/s; XLA table and cuBLAS fit"),
    "gb200": dict(gemm_max=1822.0 / 2500, fp8_max=3432.5 / 4500, gemm_w0=1924.0, gemm_a=2.80,
                  attention_share=1324 / 2250,
                  attention_backward=2 * 1324 / 1083,
                  source="GB200: best BF16 matmul 1,822 of 2,500 TFLOP/s; B200's curve shape"),
}


def _generation(gpu_model: str) -> str:
    m = gpu_model.lower()
    if m.startswith("a100"):
        return "a100"
    if m.startswith("gb"):
        return "gb200"
    if m.startswith(("b200", "b300")):
        return "b200"
    return "h100"                           # H100, H200 and unknown Hopper-class parts


def roofline_for(gpu) -> Roofline:
    """The :class:`Roofline` of a catalog GPU row (``bf16_flops``, ``hbm_bytes_per_s``; an HBM bandwidth the row
    lacks is taken as 3.35 TB/s per 989 TFLOP/s, H100's ratio)."""
    gen = ROOFLINES[_generation(gpu.model)]
    hbm = getattr(gpu, "hbm_bytes_per_s", None) or gpu.bf16_flops * 3.35e12 / 989e12
    return Roofline(model=gpu.model, peak_flops=float(gpu.bf16_flops), hbm_bytes_per_s=float(hbm), **gen)


def gemm_efficiency(roof: Roofline, m: float, n: float, k: float) -> float:
    """The share of peak an ``m x k`` by ``k x n`` GEMM runs at: ``gemm_max / (1 + (gemm_w0 / (m n k)^(1/3))^
    gemm_a)``: near ``gemm_max`` for large GEMMs, falling as the mean dimension shrinks."""
    return roof.gemm_max / (1.0 + (roof.gemm_w0 / (m * n * k) ** (1.0 / 3.0)) ** roof.gemm_a)


def gemm_time_s(roof: Roofline, m: float, n: float, k: float, *, dtype_bytes: int = 2) -> float:
    """Seconds of one ``m x k`` by ``k x n`` GEMM on ``roof`` (module docstring); 0 for an empty one."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    eff = gemm_efficiency(roof, m, n, k)
    flops = 2.0 * m * n * k
    moved = dtype_bytes * (m * k + k * n + m * n)
    return max(flops / ((roof.gemm_peak_flops or roof.peak_flops) * eff), moved / roof.hbm_bytes_per_s)


@dataclass(frozen=True)
class StepCompute:
    """The compute of one training step under a plan, split by kind (seconds on one GPU of the slowest stage)."""

    step_s: float
    gemm_s: float
    attention_s: float
    elementwise_s: float
    recompute_s: float
    bubble_s: float
    overhead_s: float
    optimizer_s: float
    model_flops: float
    mfu_of_compute: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _layer_times(model, plan, roof: Roofline, *, moe: bool, flash: bool = True) -> tuple[float, float, float, float]:
    """Seconds of one layer and micro-batch: forward GEMMs, the attention core's forward and backward, and forward
    element-wise work."""
    tp, cp = plan.tp, plan.cp
    T = plan.micro_batch * model.seq_len / cp
    h, kv = model.hidden, model.kv_dim
    f = model.ffn_hidden
    up = (2 * f if model.gated_mlp else f) / tp
    g = gemm_time_s(roof, T, (h + 2 * kv) / tp, h) + gemm_time_s(roof, T, h, h / tp)
    if moe:
        E, k = model.experts, model.top_k
        local = max(E // max(plan.ep, 1), 1)
        per_expert = plan.ep * T * k / E
        g += gemm_time_s(roof, T, E, h)                                    # router
        g += local * (gemm_time_s(roof, per_expert, up, h) + gemm_time_s(roof, per_expert, h, f / tp))
        act_elems = T * k * f / tp
    else:
        g += gemm_time_s(roof, T, up, h) + gemm_time_s(roof, T, h, f / tp)
        act_elems = T * f / tp
    a, a_bwd = _attention_times(model, plan, roof, flash=flash)
    sp = tp if plan.sequence_parallel else 1
    elems = 10.0 * T * h / sp + 3.0 * act_elems
    e = elems * model.dtype_bytes * 2 / roof.hbm_bytes_per_s            # read and write
    return g, a, a_bwd, e


def _attention_times(model, plan, roof: Roofline, *, flash: bool = True) -> tuple[float, float]:
    """Forward and backward seconds of the causal attention core of one layer and micro-batch.

    Fused (flash) attention: its FLOPs at the GPU's published forward rate, the backward twice the FLOPs at its
    backward rate. Scores written out (``recompute="none"``, or training before fused kernels): two GEMMs batched
    over micro-batch x heads (Q K^T and P V) plus the memory traffic over the scores, counted kernel by kernel as
    Megatron-LM's core attention runs them in 2-byte precision: forward 13 bytes per score (Q K^T writes 2; the
    fused scale-mask-softmax reads 2 and writes 2; dropout reads 2, writes 2 and a 1-byte mask; P V reads 2),
    backward 19 bytes (dP written 2; dropout's gradient reads 2 and the mask 1, writes 2; the softmax gradient reads
    2 and P 2, writes 2; the two GEMMs of dS read it 2 x 2; dV reads P' 2) and the GEMMs' two gradients each."""
    b, s_q, s = plan.micro_batch, model.seq_len / plan.cp, model.seq_len
    heads = model.heads / plan.tp
    if flash and plan.recompute != "none":
        flops = 2.0 * b * s_q * s * model.hidden / plan.tp             # causal: half of 4 b s_q s h / tp
        fwd = flops / (roof.peak_flops * roof.attention_share)
        return fwd, roof.attention_backward * fwd
    scores = b * heads * s_q * s
    m = b * heads * s_q
    gemms = gemm_time_s(roof, m, s, model.head_dim) + gemm_time_s(roof, m, model.head_dim, s)
    return (gemms + scores * 13.0 / roof.hbm_bytes_per_s,
            2.0 * gemms + scores * 19.0 / roof.hbm_bytes_per_s)


def _for_precision(roof: Roofline, precision: str) -> Roofline:
    """``roof`` for GEMMs in ``precision``: FP8 GEMMs at twice the BF16 peak and the GPU's best FP8 rate; attention
    and element-wise work stay in BF16 (their seconds unchanged)."""
    if precision == "bf16":
        return roof
    if roof.fp8_max is None:
        from fabric.errors import WorkloadError

        raise WorkloadError(f"gemm_precision fp8: {roof.model} has no FP8 tensor cores in the compute model")
    from dataclasses import replace

    return replace(roof, gemm_peak_flops=2 * roof.peak_flops, gemm_max=roof.fp8_max)


def step_compute(model, plan, roof: Roofline, *, attention: str = "flash") -> StepCompute:
    """The compute of one training step of ``model`` under ``plan`` (its ``recompute`` included) on ``roof``
    (module docstring). ``attention``: "flash" (a fused kernel: every plan fabric ranks) or "materialized" (the
    scores written out, as training ran before fused attention kernels: Megatron-LM in 2021-2022, whose selective
    recomputation recomputes the score, softmax and dropout part in backward)."""
    from fabric.workload.synth import pipeline_bubble_fraction, training_flops_per_step

    if attention not in ("flash", "materialized"):
        raise ValueError(f"attention must be 'flash' or 'materialized', got {attention!r}")
    roof = _for_precision(roof, plan.gemm_precision)
    recompute = plan.recompute
    layers_per_stage = model.layers / plan.pp
    moe_share = model.moe_layers / model.layers if model.layers else 0.0
    flash = attention == "flash"
    fd = _layer_times(model, plan, roof, moe=False, flash=flash)
    fm = _layer_times(model, plan, roof, moe=True, flash=flash) if moe_share else fd
    g_f = (1 - moe_share) * fd[0] + moe_share * fm[0]
    a_f, a_b = fd[1], fd[2]
    e_f = (1 - moe_share) * fd[3] + moe_share * fm[3]
    # one layer, one micro-batch: forward + backward (GEMMs x2, the attention core's own backward, element-wise x2)
    gemm = 3.0 * g_f
    attn = a_f + a_b
    elementwise = 3.0 * e_f
    redo = g_f + e_f + a_f if recompute == "full" else a_f if recompute == "selective" and not flash else 0.0
    per_layer = gemm + attn + elementwise + redo
    T = plan.micro_batch * model.seq_len / plan.cp
    head = 3.0 * gemm_time_s(roof, T, model.vocab / plan.tp, model.hidden)
    stage = layers_per_stage * per_layer + head          # the last stage (the slowest: it holds the LM head)
    m = plan.micro_batches
    chunks = plan.virtual_stages
    busy = m * stage
    bubble = busy * pipeline_bubble_fraction(plan)
    overhead = m * chunks * CHUNK_OVERHEAD_S
    params_local = model.parameters / (plan.tp * plan.pp)
    if plan.effective_zero >= 1:
        params_local /= max(plan.dp, 1)
    optimizer = params_local * 16.0 * 2 / roof.hbm_bytes_per_s
    step = busy + bubble + overhead + optimizer
    flops = training_flops_per_step(model, plan)
    return StepCompute(step_s=step, gemm_s=m * layers_per_stage * gemm + m * head,
                       attention_s=m * layers_per_stage * attn, elementwise_s=m * layers_per_stage * elementwise,
                       recompute_s=m * layers_per_stage * redo, bubble_s=bubble, overhead_s=overhead,
                       optimizer_s=optimizer, model_flops=flops,
                       mfu_of_compute=flops / (plan.world_size * roof.peak_flops * step) if step > 0 else 0.0)
