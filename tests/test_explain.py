"""Explaining the p99 step: compute, stragglers, NVLink and network parts, and whether the network matters."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.design import Design
from fabric.evaluate import evaluate
from fabric.evaluate.explain import explain_step
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 2 ** 30


def _job(groups, ops, compute=0.0, cv=0.0, world=64):
    return Workload(jobs=(Job(name="j", world_size=world, groups=groups, ops=ops, compute_time_s=compute,
                              compute_cv=cv),))


def test_tensor_parallel_nvlink_traffic_is_not_the_network():
    # TP all-reduces inside 8-GPU servers: all NVLink; the network has nothing to do
    wl = _job((ProcessGroup("tp", 8, "tp"),), (CommOp("all_reduce", GIB, "tp", count_per_step=4),), compute=1.0)
    ev = evaluate(Design(gpus=64), wl, samples=32)
    e = explain_step(ev)
    assert e["parts_s"]["network"] == pytest.approx(0.0, abs=1e-12) and e["parts_s"]["nvlink"] > 0
    assert not e["network_can_change"]
    assert e["sentence"].startswith("The network cannot change this step much")
    # the parts add up exactly to the p99 sample: with 32 samples the ceil(0.99 x 32) = 32nd slowest
    assert e["step_s"] == pytest.approx(np.sort(ev.step_samples_s)[31], rel=1e-9)


def test_a_cross_server_all_to_all_is_the_network():
    # one GPU per server: an all-to-all of 1 GiB per rank over 64 servers is all network, no compute
    wl = _job((ProcessGroup("w", 64, "world"),), (CommOp("all_to_all", GIB, "w"),))
    ev = evaluate(Design(gpus=64, gpus_per_node=1, tiers=2), wl, samples=32)
    e = explain_step(ev)
    assert e["shares"]["network"] > 0.99 and e["network_can_change"]
    assert e["sentence"].startswith("The network sets part of this step's pace")


def test_stragglers_are_the_slowest_ranks_extra_compute():
    wl = _job((ProcessGroup("tp", 8, "tp"),), (CommOp("all_reduce", 1024, "tp"),), compute=2.0, cv=0.05)
    ev = evaluate(Design(gpus=64), wl, samples=64)
    e = explain_step(ev)
    assert e["parts_s"]["compute"] == pytest.approx(2.0)
    # the p99 sample's slowest of 64 ranks: 2 s x (1 + 0.05 z), z a max of 64 normals (mean ~2.4): > 0.1 s extra
    assert 0.1 < e["parts_s"]["stragglers"] < 2.0 * 0.05 * 5
