"""Strong scaling of MLPerf Training v3.0's GPT-3 175B on H100 (issue 36, item 5): the compute of each count's plan
from its kernels (fabric.workload.compute_model) and the network from fabric's evaluator, against the published
time-to-train scaling.

Published (mlcommons/training_results_v3.0, NVIDIA+CoreWeave HGX H100 runs, minutes from MLLOG run_start/run_stop):
768 GPUs 45.61 / 45.38 / 45.61, 1,536 GPUs 23.54 / 25.53 / 23.61, 3,584 GPUs 10.93 / 11.02 / 10.94; efficiency
against 768 GPUs (time x GPUs) 96.6 % at 1,536 and 89.3 % at 3,584. The submissions' plan (their config files):
TP 4, PP 8, 12 interleaved chunks, micro-batch 1, global batch 3,072 at 768 and 1,536 GPUs and 2,688 at 3,584 (24
micro-batches per replica), sequence 2,048, sequence parallelism, distributed optimizer, no activation checkpointing
(fabric's ``selective``: fused attention's own recomputation), FP8 GEMMs (Transformer Engine) with attention in
BF16. fabric's efficiency is per sample: (global batch / step / GPUs) against the 768-GPU run's, which is the
time-to-train ratio when the runs train the same samples.

FP8 here: the GEMMs at twice the BF16 peak (H100 SXM: 1,979 dense FP8 TFLOP/s, its datasheet) and the best
published FP8 matmul rate over it (1,402.6 of 1,979 TFLOP/s, stas00/ml-engineering's "maximum achievable matmul
FLOPS"), the BF16 curve's shape; attention at its BF16 rate. The network: the DGX H100 SuperPOD-style preset at each
count. No parameter is fitted to the published figures; the tensor-parallel overlap is the synthesizer's default
(0) and the result is printed for 0.5 and 0.9 too, to show it does not move the efficiency.

`fabric scale --compute kernels --global-batch 3072,3072,2688 --set gemm_precision=fp8 ...` runs the same study
(docs/evaluator.md, "Strong scaling"); this script shows the FP8 roofline and the overlap's (lack of) effect.

Run: python benchmarks/bench_mlperf_scaling.py [--samples 64]
"""

from __future__ import annotations

import argparse
from fabric.catalog import default_catalog
from fabric.evaluate import evaluate
from fabric.reference.presets import preset_design
from fabric.workload.compute_model import roofline_for, step_compute
from fabric.workload.synth import ModelSpec, ParallelPlan, synthesize

PUBLISHED = {1536: 0.966, 3584: 0.893}
RUNS = ((768, 3072), (1536, 3072), (3584, 2688))
GPT3 = ModelSpec("gpt3-175b", parameters=175e9, layers=96, hidden=12288, ffn_hidden=49152, heads=96, seq_len=2048,
                 vocab=51200, gated_mlp=False)


def efficiencies(samples: int, tp_overlap: float = 0.0) -> dict:
    bf16 = roofline_for(default_catalog().gpu("h100-sxm"))
    per_gpu = {}
    for gpus, gbs in RUNS:
        plan = ParallelPlan(dp=gpus // 32, tp=4, pp=8, micro_batch=1, global_batch=gbs, virtual_stages=12,
                            sequence_parallel=True, zero_stage=1, recompute="selective", tp_overlap=tp_overlap,
                            gemm_precision="fp8")
        comp = step_compute(GPT3, plan, bf16)
        wl = synthesize(GPT3, plan, gpu_flops=bf16.peak_flops, compute_time_s=comp.step_s, compute_cv=0.0)
        step = float(evaluate(preset_design("dgx-h100-superpod", gpus), wl, samples=samples).step_time_s["mean"])
        per_gpu[gpus] = (gbs / step / gpus, step, comp.step_s)
    base = per_gpu[768][0]
    return {g: (v[0] / base, v[1], v[2]) for g, v in per_gpu.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=64)
    args = ap.parse_args()
    for ov in (0.0, 0.5, 0.9):
        eff = efficiencies(args.samples, ov)
        parts = [f"{g:,} GPUs: step {eff[g][1]:.2f} s (compute {eff[g][2]:.2f} s)" for g, _ in RUNS]
        print(f"tp_overlap {ov:.1f}: " + "; ".join(parts))
        for g, pub in PUBLISHED.items():
            print(f"    efficiency at {g:,} GPUs: {eff[g][0]:.1%} (published {pub:.1%}, "
                  f"{(eff[g][0] - pub) * 100:+.1f} points)")


if __name__ == "__main__":
    main()
