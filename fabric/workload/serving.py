"""Serving plans: an inference service's request structure and the traffic each request puts on the fabric.

:func:`synthesize_serving` turns a :class:`ServingModel` and a :class:`ServingPlan` into an inference
:class:`~fabric.workload.model.Job` with a :class:`~fabric.workload.model.ServingSpec` (what the request-level
latency model of :mod:`fabric.evaluate.serving` needs) and ops tagged by request phase:

- **dense, TP inside the node** (``ep`` = 1): two all-reduces of the tokens' activations per layer (Megatron
  tensor parallelism), for the prompt at prefill and for the decode batch at every token step;
- **MoE decode with expert parallelism across nodes** (``ep`` > 1; DeepSeek-V3 style): per MoE layer and token
  step a *dispatch* all-to-all (each GPU sends its tokens to the ``top_k`` GPUs holding their experts, in FP8 with
  one FP32 scale per 128 channels) and a *combine* all-to-all (the expert outputs back, in BF16). Bytes each GPU
  sends per layer per token step (the all-to-all convention of :mod:`fabric.workload.model`)::

      dispatch = t x top_k x (hidden x dispatch_bytes + hidden / 128 x 4)
      combine  = t x top_k x hidden x combine_bytes              t = decode_batch / ep tokens per GPU

  Attention runs data parallel over groups of ``tp`` GPUs inside a node (an all-gather and a reduce-scatter of
  the group's tokens per layer when ``tp`` > 1);
- **disaggregated prefill and decode** (``mode`` "disaggregated"): prefill on replicas of its own, then the
  request's KV cache crosses the scale-out network to a decode replica::

      kv_bytes = layers x kv_values_per_token_layer x prompt_tokens x kv_bytes_per_value
      kv_values_per_token_layer = 2 x kv_heads x head_dim      (K and V; MLA caches its latent instead)

  each of the replica's KV shards (``tp`` for dense, one GPU's share for MoE) moving to its peer at once;
- **KV offload** (``kv_offload_hit`` > 0): that share of the prompt's KV cache is read from a remote memory pool
  on a peer node (Mooncake-style) before the rest of the prompt is prefilled, saving its prefill compute.

Compute (a roofline per GPU): prefill ``2 N_active x tokens / (gpus x F x mfu)``; a decode iteration the longer
of its FLOPs ``2 N_active x batch / (gpus x F x mfu)`` and reading the GPU's weights and the batch's KV cache
(context ``prompt + output / 2``) from HBM. Every formula is in docs/serving.md with its sources.

Rank layout: a replica's GPUs are consecutive; a disaggregated service alternates a prefill replica and a decode
replica (``[P0 | D0 | P1 | D1 ...]``), so the KV pairs (prefill rank j, decode rank j) are a strided group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fabric.errors import WorkloadError
from fabric.workload.model import (
    ARRIVAL_PROCESSES, SERVING_MODES, CommOp, Job, ProcessGroup, ServingSpec, Workload, validate_workload,
)

__all__ = ["ServingModel", "ServingPlan", "synthesize_serving", "kv_bytes_per_token", "moe_a2a_bytes_per_gpu",
           "LLAMA3_70B_SERVING", "DEEPSEEK_V3", "FP8_SCALE_GROUP", "compute_capacity_per_replica", "with_rate",
           "serving_preset_build", "attach_serving"]

#: Channels per FP32 scale of DeepSeek-V3's FP8 activations (1 x 128 tiles; DeepSeek-V3 technical report,
#: arXiv 2412.19437, section 3.3.2 "fine-grained quantization"); each scale is 4 bytes.
FP8_SCALE_GROUP = 128


@dataclass(frozen=True)
class ServingModel:
    """A decoder's shape as serving sees it. ``kv_values_per_token_layer`` defaults to ``2 x kv_heads x
    head_dim`` (K and V); a multi-head latent attention model caches ``kv_lora_rank + rope_dim`` values instead.
    ``moe_layers`` of the ``layers`` have ``experts`` routed experts with ``top_k`` per token."""

    name: str
    parameters: float
    active_parameters: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    experts: int = 1
    top_k: int = 1
    moe_layers: int = 0
    expert_parameters: float = 0.0
    kv_values_per_token_layer: int | None = None
    weight_bytes: int = 2

    @property
    def kv_values(self) -> int:
        return self.kv_values_per_token_layer or 2 * self.kv_heads * self.head_dim


#: Meta Llama 3 70B config: 80 layers, hidden 8192, 64 heads, 8 KV heads, head dim 128; 70.6e9 parameters.
LLAMA3_70B_SERVING = ServingModel(name="llama3-70b", parameters=70.6e9, active_parameters=70.6e9, layers=80,
                                  hidden=8192, heads=64, kv_heads=8, head_dim=128)
#: DeepSeek-V3 (arXiv 2412.19437 and its config.json): 61 layers (the first 3 dense, 58 MoE), hidden 7168,
#: 128 heads, MLA KV cache of kv_lora_rank 512 + qk_rope_head_dim 64 values per token per layer, 256 routed experts
#: (+1 shared) of width 2048, top-8; 671e9 parameters, 37e9 active; FP8 weights.
DEEPSEEK_V3 = ServingModel(name="deepseek-v3", parameters=671e9, active_parameters=37e9, layers=61, hidden=7168,
                           heads=128, kv_heads=128, head_dim=128, experts=256, top_k=8, moe_layers=58,
                           expert_parameters=58 * 256 * 3 * 7168 * 2048, kv_values_per_token_layer=512 + 64,
                           weight_bytes=1)


@dataclass(frozen=True)
class ServingPlan:
    """How the service is deployed and loaded. A replica is ``tp`` GPUs (dense) or ``ep`` GPUs (MoE, attention
    data parallel over groups of ``tp``); ``replicas`` replicas decode (and prefill when colocated), a
    disaggregated service has as many prefill replicas again. ``decode_batch`` sequences per decode iteration per
    replica. Latency budgets: ``ttft_slo_s`` (time to first token), ``tpot_slo_s`` (time per output token)."""

    tp: int = 8
    ep: int = 1
    #: MoE, disaggregated: the prefill pool (as many GPUs as the decode pool) runs prefill instances of this many
    #: GPUs each (None: ``ep``); DeepSeek-V3 prefills on EP 32 while it decodes on EP 320
    prefill_ep: int | None = None
    replicas: int = 1
    mode: str = "colocated"
    prompt_tokens: int = 1024
    output_tokens: int = 256
    decode_batch: int = 64
    request_rate_per_s: float = 1.0
    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None
    arrival: str = "poisson"
    burst_factor: float = 1.0
    burst_fraction: float = 0.0
    burst_mean_s: float = 1.0
    kv_offload_hit: float = 0.0
    kv_bytes_per_value: int = 2
    dispatch_bytes: int = 1
    combine_bytes: int = 2
    gpus_per_node: int = 8

    @property
    def replica_gpus(self) -> int:
        return self.ep if self.ep > 1 else self.tp

    @property
    def prefill_gpus(self) -> int:
        """GPUs of one prefill instance."""
        return (self.prefill_ep or self.ep) if self.ep > 1 else self.tp

    @property
    def world_size(self) -> int:
        return self.replica_gpus * self.replicas * (2 if self.mode == "disaggregated" else 1)


def kv_bytes_per_token(model: ServingModel, kv_bytes_per_value: int = 2) -> int:
    """KV-cache bytes of one token over all layers: ``layers x kv_values_per_token_layer x bytes``."""
    return model.layers * model.kv_values * kv_bytes_per_value


def moe_a2a_bytes_per_gpu(model: ServingModel, tokens_per_gpu: int, *, dispatch_bytes: int = 1,
                          combine_bytes: int = 2) -> tuple[int, int]:
    """``(dispatch, combine)`` bytes one GPU sends per MoE layer for ``tokens_per_gpu`` tokens (module docstring)."""
    scales = math.ceil(model.hidden / FP8_SCALE_GROUP) * 4 if dispatch_bytes == 1 else 0
    dispatch = tokens_per_gpu * model.top_k * (model.hidden * dispatch_bytes + scales)
    combine = tokens_per_gpu * model.top_k * model.hidden * combine_bytes
    return int(dispatch), int(combine)


def _fail(field: str, msg: str) -> None:
    raise WorkloadError(f"{field}: {msg}")


def _check_plan(model: ServingModel, plan: ServingPlan) -> None:
    for f in ("tp", "ep", "replicas", "prompt_tokens", "output_tokens", "decode_batch", "gpus_per_node",
              "kv_bytes_per_value", "dispatch_bytes", "combine_bytes"):
        v = getattr(plan, f)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            _fail(f"plan.{f}", f"must be a whole number >= 1, got {v!r}")
    for f in ("request_rate_per_s",):
        v = getattr(plan, f)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            _fail(f"plan.{f}", f"must be a positive number, got {v!r}")
    if plan.mode not in SERVING_MODES:
        _fail("plan.mode", f"choose one of {', '.join(SERVING_MODES)}, got {plan.mode!r}")
    if plan.arrival not in ARRIVAL_PROCESSES:
        _fail("plan.arrival", f"choose one of {', '.join(ARRIVAL_PROCESSES)}, got {plan.arrival!r}")
    if not 0.0 <= plan.kv_offload_hit < 1.0:
        _fail("plan.kv_offload_hit", f"must be in [0, 1), got {plan.kv_offload_hit!r}")
    if plan.tp > plan.gpus_per_node or plan.gpus_per_node % plan.tp:
        _fail("plan.tp", f"TP {plan.tp} must divide the {plan.gpus_per_node} GPUs of a node (TP stays inside it)")
    if model.heads % plan.tp:
        _fail("plan.tp", f"TP {plan.tp} must divide the {model.heads} attention heads")
    if plan.ep > 1:
        if model.experts <= 1:
            _fail("plan.ep", f"{model.name} is dense: expert parallelism needs a mixture-of-experts model")
        if plan.ep % plan.tp:
            _fail("plan.ep", f"EP {plan.ep} must be a multiple of the attention TP {plan.tp}")
        if plan.decode_batch % plan.ep:
            _fail("plan.decode_batch", f"{plan.decode_batch} sequences do not split evenly over EP {plan.ep} GPUs")
    if plan.prefill_ep is not None:
        if plan.ep <= 1 or plan.mode != "disaggregated":
            _fail("plan.prefill_ep", "only a disaggregated mixture-of-experts service has prefill instances of "
                                     "their own size")
        if isinstance(plan.prefill_ep, bool) or not isinstance(plan.prefill_ep, int) or plan.prefill_ep < 1 or \
                plan.ep % plan.prefill_ep or plan.prefill_ep % plan.tp:
            _fail("plan.prefill_ep", f"must divide EP {plan.ep} and be a multiple of the attention TP {plan.tp}, "
                                     f"got {plan.prefill_ep!r}")
    if plan.mode == "disaggregated" and plan.kv_offload_hit:
        _fail("plan.kv_offload_hit", "KV offload is modelled for colocated services (prefill reads the pool)")
    if plan.kv_offload_hit and plan.replicas % 2:
        _fail("plan.replicas", "KV offload pairs each replica with a peer's memory pool: give an even count")


def synthesize_serving(model: ServingModel, plan: ServingPlan, *, gpu_flops: float, hbm_bytes_per_s: float,
                       mfu: float = 0.4, name: str | None = None) -> Workload:
    """An inference workload of one serving job (module docstring; docs/serving.md)."""
    _check_plan(model, plan)
    for f, v in (("gpu_flops", gpu_flops), ("hbm_bytes_per_s", hbm_bytes_per_s), ("mfu", mfu)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            _fail(f, f"must be a positive number, got {v!r}")
    act = 2  # activations travel in BF16
    h, L = model.hidden, model.layers
    n = plan.replica_gpus
    moe = plan.ep > 1
    groups: dict[str, ProcessGroup] = {}
    ops: list[CommOp] = []
    prompt_new = int(round(plan.prompt_tokens * (1.0 - plan.kv_offload_hit)))
    if plan.tp > 1:
        groups["tp"] = ProcessGroup("tp", plan.tp, "tp", rank_start=0, rank_stride=1, role_source="plan")
    if moe:
        groups["ep"] = ProcessGroup("ep", plan.ep, "ep", rank_start=0, rank_stride=1, role_source="plan")
        pre_group = "ep"
        if plan.prefill_gpus != plan.ep:
            pre_group = "ep_prefill"
            groups[pre_group] = ProcessGroup(pre_group, plan.prefill_gpus, "ep", rank_start=0, rank_stride=1,
                                             role_source="plan")
        t_dec = plan.decode_batch // plan.ep
        t_pre = max(1, math.ceil(prompt_new / plan.prefill_gpus))
        for phase, tokens, group in (("prefill", t_pre, pre_group), ("decode", t_dec, "ep")):
            disp, comb = moe_a2a_bytes_per_gpu(model, tokens, dispatch_bytes=plan.dispatch_bytes,
                                               combine_bytes=plan.combine_bytes)
            ops.append(CommOp("all_to_all", disp, group, float(model.moe_layers), dtype="fp8",
                              name=f"{phase} ep dispatch", phase=phase))
            ops.append(CommOp("all_to_all", comb, group, float(model.moe_layers), dtype="bf16",
                              name=f"{phase} ep combine", phase=phase))
        if plan.tp > 1:      # attention TP with sequence parallelism: gather the group's tokens, scatter back
            for phase, tokens in (("prefill", t_pre), ("decode", t_dec)):
                size = tokens * plan.tp * h * act
                ops.append(CommOp("all_gather", size, "tp", float(L), dtype="bf16", name=f"{phase} attn all-gather",
                                  phase=phase))
                ops.append(CommOp("reduce_scatter", size, "tp", float(L), dtype="bf16",
                                  name=f"{phase} attn reduce-scatter", phase=phase))
    elif plan.tp > 1:
        ops.append(CommOp("all_reduce", prompt_new * h * act, "tp", 2.0 * L, dtype="bf16",
                          name="prefill tp all-reduce", phase="prefill"))
        ops.append(CommOp("all_reduce", plan.decode_batch * h * act, "tp", 2.0 * L, dtype="bf16",
                          name="decode tp all-reduce", phase="decode"))
    kv_token = kv_bytes_per_token(model, plan.kv_bytes_per_value)
    kv_request = kv_token * plan.prompt_tokens
    # KV shards: TP splits the KV heads over the replica's TP ranks; MoE (attention DP) keeps a request on one GPU
    shards = 1 if moe else plan.tp
    if plan.mode == "disaggregated":
        groups["kv"] = ProcessGroup("kv", 2, "unknown", rank_start=0, rank_stride=n, role_source="plan")
        ops.append(CommOp("send_recv", max(1, kv_request // shards), "kv", 1.0, dtype="bf16",
                          name="kv-cache transfer", phase="kv_transfer"))
    if plan.kv_offload_hit:
        groups["kvpool"] = ProcessGroup("kvpool", 2, "unknown", rank_start=0, rank_stride=n, role_source="plan")
        reused = plan.prompt_tokens - prompt_new
        ops.append(CommOp("send_recv", max(1, kv_token * reused // shards), "kvpool", 1.0, dtype="bf16",
                          name="kv-cache fetch from the remote pool", phase="kv_offload"))
    # compute: a roofline per GPU
    peak = gpu_flops * mfu
    prefill_s = 2.0 * model.active_parameters * prompt_new / (plan.prefill_gpus * peak)
    weights = (model.parameters - model.expert_parameters) * model.weight_bytes / plan.tp \
        + model.expert_parameters * model.weight_bytes / max(plan.ep, 1) if moe else \
        model.parameters * model.weight_bytes / plan.tp
    context = plan.prompt_tokens + plan.output_tokens / 2.0
    kv_read = plan.decode_batch * kv_token * context / (plan.ep if moe else plan.tp)
    decode_flops_s = 2.0 * model.active_parameters * plan.decode_batch / (n * peak)
    decode_hbm_s = (weights + kv_read) / hbm_bytes_per_s
    decode_step_s = max(decode_flops_s, decode_hbm_s)
    spec = ServingSpec(
        prompt_tokens=plan.prompt_tokens, output_tokens=plan.output_tokens, decode_batch=plan.decode_batch,
        replicas=plan.replicas, prefill_s=prefill_s, decode_step_s=decode_step_s, mode=plan.mode,
        prefill_replicas=plan.replicas * n // plan.prefill_gpus if plan.mode == "disaggregated" else None,
        kv_bytes_per_request=int(kv_request) if plan.mode == "disaggregated" else 0, arrival=plan.arrival,
        burst_factor=float(plan.burst_factor), burst_fraction=float(plan.burst_fraction),
        burst_mean_s=float(plan.burst_mean_s), ttft_slo_s=plan.ttft_slo_s, tpot_slo_s=plan.tpot_slo_s)
    jname = name or f"{model.name}-serving"
    shape = (f"EP {plan.ep} across nodes (attention TP {plan.tp})" if moe else f"TP {plan.tp} inside the node")
    notes = (f"serving {model.name}: {plan.replicas} {plan.mode} replica(s) of {n} GPUs, {shape}; "
             f"{plan.prompt_tokens} prompt + {plan.output_tokens} output tokens, decode batch {plan.decode_batch}",
             f"compute: prefill {prefill_s:.4g} s per request, decode {decode_step_s:.4g} s per token step "
             f"({'FLOPs' if decode_flops_s >= decode_hbm_s else 'HBM'}-bound)",
             f"KV cache {kv_token:,} bytes per token; {kv_request:,} bytes per request"
             + (" moved prefill -> decode" if plan.mode == "disaggregated" else ""))
    job = Job(name=jname, kind="inference", world_size=plan.world_size, groups=tuple(groups.values()),
              ops=tuple(ops), compute_time_s=prefill_s + (plan.output_tokens - 1) * decode_step_s,
              gpus_per_node_hint=plan.gpus_per_node, request_rate_per_s=float(plan.request_rate_per_s),
              latency_slo_s=None, notes=notes, serving=spec, compute_gpu_tflops=gpu_flops / 1e12)
    return validate_workload(Workload(jobs=(job,), sources=("synthesized",), name=jname))


def compute_capacity_per_replica(spec: ServingSpec) -> float:
    """Requests per second one replica sustains on compute alone (no network): colocated, prefill and decode share
    the GPUs, ``1 / (prefill_s + output_tokens x decode_step_s / decode_batch)``; disaggregated, the slower of the
    prefill replica ``1 / prefill_s`` and the decode replica ``decode_batch / (output_tokens x decode_step_s)``."""
    decode = spec.output_tokens * spec.decode_step_s / spec.decode_batch
    if spec.mode == "colocated":
        return 1.0 / (spec.prefill_s + decode) if spec.prefill_s + decode > 0 else math.inf
    per = (spec.prefill_replicas or spec.replicas) / spec.replicas      # prefill instances per decode replica
    return min(per / spec.prefill_s if spec.prefill_s > 0 else math.inf, 1.0 / decode if decode > 0 else math.inf)


def with_rate(workload: Workload, rate_per_s: float) -> Workload:
    """A copy of ``workload`` whose serving jobs receive ``rate_per_s`` requests per second."""
    return workload.with_jobs([replace(j, request_rate_per_s=float(rate_per_s)) if j.serving is not None else j
                               for j in workload.jobs])


def serving_preset_build(preset, gpus: int, overrides: dict, *, plan_defaults: dict, load: float = 0.5,
                         gpu_flops: float, hbm_bytes_per_s: float) -> Workload:
    """Build a serving preset at ``gpus`` GPUs: ``overrides`` may set any :class:`ServingPlan` field, ``mfu``,
    ``gpu_flops``, ``hbm_bytes_per_s`` or ``name``. Replicas fill the GPUs; the request rate defaults to ``load``
    of what the replicas sustain on compute alone (:func:`compute_capacity_per_replica`)."""
    from dataclasses import fields

    plan_keys = {f.name for f in fields(ServingPlan)}
    syn_keys = {"mfu", "gpu_flops", "hbm_bytes_per_s", "name"}
    unknown = sorted(set(overrides) - plan_keys - syn_keys)
    if unknown:
        raise WorkloadError(f"preset {preset.name!r}: unknown override(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(sorted(plan_keys | syn_keys))}")
    pk = {**plan_defaults, **{k: v for k, v in overrides.items() if k in plan_keys}}
    syn = {"gpu_flops": gpu_flops, "hbm_bytes_per_s": hbm_bytes_per_s, "mfu": 0.4, "name": preset.name,
           **{k: v for k, v in overrides.items() if k in syn_keys}}
    tokens_per_gpu = plan_defaults["decode_batch"] // plan_defaults["ep"] if plan_defaults.get("ep", 1) > 1 else None
    per = ServingPlan(**{**pk, "replicas": 1}).world_size
    if tokens_per_gpu:
        tp = pk.get("tp", 1)
        if "ep" not in overrides and gpus < per:
            # a smaller cluster: expert parallelism over every decode GPU of one replica
            half = gpus // (2 if pk.get("mode") == "disaggregated" else 1)
            pk["ep"] = max(tp, half - half % tp)
        if pk.get("prefill_ep") and "prefill_ep" not in overrides:
            # the preset's prefill instances, or the largest size below them that divides EP and holds whole TP groups
            pk["prefill_ep"] = next((k for k in range(min(pk["prefill_ep"], pk["ep"]), 0, -1)
                                     if pk["ep"] % k == 0 and k % tp == 0), None)
        if "decode_batch" not in overrides:      # the preset's tokens per GPU per step
            pk["decode_batch"] = tokens_per_gpu * pk["ep"]
        per = ServingPlan(**{**pk, "replicas": 1}).world_size
    if gpus % per:
        raise WorkloadError(f"preset {preset.name!r}: a replica takes {per} GPUs, which does not divide gpus {gpus}")
    pk.setdefault("replicas", gpus // per)
    if "request_rate_per_s" not in pk:
        one = synthesize_serving(preset.model, ServingPlan(**{**pk, "replicas": 1, "request_rate_per_s": 1.0}), **syn)
        cap = compute_capacity_per_replica(one.jobs[0].serving)
        pk["request_rate_per_s"] = float(f"{load * cap * pk['replicas']:.2g}")
    return synthesize_serving(preset.model, ServingPlan(**pk), **syn)


#: Keys of a request structure given for a trace (``fabric parse --serving``), beyond ServingSpec's.
_TRACE_KEYS = {"decode_steps_in_trace", "requests_in_trace", "prefill_min_bytes", "request_rate_per_s", "job"}


def attach_serving(workload: Workload, spec: dict, *, source: str = "--serving") -> Workload:
    """A workload whose inference job (read from a trace without ProfilerStep markers) gets the request structure
    ``spec`` the trace cannot tell: ``decode_steps_in_trace`` (token steps the traced window covers; required),
    ``requests_in_trace`` (prefills in it, default 1), ``prefill_min_bytes`` (ops of at least this size are the
    prefill's, counted per request; default: none, every op is a decode op), ``request_rate_per_s`` (required),
    ``job`` (which inference job; default the only one) and the :class:`~fabric.workload.model.ServingSpec`
    fields (``prompt_tokens``, ``output_tokens``, ``decode_batch``, ``replicas``, budgets, arrivals; ``prefill_s``
    and ``decode_step_s`` default to the trace's compute split over its prefills and token steps). Errors name the
    key and ``source``."""
    from dataclasses import fields

    def bad(key, msg):
        raise WorkloadError(f"{source}: '{key}': {msg}")

    if not isinstance(spec, dict):
        raise WorkloadError(f"{source}: expected an object of fields, got {type(spec).__name__}")
    spec_keys = {f.name for f in fields(ServingSpec)}
    unknown = sorted(set(spec) - spec_keys - _TRACE_KEYS)
    if unknown:
        raise WorkloadError(f"{source}: unknown key(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(spec_keys | _TRACE_KEYS))}")
    jobs = [j for j in workload.jobs if j.kind == "inference"]
    if "job" in spec:
        jobs = [j for j in jobs if j.name == spec["job"]]
        if not jobs:
            bad("job", f"no inference job named {spec['job']!r} in the workload")
    if not jobs:
        raise WorkloadError(f"{source}: the workload has no inference job (a trace without ProfilerStep markers "
                            "is read as one); a training trace has no requests")
    if len(jobs) > 1:
        bad("job", f"name the inference job: {', '.join(j.name for j in jobs)}")
    job = jobs[0]
    for key in ("decode_steps_in_trace", "request_rate_per_s"):
        if key not in spec:
            bad(key, "required: the trace cannot tell it")

    def num(key, default=None, *, integer=False, lo=0.0):
        v = spec.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo or \
                (integer and float(v) != int(v)):
            bad(key, f"expected {'a whole number' if integer else 'a number'} >= {lo:g}, got {v!r}")
        return int(v) if integer else float(v)

    steps = num("decode_steps_in_trace", integer=True, lo=1)
    reqs = num("requests_in_trace", 1, integer=True, lo=1)
    threshold = num("prefill_min_bytes", integer=True, lo=1)
    ops = []
    for op in job.ops:
        prefill = threshold is not None and op.bytes >= threshold
        ops.append(replace(op, count_per_step=op.count_per_step / (reqs if prefill else steps),
                           phase="prefill" if prefill else "decode"))
    prefill_s = num("prefill_s", 0.0)
    decode_step_s = num("decode_step_s")
    if decode_step_s is None:
        decode_step_s = max(0.0, job.compute_time_s - reqs * prefill_s) / steps
    kw = {k: spec[k] for k in spec_keys & set(spec) if k not in ("prefill_s", "decode_step_s")}
    kw.setdefault("replicas", 1)
    try:
        sp = ServingSpec(prefill_s=prefill_s, decode_step_s=decode_step_s, **{
            "prompt_tokens": 1, "output_tokens": steps + 1, "decode_batch": 1, **kw})
    except TypeError as err:
        raise WorkloadError(f"{source}: {err}") from err
    if sp.mode != "colocated":
        bad("mode", "a trace gives one replica's ops: only 'colocated' can be read from it")
    new = replace(job, ops=tuple(ops), serving=sp, request_rate_per_s=num("request_rate_per_s", lo=1e-9),
                  compute_time_s=prefill_s + (sp.output_tokens - 1) * decode_step_s,
                  notes=job.notes + (f"request structure from {source}: {steps} token step(s) and {reqs} request(s) "
                                     f"in the traced window; decode {decode_step_s:.4g} s of compute per token step",))
    try:
        out = workload.with_jobs([new if j is job else j for j in workload.jobs])
        return validate_workload(out)
    except WorkloadError as err:
        raise WorkloadError(f"{source}: {err}") from err
