"""Fabrics for 32K-131K+ GPUs: the multi-plane preset's counts by hand, evaluation, the rack view, a readable
topology view (by pod and plane), and the GB200 NVL72 SuperPOD-style preset."""

import pytest

from fabric.reference.presets import PRESETS, preset_design
from fabric.evaluate import evaluate
from fabric.facility.rackpower import rack_report
from fabric.topology import build_fabric
from fabric.ui_support.topology_view import topology_view
from fabric.workload.presets import preset_workload


def test_multiplane_preset_counts_by_hand():
    d = preset_design("hyperscale-multiplane")
    assert d.gpus == 131_072 and d.planes == 4 and PRESETS["hyperscale-multiplane"].source
    f = build_fabric(d)
    # 51.2T switches as 256 x 200G; each 800G NIC runs 4 x 200G, one port per plane, so a plane sees 8 rails of
    # 16,384 nodes. 1:1 leaves: 128 down, 128 up; a rail leaf takes one port from 128 nodes: 16,384 / 128 x 8 rails
    # = 1,024 leaves per plane.
    # 7:1 spines: 32 up, 224 down: pods of 224 leaves (28 units of 8 rail leaves), ceil(1,024 / 224) = 5 pods;
    # each pod's 224 x 128 leaf uplinks over 224-port spine downlinks: 128 spines per pod.
    # Cores: 5 pods x 128 spines x 32 uplinks = 20,480 links per plane / 256 ports = 80 cores per plane.
    assert f.structure["pods"] == 5 and f.structure["leaves_per_pod"] == 224
    assert f.switch_counts() == {"leaf": 4 * 1024, "spine": 4 * 5 * 128, "core": 4 * 80}
    assert f.link_counts()["nic-leaf"] == 4 * 131_072
    r = rack_report(d, fabric=f)
    # B200 HGX at 14.3 kW: two per 40.8 kW rack, 16 GPUs
    assert r["gpus_per_rack"] == 16 and r["compute_racks"] == 131_072 // 16
    # the floor (fabric.topology.floor): halls of 315 racks; a pod of 1,639 compute racks and its 88 network racks
    # (224 leaves + 128 spines per plane x 4 planes / 16) spans at least 6 halls, the last pod (128 of 224 leaves)
    # at least 4, and the cores stand in a hall of their own: every spine-core link is single-mode
    assert f.structure["halls"] >= 4 * 6 + 4 + 1
    by_reach = r["cables_by_reach"]
    assert by_reach["between halls (single-mode)"] >= 4 * 20_480
    assert by_reach["between halls (single-mode)"] + by_reach["in one hall (AOC or multimode, <= 50 m)"] \
        == 4 * (131_072 + 1024 * 128 + 20_480) - by_reach["in rack (copper, <= 3 m)"] \
        - by_reach["neighbouring rack (active copper, <= 7 m)"]


def test_multiplane_preset_evaluates_and_draws_by_pod_and_plane():
    d = preset_design("hyperscale-multiplane")
    ev = evaluate(d, preset_workload("llama3-70b", gpus=d.gpus), samples=32)
    assert 0 < ev.step_time_s["p99"] < 10 and ev.lower_bound_s <= ev.step_time_s["p50"]
    v = topology_view(build_fabric(d))
    leaves = [n for n in v.nodes if n["row"] == "leaf"]
    assert len(leaves) == 4 * 5                                          # 4 planes x 5 pods
    assert {n["label"] for n in leaves} >= {"pod 0 leaves plane 0", "pod 4 leaves plane 3"}
    assert sum(n["members"] for n in leaves) == 4096
    assert len(v.nodes) < 150 and len(v.edges) < 600


def test_nvl72_superpod_preset():
    d = preset_design("gb200-nvl72-superpod")
    assert (d.gpus, d.domain_size, d.gpus_per_node) == (576, 72, 4)
    f = build_fabric(d)
    # 144 trays x 4 rails (one 800G NIC per GPU); 144 x 800G XDR leaves at 1:1 take 72 trays each: 2 leaves per
    # rail, 8 leaves, 72 uplinks each over 4 spines (576 / 144 ports)
    assert f.switch_counts() == {"leaf": 8, "spine": 4}
    assert f.link_speeds_gbps()["nic-leaf"] == 800
    r = rack_report(d, fabric=f)
    # a rack: the NVL72's ~120 kW (NICs inside) and its 72 NIC-side 800G SR8 modules (16 W) to the rail leaves
    assert (r["compute_racks"], r["gpus_per_rack"]) == (8, 72)
    assert r["compute_rack_power_w"] == pytest.approx(120_000 + 72 * 16.0)
    with pytest.raises(Exception, match="use a multiple of 72, e.g. 1,008"):
        preset_design("gb200-nvl72-superpod", 1000)
