"""Uplink speed per tier (Design.uplink_gbps) and the lower bound that sees the fabric (issue 14, items 1 and 2).

Expected values are worked out here by hand from the cabling rules and facts.md section 1, never read back from
the code's own output.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.catalog import load_catalog
from fabric.cli.main import main
from fabric.cost import bill_of_materials
from fabric.design import Design, design_from_dict, design_to_dict
from fabric.errors import DesignError, FabricError
from fabric.evaluate import Scenario, evaluate
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload, dump_workload_json

GIB = 1 << 30
NIC_400G = 400e9 / 8           # bytes/s per direction of a 400G port
ETH = dict(switch_model="eth-51t-64x800", nic_model="nic-eth-400", transport="uec")


def one_op(kind: str, size: int, world: int, *, group_size=None, stride=1, compute=0.0, overlap=0.0, count=1.0):
    n = group_size or world
    g = ProcessGroup("g", n, "dp", rank_start=0, rank_stride=stride)
    job = Job(name="job", world_size=world, groups=(g,),
              ops=(CommOp(kind, size, "g", count_per_step=count, overlap_fraction=overlap),), compute_time_s=compute)
    return Workload(jobs=(job,))


@pytest.fixture(scope="module")
def cat(tmp_path_factory):
    """Small InfiniBand switches: 48 x 400G (2:1 -> 32 down, 16 up) and 8 x 400G (3-tier fabrics of few hosts)."""
    rows = [{"model": f"test-{p}x400", "vendor": "test", "fabric": "infiniband", "ports": p, "port_speed_gbps": 400,
             "price_usd": 1000, "power_w": 100, "latency_ns": 130, "source": "test"} for p in (48, 8)]
    p = tmp_path_factory.mktemp("c") / "c.json"
    p.write_text(json.dumps({"switches": rows}))
    return load_catalog(p)


@pytest.fixture(scope="module")
def vcat():
    from fabric.validate.scenarios import validation_catalog

    return validation_catalog()


# ------------------------------------------------------------------ item 1: the schema


def test_uplink_field_forms_and_defaults():
    assert Design().uplink_gbps is None                                   # existing designs unchanged
    assert Design(uplink_gbps=800).uplink_gbps == (800.0, 800.0)          # one number: both tiers
    assert Design(uplink_gbps=[800]).uplink_gbps == (800.0, 800.0)
    assert Design(uplink_gbps=[800, None]).uplink_gbps == (800.0, None)   # spine -> core at the NIC speed
    assert design_from_dict({"uplink_gbps": {"leaf": 800, "spine": 1600}}).uplink_gbps == (800.0, 1600.0)
    assert design_from_dict({"uplink_gbps": {"leaf": 800}}).uplink_gbps == (800.0, 800.0)
    d = Design(uplink_gbps=[800, 400])
    assert design_from_dict(design_to_dict(d)) == d
    assert design_to_dict(Design())["uplink_gbps"] is None


@pytest.mark.parametrize("value, needle", [
    (0, "must be in (0, 3200] Gb/s, got 0"), (-5, "got -5"), ("fast", "must be a number of Gb/s, got 'fast'"),
    ([1, 2, 3], "give one speed or two"), ({"core": 400}, "unknown tier(s) core"), ([], "got 0"),
    (float("nan"), "must be a number"), (True, "must be a number"),
])
def test_bad_uplink_values_are_rejected_by_field(value, needle):
    with pytest.raises(DesignError) as err:
        Design(uplink_gbps=value)
    assert "design field 'uplink_gbps'" in str(err.value) and needle in str(err.value)


def test_uplink_speeds_the_switch_cannot_run_are_rejected():
    base = Design(gpus=256, **ETH)
    for speed, why in ((300, "not a breakout of its ports"), (1600, "faster than its ports"),
                       (50, "not a breakout of its ports")):   # 800G ports break out into 800/400/200/100G only
        with pytest.raises(DesignError) as err:
            build_fabric(base.replace(uplink_gbps=speed))
        msg = str(err.value)
        assert f"cannot run {speed}G leaf uplinks ({why})" in msg and "800G, 400G, 200G, 100G" in msg
    with pytest.raises(DesignError, match="cannot run 800G leaf uplinks"):   # 400G ports cannot run 800G
        build_fabric(Design(gpus=256, uplink_gbps=800))
    with pytest.raises(DesignError, match="dragonfly router-to-router links run at the NIC port speed"):
        Design(family="dragonfly", uplink_gbps=800)
    for speed in (800, 200, 100):
        build_fabric(base.replace(uplink_gbps=speed))                        # every breakout works


def test_bad_uplink_speed_is_one_line_in_the_cli(tmp_path, capsys):
    p = tmp_path / "d.json"
    p.write_text(json.dumps({"gpus": 256, **ETH, "uplink_gbps": 300}))
    assert main(["build", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "uplink_gbps" in err and "300G" in err


# ------------------------------------------------------------------ item 1: cabling and the bill of materials


def test_800g_uplinks_halve_the_uplinks_and_buy_800g_optics():
    """1,024 GPUs on 64 x 800G switches with 400G NICs, 1:1, top-of-rack Clos.

    By hand: at 400G a switch has 128 ports; 1:1 keeps 64 down (8 nodes of 8 GPUs) and 64 up, so 16 leaves and
    1,024 leaf-spine links on 8 spines (128 ports each). With 800G uplinks the 64 x 400G down take 32 ports and
    32 x 800G up the other 32: the same 25.6 Tb/s up, half the links (512), on 8 spines of 64 x 800G.
    Optics: at 400G, twin-port 2 x 400G modules: 64 ports / 2 = 32 per leaf (512) and 128 / 2 = 64 per spine
    (512); at 800G one single-port 800G module per link end: 512 + 512; fibres: one per link."""
    d400 = Design(gpus=1024, **ETH)
    d800 = d400.replace(uplink_gbps=800)
    f400, f800 = build_fabric(d400), build_fabric(d800)
    s4, s8 = f400.structure, f800.structure
    assert (s4["leaves"], s4["leaf_down"], s4["leaf_up"], s4["spines"]) == (16, 64, 64, 8)
    assert (s8["leaves"], s8["leaf_down"], s8["leaf_up"], s8["spines"]) == (16, 64, 32, 8)
    assert f800.link_counts()["leaf-spine"] == 512 and f400.link_counts()["leaf-spine"] == 1024
    assert f800.link_speeds_gbps() == {"nic-leaf": 400.0, "leaf-spine": 800.0}
    ls = f800.link_kind == 3
    assert np.all(f800.link_capacity_bps[ls] == 800e9) and np.all(f800.link_capacity_bps[f800.link_kind == 2] == 400e9)
    up_capacity = lambda f: f.structure["leaf_up"] * f.link_speeds_gbps()["leaf-spine"]   # noqa: E731
    assert up_capacity(f400) == up_capacity(f800) == 25_600
    assert f800.switch_ports_used().max() == 96                # 64 NIC links + 32 uplinks on a leaf ...
    b4, b8 = bill_of_materials(f400), bill_of_materials(f800)
    tx8 = {(i.model, i.where): i.count for i in b8.items if i.category == "transceiver"}
    assert tx8 == {("osfp-800-sr8", "leaf-spine (leaf end)"): 512, ("osfp-800-sr8", "leaf-spine (spine end)"): 512}
    tx4 = {(i.model, i.where): i.count for i in b4.items if i.category == "transceiver"}
    assert tx4 == {("osfp-2x400-sr8-switch", "leaf-spine (leaf end)"): 512,
                   ("osfp-2x400-sr8-switch", "leaf-spine (spine end)"): 512}
    fibres = lambda b: sum(i.count for i in b.items if i.category == "cable" and i.where == "leaf-spine")  # noqa: E731
    assert (fibres(b4), fibres(b8)) == (1024, 512)
    # NIC-side cabling does not change
    nic_side = lambda b: sorted((i.model, i.count) for i in b.items if i.where == "nic-leaf")  # noqa: E731
    assert nic_side(b4) == nic_side(b8)


def test_oversubscription_is_a_ratio_of_capacities():
    """A leaf with 32 x 400G down and 8 x 800G up is 2:1 (32 x 400 = 2 x 8 x 800)."""
    f = build_fabric(Design(gpus=32, tiers=2, oversubscription=(2.0,), uplink_gbps=800, **ETH))
    s = f.structure
    assert (s["leaf_down"], s["leaf_up"]) == (32, 8)
    assert f.link_speeds_gbps()["leaf-spine"] == 800.0
    # at the NIC speed the same leaf needs 16 uplinks
    assert build_fabric(Design(gpus=32, tiers=2, oversubscription=(2.0,), **ETH)).structure["leaf_up"] == 16


def test_three_tier_spine_uplinks_at_their_own_speed(cat):
    """3 tiers, 8 x 400G switches with 200G uplinks: a leaf has 8 ports; at 1:1 two ports of 2 x 200G... by hand:
    with u up ports the leaf has 2u uplinks of 200G and min(8 - u, u) downlinks of 400G: 4 ports each way, 4 down and
    8 x 200G up. Spine -> core links at 200G too."""
    d = Design(gpus=64, gpus_per_node=1, scale_up_size=1, family="clos", switch_model="test-8x400", tiers=3,
               uplink_gbps=200, routing="spray")
    f = build_fabric(d, cat)
    assert (f.structure["leaf_down"], f.structure["leaf_up"]) == (4, 8)
    assert f.link_speeds_gbps() == {"nic-leaf": 400.0, "leaf-spine": 200.0, "spine-core": 200.0}
    f2 = build_fabric(d.replace(uplink_gbps=[200, 400]), cat)
    assert f2.link_speeds_gbps()["spine-core"] == 400.0


# ------------------------------------------------------------------ item 1: the evaluator uses each link's speed


def test_fewer_uplinks_and_half_speed_uplinks_give_the_same_up_capacity_and_step_time():
    """2:1 on 64 x 800G switches with 400G NICs: 40 x 400G uplinks or 80 x 200G uplinks for 80 GPUs per leaf.

    By hand: 2:1 at one speed keeps ceil(128 / 3) = 43 ports up, 85 down -> 10 nodes (80 GPUs) per leaf, 40 uplinks;
    with 200G uplinks a port carries 2 NIC links or 4 uplinks: 84 down fit -> 10 nodes, 80 x 200G uplinks. Up
    capacity 40 x 400 = 80 x 200 = 16 Tb/s. An all-to-all over 320 GPUs (4 leaves) sends 80 x 240/320 S = 60 S
    out of each leaf: 60 S / 2 TB/s at line rate, the same for both (sprayed: the even split of the bound).
    4 GiB per rank keeps the 319 latency steps of the direct algorithm (~3 ms) small beside the transfer."""
    S = 4 * GIB
    wl = one_op("all_to_all", S, 320)
    fewer = Design(gpus=320, oversubscription=(2.0,), routing="spray", **ETH)
    slower = fewer.replace(uplink_gbps=200)
    ff, fs = build_fabric(fewer), build_fabric(slower)
    assert (ff.structure["leaf_up"], ff.link_speeds_gbps()["leaf-spine"]) == (40, 400.0)
    assert (fs.structure["leaf_up"], fs.link_speeds_gbps()["leaf-spine"]) == (80, 200.0)
    assert ff.structure["leaf_down"] == fs.structure["leaf_down"] == 80
    a, b = evaluate(fewer, wl, samples=32), evaluate(slower, wl, samples=32)
    closed = 60 * S / (16e12 / 8)
    assert a.lower_bound_s == pytest.approx(closed, rel=1e-9) and b.lower_bound_s == pytest.approx(closed, rel=1e-9)
    assert a.ops[0].bound_by == b.ops[0].bound_by == "leaf uplinks"
    assert b.step_time_s["p50"] == pytest.approx(a.step_time_s["p50"], rel=1e-6)
    eff = 0.93                                                   # uec (reorder-tolerant Ethernet) bandwidth efficiency
    assert closed / eff < a.step_time_s["p50"] < 1.03 * closed / eff
    # adaptive routing (near-even split): the same again
    ad = [evaluate(d.replace(routing="adaptive"), wl, samples=32).step_time_s["p50"] for d in (fewer, slower)]
    assert ad[1] == pytest.approx(ad[0], rel=1e-6)


def test_uplink_speed_changes_the_evaluated_time_of_an_uplink_bound_op():
    """The same 80 x 200G cabling evaluated as if the links ran at the NIC speed would be twice as fast: the
    evaluator must charge the 200G links at 200G (the old single capacity used 400G for every link)."""
    S = 4 * GIB
    wl = one_op("all_to_all", S, 320)
    slower = Design(gpus=320, oversubscription=(2.0,), routing="spray", uplink_gbps=200, **ETH)
    t = evaluate(slower, wl, samples=32).step_time_s["p50"]
    at_line_200 = 60 * S / (80 * 200e9 / 8) / 0.93
    at_line_400 = 60 * S / (80 * 400e9 / 8) / 0.93
    assert at_line_200 < t < 1.03 * at_line_200 and t > 1.9 * at_line_400


def test_hot_links_report_their_own_speed():
    wl = one_op("all_to_all", 1 * GIB, 320)
    ev = evaluate(Design(gpus=320, oversubscription=(2.0,), routing="spray", uplink_gbps=200, **ETH), wl, samples=32)
    up = [h for h in ev.hot_links if h["links"] == "leaf uplinks"]
    assert up and up[0]["link_gbps"] == 200.0
    assert up[0]["p99_sample_utilization"] <= 1.0 + 1e-9 and up[0]["p99_sample_utilization"] > 0.85


def test_checkpoint_burst_drains_through_uplinks_at_their_speed():
    """Spray, 4:1 by slower uplinks vs 4:1 by fewer uplinks: the same up capacity, the same burst."""
    wl = one_op("all_reduce", 256 << 20, 256, compute=0.05, count=10)
    burst = Scenario(checkpoint_bytes=256 * 4e9, checkpoint_period_s=2.0)
    fewer = Design(gpus=256, oversubscription=(4.0,), routing="spray", **ETH)
    slower = fewer.replace(uplink_gbps=200)
    assert build_fabric(fewer).structure["leaf_down"] == build_fabric(slower).structure["leaf_down"]
    a, b = (evaluate(d, wl, burst, samples=64).step_time_s["mean"] for d in (fewer, slower))
    assert b == pytest.approx(a, rel=0.02)


# ------------------------------------------------------------------ item 1: the packet-level check


def test_packet_network_carries_each_links_speed(vcat):
    """16 hosts at 10G, 4 leaves of 4, 2:1 by 4 x 5G uplinks per leaf (val-sw-6x10 with uplink_gbps 5)."""
    from fabric.validate import packet_network
    from fabric.validate.scenarios import validation_design

    d = validation_design(2, hosts=16, uplinks="slower")
    assert d.uplink_gbps == (5.0, 5.0) and d.switch_model == "val-sw-6x10"
    net = packet_network(build_fabric(d, vcat))
    kinds = np.array(net.link_kind)
    assert (kinds == "leaf-spine").sum() == 16 and (kinds == "nic-leaf").sum() == 16
    assert np.all(net.link_capacity_bps[kinds == "leaf-spine"] == 5e9)
    assert np.all(net.link_capacity_bps[kinds == "nic-leaf"] == 10e9)
    assert net.summary()["link_speeds_gbps"] == {"nic-leaf": 10.0, "leaf-spine": 5.0}
    fewer = packet_network(build_fabric(validation_design(2, hosts=16, uplinks="fewer"), vcat))
    k2 = np.array(fewer.link_kind)
    assert (k2 == "leaf-spine").sum() == 8 and np.all(fewer.link_capacity_bps[k2 == "leaf-spine"] == 10e9)


def test_fluid_bound_of_fewer_and_slower_uplinks_is_the_closed_form(vcat):
    """All-to-all of 2 MB over 16 hosts, 4 per leaf, sprayed: each leaf sends 4 x 12 x 2 MB / 16 = 6 MB over
    20 Gb/s of uplinks (2 x 10G or 4 x 5G): 2.4 ms at line rate."""
    from fabric.validate import packet_network
    from fabric.validate.fluid import fluid_bound
    from fabric.validate.packet import _flows_tuples, slice_flows
    from fabric.validate.scenarios import one_op_workload, validation_design

    wl = one_op_workload("all_to_all", 2_000_000, 16)
    job, op = wl.jobs[0], wl.jobs[0].ops[0]
    for uplinks in ("fewer", "slower"):
        d = validation_design(2, hosts=16, uplinks=uplinks, routing="spray")
        f = build_fabric(d, vcat)
        net = packet_network(f)
        src, dst, nbytes, _ = slice_flows(f, d, job, op)
        t, _ = fluid_bound(net, _flows_tuples(net, src, dst, nbytes), routing="spray", goodput=1.0)
        assert float(t.max()) == pytest.approx(6e6 / (20e9 / 8), rel=1e-3)


@pytest.fixture(scope="module")
def ns3():
    from fabric.validate import ns3sim

    if not ns3sim.ns3_available():
        pytest.skip("ns-3 bindings not installed (pip install .[packet])")
    try:
        return ns3sim.import_ns3()
    except FabricError as err:
        pytest.skip(str(err))


def test_ns3_simulates_the_5g_uplinks(ns3, vcat):
    """ns-3 runs the 5G uplinks at 5G: the sprayed all-to-all cannot beat the 2.4 ms line-rate bound of 20 Gb/s up
    per leaf (at 10G they would allow 1.2 ms), and no link is measured above its 5G capacity."""
    from fabric.validate import run_packet
    from fabric.validate.scenarios import one_op_workload, validation_design

    d = validation_design(2, hosts=16, uplinks="slower", routing="spray_rr")
    r = run_packet(d, one_op_workload("all_to_all", 2_000_000, 16), catalog=vcat, seed=0, routing="spray_rr")
    assert r.unfinished == 0 and r.drops == 0
    assert r.network["link_speeds_gbps"] == {"nic-leaf": 10.0, "leaf-spine": 5.0}
    assert r.packet_s >= 6e6 / (20e9 / 8) * 0.999
    assert r.busiest_link_utilization <= 1.0 + 1e-6
    assert r.fluid_s == pytest.approx(6e6 / (20e9 / 8) / r.goodput_fraction, rel=1e-3)


# ------------------------------------------------------------------ item 1: the search


def test_search_space_offers_and_repairs_uplink_speeds():
    from fabric.search import Constraints, DesignSpace

    space = DesignSpace(Constraints(gpus=128, switch_models=("ib-ndr-64x400", "eth-51t-64x800"),
                                    nic_models=("nic-cx7-400", "nic-eth-400"), uplink_speed_factors=(1.0, 2.0)))
    names = space.names
    assert space.genes[names.index("uplink_speed_factor")].choices == (1.0, 2.0)
    x = np.zeros(space.n_var, np.int64)
    x[names.index("switch_model")] = 1                 # 64 x 800G Ethernet
    x[names.index("transport")] = 1
    x[names.index("uplink_speed_factor")] = 1          # 2x the 400G NIC: 800G, a whole port
    d, repairs = space.decode(x)
    assert d.uplink_gbps == (800.0, 800.0) and "up800G" in d.name
    assert (space.encode(d) == space.repair(x)).all()
    x[names.index("switch_model")] = 0                 # 64 x 400G InfiniBand cannot run 800G
    d, repairs = space.decode(x)
    assert d.uplink_gbps is None and any("uplinks 2x->1x" in r for r in repairs)
    x[names.index("uplink_speed_factor")] = 0
    assert space.decode(x)[0].uplink_gbps is None      # factor 1: the field stays out (earlier designs' keys)


def test_search_evaluates_designs_with_other_uplink_speeds():
    from fabric.search import Constraints, exhaustive_search
    from fabric.search.designs import design_from_record

    wl = one_op("all_to_all", 256 << 20, 128, compute=0.01)
    c = Constraints(gpus=128, families=("clos",), switch_models=("eth-51t-64x800",), nic_models=("nic-eth-400",),
                    nics_per_gpu=(1.0,), oversubscriptions=(2.0,), planes=(1,), routings=("spray",), qps=(1,),
                    transports=("uec",), placements=("packed",), uplink_speed_factors=(0.5, 1.0, 2.0))
    res = exhaustive_search(wl, c, samples=32)
    ups = {r["uplink_leaf_gbps"] for r in res.records if r["buildable"]}
    assert ups == {200.0, 0.0, 800.0}
    for r in res.records:
        d = design_from_record(r, gpus=128)
        assert d.uplink_speed_gbps(0) == (r["uplink_leaf_gbps"] or None)
    assert "uplink_leaf_gbps" in res.frame().columns


def test_links_carry_uplink_genes_and_old_links_still_read():
    from fabric.ui_support import urlstate
    from fabric.search.designs import GENE_COLUMNS, design_genes, gene_value_text, short_label

    d = Design(gpus=256, oversubscription=(2.0,), uplink_gbps=800, **ETH)
    g = design_genes(d)
    assert (g["uplink_leaf_gbps"], g["uplink_spine_gbps"]) == (800.0, 800.0)
    text = urlstate.encode_genes(g)
    assert text.split(",")[-2:] == ["800", "800"] and urlstate.decode_genes(text) == g
    old = ",".join(text.split(",")[:len(GENE_COLUMNS) - 2])          # a link from before uplink speeds
    back = urlstate.decode_genes(old)
    assert (back["uplink_leaf_gbps"], back["uplink_spine_gbps"]) == (0.0, 0.0)
    assert gene_value_text("uplink_leaf_gbps", 0.0) == "NIC speed" and gene_value_text("uplink_leaf_gbps", 800) == \
        "800 Gb/s"
    assert "up800G" in short_label(g) and "up" not in short_label(back).split()[-1]


def test_search_resumes_a_state_saved_before_the_uplink_gene(tmp_path):
    from fabric.search import Constraints, run_search

    wl = one_op("all_reduce", 64 << 20, 64, compute=0.01)
    c = Constraints(gpus=64, families=("clos",), switch_models=("eth-51t-64x800",), nic_models=("nic-eth-400",),
                    nics_per_gpu=(1.0,), planes=(1,), transports=("roce",), placements=("packed",))
    state = tmp_path / "s.json"
    run_search(wl, c, budget_evals=12, pop_size=6, samples=16, seed=1, state_path=state)
    saved = json.loads(state.read_text())
    saved["pop_X"] = [x[:-1] for x in saved["pop_X"]]                   # drop the last gene, as before it existed
    state.write_text(json.dumps(saved))
    res = run_search(wl, c, budget_evals=18, pop_size=6, samples=16, seed=1, state_path=state)
    assert res.evaluations >= 12
    saved["pop_X"] = [x[:-2] for x in saved["pop_X"]]
    state.write_text(json.dumps(saved))
    with pytest.raises(FabricError, match="genomes have"):
        run_search(wl, c, budget_evals=18, pop_size=6, samples=16, seed=1, state_path=state)


# ------------------------------------------------------------------ item 2: the lower bound with the fabric


def test_lower_bound_of_a_cross_leaf_all_to_all_at_2to1(cat):
    """256 GPUs, 48 x 400G switches at 2:1: 32 GPUs (4 nodes) and 16 x 400G uplinks per leaf, 8 leaves.

    All-to-all of S bytes per rank: each leaf's 32 members send S/256 to each of the 224 members elsewhere:
    32 x 224 / 256 S = 28 S out (and in), over 16 x 50 GB/s = 800 GB/s: 28 S / 800e9 s. The NIC term is only
    (256 - 8)/256 S / 50e9 (= 0.97 S / 50e9 vs 1.75 S / 50e9): the uplinks bind."""
    S = 1 * GIB
    d = Design(gpus=256, family="clos", switch_model="test-48x400", oversubscription=(2.0,), routing="spray")
    ev = evaluate(d, one_op("all_to_all", S, 256), catalog=cat, samples=64)
    assert ev.lower_bound_s == pytest.approx(28 * S / 800e9, rel=1e-9)          # 37.6 ms
    assert ev.ops[0].bound_by == "leaf uplinks" and ev.lower_bound_by == "leaf uplinks"
    assert ev.lower_bound_split_s == pytest.approx({"compute": 0.0, "leaf uplinks": 28 * S / 800e9})
    assert ev.step_samples_s.min() >= ev.lower_bound_s
    assert ev.step_time_s["p50"] <= 1.10 * ev.lower_bound_s / 0.96         # sprayed: the bound at 96 % efficiency


def test_lower_bound_of_ring_all_reduce_across_leaves_is_twice_the_nic_bound_at_2to1(cat):
    """Data-parallel groups of 8, stride 32: one member on each of the 8 leaves, 32 groups per leaf.

    NIC (facts.md): 2 (8 - 1)/8 S / 50e9 = 1.75 S / 50e9 (3.2 ms for S = 91.4 MB). Fabric: a group's 8 parties
    (leaves) must move at least 2 (8 - 1) S through their uplinks (reduce and spread, 7 transfers each); 32 groups
    share the 8 leaves' 8 x 16 x 50 GB/s: 32 x 14 S / 6.4e12 = 3.5 S / 50e9, twice the NIC term (6.4 ms): 2:1."""
    S = 91_428_571                                 # 1.75 S / 50e9 = 3.2 ms
    wl = one_op("all_reduce", S, 256, group_size=8, stride=32)
    d21 = Design(gpus=256, family="clos", switch_model="test-48x400", oversubscription=(2.0,), routing="spray")
    ev = evaluate(d21, wl, catalog=cat, samples=64, algorithms={"all_reduce": "ring"})
    assert ev.lower_bound_s == pytest.approx(32 * 14 * S / (8 * 16 * 50e9), rel=1e-9)
    assert ev.lower_bound_s == pytest.approx(6.4e-3, rel=1e-6)
    assert ev.ops[0].bound_by == "leaf uplinks"
    assert ev.step_samples_s.min() >= ev.lower_bound_s
    # the same groups on the non-blocking fabric (32 x 400G up per leaf): the NIC term, as before
    d11 = Design(gpus=256, family="clos", routing="spray")
    ev11 = evaluate(d11, wl, samples=64, algorithms={"all_reduce": "ring"})
    assert ev11.lower_bound_s == pytest.approx(1.75 * S / 50e9, rel=1e-9)
    assert ev11.lower_bound_s == pytest.approx(3.2e-3, rel=1e-6)
    assert ev11.ops[0].bound_by == "nic"


def test_non_blocking_bound_is_unchanged_and_nic_bound():
    """facts.md section 1: 2(N-1)/N (S/g) / B_nic, N = 32 nodes, g = 8 (the bound of the old code)."""
    wl = one_op("all_reduce", 16 * GIB, 256)
    ev = evaluate(Design(gpus=256, routing="spray"), wl)
    assert ev.lower_bound_s == pytest.approx(2 * 31 / 32 * (16 * GIB / 8) / 50e9, rel=1e-9)
    assert ev.ops[0].bound_by == "nic" and ev.lower_bound_by == "nic"


def test_pod_uplinks_bind_a_cross_pod_all_to_all(cat):
    """3 tiers of 8 x 400G switches, one GPU per host, 1:1 at the leaf, 3:1 at the spine.

    By hand: a leaf has 4 hosts and 4 uplinks; a spine of 8 ports at 3:1 keeps ceil(8/4) = 2 up and 6 down, so a
    pod holds 6 leaves (24 hosts) whose 24 uplinks land on 4 spines (bundles of 1, 6 ports used), each with 2 core
    links: 8 x 50 GB/s out of a pod. 96 hosts = 4 pods. All-to-all: a pod sends 24 x 72/96 S = 18 S out:
    18 S / 400e9, above the leaf term (4 x 92/96 S / 200e9) and the NIC term (95/96 S / 50e9)."""
    S = 1 * GIB
    d = Design(gpus=96, gpus_per_node=1, scale_up_size=1, family="clos", switch_model="test-8x400", tiers=3,
               oversubscription=(1, 3), routing="spray")
    s = build_fabric(d, cat).structure
    assert (s["pods"], s["leaves_per_pod"], s["spines_per_pod"], s["spine_uplinks"]) == (4, 6, 4, 2)
    ev = evaluate(d, one_op("all_to_all", S, 96), catalog=cat, samples=64)
    assert ev.lower_bound_s == pytest.approx(18 * S / 400e9, rel=1e-9)
    assert ev.ops[0].bound_by == "pod uplinks" and ev.lower_bound_by == "pod uplinks"
    assert ev.step_samples_s.min() >= ev.lower_bound_s


def test_bound_by_names_nvlink_and_compute():
    # tensor parallelism inside one 8-GPU node: NVLink only
    wl = one_op("all_reduce", 1 * GIB, 64, group_size=8)
    ev = evaluate(Design(gpus=64), wl, samples=32)
    assert ev.ops[0].bound_by == "nvlink"
    # H100: 450 GB/s per direction; its NVSwitch reduces (NVLink SHARP), so each GPU moves S once each way
    assert ev.lower_bound_s == pytest.approx(GIB / 450e9, rel=1e-9)
    # fully hidden communication: the step's bound is its compute
    wl = one_op("all_reduce", 1 << 20, 64, compute=0.5, overlap=1.0)
    ev = evaluate(Design(gpus=64), wl, samples=32)
    assert ev.lower_bound_by == "compute" and ev.lower_bound_s == pytest.approx(0.5)
    assert ev.ops[0].bound_by == "nic"


def test_in_network_reduction_keeps_the_nic_bound(cat):
    """SHARP-like reduction aggregates in the switches: each leaf sends S once up and gets it once down, so the NIC
    term still bounds it when every instance gets an aggregation tree (fabric.evaluate.innetwork). At 1:1 (24 down,
    24 up) a leaf's 24 GPUs are in 24 instances: 24 trees, one per uplink, all fit."""
    wl = one_op("all_reduce", 1 * GIB, 192, group_size=8, stride=24)
    d = Design(gpus=192, family="clos", switch_model="test-48x400", oversubscription=(1.0,), routing="spray",
               in_network_reduction=True)
    ev = evaluate(d, wl, catalog=cat, samples=32)
    assert (ev.ops[0].aggregation_trees, ev.ops[0].fallback_instances) == (24, 0)
    assert ev.ops[0].bound_by == "nic" and ev.lower_bound_s == pytest.approx(GIB / 50e9, rel=1e-9)
    assert ev.step_samples_s.min() >= ev.lower_bound_s


def test_evaluate_cli_names_the_binding_resource(tmp_path, capsys, cat):
    p = tmp_path / "w.json"
    p.write_text(dump_workload_json(one_op("all_to_all", 1 * GIB, 256)))
    c = tmp_path / "c.json"
    c.write_text(json.dumps({"switches": [{"model": "test-48x400", "vendor": "test", "fabric": "infiniband",
                                           "ports": 48, "port_speed_gbps": 400, "price_usd": 1000, "power_w": 100,
                                           "latency_ns": 130, "source": "test"}]}))
    dfile = tmp_path / "d.json"
    dfile.write_text(json.dumps({"gpus": 256, "switch_model": "test-48x400", "oversubscription": 2,
                                 "routing": "spray"}))
    args = ["evaluate", "--workload", str(p), "--design", str(dfile), "--catalog", str(c), "--samples", "16"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lower_bound_by"] == "leaf uplinks" and out["ops"][0]["bound_by"] == "leaf uplinks"
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "communication bound by leaf uplinks" in text and "(leaf uplinks)" in text


# ------------------------------------------------------------------ item 2: never above any sample


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast",
                             "reduce"]),
       size=st.sampled_from([1 << 16, 1 << 24, 1 << 31]), group=st.sampled_from([2, 4, 8, 16, 32, 64]),
       stride=st.sampled_from([1, 2, 4, 8, 16]), placement=st.sampled_from(["packed", "fragmented", "rail_aligned"]),
       family=st.sampled_from(["clos", "rail_optimized", "rail_only"]), routing=st.sampled_from(["ecmp", "adaptive",
                                                                                                  "spray"]),
       o1=st.sampled_from([1.0, 2.0, 3.0, 4.0]), o2=st.sampled_from([1.0, 3.0]), tiers=st.sampled_from([None, 3]),
       up=st.sampled_from([None, 800, 200]), gpn=st.sampled_from([1, 4, 8]), overlap=st.floats(0, 1),
       compute=st.sampled_from([0.0, 0.01]), scenario=st.sampled_from(["baseline", "fail-link", "slow-switch",
                                                                        "flaky", "background"]),
       seed=st.integers(0, 3))
def test_property_bound_never_above_a_sample_on_oversubscribed_fabrics(kind, size, group, stride, placement, family,
                                                                       routing, o1, o2, tiers, up, gpn, overlap,
                                                                       compute, scenario, seed):
    world = 128
    if group * stride > world:
        stride = world // group
    scen = {"baseline": Scenario(), "fail-link": Scenario(failed_links=1), "slow-switch": Scenario(slow_switches=1),
            "flaky": Scenario(link_failure_prob=0.02), "background": Scenario(background_load=0.3)}[scenario]
    if placement == "fragmented":                   # a fragmented cluster: the rule's nodes drawn at random
        placement, scen = "packed", replace(scen, fragmentation=1.0)
    switch = "eth-51t-64x800" if tiers is None else "eth-12t-32x400"
    if tiers is not None and up == 800:
        up = None                                   # 400G ports cannot run 800G uplinks
    wl = one_op(kind, size, world, group_size=group, stride=stride, compute=compute, overlap=overlap, count=3)
    try:
        d = Design(gpus=world, gpus_per_node=gpn, family=family, routing=routing, placement=placement,
                   oversubscription=(o1, o2), tiers=tiers, uplink_gbps=up, switch_model=switch,
                   nic_model="nic-eth-400", transport="uec")
        ev = evaluate(d, wl, scen, samples=32, seed=seed)
    except DesignError:
        return                                      # not buildable (too few ports for 3 tiers, a cut fabric, ...)
    assert ev.step_samples_s.min() >= ev.lower_bound_s * (1 - 1e-9)
    assert ev.ops[0].bound_by in ("nic", "nvlink", "leaf uplinks", "pod uplinks", "none")
