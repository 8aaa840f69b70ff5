"""Every switch tier is sized to the links it carries (issue: bills of materials an engineer would reject).

What is measured: the *fill* of a tier is the mean, over the tier's switches (all planes together), of
``Fabric.switch_ports_used()`` divided by the radix at the link speed (``structure["radix"]``): every link end on
the switch counts, NIC-facing, up and down alike, and so do ports kept for reserved node slots (the SuperPOD's UFM
node). The property: a tier's fill is at least one half, unless its switch count is at its *minimum*:

- leaves (routers for dragonfly): the fewest that hold the endpoints. Top-of-rack leaves (clos) and dragonfly
  routers hold whole nodes, ``floor(d1 / Q)`` nodes per leaf (``floor(p / Q)`` per router), so
  ``ceil(slots / that)``; a rail leaf takes one port of each of at most ``d1`` nodes, so rail families need
  ``Q x ceil(slots / d1)`` leaves (one leaf per rail when the rail fits one switch); one switch for a 1-tier
  Clos. ``d1`` is the leaf's downlink count at its oversubscription, ``Q`` a node's ports per plane (rails),
  ``slots`` nodes plus reserved slots; counts are per plane, times the planes.
- spines and cores: two switches in each independent upper layer (facts.md section 8: a single spine would make
  it a single point of failure), i.e. ``2 x pods`` spines (3 tiers) or ``2`` (2 tiers), and 2 cores, per plane
  (and per rail for rail-only networks); one when the switches below have a single uplink and cannot reach two.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.catalog import load_catalog
from fabric.cost import bill_of_materials
from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.errors import DesignError
from fabric.evaluate.network import NetworkModel
from fabric.topology import build_fabric
from fabric.topology import sizing
from fabric.topology.fabric import LINK_KINDS, SWITCH

LS, SC = LINK_KINDS.index("leaf-spine"), LINK_KINDS.index("spine-core")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """The default catalog plus a four-port 4 x 100G NIC (for 4-plane designs) and a 16-port test switch."""
    path = tmp_path_factory.mktemp("cat") / "extra.json"
    path.write_text(json.dumps({
        "nics": [{"model": "test-4x100", "fabric": "ethernet", "ports": 4, "port_speed_gbps": 100,
                  "price_usd": 2000, "power_w": 25, "latency_ns": 700, "source": "test NIC"}],
        "switches": [{"model": "test-k16", "vendor": "test", "fabric": "infiniband", "ports": 16,
                      "port_speed_gbps": 400, "price_usd": 16000, "power_w": 160, "latency_ns": 100,
                      "source": "test switch"}],
    }))
    return load_catalog(path)


def tier_fill(f) -> dict[str, tuple[int, float]]:
    """``{tier: (switches, mean ports used / radix)}`` over all planes."""
    used = f.switch_ports_used()
    tiers = f.node_tier[f.switch_base:f.switch_base + f.n_switches]
    radix = f.structure["radix"]
    return {f.tier_names[t]: (int((tiers == t).sum()), float(used[tiers == t].mean()) / radix)
            for t in np.unique(tiers)}


def tier_minimum(f, d: Design) -> dict[str, int]:
    """The counts a tier cannot go below (see the module docstring)."""
    s = f.structure
    radix, P = s["radix"], f.planes
    Q = s["endpoint_ports_per_node_per_plane"]
    slots = s["nodes"] + s["reserved_node_slots"]
    if d.family == "dragonfly":
        return {"router": math.ceil(slots / (s["terminals_per_router"] // Q))}
    d1, _ = sizing.split_ports(radix, d.oversub(0))
    rails = Q if d.family == "rail_only" else 1
    if d.family == "clos":
        leaves = 1 if f.tiers == 1 else math.ceil(slots / (d1 // Q))
    elif d.family == "rail_only" and f.tiers == 1:
        leaves = Q
    else:
        leaves = Q * math.ceil(slots / d1)
    out = {"leaf": P * leaves}
    if f.tiers >= 2:
        out["spine"] = P * rails * s.get("pods", 1) * min(sizing.MIN_UPPER_SWITCHES, s["leaf_up"])
    if f.tiers == 3:
        out["core"] = P * rails * min(sizing.MIN_UPPER_SWITCHES, s["pod_core_links"])
    return out


def check_evaluator_view(f) -> None:
    """What the evaluator reads stays consistent: every leaf has ``leaf_up`` uplinks and reaches every spine of
    its pod; every pod has ``spines_per_pod x spine_uplinks`` core-facing links and reaches every core of its layer."""
    s = f.structure
    if f.family == "dragonfly" or f.tiers < 2:
        return
    model = NetworkModel.build(f)
    sb = f.switch_base
    is_leaf = f.node_tier[sb:sb + f.n_switches] == 0
    assert (model.leaf_up[is_leaf] == s["leaf_up"]).all()
    ls = f.link_kind == LS
    la, lb = f.link_a[ls], f.link_b[ls]
    pairs = np.unique(np.stack([la, lb], 1), axis=0)
    # spines a leaf reaches = the spines of its pod (all spines of its plane / rail with 2 tiers)
    per_leaf = np.bincount(pairs[:, 0] - sb, minlength=f.n_switches)[is_leaf]
    assert (per_leaf == s["spines_per_pod" if f.tiers == 3 else "spines"] // (
        s["rails"] if f.family == "rail_only" and f.tiers == 2 else 1)).all()
    if f.tiers == 3:
        assert (model.pod_bins == s["spines_per_pod"] * s["spine_uplinks"]).all()
        sc = f.link_kind == SC
        pod = model.pod_of_switch[f.link_a[sc] - sb]
        pod_core = np.unique(np.stack([pod, f.link_b[sc]], 1), axis=0)
        cores_per_layer = s["cores"] // (s["rails"] if f.family == "rail_only" else 1)
        assert (np.bincount(pod_core[:, 0]) == cores_per_layer).all()


# (switch, NIC, GPU, transport): link speeds 100-800G, radix 16-512 at the link speed
HARDWARE = [
    ("ib-ndr-64x400", "nic-cx7-400", "h100-sxm", "infiniband"),       # 64 x 400G
    ("ib-ndr-64x400", "nic-cx6-200", "h100-sxm", "infiniband"),       # 128 x 200G (breakout)
    ("ib-hdr-40x200", "nic-cx6-200", "a100-sxm-80gb", "infiniband"),  # 40 x 200G
    ("ib-xdr-144x800", "nic-cx8-800", "b200", "infiniband"),          # 144 x 800G
    ("ib-xdr-144x800", "nic-cx7-400", "h100-sxm", "infiniband"),      # 288 x 400G
    ("test-k16", "nic-cx7-400", "h100-sxm", "infiniband"),            # 16 x 400G
    ("eth-51t-64x800", "nic-2x200-dual", "h100-sxm", "roce"),         # 256 x 200G, 1 or 2 planes
    ("eth-51t-64x800", "nic-eth-400", "h100-sxm", "roce"),            # 128 x 400G
    ("eth-25t-64x400", "nic-eth-400", "h100-sxm", "roce"),            # 64 x 400G
    ("eth-12t-32x400", "nic-eth-400", "h100-sxm", "roce"),            # 32 x 400G
    ("eth-51t-64x800", "test-4x100", "h100-sxm", "roce"),             # 512 x 100G, 1, 2 or 4 planes
]
NIC_PORTS = {"nic-2x200-dual": 2, "test-4x100": 4}


@st.composite
def sized_designs(draw):
    family = draw(st.sampled_from(["clos", "rail_optimized", "rail_only", "dragonfly"]))
    sw, nic, gpu, transport = draw(st.sampled_from(HARDWARE))
    # 1 node .. 16,384 nodes (131,072 GPUs), spread evenly over the scales (sampled_from draws uniformly; plain
    # integers would favour small values)
    scale = draw(st.sampled_from(range(15))) + draw(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.77, 0.99]))
    nodes = min(round(2 ** scale), 16384)
    kw = dict(family=family, switch_model=sw, nic_model=nic, gpu_model=gpu, transport=transport,
              gpus=nodes * 8, nics_per_gpu=draw(st.sampled_from([1.0, 1.0, 0.5])))
    if family != "dragonfly":
        ports = NIC_PORTS.get(nic, 1)
        kw.update(planes=draw(st.sampled_from([p for p in (1, 2, 4) if ports % p == 0])),
                  oversubscription=(draw(st.sampled_from([1.0, 2.0, 3.0, 7.0])),
                                    draw(st.sampled_from([1.0, 2.0, 7.0]))),
                  tiers=draw(st.sampled_from([None, None, 2, 3])),
                  reserved_node_slots=draw(st.sampled_from([0, 0, 1])))
    if family == "rail_optimized":
        kw["nodes_per_su"] = draw(st.sampled_from([None, 4, 8, 16, 32, 64]))
    return Design(**kw)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(d=sized_designs())
def test_every_tier_is_at_least_half_used_or_at_its_minimum(d, catalog):
    try:
        f = build_fabric(d, catalog)
    except DesignError:
        return                                  # too many endpoints for the radix and tiers: not this property
    fill, minimum = tier_fill(f), tier_minimum(f, d)
    assert set(fill) == set(minimum)
    for tier, (count, used) in fill.items():
        assert count >= minimum[tier], (tier, count, minimum[tier])
        assert used >= 0.5 or count == minimum[tier], (
            f"{tier}: {count} switches {used:.0%} used (minimum {minimum[tier]}); {f.structure}")
    check_evaluator_view(f)


# ----------------------------------------------------------------- the two designs of the issue, by hand


def _rail_zone(gpus: int) -> Design:
    """The rail-optimized 3-tier RoCE zone the meta-roce-zone preset built before issue 28 (which redrew the preset
    with rack switches, as its source does): the designs of the sizing issue these tests are about."""
    return Design(name="rail zone", family="rail_optimized", gpus=gpus, gpu_model="h100-sxm", gpus_per_node=8,
                  nic_model="nic-eth-400", switch_model="eth-25t-64x400", tiers=3, oversubscription=(1.0, 7.0),
                  routing="ecmp", qps_per_connection=4, transport="roce", placement="rail_aligned")


def test_meta_zone_cores_are_shared_by_spine_index_groups():
    """1,024 GPUs, rail-optimized, 64-port switches, 1:1 then 7:1: 32 leaves, 32 spines of 32 downlinks and
    ceil(32/7) = 5 uplinks: 160 spine-core links need ceil(160/64) = 3 cores (54 + 53 + 53 ports). Before: one
    core group per spine index, 32 cores using 5 ports each."""
    f = build_fabric(_rail_zone(1024))
    assert f.switch_counts() == {"leaf": 32, "spine": 32, "core": 3}
    assert f.link_counts()["spine-core"] == 160
    used = f.switch_ports_used()
    core = f.node_tier[f.switch_base:f.switch_base + f.n_switches] == 2
    assert sorted(used[core].tolist()) == [53, 53, 54]
    # each spine's 5 uplinks are dealt over the 3 cores (2 + 2 + 1): one core failure costs a spine 1 or 2 uplinks
    sc = f.link_kind == SC
    per_spine = np.unique(np.stack([f.link_a[sc], f.link_b[sc]], 1), axis=0)[:, 0]
    assert (np.bincount(per_spine - per_spine.min()) == 3).all()


def test_dual_plane_rail_leaf_takes_several_scalable_units():
    """131,072 GPUs, two planes of 200G on 64 x 800G switches (256 ports at 200G, 128 down at 1:1), 32-node units:
    a rail leaf takes rail r of 128 / 32 = 4 units. Per plane: 16,384 nodes x 8 rails / 128 = 1,024 leaves, all
    256 ports used; 3 tiers: pods of 128 leaves with 128 spines each (8 pods), 8 x 128 x 128 / 256 = 512 cores.
    Before: 8,192 leaves using 64 of 256 ports."""
    d = preset_design("alibaba-hpn", 131072).replace(tiers=3, nodes_per_su=32)
    f = build_fabric(d)
    assert f.structure["sus_per_leaf"] == 4 and f.structure["nodes_per_leaf"] == 128
    assert f.switch_counts() == {"leaf": 2048, "spine": 2048, "core": 1024}
    assert (f.switch_ports_used() == 256).all()
    # NIC r of every node of units 4k..4k+3 shares the rail-r leaf of plane p
    leaf0 = f.nic_ports[:, 0] - f.switch_base
    node = np.arange(f.n_nics) // 8
    assert (leaf0 == (node // 128) * 8 + np.arange(f.n_nics) % 8).all()


def test_two_tier_clos_never_has_a_single_spine():
    """8 nodes on 64-port leaves at 1:1: 2 leaves of 32 uplinks fit one spine's 64 ports; two are bought."""
    f = build_fabric(Design(gpus=64, tiers=2))
    assert f.switch_counts() == {"leaf": 2, "spine": 2}
    assert f.structure["leaf_spine_bundle"] == 16


def test_uneven_bundles_when_equal_ones_would_waste_the_spines(catalog):
    """4 leaves of 10 nodes (one 400G port each) on 16-port switches at 2:1: 10 down, ceil(10/2) = 5 uplinks.
    20 links need ceil(20/16) = 2 spines; equal bundles need a divisor of 5, i.e. 5 spines at 4/16 ports each.
    So 2 spines, bundles of 3 and 2 dealt round-robin: 10 links on each spine."""
    d = Design(gpus=40, gpus_per_node=1, switch_model="test-k16", oversubscription=(2.0,))
    f = build_fabric(d, catalog)
    assert f.switch_counts() == {"leaf": 4, "spine": 2}
    assert not f.structure["leaf_spine_even"]
    used = f.switch_ports_used()
    assert used[4:].tolist() == [10, 10]
    ls = f.link_kind == LS
    bundles = np.bincount((f.link_a[ls] - f.switch_base) * 2 + (f.link_b[ls] - f.switch_base - 4), minlength=8)
    assert sorted(bundles.tolist()) == [2, 2, 2, 2, 3, 3, 3, 3]


def test_one_group_dragonfly_buys_only_the_routers_it_needs():
    """8 nodes of 8 ports on radix-64 routers (p = 16 terminals: 2 nodes each): 4 routers in one group, not the
    balanced a = 32."""
    f = build_fabric(Design(family="dragonfly", gpus=64))
    assert f.switch_counts() == {"router": 4}
    assert f.link_counts() == {"nic-leaf": 64, "router-local": 6}


def test_capex_falls_with_the_empty_switches():
    """The issue's figures: 29 fewer cores at $35k (meta zone); 6,144 fewer leaves at $65k (dual plane)."""
    meta = bill_of_materials(build_fabric(_rail_zone(1024)))
    switch = {i.where: i.count for i in meta.items if i.category == "switch"}
    assert switch == {"leaf": 32, "spine": 32, "core": 3}
    assert meta.by_category()["switch"]["cost_usd"] == pytest.approx(67 * 35000)
    hpn = bill_of_materials(build_fabric(preset_design("alibaba-hpn", 131072).replace(tiers=3, nodes_per_su=32)))
    assert hpn.by_category()["switch"]["cost_usd"] == pytest.approx((2048 + 2048 + 1024) * 65000)
