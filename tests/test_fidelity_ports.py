"""Issue 28, mechanism 3: a multi-port NIC hashes each flow (channel x queue pair) onto one port.

The expected times come from a brute-force enumeration of every way the NICs can hash their queue pairs onto their
ports, written here independently of fabric.evaluate.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fabric.design import Design
from fabric.evaluate import evaluate
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GB = 1 << 30
IDEAL = {"bandwidth_efficiency": 1.0, "step_alpha_s": 0.0}


def _chain(hosts: int, size: int) -> Workload:
    """send/recv along a chain of ``hosts`` single-GPU hosts: host i sends ``size`` bytes to host i + 1."""
    g = ProcessGroup("pp", hosts, "pp", rank_start=0, rank_stride=1)
    return Workload((Job("chain", world_size=hosts, groups=(g,), ops=(CommOp("send_recv", size, "pp"),)),))


def _design(nic: str, planes: int, qps: int, routing: str = "ecmp") -> Design:
    return Design(name=f"{nic} x{planes}", family="clos", gpus=4, gpus_per_node=1, nic_model=nic, planes=planes,
                  switch_model="eth-51t-64x800", transport="roce", routing=routing, qps_per_connection=qps)


def _brute_force_busiest_port(senders: int, balls: int, ports: int) -> float:
    """E[the busiest port over all sending NICs], in balls: every NIC hashes its balls onto its ports."""
    one = []
    for o in itertools.product(range(ports), repeat=balls):
        one.append(np.bincount(o, minlength=ports).max())
    one = np.array(one)
    cdf = np.array([(one <= m).mean() for m in range(balls + 1)])
    return float(np.sum(1.0 - cdf ** senders))


@pytest.mark.parametrize("qps", [1, 3, 4])
def test_dual_port_nic_hashes_each_queue_pair_onto_one_port(qps):
    """4 hosts on one leaf per plane, 2 x 200G dual-plane NICs; 3 hosts each send S to the next over ``qps`` queue
    pairs (send/recv: one NCCL channel per peer). Each QP of S / qps goes out on one port (and arrives on the same
    plane's port of the receiver, which hears from one sender), so the op takes the busiest port's QPs at 200G."""
    size = 4 * GB
    ev = evaluate(_design("nic-2x200-dual", 2, qps), _chain(4, size), seed=0, samples=4096,
                  transport_overrides=IDEAL)
    expected = _brute_force_busiest_port(3, qps, 2) * (size / qps) / (200e9 / 8)
    assert float(np.mean(ev.step_samples_s)) == pytest.approx(expected, rel=0.03)


def test_spraying_splits_over_ports_and_a_single_port_nic_has_no_draw():
    size = 4 * GB
    spray = evaluate(_design("nic-2x200-dual", 2, 1, routing="spray"), _chain(4, size), seed=0, samples=256,
                     transport_overrides=IDEAL)
    assert float(np.max(spray.step_samples_s)) == pytest.approx(size / 2 / (200e9 / 8), rel=1e-3)
    single = evaluate(_design("nic-eth-400", 1, 1), _chain(4, size), seed=0, samples=256, transport_overrides=IDEAL)
    assert float(np.max(single.step_samples_s)) == pytest.approx(size / (400e9 / 8), rel=1e-3)


def test_computed_paths_place_queue_pairs_on_ports_and_adaptive_balances_them():
    size = 3 * GB
    # 3 QPs on 2 ports: a controller puts 2 on one port, 1 on the other
    comp = evaluate(_design("nic-2x200-dual", 2, 3, routing="computed"), _chain(4, size), seed=0, samples=64,
                    transport_overrides=IDEAL)
    assert float(np.max(comp.step_samples_s)) == pytest.approx(2 * size / 3 / (200e9 / 8), rel=1e-3)
    adaptive = evaluate(_design("nic-2x200-dual", 2, 3, routing="adaptive"), _chain(4, size), seed=0, samples=64,
                        transport_overrides=IDEAL)
    assert float(np.max(adaptive.step_samples_s)) == pytest.approx(size / 2 / (200e9 / 8), rel=1e-3)


def test_a_failed_tor_leaves_dual_homed_nics_their_other_port():
    """Dual-ToR: the 4 hosts' NICs have one port on leaf0@p0 and one on leaf0@p1. With leaf0@p0 down every flow
    runs on its plane-1 port: S at 200G, whatever the hashing. A single-homed NIC's leaf cannot fail (the servers
    would leave the job)."""
    from fabric.errors import DesignError
    from fabric.evaluate import Scenario

    size = 4 * GB
    down = Scenario(name="tor down", fail_switches=("leaf0@p0",))
    for routing in ("ecmp", "computed", "adaptive"):
        ev = evaluate(_design("nic-2x200-dual", 2, 4, routing=routing), _chain(4, size), down, seed=0, samples=64,
                      transport_overrides=IDEAL)
        assert float(np.max(ev.step_samples_s)) == pytest.approx(size / (200e9 / 8), rel=1e-3), routing
        assert float(np.min(ev.step_samples_s)) == pytest.approx(size / (200e9 / 8), rel=1e-3), routing
    with pytest.raises(DesignError, match="holding every NIC port of its servers"):
        evaluate(_design("nic-eth-400", 1, 1), _chain(4, size), Scenario(name="x", fail_switches=("leaf0",)),
                 seed=0, samples=16)


def _wide(routing: str) -> Design:
    """300 single-GPU hosts with dual-plane 2 x 200G NICs on 32-port switches: several leaves per plane."""
    return Design(name="wide", family="clos", gpus=300, gpus_per_node=1, nic_model="nic-2x200-dual", planes=2,
                  switch_model="eth-12t-32x400", transport="roce", routing=routing, qps_per_connection=4)


def test_a_failed_tor_slows_only_the_flows_that_used_it():
    """300 hosts, several leaves per plane; leaf1@p0 down. The chain's flows that touch a host of leaf1 run on their
    plane-1 port alone (S at 200G); every other flow keeps both ports (S / 2 per port). Under adaptive and computed
    routing the healthy step is S / 400G and the failed one S / 200G (the busiest sender now has one port)."""
    from fabric.evaluate import Scenario

    size = 4 * GB
    down = Scenario(name="tor down", fail_switches=("leaf1@p0",))
    for routing in ("adaptive", "computed"):
        healthy = evaluate(_wide(routing), _chain(300, size), seed=0, samples=64, transport_overrides=IDEAL)
        failed = evaluate(_wide(routing), _chain(300, size), down, seed=0, samples=64, transport_overrides=IDEAL)
        assert float(np.max(healthy.step_samples_s)) == pytest.approx(size / (400e9 / 8), rel=1e-3), routing
        assert float(np.max(failed.step_samples_s)) == pytest.approx(size / (200e9 / 8), rel=1e-3), routing


@pytest.mark.parametrize("routing", ["ecmp", "computed", "adaptive"])
def test_failed_leaf_port_flows_match_every_flow_over_every_port(routing):
    """The NIC-port entries under a failed leaf (kept sparse: only the flows that lose a port are redone) against
    the dense rule written out here: every flow over every port, ``bytes x up / ports up``, ``qps / ports up`` QPs
    per port when hashed or placed, the entries on lost ports dropped; and what the phase's load takes from them
    (busiest port, fewest flows of a port that sends across leaves, the flows that leave their leaf)."""
    from types import SimpleNamespace

    from fabric.evaluate import Scenario
    from fabric.evaluate.network import _nic_flows, _port_flows
    from fabric.evaluate.network_models import network_model
    from fabric.topology import build_fabric

    f = build_fabric(_wide(routing))
    down = Scenario(name="tor down", fail_switches=("leaf1@p0", "leaf3@p0"))
    model, _ = network_model(f, down, np.random.default_rng(0), 64)
    rng = np.random.default_rng(7)
    src = rng.integers(0, 300, 5000)
    dst = (src + rng.integers(1, 300, 5000)) % 300
    phase = SimpleNamespace(src_gpu=src, dst_gpu=dst, bytes_per_byte=rng.uniform(0.1, 1.0, 5000), steps=1,
                            injection_only=False, all_pairs=None, nvlink_bytes_per_byte=0.0)
    qps, ports = 4, f.nic_ports.shape[1]
    pf = _port_flows(phase, model, qps=qps, pxn=False, routing=routing)
    keep = np.ones(pf.per.size, bool) if pf.keep is None else pf.keep

    # the dense rule
    si, di = f.gpu_nics[src, 0] - f.nic_base, f.gpu_nics[dst, 0] - f.nic_base
    up = ~model.dead_leaf[f.nic_ports - f.switch_base]
    use = up[si] & up[di]
    n_up = use.sum(axis=1)
    assert 0 < (n_up < ports).sum() < n_up.size                # some flows lose a port, most keep both
    per = (phase.bytes_per_byte[:, None] * use / n_up[:, None]).ravel()
    ps = (si[:, None] * ports + np.arange(ports)).ravel()
    pd = (di[:, None] * ports + np.arange(ports)).ravel()
    q = np.repeat(qps / n_up, ports) if routing != "adaptive" else np.full(per.size, float(qps))
    on = per > 0
    assert keep.sum() == on.sum() == use.sum()
    np.testing.assert_array_equal(pf.per[keep], per[on])
    np.testing.assert_array_equal(pf.ends[0][keep], ps[on])
    np.testing.assert_array_equal(pf.ends[1][keep], pd[on])
    np.testing.assert_array_equal(np.broadcast_to(pf.q_port, pf.per.shape)[keep], q[on])
    np.testing.assert_array_equal(pf.src_leaf[keep], f.nic_ports.ravel()[ps[on]])
    np.testing.assert_array_equal(pf.dst_leaf[keep], f.nic_ports.ravel()[pd[on]])

    nf = _nic_flows(phase, model, qps, False, routing)
    sent = np.bincount(ps[on], weights=per[on])
    got = np.bincount(pd[on], weights=per[on])
    assert nf.nic_max == pytest.approx(max(sent.max(), got.max()), rel=1e-12)
    sl, dl = f.nic_ports.ravel()[ps[on]], f.nic_ports.ravel()[pd[on]]
    cross = sl != dl
    np.testing.assert_array_equal(nf.sl, sl[cross])
    np.testing.assert_array_equal(nf.dl, dl[cross])
    np.testing.assert_array_equal(nf.pc, per[on][cross])
    np.testing.assert_array_equal(nf.qc, q[on][cross])
    flows_at = np.bincount(ps[on]) * float(qps)
    assert nf.flows_per_port == float(flows_at[np.unique(ps[on][cross])].min())

    # a leaf down in each plane: two NICs on those leaves share no plane that is up
    from fabric.errors import DesignError

    cut, _ = network_model(f, Scenario(name="both", fail_switches=("leaf1@p0", "leaf3@p1")),
                           np.random.default_rng(0), 64)
    with pytest.raises(DesignError, match="no plane in common that is up"):
        _port_flows(phase, cut, qps=qps, pxn=False, routing=routing)
