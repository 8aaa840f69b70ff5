"""The plan space, its memory model, recognising a trace's model and plan, and ranking plans on a design
(docs/plans.md). Expected figures are worked by hand from the formulas of docs/plans.md."""

from __future__ import annotations

import glob
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fabric.cli.main import main
from fabric.reference.presets import preset_design
from fabric.errors import WorkloadError
from fabric.evaluate.placement import group_instances
from fabric.plans.basis import basis_from_preset, basis_from_workload, plan_key
from fabric.plans.best import degrees, evaluate_plan, rank_plans, screen_plans
from fabric.plans.memory import plan_memory
from fabric.plans.space import check_plan, plan_space
from fabric.plans.workloads import plan_workload, provenance
from fabric.workload.presets import LLAMA3_70B
from fabric.workload.synth import ModelSpec, ParallelPlan, megatron_groups, validate_plan

REPO = Path(__file__).resolve().parents[1]

# Llama-3-70B (Meta's config): 70.6e9 parameters, 80 layers, hidden 8192, MLP 28672 (SwiGLU), 64 heads, 8 KV heads
# of 128 (K/V width 1024), 8192-token sequences, bf16.
P = 70.6e9
# activations of one layer for one 8192-token sequence at tp 1 (docs/plans.md):
# s (11 h + 4 kv + 3 h + 6 f) = 8192 x (90112 + 4096 + 24576 + 172032) = 8192 x 290816 bytes
ACT_LAYER_TP1 = 8192 * 290816          # 2,382,364,672 B


def test_llama70b_on_80gb_refuses_tp1_pp1_and_accepts_tp8_pp4():
    hbm = 80e9
    # TP 1 x PP 1 x DP 1024, ZeRO 1: every GPU holds the whole model's bf16 weights (2 x 70.6e9 = 141.2 GB) and
    # gradients (141.2 GB); the Adam state (12 B per parameter) is sharded over 1,024 ranks: 0.827 GB
    one = ParallelPlan(dp=1024, tp=1, pp=1, zero_stage=1, grad_accum=1)
    m = plan_memory(LLAMA3_70B, one, hbm)
    assert m.weights_bytes == pytest.approx(2 * P)
    assert m.gradients_bytes == pytest.approx(2 * P)
    assert m.optimizer_bytes == pytest.approx(12 * P / 1024)
    assert m.activations_bytes == pytest.approx(80 * ACT_LAYER_TP1)        # 190.6 GB: all 80 layers, 1 micro-batch
    assert m.total_bytes == pytest.approx(4 * P + 12 * P / 1024 + 80 * ACT_LAYER_TP1)   # 473.8 GB
    assert not m.fits
    # without ZeRO the weights and Adam states alone are 16 B per parameter: 1,129.6 GB
    zero0 = plan_memory(LLAMA3_70B, replace(one, zero_stage=0), hbm)
    assert zero0.weights_bytes + zero0.gradients_bytes + zero0.optimizer_bytes == pytest.approx(16 * P)
    # the plan space refuses it at every ZeRO stage (ZeRO 3 shards the weights, but 190.6 GB of activations stay)
    basis = basis_from_preset("llama3-70b", 1024)
    cand, why = check_plan(basis, replace(one, grad_accum=512 // 1024 or 1, global_batch=None), hbm, 8,
                           choose_zero=True)
    assert cand is None
    # TP 8 x PP 4 x DP 32, ZeRO 1, 16 micro-batches, no interleaving: 70.6e9 / 32 = 2.206e9 parameters per GPU
    eight = ParallelPlan(dp=32, tp=8, pp=4, zero_stage=1, sequence_parallel=True, grad_accum=16)
    m8 = plan_memory(LLAMA3_70B, eight, hbm)
    per_gpu = P / 32
    assert m8.weights_bytes == pytest.approx(2 * per_gpu)                  # 4.41 GB
    assert m8.gradients_bytes == pytest.approx(2 * per_gpu)                # 4.41 GB
    assert m8.optimizer_bytes == pytest.approx(12 * per_gpu / 32)          # 0.83 GB
    # the first stage keeps min(pp, micro-batches) = 4 micro-batches of its 20 layers, each split 8 ways: 23.8 GB
    assert m8.activations_bytes == pytest.approx(4 * 20 * ACT_LAYER_TP1 / 8)
    assert m8.total_bytes == pytest.approx(33.476e9, rel=1e-4)
    assert m8.fits
    # the interleaved schedule of the preset (5 chunks) keeps 1 + 3 / 20 = 1.15 times as many: 27.4 GB
    m8v = plan_memory(LLAMA3_70B, replace(eight, virtual_stages=5), hbm)
    assert m8v.activations_bytes == pytest.approx(1.15 * 4 * 20 * ACT_LAYER_TP1 / 8)
    cand8, why8 = check_plan(basis, replace(eight, virtual_stages=5), hbm, 8)
    assert why8 is None and cand8.memory.fits


def test_plan_space_follows_the_model_and_memory_rules():
    basis = basis_from_preset("llama3-70b", 1024)
    space = plan_space(basis, "h100-sxm")
    assert space.given is not None and space.given.given
    for c in space.candidates:
        p = c.plan
        assert p.world_size == 1024
        assert LLAMA3_70B.heads % p.tp == 0 and p.tp <= 8
        assert LLAMA3_70B.layers % p.pp == 0 and p.pp <= 16
        assert p.sequences_per_step == 512 and p.micro_batches >= p.pp
        assert c.memory.total_bytes <= 80e9
        if p.effective_zero > 1 and not c.given:
            # a higher ZeRO stage only when the lower one does not fit, even with full recomputation
            assert not plan_memory(LLAMA3_70B, replace(p, zero_stage=p.effective_zero - 1, recompute="full"),
                                   80e9).fits
        if p.recompute == "full":
            # full recomputation (a whole forward more) only when keeping the activations does not fit
            assert not plan_memory(LLAMA3_70B, replace(p, recompute="selective"), 80e9).fits
            assert basis.compute_s(p) > basis.compute_s(replace(p, recompute="selective"))
    assert any(c.plan.tp == 8 and c.plan.pp == 4 for c in space.candidates)
    assert not any(c.plan.tp == 1 and c.plan.pp == 1 and c.plan.cp == 1 for c in space.candidates)
    # a bigger HBM needs recomputation less
    full = sum(c.plan.recompute == "full" for c in space.candidates)
    assert 0 < sum(c.plan.recompute == "full" for c in plan_space(basis, "b200", domain=8).candidates) < full


def test_rank_order_lays_out_the_groups():
    # tp 2, pp 4, dp 4 with pipeline neighbours next to each other: rank = tp + 2 x (pp + 4 x dp)
    plan = ParallelPlan(dp=4, tp=2, pp=4, grad_accum=4, order="tp-pp-cp-ep-dp")
    g = megatron_groups(plan, moe=False)
    assert (g["tp"].rank_stride, g["pp"].rank_stride, g["dp"].rank_stride) == (1, 2, 8)
    assert group_instances(g["pp"], 32)[0].tolist() == [0, 2, 4, 6]
    assert group_instances(g["dp"], 32)[0].tolist() == [0, 8, 16, 24]
    # Megatron's default keeps pipeline stages farthest apart
    d = megatron_groups(replace(plan, order="tp-cp-ep-dp-pp"), moe=False)
    assert (d["pp"].rank_stride, d["dp"].rank_stride) == (8, 2)
    with pytest.raises(WorkloadError, match="plan.order"):
        validate_plan(LLAMA3_70B, replace(plan, order="dp-tp-pp"), 32)


def _kineto():
    from fabric.cli.common import load_workload_files

    return load_workload_files(sorted(glob.glob(str(REPO / "sample_traces/kineto/*.gz"))))


def test_a_trace_is_recognised_with_its_plan_and_keeps_its_measured_numbers():
    wl = _kineto()
    b = basis_from_workload(wl)
    g = b.given
    # TP 8 (ranks 0-7), DP 8 (stride 8), PP 4 (stride 64) on 256 ranks; 160 tensor-parallel all-gathers per step =
    # 4 x 20 layers x 2 micro-batches; 20 pipeline sends = 2 x 2 micro-batches x 5 chunks; 134,217,728 B = one
    # 8,192-token sequence x 8,192 x 2 B
    assert (g.tp, g.pp, g.dp, g.cp, g.micro_batch, g.micro_batches, g.virtual_stages) == (8, 4, 8, 1, 1, 2, 5)
    assert g.sequence_parallel and b.global_batch == 16 and b.measured
    # the MFU the measured compute implies: FLOPs x (1 + bubble) / (GPUs x 989e12 x compute)
    flops = 16 * 8192 * (6 * 70.6e9 + 12 * 80 * 8192 * 8192)
    job = wl.jobs[0]
    assert b.mfu == pytest.approx(flops * (1 + 3 / 10) / (256 * 989e12 * job.compute_time_s), rel=1e-9)
    assert 0.38 < b.mfu < 0.42                 # the sample was written at 40 % MFU
    assert plan_workload(b, g) == wl           # the measured job (an equal basis may cache a copy)
    assert provenance(b, g) == "measured"
    other = replace(g, tp=4, dp=16)
    assert provenance(b, other) == "derived"
    derived = plan_workload(b, other).jobs[0]
    # derived at the measured MFU: the given plan synthesized the same way reproduces the measured compute
    assert b.compute_s(g) == pytest.approx(job.compute_time_s, rel=1e-9)
    assert derived.compute_time_s == pytest.approx(b.compute_s(other))


def test_an_unknown_model_is_refused_with_what_to_do():
    from fabric.workload.presets import preset_workload

    with pytest.raises(WorkloadError, match="not recognised.*--model NAME"):
        basis_from_workload(preset_workload("dlrm-dcnv2", gpus=64))
    wl = preset_workload("llama3-70b", gpus=256)
    small = ModelSpec("other", parameters=8e9, layers=32, hidden=4096, ffn_hidden=14336, heads=32, seq_len=8192)
    with pytest.raises(WorkloadError, match="not recognised as other: its data-parallel gradients"):
        basis_from_workload(wl, model=small)


def test_rank_plans_is_exact_against_evaluating_every_plan():
    basis = basis_from_preset("mixtral-8x7b", 128)
    design = preset_design("fat-tree", 128)
    space = plan_space(basis, design.gpu_model)
    ranking = rank_plans(design, basis, samples=64, keep=3, space=space)
    every = sorted((evaluate_plan(design, basis, c, samples=64) for c in space.candidates),
                   key=lambda r: (r.p99_s, r.label))
    assert [r.label for r in ranking.best] == [r.label for r in every[:3]]
    assert [r.p99_s for r in ranking.best] == pytest.approx([r.p99_s for r in every[:3]], rel=1e-12)
    assert ranking.skipped > 0                   # the compute bound saved evaluations
    assert ranking.given is not None
    assert ranking.given_slowdown() == pytest.approx(ranking.given.p99_s / every[0].p99_s - 1)
    assert plan_key(ranking.best[0].candidate.plan) != ()


def test_grouped_screen_ranks_each_degree_combination_then_the_best_combinations_in_full():
    """screen_plans (the plan search's first screen) against its rule applied to every plan evaluated: one plan per
    (TP, PP, DP, CP, EP) -- its least compute, ties by label -- then every plan of the 4 combinations whose plan
    ranked best; the 6 best of what was evaluated. Its compute bound must skip nothing that rule would keep."""
    basis = basis_from_preset("mixtral-8x7b", 128)
    design = preset_design("fat-tree", 128)
    space = plan_space(basis, design.gpu_model)
    every = {c.label: evaluate_plan(design, basis, c, samples=64, detail=False) for c in space.candidates}
    combos: dict = {}
    for c in sorted(space.candidates, key=lambda c: (c.compute_s, c.label)):
        combos.setdefault((c.plan.tp, c.plan.pp, c.plan.dp, c.plan.cp, c.plan.ep), []).append(c)
    firsts = sorted((cs[0] for cs in combos.values()), key=lambda c: (every[c.label].p99_s, c.label))
    looked = {c.label for c in firsts} | {c.label for f in firsts[:4] for c in combos[degrees(f)]}
    expected = sorted(looked, key=lambda k: (every[k].p99_s, k))[:6]
    screen = screen_plans(design, basis, keep=6, groups=4, samples=64, space=space)
    assert [r.label for r in screen.best] == expected
    assert [r.p99_s for r in screen.best] == [every[k].p99_s for k in expected]
    assert screen.evaluated < len(space.candidates) / 2          # the screen and its compute bound save most
    everything = screen_plans(design, basis, keep=len(looked), groups=4, samples=64, space=space)
    assert [r.label for r in everything.best] == sorted(looked, key=lambda k: (every[k].p99_s, k))
    # with every combination looked at in full it is the exact ranking
    exact = rank_plans(design, basis, samples=64, keep=6, space=space, detail=False)
    whole = screen_plans(design, basis, keep=6, groups=len(combos), samples=64, space=space)
    assert [r.label for r in whole.best] == [r.label for r in exact.best] == \
        sorted(every, key=lambda k: (every[k].p99_s, k))[:6]
    assert screen.best[0].label == exact.best[0].label     # here the screen finds the best plan too


def test_the_screen_without_the_report_ranks_exactly_as_the_full_evaluation():
    """rank_plans(detail=False), the shortlist's screen (fabric.evaluate.engine.step_time_stats: the percentiles
    without per-op results and hot links), gives the same plans and the same p99s as the full evaluation, on a
    design whose ECMP hashing draws random numbers (the draws must be the same ones)."""
    basis = basis_from_preset("mixtral-8x7b", 128)
    design = preset_design("fat-tree", 128).replace(routing="ecmp", oversubscription=(2.0, 2.0))
    space = plan_space(basis, design.gpu_model)
    full = rank_plans(design, basis, samples=64, keep=6, space=space, seed=5)
    screen = rank_plans(design, basis, samples=64, keep=6, space=space, seed=5, detail=False)
    assert [r.label for r in screen.best] == [r.label for r in full.best]
    assert [(r.p50_s, r.p95_s, r.p99_s, r.mean_s, r.compute_s) for r in screen.best] == \
        [(r.p50_s, r.p95_s, r.p99_s, r.mean_s, r.compute_s) for r in full.best]
    assert all(r.evaluation is None for r in screen.best) and full.best[0].evaluation is not None
    assert screen.evaluated == full.evaluated


def test_step_time_stats_is_the_evaluations_step_time_with_several_jobs():
    from fabric.evaluate import evaluate
    from fabric.evaluate.engine import step_time_stats
    from fabric.workload.presets import preset_workload

    design = preset_design("fat-tree", 256)
    for name in ("llama3-70b", "mixtral-8x7b"):
        wl = preset_workload(name, 128)
        two = wl.with_jobs(list(wl.jobs) + [replace(j, name=j.name + " (second)") for j in wl.jobs
                                            if j.kind != "storage"])
        for w in (wl, two):
            ev = evaluate(design, w, seed=3, samples=64)
            st = step_time_stats(design, w, seed=3, samples=64)
            assert {k: st[k] for k in ("p50", "p95", "p99", "mean")} == ev.step_time_s
            assert st["compute_s"] == ev.compute_s


def test_catalog_hbm_column_is_optional(tmp_path):
    from fabric.catalog import default_catalog, load_catalog

    assert default_catalog().gpu("h100-sxm").hbm_bytes == 80e9
    assert default_catalog().gpu("h200-sxm").hbm_bytes == 141e9
    f = tmp_path / "gpus.csv"
    f.write_text("table,model,price_usd\ngpus,h100-sxm,30000\n")
    assert load_catalog(str(f)).gpu("h100-sxm").hbm_bytes == 80e9


def test_cli_plans(capsys):
    assert main(["plans", "-d", "fat-tree", "--gpus", "128", "--preset", "mixtral-8x7b", "--samples", "64"]) == 0
    out = capsys.readouterr().out
    assert "1. TP" in out and "given plan: TP 2 x PP 1 x DP 64 x EP 8" in out and "slower" in out or "best plan" in out
    assert main(["plans", "-d", "fat-tree", "--gpus", "128", "--preset", "mixtral-8x7b", "--samples", "64",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["best"]) == 3 and data["given"]["tp"] == 2
    assert data["best"][0]["p99_s"] <= data["given"]["p99_s"]
    assert main(["plans", "-d", "fat-tree", "--gpus", "64", "-w", str(REPO / "sample_traces/dlrm-dcnv2.json")]) == 2
    assert "not recognised" in capsys.readouterr().err
