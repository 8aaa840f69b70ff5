"""Issue 28, item 6: the meta-roce-zone preset as its source describes it (Gangidi et al., SIGCOMM 2024): a rack
training switch per rack over copper (a top-of-rack Clos, not rails), cluster training switches joining the racks
of an AI zone non-blocking, aggregator switches joining zones 7:1. Counts by hand below."""

from __future__ import annotations

import pytest

from fabric.design import Design
from fabric.reference.presets import PRESETS, preset_design
from fabric.errors import DesignError
from fabric.facility.rackpower import rack_report
from fabric.topology import build_fabric


def test_meta_preset_has_rack_switches_in_zones():
    d = preset_design("meta-roce-zone")
    assert "SIGCOMM 2024" in PRESETS["meta-roce-zone"].source and d.family == "clos"
    f = build_fabric(d)
    s = f.structure
    # a 40.8 kW rack holds 4 H100 servers (10.2 kW): its switch takes their 32 NICs and, at 1:1, 32 uplinks
    assert (s["nodes_per_leaf"], s["leaf_down"], s["leaf_up"]) == (4, 32, 32)
    # 24,576 / 32 = 768 rack switches; 51.2T spines as 128 x 400G at 7:1 keep 112 down: a zone of 112 racks
    # (3,584 GPUs) needs 112 x 32 / 112 = 32 spines; ceil(768 / 112) = 7 zones; 224 spines x 16 uplinks = 3,584
    # spine-core links on 128-port cores = 28 cores
    assert (s["pods"], s["leaves_per_pod"], s["spines_per_pod"]) == (7, 112, 32)
    assert f.switch_counts() == {"leaf": 768, "spine": 224, "core": 28}
    assert f.link_counts() == {"nic-leaf": 24576, "leaf-spine": 24576, "spine-core": 3584}
    r = rack_report(d, fabric=f)
    assert r["gpus_per_rack"] == 32 and r["cables_by_reach"]["in rack (copper, <= 3 m)"] == 24576


def test_nodes_per_leaf_of_a_top_of_rack_clos():
    d = Design(gpus=256, family="clos", nic_model="nic-eth-400", switch_model="eth-51t-64x800", transport="roce",
               nodes_per_su=2)
    s = build_fabric(d).structure
    assert (s["nodes_per_leaf"], s["leaf_down"], s["leaves"]) == (2, 16, 16)
    with pytest.raises(DesignError, match="use at most 8"):     # 128 ports at 1:1: 64 down = 8 nodes
        build_fabric(d.replace(nodes_per_su=9))
