"""Published training runs, each with its configuration and its published throughput, and fabric's figure for it
(issue 36): the compute of each plan's kernels (:func:`fabric.workload.compute_model.step_compute`, absolute: no MFU
is given) and the communication fabric's evaluator charges on a network like the run's. Nothing is fitted to these
figures: the compute model's constants come from GEMM and attention kernel measurements (``benchmarks/fit_gemm.py``),
the network's from the catalog. ``benchmarks/bench_compute_published.py`` prints the table; docs/plans.md holds it.

Sources (the configurations as each source states them; what a source leaves unstated is named per case). Runs from
before fused attention kernels (Megatron-LM 2021-2022) are timed with the scores written out
(``attention="materialized"``), Llama 3 with fused attention.

- Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models" (arXiv 2205.05198), Tables 3
  and 5: GPT models of 22B, 175B, 530B and 1T parameters on A100 80GB (Selene: DGX A100, 8 x 200G HDR per node),
  TP 8, no data parallelism, sequence 2,048, vocabulary 51,200; iteration times with full recomputation (no sequence
  parallelism) and with sequence parallelism and selective recomputation.
- Narayanan et al., SC'21 (arXiv 2104.04473), Table 1 (the Megatron-LM README's table of April 2021): GPT models of
  1.7B-1T on 32-3,072 A100, full recomputation, teraFLOP/s per GPU by the paper's count 96 B s l h^2 (1 + s / 6h +
  V / 16 l h). The split of the model-parallel size into TP and PP below 530B is not in that table (TP 8 once it
  exceeds 8, as the README says); micro-batch size 1 and no interleaving are assumed.
- The best split of one model (Narayanan et al., section 5.4.1 and Figure 13): a 162.2B GPT (32 layers, hidden
  20,480, 128 heads) on 64 A100 at batch 32 and 128, split as (PP, TP) = (2, 32), (4, 16), (8, 8), (16, 4), (32, 2):
  throughput peaks at TP 8 x PP 8, tensor parallelism up to the 8 GPUs of a server and pipelining beyond
  (the paper's takeaway #1); :func:`split_study` ranks the same splits.
- Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783), Table 4: Llama 3 405B on 8,192 and 16,384 H100, BF16 MFU
  (126 layers, one fewer on the first and last stages: the slowest stage holds 8 layers, as 128 layers on 16
  stages do); micro-batch size and interleaving are not stated (1 sequence, 4 chunks here); no activation
  checkpointing at 8K tokens (the paper's text), with fused attention: fabric's ``selective`` (flash attention's
  own recomputation of the scores, nothing else); the network: Meta's RoCE AI zone (preset ``meta-roce-zone``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fabric.catalog import default_catalog
from fabric.evaluate import evaluate
from fabric.reference.presets import preset_design
from fabric.workload.compute_model import roofline_for, step_compute
from fabric.workload.synth import ModelSpec, ParallelPlan, synthesize, training_flops_per_step

__all__ = ["PublishedRun", "published_runs", "reproduce", "SPLIT_STUDY", "split_study"]

@dataclass(frozen=True)
class PublishedRun:
    name: str
    model: ModelSpec
    plan: ParallelPlan
    gpu: str
    published: float            # the source's figure
    unit: str                   # "s" (iteration time) or "TFLOP/s" (per GPU) or "MFU"
    attention: str = "flash"    # the attention kernels the run used (compute_model.step_compute)
    flops: float = 0.0          # the source's FLOP count per step (for TFLOP/s and MFU)
    source: str = ""


def _gpt(name: str, hidden: int, layers: int, heads: int, vocab: int = 51200, seq: int = 2048) -> ModelSpec:
    params = 12 * layers * hidden * hidden + vocab * hidden
    return ModelSpec(name, parameters=float(params), layers=layers, hidden=hidden, ffn_hidden=4 * hidden, heads=heads,
                     seq_len=seq, vocab=vocab, gated_mlp=False)


def _narayanan_flops(m: ModelSpec, batch: int) -> float:
    s, h, L, V = m.seq_len, m.hidden, m.layers, m.vocab
    return 96.0 * batch * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def published_runs() -> list[PublishedRun]:
    """Every published run of the module docstring."""
    out = []
    # Korthikanti et al., Tables 3 and 5 (A100, TP 8, DP 1)
    korth = [("22B", _gpt("gpt-22b", 6144, 48, 64), 1, 8, 4, 4, 1, 1.42, 1.10),
             ("175B", _gpt("gpt-175b", 12288, 96, 96), 8, 64, 64, 1, 3, 18.13, 13.75),
             ("530B", _gpt("gpt-530b", 20480, 105, 128), 35, 280, 280, 1, 3, 49.05, 37.83),
             ("1T", _gpt("gpt-1t", 25600, 128, 160), 64, 512, 512, 1, 1, 94.42, 71.49)]
    for name, m, pp, gpus, batch, mb, v, t_full, t_sel in korth:
        base = ParallelPlan(dp=1, tp=8, pp=pp, micro_batch=mb, global_batch=batch, virtual_stages=v, zero_stage=0)
        out.append(PublishedRun(f"Korthikanti {name}, full recompute", m, replace(base, recompute="full"),
                        "a100-sxm-80gb", t_full, "s", attention="materialized", source="arXiv 2205.05198 Table 5"))
        out.append(PublishedRun(f"Korthikanti {name}, SP + selective", m,
                        replace(base, sequence_parallel=True), "a100-sxm-80gb", t_sel, "s",
                        attention="materialized", source="arXiv 2205.05198 Table 5"))
    # Narayanan et al., Table 1 (A100, full recomputation; TP x PP as the README's model-parallel size)
    nar = [("1.7B", 2304, 24, 24, 1, 1, 32, 512, 137), ("3.6B", 3072, 30, 32, 2, 1, 64, 512, 138),
           ("7.5B", 4096, 36, 32, 4, 1, 128, 512, 142), ("18B", 6144, 40, 48, 8, 1, 256, 1024, 135),
           ("39B", 8192, 48, 64, 8, 2, 512, 1536, 138), ("76B", 10240, 60, 80, 8, 4, 1024, 1792, 140),
           ("145B", 12288, 80, 96, 8, 8, 1536, 2304, 148), ("310B", 16384, 96, 128, 8, 16, 1920, 2160, 155),
           ("530B", 20480, 105, 128, 8, 35, 2520, 2520, 163), ("1T", 25600, 128, 160, 8, 64, 3072, 3072, 163)]
    for name, h, L, heads, tp, pp, gpus, batch, tflops in nar:
        m = _gpt(f"gpt-{name.lower()}", h, L, heads)
        dp = gpus // (tp * pp)
        plan = ParallelPlan(dp=dp, tp=tp, pp=pp, micro_batch=1, global_batch=batch, zero_stage=0, recompute="full")
        out.append(PublishedRun(f"Narayanan {name}", m, plan, "a100-sxm-80gb", tflops, "TFLOP/s",
                        flops=_narayanan_flops(m, batch), attention="materialized", source="arXiv 2104.04473 Table 1"))
    # Llama 3 405B, Table 4 (H100): 128 layers' time on 16 stages (the slowest stage's 8 layers), MFU of 126
    l405 = ModelSpec("llama3-405b", parameters=405e9, layers=128, hidden=16384, ffn_hidden=53248, heads=128,
                     kv_heads=8, seq_len=8192, vocab=128256)
    real = ModelSpec("llama3-405b", parameters=405e9, layers=126, hidden=16384, ffn_hidden=53248, heads=128,
                     kv_heads=8, seq_len=8192, vocab=128256)
    for gpus, dp, per_dp, mfu in ((8192, 64, 32, 0.43), (16384, 128, 16, 0.41)):
        plan = ParallelPlan(dp=dp, tp=8, pp=16, micro_batch=1, global_batch=dp * per_dp, virtual_stages=4,
                            sequence_parallel=True, zero_stage=1, recompute="selective")
        out.append(PublishedRun(f"Llama 3 405B, {gpus:,} GPUs", l405, plan, "h100-sxm", mfu, "MFU",
                        flops=training_flops_per_step(real, plan), source="arXiv 2407.21783 Table 4"))
    return out


def design_for(case: PublishedRun):
    """A network like the run's: a DGX A100 SuperPOD-style fabric (20-node scalable units of HDR) for A100 runs,
    Meta's RoCE AI zone for Llama 3."""
    gpus = case.plan.world_size
    if case.gpu.startswith("a100"):
        return preset_design("dgx-h100-superpod", gpus).replace(
            name=f"DGX A100 SuperPOD-style ({gpus:,} GPUs)", gpu_model="a100-sxm-80gb", nic_model="nic-cx6-200",
            switch_model="ib-hdr-40x200", nodes_per_su=20, reserved_node_slots=0)
    return preset_design("meta-roce-zone", gpus)


def reproduce(case: PublishedRun, samples: int = 64) -> dict:
    """fabric's figure for ``case`` in the source's unit (``got``), its error against the published one (``err``),
    the compute and the evaluated mean step (seconds)."""
    roof = roofline_for(default_catalog().gpu(case.gpu))
    comp = step_compute(case.model, case.plan, roof, attention=case.attention)
    wl = synthesize(case.model, case.plan, gpu_flops=roof.peak_flops, compute_time_s=comp.step_s,
                    compute_cv=0.0)
    ev = evaluate(design_for(case), wl, samples=samples)
    step = float(ev.step_time_s["mean"])
    gpus = case.plan.world_size
    if case.unit == "s":
        got = step
    elif case.unit == "TFLOP/s":
        got = case.flops / (gpus * step) / 1e12
    else:
        got = case.flops / (gpus * roof.peak_flops * step)
    return {"compute_s": comp.step_s, "step_s": step, "got": got, "err": got / case.published - 1.0}


#: Narayanan et al.'s Figure 13: the model, GPUs, batch sizes and (PP, TP) splits; the published best is (8, 8).
SPLIT_STUDY = {"model": ("gpt-162b", 20480, 32, 128), "gpus": 64, "batches": (32, 128),
               "splits": ((2, 32), (4, 16), (8, 8), (16, 4), (32, 2)), "published_best": (8, 8)}


def split_study(samples: int = 32) -> dict:
    """fabric's mean step time of each (PP, TP) split of :data:`SPLIT_STUDY` per batch size: ``{batch: {(pp, tp):
    seconds}}`` (full recomputation, micro-batches of 1, materialized attention, as the 2021 runs)."""
    name, hidden, layers, heads = SPLIT_STUDY["model"]
    model = _gpt(name, hidden, layers, heads)
    out = {}
    for batch in SPLIT_STUDY["batches"]:
        row = {}
        for pp, tp in SPLIT_STUDY["splits"]:
            plan = ParallelPlan(dp=SPLIT_STUDY["gpus"] // (pp * tp), tp=tp, pp=pp, micro_batch=1, global_batch=batch,
                                zero_stage=0, recompute="full")
            row[(pp, tp)] = reproduce(PublishedRun(f"split {pp}x{tp}", model, plan, "a100-sxm-80gb", 1.0, "s",
                                                   attention="materialized"), samples)["step_s"]
        out[batch] = row
    return out
