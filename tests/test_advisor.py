"""The cheapest-fix advisor on hand-made cases with hand-computed answers: a free change first when it fixes the
cause (ECMP collisions), hardware when the cause is capacity (an oversubscribed leaf)."""

from __future__ import annotations

import pytest

from fabric.review.advisor import FREE, HARDWARE, advise, candidate_changes
from fabric.cli.main import main
from fabric.design import Design
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 2 ** 30
#: 400G NIC at the InfiniBand profile's 0.96 efficiency, bytes/s
NIC_BPS = 400e9 / 8 * 0.96


def _shift(world: int, stride: int, size: int) -> Workload:
    """Every rank i < stride sends ``size`` bytes to rank i + stride (no compute: the step is the transfer)."""
    g = ProcessGroup("pair", 2, "pp", rank_start=0, rank_stride=stride)
    return Workload(jobs=(Job(name="shift", world_size=world, groups=(g,),
                              ops=(CommOp("send_recv", size, "pair"),)),))


def _all_to_all(world: int, size: int) -> Workload:
    g = ProcessGroup("world", world, "world")
    return Workload(jobs=(Job(name="a2a", world_size=world, groups=(g,), ops=(CommOp("all_to_all", size, "world"),)),))


def test_ecmp_collisions_are_fixed_for_free():
    # 64 one-GPU hosts on 2 leaves of 32 (64-port 400G switches, 1:1): ranks 0-31 send to 32-63, so all 32 flows
    # leave leaf 0 through its 32 uplinks; one hash each, so several share an uplink (balls in bins)
    d = Design(name="ecmp", gpus=64, gpus_per_node=1, tiers=2, routing="ecmp", qps_per_connection=1)
    res = advise(d, _shift(64, 32, GIB), samples=64)
    ideal = GIB / NIC_BPS                             # one flow per NIC and per uplink: the NIC's line rate
    assert res["p99_s"] > 2.0 * ideal                 # the busiest uplink carries 3+ flows in a bad launch
    top = res["advice"][0]
    assert top["kind"] == FREE and top["delta_cost_usd"] == 0
    assert top["p99_s"] == pytest.approx(ideal, rel=0.10)           # even splitting: back to the line rate
    assert all(a["kind"] == FREE for a in res["advice"][:3])         # every free fix ranks above any hardware
    assert res["answer"].startswith("best single change: ")


def test_an_oversubscribed_leaf_needs_hardware():
    # 128 one-GPU hosts, 3:1 leaves (48 down, 16 up), spraying already splits evenly: a full leaf sends
    # 48 x 80/128 of each rank's buffer S through 16 uplinks -> 1.875 S/B. Halving the oversubscription (1.5:1:
    # 38 down, 26 up) gives 38 x 90/128 / 26 = 1.028 S/B (above the NICs' 127/128 S/B): 1.82x faster
    d = Design(name="thin", gpus=128, gpus_per_node=1, routing="spray", oversubscription=(3.0, 1.0))
    res = advise(d, _all_to_all(128, 4 * GIB), samples=32)
    assert res["p99_s"] == pytest.approx(1.875 * 4 * GIB / NIC_BPS, rel=0.05)
    top = res["advice"][0]
    assert top["kind"] == HARDWARE and top["edit"] == {"oversubscription": (1.5, 1.0)}
    assert res["p99_s"] / top["p99_s"] == pytest.approx(1.875 / (38 * 90 / 128 / 26), rel=0.05)
    assert top["delta_cost_usd"] > 0 and top["usd_per_ms_saved"] == pytest.approx(
        top["delta_cost_usd"] / (-top["delta_p99_s"] * 1e3))
    assert not [a for a in res["advice"] if a["kind"] == FREE]       # no policy change can add capacity


def test_no_change_helps_when_the_network_is_not_the_pace():
    # a compute-bound step: one tiny all-reduce hidden behind a second of compute
    g = ProcessGroup("world", 16, "world")
    wl = Workload(jobs=(Job(name="c", world_size=16, groups=(g,), compute_time_s=1.0,
                            ops=(CommOp("all_reduce", 1024, "world", overlap_fraction=1.0),)),))
    res = advise(Design(name="c", gpus=16, gpus_per_node=1), wl, samples=16)
    assert res["advice"] == [] and res["answer"].startswith("no single change shortens the p99 step")


def test_candidates_and_cli(capsys):
    d = Design(name="x", gpus=64, gpus_per_node=8, family="rail_optimized", oversubscription=(2.0, 2.0))
    kinds = {s: k for s, k, _ in candidate_changes(d)}
    assert kinds["PXN on (cross-rail traffic over NVLink to the destination's rail)"] == FREE
    assert kinds["leaf oversubscription 2:1 -> 1:1 (more uplinks and spines)"] == HARDWARE
    assert not any("scattered" in s for s in kinds)                  # a fragmented cluster is not a choice
    assert main(["advise", "-w", "sample_traces/mixtral-8x7b.json", "-d", "fat-tree", "--gpus", "256",
                 "--samples", "16", "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert {"change", "delta_p99_s", "delta_cost_usd", "usd_per_ms_saved"} <= set(out["advice"][0]) \
        if out["advice"] else out["answer"].startswith("no single change")
