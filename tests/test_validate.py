"""Packet-level cross-check (fabric.validate): topology translation, hash replica, fluid bound, CLI, and one real
ns-3 comparison (skipped when ns-3's bindings cannot be imported; the import alone takes ~20 s)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fabric.errors import DesignError, FabricError, WorkloadError
from fabric.evaluate.maxmin import fluid_completion_times
from fabric.topology import build_fabric
from fabric.validate.fluid import (ecmp_incidence, fluid_bound, goodput_fraction, spray_incidence,
                                   weighted_fluid_completion_times)
from fabric.validate.network import (ADDR_BASE, TCP, ecmp_path, flow_hash, packet_network, spray_split,
                                     switch_salts)
from fabric.validate.packet import (DST_PORT_BASE, SRC_PORT_BASE, _flows_tuples, op_slice, run_packet, select_op,
                                    slice_flows)
from fabric.validate.scenarios import one_op_workload, validation_catalog, validation_design


@pytest.fixture(scope="module")
def cat():
    return validation_catalog()


def _net(cat, o=1, hosts=32, routing="ecmp"):
    d = validation_design(o, routing=routing, hosts=hosts)
    f = build_fabric(d, cat)
    return d, f, packet_network(f)


# ------------------------------------------------------------------ import hygiene


def test_module_imports_without_ns3():
    code = ("import sys, fabric.validate, fabric.validate.packet, fabric.validate.ns3sim, fabric.cli.cmd_validate; "
            "print('ns' in sys.modules or 'cppyy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ topology translation


@pytest.mark.parametrize("o, up, bundle", [(1, 8, 4), (2, 4, 2)])
def test_leaf_spine_translation(cat, o, up, bundle):
    d, f, net = _net(cat, o)
    assert (net.n_hosts, net.n_switches) == (32, 6)
    assert net.n_links == 32 + 4 * up
    assert sorted(net.link_kind) == sorted(["nic-leaf"] * 32 + ["leaf-spine"] * (4 * up))
    # the exact cabling of the fabric: every network link, same ends
    for k, fid in enumerate(net.link_fabric_id):
        assert f.link_kind_name(int(fid)) == net.link_kind[k]
    # one link per host; the host's address is its end of that link; addresses unique
    assert len(set(net.host_link.tolist())) == 32
    addrs = net.link_addr.ravel()
    assert len(set(addrs.tolist())) == addrs.size and addrs.min() == ADDR_BASE + 1
    for h in range(32):
        k = net.host_link[h]
        side = 0 if net.link_ends[k, 0] == h else 1
        assert net.host_addr[h] == net.link_addr[k, side]
    # delays: propagation + half of each end's latency (500 ns switches and NICs)
    assert np.allclose(net.link_delay_s[np.array(net.link_kind) == "nic-leaf"], 10e-9 + 500e-9)
    leaf_of = {h: net.other_end(int(net.host_link[h]), h) for h in range(32)}
    assert len(set(leaf_of.values())) == 4 and all(sum(v == L for v in leaf_of.values()) == 8
                                                   for L in set(leaf_of.values()))
    for h in range(32):
        for L in set(leaf_of.values()):
            cand = net.next_hops[L][h]
            if L == leaf_of[h]:
                assert cand == (int(net.host_link[h]),)
            else:
                assert len(cand) == up and all(net.link_kind[k] == "leaf-spine" for k in cand)
        for s in range(net.n_hosts + 4, net.n_nodes):   # spines
            cand = net.next_hops[s][h]
            assert len(cand) == bundle and all(net.other_end(k, s) == leaf_of[h] for k in cand)


def test_translation_rejects_multi_gpu_nodes(cat):
    d = validation_design(1).replace(gpus_per_node=8, scale_up_size=8)
    with pytest.raises(DesignError, match="gpus_per_node"):
        packet_network(build_fabric(d, cat))


# ------------------------------------------------------------------ hash replica


def _np_flow_hash(src, dst, proto, sport, dport, salt):
    """An independent vectorized replica (numpy uint64 wraps like C++)."""
    def mix(x):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))
    with np.errstate(over="ignore"):
        s = np.uint64(salt) * np.uint64(0x9E3779B97F4A7C15)
        h = mix(((src.astype(np.uint64) << np.uint64(32)) | dst.astype(np.uint64)) ^ s)
        return mix(h ^ ((np.uint64(proto) << np.uint64(32)) | (sport.astype(np.uint64) << np.uint64(16))
                        | dport.astype(np.uint64)))


def test_flow_hash_golden_values_and_replica():
    # golden values: the C++ protocol in ns3sim.py must keep producing these (checked live in the ns-3 test)
    assert flow_hash(0x0A000001, 0x0A000005, 6, 10000, 40000, 0) == 8933551433218254728
    assert flow_hash(0x0A000001, 0x0A000005, 6, 10001, 40000, 12345) == 16325833550933582966
    assert flow_hash(0xFFFFFFFF, 0, 17, 65535, 0, (1 << 64) - 1) == 1313197377175642755
    rng = np.random.default_rng(1)
    src = rng.integers(0, 2**32, 500, dtype=np.uint64)
    dst = rng.integers(0, 2**32, 500, dtype=np.uint64)
    sp = rng.integers(0, 2**16, 500, dtype=np.uint64)
    dp = rng.integers(0, 2**16, 500, dtype=np.uint64)
    salt = 0xDEADBEEFCAFEF00D
    got = [flow_hash(int(a), int(b), TCP, int(c), int(e), salt) for a, b, c, e in zip(src, dst, sp, dp)]
    assert got == [int(x) for x in _np_flow_hash(src, dst, TCP, sp, dp, salt)]


def test_flow_hash_spreads_evenly_and_salts_differ():
    salts = switch_salts(6, 0)
    assert len(set(salts.tolist())) == 6 and list(switch_salts(6, 0)) == list(salts)
    assert list(switch_salts(6, 1)) != list(salts)
    counts = np.bincount([flow_hash(ADDR_BASE + 1, ADDR_BASE + 9, TCP, SRC_PORT_BASE + i, DST_PORT_BASE + i,
                                    int(salts[0])) % 8 for i in range(8000)], minlength=8)
    chi2 = float(((counts - 1000.0) ** 2 / 1000.0).sum())
    assert chi2 < 30.0        # 7 degrees of freedom: p ~ 1e-4
    # choices at two switches are not correlated (per-switch salt)
    a = [flow_hash(1, 2, TCP, i, 7, int(salts[0])) % 4 for i in range(4000)]
    b = [flow_hash(1, 2, TCP, i, 7, int(salts[1])) % 4 for i in range(4000)]
    joint = np.bincount(np.array(a) * 4 + np.array(b), minlength=16)
    assert joint.min() > 150


def test_ecmp_paths_follow_the_cabling(cat):
    _, _, net = _net(cat, 1)
    salts = switch_salts(net.n_switches, 3)
    for src, dst in [(0, 1), (0, 9), (31, 0), (12, 27)]:
        p = ecmp_path(net, src, dst, 10000, 40000, salts)
        assert len(p) == (2 if src // 8 == dst // 8 else 4)
        node = src
        for dk in p:
            k, rev = divmod(dk, 2)
            assert net.link_ends[k, rev] == node
            node = int(net.link_ends[k, 1 - rev])
        assert node == dst
    # every uplink gets used by some flow
    ups = {ecmp_path(net, 0, 9, SRC_PORT_BASE + i, DST_PORT_BASE, salts)[1] // 2 for i in range(200)}
    assert len(ups) == 8


def test_spray_split_is_even(cat):
    _, _, net = _net(cat, 1)
    share = spray_split(net, 0, 9)
    assert len(share) == 1 + 8 + 8 + 1
    kinds = {}
    for dk, w in share.items():
        kinds.setdefault(net.link_kind[dk // 2], []).append(w)
    assert np.allclose(kinds["leaf-spine"], 1 / 8) and len(kinds["leaf-spine"]) == 16
    assert np.allclose(sorted(kinds["nic-leaf"]), [1, 1])


# ------------------------------------------------------------------ fluid bound


def test_weighted_fluid_equals_maxmin_with_unit_weights():
    rng = np.random.default_rng(5)
    for _ in range(20):
        nf, nl = int(rng.integers(2, 30)), int(rng.integers(3, 12))
        flow_of, link_of = [], []
        for f in range(nf):
            links = rng.choice(nl, size=int(rng.integers(1, 4)), replace=False)
            flow_of += [f] * len(links)
            link_of += links.tolist()
        b = rng.uniform(1, 10, nf)
        cap = rng.uniform(1, 3, nl)
        ref = fluid_completion_times(b, np.array(flow_of), np.array(link_of), cap)
        got = weighted_fluid_completion_times(b, np.array(flow_of), np.array(link_of), np.ones(len(flow_of)), cap)
        assert np.allclose(got, ref, rtol=1e-9)


def test_fluid_bound_closed_forms(cat):
    d, f, net = _net(cat, 1)
    g = goodput_fraction()
    assert g == pytest.approx(1448 / 1502)
    rate = 10e9 / 8 * g
    S = 4_000_000
    wl1, job, op = op_slice(one_op_workload("all_reduce", S, 32), 0)
    src, dst, nb, tr = slice_flows(f, d, job, op)
    assert tr.algorithm == "ring" and len(src) == 32 and (dst == (src + 1) % 32).all()
    assert np.allclose(nb, 2 * 31 / 32 * S, atol=1)
    flows = _flows_tuples(net, src, dst, nb)
    for routing in ("ecmp", "spray"):       # one cross-leaf flow per leaf: NIC-bound either way
        t, _ = fluid_bound(net, flows, routing=routing, salts=switch_salts(6, 0))
        assert t.max() == pytest.approx(2 * 31 / 32 * S / rate, rel=1e-6)
    # all-to-all, spraying on 1:1: NIC-bound (31/32 S); on 2:1 uplink-bound: 8 hosts x 24/32 S over 4 uplinks
    for o, expect in [(1, 31 / 32 * S / rate), (2, 8 * 24 / 32 * S / 4 / rate)]:
        d2, f2, net2 = _net(cat, o, routing="spray")
        wl1, job, op = op_slice(one_op_workload("all_to_all", S, 32), 0)
        src, dst, nb, tr = slice_flows(f2, d2, job, op)
        assert len(src) == 32 * 31 and np.allclose(nb, S / 32, atol=1)
        t, _ = fluid_bound(net2, _flows_tuples(net2, src, dst, nb), routing="spray")
        assert t.max() == pytest.approx(expect, rel=1e-6)


def test_ecmp_fluid_bound_matches_busiest_link(cat):
    d, f, net = _net(cat, 2)
    wl1, job, op = op_slice(one_op_workload("all_to_all", 3_200_000, 32), 0)
    src, dst, nb, _ = slice_flows(f, d, job, op)
    flows = _flows_tuples(net, src, dst, nb)
    salts = switch_salts(net.n_switches, 7)
    t, paths = fluid_bound(net, flows, routing="ecmp", salts=salts)
    flow_of, link_of, _ = ecmp_incidence(net, flows, salts)
    load = np.bincount(link_of, weights=nb[flow_of], minlength=2 * net.n_links)
    cap = 10e9 / 8 * goodput_fraction()
    # equal flows: the last one finishes when the busiest link has drained
    assert t.max() == pytest.approx(load.max() / cap, rel=1e-6)
    # spraying: a flow's shares add up to one per hop (2 hops inside a leaf, 4 across)
    fo, lo, w = spray_incidence(net, flows)
    hops = np.bincount(fo, weights=w, minlength=len(flows))
    expect = np.where(src // 8 == dst // 8, 2.0, 4.0)
    assert np.allclose(hops, expect)


# ------------------------------------------------------------------ op selection and errors


def test_select_op_and_errors(cat):
    wl = one_op_workload("all_to_all", 1_000_000, 32)
    job, op = select_op(wl, 0)
    assert op.kind == "all_to_all"
    with pytest.raises(WorkloadError, match="out of range"):
        select_op(wl, 1)
    d = validation_design(1)
    with pytest.raises(DesignError, match="'ecmp', 'spray' or 'spray_rr'"):
        run_packet(d, wl, catalog=cat, routing="adaptive")
    with pytest.raises(WorkloadError, match="endpoints"):
        run_packet(d, wl, catalog=cat, routing="ecmp", max_endpoints=16)


def test_missing_ns3_gives_install_hint(cat, monkeypatch, capsys):
    import fabric.validate.ns3sim as ns3sim

    monkeypatch.setattr(ns3sim, "ns3_available", lambda: False)
    with pytest.raises(FabricError, match=r"pip install \.\[packet\]"):
        run_packet(validation_design(1), one_op_workload("all_reduce", 1_000_000, 32), catalog=cat)
    from fabric.cli.main import main

    rc = main(["validate", "--design", "fat-tree", "--workload", "x.json", "--packet"])
    assert rc == 2 and "pip install .[packet]" in capsys.readouterr().err


def test_cli_needs_packet_flag(capsys):
    from fabric.cli.main import main

    rc = main(["validate", "--design", "fat-tree", "--workload", "x.json"])
    assert rc == 2 and "--packet" in capsys.readouterr().err


# ------------------------------------------------------------------ real ns-3 runs


@pytest.fixture(scope="module")
def ns3():
    from fabric.validate import ns3sim

    if not ns3sim.ns3_available():
        pytest.skip("ns-3 bindings not installed (pip install .[packet])")
    try:
        return ns3sim.import_ns3()
    except FabricError as err:          # installed but broken
        pytest.skip(str(err))


def test_cpp_hash_equals_python_replica(ns3):
    from fabric.validate.ns3sim import cpp_flow_hash

    rng = np.random.default_rng(2)
    for _ in range(200):
        a, b = (int(x) for x in rng.integers(0, 2**32, 2))
        sp, dp = (int(x) for x in rng.integers(0, 2**16, 2))
        salt = int(rng.integers(0, 2**63)) * 2 + 1
        assert cpp_flow_hash(a, b, TCP, sp, dp, salt) == flow_hash(a, b, TCP, sp, dp, salt)


def test_packet_level_all_to_all_ecmp_small(ns3, cat):
    """16 hosts (4 leaves x 4, 1:1 on 8-port switches), a 1 MB all-to-all under per-flow ECMP."""
    d = validation_design(1, routing="ecmp", hosts=16)
    r = run_packet(d, one_op_workload("all_to_all", 1_000_000, 16), catalog=cat, seed=0, routing="ecmp",
                   hash_draws=4)
    assert r.flows == 240 and r.unfinished == 0
    assert r.hash_mismatches == 0 and r.path_changes == 0      # ns-3 took exactly the replica's paths
    assert r.drops == 0
    assert r.packet_s >= r.fluid_s * 0.999                     # nothing beats the fluid bound
    assert r.fluid_gap < 0.15
    assert abs(r.rel_error) < 0.15
    assert r.packet_flow_s.shape == (240,) and np.isfinite(r.packet_flow_s).all()
    d = r.to_dict(include_flows=True)
    assert len(d["per_flow"]) == 240 and d["op"]["kind"] == "all_to_all"


@pytest.mark.parametrize("routing", ["spray", "spray_rr"])
def test_packet_level_ring_spray_small(ns3, cat, routing):
    d = validation_design(2, routing=routing, hosts=16)
    r = run_packet(d, one_op_workload("all_reduce", 1_000_000, 16), catalog=cat, seed=1, routing=routing)
    assert r.flows == 16 and r.unfinished == 0 and r.routing == routing and r.drops == 0
    assert r.packet_s >= r.fluid_s * 0.999
    assert abs(r.rel_error) < 0.15


def test_cli_validate_packet_json(ns3, tmp_path, capsys):
    import json

    from fabric.cli.main import main
    from fabric.design import design_to_dict
    from fabric.validate.scenarios import VALIDATION_CATALOG
    from fabric.workload.model import workload_to_dict

    (tmp_path / "cat.json").write_text(json.dumps(VALIDATION_CATALOG))
    (tmp_path / "d.json").write_text(json.dumps(design_to_dict(validation_design(1, hosts=16))))
    (tmp_path / "w.json").write_text(json.dumps(workload_to_dict(one_op_workload("all_reduce", 500_000, 8))))
    rc = main(["validate", "--design", str(tmp_path / "d.json"), "--workload", str(tmp_path / "w.json"),
               "--catalog", str(tmp_path / "cat.json"), "--packet", "--json", "--samples", "16"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["flows"] == 8 and out["packet_s"] > out["fluid_s"] * 0.999
    rc = main(["validate", "--design", str(tmp_path / "d.json"), "--workload", str(tmp_path / "w.json"),
               "--catalog", str(tmp_path / "cat.json"), "--packet", "--samples", "16"])
    text = capsys.readouterr().out
    assert rc == 0 and "packet level (ns-3)" in text and "relative error" in text


def test_reorder_buffer_removes_the_cost_of_spraying_for_tcp(ns3, cat):
    """A cross-leaf shift on 4 leaves x 4 spines, sprayed packet by packet: plain TCP mistakes the reordering for
    losses (spurious fast retransmits, no drops) and runs near 2x the even split; behind the receiver-side reorder
    buffer (a reorder-tolerant transport, the design's transport 'uec') it runs within 10 % of it, with no
    retransmission. The evaluator charges TCP the same 2x (transport profile 'tcp')."""
    from fabric.validate.scenarios import table_design

    wl = one_op_workload("all_gather", 4_000_000, 16, group_size=4, stride=4)
    tcp = run_packet(table_design("1:1", routing="spray", transport="tcp"), wl, catalog=cat, seed=0,
                     routing="spray", hash_draws=0, samples=64)
    uec = run_packet(table_design("1:1", routing="spray", transport="uec"), wl, catalog=cat, seed=0,
                     routing="spray", hash_draws=0, samples=64)
    assert tcp.network["reorder_buffer"] is False and uec.network["reorder_buffer"] is True
    assert tcp.drops == 0 and tcp.retransmissions > 100 and tcp.packet_s > 1.6 * tcp.fluid_s
    assert uec.drops == 0 and uec.retransmissions == 0 and uec.packet_s < 1.10 * uec.fluid_s
    assert abs(tcp.rel_error) < 0.15 and abs(uec.rel_error) < 0.15
