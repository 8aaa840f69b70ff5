"""What one GPU holds while it trains under a parallelism plan: weights, gradients, optimizer state, activations.

Every term is per GPU, in bytes, for the GPU that holds the most (the first pipeline stage, which keeps the most
micro-batches in flight under 1F1B). Written out, with the references, in docs/plans.md:

- parameters on a rank: ``dense / (tp x pp) + experts / (tp x pp x ep)`` (the split :func:`fabric.workload.synth.synthesize`
  uses; pipeline stages are taken as equal, so the embedding and output layers are averaged over them);
- weights ``dtype_bytes`` per parameter, gradients ``grad_dtype_bytes``, optimizer state 12 bytes (mixed-precision
  Adam: fp32 master weights, momentum, variance; ZeRO, Rajbhandari et al. 2020, section 3.1). ZeRO stage 1 shards the
  optimizer state over the data-parallel group (dp x cp ranks; dp x cp / ep for expert parameters), stage 2 the
  gradients too, stage 3 the weights too;
- activations of one micro-batch on one layer, in bytes at 2-byte precision (Korthikanti et al., "Reducing Activation
  Recomputation in Large Transformer Models", MLSys 2023, section 4: 34 s b h with tensor and sequence parallelism
  and selective recomputation of the attention scores), generalised to grouped-query attention and any MLP::

      s b (11 h + 4 kv + k (3 h + c f)) / t        s = seq_len / cp, b = micro-batch, t = tp

  with ``kv`` the K/V width, ``f`` the MLP width, ``c`` = 6 for a gated MLP (SwiGLU: two inputs of the activation
  and the down projection's input) and 4 otherwise (4 h wide: 19 s b h, Korthikanti's figure), ``k`` the experts a
  token visits (top_k on a mixture-of-experts layer, 1 on a dense one). Without sequence parallelism the layer-norm
  and dropout part (10 s b h) is not split by tp. Other dtypes scale by ``dtype_bytes / 2``. That is selective
  recomputation (the plan's ``recompute``, the default; flash attention never keeps the scores). Without
  recomputation the attention scores, their softmax and dropout mask stay too: ``+ 5 a s^2 b / t`` bytes (``a``
  heads; Korthikanti et al., equation 1). With full recomputation a layer keeps only its input: ``2 s b h / t``
  bytes with sequence parallelism (``2 s b h`` without), the rest is recomputed in backward;
- micro-batches in flight on the first stage: ``min(pp, micro-batches)`` under 1F1B (Narayanan et al., SC 2021),
  times ``1 + (pp - 1) / (pp x v)`` for the interleaved schedule of v chunks (Korthikanti et al., section 4.2.3); one
  without pipelining. The stage holds ``layers / pp`` layers.

Not counted: the CUDA context, NCCL buffers, allocator fragmentation, the logits of the last stage and ZeRO-3's
gathered working copy of one layer. A plan within a few GB of the HBM may still not run: the margin is shown.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fabric.workload.synth import ADAM_OPTIMIZER_BYTES_PER_PARAM, ModelSpec, ParallelPlan

__all__ = ["MemoryUse", "plan_memory", "activation_bytes_per_layer"]


@dataclass(frozen=True)
class MemoryUse:
    """Bytes one GPU holds under a plan (the first pipeline stage), and whether it fits ``hbm_bytes``."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    hbm_bytes: float | None

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes

    @property
    def fits(self) -> bool:
        """True when the total fits the HBM (or no HBM figure is known)."""
        return self.hbm_bytes is None or self.total_bytes <= self.hbm_bytes

    def text(self) -> str:
        """``weights 4.4 + gradients 4.4 + optimizer 0.8 + activations 23.8 = 33.5 GB of 80 GB``."""
        parts = (f"weights {self.weights_bytes / 1e9:,.1f} + gradients {self.gradients_bytes / 1e9:,.1f} + optimizer "
                 f"{self.optimizer_bytes / 1e9:,.1f} + activations {self.activations_bytes / 1e9:,.1f} = "
                 f"{self.total_bytes / 1e9:,.1f} GB")
        return parts + ("" if self.hbm_bytes is None else f" of {self.hbm_bytes / 1e9:,.0f} GB")

    def to_dict(self) -> dict:
        return {**asdict(self), "total_bytes": self.total_bytes, "fits": self.fits}


def activation_bytes_per_layer(model: ModelSpec, plan: ParallelPlan, *, moe_layer: bool) -> float:
    """Activations one layer keeps for one micro-batch on one GPU (the formula of the module docstring)."""
    s = model.seq_len / plan.cp
    b = plan.micro_batch
    h, kv, f = model.hidden, model.kv_dim, model.ffn_hidden
    if plan.recompute == "full":
        whole = 2.0 * s * b * h
        return (whole / plan.tp if plan.sequence_parallel else whole) * model.dtype_bytes / 2
    k = model.top_k if moe_layer else 1
    c = 6 if model.gated_mlp else 4
    per = s * b * (11 * h + 4 * kv + k * (3 * h + c * f))
    unsplit = 0.0
    if plan.tp > 1 and not plan.sequence_parallel:
        unsplit = s * b * 10 * h               # layer norms and dropout masks stay whole on every TP rank
        per -= unsplit
    scores = 5.0 * model.heads * s * model.seq_len * b / plan.tp if plan.recompute == "none" else 0.0
    return (per / plan.tp + unsplit) * model.dtype_bytes / 2 + scores


def plan_memory(model: ModelSpec, plan: ParallelPlan, hbm_bytes: float | None) -> MemoryUse:
    """The memory of the module docstring for ``model`` under ``plan`` on a GPU of ``hbm_bytes``."""
    dp_group = plan.dp * plan.cp
    dense = model.dense_parameters / (plan.tp * plan.pp)
    expert = model.expert_parameters / (plan.tp * plan.pp * plan.ep)
    z = plan.effective_zero
    d = model.dtype_bytes
    g = plan.grad_dtype_bytes or d

    def sharded(per_param: float, from_stage: int) -> float:
        if z >= from_stage:
            return per_param * (dense / dp_group + expert / max(1, dp_group // plan.ep))
        return per_param * (dense + expert)

    weights = sharded(d, 3)
    grads = sharded(g, 2)
    optimizer = sharded(ADAM_OPTIMIZER_BYTES_PER_PARAM, 1)
    layers_stage = model.layers / plan.pp
    moe_share = (model.moe_layers / model.layers) if model.experts > 1 else 0.0
    per_layer = ((1 - moe_share) * activation_bytes_per_layer(model, plan, moe_layer=False)
                 + moe_share * activation_bytes_per_layer(model, plan, moe_layer=True))
    if plan.pp > 1:
        in_flight = min(plan.pp, plan.micro_batches) * (1 + (plan.pp - 1) / (plan.pp * plan.virtual_stages)
                                                         if plan.virtual_stages > 1 else 1.0)
    else:
        in_flight = 1.0
    acts = in_flight * layers_stage * per_layer
    return MemoryUse(weights, grads, optimizer, acts, hbm_bytes)
