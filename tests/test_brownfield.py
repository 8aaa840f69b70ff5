"""Brownfield upgrades (fabric/brownfield): inventories and their difference, power by place, re-cabled servers, the
upgrade front of an installed fabric and its limits. Numbers are counted by hand from the cabling rules
(docs/topology.md) and the catalog's unit prices (fabric/catalog/*.csv), not copied from the code's output."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.brownfield import UpgradeLimits, bom_delta, installed_from_design, load_installed, upgrade_front
from fabric.brownfield.inventory import Inventory, resale_fractions
from fabric.brownfield.site import site_power
from fabric.brownfield.upgrade import FREE, HARDWARE, MOVES, recabled_server_links
from fabric.catalog import default_catalog
from fabric.cost import bill_of_materials
from fabric.design import design_to_dict
from fabric.reference.presets import preset_design
from fabric.errors import DesignError, FabricError
from fabric.evaluate import Scenario, evaluate
from fabric.topology import build_fabric

CAT = default_catalog()
HARDWARE_MOVES = [m for m in MOVES if m != "policy"]


def _price(kind, model):
    return getattr(CAT, kind)(model).price_usd


@pytest.fixture(scope="module")
def mixtral():
    from fabric.cli.common import load_workload_files

    return load_workload_files(["sample_traces/mixtral-8x7b.json"])


@pytest.fixture(scope="module")
def clos_1024():
    one = preset_design("fat-tree", 1024)                        # 1:1, ECMP, one queue pair
    two = one.replace(oversubscription=(2.0, 1.0), name="installed 2:1")
    return one, two


# ------------------------------------------------------------------------------------------------ inventory


def _inv(rows):
    return Inventory.from_items([{"category": c, "model": m, "count": n, "unit_price_usd": p, "unit_power_w": 0.0}
                                 for c, m, n, p in rows], source="test")


def test_bom_delta_keeps_adds_and_removes_model_by_model():
    have = _inv([("switch", "A", 10, 100.0), ("cable", "acc", 6, 3.0), ("nic", "N", 4, 20.0)])
    need = _inv([("switch", "A", 12, 110.0), ("cable", "dac", 5, 1.0), ("nic", "N", 4, 20.0)])
    d = bom_delta(have, need, resale={"switch": 0.5, "cable": 0.5})
    assert d.kept() == {"A": 10, "N": 4}
    assert d.added() == {"A": 2, "dac": 5}                       # 12 - 10 switches, 5 new cables
    assert d.removed() == {"acc": 6}
    assert d.added_usd == 2 * 110.0 + 5 * 1.0                    # new items at the catalog (needed) price
    assert d.resale_usd == 6 * 3.0 * 0.5                         # removed ones at half the price paid
    assert d.net_usd == d.added_usd - d.resale_usd
    assert bom_delta(have, have).added_usd == 0 and not bom_delta(have, have).discards_anything


def test_inventory_and_resale_errors_name_what_and_where():
    with pytest.raises(DesignError, match=r"item 2 \(x\): 'count' must be a whole number"):
        Inventory.from_items([{"category": "nic", "model": "n", "count": 1},
                              {"category": "switch", "model": "x", "count": -1}], source="f.json")
    with pytest.raises(DesignError, match="category 'gpu' is not one of"):
        Inventory.from_items([{"category": "gpu", "model": "h100", "count": 1}], source="f.json")
    with pytest.raises(DesignError, match=r"resale value of switch items: .* \[0, 1\]"):
        resale_fractions({"switch": 1.5})
    with pytest.raises(DesignError, match="unknown item category gpu"):
        resale_fractions({"gpu": 0.1})
    with pytest.raises(FabricError, match="upgrade limit 'budget_usd'"):
        UpgradeLimits(budget_usd=-1)


def test_load_installed_reads_a_build_json_with_spares(tmp_path):
    from fabric.cli.main import main

    d = preset_design("fat-tree", 64)
    fab = build_fabric(d)
    bom = bill_of_materials(fab)
    data = {"design_spec": design_to_dict(d), "items": [i.to_dict() for i in bom.items]}
    data["items"].append({"category": "switch", "model": d.switch_model, "count": 2, "unit_price_usd": 42000.0})
    p = tmp_path / "installed.json"
    p.write_text(json.dumps(data))
    inst = load_installed(p)
    assert inst.inventory.count("switch", d.switch_model) == sum(fab.switch_counts().values()) + 2   # 2 spares
    # fewer items than the design uses: refused, naming the file and the item
    data["items"] = [i for i in data["items"] if i["category"] != "switch"]
    p.write_text(json.dumps(data))
    with pytest.raises(DesignError, match=rf"installed fabric {p}: its items list 0 switch ib-ndr-64x400"):
        load_installed(p)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DesignError, match="not valid JSON"):
        load_installed(bad)
    with pytest.raises(DesignError, match="file not found"):
        load_installed(tmp_path / "missing.json")
    # what `fabric build --json` writes is readable as it is
    out = tmp_path / "built.json"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["build", "--preset", "fat-tree", "--gpus", "64", "--json"]) == 0
    out.write_text(buf.getvalue())
    assert load_installed(out).inventory.counts == installed_from_design(d).inventory.counts


# ------------------------------------------------------------------------------------------------ site power


def test_site_power_of_a_top_of_rack_rack_by_hand(clos_1024):
    one, _ = clos_1024
    fab = build_fabric(one)
    bom = bill_of_materials(fab)
    site = site_power(fab, bom)
    gpu, nic, sw = CAT.gpu("h100-sxm"), CAT.nic("nic-cx7-400"), CAT.switch("ib-ndr-64x400")
    tx = CAT.transceiver("osfp-2x400-sr8-switch")
    # 40.8 kW rack budget / 10.2 kW per 8-GPU server = 4 servers per rack, one leaf of 4 servers (32 down, 32 up)
    # per rack: 4 servers (their rated 10.2 kW covers their 32 NICs; in-rack DAC: 0 W), the leaf and its 32
    # uplinks' 16 twin-port modules
    rack = 4 * gpu.server_power_w + sw.power_w + 16 * tx.power_w
    assert site.racks == 32
    assert np.allclose(site.compute_rack_w, rack)
    # network racks: the 16 spines, each with 64 downlinks in 32 twin-port modules
    assert math.isclose(site.network_w, 16 * (sw.power_w + 32 * tx.power_w))
    assert math.isclose(site.compute_rack_w.sum() + site.network_w, site.total_w)
    # IT power: servers plus the network outside them (the bill of materials without its 1,024 NICs)
    assert math.isclose(site.total_w, bom.compute_power_w + bom.power_w - 1024 * nic.power_w)


# ------------------------------------------------------------------------------------------------ cabling


def test_recabled_server_links_from_five_to_four_servers_per_leaf(clos_1024):
    one, two = clos_1024
    # 2:1 leaves hold 5 servers (40 down, 20 up), 1:1 leaves 4 (32 + 32). Server n stays on its leaf index iff
    # n // 5 == n // 4: n = 0-3, 5-7, 10-11, 15 (10 servers); the other 118 servers move with their 8 links.
    assert recabled_server_links(build_fabric(two), build_fabric(one)) == (128 - 10) * 8
    assert recabled_server_links(build_fabric(two), build_fabric(two)) == 0


# ------------------------------------------------------------------------------------------------ must show


@pytest.fixture(scope="module")
def targets(mixtral, clos_1024):
    one, two = clos_1024
    p = lambda d: float(evaluate(d, mixtral, Scenario(), seed=0, samples=128).step_time_s["p99"])  # noqa: E731
    return {"one": p(one), "two": p(two)}


def test_cheapest_hardware_upgrade_reaching_the_1to1_p99_costs_less_than_building_it(mixtral, clos_1024, targets):
    one, two = clos_1024
    assert targets["two"] > targets["one"] * 1.02                 # the 2:1 fabric is slower on this workload
    res = upgrade_front(installed_from_design(two), mixtral, UpgradeLimits(p99_target_s=targets["one"]),
                        moves=HARDWARE_MOVES)
    best = res.best
    assert best is not None and best.kind == HARDWARE and best.p99_s <= targets["one"] * (1 + 1e-9)
    # By hand: 2:1 = 26 leaves (128 servers / 5) + 10 spines (20 uplinks in bundles of 2); 1:1 = 32 leaves
    # (128 / 4) + 16 spines (32 uplinks / 2). Reaching 1:1 buys 6 leaves + 6 spines, 1024 - 26 x 20 = 504 more
    # leaf-spine links (one fibre, two switch ends = one twin-port module per link), and since every leaf then sits
    # in its servers' rack, 296 DACs replace the active copper cables of the servers that spanned two racks
    # (1024 server links - 728 already DAC).
    hand = (12 * _price("switch", "ib-ndr-64x400") + 504 * _price("transceiver", "osfp-2x400-sr8-switch")
            + 504 * _price("cable", "mmf-50m") + 296 * _price("cable", "dac-400-2m"))
    assert best.switches == {"leaf": 32, "spine": 16}
    assert best.added_usd == pytest.approx(hand)
    assert best.delta.removed() == {"acc-400-5m": 296}           # taken out (resale 0 by default)
    assert best.recabled_server_links == 118 * 8
    # building the 1:1 fabric new costs at least its 48 switches and 1024 twin-port modules
    new_lower_bound = 48 * _price("switch", "ib-ndr-64x400") + 1024 * _price("transceiver", "osfp-2x400-sr8-switch")
    assert best.added_usd < new_lower_bound
    assert best.added_usd < bill_of_materials(build_fabric(one)).cost_usd
    # every installed switch is still in service in its tier, in every upgrade considered
    for u in res.upgrades:
        assert u.switches["leaf"] >= 26 and u.switches["spine"] >= 10, u.label()
    assert res.counts["takes_out_switches"] >= 1                # e.g. 21 uplinks over 9 spines: left out
    assert "cheapest upgrade meeting" in res.answer


def test_a_free_policy_change_is_offered_first_when_it_suffices(mixtral, clos_1024, targets):
    _, two = clos_1024
    res = upgrade_front(installed_from_design(two), mixtral, UpgradeLimits(p99_target_s=targets["one"]))
    assert res.best.kind == FREE and res.best.added_usd == 0 and res.best.delta.added() == {}
    offers = res.offers()
    assert offers[0].kind == FREE and offers[0].p99_s <= targets["one"]
    assert res.answer.startswith("a free policy change meets")
    # the exhaustive policy search (every policy on every hardware) agrees
    full = upgrade_front(installed_from_design(two), mixtral, UpgradeLimits(p99_target_s=targets["one"]),
                         policies="all")
    assert full.best.net_usd == res.best.net_usd == 0
    assert [u.net_usd for u in full.front] == [u.net_usd for u in res.front]


def test_budget_below_the_cheapest_fix_gives_no_upgrade(mixtral, clos_1024, targets):
    _, two = clos_1024
    res = upgrade_front(installed_from_design(two), mixtral,
                        UpgradeLimits(p99_target_s=targets["one"], budget_usd=100_000), moves=HARDWARE_MOVES)
    assert res.best is None and res.answer.startswith("no upgrade within the limits reaches")
    assert all(u.added_usd <= 100_000 for u in res.front)


# ------------------------------------------------------------------------------------------------ property


def _independent_added_usd(installed, design):
    """Capex of what ``design`` needs beyond ``installed``, counted from the bill of materials item by item."""
    need = {}
    for i in bill_of_materials(build_fabric(design)).items:
        k = (i.category, i.model)
        n, p = need.get(k, (0, i.unit_price_usd))
        need[k] = (n + i.count, p)
    return sum(max(0, n - installed.inventory.count(*k)) * p for k, (n, p) in need.items())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(gpus=st.sampled_from([256, 512]), oversub=st.sampled_from([1.5, 2.0, 3.0]),
       family=st.sampled_from(["clos", "rail_optimized"]), budget_share=st.floats(0.0, 0.6),
       rack_slack=st.floats(0.98, 1.1), facility_slack=st.floats(0.99, 1.05), routing=st.sampled_from(["ecmp",
                                                                                                     "adaptive"]))
def test_every_upgrade_respects_budget_and_power(mixtral, gpus, oversub, family, budget_share, rack_slack,
                                                 facility_slack, routing):
    d = preset_design("fat-tree", gpus).replace(family=family, oversubscription=(oversub, 1.0), routing=routing,
                                                placement="rail_aligned" if family != "clos" else "packed")
    inst = installed_from_design(d)
    fab = build_fabric(d)
    bom = bill_of_materials(fab)
    base = site_power(fab, bom)
    limits = UpgradeLimits(budget_usd=budget_share * bom.cost_usd, rack_power_w=rack_slack * base.max_rack_w,
                           facility_power_w=facility_slack * base.facility_w(1.3))
    res = upgrade_front(inst, mixtral, limits, samples=32, qps=(1, 4))
    shown = res.front + res.offers() + ([res.best] if res.best else [])
    for u in shown:
        if u.kind == "none":
            continue
        added = _independent_added_usd(inst, u.design)
        assert added == pytest.approx(u.added_usd)
        assert added <= limits.budget_usd * (1 + 1e-9), u.label()
        f = build_fabric(u.design)
        b = bill_of_materials(f)
        sp = site_power(f, b)
        nics_w = sum(i.count * CAT.nic(i.model).power_w for i in b.items if i.category == "nic")  # inside the servers
        assert sp.total_w == pytest.approx(b.compute_power_w + b.power_w - nics_w)
        assert sp.total_w * limits.pue <= limits.facility_power_w * (1 + 1e-9), u.label()
        assert sp.max_rack_w <= limits.rack_power_w * (1 + 1e-9), u.label()
    # and what was left out for a limit really breaks it
    for u in res.upgrades:
        if "budget_usd" in u.violations:
            assert _independent_added_usd(inst, u.design) > limits.budget_usd


def test_rack_power_limit_drops_upgrades_that_add_optics_to_the_leaves_racks(mixtral, clos_1024):
    _, two = clos_1024
    inst = installed_from_design(two)
    fab = build_fabric(two)
    base = site_power(fab, bill_of_materials(fab))
    # no compute rack may draw more than today: two more uplinks per top-of-rack leaf add one twin-port module
    # (+15 W) in the leaf's rack, so that upgrade is over; a free policy change adds nothing and stays
    res = upgrade_front(inst, mixtral, UpgradeLimits(rack_power_w=base.max_rack_w), moves=["leaf_uplinks", "policy"])
    assert not [u for u in res.upgrades if u.switches == {"leaf": 26, "spine": 11}]     # never evaluated
    over = [u for u in res.over_limits if u.switches == {"leaf": 26, "spine": 11}]
    assert over and all("rack_power_w" in u.violations for u in over)
    assert "compute rack(s) over" in over[0].violations["rack_power_w"]
    tx = CAT.transceiver("osfp-2x400-sr8-switch").power_w
    assert over[0].site.max_rack_w == pytest.approx(base.max_rack_w + tx)
    assert all(u.site.max_rack_w <= base.max_rack_w * (1 + 1e-12) for u in res.front)
    assert any(u.kind == FREE for u in res.front)


def test_failure_front_and_its_limit(mixtral):
    d = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0))
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(), moves=["leaf_uplinks"], samples=32,
                        failures=True)
    assert res.failure_front
    for u in res.failure_front:
        assert u.p99_under_failure_s >= u.p99_s * (1 - 1e-9)          # a failure never speeds a step up
        assert u.failure["worst_switch"] is not None
    worst = max(u.p99_under_failure_s for u in res.failure_front)
    best = min(u.p99_under_failure_s for u in res.failure_front)
    lim = UpgradeLimits(max_p99_under_failure_s=(worst + best) / 2)
    res2 = upgrade_front(installed_from_design(d), mixtral, lim, moves=["leaf_uplinks"], samples=32)
    assert res2.best is not None and res2.best.p99_under_failure_s <= lim.max_p99_under_failure_s


# ------------------------------------------------------------------------------------------------ single moves by hand
# 256 H100 GPUs = 32 servers of 8 NICs, 4 servers per 40.8 kW rack (8 racks), 2:1 top-of-rack fat trees. The counts
# below follow the cabling rules of docs/topology.md (leaves hold whole servers; the fewest spines >= ceil(L u / R)
# that divide u; a 3-tier spine sends half its ports down) and the rack rules of fabric/topology/racks.py (a leaf
# sits in the rack of its middle server; same rack: DAC, next rack: active copper); prices are the catalog's.


def _only_move(res, move):
    ups = [u for u in res.upgrades if u.moves == (move,)]
    assert ups, f"no upgrade with only the {move} move"
    return ups[0]


def test_uplink_speed_move_replaces_the_uplink_optics_and_keeps_everything_else(mixtral):
    # eth-51t-64x800 (64 x 800G = 128 x 400G broken out), 400G NICs. A 2:1 leaf: 80 ports down (10 servers) and
    # 40 x 400G up; 4 leaves (32 / 10), 160 uplinks, 2 spines (ceil(160 / 128) = 2, 2 divides 40). Each 400G
    # link: a twin-port 2 x 400G module carries two links at each end -> 160 links / 2 x 2 ends = 160 modules,
    # 160 fibres. At 800G the same 16 Tb/s per leaf is 20 x 800G: 80 links, one 800G module per end = 160
    # modules, 80 fibres.
    d = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0), switch_model="eth-51t-64x800",
                                               nic_model="nic-eth-400", transport="roce")
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(resale={"transceiver": 0.5}),
                        moves=["uplink_speed"], samples=16, qps=(1,))
    assert res.baseline.switches == {"leaf": 4, "spine": 2}
    u = _only_move(res, "uplink_speed")
    assert u.switches == {"leaf": 4, "spine": 2}                          # every switch reused, none added
    assert u.delta.added() == {"osfp-800-sr8": 160}
    assert u.delta.removed() == {"osfp-2x400-sr8-switch": 160, "mmf-50m": 80}
    kept = u.delta.kept()
    assert kept["eth-51t-64x800"] == 6 and kept["nic-eth-400"] == 256 and kept["mmf-50m"] == 80
    assert kept["dac-400-2m"] + kept["acc-400-5m"] == 256                  # every server link stays
    assert u.added_usd == pytest.approx(160 * _price("transceiver", "osfp-800-sr8"))            # $208,000
    assert u.delta.resale_usd == pytest.approx(0.5 * 160 * _price("transceiver", "osfp-2x400-sr8-switch"))
    assert u.recabled_server_links == 0


def test_plane_move_adds_a_leaf_links_and_active_copper(mixtral):
    # eth-25t-64x400 broken out to 128 x 200G, dual-port 2 x 200G NICs: 16 ports per server.
    # One plane: a 2:1 leaf has 80 down (5 servers), 40 up; 7 leaves (32 / 5), 280 uplinks, 4 spines
    # (ceil(280 / 128) = 3 does not divide 40; 4 does). Two planes: 8 ports per server per plane, 10 servers per
    # leaf, 4 leaves and 160 uplinks per plane, 2 spines per plane: 8 leaves + 4 spines = one leaf more, and
    # 320 - 280 = 40 more links, each a 200G module at both ends and a fibre.
    # Server cables: leaf i holds servers Q i .. Q i + Q - 1 and sits in the rack of its middle one (4 per rack).
    # One plane (Q = 5): servers in their leaf's rack 4+3+3+4+4+3+2 = 23 (DAC), next rack 9 (ACC) -> x16 ports:
    # 368 DAC, 144 ACC. Two planes (Q = 10): per plane 4+4+4+2 = 14 in rack, 18 next door -> x8 x2 planes:
    # 224 DAC, 288 ACC. So 144 DAC come out and 144 ACC go in.
    d = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0), switch_model="eth-25t-64x400",
                                               nic_model="nic-2x200-dual", transport="roce")
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(), moves=["plane"], samples=16, qps=(1,))
    assert res.baseline.switches == {"leaf": 7, "spine": 4}
    u = _only_move(res, "plane")
    assert u.design.planes == 2 and u.switches == {"leaf": 8, "spine": 4}
    assert u.delta.added() == {"eth-25t-64x400": 1, "qsfp56-200-sr4": 80, "mmf-50m": 40, "acc-200-5m": 144}
    assert u.delta.removed() == {"dac-200-3m": 144}
    assert u.delta.kept()["nic-2x200-dual"] == 256                       # the NICs stay: their ports split
    hand = (_price("switch", "eth-25t-64x400") + 80 * _price("transceiver", "qsfp56-200-sr4")
            + 40 * _price("cable", "mmf-50m") + 144 * _price("cable", "acc-200-5m"))
    assert u.added_usd == pytest.approx(hand)                            # $110,600


def test_tier_move_keeps_leaves_and_spines_and_adds_cores(mixtral):
    # The 256-GPU 2:1 fabric on eth-51t-64x800 above (4 leaves of 40 x 400G up, 2 spines). With a third tier a
    # spine sends half its 128 ports down (1:1): ceil(160 / 64) = 3 spines, 4 to divide 40 (bundles of 10); each
    # spine's 40 uplinks -> 160 spine-core links on the fewest cores that take them, ceil(160 / 128) = 2. So 2
    # spines + 2 cores are added; the 160 leaf-spine links keep their modules and fibres (re-plugged), and the 160
    # new links each need a fibre and a twin-port module per two links at each end (160): multimode SR8 and 50 m
    # fibre, the cores standing in the same hall (the 8 racks fill one hall: fabric.topology.floor).
    d = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0), switch_model="eth-51t-64x800",
                                               nic_model="nic-eth-400", transport="roce")
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(), moves=["tier"], samples=16, qps=(1,))
    u = _only_move(res, "tier")
    assert u.switches == {"leaf": 4, "spine": 4, "core": 2}
    assert u.delta.added() == {"eth-51t-64x800": 4, "osfp-2x400-sr8-switch": 160, "mmf-50m": 160}
    assert u.delta.removed() == {}
    hand = (4 * _price("switch", "eth-51t-64x800") + 160 * _price("transceiver", "osfp-2x400-sr8-switch")
            + 160 * _price("cable", "mmf-50m"))
    assert u.added_usd == pytest.approx(hand)
    assert u.recabled_server_links == 0


def test_nic_move_replaces_the_nics_and_their_links_cables_and_optics(mixtral):
    # eth-51t-64x800 with dual-port 2 x 200G NICs (16 x 200G per server; the nic-eth-400 fabric above has no NIC
    # upgrade: the other H100 NICs are InfiniBand, slower or need an 800G host). The only NIC offered: nic-eth-400
    # (Ethernet, 400G >= 200G per port, 1 x 400G >= 2 x 200G per NIC).
    # 2 x 200G: 256 ports at 200G, a 2:1 leaf 170 down (10 servers = 160) and 80 up; 4 leaves (32 / 10), 320
    # uplinks on 2 spines (ceil(320 / 256) = 2, 2 divides 80); one 200G module per link end: 640, 320 fibres.
    # nic-eth-400: 8 x 400G per server, as the uplink-speed test: 4 leaves of 10 servers, 40 up, 160 links on the
    # same 2 spines, twin-port 2 x 400G modules: 4 x 20 at the leaves + 2 x 40 at the spines = 160, 160 fibres.
    # Servers: leaf i holds servers 10i..10i+9 in the rack of server 10i+4 (4 per rack): 4+4+4+2 = 14 servers in
    # their leaf's rack (DAC), 18 next door (active copper): 224 + 288 cables at 200G (x16 ports) -> 112 + 144 at
    # 400G (x8 ports). 256 NICs (32 servers x 8) replaced; servers keep their leaf.
    d = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0), switch_model="eth-51t-64x800",
                                               nic_model="nic-2x200-dual", transport="roce")
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(resale={"nic": 0.5}), moves=["nic"],
                        samples=16, qps=(1,))
    assert {u.design.nic_model for u in res.upgrades if u.moves == ("nic",)} == {"nic-eth-400"}
    u = _only_move(res, "nic")
    assert res.baseline.switches == u.switches == {"leaf": 4, "spine": 2}
    assert u.delta.added() == {"nic-eth-400": 256, "osfp-2x400-sr8-switch": 160, "dac-400-2m": 112,
                               "acc-400-5m": 144}
    assert u.delta.removed() == {"nic-2x200-dual": 256, "qsfp56-200-sr4": 640, "mmf-50m": 160, "dac-200-3m": 224,
                                 "acc-200-5m": 288}
    assert u.delta.kept() == {"eth-51t-64x800": 6, "mmf-50m": 160}    # every switch, half the fibres
    hand = (256 * _price("nic", "nic-eth-400") + 160 * _price("transceiver", "osfp-2x400-sr8-switch")
            + 112 * _price("cable", "dac-400-2m") + 144 * _price("cable", "acc-400-5m"))
    assert u.added_usd == pytest.approx(hand)                            # $900,000
    assert u.delta.resale_usd == pytest.approx(0.5 * 256 * _price("nic", "nic-2x200-dual"))
    assert u.recabled_server_links == 0 and u.rack_units_added == 0


def test_spine_uplinks_move_adds_spine_core_links_and_cores(mixtral):
    # 512 GPUs (64 servers of 8 x 400G) on 64-port NDR, forced to 3 tiers at 2:1 leaves and 2:1 spines. Leaves:
    # 42 down (5 servers), 20 up, 13 leaves (64 / 5), 260 links, one pod (a 2:1 spine has 42 ports down >= 13).
    # Spines: ceil(260 / 42) = 7, 10 divides 20 (260 x 2 >= 10 x 42): 10 spines of 26 down, ceil(26 / 2) = 13
    # up; 130 spine-core links on ceil(130 / 64) = 3 cores (44, 43, 43 links). At 1:1 a spine has 32 ports down:
    # ceil(260 / 32) = 9 -> 10 spines again, 26 up; 260 links on ceil(260 / 64) = 5 cores (52 each). At 1.25:1
    # (35 down, ceil(26 / 1.25) = 21 up) 210 links, 4 cores; at 1.5:1 (38 down, 18 up) 180 links, 3 cores.
    # 1:1 buys 2 cores, 130 fibres and twin-port modules: before 10 x ceil(13 / 2) + 3 x 22 = 136, after 10 x 13
    # + 5 x 26 = 260, 124 more; multimode SR8 and 50 m fibre, as every link of this one-hall floor (16 racks).
    # Leaves, spines and leaf-spine links are untouched.
    d = preset_design("fat-tree", 512).replace(oversubscription=(2.0, 2.0), tiers=3)
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(), moves=["spine_uplinks"], samples=16,
                        qps=(1,))
    assert res.baseline.switches == {"leaf": 13, "spine": 10, "core": 3}
    ups = {u.design.oversub(1): u for u in res.upgrades if u.moves == ("spine_uplinks",)}
    assert {o: u.switches["core"] for o, u in ups.items()} == {1.0: 5, 1.25: 4, 1.5: 3}
    u = ups[1.0]
    assert u.switches == {"leaf": 13, "spine": 10, "core": 5}
    assert u.design.oversub(0) == 2.0
    assert u.delta.added() == {"ib-ndr-64x400": 2, "osfp-2x400-sr8-switch": 124, "mmf-50m": 130}
    assert u.delta.removed() == {}
    kept = u.delta.kept()
    assert kept["ib-ndr-64x400"] == 13 + 10 + 3 and kept["nic-cx7-400"] == 512
    # leaf-spine links (130 modules at each end, 260 fibres) and the 136 spine-core modules and 130 fibres stay
    assert kept["osfp-2x400-sr8-switch"] == 130 + 130 + 136 and kept["mmf-50m"] == 260 + 130
    hand = (2 * _price("switch", "ib-ndr-64x400") + 124 * _price("transceiver", "osfp-2x400-sr8-switch")
            + 130 * _price("cable", "mmf-50m"))
    assert u.added_usd == pytest.approx(hand)
    assert u.recabled_server_links == 0


def test_storage_network_move_adds_a_nic_a_port_and_a_dac_per_server(mixtral):
    # 512 GPUs = 64 servers on a 2:1 NDR fabric (42 ports down: 5 servers per leaf, 20 up; 13 leaves, 260 links,
    # ceil(260 / 64) = 5 spines, 5 divides 20) get a separate Ethernet storage network (fabric/cost/bom.py): per
    # server one NIC of the cheapest Ethernet model (nic-2x200-dual, $2,200, below nic-eth-400 and nic-cx8-4x200),
    # a port on the cheapest Ethernet switch (eth-12t-32x400: 32 x 400G = 64 x 200G, half of them down: 32
    # servers per switch -> 2 switches) and a 200G DAC of at least 3 m (dac-200-3m). The compute fabric is
    # untouched: nothing removed, no server moved.
    from fabric.brownfield.site import switch_rack_units

    d = preset_design("fat-tree", 512).replace(oversubscription=(2.0, 1.0))
    res = upgrade_front(installed_from_design(d), mixtral, UpgradeLimits(), moves=["storage_network"], samples=16,
                        qps=(1,))
    u = _only_move(res, "storage_network")
    assert u.design.storage_isolation and not res.baseline.design.storage_isolation
    assert res.baseline.switches == u.switches == {"leaf": 13, "spine": 5}
    assert u.delta.added() == {"nic-2x200-dual": 64, "eth-12t-32x400": 2, "dac-200-3m": 64}
    assert u.delta.removed() == {}
    kept = u.delta.kept()
    assert kept["ib-ndr-64x400"] == 18 and kept["nic-cx7-400"] == 512
    hand = (64 * _price("nic", "nic-2x200-dual") + 2 * _price("switch", "eth-12t-32x400")
            + 64 * _price("cable", "dac-200-3m"))
    assert u.added_usd == pytest.approx(hand)                            # $184,480
    assert u.rack_units_added == 2 * switch_rack_units("eth-12t-32x400")     # the storage switches need room
    assert u.recabled_server_links == 0 and "a separate storage network" in u.changes


# ------------------------------------------------------------------------------------------------ free ports


def _ports_used_per_switch(fab):
    """Links ending on each switch (every network link of a 64 x 400G NDR fabric runs 400G: one port each)."""
    net = fab.link_kind >= 2
    ends = np.concatenate([fab.link_a[net], fab.link_b[net]]) - fab.switch_base
    ends = ends[(ends >= 0) & (ends < fab.n_switches)]
    return np.bincount(ends, minlength=fab.n_switches)


def test_free_port_reserve_drops_options_that_fill_the_leaves(mixtral, clos_1024):
    _, two = clos_1024
    # By hand: a 2:1 leaf uses 40 ports down (5 servers) + 20 up of 64: 4 free; a spine 26 leaves x 2 = 52: 12
    # free. More uplinks on the same leaves (21-24) leave 3-0 free, under a reserve of 4; a leaf of 4 servers
    # (32 down) at 1.5:1 has 22 up (32 / 1.5 = 21.3, rounded up): 10 free, within it.
    inst = installed_from_design(two)
    res = upgrade_front(inst, mixtral, UpgradeLimits(min_free_ports=4), moves=["leaf_uplinks"], samples=16, qps=(1,))
    assert res.free_ports["leaf"]["fewest_free"] == 4 and res.free_ports["spine"]["fewest_free"] == 12
    assert res.baseline.within_limits and res.baseline.fewest_free_ports == 4
    over = {u.design.oversub(0): u for u in res.over_limits if "min_free_ports" in u.violations}
    same_leaves = [u for u in res.over_limits if u.switches["leaf"] == 26]
    assert len(same_leaves) >= 3 and all("min_free_ports" in u.violations for u in same_leaves)
    full = [u for u in same_leaves if u.free_ports["leaf"]["fewest_free"] == 0]
    assert full and "leaves 0 free port(s) on a leaf switch" in full[0].violations["min_free_ports"]
    assert over                                                          # the reserve bound something
    for u in res.upgrades:                                               # everything evaluated keeps 4 free
        if not u.violations:
            used = _ports_used_per_switch(build_fabric(u.design))
            assert used.max() <= 64 - 4, u.label()
    for u in res.over_limits:
        used = _ports_used_per_switch(build_fabric(u.design))
        assert used.max() <= 64                                          # never more ports than a switch has
        if "min_free_ports" in u.violations:
            assert used.max() > 64 - 4
    # without the reserve those options are offered; a reserve above what the installed leaves have marks the
    # installed fabric itself
    free = upgrade_front(inst, mixtral, UpgradeLimits(), moves=["leaf_uplinks"], samples=16, qps=(1,))
    assert any(u.switches == {"leaf": 26, "spine": 12} for u in free.upgrades)
    tight = upgrade_front(inst, mixtral, UpgradeLimits(min_free_ports=5), moves=["leaf_uplinks"], samples=16,
                          qps=(1,))
    assert "min_free_ports" in tight.baseline.violations
    with pytest.raises(FabricError, match="min_free_ports"):
        UpgradeLimits(min_free_ports=2.5)


def test_no_option_needs_more_ports_than_a_switch_has(mixtral, clos_1024):
    # Every hardware option of every move, priced or left out for a limit: no switch has more links than ports.
    _, two = clos_1024
    res = upgrade_front(installed_from_design(two), mixtral, UpgradeLimits(budget_usd=0), moves=HARDWARE_MOVES,
                        samples=16, qps=(1,))
    for u in res.upgrades + res.over_limits:
        assert _ports_used_per_switch(build_fabric(u.design)).max() <= 64, u.label()
    assert len(res.over_limits) >= 10


def test_an_answer_says_when_the_dearer_end_of_the_front_gains_next_to_nothing(mixtral):
    """256-GPU fat tree at 2:1 with ECMP, the Upgrade page's defaults ($360k): the free ECMP -> spray change and a
    $141k re-cabling are both on the front, the second by ~1.6 ms. The answer must not read like advice to buy it."""
    two = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0))
    res = upgrade_front(installed_from_design(two), mixtral, UpgradeLimits(budget_usd=360_000), samples=64)
    first, top = res.front[0], res.front[-1]
    assert len(res.front) >= 2 and first.net_usd == 0 and top.net_usd > 100_000
    gain = first.p99_s - top.p99_s
    assert 0 < gain < 0.005 * first.p99_s                     # on the front, by a hair
    assert f"gains only {gain * 1e3:,.1f} ms" in res.answer and f"${top.net_usd:,.0f} more" in res.answer
    # a real gain is not flagged: an all-to-all-bound job (128 GPUs, 4 x 256 MiB per step, 10 ms of compute) on a
    # 4:1 fat tree, where buying uplinks halves the p99 of the free change
    from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

    a2a = Workload(jobs=(Job("a2a", world_size=128, groups=(ProcessGroup("ep", 128, "ep", rank_start=0, rank_stride=1),),
                             ops=(CommOp("all_to_all", 256 << 20, "ep", count_per_step=4),), compute_time_s=0.01),))
    four = preset_design("fat-tree", 128).replace(oversubscription=(4.0, 1.0))
    big = upgrade_front(installed_from_design(four), a2a, UpgradeLimits(budget_usd=2_000_000), samples=64)
    b0, b1 = big.front[0], big.front[-1]
    assert b0.net_usd == 0 and b1.p99_s < 0.6 * b0.p99_s
    assert "gains only" not in big.answer
