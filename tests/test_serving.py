"""Serving workloads: plan bytes against hand computations, the queueing model against M/D/1 theory, and the
network's part of the tail (shared links, isolation, ECMP collisions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabric.design.schema import Design
from fabric.errors import WorkloadError
from fabric.evaluate import evaluate
from fabric.evaluate.serving import (
    PhaseTimes, bursty_arrivals, capacity_rps, fifo_multi_server, lindley_waits, poisson_arrivals, serving_metrics,
)
from fabric.workload.model import (
    CommOp, Job, ProcessGroup, ServingSpec, Workload, dump_workload_json, load_workload_json, workload_from_dict,
    workload_to_dict,
)
from fabric.workload.presets import preset_workload
from fabric.workload.serving import DEEPSEEK_V3, LLAMA3_70B_SERVING, ServingPlan, synthesize_serving


def _op(job, name):
    return next(o for o in job.ops if o.name == name)


# ------------------------------------------------------------------ plans: bytes by hand


def test_llama_disaggregated_kv_transfer_bytes_by_hand():
    job = preset_workload("llama3-70b-disagg", gpus=64).jobs[0]
    # 2 (K and V) x 80 layers x 8 KV heads x 128 head dim x 1,024 tokens x 2 bytes (BF16)
    kv = 2 * 80 * 8 * 128 * 1024 * 2
    assert kv == 335_544_320
    assert job.serving.kv_bytes_per_request == kv
    op = _op(job, "kv-cache transfer")
    # TP 8 splits the 8 KV heads: each of the 8 prefill GPUs sends its 1/8 to its decode peer, all at once
    assert (op.kind, op.bytes, op.count_per_step, op.phase) == ("send_recv", kv // 8, 1.0, "kv_transfer")
    kv_group = job.group("kv")
    assert (kv_group.size, kv_group.rank_stride) == (2, 8)      # prefill rank j -> decode rank j of the next node
    assert job.serving.mode == "disaggregated" and job.serving.prefill_replicas == job.serving.replicas == 4


def test_dense_tp_in_node_decode_all_reduce_bytes_by_hand():
    job = preset_workload("llama3-70b-online", gpus=64).jobs[0]
    op = _op(job, "decode tp all-reduce")
    # Megatron TP: 2 all-reduces per layer of the batch's activations, 64 sequences x 8192 x 2 bytes
    assert (op.bytes, op.count_per_step, op.phase) == (64 * 8192 * 2, 2 * 80, "decode")
    pre = _op(job, "prefill tp all-reduce")
    assert (pre.bytes, pre.count_per_step) == (1024 * 8192 * 2, 160)
    assert job.group("tp").size == 8 and job.serving.replicas == 8


def test_deepseek_ep_dispatch_and_combine_bytes_per_token_step_by_hand():
    job = preset_workload("deepseek-v3-ep-decode", gpus=640).jobs[0]
    assert job.group("ep").size == 320                       # EP320 over 40 nodes (DeepSeek-V3 report 3.4.2)
    disp, comb = _op(job, "decode ep dispatch"), _op(job, "decode ep combine")
    # 128 tokens per GPU x top-8 x (7168 FP8 bytes + 7168 / 128 FP32 scales x 4 bytes)
    assert disp.bytes == 128 * 8 * (7168 + 56 * 4) == 7_569_408
    # the same tokens back in BF16: 128 x 8 x 7168 x 2
    assert comb.bytes == 128 * 8 * 7168 * 2 == 14_680_064
    # one dispatch and one combine per MoE layer (61 layers, the first 3 dense) per token step
    assert disp.count_per_step == comb.count_per_step == 58
    assert disp.kind == comb.kind == "all_to_all" and disp.phase == comb.phase == "decode"
    # MLA caches 512 + 64 values per token per layer: 61 x 576 x 1,024 tokens x 2 bytes per request
    assert job.serving.kv_bytes_per_request == 61 * 576 * 1024 * 2 == 71_958_528
    # prefill on EP 32 instances (DeepSeek-V3 report: 4 nodes): 10 of them in the 320-GPU pool, each GPU
    # dispatching 1,024 / 32 = 32 prompt tokens per MoE layer
    assert job.group("ep_prefill").size == 32 and job.serving.prefill_replicas == 10
    assert _op(job, "prefill ep dispatch").bytes == 32 * 8 * (7168 + 56 * 4) == 1_892_352
    assert _op(job, "prefill ep dispatch").group == "ep_prefill"


def test_kv_offload_fetches_the_reused_prefix_and_saves_its_prefill():
    base = dict(tp=8, replicas=2, decode_batch=32, request_rate_per_s=1.0)
    kw = dict(gpu_flops=989e12, hbm_bytes_per_s=3.35e12)
    plain = synthesize_serving(LLAMA3_70B_SERVING, ServingPlan(**base), **kw).jobs[0]
    off = synthesize_serving(LLAMA3_70B_SERVING, ServingPlan(**base, kv_offload_hit=0.5), **kw).jobs[0]
    fetch = _op(off, "kv-cache fetch from the remote pool")
    assert fetch.bytes == 2 * 80 * 8 * 128 * 512 * 2 // 8 and fetch.phase == "kv_offload"
    assert off.serving.prefill_s == pytest.approx(plain.serving.prefill_s / 2)


def test_serving_workload_round_trips_and_bad_input_names_the_field():
    wl = preset_workload("deepseek-v3-ep-decode", gpus=64)
    assert load_workload_json(dump_workload_json(wl)) == wl
    d = workload_to_dict(wl)
    d["jobs"][0]["serving"]["arrival"] = "fractal"
    with pytest.raises(WorkloadError, match=r"jobs\[0\]\.serving\.arrival.*poisson, bursty"):
        workload_from_dict(d)
    d = workload_to_dict(wl)
    del d["jobs"][0]["ops"][0]["phase"]
    with pytest.raises(WorkloadError, match=r"ops\[0\]\.phase"):
        workload_from_dict(d)
    with pytest.raises(WorkloadError, match="plan.ep"):
        synthesize_serving(LLAMA3_70B_SERVING, ServingPlan(tp=8, ep=16), gpu_flops=1e15, hbm_bytes_per_s=3e12)
    with pytest.raises(WorkloadError, match="multiple of 16 GPUs"):
        preset_workload("llama3-70b-disagg", gpus=24)


# ------------------------------------------------------------------ queueing against theory


def _single_server(rate: float, service_s: float = 1.0, **spec_kw) -> tuple[Job, PhaseTimes]:
    """A colocated replica whose only work is a deterministic prefill of ``service_s`` (one output token)."""
    spec = ServingSpec(prompt_tokens=1, output_tokens=1, decode_batch=1, replicas=1, prefill_s=service_s,
                       decode_step_s=0.0, **spec_kw)
    job = Job(name="svc", kind="inference", world_size=1, request_rate_per_s=rate, serving=spec)
    return job, PhaseTimes(nvlink={}, network={"prefill": np.zeros(32)})


def _md1_wait_quantile(rho: float, q: float) -> float:
    """Quantile of the M/D/1 wait (service 1) from Erlang's formula P(W <= t) = (1 - rho) sum_{k=0}^{floor t}
    (rho (k - t))^k / k! e^{-rho (k - t)} (Gross and Harris, Fundamentals of Queueing Theory), by bisection."""
    def cdf(t):
        return (1 - rho) * sum((rho * (k - t)) ** k / math.factorial(k) * math.exp(-rho * (k - t))
                               for k in range(int(math.floor(t)) + 1))
    lo, hi = 0.0, 60.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return lo


@pytest.mark.parametrize("rho", [0.5, 0.8, 0.9])
def test_mean_wait_matches_m_d_1(rho):
    """Pollaczek-Khinchine for deterministic service: Wq = rho / (2 mu (1 - rho))."""
    job, times = _single_server(rho)
    m = serving_metrics(job, times, seed=3, requests_per_launch=8192)
    wq = m["ttft_s"]["mean"] - 1.0
    assert wq == pytest.approx(rho / (2 * (1 - rho)), rel=0.04)
    assert m["capacity_rps"] == pytest.approx(1.0) and m["load"] == pytest.approx(rho)


def test_lindley_recursion_equals_the_loop():
    rng = np.random.default_rng(0)
    inter, serv = rng.exponential(1.0, 2000), rng.exponential(0.9, 2000)
    w, loop = lindley_waits(inter, serv), [0.0]
    for i in range(1, 2000):
        loop.append(max(0.0, loop[-1] + serv[i - 1] - inter[i]))
    assert np.allclose(w, loop)


def test_p99_grows_without_bound_as_load_approaches_capacity():
    p99 = []
    for rho in (0.5, 0.8, 0.9, 0.95, 0.99):
        job, times = _single_server(rho)
        p99.append(serving_metrics(job, times, seed=1, requests_per_launch=32768)["ttft_s"]["p99"])
    assert all(b > a for a, b in zip(p99, p99[1:]))
    # at 0.5 and 0.8 the p99 matches M/D/1's exact waiting-time distribution; at 0.99 the queue holds dozens
    assert p99[0] == pytest.approx(1.0 + _md1_wait_quantile(0.5, 0.99), rel=0.05)      # 4.34 services
    assert p99[1] == pytest.approx(1.0 + _md1_wait_quantile(0.8, 0.99), rel=0.05)      # 11.4 services
    assert p99[-1] > 30.0
    job, times = _single_server(1.2)
    over = serving_metrics(job, times, seed=1, requests_per_launch=1024)
    assert not over["stable"] and "without bound" in over["note"]


def test_bursty_arrivals_keep_the_mean_rate_and_raise_the_tail():
    rng = np.random.default_rng(5)
    a = bursty_arrivals(2.0, (4, 50_000), rng, burst_factor=3.0, burst_fraction=0.2, burst_mean_s=20.0)
    assert (a.shape[-1] / a[:, -1]).mean() == pytest.approx(2.0, rel=0.05)
    steady, times = _single_server(0.6)
    bursty, _ = _single_server(0.6, arrival="bursty", burst_factor=1.5, burst_fraction=0.3, burst_mean_s=50.0)
    p_steady = serving_metrics(steady, times, seed=2)["ttft_s"]["p99"]
    p_bursty = serving_metrics(bursty, times, seed=2)["ttft_s"]["p99"]
    assert p_bursty > 2 * p_steady           # 0.9 of capacity for 30 % of the time


def test_decode_slots_queue_only_when_full():
    ready = np.arange(10.0)
    assert not fifo_multi_server(ready, np.full(10, 3.0), 3).any()        # at most 3 overlap
    w = fifo_multi_server(np.zeros(4), np.full(4, 2.0), 2)
    assert list(w) == [0.0, 0.0, 2.0, 2.0]


def test_capacity_of_colocated_and_disaggregated_replicas_by_hand():
    times = PhaseTimes(nvlink={}, network={"prefill": np.full(4, 0.01), "decode": np.full(4, 0.001)})
    col = ServingSpec(prompt_tokens=1, output_tokens=101, decode_batch=10, replicas=2, prefill_s=0.09,
                      decode_step_s=0.009)
    # colocated: a replica spends 0.1 s on a prefill and 100 x 0.01 / 10 = 0.1 s on its decode share
    assert capacity_rps(col, times) == pytest.approx(2 / 0.2)
    dis = ServingSpec(prompt_tokens=1, output_tokens=101, decode_batch=10, replicas=2, prefill_s=0.09,
                      decode_step_s=0.009, mode="disaggregated", prefill_replicas=2)
    assert capacity_rps(dis, times) == pytest.approx(min(2 / 0.1, 2 / 0.1))


# ------------------------------------------------------------------ the network's part of the tail


def _shared_workload(ckpt: bool = True) -> Workload:
    """A data-parallel training job (48 GPUs, a 16 GiB all-reduce per 0.5 s of compute), a DeepSeek-V3-like EP
    decode service on the next 64 GPUs and the training job's checkpoints: on a 128-GPU 2:1 fabric the leaf
    between them carries both."""
    train = Job(name="train", kind="training", world_size=48,
                groups=(ProcessGroup("dp", 48, "dp", rank_start=0, rank_stride=1),),
                ops=(CommOp("all_reduce", 16 << 30, "dp", 1.0, name="grads"),), compute_time_s=0.5)
    srv = preset_workload("deepseek-v3-ep-decode", gpus=64).jobs[0]
    jobs = [train, srv]
    if ckpt:
        jobs.append(Job(name="ckpt", kind="storage", world_size=48, burst_bytes=int(1e12), burst_period_s=30.0,
                        burst_target="storage"))
    return Workload(jobs=tuple(jobs))


def test_isolating_the_serving_class_lowers_its_p99_and_the_tool_says_by_how_much():
    wl = _shared_workload()
    shared = evaluate(Design(gpus=128, oversubscription=(2, 1)), wl).serving["deepseek-v3-ep-decode"]
    own = evaluate(Design(gpus=128, oversubscription=(2, 1), serving_class=True), wl).serving["deepseek-v3-ep-decode"]
    names = [c["name"] for c in shared["competitors"]]
    assert any("training" in n for n in names) and any("checkpoint" in n for n in names)
    assert own["competitors"] == [] and own["isolation"] == "traffic class of its own"
    assert own["tpot_s"]["p99"] < shared["tpot_s"]["p99"] * 0.97
    assert own["ttft_s"]["p99"] < shared["ttft_s"]["p99"]
    # what the shared evaluation says isolation would give is what the isolated design gets
    assert shared["isolated"]["tpot_p99_s"] == pytest.approx(own["tpot_s"]["p99"], rel=0.01)
    # a separate storage network removes the bursts only
    storage = evaluate(Design(gpus=128, oversubscription=(2, 1), storage_isolation=True), wl)
    s = storage.serving["deepseek-v3-ep-decode"]
    assert not any("checkpoint" in c["name"] for c in s["competitors"])
    assert s["tpot_s"]["p99"] < shared["tpot_s"]["p99"]


def test_more_queue_pairs_or_adaptive_routing_lower_serving_p99_under_ecmp_collisions():
    wl = preset_workload("deepseek-v3-ep-decode", gpus=128)           # EP 64 over 8 nodes on 2:1 leaves
    p99 = {}
    for label, kw in (("ecmp1", {}), ("ecmp8", {"qps_per_connection": 8}), ("adaptive", {"routing": "adaptive"})):
        ev = evaluate(Design(gpus=128, oversubscription=(2, 1), **kw), wl)
        p99[label] = ev.serving["deepseek-v3-ep-decode"]["tpot_s"]["p99"]
    assert p99["ecmp8"] < p99["ecmp1"] * 0.95
    assert p99["adaptive"] <= p99["ecmp8"]


def test_serving_metrics_are_deterministic_for_a_seed_and_split_the_p99():
    wl = preset_workload("llama3-70b-disagg", gpus=64)
    d = Design(gpus=64, oversubscription=(2, 1))
    a = evaluate(d, wl, seed=4).serving["llama3-70b-disagg"]
    b = evaluate(d, wl, seed=4).serving["llama3-70b-disagg"]
    assert a == b
    for key, pct in (("p99_split_ttft_s", "ttft_s"), ("p99_split_tpot_s", "tpot_s")):
        assert set(a[key]) == {"queueing_s", "compute_s", "nvlink_s", "network_s"}
        assert sum(a[key].values()) == pytest.approx(a[pct]["p99"])
    assert 0.0 <= a["slo_attainment"] <= 1.0
    assert math.isfinite(a["capacity_rps"]) and a["stable"]


# ------------------------------------------------------------------ search with an inference constraint


def test_search_over_a_shared_fabric_with_an_inference_p99_limit_returns_a_front_where_it_binds():
    from fabric.search.constraints import Constraints
    from fabric.search.run import exhaustive_search

    wl = _shared_workload(ckpt=False)
    space = dict(gpus=128, families=("clos",), switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",),
                 nics_per_gpu=(1.0,), routings=("ecmp",), transports=("infiniband",), placements=("packed",),
                 oversubscriptions=(1, 2, 4), uplink_speed_factors=(1,), qps=(1, 8), planes=(1,))
    free = exhaustive_search(wl, Constraints(**space), samples=64)
    limit = 0.050
    bound = exhaustive_search(wl, Constraints(**space, inference_tpot_p99_s=limit), samples=64)
    assert free.front and bound.front
    assert all(r["serving_tpot_p99_s"] <= limit for r in bound.front)
    cheapest_free = min(r["cost_usd"] for r in free.front)
    cheapest_bound = min(r["cost_usd"] for r in bound.front)
    assert cheapest_bound > cheapest_free            # the limit moves the front to dearer fabrics
    # designs cheaper than the constrained front that break nothing but the serving limit: it binds
    only_serving = [r for r in bound.records if r["cost_usd"] < cheapest_bound and r["buildable"]
                    and r["violations"]["inference_tpot"] > 0
                    and all(v <= 0 for k, v in r["violations"].items() if k != "inference_tpot")]
    assert only_serving
    # and their training p99 is as good as the front's: only the service's tail rules them out
    assert min(r["p99_s"] for r in only_serving) <= min(r["p99_s"] for r in bound.front)


def test_inference_limits_need_a_serving_job_and_valid_values():
    from fabric.errors import FabricError
    from fabric.search.constraints import ConstraintError, Constraints
    from fabric.search.run import run_search

    with pytest.raises(ConstraintError, match="inference_slo_attainment"):
        Constraints(inference_slo_attainment=1.5)
    with pytest.raises(ConstraintError, match="inference_tpot_p99_s"):
        Constraints(inference_tpot_p99_s=-1)
    with pytest.raises(FabricError, match="no serving job"):
        run_search(preset_workload("llama3-70b", gpus=64), Constraints(gpus=64, inference_ttft_p99_s=1.0),
                   budget_evals=10)


def test_a_serving_latency_can_be_an_objective_beside_cost_and_training_p99():
    from fabric.search.constraints import Constraints
    from fabric.search.run import exhaustive_search

    space = dict(gpus=128, families=("clos",), switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",),
                 nics_per_gpu=(1.0,), routings=("ecmp",), transports=("infiniband",), placements=("packed",),
                 oversubscriptions=(1, 2, 4), uplink_speed_factors=(1,), qps=(1, 8), planes=(1,))
    res = exhaustive_search(_shared_workload(ckpt=False), Constraints(**space, inference_objective="tpot_p99"),
                            samples=64)
    assert res.objectives == ("cost_usd", "p99_s", "serving_tpot_p99_s")
    front = sorted(res.front, key=lambda r: r["cost_usd"])
    # a dearer design stays on the front only because its service is faster at the same training p99
    assert len(front) >= 2 and front[-1]["serving_tpot_p99_s"] < front[0]["serving_tpot_p99_s"]
    # no front design is dominated in the three objectives
    keys = ("cost_usd", "p99_s", "serving_tpot_p99_s")
    for a in front:
        assert not any(all(b[k] <= a[k] for k in keys) and any(b[k] < a[k] for k in keys) for b in res.records
                       if b["feasible"])


# ------------------------------------------------------------------ serving traces


def _serving_traces(tmp_path, output_tokens=8):
    """Kineto traces (no ProfilerStep) of ranks 0 and 1 of a TP 8 service handling one request: a 1,024-token
    prefill (16 MiB all-reduces, 2 per layer) and ``output_tokens`` decode iterations (1 MiB all-reduces)."""
    import json

    from fabric.workload.kineto_writer import workload_to_kineto

    job = preset_workload("llama3-70b-serving", gpus=16, output_tokens=output_tokens).jobs[0]
    paths = []
    for r in (0, 1):
        p = tmp_path / f"serve.rank{r}.pt.trace.json"
        p.write_text(json.dumps(workload_to_kineto(job, r, steps=1, seed=0)))
        paths.append(str(p))
    return paths


def test_a_serving_kineto_trace_is_read_as_an_inference_job_with_the_users_request_structure(tmp_path, capsys):
    from fabric.cli.main import main
    from fabric.workload.ingest import ingest_paths
    from fabric.workload.serving import attach_serving

    paths = _serving_traces(tmp_path)
    wl = ingest_paths(paths).workload
    job = wl.jobs[0]
    assert job.kind == "inference" and job.serving is None       # no ProfilerStep: one request window
    spec = {"decode_steps_in_trace": 8, "prefill_min_bytes": 8 << 20, "prefill_s": 0.04, "request_rate_per_s": 5,
            "decode_batch": 64, "output_tokens": 256, "prompt_tokens": 1024, "tpot_slo_s": 0.2}
    out = attach_serving(wl, spec).jobs[0]
    by_size = {op.bytes: op for op in out.ops}
    # 2 all-reduces per layer x 80 layers: per request at prefill, per token step at decode (8 steps traced)
    assert by_size[1024 * 8192 * 2].phase == "prefill" and by_size[1024 * 8192 * 2].count_per_step == 160
    assert by_size[64 * 8192 * 2].phase == "decode" and by_size[64 * 8192 * 2].count_per_step == 160
    assert out.serving.decode_step_s == pytest.approx((job.compute_time_s - 0.04) / 8)
    assert out.serving.output_tokens == 256 and out.request_rate_per_s == 5
    # the same through the command line, then evaluated with request latency
    dst = tmp_path / "serve.json"
    import json

    assert main(["parse", *paths, "--serving", json.dumps(spec), "--out", str(dst)]) == 0
    assert "decode ops per token step" in capsys.readouterr().out
    ev = evaluate(Design(gpus=16), load_workload_json(dst.read_text()))
    m = ev.serving[out.name]
    assert m["stable"] and m["tpot_s"]["p50"] >= out.serving.decode_step_s


def test_a_serving_trace_without_the_structure_it_cannot_tell_is_refused_by_name(tmp_path):
    from fabric.workload.ingest import ingest_paths
    from fabric.workload.serving import attach_serving

    wl = ingest_paths(_serving_traces(tmp_path)).workload
    with pytest.raises(WorkloadError, match="'decode_steps_in_trace': required"):
        attach_serving(wl, {"request_rate_per_s": 1})
    with pytest.raises(WorkloadError, match="unknown key.*bogus"):
        attach_serving(wl, {"decode_steps_in_trace": 8, "request_rate_per_s": 1, "bogus": 2})
    with pytest.raises(WorkloadError, match="no inference job"):
        attach_serving(preset_workload("llama3-70b", gpus=64), {"decode_steps_in_trace": 8, "request_rate_per_s": 1})


def test_the_advisor_ranks_changes_by_the_serving_tail_and_offers_the_free_traffic_class():
    from fabric.review.advisor import advise

    res = advise(Design(gpus=128, oversubscription=(2, 1)), _shared_workload(), samples=64)
    assert res["serving_p99_s"]["tpot"] > 0
    by_change = {a["change"]: a for a in res["serving_advice"]}
    cls = next(a for c, a in by_change.items() if "class of its own" in c)
    assert cls["kind"] == "free" and cls["delta_cost_usd"] == 0 and cls["edit"] == {"serving_class": True}
    assert cls["delta_tpot_p99_s"] < 0 and cls["delta_ttft_p99_s"] < 0
    # what the class gives is what evaluating the isolated design gives
    iso = evaluate(Design(gpus=128, oversubscription=(2, 1), serving_class=True), _shared_workload(), samples=64)
    assert cls["tpot_p99_s"] == pytest.approx(iso.serving["deepseek-v3-ep-decode"]["tpot_s"]["p99"])
    assert "serving" in res["serving_answer"]
    # a training-only workload gets no serving section and no serving change to try
    plain = advise(Design(gpus=64), preset_workload("llama3-70b", gpus=64), samples=32)
    assert "serving_advice" not in plain
    assert not any("serving" in a["change"] for a in plain["advice"] + plain["not_helping"])


def test_the_search_turns_the_serving_class_on_where_it_makes_a_cheaper_design_meet_a_serving_limit():
    from fabric.search.constraints import Constraints
    from fabric.search.run import exhaustive_search
    from fabric.search.space import DesignSpace

    wl = _shared_workload(ckpt=True)        # training + its checkpoints + a service sharing a leaf
    space = dict(gpus=128, families=("clos",), switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",),
                 nics_per_gpu=(1.0,), routings=("ecmp",), transports=("infiniband",), placements=("packed",),
                 oversubscriptions=(1, 2, 4), uplink_speed_factors=(1,), qps=(1,), planes=(1,),
                 inference_ttft_p99_s=0.100)
    # the gene exists for a workload with a serving job only (it changes nothing for training)
    assert "serving_class" in DesignSpace(Constraints(**space), serving=True).policy_genes
    assert "serving_class" not in DesignSpace(Constraints(**space)).names
    free = exhaustive_search(wl, Constraints(**space), samples=64)
    without = exhaustive_search(wl, Constraints(**space, serving_classes=(False,)), samples=64)
    assert not any(r["serving_class"] for r in without.records)
    cheap = min(free.front, key=lambda r: r["cost_usd"])
    cheap_without = min(without.front, key=lambda r: r["cost_usd"])
    assert cheap["serving_class"] and cheap["cost_usd"] < cheap_without["cost_usd"]
    assert cheap["serving_ttft_p99_s"] <= 0.100
    # the same hardware with the class off costs the same and breaks the serving limit only: the class (free
    # policy) is what makes the cheaper design feasible
    twin = next(r for r in free.records if not r["serving_class"] and r["design"] != cheap["design"]
                and all(r[c] == cheap[c] for c in ("oversub_leaf", "oversub_spine", "storage_isolation",
                                                   "in_network_reduction", "routing", "qps_per_connection")))
    assert twin["cost_usd"] == cheap["cost_usd"] and not twin["feasible"]
    assert twin["violations"]["inference_ttft"] > 0
    assert all(v <= 0 for k, v in twin["violations"].items() if k != "inference_ttft")
    assert "+serving class" in cheap["design"] and "+serving class" in free.front_frame()["policy"].iloc[0]


def test_a_robust_search_limits_the_serving_p99_of_its_worst_case():
    from fabric.evaluate import Scenario
    from fabric.search.constraints import Constraints
    from fabric.search.records import evaluate_record
    from fabric.search.robust import RobustObjective, evaluate_robust_record
    from fabric.search.run import exhaustive_search

    calm, bursty = _shared_workload(ckpt=False), _shared_workload(ckpt=True)
    train = Workload(jobs=(calm.jobs[0],))                         # a case without a service
    space = dict(gpus=128, families=("clos",), switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",),
                 nics_per_gpu=(1.0,), routings=("ecmp",), transports=("infiniband",), placements=("packed",),
                 oversubscriptions=(2, 4), uplink_speed_factors=(1,), qps=(1,), planes=(1,))
    c = Constraints(**space, inference_ttft_p99_s=0.100)
    d = Design(name="2:1", family="clos", gpus=128, nic_model="nic-cx7-400", switch_model="ib-ndr-64x400",
               oversubscription=(2.0, 2.0))
    cases = {n: evaluate_record(d, w, Scenario(), 0, 64, None, c) for n, w in
             (("calm", calm), ("bursty", bursty), ("train", train))}
    assert "serving_ttft_p99_s" not in cases["train"]
    # the checkpoint bursts lengthen the service's tail: the cases differ
    assert cases["bursty"]["serving_ttft_p99_s"] > cases["calm"]["serving_ttft_p99_s"]
    wl3 = (("calm", calm, 1.0), ("bursty", bursty, 3.0), ("train", train, 4.0))
    worst = evaluate_robust_record(d, RobustObjective(wl3, mode="worst"), None, 0, 64, None, c)
    mean = evaluate_robust_record(d, RobustObjective(wl3, mode="mean"), None, 0, 64, None, c)
    for key, pick in (("serving_ttft_p99_s", max), ("serving_tpot_p99_s", max), ("serving_slo_attainment", min)):
        a, b = cases["calm"][key], cases["bursty"][key]
        assert worst[key] == pytest.approx(pick(a, b))
        assert mean[key] == pytest.approx((1 * a + 3 * b) / 4)       # weights of the cases with a service
    assert set(worst["serving_by_case"]) == {"calm|baseline", "bursty|baseline"}
    assert (worst["violations"]["inference_ttft"] > 0) == (max(cases["calm"]["serving_ttft_p99_s"],
                                                               cases["bursty"]["serving_ttft_p99_s"]) > 0.100)
    # a search: every front design meets the limit in every case with a service, checked case by case
    res = exhaustive_search(RobustObjective(wl3[:2], mode="worst"), c, samples=64)
    assert res.front
    from fabric.search.designs import design_from_record

    for r in res.front:
        fd = design_from_record(r, gpus=128)
        for w in (calm, bursty):
            assert evaluate_record(fd, w, Scenario(), 0, 64, None, c)["serving_ttft_p99_s"] <= 0.100


@pytest.mark.parametrize("flags", [["--scaling"], ["--scenario", "bigger-cluster"]])
def test_weak_scaling_of_a_serving_job_is_refused_in_one_line_saying_why_and_what_to_do(tmp_path, capsys, flags):
    from fabric.cli.main import main

    wl = tmp_path / "srv.json"
    assert main(["synth", "--preset", "llama3-70b-disagg", "--gpus", "64", "--out", str(wl)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "-w", str(wl), "-d", "fat-tree", "--gpus", "64", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "'llama3-70b-disagg' is a serving job" in err                           # what
    assert "data-parallel" in err and "replicas" in err                           # why
    assert "fabric synth --preset NAME --gpus N" in err and "request_rate_per_s" in err     # what to do
