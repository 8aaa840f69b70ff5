"""Issue 28, point 3: hash polarization between ECMP tiers (``hash_correlation`` in the transport profile).

The expected distributions come from walking the built cabling hash value by hash value, written here independently
of fabric.evaluate: a switch picks member ``h mod (its member count)``, members ordered by the neighbour's node id
(leaf -> spine, spine -> core, core -> the destination pod's spines). With one ``h`` per flow at every tier
(polarized) a spine uses ``u2 / gcd(u1, u2)`` of its ``u2`` uplinks; with independent hashes every link of the pod.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from fabric.catalog.loader import load_catalog
from fabric.design import Design
from fabric.errors import FabricError
from fabric.evaluate import evaluate
from fabric.evaluate.ballsbins import weighted_max_load_cdf
from fabric.evaluate.flows import NetPhase
from fabric.evaluate.network import NetworkModel, phase_load, sample_phase_factor
from fabric.evaluate.polarization import mixture_groups, polarized_shares
from fabric.evaluate.transport import profile_for
from fabric.topology.build import build_fabric
from fabric.topology.fabric import LINK_KINDS
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

LS, SC = LINK_KINDS.index("leaf-spine"), LINK_KINDS.index("spine-core")
GIB = 1 << 30


@pytest.fixture(scope="module")
def cat(tmp_path_factory):
    """Small Ethernet switches (8 and 12 x 400G) for 3-tier fabrics of a few dozen hosts."""
    rows = [{"model": f"test-{p}x400", "vendor": "test", "fabric": "ethernet", "ports": p, "port_speed_gbps": 400,
             "price_usd": 1000, "power_w": 100, "latency_ns": 500, "source": "test"} for p in (8, 12)]
    p = tmp_path_factory.mktemp("c") / "c.json"
    p.write_text(json.dumps({"switches": rows}))
    return load_catalog(p)


def _design(switch: str, gpus: int, over, routing: str = "ecmp", tiers: int = 3) -> Design:
    return Design(name="polar", family="clos", gpus=gpus, gpus_per_node=1, scale_up_size=1, switch_model=switch,
                  nic_model="nic-eth-400", transport="roce", routing=routing, tiers=tiers, oversubscription=over,
                  qps_per_connection=1)


def _one_op(kind: str, size: int, ranks: int) -> Workload:
    g = ProcessGroup("g", ranks, role="dp")
    return Workload((Job("polar", world_size=ranks, groups=(g,), ops=(CommOp(kind, size, "g"),)),))


_MEMO: dict = {}


def _members(f, kind: int, end_a: int | None = None, end_b: int | None = None) -> list[int]:
    """Link ids of ``kind`` from ``end_a`` (or to ``end_b``), ordered by the other end's node id, then link id."""
    key = (id(f), kind, end_a, end_b)
    if key not in _MEMO:
        _MEMO[key] = _members_of(f, kind, end_a, end_b)
    return _MEMO[key]


def _members_of(f, kind, end_a, end_b) -> list[int]:
    out = []
    for lid in range(f.n_links):
        if f.link_kind[lid] != kind:
            continue
        if end_a is not None and f.link_a[lid] == end_a:
            out.append((int(f.link_b[lid]), lid))
        if end_b is not None and f.link_b[lid] == end_b:
            out.append((int(f.link_a[lid]), lid))
    return [lid for _, lid in sorted(out)]


def _walk(f, src_leaf: int, dst_pod_spines: set, h_leaf: int, h_spine: int, h_core: int) -> tuple[int, int]:
    """(spine -> core link, core -> destination-pod link) of a flow from ``src_leaf`` whose leaf, spine and core
    hash to ``h_leaf``, ``h_spine``, ``h_core`` (equal when polarized)."""
    up1 = _members(f, LS, end_a=src_leaf)
    spine = int(f.link_b[up1[h_leaf % len(up1)]])
    up2 = _members(f, SC, end_a=spine)
    up = up2[h_spine % len(up2)]
    core = int(f.link_b[up])
    into = [lid for lid in _members(f, SC, end_b=core) if int(f.link_a[lid]) in dst_pod_spines]
    return up, into[h_core % len(into)]


def _hand_case(cat):
    """72 single-GPU hosts on 12-port switches, 3 tiers at 1:1 (leaf) and 1:2 (spine): u1 = 6 leaf uplinks,
    u2 = 4 spine uplinks, gcd 2, so a polarized spine uses 2 of its 4 uplinks: 12 of the pod's 24 core links.
    Five flows of equal size leave pod 0 from five of its leaves for pod 1 (GPUs 0..47 sit in pod 0, 6 per leaf)."""
    f = build_fabric(_design("test-12x400", 72, (1, 2)), cat)
    s = f.structure
    assert (s["leaf_up"], s["spine_uplinks"], s["spines_per_pod"], s["pods"]) == (6, 4, 6, 2)
    src = np.array([0, 6, 12, 18, 24])
    dst = np.array([48, 54, 60, 66, 49])
    return f, src, dst


def _src_leaves(f, src):
    return [int(f.nic_ports[f.gpu_nics[g, 0] - f.nic_base, 0]) for g in src]


def _dst_spines(f, dst):
    leaf = int(f.nic_ports[f.gpu_nics[dst[0], 0] - f.nic_base, 0])
    return {int(f.link_b[lid]) for lid in _members(f, LS, end_a=leaf)}


def _pod_links(f, src):
    """The core-facing links of the source pod (their spines are the first source leaf's)."""
    spines = {int(f.link_b[lid]) for lid in _members(f, LS, end_a=_src_leaves(f, src)[0])}
    return [lid for sp in sorted(spines) for lid in _members(f, SC, end_a=sp)]


def _sampled(f, src, dst, rho: float, samples: int, routing: str = "ecmp", seed: int = 0):
    """Per pod-core kind: the evaluator's busiest link of the hand case, in flows, per sample."""
    model = NetworkModel.build(f)
    ph = NetPhase(src, dst, np.ones(src.size), 1)
    load = phase_load(ph, model, qps=1, pxn=False, routing=routing, samples=samples)
    _, per_class = sample_phase_factor(load, model, routing, 1.0, 0.0, 0.0, np.random.default_rng(seed), samples,
                                       hash_correlation=rho)
    out = {}
    for c, b in zip(load.classes, per_class):
        if c.kind.startswith("pod core"):
            assert c.k == src.size and c.members == 1
            out[c.kind] = b / c.ball
    return out


def _exact_polarized(f, src, dst) -> dict:
    """P(busiest link = m) for each pod-core kind, every flow polarized: all hash values of all flows."""
    leaves, spines = _src_leaves(f, src), _dst_spines(f, dst)
    H = 1
    for n in (6, 4, 6):                                 # u1, u2 and a core's links into a pod (24 / 4 cores)
        H = H * n // math.gcd(H, n)
    paths = np.array([[_walk(f, leaf, spines, h, h, h) for h in range(H)] for leaf in leaves])  # (flow, h, side)
    combos = np.array(list(itertools.product(range(H), repeat=len(leaves))))
    dist = {}
    for side, kind in enumerate(("pod core uplinks", "pod core downlinks")):
        busiest = _busiest(paths[np.arange(len(leaves)), combos, side])
        dist[kind] = {int(m): int(c) for m, c in zip(*np.unique(busiest, return_counts=True))}
    total = H ** len(leaves)
    return {k: {m: c / total for m, c in v.items()} for k, v in dist.items()}


def _busiest(ids: np.ndarray) -> np.ndarray:
    """Per row: the largest number of equal entries (flows on one link)."""
    srt = np.sort(ids, axis=1)
    best = np.ones(ids.shape[0])
    run = np.ones(ids.shape[0])
    for j in range(1, srt.shape[1]):
        run = np.where(srt[:, j] == srt[:, j - 1], run + 1, 1)
        best = np.maximum(best, run)
    return best


def _monte_carlo_mixture(f, src, dst, rho: float, trials: int, seed: int = 1) -> dict:
    """Busiest link (flows) per trial: each flow polarized with probability rho (one hash at every tier), else
    hashed independently at the leaf, the spine and the core."""
    leaves, spines = _src_leaves(f, src), _dst_spines(f, dst)
    H = 1 << 20
    rng = np.random.default_rng(seed)
    table = {leaf: {} for leaf in leaves}
    out = {}
    pol = rng.random((trials, len(leaves))) < rho
    hs = rng.integers(0, H, (trials, len(leaves), 3))
    hs[pol] = hs[pol][:, :1]                             # polarized: the leaf's hash at every tier
    up_id, dn_id = np.zeros((trials, len(leaves)), np.int64), np.zeros((trials, len(leaves)), np.int64)
    for i, leaf in enumerate(leaves):
        # the walk depends on h only modulo 12 at every tier (the member counts are 6, 4 and 6)
        for key in itertools.product(range(12), repeat=3):
            table[leaf][key] = _walk(f, leaf, spines, *key)
        keys = hs[:, i, :] % 12
        for t in range(trials):
            up_id[t, i], dn_id[t, i] = table[leaf][tuple(keys[t])]
    for kind, ids in (("pod core uplinks", up_id), ("pod core downlinks", dn_id)):
        out[kind] = _busiest(ids)
    return out


# ---------------------------------------------------------------------------------------------- the u2/gcd rule


@pytest.mark.parametrize("switch, gpus, over, used, total", [
    ("test-8x400", 32, (1, 1), 4, 16),       # u1 = u2 = 4: gcd 4, one uplink of 4 per spine, 4 spines
    ("test-12x400", 72, (1, 2), 12, 24),     # u1 = 6, u2 = 4: gcd 2, two of 4 per spine, 6 spines
    ("test-12x400", 96, (1, 1), 6, 36),      # u1 = u2 = 6: gcd 6, one of 6 per spine, 6 spines
])
def test_fully_polarized_spines_use_u2_over_gcd_of_their_uplinks(cat, switch, gpus, over, used, total):
    f = build_fabric(_design(switch, gpus, over), cat)
    s = f.structure
    u1, u2, spines = s["leaf_up"], s["spine_uplinks"], s["spines_per_pod"]
    assert used == spines * (u2 // math.gcd(u1, u2)) and total == spines * u2
    up = polarized_shares(f)["pod core uplinks"]
    assert up.size == total
    assert np.count_nonzero(up) == used
    assert np.allclose(up[up > 0], 1.0 / used) and up.sum() == pytest.approx(1.0)


def test_unequal_bin_maximum_matches_enumeration():
    """5 balls on 4 bins of probabilities 1/8, 1/8, 3/8, 3/8: every one of the 4^5 outcomes weighed."""
    p = np.array([0.125, 0.125, 0.375, 0.375])
    dist = {}
    for o in itertools.product(range(4), repeat=5):
        m = max(o.count(x) for x in set(o))
        dist[m] = dist.get(m, 0.0) + float(np.prod(p[list(o)]))
    off, cdf = weighted_max_load_cdf(5, ((2, 0.125), (2, 0.375)))
    for m in range(1, 6):
        want = sum(v for k, v in dist.items() if k <= m)
        got = 0.0 if m < off else float(cdf[min(m - off, cdf.size - 1)])
        assert got == pytest.approx(want, abs=1e-9)


# -------------------------------------------------------------------- the evaluator against the brute force


def test_rho_one_matches_every_hash_value_of_every_flow(cat):
    """Every flow polarized: the distribution of the busiest core-facing link (up out of pod 0, down into pod 1)
    over all 12^5 hash values of the five flows, against the evaluator's draws (20,000 samples: 0.015 on each
    probability is over 4 standard errors)."""
    f, src, dst = _hand_case(cat)
    exact = _exact_polarized(f, src, dst)
    got = _sampled(f, src, dst, 1.0, 20000)
    for kind in ("pod core uplinks", "pod core downlinks"):
        for m in range(1, 6):
            assert float(np.mean(got[kind] == m)) == pytest.approx(exact[kind].get(m, 0.0), abs=0.015), (kind, m)
        mean = sum(m * p for m, p in exact[kind].items())
        assert float(np.mean(got[kind])) == pytest.approx(mean, rel=0.01)
    # polarized: 5 flows on 12 of 24 links collide more than on 24 (independent, rho = 0)
    base = _sampled(f, src, dst, 0.0, 20000)
    assert np.mean(got["pod core uplinks"]) > np.mean(base["pod core uplinks"]) + 0.1


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_intermediate_rho_matches_a_monte_carlo_of_the_mixture(cat, rho):
    """Each flow polarized with probability rho, else hashed afresh at every tier: 40,000 brute-force trials
    against 20,000 evaluator draws, each probability within 0.02 and the mean within 1.5 %."""
    f, src, dst = _hand_case(cat)
    mc = _monte_carlo_mixture(f, src, dst, rho, 40000)
    got = _sampled(f, src, dst, rho, 20000)
    for kind in ("pod core uplinks", "pod core downlinks"):
        for m in range(1, 6):
            assert float(np.mean(got[kind] == m)) == pytest.approx(float(np.mean(mc[kind] == m)), abs=0.02)
        assert float(np.mean(got[kind])) == pytest.approx(float(np.mean(mc[kind])), rel=0.015)
    # and the exact mixture distribution the evaluator draws from, against the same trials
    n = len(_pod_links(f, src))
    off, cdf = weighted_max_load_cdf(5, mixture_groups(polarized_shares(f)["pod core uplinks"], n, rho))
    for m in range(off, 6):
        assert float(cdf[min(m - off, cdf.size - 1)]) == pytest.approx(
            float(np.mean(mc["pod core uplinks"] <= m)), abs=0.01)


# ----------------------------------------------------------------------------------- evaluate(), end to end


def _p(ev):
    return np.asarray(ev.step_samples_s)


def test_rho_zero_is_the_evaluator_before_polarization(cat):
    """The default profile and an explicit hash_correlation of 0 give every sample of today's evaluator (the
    numbers pinned here were computed on the code before this change, commit 9ed6f87)."""
    d = _design("test-12x400", 72, (1, 2))
    wl = _one_op("all_to_all", GIB, 72)
    default = evaluate(d, wl, catalog=cat, seed=0, samples=64)
    zero = evaluate(d, wl, catalog=cat, seed=0, samples=64, transport_overrides={"hash_correlation": 0.0})
    assert np.array_equal(_p(default), _p(zero))
    assert default.step_time_s["p50"] == pytest.approx(PINNED_P50, rel=1e-12)
    assert default.step_time_s["p99"] == pytest.approx(PINNED_P99, rel=1e-12)
    assert float(np.sum(_p(default))) == pytest.approx(PINNED_SUM, rel=1e-12)


#: p50, p99 and the sum of the 64 samples of test_rho_zero_is_the_evaluator_before_polarization, computed on commit
#: 9ed6f87 (before hash polarization)
PINNED_P50 = 0.026991265437352394
PINNED_P99 = 0.030164261371158557
PINNED_SUM = 1.7471135627801513


def test_penalty_grows_with_rho(cat):
    """An all-to-all across both pods on the hand case's fabric: mean step time rises with every step of rho."""
    d = _design("test-12x400", 72, (1, 2))
    wl = _one_op("all_to_all", GIB, 72)
    means = [float(np.mean(_p(evaluate(d, wl, catalog=cat, seed=0, samples=128,
                                       transport_overrides={"hash_correlation": r}))))
             for r in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert all(b > a for a, b in zip(means, means[1:])), means
    assert means[-1] > 1.2 * means[0]


@pytest.mark.parametrize("routing", ["adaptive", "spray", "computed"])
def test_routings_that_do_not_hash_are_untouched(cat, routing):
    d = _design("test-12x400", 72, (1, 2), routing=routing)
    wl = _one_op("all_to_all", GIB, 72)
    a = evaluate(d, wl, catalog=cat, seed=0, samples=64)
    b = evaluate(d, wl, catalog=cat, seed=0, samples=64, transport_overrides={"hash_correlation": 1.0})
    assert np.array_equal(_p(a), _p(b))


def test_two_tier_fabrics_are_untouched(cat):
    """One hashing tier above the leaves' (no core): nothing to polarize, every sample equal."""
    d = Design(name="two", family="clos", gpus=256, gpus_per_node=8, nic_model="nic-eth-400",
               switch_model="eth-25t-64x400", transport="roce", routing="ecmp", qps_per_connection=1)
    wl = _one_op("all_to_all", GIB, 256)
    f = build_fabric(d)
    assert f.tiers == 2 and polarized_shares(f) == {}
    a = evaluate(d, wl, seed=0, samples=64)
    b = evaluate(d, wl, seed=0, samples=64, transport_overrides={"hash_correlation": 1.0})
    assert np.array_equal(_p(a), _p(b))


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "0.3", None, True, [0.5]])
def test_bad_hash_correlation_is_refused_by_name(cat, bad):
    d = _design("test-12x400", 72, (1, 2))
    assert profile_for(d, {"hash_correlation": 0.5}).hash_correlation == 0.5
    assert profile_for(d).hash_correlation == 0.0
    with pytest.raises(FabricError, match="hash_correlation must be .*between 0 and 1"):
        profile_for(d, {"hash_correlation": bad})
    with pytest.raises(FabricError, match="hash_correlation must be .*between 0 and 1"):
        evaluate(d, _one_op("all_reduce", GIB, 72), catalog=cat, samples=16,
                 transport_overrides={"hash_correlation": bad})


def test_a_calibration_file_carries_hash_correlation(tmp_path):
    """The way to set it from the CLI (`fabric evaluate --calibration FILE`): the file's overrides."""
    from fabric.calibrate import load_profile

    good = tmp_path / "polar.json"
    good.write_text(json.dumps({"overrides": {"hash_correlation": 0.28}, "transport": "roce"}))
    assert load_profile(good).overrides == {"hash_correlation": 0.28}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"overrides": {"hash_correlation": 2}, "transport": "roce"}))
    with pytest.raises(FabricError, match="hash_correlation must be between 0 and 1"):
        load_profile(bad)


def test_mixture_groups_by_hand():
    """4 of 16 links polarized (1/4 each): at rho 0.5 a ball lands on one of those with 0.5/4 + 0.5/16 = 5/32 and
    on another with 1/32; with a link of the pod failed (15 left) the profile keeps 4 polarized links of 11 + 4."""
    shares = np.array([0.25] * 4 + [0.0] * 12)
    assert mixture_groups(shares, 16, 0.5) == ((12, 1 / 32), (4, 5 / 32))
    assert mixture_groups(shares, 16, 0.0) == ((12, 1 / 16), (4, 1 / 16))
    assert mixture_groups(shares, 15, 1.0) == ((11, 0.0), (4, 0.25))
    groups = mixture_groups(shares, 15, 0.3)
    assert sum(c for c, _ in groups) == 15 and sum(c * p for c, p in groups) == pytest.approx(1.0)
