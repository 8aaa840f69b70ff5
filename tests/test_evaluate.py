"""The evaluator against physics: bounds, closed forms, collision statistics, oversubscription, faults."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabric.catalog import load_catalog
from fabric.cli.main import main
from fabric.design import Design
from fabric.evaluate import Scenario, evaluate
from fabric.evaluate.ballsbins import expected_max_load, max_load_cdf
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 1 << 30


def one_op(kind: str, size: int, world: int, *, group_size=None, stride=1, compute=0.0, overlap=0.0, count=1.0):
    n = group_size or world
    g = ProcessGroup("g", n, "dp", rank_start=0, rank_stride=stride)
    job = Job(name="job", world_size=world, groups=(g,),
              ops=(CommOp(kind, size, "g", count_per_step=count, overlap_fraction=overlap),),
              compute_time_s=compute)
    return Workload(jobs=(job,))


@pytest.fixture(scope="module")
def cat48(tmp_path_factory):
    """Adds a 48 x 400G InfiniBand switch: at 2:1 it has 32 ports down and 16 up."""
    row = {"model": "test-48x400", "vendor": "test", "fabric": "infiniband", "ports": 48, "port_speed_gbps": 400,
           "price_usd": 30000, "power_w": 600, "latency_ns": 130, "source": "test"}
    p = tmp_path_factory.mktemp("c") / "c.json"
    p.write_text(json.dumps({"switches": [row]}))
    return load_catalog(p)


# ------------------------------------------------------------------ collision statistics (facts.md section 3)


@pytest.mark.parametrize("n,mult,facts_eff", [(4, 1, 0.51), (8, 4, 0.58), (16, 16, 0.69), (64, 4, 0.43),
                                              (64, 16, 0.62), (8, 1, 0.41)])
def test_max_load_distribution_matches_published_collision_table(n, mult, facts_eff):
    """facts.md reports the mean per-trial efficiency (k/n)/max; recompute it from our exact distribution."""
    k = n * mult
    off, cdf = max_load_cdf(k, n)
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    m = off + np.arange(cdf.size)
    eff = float(np.sum(pmf * (k / n) / np.maximum(m, 1)))
    assert eff == pytest.approx(facts_eff, abs=0.015)


def test_max_load_matches_brute_force():
    rng = np.random.default_rng(1)
    for k, n in [(12, 8), (100, 32)]:
        sims = [np.bincount(rng.integers(0, n, k), minlength=n).max() for _ in range(20000)]
        assert expected_max_load(k, n) == pytest.approx(np.mean(sims), rel=0.01)


# ------------------------------------------------------------------ bounds and closed forms


def test_never_below_lower_bound_and_spray_reaches_it():
    """Non-blocking fabric, packet spraying, a 16 GiB all-reduce over 256 H100s (32 nodes). Above NCCL's
    NVLS-tree/ring crossover (~3 GB at 32 nodes) NCCL runs its flat ring, whose 8 channels put 2(p-1)/p x S/8 through
    every NIC: 510/256 vs the bound's 2(N-1)/N = 62/32, i.e. 2.8 % more bytes, at the transport's 96 % of line rate
    (the ring's 62 network + 448 NVLink steps add ~1 %)."""
    wl = one_op("all_reduce", 16 * GIB, 256)
    ev = evaluate(Design(gpus=256, routing="spray"), wl)
    assert ev.ops[0].algorithm == "ring"
    assert ev.step_time_s["p50"] >= ev.lower_bound_s
    # the bound itself: 2(N-1)/N * (S/g) / B_nic with N = 32 nodes, g = 8, B = 50 GB/s
    assert ev.lower_bound_s == pytest.approx(2 * 31 / 32 * (16 * GIB / 8) / 50e9, rel=1e-9)
    flat_ring = 2 * 255 / 256 * (16 * GIB / 8) / (50e9 * 0.96)
    assert ev.step_time_s["p99"] == pytest.approx(flat_ring, rel=0.015)
    assert ev.step_time_s["p99"] <= 1.09 * ev.lower_bound_s


@pytest.mark.parametrize("routing,qps", [("ecmp", 1), ("ecmp", 8), ("adaptive", 1), ("spray", 1)])
@pytest.mark.parametrize("kind", ["all_reduce", "all_to_all", "all_gather", "reduce_scatter", "send_recv"])
def test_samples_never_below_lower_bound(routing, qps, kind):
    wl = one_op(kind, 64 << 20, 512, compute=0.01, overlap=0.5)
    d = Design(gpus=512, family="clos", oversubscription=(3.0,), routing=routing, qps_per_connection=qps)
    ev = evaluate(d, wl, samples=64)
    assert ev.step_samples_s.min() >= ev.lower_bound_s * (1 - 1e-9)


def test_hierarchical_all_reduce_closed_form():
    """facts.md section 1: 2(g-1)/g S/B_nvlink + 2(N-1)/N (S/g)/B_nic (+ latency terms), at effective rates."""
    S, N, g = 4 * GIB, 16, 8
    wl = one_op("all_reduce", S, N * g)
    ev = evaluate(Design(gpus=N * g, routing="spray"), wl, algorithms={"all_reduce": "hierarchical"})
    b_nv, b_nic = 450e9 * 0.80, 50e9 * 0.96          # H100 NVLink per direction, NDR NIC, profile efficiencies
    closed = 2 * (g - 1) / g * S / b_nv + 2 * (N - 1) / N * (S / g) / b_nic
    assert ev.step_time_s["p50"] == pytest.approx(closed, rel=0.03)
    assert ev.ops[0].algorithm == "hierarchical/ring"


def test_same_seed_same_result_and_seeds_differ():
    wl = one_op("all_to_all", 32 << 20, 512)
    d = Design(gpus=512, family="clos", oversubscription=(2.0,), qps_per_connection=1)
    a, b = evaluate(d, wl, seed=7), evaluate(d, wl, seed=7)
    assert np.array_equal(a.step_samples_s, b.step_samples_s)
    c = evaluate(d, wl, seed=8)
    assert not np.array_equal(a.step_samples_s, c.step_samples_s)
    assert a.step_samples_s.std() > 0                 # ECMP outcomes form a distribution


# ------------------------------------------------------------------ routing


def test_ecmp_tail_worse_than_spray_and_qps_narrow_the_gap():
    """A ring all-reduce across ToR leaves: few flows per leaf collide under ECMP; more QPs add entropy. With one
    connection per rank pair (``channels_per_nic`` 1) the flows are the QPs; NCCL's own rule opens 16 channels on
    the 8 NICs of a node, 2 per NIC, so its 1 QP hashes like 2 (issue 28, fabric/evaluate/channels.py)."""
    wl = one_op("all_reduce", 1 * GIB, 512)
    base = Design(gpus=512, family="clos", channels_per_nic=1)
    spray = evaluate(base.replace(routing="spray"), wl).step_time_s["p99"]
    p99 = {q: evaluate(base.replace(routing="ecmp", qps_per_connection=q), wl).step_time_s["p99"]
           for q in (1, 2, 4, 16)}
    assert p99[1] > 1.8 * spray
    assert p99[1] > p99[4] > p99[16] >= spray * 0.999
    nccl = evaluate(base.replace(routing="ecmp", channels_per_nic=None), wl).step_time_s["p99"]
    assert nccl == pytest.approx(p99[2], rel=1e-9)


def test_ecmp_slowdown_matches_explicit_hashing():
    """Pipeline-parallel sends across a 7:1 leaf tier; the model's ECMP/spray ratio against a brute-force
    simulation of per-flow hashing written here from the cabling (10 leaves of 7 nodes, 8 uplinks over 2 spines
    in bundles of 4)."""
    wl = one_op("send_recv", 1 * GIB, 512, group_size=2, stride=256)
    d = Design(gpus=512, family="clos", oversubscription=(7.0,), qps_per_connection=1)
    spray = evaluate(d.replace(routing="spray"), wl).step_time_s["mean"]
    ecmp = evaluate(d.replace(routing="ecmp"), wl, samples=4096).step_time_s["mean"]
    rng = np.random.default_rng(0)
    src = np.arange(256)
    src_leaf, dst_leaf = (src // 8) // 7, ((src + 256) // 8) // 7
    worst = []
    for _ in range(4000):
        up = rng.integers(0, 8, src.size)
        down = (up // 4) * 4 + rng.integers(0, 4, src.size)   # the spine is fixed by the uplink, then 1 of 4
        loads = np.concatenate([np.bincount(src_leaf * 8 + up), np.bincount(dst_leaf * 8 + down)])
        worst.append(loads.max())
    expected = np.mean(worst) / 7.0                            # spraying puts 56/8 = 7 flows on each uplink
    assert ecmp / spray == pytest.approx(expected, rel=0.04)


# ------------------------------------------------------------------ oversubscription and rails


def test_rail_aligned_ring_inside_su_ignores_leaf_oversubscription():
    wl = one_op("all_reduce", 1 * GIB, 256)
    d = Design(gpus=256, family="rail_optimized", nodes_per_su=32, placement="rail_aligned", routing="ecmp")
    t11 = evaluate(d, wl).step_time_s["p99"]
    t21 = evaluate(d.replace(oversubscription=(2.0,)), wl).step_time_s["p99"]
    assert t21 == pytest.approx(t11, rel=1e-9)


def test_all_to_all_slows_by_oversubscription_times_offleaf_fraction(cat48):
    """256 GPUs, 32 per leaf (whole nodes): at 2:1 each leaf's 16 uplinks carry 32 x 224/256 of S.

    2 GiB per rank so that the (p-1) latency steps of the direct algorithm are small beside the transfer."""
    wl = one_op("all_to_all", 2 * GIB, 256)
    d11 = Design(gpus=256, family="clos", routing="spray")                 # 64 ports: 32 down, 32 up
    d21 = Design(gpus=256, family="clos", routing="spray", switch_model="test-48x400",
                 oversubscription=(2.0,))                                   # 48 ports: 32 down, 16 up
    t11 = evaluate(d11, wl, catalog=cat48).step_time_s["p50"]
    t21 = evaluate(d21, wl, catalog=cat48).step_time_s["p50"]
    assert t21 / t11 == pytest.approx(1.75 / (248 / 256), rel=0.03)      # ~1.8x: uplinks vs NIC bound


def test_pxn_keeps_cross_rail_all_to_all_on_rail():
    wl = one_op("all_to_all", 256 << 20, 256)
    d = Design(gpus=256, family="rail_optimized", nodes_per_su=32, oversubscription=(2.0,), routing="spray")
    plain = evaluate(d, wl).step_time_s["p50"]
    pxn = evaluate(d.replace(pxn=True), wl).step_time_s["p50"]
    assert pxn < plain / 1.3


# ------------------------------------------------------------------ faults


def test_failed_uplink_costs_the_lost_capacity():
    """Spraying on an uplink-bound all-to-all: one leaf losing 1 of its u uplinks takes u/(u-1) longer."""
    wl = one_op("all_to_all", 4 * GIB, 512)
    d = Design(gpus=512, family="clos", oversubscription=(7.0,), routing="spray")
    base = evaluate(d, wl).step_time_s["p99"]
    failed = evaluate(d, wl, Scenario(failed_links=1)).step_time_s["p99"]
    u = 8                                             # 64 ports at 7:1 -> 8 up
    assert failed / base == pytest.approx(u / (u - 1), rel=0.02)


def test_slow_spine_costs_what_its_capacity_implies():
    from fabric.topology import build_fabric

    wl = one_op("all_to_all", 4 * GIB, 512)
    d = Design(gpus=512, family="clos", oversubscription=(7.0,))
    base = evaluate(d.replace(routing="spray"), wl).step_time_s["p99"]
    slow = evaluate(d.replace(routing="spray"), wl, Scenario(slow_switches=1, slow_factor=0.5)).step_time_s["p99"]
    assert slow / base == pytest.approx(2.0, rel=0.02)     # even split: the half-speed links pace everyone
    base_ar = evaluate(d.replace(routing="adaptive"), wl).step_time_s["p99"]
    slow_ar = evaluate(d.replace(routing="adaptive"), wl, Scenario(slow_switches=1, slow_factor=0.5)
                       ).step_time_s["p99"]
    # adaptive routing steers by capacity: of a leaf's u uplinks, the b to the slow spine run at half speed
    s = build_fabric(d).structure
    u, b = s["leaf_up"], s["leaf_spine_bundle"]
    assert (u, b) == (8, 4)                                 # 10 leaves x 8 uplinks over 2 spines
    assert slow_ar / base_ar == pytest.approx(u / (u - b * 0.5), rel=0.02)


# ------------------------------------------------------------------ CLI


def test_evaluate_cli_json(tmp_path, capsys):
    from fabric.workload.model import dump_workload_json

    p = tmp_path / "w.json"
    p.write_text(dump_workload_json(one_op("all_reduce", 64 << 20, 64, compute=0.05)))
    assert main(["evaluate", "--workload", str(p), "--design", "fat-tree", "--gpus", "64", "--json",
                 "--samples", "64"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"step_time_s", "lower_bound_s", "ops", "hot_links", "cost_usd", "power_w"}
    assert out["step_time_s"]["p99"] >= out["step_time_s"]["p50"] >= out["lower_bound_s"]
    assert main(["evaluate", "--workload", str(p), "--design", "fat-tree", "--scenario", "nope"]) == 2
    assert "no scenario preset or file named 'nope'" in capsys.readouterr().err


# ------------------------------------------------------------------ interference, inference, scaling, hot spots


def test_checkpoint_burst_interferes_unless_isolated():
    wl = one_op("all_reduce", 256 << 20, 256, compute=0.05, count=10)
    d = Design(gpus=256, routing="spray")
    burst = Scenario(checkpoint_bytes=256 * 40e9 * 0.05, checkpoint_period_s=0.2)   # a burst overlaps most steps
    base = evaluate(d, wl).step_time_s["mean"]
    hit = evaluate(d, wl, burst).step_time_s["mean"]
    iso = evaluate(d.replace(storage_isolation=True), wl, burst).step_time_s["mean"]
    # during a burst each NIC shares its link with one storage flow, so the exposed communication that overlaps
    # it takes twice as long; a burst overlaps a step with probability (step + burst) / period
    comm = base - 0.05
    duration = 256 * 40e9 * 0.05 / 256 / (50e9 * 0.96)
    p = min(1.0, (base + duration) / 0.2)
    assert hit == pytest.approx(base + p * min(duration, comm), rel=0.03)
    assert iso == pytest.approx(base, rel=1e-9)


def test_inference_jobs_report_latency():
    from fabric.workload.presets import preset_workload

    wl = preset_workload("llama3-70b-serving", gpus=64)
    ev = evaluate(Design(gpus=64), wl, samples=64)
    job = next(iter(ev.jobs.values()))
    assert job["kind"] == "inference" and "latency_s" in job
    assert job["latency_s"]["p99"] >= job["latency_s"]["p50"] > 0


def test_scaling_efficiency_weak_scaling():
    from fabric.evaluate import scaling_efficiency

    wl = one_op("all_reduce", 512 << 20, 256, compute=0.2, overlap=0.0)
    rows = scaling_efficiency(Design(gpus=256, routing="spray"), wl, samples=32)
    assert [r["gpus"] for r in rows] == [256, 512, 1024]
    assert rows[0]["efficiency_p50"] == 1.0
    # a ring all-reduce's per-GPU bytes barely grow with N: 2(N-1)/N with N = 32, 64, 128 nodes
    expected = [1.0, (0.2 + 2 * 31 / 32 * 0.5 * 0.6) / (0.2 + 2 * 63 / 64 * 0.5 * 0.6)]
    assert rows[1]["efficiency_p50"] == pytest.approx(expected[1], rel=0.05)
    assert rows[2]["efficiency_p50"] <= rows[1]["efficiency_p50"] <= 1.0


def test_bigger_cluster_and_job_mix_scenarios():
    wl = one_op("all_to_all", 64 << 20, 256, compute=0.01)
    d = Design(gpus=256, family="clos", oversubscription=(3.0,))
    base = evaluate(d, wl, samples=64)
    more = evaluate(d, wl, Scenario(comm_scale=2.0), samples=64)
    assert more.ops[0].bytes == 2 * base.ops[0].bytes
    assert more.step_time_s["p50"] > base.step_time_s["p50"]
    big = evaluate(d, wl, Scenario(gpu_scale=2), samples=64)
    assert next(iter(big.jobs.values()))["gpus"] == 512


def test_hot_links_name_the_ops_that_cross_them():
    wl = one_op("all_to_all", 256 << 20, 512)
    ev = evaluate(Design(gpus=512, family="clos", oversubscription=(3.0,)), wl, samples=64)
    assert ev.hot_links
    top = ev.hot_links[0]
    assert top["links"] in ("leaf uplinks", "leaf downlinks")
    assert top["ops"] == ["all_to_all@g"]
    assert 0 < top["mean_utilization"] <= top["p99_sample_utilization"] <= 1.0


@pytest.mark.parametrize("design", [
    Design(gpus=512, family="clos", oversubscription=(3.0,)),
    Design(gpus=512, family="rail_optimized", oversubscription=(2.0, 2.0), nodes_per_su=16, tiers=3),
])
def test_large_all_to_all_counted_implicitly_equals_explicit_pairs(design, monkeypatch):
    import fabric.evaluate.flows as flows

    wl = one_op("all_to_all", 256 << 20, 512, group_size=128)
    monkeypatch.setattr(flows, "IMPLICIT_ALL_PAIRS_FLOWS", 10 ** 12)
    explicit = evaluate(design, wl, samples=256).step_samples_s
    monkeypatch.setattr(flows, "IMPLICIT_ALL_PAIRS_FLOWS", 0)
    implicit = evaluate(design, wl, samples=256).step_samples_s
    assert np.array_equal(explicit, implicit)


def test_random_link_faults_widen_the_tail_only():
    """Faults drawn per launch: most launches see none (same time), a few see a leaf short of an uplink."""
    wl = one_op("all_to_all", 4 * GIB, 512)
    d = Design(gpus=512, family="clos", oversubscription=(7.0,), routing="spray")
    base = evaluate(d, wl, samples=512).step_samples_s
    flaky = evaluate(d, wl, Scenario(link_failure_prob=0.002), samples=512).step_samples_s
    n_links = 10 * 8                                     # 10 leaves x 8 uplinks
    p_any = 1 - (1 - 0.002) ** n_links                   # a launch with at least one link down
    hit = flaky > base * 1.0001
    assert hit.mean() == pytest.approx(p_any, abs=0.05)
    assert np.median(flaky) == pytest.approx(np.median(base))
    # a launch is paced by its worst leaf: 7 of 8 uplinks left (8/7 slower), rarely 6 of 8 (8/6)
    lat = 511 * 6.7e-6                                   # the direct all-to-all's latency steps are not slowed
    ratios = (flaky[hit] - lat) / (base.max() - lat)
    assert all(min(abs(r - 8 / (8 - f)) for f in (1, 2, 3)) < 0.01 for r in ratios)
    assert np.mean(np.abs(ratios - 8 / 7) < 0.01) > 0.8


def test_storage_class_routing_sets_the_checkpoint_burst_length():
    """A 4:1 leaf (48 NIC ports down, 12 up) drains a checkpoint burst through its uplinks: 4x the NIC time when
    the storage class is sprayed, longer under ECMP (collisions), and the step pays more often."""
    from fabric.evaluate.step import burst_duration
    from fabric.evaluate.transport import PROFILES
    from fabric.topology import build_fabric

    d = Design(gpus=512, family="clos", oversubscription=(4.0,), routing="spray")
    fab = build_fabric(d)
    assert (fab.structure["leaf_down"], fab.structure["leaf_up"]) == (48, 12)
    per_nic = 10e9
    nic_time = per_nic / (50e9 * 0.96)
    spray = burst_duration(per_nic, d, fab, PROFILES["infiniband"])
    ecmp = burst_duration(per_nic, d.replace(storage_routing="ecmp"), fab, PROFILES["infiniband"])
    assert spray == pytest.approx(4 * nic_time)
    rng = np.random.default_rng(0)                       # brute force: the busiest uplink over 11 leaves
    worst = [max(np.bincount(rng.integers(0, 12, 48), minlength=12).max() for _ in range(11))
             for _ in range(3000)]
    assert ecmp == pytest.approx(np.mean(worst) * nic_time, rel=0.03)
    wl = one_op("all_reduce", 256 << 20, 512, compute=0.05, count=10)
    burst = Scenario(checkpoint_bytes=512 * per_nic, checkpoint_period_s=2.0)
    t_spray = evaluate(d, wl, burst).step_time_s["mean"]
    t_ecmp = evaluate(d.replace(storage_routing="ecmp"), wl, burst).step_time_s["mean"]
    assert t_ecmp > t_spray


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"]),
       size=st.integers(1, 1 << 31), group=st.sampled_from([2, 4, 8, 16, 32, 64]),
       stride=st.sampled_from([1, 2, 8, 16]), placement=st.sampled_from(["packed", "rail_aligned"]),
       fragmentation=st.sampled_from([0.0, 0.5, 1.0]),
       family=st.sampled_from(["clos", "rail_optimized", "rail_only", "dragonfly"]),
       routing=st.sampled_from(["ecmp", "adaptive", "spray"]), overlap=st.floats(0, 1),
       compute=st.floats(0, 0.1), seed=st.integers(0, 5))
def test_property_never_below_lower_bound(kind, size, group, stride, placement, fragmentation, family, routing, overlap,
                                          compute, seed):
    world = 128
    if group * stride > world:
        stride = world // group
    wl = one_op(kind, size, world, group_size=group, stride=stride, compute=compute, overlap=overlap, count=3)
    d = Design(gpus=world, family=family, routing=routing, placement=placement, oversubscription=(2.0,))
    ev = evaluate(d, wl, Scenario(fragmentation=fragmentation), samples=32, seed=seed)
    assert ev.step_samples_s.min() >= ev.lower_bound_s * (1 - 1e-9)


def _two_jobs(world=256, size=1 * GIB, size_b=None):
    jobs = []
    for name, b in (("a", size), ("b", size if size_b is None else size_b)):
        g = ProcessGroup("g", world, "dp", rank_start=0, rank_stride=1)
        jobs.append(Job(name=name, world_size=world, groups=(g,), ops=(CommOp("all_to_all", b, "g"),)))
    return Workload(jobs=tuple(jobs))


def test_jobs_on_separate_leaves_do_not_interfere_and_mixed_leaves_share_fairly():
    # 1:1 leaves of 4 nodes: 256 GPUs fill 8 leaves exactly, so packed jobs share no leaf
    d11 = Design(gpus=512, family="clos", routing="spray")
    iso = evaluate(d11.replace(gpus=256), one_op("all_to_all", 1 * GIB, 256)).step_time_s["p50"]
    both = evaluate(d11, _two_jobs(), samples=64)
    assert both.jobs["a"]["step_time_s"]["p50"] == pytest.approx(iso, rel=1e-9)
    # a fragmented cluster (whole nodes at random) on 3:1 leaves: both jobs drive the same uplinks. Fair sharing
    # can at most halve what a job gets (2x), and the other job is active there most of the time, so the slowdown
    # is well above 1
    d = Design(gpus=512, family="clos", oversubscription=(3.0,), routing="spray", placement="packed")
    frag = Scenario(fragmentation=1.0)
    quiet = evaluate(d, _two_jobs(size_b=1), frag, samples=64).jobs["a"]["step_time_s"]["p50"]   # same placement
    busy = evaluate(d, _two_jobs(), frag, samples=64)
    a, b = busy.jobs["a"]["step_time_s"]["p50"], busy.jobs["b"]["step_time_s"]["p50"]
    assert 1.2 < a / quiet <= 2.0
    assert b == pytest.approx(a, rel=0.15)


def test_flat_ring_without_nvls_moves_more_than_the_nvls_tree():
    """2 nodes x 8 GPUs, 8 GiB all-reduce over 200G NICs (network-bound for both GPUs): NCCL's flat ring (A100)
    puts 2(p-1)/p S through each node, the NVLS tree (H100) the optimal 2(N-1)/N S: (30/16) / (2/2) = 1.875x."""
    wl = one_op("all_reduce", 8 * GIB, 16)
    base = Design(gpus=16, routing="spray", nic_model="nic-cx6-200")
    h100 = evaluate(base, wl, samples=16)
    a100 = evaluate(base.replace(gpu_model="a100-sxm-80gb"), wl, samples=16)
    assert h100.ops[0].algorithm == "nvls_tree" and a100.ops[0].algorithm == "ring"
    assert a100.step_time_s["p50"] / h100.step_time_s["p50"] == pytest.approx(1.875, rel=0.03)
    assert a100.step_samples_s.min() >= a100.lower_bound_s                 # the flat ring stays above the bound


def test_a_scenario_that_partitions_the_fabric_says_so():
    from fabric.errors import DesignError

    wl = one_op("all_to_all", 64 << 20, 64)
    d = Design(gpus=64, family="rail_optimized")                 # 8 rail leaves, 2 spines (never 1)
    with pytest.raises(DesignError, match="off from every spine: the fabric is partitioned"):
        evaluate(d, wl, Scenario(failed_spines=2), samples=16)


def test_p99_breakdown_adds_ops_that_share_a_label():
    g = ProcessGroup("g", 64, "dp", rank_start=0, rank_stride=1)
    ops = tuple(CommOp("all_reduce", 64 << 20, "g", name="layer") for _ in range(3))
    ev = evaluate(Design(gpus=64), Workload(jobs=(Job("j", world_size=64, groups=(g,), ops=ops),)), samples=32)
    assert ev.p99_breakdown["ops"]["layer@g"] == pytest.approx(sum(o.exposed_in_p99_sample_s for o in ev.ops))


def test_cuts_kept_by_cabling_across_builds():
    """The cuts of a healthy fabric are found once per cabling: a rebuild (build caches emptied) gets the same cuts,
    equal to finding them afresh; 64 one-GPU hosts on 2 leaves of 32 make two islands of 32 GPUs, each leaving its
    leaf through 32 x 400 Gb/s (hand count)."""
    from dataclasses import replace

    from fabric.evaluate import bounds
    from fabric.evaluate.network_models import _HEALTHY_MODELS
    from fabric.topology import build_fabric
    from fabric.topology.build import clear_fabric_cache

    d = Design(gpus=64, gpus_per_node=1, tiers=2)
    bounds._CUTS_CACHE.clear()
    first = bounds.fabric_cuts(build_fabric(d))
    clear_fabric_cache()
    _HEALTHY_MODELS.clear()
    again_fab = build_fabric(d)
    assert bounds.fabric_cuts(again_fab) is first
    fresh = bounds.fabric_cuts(replace(again_fab, cache_key=""))      # no key: found afresh, never kept
    assert fresh is not first and len(fresh) == len(first) == 1
    assert np.array_equal(fresh[0].island_of_gpu, first[0].island_of_gpu)
    assert np.bincount(first[0].island_of_gpu).tolist() == [32, 32]
    assert first[0].capacity_bytes_per_s.tolist() == [32 * 400e9 / 8] * 2


def test_an_edited_catalog_never_reads_another_catalogs_cached_results():
    """Two catalogs whose switch of one name differs (64 ports, then 32) build one design's cabling into other
    fabrics (hand count: 64 one-GPU hosts on 2 leaves of 32 down and 32 up, then 4 leaves of 16 and 16): results
    kept by cabling (the healthy network model, cuts, bills) must not cross from one to the other, while a copy of
    equal content shares them."""
    import pickle
    from dataclasses import replace

    from fabric.catalog import default_catalog
    from fabric.catalog.catalog import Catalog
    from fabric.evaluate.network_models import _HEALTHY_MODELS
    from fabric.topology import build_fabric
    from fabric.topology.build import clear_fabric_cache

    cat = default_catalog()
    d = Design(gpus=64, gpus_per_node=1, tiers=2)
    sw = cat.switch(d.switch_model)
    assert sw.ports == 64
    tables = {n: dict(getattr(cat, n)) for n in ("switches", "nics", "transceivers", "cables", "gpus")}
    tables["switches"][d.switch_model] = replace(sw, ports=32)
    half = Catalog(**tables, source="half radix")
    a, b = build_fabric(d, cat), build_fabric(d, half)
    assert (a.structure["leaves"], b.structure["leaves"]) == (2, 4)
    assert a.cache_key != b.cache_key
    assert build_fabric(d, pickle.loads(pickle.dumps(cat))).cache_key == a.cache_key
    wl = one_op("all_to_all", GIB, 64)
    evaluate(d, wl, samples=32, catalog=cat)
    after = evaluate(d, wl, samples=32, catalog=half)
    clear_fabric_cache()
    _HEALTHY_MODELS.clear()
    fresh = evaluate(d, wl, samples=32, catalog=half)
    assert after.step_time_s == fresh.step_time_s
    assert after.cost_usd == fresh.cost_usd
