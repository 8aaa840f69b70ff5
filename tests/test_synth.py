"""Synthesis against closed forms worked out here by hand (not by calling the code), presets, samples and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_deadline, fuzz_examples
from fabric.errors import WorkloadError
from fabric.workload.model import load_workload_json
from fabric.workload.presets import get_preset, list_presets, preset_workload
from fabric.workload.synth import (
    InferencePlan, ModelSpec, ParallelPlan, RecSpec, checkpoint_job, synthesize, synthesize_dlrm,
    synthesize_inference,
)

ROOT = Path(__file__).resolve().parent.parent
H100 = 989e12

# a 7B-like dense model: 32 layers, hidden 4096, 32 heads, ffn 11008, 4K context
DENSE = ModelSpec("dense7b", parameters=7e9, layers=32, hidden=4096, ffn_hidden=11008, heads=32, seq_len=4096)
# a small MoE: 8 layers of 8 experts (gated MLP 3 x 1024 x 2048 each), top-2
MOE = ModelSpec("moe", parameters=2e9, layers=8, hidden=1024, ffn_hidden=2048, heads=16, kv_heads=4, seq_len=2048,
                experts=8, top_k=2)


def ops_of(wl, group=None, kind=None):
    return [o for o in wl.jobs[0].ops if (group is None or o.group == group) and (kind is None or o.kind == kind)]


def bytes_per_step(ops):
    return sum(o.bytes * o.count_per_step for o in ops)


# ---------------------------------------------------------------- data parallelism


def test_dp_all_reduce_bytes_are_two_bytes_per_held_parameter():
    plan = ParallelPlan(dp=4, tp=2, pp=2, grad_accum=8)
    wl = synthesize(DENSE, plan, gpu_flops=H100, gpus=16)
    dp = ops_of(wl, "dp")
    assert {o.kind for o in dp} == {"all_reduce"}
    # bf16 gradients of the 7e9 / (tp 2 x pp 2) = 1.75e9 parameters a rank holds: 3.5e9 bytes per step
    assert bytes_per_step(dp) == 3_500_000_000
    # in 25 MiB buckets: floor(3.5e9 / 26,214,400) = 133 full ones plus a remainder
    full = [o for o in dp if o.bytes == 26_214_400]
    assert full[0].count_per_step == 133
    assert [o.bytes for o in dp if o not in full] == [3_500_000_000 - 133 * 26_214_400]
    assert all(o.overlap_fraction == 0.8 for o in dp)
    g = wl.jobs[0].group("dp")
    assert (g.size, g.role, g.global_ranks()) == (4, "dp", (0, 2, 4, 6))


def test_fp32_gradients_and_bucket_size():
    plan = ParallelPlan(dp=8, grad_dtype_bytes=4, bucket_bytes=10**9)
    wl = synthesize(DENSE, plan, gpu_flops=H100)
    dp = ops_of(wl, "dp")
    assert bytes_per_step(dp) == 28_000_000_000          # 4 bytes x 7e9
    assert [(o.bytes, o.count_per_step) for o in dp] == [(10**9, 28.0)]


def test_zero2_reduce_scatter_plus_all_gather():
    wl = synthesize(DENSE, ParallelPlan(dp=8, tp=4, zero_stage=2), gpu_flops=H100)
    rs, ag = ops_of(wl, "dp", "reduce_scatter"), ops_of(wl, "dp", "all_gather")
    # gradients in (reduce-scatter input) and parameters out (all-gather output): 2 x 7e9 / 4 each
    assert bytes_per_step(rs) == 3_500_000_000 and bytes_per_step(ag) == 3_500_000_000


def test_zero3_gathers_every_layer_forward_and_backward():
    plan = ParallelPlan(dp=8, pp=2, fsdp=True, grad_accum=3)
    wl = synthesize(DENSE, plan, gpu_flops=H100)
    ag, rs = ops_of(wl, "dp", "all_gather")[0], ops_of(wl, "dp", "reduce_scatter")[0]
    # a stage holds 7e9 / 2 = 3.5e9 parameters over 16 layers: 7e9 bytes / 16 = 437,500,000 B per layer
    assert ag.bytes == 437_500_000 and rs.bytes == 437_500_000
    assert ag.count_per_step == 2 * 16 * 3 and rs.count_per_step == 16 * 3


# ---------------------------------------------------------------- tensor, pipeline, expert, context parallelism


def test_tp_all_reduce_per_layer_and_micro_batch():
    plan = ParallelPlan(dp=2, tp=4, pp=2, micro_batch=2, grad_accum=5)
    wl = synthesize(DENSE, plan, gpu_flops=H100)
    (tp,) = ops_of(wl, "tp")
    # b x s x h x 2 bytes = 2 x 4096 x 4096 x 2 = 67,108,864;
    # 2 fwd + 2 bwd per layer, 16 layers a stage, 5 micro-batches
    assert (tp.kind, tp.bytes, tp.count_per_step) == ("all_reduce", 67_108_864, 4 * 16 * 5)
    assert tp.overlap_fraction == 0.0
    assert wl.jobs[0].group("tp").global_ranks() == (0, 1, 2, 3)


def test_sequence_parallel_swaps_all_reduce_for_gather_and_scatter():
    plan = ParallelPlan(dp=2, tp=4, micro_batch=1, grad_accum=2, sequence_parallel=True)
    wl = synthesize(DENSE, plan, gpu_flops=H100)
    ag, rs = ops_of(wl, "tp", "all_gather")[0], ops_of(wl, "tp", "reduce_scatter")[0]
    assert ag.bytes == rs.bytes == 4096 * 4096 * 2
    assert ag.count_per_step == rs.count_per_step == 4 * 32 * 2
    assert not ops_of(wl, "tp", "all_reduce")


def test_pp_sends_activations_and_gradients_per_micro_batch():
    plan = ParallelPlan(dp=2, pp=4, micro_batch=2, grad_accum=8, virtual_stages=2)
    wl = synthesize(DENSE, plan, gpu_flops=H100)
    (pp,) = ops_of(wl, "pp")
    # b x s x h x 2 = 2 x 4096 x 4096 x 2; forward + backward per micro-batch and model chunk
    assert (pp.kind, pp.bytes, pp.count_per_step) == ("send_recv", 67_108_864, 2 * 8 * 2)
    g = wl.jobs[0].group("pp")
    assert g.global_ranks() == (0, 2, 4, 6)          # stride tp x cp x dp = 1 x 1 x 2


def test_ep_all_to_all_bytes():
    plan = ParallelPlan(dp=8, ep=4, micro_batch=2, grad_accum=3)
    wl = synthesize(MOE, plan, gpu_flops=H100)
    (a2a,) = ops_of(wl, "ep")
    # tokens x top_k x hidden x 2 bytes per rank = (2 x 2048) x 2 x 1024 x 2
    assert (a2a.kind, a2a.bytes) == ("all_to_all", 16_777_216)
    # dispatch + combine, forward and backward, in each of the 8 MoE layers, for 3 micro-batches
    assert a2a.count_per_step == 4 * 8 * 3
    # expert gradients go over the expert-data-parallel group of dp / ep = 2 ranks
    expert_params = 8 * 8 * 3 * 1024 * 2048
    assert bytes_per_step(ops_of(wl, "edp")) == round(2 * expert_params / 4)
    assert bytes_per_step(ops_of(wl, "dp")) == round(2 * (2e9 - expert_params))
    edp = wl.jobs[0].group("edp")
    assert (edp.size, edp.global_ranks()) == (2, (0, 4))


def test_cp_gathers_keys_and_values():
    plan = ParallelPlan(dp=2, tp=2, cp=4, grad_accum=1)
    wl = synthesize(replace(MOE, experts=1, top_k=1, parameters=1e9), plan, gpu_flops=H100)
    ag, rs = ops_of(wl, "cp", "all_gather")[0], ops_of(wl, "cp", "reduce_scatter")[0]
    # K and V of the whole 2048-token sequence, 4 KV heads x 64 = 256 wide, bf16, split over tp 2
    assert ag.bytes == rs.bytes == 2 * 2048 * 256 * 2 // 2
    assert ag.count_per_step == 8
    # the TP message covers the local 2048 / 4 tokens
    assert ops_of(wl, "tp")[0].bytes == 512 * 1024 * 2
    # gradient group = dp x cp ranks, every tp-th rank; cp group = stride tp
    assert wl.jobs[0].group("dp").global_ranks() == (0, 2, 4, 6, 8, 10, 12, 14)
    assert wl.jobs[0].group("cp").global_ranks() == (0, 2, 4, 6)


def test_megatron_rank_order():
    tp, cp, dp, pp = 2, 2, 2, 2
    plan = ParallelPlan(dp=dp, tp=tp, pp=pp, cp=cp, grad_accum=2)
    wl = synthesize(ModelSpec("m", 1e9, 8, 1024, 4096, 16, 2048, kv_heads=16), plan, gpu_flops=H100, gpus=16)
    rank = lambda t, c, d, p: t + tp * (c + cp * (d + dp * p))  # noqa: E731
    job = wl.jobs[0]
    assert job.group("tp").global_ranks() == tuple(rank(t, 0, 0, 0) for t in range(tp))
    assert job.group("cp").global_ranks() == tuple(rank(0, c, 0, 0) for c in range(cp))
    assert job.group("pp").global_ranks() == tuple(rank(0, 0, 0, p) for p in range(pp))
    assert set(job.group("dp").global_ranks()) == {rank(0, c, d, 0) for c in range(cp) for d in range(dp)}


# ---------------------------------------------------------------- compute time


def test_compute_time_is_6_n_tokens_over_cluster_flops():
    plan = ParallelPlan(dp=16, tp=4, micro_batch=2, grad_accum=4)
    wl = synthesize(DENSE, plan, gpu_flops=H100, mfu=0.5, attention_flops=False)
    tokens = 2 * 16 * 4 * 4096
    assert wl.jobs[0].compute_time_s == pytest.approx(6 * 7e9 * tokens / (H100 * 0.5 * 64))


def test_attention_term_and_pipeline_bubble():
    plan = ParallelPlan(dp=4, pp=4, micro_batch=1, grad_accum=6, virtual_stages=2)
    wl = synthesize(DENSE, plan, gpu_flops=H100, mfu=0.4)
    tokens = 4 * 6 * 4096
    flops = tokens * (6 * 7e9 + 12 * 32 * 4096 * 4096)
    bubble = (4 - 1) / (2 * 6)
    assert wl.jobs[0].compute_time_s == pytest.approx(flops / (16 * H100 * 0.4) * (1 + bubble))


def test_moe_active_parameters():
    mixtral = get_preset("mixtral-8x7b").model
    # 32 layers x 8 experts x 3 x 4096 x 14336 = 45.1e9 in experts; active = rest + 2/8 of them = 12.9e9 published
    assert mixtral.expert_parameters == 32 * 8 * 3 * 4096 * 14336
    assert mixtral.active == pytest.approx(12.9e9, rel=0.01)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("model,plan,gpus,match", [
    (DENSE, ParallelPlan(dp=3, tp=2), 8, "must multiply to the world size"),
    (DENSE, ParallelPlan(pp=3), None, "must divide the 32 layers"),
    (DENSE, ParallelPlan(tp=3), None, "must divide the 32 attention heads"),
    (DENSE, ParallelPlan(dp=4, ep=2), None, "needs a mixture-of-experts model"),
    (MOE, ParallelPlan(dp=2, ep=4), None, "must divide dp x cp"),
    (DENSE, ParallelPlan(zero_stage=5), None, "plan.zero_stage"),
    (DENSE, ParallelPlan(dp=4, global_batch=10), None, "plan.global_batch"),
    (DENSE, ParallelPlan(dp=4, global_batch=16, grad_accum=2), None, "contradicts global_batch"),
    (DENSE, ParallelPlan(dp_overlap=1.5), None, "plan.dp_overlap"),
    (DENSE, ParallelPlan(cp=3), None, "must divide seq_len"),
    (ModelSpec("x", 1e9, 8, 1000, 4000, 16, 2048), ParallelPlan(), None, "model.heads"),
    (ModelSpec("x", 1e6, 8, 1024, 4096, 16, 2048, experts=8, top_k=2), ParallelPlan(), None, "smaller than"),
])
def test_validation_names_the_field(model, plan, gpus, match):
    with pytest.raises(WorkloadError, match=match):
        synthesize(model, plan, gpu_flops=H100, gpus=gpus)


def test_bad_hardware_numbers():
    with pytest.raises(WorkloadError, match="mfu"):
        synthesize(DENSE, ParallelPlan(), gpu_flops=H100, mfu=1.5)
    with pytest.raises(WorkloadError, match="gpu_flops"):
        synthesize(DENSE, ParallelPlan(), gpu_flops=0)


@settings(max_examples=fuzz_examples(150), deadline=fuzz_deadline())
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.integers(1, 16), st.sampled_from([0, 1, 2, 3]),
       st.integers(1, 8))
def test_dp_bytes_closed_form_for_any_plan(tp, pp, dp, zero, accum):
    plan = ParallelPlan(dp=dp, tp=tp, pp=pp, zero_stage=zero, grad_accum=accum)
    try:
        wl = synthesize(DENSE, plan, gpu_flops=H100)
    except WorkloadError:
        return
    grads = 2 * 7e9 / (tp * pp)
    dp_ops = ops_of(wl, "dp")
    if dp == 1:
        assert dp_ops == []
    elif zero <= 1:
        assert bytes_per_step(dp_ops) == round(grads)
    elif zero == 2:
        assert bytes_per_step(dp_ops) == 2 * round(grads)
    else:
        per_layer = round(grads / (32 // pp))
        assert bytes_per_step(dp_ops) == 3 * per_layer * (32 // pp) * accum
    assert wl.jobs[0].world_size == dp * tp * pp


# ---------------------------------------------------------------- inference, DLRM, checkpoints


def test_inference_decode_all_reduces():
    plan = InferencePlan(tp=8, replicas=4, prompt_tokens=1000, output_tokens=100, decode_batch=16,
                         request_rate_per_s=10.0, latency_slo_s=30.0)
    wl = synthesize_inference(DENSE, plan, gpu_flops=H100, mfu=0.5, hbm_bytes_per_s=3e12)
    job = wl.jobs[0]
    assert (job.kind, job.world_size, job.request_rate_per_s, job.latency_slo_s) == ("inference", 32, 10.0, 30.0)
    pre, dec = ops_of(wl, "tp")
    assert (pre.bytes, pre.count_per_step) == (1000 * 4096 * 2, 2 * 32)
    assert (dec.bytes, dec.count_per_step) == (16 * 4096 * 2, 2 * 32 * 100)
    prefill = 2 * 7e9 * 1000 / (8 * H100 * 0.5)
    decode = max(2 * 7e9 * 16 / (8 * H100 * 0.5), 7e9 * 2 / (8 * 3e12))
    assert job.compute_time_s == pytest.approx(prefill + 100 * decode)


def test_dlrm_all_to_all_and_all_reduce():
    rec = RecSpec("rec", dense_parameters=1e7, embedding_tables=26, embedding_dim=128, embedding_rows=1e8)
    wl = synthesize_dlrm(rec, gpus=64, global_batch=65536, gpu_flops=H100, mfu=0.2)
    (a2a,) = ops_of(wl, kind="all_to_all")
    assert (a2a.bytes, a2a.count_per_step) == (1024 * 26 * 128 * 4, 2.0)     # 65536 / 64 samples per rank
    assert bytes_per_step(ops_of(wl, kind="all_reduce")) == 4 * 10**7
    assert wl.jobs[0].compute_time_s == pytest.approx(6 * 1e7 * 65536 / (64 * H100 * 0.2))
    with pytest.raises(WorkloadError, match="global_batch"):
        synthesize_dlrm(rec, gpus=64, global_batch=1000, gpu_flops=H100)


def test_checkpoint_job_size():
    job = checkpoint_job(DENSE, world_size=64, period_s=1800)
    assert (job.kind, job.burst_bytes, job.burst_period_s) == ("storage", 7e9 * (2 + 12), 1800.0)
    wl = synthesize(DENSE, ParallelPlan(dp=8), gpu_flops=H100, checkpoint_period_s=600)
    assert [j.kind for j in wl.jobs] == ["training", "storage"]


# ---------------------------------------------------------------- presets


def test_presets_build_and_cite_sources():
    names = [p.name for p in list_presets()]
    assert names == ["llama3-70b", "mixtral-8x7b", "dlrm-dcnv2", "llama3-70b-serving", "llama3-70b-online",
                     "llama3-70b-disagg", "deepseek-v3-ep-decode"]
    for p in list_presets():
        assert p.sources and p.description
        wl = p.workload()
        assert wl.jobs[0].world_size == p.default_gpus
        assert ("preset", p.name) in wl.facts


def test_llama_preset_shape_and_plan():
    p = get_preset("llama3-70b")
    m = p.model
    assert (m.layers, m.hidden, m.ffn_hidden, m.heads, m.seq_len) == (80, 8192, 28672, 64, 8192)
    wl = p.workload(1024)
    job = wl.jobs[0]
    assert {g.name: g.size for g in job.groups} == {"tp": 8, "dp": 32, "pp": 4}
    # 512 sequences: 16 micro-batches of 1 per data-parallel rank
    assert dict(wl.facts)["tokens per step"] == str(512 * 8192)
    ag = ops_of(wl, "tp", "all_gather")[0]
    assert ag.bytes == 8192 * 8192 * 2 and ag.count_per_step == 4 * 20 * 16


def test_preset_overrides():
    wl = preset_workload("llama3-70b", gpus=256, tp=4, pp=2, virtual_stages=1, layers=40, mfu=0.5)
    job = wl.jobs[0]
    assert {g.name: g.size for g in job.groups} == {"tp": 4, "dp": 32, "pp": 2}
    assert ops_of(wl, "tp")[0].count_per_step == 4 * 20 * 16
    with pytest.raises(WorkloadError, match="unknown override 'bogus'"):
        preset_workload("llama3-70b", bogus=1)
    with pytest.raises(WorkloadError, match="multiple of 16"):
        preset_workload("mixtral-8x7b", gpus=40)
    with pytest.raises(WorkloadError, match="unknown preset"):
        preset_workload("gpt-5")
    serving = preset_workload("llama3-70b-serving", gpus=64, output_tokens=128)
    assert serving.jobs[0].latency_slo_s == pytest.approx(2 + 0.2 * 128)
    assert serving.jobs[0].request_rate_per_s == 8.0


# ---------------------------------------------------------------- samples


def test_committed_samples_match_the_generator(tmp_path):
    from fabric.workload import samples

    assert samples.check(ROOT / "sample_traces") == []
    total = sum(p.stat().st_size for p in (ROOT / "sample_traces").rglob("*") if p.is_file())
    assert total < 2_000_000
    assert (ROOT / "sample_traces" / "README.md").is_file()
    written = samples.generate(tmp_path)
    assert samples.check(tmp_path) == []
    assert len(written) == len(samples.samples())


def test_native_samples_load():
    for p in sorted((ROOT / "sample_traces").glob("*.json")):
        wl = load_workload_json(p.read_bytes(), p.name)
        assert wl.jobs[0].ops


# ---------------------------------------------------------------- CLI


def _cli(argv):
    from fabric.cli.main import main

    return main(["synth", *argv])


def test_cli_preset_and_custom(tmp_path, capsys):
    out = tmp_path / "w.json"
    assert _cli(["--preset", "mixtral-8x7b", "--gpus", "128", "--out", str(out)]) == 0
    wl = load_workload_json(out.read_bytes())
    assert wl.jobs[0].world_size == 128 and wl.jobs[0].group("ep").size == 8
    out2 = tmp_path / "c.json"
    rc = _cli(["--params", "7e9", "--layers", "32", "--hidden", "4096", "--ffn-hidden", "11008", "--heads", "32",
               "--seq-len", "4096", "--tp", "2", "--pp", "2", "--gpus", "16", "--grad-accum", "8", "--zero", "2",
               "--out", str(out2)])
    assert rc == 0
    d = json.loads(out2.read_text())
    job = d["jobs"][0]
    assert job["world_size"] == 16
    rs = [o for o in job["ops"] if o["group"] == "dp" and o["kind"] == "reduce_scatter"]
    assert sum(o["bytes"] * o["count_per_step"] for o in rs) == 3_500_000_000
    assert "wrote" in capsys.readouterr().out
    assert _cli(["--list-presets"]) == 0
    assert "llama3-70b-serving" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["--preset", "llama3-70b", "--gpus", "12", "--out", "x.json"], "multiple of 8"),
    (["--preset", "llama3-70b", "--tp", "two", "--out", "x.json"], "--tp must be a whole number"),
    (["--params", "7Q", "--out", "x.json"], "--params must be a number"),
    (["--layers", "32", "--out", "x.json"], "no model"),
    (["--preset", "llama3-70b"], "no output"),
    (["--preset", "llama3-70b", "--mfu", "2", "--out", "x.json"], "mfu"),
])
def test_cli_bad_values_exit_2_with_one_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _cli(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and err.startswith("fabric synth: error:")
    assert not (tmp_path / "x.json").exists()


def test_formulas_are_documented():
    text = (ROOT / "docs" / "synthesis.md").read_text()
    for needle in ("6 N", "b x s x h", "(pp - 1)", "top_k", "rank =", "overlap"):
        assert needle in text, needle
