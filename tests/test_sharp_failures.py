"""Issue 34, item 10: in-network reduction (SHARP trees) under failures, slow switches and fallback.

Every expected figure is computed by hand from the fabric's shape and the rules of docs/evaluator.md ("In-network
reduction", "Failures, slow switches and fallback"): a tree's leaf sends its share B once up one link to the
tree's spine and gets it once down; a link carries one tree; an instance any of whose trees finds no place runs its
ordinary algorithm (here the ring: the designs force CollNet, ``nccl_algo: collnet``, so NCCL's fallback is the
ring, 2 (p - 1) / p S per rank, facts.md section 1) at the same time as the trees, and the two parts add on the links
and NIC ports they share. A 400 Gb/s InfiniBand port moves 400e9 / 8 x 0.96 = 48e9 B/s of goodput (transport
profile ``infiniband``); the lower bound runs at the line rate, 50e9 B/s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.design import Design
from fabric.evaluate import Scenario, evaluate
from fabric.evaluate.innetwork import in_network_lines
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 1 << 30
GOODPUT = 400e9 / 8 * 0.96          # bytes/s of one 400G InfiniBand NIC port or link
LINE = 400e9 / 8                    # ... at line rate (the lower bound)
REPO = Path(__file__).resolve().parent.parent


def all_reduce(size: int, world: int, *, group: int, stride: int) -> Workload:
    g = ProcessGroup("g", group, "dp", rank_start=0, rank_stride=stride)
    return Workload(jobs=(Job("job", world_size=world, groups=(g,), ops=(CommOp("all_reduce", size, "g"),)),))


# ---------------------------------------------------------------- fabric A: 128 one-GPU hosts, saturated uplinks

def fabric_a(routing: str) -> Design:
    """128 one-GPU hosts on 4 leaves of 32 down and 32 up under 2 spines (16 links from each leaf to each spine).
    One flow per rank pair (1 channel x 1 QP), CollNet forced so that an instance without a tree runs the ring."""
    d = Design(name=f"A {routing}", gpus=128, gpus_per_node=1, family="clos", routing=routing,
               in_network_reduction=True, nccl_algo="collnet", channels_per_nic=1, qps_per_connection=1)
    s = build_fabric(d).structure
    assert (s["leaves"], s["spines"], s["leaf_up"], s["leaf_spine_bundle"]) == (4, 2, 32, 16)
    return d


#: groups of 4 with stride 32: instance c = hosts {c, c + 32, c + 64, c + 96}, one on each leaf; 32 instances, so
#: 32 trees that hold all 32 uplinks of every leaf (B = S per tree link)
WL_A = all_reduce(GIB, 128, group=4, stride=32)
CABLE = Scenario(name="cable", fail_links=("leaf0-spine0",))
SPINE = Scenario(name="spine", fail_switches=("spine0",))


def test_healthy_trees_hold_every_uplink():
    ev = evaluate(fabric_a("ecmp"), WL_A, samples=32)
    op = ev.ops[0]
    assert (op.aggregation_trees, op.fallback_instances) == (32, 0)
    assert op.time_p99_s == pytest.approx(GIB / GOODPUT, rel=0.01)        # NIC and tree link both carry S
    assert ev.lower_bound_split_s == pytest.approx({"compute": 0.0, "nic": GIB / LINE}, rel=1e-9)


def test_one_cable_down_one_instance_falls_back_and_shares_a_saturated_leaf():
    """leaf0 keeps 31 uplinks, all holding trees: 31 trees, instance 31 runs the ring (1.5 S per rank, one flow of
    1.5 S from each leaf to the next). Its flow out of leaf0 lands on a link that carries a tree's S (every live
    link of leaf0 does), so that link carries S + 1.5 S = 2.5 S: 2.5 S / 48e9 = 55.9 ms for 1 GiB, whatever ECMP
    draws. Before, the fallback saw the trees take 31/(31 + 1.5) of every uplink (capped at 90 %) and its one flow
    ran at a tenth of the link: 15 S / 48e9, 336 ms."""
    ev = evaluate(fabric_a("ecmp"), WL_A, CABLE, samples=64)
    op = ev.ops[0]
    assert (op.aggregation_trees, op.fallback_instances, op.fallback_algorithm) == (31, 1, "ring")
    assert op.time_p50_s == pytest.approx(2.5 * GIB / GOODPUT, rel=0.005)
    assert op.time_p99_s == pytest.approx(2.5 * GIB / GOODPUT, rel=0.005)
    st = op.in_network
    assert st["tightest"] == {"leaf": "leaf0", "uplinks": 31, "trees": 32}
    assert st["lacking"] == "leaf uplinks" and st["healthy_trees"] == 32 and st["cables_down"] == 1


def test_spine_down_costs_at_least_what_one_of_its_cables_costs():
    """spine0 down: 16 uplinks per leaf, 16 trees on spine1, 16 instances on the ring. Each leaf sends 16 flows of
    1.5 S to the next leaf over its 16 uplinks, all holding trees: the busiest carries S + m x 1.5 S with m the most
    flows ECMP puts on one link (>= 1; 16 balls in 16 bins almost never spread one per bin). So every sample is
    (1 + 1.5 m) S / 48e9 for a whole m, and never below the single cable's 2.5 S."""
    cable = evaluate(fabric_a("ecmp"), WL_A, CABLE, samples=64).ops[0]
    spine = evaluate(fabric_a("ecmp"), WL_A, SPINE, samples=64).ops[0]
    assert (spine.aggregation_trees, spine.fallback_instances) == (16, 16)
    for t in (spine.time_p50_s, spine.time_p99_s):
        m = (t * GOODPUT / GIB - 1.0) / 1.5
        assert abs(m - round(m)) < 0.01 and 2 <= round(m) <= 16, m
    assert spine.time_p50_s >= cable.time_p99_s
    assert spine.in_network["failed"] == {"spine0": 16} and spine.in_network["live_spines"] == 1


def test_adaptive_routing_by_hand():
    """Adaptive routing spreads the fallback evenly (x 1.05, the profile's imbalance). Cable down: leaf0's 31 links
    carry S + 1.5 S / 31 x 1.05 = 1.051 S, below the ring's 1.5 S per NIC: 1.5 S / 48e9. Spine down: 16 flows of
    1.5 S over 16 tree links: S + 1.5 S x 1.05 = 2.575 S (2.625 S before: the trees' share 16/40 of each group)."""
    cable = evaluate(fabric_a("adaptive"), WL_A, CABLE, samples=32).ops[0]
    spine = evaluate(fabric_a("adaptive"), WL_A, SPINE, samples=32).ops[0]
    assert cable.time_p99_s == pytest.approx(1.5 * GIB / GOODPUT, rel=0.005)
    assert spine.time_p99_s == pytest.approx(2.575 * GIB / GOODPUT, rel=0.005)


def test_bound_charges_the_fallback_to_the_uplinks_not_the_nic():
    """The bound of the op is the trees' NIC term S / 50e9 plus, when instances fall back, what the fallback needs
    more, charged to the leaf uplinks whose loss took their trees. Spine down: the ring needs 1.5 S per NIC and the
    shared uplinks carry, per link on average, a tree's S plus 16 x 1.5 S / 16: 2.5 S at line rate. Cable down: the
    ring's 1.5 S per NIC (leaf0's links average S + 1.5 S / 31). The NIC term stays S / 50e9 (it rose to 1.5 S
    before, with no NIC changed)."""
    spine = evaluate(fabric_a("ecmp"), WL_A, SPINE, samples=32)
    assert spine.lower_bound_s == pytest.approx(2.5 * GIB / LINE, rel=1e-9)
    assert spine.lower_bound_split_s == pytest.approx(
        {"compute": 0.0, "nic": GIB / LINE, "leaf uplinks": 1.5 * GIB / LINE}, rel=1e-9)
    assert spine.ops[0].bound_by == "leaf uplinks" and spine.lower_bound_by == "leaf uplinks"
    cable = evaluate(fabric_a("ecmp"), WL_A, CABLE, samples=32)
    assert cable.lower_bound_split_s == pytest.approx(
        {"compute": 0.0, "nic": GIB / LINE, "leaf uplinks": 0.5 * GIB / LINE}, rel=1e-9)
    for ev in (spine, cable):                                # no sample below the bound
        assert ev.step_samples_s.min() >= ev.lower_bound_s


def test_words_say_what_the_trees_did_under_a_failed_spine():
    ev = evaluate(fabric_a("ecmp"), WL_A, SPINE, samples=32)
    (line,) = in_network_lines(ev.ops)
    assert "spine0 is down: it held 16 of the 32 trees the healthy fabric builds" in line
    assert "built again on the 1 live spine, 16 fit" in line
    assert ("16 of 32 instance(s) found no tree (leaf0 has 16 uplinks left for 32 trees, one tree per link) and "
            "ran NCCL's ring algorithm over the network") in line
    assert f"{ev.ops[0].time_p99_s * 1e3:.3g} ms at p99" in line
    # the same words from the JSON dicts (fabric evaluate --json, the Design page's cached evaluations)
    assert in_network_lines([o.to_dict() for o in ev.ops]) == [line]



def test_bound_charges_switch_tree_slots_when_the_switch_limit_binds(tmp_path):
    """Switches that take part in one tree each (NVIDIA Quantum's limit): on fabric A the first instance's tree
    takes every leaf's slot and the other 31 run the ring (1.5 S per NIC). The bound: the trees' S / 50e9 on the
    NIC, and the ring's extra 0.5 S charged to the switch tree slots (the uplinks average S / 32 + 31 x 1.5 S / 32
    = 1.48 S, below 1.5 S)."""
    import json

    from fabric.catalog import load_catalog

    row = {"model": "ib-one-tree-64x400", "vendor": "test", "fabric": "infiniband", "ports": 64,
           "port_speed_gbps": 400, "price_usd": 40000, "power_w": 750, "latency_ns": 130, "source": "test",
           "sharp_trees": 1}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"switches": [row]}))
    cat = load_catalog(path)
    ev = evaluate(fabric_a("ecmp").replace(switch_model="ib-one-tree-64x400"), WL_A, catalog=cat, samples=32)
    op = ev.ops[0]
    assert (op.aggregation_trees, op.fallback_instances) == (1, 31)
    assert op.in_network["lacking"] == "switch tree slots" and op.bound_by == "switch tree slots"
    assert ev.lower_bound_split_s == pytest.approx(
        {"compute": 0.0, "nic": GIB / LINE, "switch tree slots": 0.5 * GIB / LINE}, rel=1e-9)


# ---------------------------------------------------------------- fabric B: two GPUs share each NIC

def fabric_b(routing: str = "adaptive") -> Design:
    """256 H100 in servers of 8 with one 400G NIC per two GPUs (4 NICs per server), 4 leaves of 32 down and 32 up
    under 2 spines (16 links from each leaf to each)."""
    d = Design(name="B", gpus=256, gpus_per_node=8, nics_per_gpu=0.5, family="clos", routing=routing,
               in_network_reduction=True, nccl_algo="collnet", channels_per_nic=1, qps_per_connection=1)
    f = build_fabric(d)
    s = f.structure
    assert (s["leaves"], s["spines"], s["leaf_up"], s["leaf_spine_bundle"]) == (4, 2, 32, 16)
    assert f.gpu_nics[0, 0] == f.gpu_nics[1, 0] != f.gpu_nics[2, 0]      # GPUs 2i and 2i + 1 share a NIC
    return d


#: groups of 8 with stride 32: instance c has GPUs c, c + 32, ..., c + 224, two on each leaf (leaf = GPU // 64), so
#: 32 trees hold every leaf's 32 uplinks; GPUs c and c xor 1 (instances c and c xor 1) share a NIC port
WL_B = all_reduce(GIB, 256, group=8, stride=32)


def test_shared_nic_port_carries_the_tree_and_the_fallback():
    """Healthy: each port carries two trees' S (its two GPUs'): 2 S / 48e9. Cable leaf0-spine0 down: instance 31
    runs the ring (2 x 7/8 S = 1.75 S per rank) while its GPUs' NIC partners (instance 30) send S to their trees:
    those ports carry S + 1.75 S = 2.75 S / 48e9. The shared uplinks carry S + 1.75 S / 31 x 1.05 = 1.06 S, less.
    Before, each part counted only its own GPUs on the port: max(2 S, 1.75 S), as if nothing had failed."""
    d = fabric_b()
    base = evaluate(d, WL_B, samples=32).ops[0]
    assert (base.aggregation_trees, base.fallback_instances) == (32, 0)
    assert base.time_p99_s == pytest.approx(2 * GIB / GOODPUT, rel=0.005)
    cable = evaluate(d, WL_B, CABLE, samples=32).ops[0]
    assert (cable.aggregation_trees, cable.fallback_instances) == (31, 1)
    assert cable.time_p99_s == pytest.approx(2.75 * GIB / GOODPUT, rel=0.005)
    assert cable.lower_bound_s == pytest.approx(2.75 * GIB / LINE, rel=1e-9)


def test_slow_spine_with_shared_nics_by_hand():
    """A spine at half speed holds 16 of the 32 trees: their links take S / (0.5 x 48e9) = 2 S / 48e9, exactly what
    the NIC ports (two GPUs, 2 S) already take, so the op is unchanged; at a quarter speed they take 4 S / 48e9.
    With one NIC per GPU (fabric A) the same half-speed spine doubles the op (S -> 2 S). The evaluation says which
    case it is."""
    d = fabric_b()
    half = evaluate(d, WL_B, Scenario(name="half", slow_switches=1, slow_factor=0.5), samples=32)
    assert half.ops[0].time_p99_s == pytest.approx(2 * GIB / GOODPUT, rel=0.005)
    (line,) = in_network_lines(half.ops)
    assert "runs at 50% speed and holds 16 of the 32 trees" in line
    assert "the NIC ports (2 GPUs to a NIC) take" in line and "no longer than the NIC ports already did" in line
    quarter = evaluate(d, WL_B, Scenario(name="quarter", slow_switches=1, slow_factor=0.25), samples=32)
    assert quarter.ops[0].time_p99_s == pytest.approx(4 * GIB / GOODPUT, rel=0.005)
    assert "so the trees take" in in_network_lines(quarter.ops)[0]
    own = evaluate(fabric_a("ecmp"), WL_A, Scenario(name="half", slow_switches=1, slow_factor=0.5), samples=32)
    assert own.ops[0].time_p99_s == pytest.approx(2 * GIB / GOODPUT, rel=0.005)
    assert own.ops[0].in_network["slow_factor"] == 0.5 and sum(own.ops[0].in_network["slow"].values()) == 16


def test_slow_spine_without_trees_says_so():
    """Groups of 32 with stride 1 on fabric A: each instance is one leaf's 32 hosts, so its tree is the leaf itself
    (no uplink, no spine): a slow spine holds none of the 4 trees and the op keeps S / 48e9."""
    ev = evaluate(fabric_a("ecmp"), all_reduce(GIB, 128, group=32, stride=1),
                  Scenario(name="half", slow_switches=1, slow_factor=0.5), samples=32)
    (line,) = in_network_lines(ev.ops)
    assert "runs at 50% speed but holds none of the 4 trees, which run at full speed" in line
    assert ev.ops[0].time_p99_s == pytest.approx(GIB / GOODPUT, rel=0.005)


# ---------------------------------------------------------------- the issue's design (regressions)

@pytest.fixture(scope="module")
def issue_case():
    """The front's design of the issue: 1,024 H100, Mixtral-8x7B plan (TP 2, EP 8), a 3:1 Clos of 11 leaves (48 down,
    16 up) under 4 spines, one 400G NIC per two GPUs, ECMP, InfiniBand + SHARP. The expert-DP all-reduce has 16
    instances over all 11 leaves: 16 trees hold the 16 uplinks of every leaf, 4 on each spine."""
    from fabric.workload.presets import preset_workload

    d = Design(name="issue 34.10", gpus=1024, family="clos", nics_per_gpu=0.5, oversubscription=(3.0, 1.0),
               routing="ecmp", placement="packed", in_network_reduction=True)
    s = build_fabric(d).structure
    assert (s["leaves"], s["spines"], s["leaf_up"], s["leaf_spine_bundle"]) == (11, 4, 16, 4)
    wl = preset_workload("mixtral-8x7b", gpus=1024)
    return d, wl, {name: evaluate(d, wl, sc, samples=64) for name, sc in (
        ("baseline", None), ("fail-spine", Scenario(name="fail-spine", failed_spines=1)),
        ("fail-link", Scenario(name="fail-link", failed_links=1)),
        ("slow-switch", Scenario(name="slow-switch", slow_switches=1)),
        ("cable", Scenario(name="cable", fail_links=("leaf0-spine1",))),
        ("spine", Scenario(name="spine", fail_switches=("spine1",))))}


def edp(ev):
    return next(o for o in ev.ops if o.group == "edp" and "last" not in o.name)


def test_issue_a_cable_never_costs_more_than_its_spine(issue_case):
    """Before: fail-link +31.4 %, fail-spine +29.1 %. A spine's failure takes all its cables, so it must cost at least
    as much as any one of them."""
    _, _, ev = issue_case
    p99 = {k: v.step_time_s["p99"] for k, v in ev.items()}
    assert p99["fail-link"] <= p99["fail-spine"]
    assert p99["cable"] <= p99["spine"]
    assert edp(ev["cable"]).time_p99_s <= edp(ev["spine"]).time_p99_s


def test_issue_fail_spine_costs_the_fallback_not_a_capacity_share(issue_case):
    """fail-spine: 12 trees, 4 instances on NCCL's tree. Two GPUs of one fallback instance pair share each port
    (instances 12-15: pairs 12/13 and 14/15), and NCCL's tree moves 2 S per rank: 4 S per port, 4 x 26.2 MB / 48e9
    = 2.18 ms; the shared uplinks add ECMP collisions on top. Before: 3.31 ms at p99 (the trees' share of each
    uplink group slowed the fallback's busiest link as if it shared the group's capacity)."""
    _, _, ev = issue_case
    op = edp(ev["fail-spine"])
    assert (op.aggregation_trees, op.fallback_instances, op.fallback_algorithm) == (12, 4, "tree")
    nic = 4 * op.bytes / GOODPUT
    assert nic <= op.time_p50_s <= 1.1 * nic
    assert op.time_p99_s < 1.25 * nic


def test_issue_bound_keeps_its_nic_term(issue_case):
    """No NIC changed: the bound's NIC term is the healthy 220.1 ms in every scenario (before: 362 ms under
    fail-spine); what the fallback adds is charged to the leaf uplinks."""
    _, _, ev = issue_case
    nic = ev["baseline"].lower_bound_split_s["nic"]
    assert nic == pytest.approx(0.2201, abs=5e-4)
    for name, e in ev.items():
        assert e.lower_bound_split_s["nic"] == pytest.approx(nic, rel=1e-9), name
        assert sum(e.lower_bound_split_s.values()) == pytest.approx(e.lower_bound_s, rel=1e-9)
    assert ev["fail-spine"].lower_bound_split_s["leaf uplinks"] > 0.1
    assert edp(ev["fail-spine"]).bound_by == "leaf uplinks"


def test_issue_slow_switch_is_explained(issue_case):
    """slow-switch stays +0.0 %: the half-speed spine holds 4 of the 16 expert-DP trees, whose links then take
    S / 24e9, exactly what the NIC ports shared by two GPUs already take (2 S / 48e9); the evaluation says so."""
    _, _, ev = issue_case
    assert ev["slow-switch"].step_time_s["p99"] == pytest.approx(ev["baseline"].step_time_s["p99"], rel=1e-9)
    st = edp(ev["slow-switch"]).in_network
    assert sum(st["slow"].values()) == 4 and st["gpus_per_nic"] == 2
    assert st["slow_tree_link_s"] == pytest.approx(st["nic_s"], rel=1e-9)
    lines = [x for x in in_network_lines(ev["slow-switch"].ops) if "group edp" in x]
    assert len(lines) == 1 and "holds 4 of the 16 trees" in lines[0] and "unchanged" in lines[0]


def test_cli_prints_what_the_trees_did(tmp_path):
    """fabric evaluate --scenario prints the words (fabric/cli/cmd_evaluate.py, over the core's in_network_lines)."""
    from fabric.design import dump_design
    from fabric.workload.model import dump_workload_json

    design, wl = tmp_path / "a.json", tmp_path / "w.json"
    design.write_text(dump_design(fabric_a("ecmp")))
    wl.write_text(dump_workload_json(WL_A))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "fabric.cli.main", "evaluate", "-w", str(wl), "-d", str(design),
                          "--scenario", '{"name": "spine", "fail_switches": ["spine0"]}', "--samples", "32"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "spine0 is down: it held 16 of the 32 trees the healthy fabric builds" in out.stdout


# ---------------------------------------------------------------- placements kept by cabling across builds

def test_healthy_placement_kept_across_builds_failed_ones_not():
    """A healthy fabric's trees are placed once per cabling and group: a rebuild of the same cabling (the fabric and
    healthy-model caches emptied, as a search's worker meets a cabling again) reuses the placement and gives the
    same evaluation; a failure scenario places its own trees (its spine is gone)."""
    from fabric.evaluate import innetwork
    from fabric.evaluate.network_models import _HEALTHY_MODELS
    from fabric.topology.build import clear_fabric_cache

    innetwork._HEALTHY_PLACEMENTS.clear()
    clear_fabric_cache()
    _HEALTHY_MODELS.clear()
    calls = []
    real = innetwork.place_trees

    def counting(shape, fabric, model, limit=innetwork.NO_LIMIT):
        calls.append(model.alive_links is None)
        return real(shape, fabric, model, limit)

    innetwork.place_trees = counting
    try:
        first = evaluate(fabric_a("ecmp"), WL_A, samples=32)
        assert calls == [True]
        clear_fabric_cache()
        _HEALTHY_MODELS.clear()
        again = evaluate(fabric_a("ecmp"), WL_A, samples=32)
        assert calls == [True]                          # the same cabling and group: placed once
        assert again.step_time_s == first.step_time_s
        assert again.ops[0].aggregation_trees == first.ops[0].aggregation_trees == 32
        failed = evaluate(fabric_a("ecmp"), WL_A, scenario=SPINE, samples=32)
        assert calls[1:] and not any(calls[1:])        # placed again on the failed fabric only
        # spine0 gone: 16 uplinks per leaf, 16 trees on spine1 (as test_spine_down_costs_at_least_what_one_of_its_cables_costs counts)
        assert (failed.ops[0].aggregation_trees, failed.ops[0].fallback_instances) == (16, 16)
    finally:
        innetwork.place_trees = real
