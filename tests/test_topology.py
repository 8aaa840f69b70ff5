"""Topology builders against published counts and closed forms (facts.md section 4)."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fabric.catalog import load_catalog
from fabric.cli.main import main
from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.errors import DesignError, FabricError
from fabric.topology import build_fabric
from fabric.topology.graph import to_networkx

TEST_RADICES = (4, 6, 8, 12, 16, 24, 32)


@pytest.fixture(scope="module")
def small_catalog(tmp_path_factory):
    """The default catalog plus InfiniBand switches of small radix, so closed forms can be checked exactly."""
    rows = [{"model": f"test-k{k}", "vendor": "test", "fabric": "infiniband", "ports": k, "port_speed_gbps": 400,
             "price_usd": 1000 * k, "power_w": 10 * k, "latency_ns": 100, "source": "test switch"}
            for k in TEST_RADICES]
    path = tmp_path_factory.mktemp("cat") / "small.json"
    path.write_text(json.dumps({"switches": rows}))
    return load_catalog(path)


def _flat(k: int, **kw) -> Design:
    """One GPU (and one NIC port) per node, so endpoint counts equal GPU counts."""
    base = dict(gpus_per_node=1, switch_model=f"test-k{k}", nic_model="nic-cx7-400")
    base.update(kw)
    return Design(**base)


# ----------------------------------------------------------------- published reference build


@pytest.mark.parametrize("sus,gpus,leaf,spine,cables", [
    (1, 248, 8, 4, 256), (2, 504, 16, 8, 512), (3, 760, 24, 16, 768), (4, 1016, 32, 16, 1024)])
def test_dgx_h100_superpod_counts(sus, gpus, leaf, spine, cables):
    """NVIDIA DGX H100 SuperPOD reference architecture, Table 4 (facts.md section 4)."""
    f = build_fabric(preset_design("dgx-h100-superpod", gpus))
    assert f.switch_counts() == {"leaf": leaf, "spine": spine}
    assert f.link_counts()["leaf-spine"] == cables
    assert f.link_counts()["nic-leaf"] == gpus            # one 400G NIC per GPU, one per rail
    assert f.structure["scalable_units"] == sus
    assert f.switch_ports_used().max() <= 64


# ----------------------------------------------------------------- closed forms


@pytest.mark.parametrize("k", [4, 8, 16, 24])
def test_k_ary_fat_tree(k, small_catalog):
    """k-ary fat tree: k^3/4 hosts, k^2/2 edge, k^2/2 aggregation, k^2/4 core (Al-Fares et al. 2008)."""
    hosts = k ** 3 // 4
    f = build_fabric(_flat(k, family="clos", gpus=hosts, tiers=3), small_catalog)
    assert f.switch_counts() == {"leaf": k * k // 2, "spine": k * k // 2, "core": k * k // 4}
    assert f.link_counts() == {"nic-leaf": hosts, "leaf-spine": hosts, "spine-core": hosts}
    assert (f.switch_ports_used() == k).all()
    with pytest.raises(DesignError, match=f"3-tier Clos with radix {k} holds at most {hosts:,} endpoints at 1:1"):
        build_fabric(_flat(k, family="clos", gpus=hosts + 1, tiers=3), small_catalog)


@pytest.mark.parametrize("k,o", [(16, 1), (16, 3), (16, 7), (32, 1), (32, 3), (8, 1)])
def test_two_tier_clos_maximum(k, o, small_catalog):
    """2-tier Clos: R^2 o/(1+o) endpoints; leaves N(1+o)/(oR), spines N/(oR)."""
    n = k * k * o // (1 + o)
    f = build_fabric(_flat(k, family="clos", gpus=n, oversubscription=(o,)), small_catalog)
    assert f.tiers == 2
    assert f.switch_counts() == {"leaf": n * (1 + o) // (o * k), "spine": n // (o * k)}
    with pytest.raises(DesignError, match=f"2-tier Clos with radix {k} holds at most {n:,} endpoints at {o}:1"):
        build_fabric(_flat(k, family="clos", gpus=n + 1, tiers=2, oversubscription=(o,)), small_catalog)
    assert build_fabric(_flat(k, family="clos", gpus=n + 1, oversubscription=(o,)), small_catalog).tiers == 3


@pytest.mark.parametrize("k,o1,o2", [(16, 3, 1), (8, 1, 1), (16, 1, 3), (12, 2, 2)])
def test_three_tier_clos_maximum(k, o1, o2, small_catalog):
    """3-tier Clos: R^3 o1 o2/((1+o1)(1+o2)); leaves N(1+o1)/(o1 R), spines N(1+o2)/(o1 o2 R), cores N/(o1 o2 R)."""
    n = k ** 3 * o1 * o2 // ((1 + o1) * (1 + o2))
    f = build_fabric(_flat(k, family="clos", gpus=n, oversubscription=(o1, o2)), small_catalog)
    assert f.tiers == 3
    assert f.switch_counts() == {"leaf": n * (1 + o1) // (o1 * k), "spine": n * (1 + o2) // (o1 * o2 * k),
                                 "core": n // (o1 * o2 * k)}
    with pytest.raises(DesignError, match="3-tier Clos"):
        build_fabric(_flat(k, family="clos", gpus=n + 1, oversubscription=(o1, o2)), small_catalog)


@pytest.mark.parametrize("k", [7, 11, 15, 23])
def test_dragonfly_balanced_maximum(k, small_catalog):
    """Balanced dragonfly a = 2p = 2h: N = a p (a h + 1), g = a h + 1 groups, one global link per group pair."""
    k_cat = min(r for r in TEST_RADICES if r >= k)
    p = (k + 1) // 4
    a, h = 2 * p, p
    assert p + a - 1 + h <= k_cat
    n = a * p * (a * h + 1)
    d = _flat(k_cat, family="dragonfly", gpus=n, dragonfly_terminals=p, dragonfly_routers=a, dragonfly_globals=h)
    f = build_fabric(d, small_catalog)
    g = a * h + 1
    assert f.switch_counts() == {"router": a * g}
    assert f.link_counts() == {"nic-leaf": n, "router-local": g * a * (a - 1) // 2, "router-global": g * (g - 1) // 2}
    assert (f.switch_ports_used() == p + a - 1 + h).all()
    with pytest.raises(DesignError, match=f"holds at most {n:,} endpoints"):
        build_fabric(d.replace(gpus=n + 1), small_catalog)


def test_dragonfly_default_is_balanced_for_radix_64():
    f = build_fabric(Design(family="dragonfly", gpus=8192))
    s = f.structure
    assert (s["terminals_per_router"], s["routers_per_group"], s["globals_per_router"]) == (16, 32, 16)
    assert s["groups"] == 8192 // (32 * 16)


def test_partial_spine_rounding_uses_divisor(small_catalog):
    """Three full leaves of 8 uplinks on 16-port spines need 24/16 -> 2 spines, and 2 divides 8."""
    f = build_fabric(_flat(16, family="clos", gpus=24, tiers=2), small_catalog)
    assert f.switch_counts() == {"leaf": 3, "spine": 2}
    assert f.structure["leaf_spine_bundle"] == 4
    # five leaves: 40 uplinks need 3 spines; 3 does not divide 8 -> rounded up to 4
    f = build_fabric(_flat(16, family="clos", gpus=40, tiers=2), small_catalog)
    assert f.switch_counts() == {"leaf": 5, "spine": 4}


def test_rail_optimized_wiring():
    f = build_fabric(Design(family="rail_optimized", gpus=512))
    # NIC i of every node of scalable unit s goes to leaf s*8+i
    leaves = f.nic_ports[:, 0] - f.switch_base
    node = np.arange(f.n_nics) // 8
    rail = np.arange(f.n_nics) % 8
    assert (leaves == (node // 32) * 8 + rail).all()


def test_rail_only_has_no_cross_rail_switch_path():
    f = build_fabric(Design(family="rail_only", gpus=256))
    assert f.switch_counts() == {"leaf": 8}
    g = to_networkx(f, include_scale_up=False)
    g.remove_nodes_from([n for n in list(g) if g.nodes[n]["kind"] == "gpu"])
    assert nx.number_connected_components(g) == 8     # one island per rail without NVLink
    assert nx.is_connected(to_networkx(f))            # NVLink joins the rails


def test_dual_plane_splits_each_nic():
    d = Design(family="rail_optimized", gpus=1024, nic_model="nic-2x200-dual", switch_model="eth-51t-64x800",
               transport="roce", planes=2)
    f = build_fabric(d)
    assert f.link_speed_bps == 200e9
    planes = f.node_plane[f.nic_ports]
    assert (planes[:, 0] == 0).all() and (planes[:, 1] == 1).all()
    # per plane: 128 nodes x 8 rails at 200G on 256-port (51.2T) switches -> one 128-node unit: 8 leaves of
    # 128 down / 128 up, and 8 x 128 uplinks over 256-port spines -> 4 spines
    assert f.switch_counts() == {"leaf": 16, "spine": 8}
    single = build_fabric(d.replace(planes=1))
    # each plane carries one port of every NIC: half the endpoint links of the single-plane two-port build
    assert f.link_counts()["nic-leaf"] == single.link_counts()["nic-leaf"] == 2048
    per_plane = np.bincount(f.node_plane[f.switch_base:f.nvswitch_base])
    assert per_plane[0] == per_plane[1]



def test_switch_labels_count_within_tier_and_plane():
    """``node_label`` numbers a switch among the switches of its tier and plane: the dual-plane fabric above has
    8 leaves and 4 spines per plane, plane 0's switches first (leaves, then spines), so the first switch of plane 1
    is ``leaf0@p1`` and the last one ``spine3@p1``; GPUs, NICs and NVSwitches keep their own numbering."""
    d = Design(family="rail_optimized", gpus=1024, nic_model="nic-2x200-dual", switch_model="eth-51t-64x800",
               transport="roce", planes=2)
    f = build_fabric(d)
    sb = f.switch_base
    got = [f.node_label(n) for n in range(sb, f.nvswitch_base)]
    want = [f"leaf{i}@p0" for i in range(8)] + [f"spine{i}@p0" for i in range(4)] \
        + [f"leaf{i}@p1" for i in range(8)] + [f"spine{i}@p1" for i in range(4)]
    assert got == want
    assert f.node_label(5) == "gpu5" and f.node_label(f.nic_base + 3) == "nic3"
    assert f.node_label(f.nvswitch_base + 1) == "nvswitch1"
    one = build_fabric(d.replace(planes=1))
    assert one.node_label(one.switch_base + one.n_switches - 1) == f"spine{one.switch_counts()['spine'] - 1}"

def test_nvl72_scale_up_domain():
    f = build_fabric(Design(gpus=144, gpu_model="gb200-nvl72", gpus_per_node=4, scale_up_size=72,
                            switch_model="ib-xdr-144x800", nic_model="nic-cx8-800"))
    assert f.n_domains == 2
    nv = f.link_kind == 0
    assert nv.sum() == 144
    assert np.allclose(f.link_capacity_bps[nv], 7200e9)
    with pytest.raises(DesignError, match="NVLink domains of at most 8"):
        build_fabric(Design(gpus=64, scale_up_size=16))


def test_shared_nic_maps_two_gpus():
    f = build_fabric(Design(gpus=16, nics_per_gpu=0.5))
    assert f.n_nics == 8
    assert (f.gpu_nics[:, 0] - f.nic_base == np.arange(16) // 2).all()


# ----------------------------------------------------------------- properties


@st.composite
def designs(draw):
    family = draw(st.sampled_from(["clos", "rail_optimized", "rail_only", "dragonfly"]))
    k = draw(st.sampled_from([8, 12, 16]))
    gpn = draw(st.sampled_from([1, 2, 4]))
    nodes = draw(st.integers(1, 160))
    o1 = draw(st.sampled_from([1.0, 2.0, 3.0]))
    o2 = draw(st.sampled_from([1.0, 3.0]))
    tiers = draw(st.sampled_from([None, None, 2, 3]))
    if family == "dragonfly":
        return _flat(k, family=family, gpus=nodes * gpn, gpus_per_node=gpn)
    return _flat(k, family=family, gpus=nodes * gpn, gpus_per_node=gpn, oversubscription=(o1, o2), tiers=tiers)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(d=designs())
def test_random_designs_are_connected_within_radix(d, small_catalog):
    try:
        f = build_fabric(d, small_catalog)
    except DesignError:
        assume(False)
    radix = small_catalog.switch(d.switch_model).ports
    assert f.switch_ports_used().max() <= radix
    g = to_networkx(f)
    gpus = range(f.n_gpus)
    comp = nx.node_connected_component(g, 0)
    assert all(x in comp for x in gpus)
    # closed forms of the link counts
    s = f.structure
    links = f.link_counts()
    assert links["nic-leaf"] == f.n_nics          # one port per NIC, one plane
    if d.family in ("clos", "rail_optimized") and f.tiers >= 2:
        assert links["leaf-spine"] == s["leaves"] * s["leaf_up"]
        assert s["leaf_up"] * d.oversub(0) >= s["leaf_down"] * (1 if d.family == "rail_optimized" else 1) - 1e-9
    if f.tiers == 3 and d.family != "rail_only":
        assert links["spine-core"] == s["spines"] * s["spine_uplinks"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(d=designs(), extra=st.integers(1, 64))
def test_cost_and_counts_grow_with_gpus(d, extra, small_catalog):
    from fabric.cost import bill_of_materials

    bigger = d.replace(gpus=d.gpus + extra * d.gpus_per_node)
    try:
        fa, fb = build_fabric(d, small_catalog), build_fabric(bigger, small_catalog)
    except DesignError:
        assume(False)
    assume(fa.tiers == fb.tiers)
    ca, cb = fa.switch_counts(), fb.switch_counts()
    assert all(cb.get(t, 0) >= n for t, n in ca.items())
    ba, bb = bill_of_materials(fa, small_catalog), bill_of_materials(fb, small_catalog)
    assert bb.cost_usd >= ba.cost_usd and bb.power_w >= ba.power_w
    # cost is exactly the sum of counts times catalog prices
    assert ba.cost_usd == pytest.approx(sum(i.count * i.unit_price_usd for i in ba.items))


# ----------------------------------------------------------------- bad designs


@pytest.mark.parametrize("fields,needle", [
    ({"gpus": 0}, "at least one GPU"),
    ({"oversubscription": [0.2]}, "below 0.25"),        # issue 28: down:up 0.25-1 is allowed
    ({"oversubscription": [100]}, "not a usable fabric"),
    ({"family": "torus"}, "unknown value 'torus'"),
    ({"gpus": 12}, "not a whole number of 8-GPU nodes"),
    ({"switch_model": "nope"}, "unknown switch model 'nope'"),
    ({"gpus": 100000, "tiers": 3}, "3-tier Clos with radix 64 holds at most 65,536 endpoints at 1:1; got 100,000"),
    ({"switch_model": "ib-hdr-40x200", "nic_model": "nic-cx6-200", "gpu_model": "b200", "nics_per_gpu": 4,
      "gpus": 64}, "a node's 32 NIC ports do not fit on one leaf"),
    ({"switch_model": "ib-xdr-144x800", "nic_model": "nic-cx8-800", "gpus": 64},
     "NIC nic-cx8-800 (800G) cannot run at full speed on the h100-sxm host: it needs 800 Gb/s per GPU, the host's "
     "PCIe link feeds at most 400 Gb/s"),
    ({"colour": "red"}, "unknown design field(s) colour"),
    ({"spines": 64}, "design field 'spines': 64 spines, but a leaf has 32 uplinks and must reach every spine"),
    ({"rails_per_leaf": 2}, "only a rail_optimized fabric groups rails on a leaf"),
    ({"family": "rail_optimized", "rails_per_leaf": 3}, "'rails_per_leaf': 3 does not divide the 8 rails"),
    ({"family": "rail_optimized", "rails_per_leaf": 0}, "'rails_per_leaf': must be between 1 and 64"),
])
def test_bad_designs_give_one_line_errors(tmp_path, capsys, fields, needle):
    from fabric.design import design_from_dict

    path = tmp_path / "d.json"
    path.write_text(json.dumps(fields))
    assert main(["build", str(path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    with pytest.raises(FabricError) as exc:
        build_fabric(design_from_dict(fields))
    assert needle in str(exc.value)
    assert str(exc.value) in err


def test_build_json_output(capsys):
    assert main(["build", "--preset", "dgx-h100-superpod", "--gpus", "248", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["switches"] == {"leaf": 8, "spine": 4}
    assert out["links"] == {"nic-leaf": 248, "leaf-spine": 256}
    assert out["cables"] == {"fibre": 504}
    assert set(out) >= {"switches", "links", "cables", "transceivers", "cost_usd", "power_w", "items"}
    assert out["cost_usd"] == pytest.approx(sum(i["price_usd"] for i in out["items"]))


def test_storage_isolation_adds_a_priced_storage_network():
    from fabric.cost import bill_of_materials

    base = bill_of_materials(build_fabric(Design(gpus=1024)))
    iso = bill_of_materials(build_fabric(Design(gpus=1024, storage_isolation=True)))
    # 128 nodes: 128 x $2,200 dual-port NICs, 128/32 = 4 x $18,000 32 x 400G switches (64 x 200G, half down),
    # 128 x $120 200G DACs -- the cheapest Ethernet rows of the default catalog
    assert iso.cost_usd - base.cost_usd == pytest.approx(128 * 2200 + 4 * 18000 + 128 * 120)
