"""Correlated ECMP paths and transports under spraying (issue 14, items 4 and 5).

The busiest link under ECMP is checked against a brute-force hashing of the built fabric's real cabling, written
here independently of fabric.evaluate.network: every flow x QP picks, at its source leaf, one uplink among those
whose spine reaches the destination leaf, then that spine picks one of its links to the destination leaf.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from fabric.design import Design, design_from_dict
from fabric.evaluate import evaluate
from fabric.evaluate.ballsbins import max_load_cdf, pair_max_load_cdf
from fabric.evaluate.flows import op_traffic
from fabric.evaluate.placement import group_instances, place_jobs
from fabric.evaluate.transport import PROFILES, reorder_factor
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS
from fabric.validate.packet import op_slice
from fabric.validate.scenarios import one_op_workload, table_design, validation_catalog, validation_design

GB = 1 << 30
LINE = 10e9 / 8                 # the validation catalog's 10 Gb/s links, bytes/s


@pytest.fixture(scope="module")
def cat():
    return validation_catalog()


# ------------------------------------------------------------------ brute force from the cabling


def _flows(design, wl, cat, algorithms=None):
    """The op's network flows (src GPU, dst GPU, bytes) as the evaluator places them."""
    f = build_fabric(design, cat)
    wl1, job, op = op_slice(wl, 0)
    g = job.group(op.group)
    gpus = place_jobs([job], f, design.placement, np.random.default_rng(0))[0][group_instances(g, job.world_size)]
    tr = op_traffic(op.kind, float(op.bytes), gpus, f.gpu_domain, algorithm=(algorithms or {}).get(op.kind))
    ph = tr.phases[0].expand()
    return f, ph.src_gpu, ph.dst_gpu, ph.bytes_per_byte * op.bytes


def _brute_force_busiest(fabric, src, dst, qps: int, draws: int, rng) -> np.ndarray:
    """Busiest directed leaf-spine link, in balls (flow x QP), in each of ``draws`` independent hash outcomes."""
    ls = np.flatnonzero(fabric.link_kind == LINK_KINDS.index("leaf-spine"))
    a, b = fabric.link_a[ls], fabric.link_b[ls]              # leaf end, spine end
    leaf_of = fabric.nic_ports[fabric.gpu_nics[:, 0] - fabric.nic_base, 0]
    L = ls.size
    loads = np.zeros((draws, 2 * L), np.int64)                # uplink direction, then downlink direction
    rows = np.arange(draws)
    for s, d in zip(src, dst):
        A, B = leaf_of[s], leaf_of[d]
        if A == B:
            continue
        ups = np.flatnonzero((a == A) & np.isin(b, b[a == B]))
        for _ in range(qps):
            up = ups[rng.integers(0, ups.size, draws)]
            down = np.empty(draws, np.int64)
            for spine in np.unique(b[up]):
                m = b[up] == spine
                links = np.flatnonzero((a == B) & (b == spine))
                down[m] = links[rng.integers(0, links.size, m.sum())]
            np.add.at(loads, (rows, up), 1)
            np.add.at(loads, (rows, L + down), 1)
    return np.maximum(loads.max(axis=1), qps)               # a NIC port carries one flow = qps balls


def _model_busiest(design, wl, cat, qps, flow_bytes, algorithms=None, seeds=40) -> np.ndarray:
    """The evaluator's busiest link in balls per sample (op sizes large enough that latency is negligible)."""
    d = design.replace(qps_per_connection=qps)
    wl1, _, _ = op_slice(wl, 0)
    out = []
    for seed in range(seeds):
        ev = evaluate(d, wl1, seed=seed, catalog=cat, algorithms=algorithms,
                      transport_overrides={"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0})
        out.append(np.asarray(ev.step_samples_s) / (flow_bytes / qps / LINE))
    return np.concatenate(out)


_SHIFT4 = dict(group_size=4, stride=4)
CASES = {
    # the audit's case: 16 hosts, 4 leaves x 4 spines, one uplink per spine, host i -> i + 4 (mod 16)
    "4 leaves x 4 spines, shift, 1 QP": (lambda: table_design("1:1"),
                                         lambda: one_op_workload("all_gather", 4 * GB, 16, **_SHIFT4),
                                         1, {"all_gather": "ring"}),
    # 8 leaves x 4 spines, every leaf sends to the next, 2 QPs per flow
    "8 leaves x 4 spines, shift, 2 QPs": (lambda: table_design("1:1", hosts=32),
                                          lambda: one_op_workload("all_gather", 4 * GB, 32, group_size=8, stride=4),
                                          2, {"all_gather": "ring"}),
    # 8 leaves x 4 spines, tree all-reduce: a leaf sends to its parent and children, which hear from others too
    "8 leaves x 4 spines, tree (tangled), 1 QP": (lambda: table_design("1:1", hosts=32),
                                                 lambda: one_op_workload("all_reduce", 1 * GB, 32, group_size=8,
                                                                         stride=4),
                                                 1, {"all_reduce": "tree"}),
    # a 2:1 leaf with 2 uplinks per spine bundle (8 hosts, 4 uplinks over 2 spines), 2 QPs per flow
    "2:1 leaves, bundles of 2, shift, 2 QPs": (lambda: validation_design(2, hosts=16),
                                               lambda: one_op_workload("all_gather", 4 * GB, 16, group_size=2,
                                                                       stride=8),
                                               2, {"all_gather": "ring"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ecmp_busiest_link_matches_brute_force_hashing_of_the_cabling(cat, case):
    make_design, make_wl, qps, alg = CASES[case]
    design, wl = make_design(), make_wl()
    f, src, dst, nbytes = _flows(design, wl, cat, alg)
    bf = _brute_force_busiest(f, src, dst, qps, 20_000, np.random.default_rng(1))
    model = np.rint(_model_busiest(design, wl, cat, qps, float(nbytes[0]), alg)).astype(int)
    assert model.mean() == pytest.approx(bf.mean(), rel=0.03)
    for k in range(min(bf.min(), model.min()), max(bf.max(), model.max()) + 1):
        assert (model == k).mean() == pytest.approx((bf == k).mean(), abs=0.03), f"P(busiest = {k} balls)"


def test_audit_case_has_the_closed_form_distribution(cat):
    """4 leaves x 4 spines, a shift: each leaf's 4 flows pick 4 spines and keep them down to the next leaf, so the
    busiest link is the largest of 4 independent maxima of 4 balls in 4 bins: P(max <= 2) = (204/256)^4 and
    P(max <= 3) = (252/256)^4 (204 and 252 of the 4^4 hash outcomes keep every spine at 2 and 3 flows at most).
    Drawing uplinks and downlinks independently gave 0.17/0.71/0.12 instead of 0.40/0.54/0.06."""
    p2, p3 = (204 / 256) ** 4, (252 / 256) ** 4
    design, wl = CASES["4 leaves x 4 spines, shift, 1 QP"][0](), CASES["4 leaves x 4 spines, shift, 1 QP"][1]()
    m = np.rint(_model_busiest(design, wl, cat, 1, 4 * GB * 3 / 4, {"all_gather": "ring"}, seeds=60)).astype(int)
    assert (m == 2).mean() == pytest.approx(p2, abs=0.02)
    assert (m == 3).mean() == pytest.approx(p3 - p2, abs=0.02)
    assert (m == 4).mean() == pytest.approx(1 - p3, abs=0.02)


@pytest.mark.parametrize("k,s,b", [(4, 2, 2), (3, 3, 2), (5, 2, 3)])
def test_pair_distribution_equals_exact_enumeration(k, s, b):
    """Every hash outcome of k balls: uplink one of s x b, then one of the spine's b links down, counted exactly."""
    counts = np.zeros(k + 1)
    for ups in itertools.product(range(s * b), repeat=k):
        for downs in itertools.product(range(b), repeat=k):
            up = np.bincount(ups, minlength=s * b)
            dn = np.bincount([(u // b) * b + x for u, x in zip(ups, downs)], minlength=s * b)
            counts[max(up.max(), dn.max())] += 1
    exact = np.cumsum(counts) / counts.sum()
    off, cdf = pair_max_load_cdf(k, s, b)
    for m in range(k + 1):
        got = 0.0 if m < off else (1.0 if m - off >= cdf.size else cdf[m - off])
        assert got == pytest.approx(exact[m], abs=1e-9)


def test_pair_distribution_with_one_link_per_spine_is_plain_balls_in_bins():
    for k, s in [(4, 4), (32, 8), (2000, 64)]:
        a, b = pair_max_load_cdf(k, s, 1), max_load_cdf(k, s)
        assert a.offset == b.offset and np.allclose(a.cdf, b.cdf)


def test_tangled_fallback_to_independent_groups_is_close_on_the_tree(cat, monkeypatch):
    """Past the path-sampling budget, tangled groups are drawn independently; on the 8-leaf tree that errs by
    a few percent on the mean (documented in docs/evaluator.md)."""
    import fabric.evaluate.network as network

    design, wl, qps, alg = (CASES["8 leaves x 4 spines, tree (tangled), 1 QP"][0](),
                            CASES["8 leaves x 4 spines, tree (tangled), 1 QP"][1](), 1, {"all_reduce": "tree"})
    f, src, dst, nbytes = _flows(design, wl, cat, alg)
    bf = _brute_force_busiest(f, src, dst, qps, 20_000, np.random.default_rng(2))
    monkeypatch.setattr(network, "PATH_SAMPLE_BUDGET", 0)
    model = _model_busiest(design, wl, cat, qps, float(nbytes[0]), alg, seeds=20)
    assert model.mean() == pytest.approx(bf.mean(), rel=0.03)


def test_faults_and_slow_spines_keep_the_paths_correlated(cat):
    """A failed spine leaves 3 of 4 spines: the shift's 4 flows per leaf then spread over 3 (exact: the busiest of 4
    independent maxima of 4 balls in 3 bins); a slow spine is sampled path by path and never beats the healthy one."""
    from fabric.evaluate import Scenario

    design, wl = table_design("1:1"), one_op_workload("all_gather", 4 * GB, 16, **_SHIFT4)
    wl1, _, _ = op_slice(wl, 0)
    flow = 4 * GB * 3 / 4
    ev = evaluate(design, wl1, Scenario(name="spine down", failed_spines=1), catalog=cat, samples=20_000,
                  algorithms={"all_gather": "ring"},
                  transport_overrides={"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0})
    m = np.rint(np.asarray(ev.step_samples_s) / (flow / LINE)).astype(int)
    off, cdf = max_load_cdf(4, 3)
    cdf4 = cdf ** 4
    for i, k in enumerate(range(off, off + cdf.size)):
        assert (m == k).mean() == pytest.approx(cdf4[i] - (cdf4[i - 1] if i else 0.0), abs=0.015)
    healthy = evaluate(design, wl1, catalog=cat, algorithms={"all_gather": "ring"}).step_time_s["mean"]
    slow = evaluate(design, wl1, Scenario(name="slow", slow_switches=1, slow_factor=0.5), catalog=cat,
                    algorithms={"all_gather": "ring"}).step_time_s["mean"]
    assert slow > healthy


# ------------------------------------------------------------------ transports and reordering


def _spray_time(cat, transport, uplinks="1:1", traffic="shift"):
    d = table_design(uplinks, routing="spray", transport=transport)
    wl = (one_op_workload("all_gather", 4 * GB, 16, **_SHIFT4) if traffic == "shift"
          else one_op_workload("all_to_all", 16 * GB, 16))
    wl1, _, _ = op_slice(wl, 0)
    return evaluate(d, wl1, catalog=cat, algorithms={"all_gather": "ring"},
                    transport_overrides={"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0}).step_time_s["mean"]


def test_spraying_costs_reorder_intolerant_transports_only(cat):
    """Cross-leaf shift at 1:1: four senders fill each leaf's 4 uplinks (rho = 1), one flow per NIC port: TCP takes
    reorder_slowdown = 2 x the even split, go-back-N RoCE 7 x, reorder-tolerant transports 1 x."""
    even = 4 * GB * 3 / 4 / LINE
    assert _spray_time(cat, "uec") == pytest.approx(even, rel=1e-3)
    assert _spray_time(cat, "tcp") == pytest.approx(2.0 * even, rel=1e-3)
    assert _spray_time(cat, "roce") == pytest.approx(7.0 * even, rel=1e-3)
    # 2:1 by fewer uplinks: 4 senders on 2 uplinks, which set the pace; 2 flows per link hide part of it:
    # 1 + (2 - 1) x (floor + (1 - floor) / 2) with floor 0.45
    even21 = 2 * even
    assert _spray_time(cat, "uec", "2:1 fewer uplinks") == pytest.approx(even21, rel=1e-3)
    assert _spray_time(cat, "tcp", "2:1 fewer uplinks") == pytest.approx(1.725 * even21, rel=1e-3)
    # an all-to-all at 1:1: the NICs set the pace (uplinks 80 % busy), 15 flows per port hide most of it
    a2a = 16 * GB * 15 / 16 / LINE
    assert _spray_time(cat, "uec", traffic="a2a") == pytest.approx(a2a, rel=1e-3)
    assert _spray_time(cat, "tcp", traffic="a2a") == pytest.approx((1 + (0.8 * 4 - 1) / 3 / 15) * a2a, rel=1e-3)


def test_reorder_factor_form():
    # one sender cannot queue behind itself: no reordering until a second sender shares the links
    assert reorder_factor(2.0, 0.25, 4, 1) == pytest.approx(1.0)
    assert reorder_factor(2.0, 0.5, 4, 1) == pytest.approx(1 + 1 / 3)
    assert reorder_factor(2.0, 0.5, 4, 2) == pytest.approx(1 + 1 / 6)     # NIC-bound: the port's other flow
    assert reorder_factor(2.0, 1.0, 4, 4, 4, 0.45) == pytest.approx(1 + 0.45 + 0.55 / 4)
    assert reorder_factor(2.0, 1.0, 2, 1, 24, 0.45) == pytest.approx(1 + 0.45 + 0.55 / 24)
    assert reorder_factor(2.0, 1.0, 1, 1) == pytest.approx(1.0)          # one path: nothing to reorder
    assert PROFILES["tcp"].reorder_slowdown == 2.0 and not PROFILES["tcp"].reorder_tolerant
    assert PROFILES["uec"].reorder_tolerant and PROFILES["infiniband"].reorder_tolerant


def test_evaluation_says_when_spraying_meets_a_reorder_intolerant_transport(cat):
    wl1, _, _ = op_slice(one_op_workload("all_gather", 1 << 20, 16, **_SHIFT4), 0)
    ev = evaluate(table_design("1:1", routing="spray", transport="roce"), wl1, catalog=cat)
    assert any("does not tolerate reordering" in n and "7x" in n for n in ev.notes)
    ev = evaluate(table_design("1:1", routing="spray", transport="uec"), wl1, catalog=cat)
    assert not any("reordering" in n for n in ev.notes)


def test_ecmp_is_not_charged_for_reordering(cat):
    d = table_design("1:1", routing="ecmp", transport="tcp")
    wl1, _, _ = op_slice(one_op_workload("all_gather", 4 * GB, 16, **_SHIFT4), 0)
    kw = dict(catalog=cat, algorithms={"all_gather": "ring"},
              transport_overrides={"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0})
    a = evaluate(d, wl1, **kw).step_samples_s
    b = evaluate(d.replace(transport="uec"), wl1, **kw).step_samples_s
    assert np.allclose(a, b)


def test_spray_on_roce_and_tcp_is_a_valid_design():
    for t in ("roce", "tcp"):
        assert Design(routing="spray", transport=t, switch_model="eth-51t-64x800",
                      nic_model="nic-eth-400").transport == t


def test_old_transport_name_still_loads_with_a_clear_message():
    with pytest.warns(FutureWarning, match="'spray_ethernet' is now called 'uec'"):
        d = design_from_dict({"transport": "spray_ethernet", "routing": "spray"})
    assert d.transport == "uec"
    from fabric.search import Constraints

    assert Constraints(transports=("roce", "spray_ethernet")).transports == ("roce", "uec")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Design(transport="uec")                      # the new name does not warn


def test_search_space_keeps_spraying_on_roce():
    from fabric.search import Constraints, DesignSpace

    c = Constraints(gpus=256, families=("clos",), routings=("spray",), transports=("roce",),
                    switch_models=("eth-51t-64x800",), nic_models=("nic-eth-400",), qps=(1,), planes=(1,),
                    nics_per_gpu=(1.0,), placements=("packed",), oversubscriptions=(1.0,))
    space = DesignSpace(c)
    design, repairs = space.decode(np.zeros(space.n_var, np.int64))
    assert design.transport == "roce" and design.routing == "spray"
    assert not any("transport" in r for r in repairs)


def test_spines_field_fixes_the_spine_count(cat):
    f = build_fabric(table_design("1:1"), cat)
    assert (f.structure["spines"], f.structure["leaf_spine_bundle"]) == (4, 1)
    f = build_fabric(table_design("1:1").replace(spines=None), cat)
    assert (f.structure["spines"], f.structure["leaf_spine_bundle"]) == (2, 2)


def test_sprayed_checkpoint_burst_pays_reordering_on_tcp():
    """A 4:1 leaf (48 NIC ports down, 12 up) sprays its checkpoint burst: the uplinks set the pace (4x the NIC
    time); TCP adds the bottleneck penalty with 4 flows per uplink: 1 + 0.45 + 0.55 / 4."""
    from fabric.evaluate.step import burst_duration
    from fabric.evaluate.transport import PROFILES

    d = Design(gpus=512, family="clos", oversubscription=(4.0,), routing="spray", transport="uec",
               switch_model="eth-51t-64x800", nic_model="nic-eth-400")
    fab = build_fabric(d)
    up, down = fab.structure["leaf_up"], fab.structure["leaf_down"]
    assert down == 4 * up
    uec = burst_duration(10e9, d, fab, PROFILES["uec"])
    tcp = burst_duration(10e9, d.replace(transport="tcp"), fab, PROFILES["tcp"])
    assert tcp / uec == pytest.approx((1 + 0.45 + 0.55 / 4) * 0.93 / 0.94, rel=1e-6)
