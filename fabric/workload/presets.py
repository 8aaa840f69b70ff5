"""Well-known workload shapes, each with its sources and a default parallelism plan for a GPU count.

>>> [p.name for p in list_presets()]
['llama3-70b', 'mixtral-8x7b', 'dlrm-dcnv2', 'llama3-70b-serving', 'llama3-70b-online', 'llama3-70b-disagg', 'deepseek-v3-ep-decode']
>>> wl = preset_workload("llama3-70b", gpus=256)
>>> wl.jobs[0].world_size
256

``preset_workload(name, gpus=..., **overrides)`` accepts overrides of the model (``layers=40``), of the plan
(``tp=4``, ``pp=2``, ``zero_stage=3``, ``global_batch=1024`` ...) and of the synthesis (``gpu_flops``, ``mfu``,
``checkpoint_period_s``); when tp/pp/cp change without ``dp``, dp is recomputed as gpus / (tp x pp x cp) and the
preset's global batch is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Callable

from fabric.errors import WorkloadError
from fabric.workload.model import Workload
from fabric.workload.synth import (
    InferencePlan, ModelSpec, ParallelPlan, RecSpec, checkpoint_job, replace_known, synthesize,
    synthesize_dlrm, synthesize_inference,
)

__all__ = ["Preset", "list_presets", "get_preset", "preset_workload", "preset_plan", "preset_mfu",
           "training_models", "H100_BF16_FLOPS", "H100_HBM_BYTES_PER_S"]

#: Dense BF16 peak of an H100 SXM (NVIDIA H100 datasheet: 1,979 TFLOPS with sparsity, half without).
H100_BF16_FLOPS = 989e12
#: HBM3 bandwidth of an H100 SXM (NVIDIA H100 datasheet: 3.35 TB/s).
H100_HBM_BYTES_PER_S = 3.35e12


@dataclass(frozen=True)
class Preset:
    """A named workload shape: what it is, where its numbers come from, and how it is split for ``gpus`` GPUs."""

    name: str
    kind: str                       # "training", "inference", "serving" (request-level latency) or "recommendation"
    description: str
    sources: tuple[str, ...]
    default_gpus: int
    gpu_multiple: int               # gpus must be a multiple of this for the default plan
    model: ModelSpec | RecSpec
    build: Callable[..., Workload]

    def workload(self, gpus: int | None = None, **overrides) -> Workload:
        """The preset's workload for ``gpus`` GPUs (default ``default_gpus``) with ``overrides`` applied."""
        gpus = self.default_gpus if gpus is None else gpus
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise WorkloadError(f"gpus: must be a whole number >= 1, got {gpus!r}")
        if gpus % self.gpu_multiple:
            raise WorkloadError(f"gpus: preset {self.name!r} needs a multiple of {self.gpu_multiple} GPUs for its "
                                f"default plan, got {gpus}; override the plan (e.g. tp=..., pp=...) or pick "
                                f"{self.gpu_multiple * max(1, round(gpus / self.gpu_multiple))}")
        return self.build(self, gpus, dict(overrides))


# ---------------------------------------------------------------- helpers

_MODEL_FIELDS_T = {f.name for f in fields(ModelSpec)}
_PLAN_FIELDS = {f.name for f in fields(ParallelPlan)}
_IPLAN_FIELDS = {f.name for f in fields(InferencePlan)}
_REC_FIELDS = {f.name for f in fields(RecSpec)}


def _split(overrides: dict, groups: dict[str, set[str]], preset: str) -> dict[str, dict]:
    out = {k: {} for k in groups}
    for key, val in overrides.items():
        for gname, names in groups.items():
            if key in names:
                out[gname][key] = val
                break
        else:
            allowed = sorted(set().union(*groups.values()))
            raise WorkloadError(f"preset {preset!r}: unknown override {key!r}; allowed: {', '.join(allowed)}")
    return out


#: the model-parallel degrees a preset may raise to keep its global batch at large sizes (issue 39): pipeline
#: stages of at least this many layers, context parallelism up to this degree
MIN_LAYERS_PER_STAGE = 5
MAX_BATCH_CP = 8


def _keep_batch(gpus: int, kw: dict, over: dict, target_sequences: int, layers: int, seq_len: int) -> str | None:
    """When the preset's plan would need more data-parallel replicas than its global batch has sequences, raise
    context and pipeline parallelism so the batch stays the stated one (or grows the least it can), choosing the
    smallest pipeline bubble and then the least model parallelism. Changes ``kw`` in place and returns the sentence
    that says what happened (None when the preset's plan holds as it is)."""
    mb = kw.get("micro_batch", 1)
    tp, pp, cp, ep = kw.get("tp", 1), kw.get("pp", 1), kw.get("cp", 1), kw.get("ep", 1)
    if any(k in over for k in ("dp", "pp", "cp", "global_batch", "grad_accum")) or gpus % (tp * pp * cp):
        return None
    dp = gpus // (tp * pp * cp)
    if dp * mb <= target_sequences:
        return None
    options = []
    for p in range(pp, max(pp, layers // MIN_LAYERS_PER_STAGE) + 1):
        if layers % p:
            continue
        for c in sorted({cp, 2 * cp, 4 * cp, 8 * cp}):
            if c > max(cp, MAX_BATCH_CP) or seq_len % (2 * c) or gpus % (tp * p * c):
                continue
            d = gpus // (tp * p * c)
            if d % ep:
                continue
            growth = max(1.0, d * mb / target_sequences)
            micro = max(1, math.ceil(target_sequences / (d * mb)))
            options.append((growth, (p - 1) / micro, p * c, c, p, d))
    growth, _, _, c, p, d = min(options)
    tokens = target_sequences * seq_len
    kw.update(pp=p, cp=c)
    plan = f"TP {tp} x PP {p}" + (f" x CP {c}" if c > 1 else "") + f" (DP {d:,})"
    was = f"TP {tp} x PP {pp}" + (f" x CP {cp}" if cp > 1 else "")
    if growth == 1.0:
        return (f"global batch kept at {target_sequences:,} sequences ({tokens / 1e6:.3g} M tokens): at {gpus:,} GPUs "
                f"the preset's {was} would need {dp:,} data-parallel replicas, a {dp * mb / target_sequences:.3g}x "
                f"larger batch, so the plan uses {plan}")
    return (f"global batch {d * mb:,} sequences ({d * mb * seq_len / 1e6:.3g} M tokens), {growth:.3g}x the preset's "
            f"{target_sequences:,} ({tokens / 1e6:.3g} M tokens): at {gpus:,} GPUs no plan with pipeline stages of at "
            f"least {MIN_LAYERS_PER_STAGE} layers and CP up to {max(cp, MAX_BATCH_CP)} has fewer data-parallel "
            f"replicas than {plan}; each step does {growth:.3g}x the work of the stated batch")


def _training_plan(gpus: int, base: dict, over: dict, target_sequences: int, preset: str,
                   layers: int, seq_len: int = 0) -> tuple[ParallelPlan, str | None]:
    """Default degrees in ``base`` with ``over`` applied; dp follows from gpus unless given; the global batch is
    kept near ``target_sequences`` unless global_batch or grad_accum is given, raising pipeline and context
    parallelism where the GPUs would otherwise outnumber it (:func:`_keep_batch`). Returns the plan and the
    sentence saying what the batch rule did (None when the preset's plan holds as it is)."""
    kw = {**base, **over}
    batch_note = _keep_batch(gpus, kw, over, target_sequences, layers, seq_len) if seq_len else None
    if "dp" not in over:
        denom = kw.get("tp", 1) * kw.get("pp", 1) * kw.get("cp", 1)
        if gpus % denom:
            raise WorkloadError(f"preset {preset!r}: tp x pp x cp = {denom} does not divide gpus {gpus}")
        kw["dp"] = gpus // denom
    if "global_batch" not in over and "grad_accum" not in over:
        kw.pop("global_batch", None)
        per = kw.get("micro_batch", 1) * kw["dp"]
        kw["grad_accum"] = max(1, math.ceil(target_sequences / per))
    if "virtual_stages" not in over and (kw.get("pp", 1) == 1
                                         or layers % (kw.get("pp", 1) * kw.get("virtual_stages", 1))):
        kw["virtual_stages"] = 1
    return ParallelPlan(**kw), batch_note


def _build_transformer(preset: Preset, gpus: int, overrides: dict, *, base_plan: dict, target_sequences: int,
                       mfu: float) -> Workload:
    parts = _split(overrides, {"model": _MODEL_FIELDS_T, "plan": _PLAN_FIELDS,
                               "synth": {"gpu_flops", "mfu", "attention_flops", "compute_cv",
                                         "checkpoint_period_s", "name"}}, preset.name)
    model = replace_known(preset.model, parts["model"], "model")
    plan, batch_note = _training_plan(gpus, base_plan, parts["plan"], target_sequences, preset.name, model.layers,
                                      model.seq_len)
    syn = {"gpu_flops": H100_BF16_FLOPS, "mfu": mfu, "name": preset.name, **parts["synth"]}
    wl = synthesize(model, plan, gpus=gpus, **syn)
    if batch_note:
        jobs = [replace(j, notes=(batch_note,) + j.notes) if j.kind == "training" else j for j in wl.jobs]
        wl = replace(wl.with_jobs(jobs), facts=wl.facts + (("batch rule", batch_note),),
                     warnings=wl.warnings + ((batch_note,) if "x the preset's" in batch_note else ()))
    return _with_sources(wl, preset)


def _with_sources(wl: Workload, preset: Preset) -> Workload:
    facts = (("preset", preset.name),) + tuple(("source", s) for s in preset.sources) + wl.facts
    # a preset's compute is for an H100 SXM (its sources), unless gpu_flops is overridden
    jobs = [replace(j, compute_gpu="h100-sxm") if j.compute_gpu is None and j.compute_gpu_tflops is not None
            and j.compute_gpu_tflops * 1e12 == H100_BF16_FLOPS else j for j in wl.jobs]
    return replace(wl.with_jobs(jobs), facts=facts, sources=(f"preset:{preset.name}",))


# ---------------------------------------------------------------- the presets

LLAMA3_70B = ModelSpec(
    name="llama3-70b", parameters=70.6e9, layers=80, hidden=8192, ffn_hidden=28672, heads=64, kv_heads=8,
    seq_len=8192, vocab=128256, dtype_bytes=2)

MIXTRAL_8X7B = ModelSpec(
    name="mixtral-8x7b", parameters=46.7e9, layers=32, hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8,
    seq_len=4096, vocab=32000, dtype_bytes=2, experts=8, top_k=2)

#: DLRM-DCNv2-like: 26 sparse features of dim 128 (MLPerf Training recommendation, Criteo 1TB multi-hot). Dense
#: parameters estimated from the reference layer sizes (bottom MLP 13-512-256-128, 3 low-rank-512 cross layers on the
#: 3,456-wide interaction, top MLP 1024-1024-512-256-1): ~16 M. Embedding rows: ~2e8 (estimate; tables capped at
#: 40 M rows each).
DLRM_DCNV2 = RecSpec(name="dlrm-dcnv2", dense_parameters=16e6, embedding_tables=26, embedding_dim=128,
                     embedding_rows=2.0e8, dtype_bytes=4, grad_dtype_bytes=4)


def _llama_base(gpus: int) -> tuple[dict, int, float]:
    """Default plan, target global batch (sequences) and MFU of the Llama-3-70B-like preset at ``gpus``."""
    pp = 4 if gpus % 32 == 0 else 2 if gpus % 16 == 0 else 1
    base = dict(tp=8, pp=pp, zero_stage=1, sequence_parallel=True, micro_batch=1, virtual_stages=5)
    return base, 512, 0.40


def _mixtral_base(gpus: int) -> tuple[dict, int, float]:
    """Default plan, target global batch (sequences) and MFU of the Mixtral-8x7B-like preset."""
    return dict(tp=2, pp=1, ep=8, zero_stage=1, sequence_parallel=True, micro_batch=1), 1024, 0.35


#: Transformer training presets: name -> defaults at a GPU count (see :func:`preset_plan`).
_TRANSFORMER_BASES = {"llama3-70b": _llama_base, "mixtral-8x7b": _mixtral_base}


def _llama_build(preset, gpus, overrides):
    base, target, mfu = _llama_base(gpus)
    return _build_transformer(preset, gpus, overrides, base_plan=base, target_sequences=target, mfu=mfu)


def _mixtral_build(preset, gpus, overrides):
    base, target, mfu = _mixtral_base(gpus)
    return _build_transformer(preset, gpus, overrides, base_plan=base, target_sequences=target, mfu=mfu)


def _dlrm_build(preset, gpus, overrides):
    syn_keys = {"global_batch", "gpu_flops", "mfu", "bucket_bytes", "dp_overlap", "gpus_per_node", "compute_cv",
                "name", "checkpoint_period_s"}
    parts = _split(overrides, {"model": _REC_FIELDS, "synth": syn_keys}, preset.name)
    model = replace_known(preset.model, parts["model"], "model")
    syn = {"global_batch": 65536, "gpu_flops": H100_BF16_FLOPS, "mfu": 0.1, "name": preset.name, **parts["synth"]}
    period = syn.pop("checkpoint_period_s", None)
    wl = synthesize_dlrm(model, gpus=gpus, **syn)
    if period is not None:
        wl = wl.with_jobs(wl.jobs + (checkpoint_job(model, world_size=gpus, period_s=period,
                                                    name=f"{wl.jobs[0].name}-checkpoint"),))
    return _with_sources(wl, preset)


def _serving_build(preset, gpus, overrides):
    syn_keys = {"gpu_flops", "mfu", "hbm_bytes_per_s", "name"}
    parts = _split(overrides, {"model": _MODEL_FIELDS_T, "plan": _IPLAN_FIELDS, "synth": syn_keys}, preset.name)
    model = replace_known(preset.model, parts["model"], "model")
    pk = {"tp": 8, "pp": 1, "prompt_tokens": 1024, "output_tokens": 256, "decode_batch": 64, **parts["plan"]}
    per_replica = pk["tp"] * pk["pp"]
    if gpus % per_replica:
        raise WorkloadError(f"preset {preset.name!r}: tp x pp = {per_replica} does not divide gpus {gpus}")
    pk.setdefault("replicas", gpus // per_replica)
    pk.setdefault("request_rate_per_s", 1.0 * pk["replicas"])
    # MLPerf Inference llama2-70b server scenario: time to first token <= 2 s, time per output token <= 200 ms
    pk.setdefault("latency_slo_s", 2.0 + 0.2 * pk["output_tokens"])
    plan = InferencePlan(**pk)
    syn = {"gpu_flops": H100_BF16_FLOPS, "mfu": 0.4, "hbm_bytes_per_s": H100_HBM_BYTES_PER_S,
           "name": preset.name, **parts["synth"]}
    return _with_sources(synthesize_inference(model, plan, **syn), preset)


def _online_build(defaults, load=0.5):
    def build(preset, gpus, overrides):
        from fabric.workload.serving import serving_preset_build

        return _with_sources(serving_preset_build(preset, gpus, overrides, plan_defaults=defaults, load=load,
                                                  gpu_flops=H100_BF16_FLOPS, hbm_bytes_per_s=H100_HBM_BYTES_PER_S),
                             preset)
    return build


def _serving_models():
    from fabric.workload.serving import DEEPSEEK_V3, LLAMA3_70B_SERVING

    return LLAMA3_70B_SERVING, DEEPSEEK_V3


_LLAMA_SERVE, _DEEPSEEK = _serving_models()
_MLPERF_SLO = "latency budgets: MLPerf Inference llama2-70b server scenario (TTFT 2 s, TPOT 200 ms)"

_PRESETS = (
    Preset(
        name="llama3-70b", kind="training",
        description="Llama-3-70B-like dense decoder, 8K context, TP 8 (sequence parallel) x PP 4 (interleaved, 5 "
                    "chunks) x DP, distributed optimizer (ZeRO-1), ~4M-token global batch, H100 at 40 % MFU",
        sources=("shape: Meta Llama 3 70B config (80 layers, hidden 8192, ffn 28672, 64 heads, 8 KV heads, "
                 "vocab 128256, 8192 context); 70.6e9 parameters",
                 "parallelism and MFU: 'The Llama 3 Herd of Models' (Meta, 2024), section 3.3: TP 8, PP, "
                 "interleaved schedule, 38-43 % BF16 MFU on H100",
                 "GPU: NVIDIA H100 SXM datasheet, 989 TFLOPS dense BF16"),
        default_gpus=1024, gpu_multiple=8, model=LLAMA3_70B, build=_llama_build),
    Preset(
        name="mixtral-8x7b", kind="training",
        description="Mixtral-8x7B-like mixture of experts (8 experts, top-2), 4K context, TP 2 (sequence "
                    "parallel) x EP 8 x DP, ZeRO-1, ~4M-token global batch, H100 at 35 % MFU",
        sources=("shape: Mistral AI, 'Mixtral of Experts' (arXiv 2401.04088) and its config: 32 layers, hidden "
                 "4096, ffn 14336, 32 heads, 8 KV heads, 8 experts, top-2; 46.7e9 parameters, 12.9e9 active",
                 "parallelism: a Megatron-Core MoE layout (EP within DP); MFU 35 % is an assumption",
                 "GPU: NVIDIA H100 SXM datasheet, 989 TFLOPS dense BF16"),
        default_gpus=256, gpu_multiple=16, model=MIXTRAL_8X7B, build=_mixtral_build),
    Preset(
        name="dlrm-dcnv2", kind="recommendation",
        description="DLRM-DCNv2-like recommender: 26 embedding tables of dim 128 sharded table-wise (all-to-all), "
                    "~16M replicated MLP parameters (all-reduce), global batch 65,536, H100 at 10 % MFU (small "
                    "MLPs; an assumption)",
        sources=("shape: MLPerf Training recommendation benchmark (DLRM-DCNv2 on Criteo 1TB multi-hot): 26 sparse "
                 "features, embedding dim 128, global batch 65,536; dense parameter count estimated from the "
                 "reference layer sizes",
                 "communication pattern: Naumov et al., 'Deep Learning Recommendation Model' (arXiv 1906.00091)"),
        default_gpus=256, gpu_multiple=1, model=DLRM_DCNV2, build=_dlrm_build),
    Preset(
        name="llama3-70b-serving", kind="inference",
        description="Llama-3-70B-like inference service: replicas of TP 8, 1,024-token prompts, 256 output tokens, "
                    "decode batch 64, 1 request/s per replica, latency SLO 2 s + 256 x 0.2 s = 53.2 s",
        sources=("shape: Meta Llama 3 70B config",
                 "latency SLO: MLPerf Inference llama2-70b server scenario (TTFT 2 s, TPOT 200 ms)",
                 "GPU: NVIDIA H100 SXM datasheet (989 TFLOPS BF16, 3.35 TB/s HBM3)"),
        default_gpus=256, gpu_multiple=8, model=LLAMA3_70B, build=_serving_build),
    Preset(
        name="llama3-70b-online", kind="serving",
        description="Llama-3-70B-like online service with request-level latency: colocated replicas of TP 8 inside "
                    "the node, 1,024-token prompts, 256 output tokens, decode batch 64, Poisson arrivals at half of "
                    "what the replicas sustain on compute, TTFT 2 s / TPOT 200 ms",
        sources=("shape: Meta Llama 3 70B config (80 layers, hidden 8192, 8 KV heads, head dim 128)", _MLPERF_SLO,
                 "GPU: NVIDIA H100 SXM datasheet (989 TFLOPS BF16, 3.35 TB/s HBM3)"),
        default_gpus=256, gpu_multiple=8, model=_LLAMA_SERVE,
        build=_online_build({"tp": 8, "prompt_tokens": 1024, "output_tokens": 256, "decode_batch": 64,
                             "ttft_slo_s": 2.0, "tpot_slo_s": 0.2})),
    Preset(
        name="llama3-70b-disagg", kind="serving",
        description="Llama-3-70B-like service with disaggregated prefill and decode (TP 8 each): every request's "
                    "KV cache, 2 x 80 layers x 8 KV heads x 128 x 1,024 tokens x 2 bytes = 320 MiB, crosses the "
                    "scale-out network from its prefill node to its decode node; TTFT 2 s / TPOT 200 ms",
        sources=("shape: Meta Llama 3 70B config (80 layers, 8 KV heads, head dim 128)",
                 "disaggregation: Zhong et al., 'DistServe' (OSDI 2024); Patel et al., 'Splitwise' (ISCA 2024)",
                 _MLPERF_SLO, "GPU: NVIDIA H100 SXM datasheet (989 TFLOPS BF16, 3.35 TB/s HBM3)"),
        default_gpus=256, gpu_multiple=16, model=_LLAMA_SERVE,
        build=_online_build({"tp": 8, "mode": "disaggregated", "prompt_tokens": 1024, "output_tokens": 256,
                             "decode_batch": 64, "ttft_slo_s": 2.0, "tpot_slo_s": 0.2})),
    Preset(
        name="deepseek-v3-ep-decode", kind="serving",
        description="DeepSeek-V3-like MoE service, prefill and decode disaggregated: decode with expert "
                    "parallelism over 320 GPUs (40 nodes; attention TP 4, 128 tokens per GPU per step), a "
                    "dispatch (FP8) and a combine (BF16) all-to-all per MoE layer per token step; prefill on 10 "
                    "EP 32 instances (4 nodes each); smaller clusters spread EP over all decode GPUs; a quarter of "
                    "what the service sustains on compute (one prompt per prefill at a time: its all-to-alls "
                    "take longer than its compute); TTFT 2 s / TPOT 100 ms (assumption)",
        sources=("shape: DeepSeek-V3 technical report (arXiv 2412.19437) and config.json: 61 layers (58 MoE), "
                 "hidden 7168, 256 routed + 1 shared expert, top-8, MLA KV cache 512 + 64 per token per layer",
                 "deployment: DeepSeek-V3 technical report section 3.4.2 (prefill: 4 nodes, 32 GPUs, EP32; decode: "
                 "40 nodes, 320 GPUs, attention TP4 + SP with DP80, MoE EP320; FP8 dispatch, BF16 combine)",
                 "TPOT budget 100 ms: an assumption (2 x the ~20 tokens/s per user DeepSeek reports)",
                 "GPU: NVIDIA H100 SXM datasheet (989 TFLOPS BF16, 3.35 TB/s HBM3)"),
        default_gpus=640, gpu_multiple=16, model=_DEEPSEEK,
        build=_online_build({"tp": 4, "ep": 320, "prefill_ep": 32, "mode": "disaggregated", "prompt_tokens": 1024,
                             "output_tokens": 256, "decode_batch": 128 * 320, "ttft_slo_s": 2.0,
                             "tpot_slo_s": 0.1}, load=0.25)),
)


def list_presets() -> list[Preset]:
    """Every preset, in a fixed order."""
    return list(_PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name``; WorkloadError lists the names when it is unknown."""
    for p in _PRESETS:
        if p.name == name:
            return p
    raise WorkloadError(f"unknown preset {name!r}; choose one of {', '.join(p.name for p in _PRESETS)}")


def preset_plan(name: str, gpus: int, **overrides) -> tuple[ModelSpec, ParallelPlan]:
    """The model and the parallelism plan a transformer training preset uses at ``gpus`` GPUs with ``overrides``
    (the same rules as :func:`preset_workload`); WorkloadError for other presets."""
    preset = get_preset(name)
    if name not in _TRANSFORMER_BASES:
        raise WorkloadError(f"preset {name!r} is not a transformer training plan; plans exist for "
                            f"{', '.join(_TRANSFORMER_BASES)}")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise WorkloadError(f"gpus: must be a whole number >= 1, got {gpus!r}")
    parts = _split(overrides, {"model": _MODEL_FIELDS_T, "plan": _PLAN_FIELDS,
                               "synth": {"gpu_flops", "mfu", "attention_flops", "compute_cv",
                                         "checkpoint_period_s", "name"}}, name)
    model = replace_known(preset.model, parts["model"], "model")
    base, target, _ = _TRANSFORMER_BASES[name](gpus)
    return model, _training_plan(gpus, base, parts["plan"], target, name, model.layers, model.seq_len)[0]


def preset_mfu(name: str, gpus: int) -> float:
    """The MFU a transformer training preset assumes at ``gpus`` GPUs (its sources)."""
    if name not in _TRANSFORMER_BASES:
        raise WorkloadError(f"preset {name!r} is not a transformer training plan; plans exist for "
                            f"{', '.join(_TRANSFORMER_BASES)}")
    return _TRANSFORMER_BASES[name](gpus)[2]


def training_models() -> dict[str, ModelSpec]:
    """The model shapes of the transformer training presets by name (what a workload's model is recognised as)."""
    return {name: get_preset(name).model for name in _TRANSFORMER_BASES}


def preset_workload(name: str, gpus: int | None = None, **overrides) -> Workload:
    """The workload of preset ``name`` on ``gpus`` GPUs with ``overrides`` (see the module docstring)."""
    return get_preset(name).workload(gpus, **overrides)
