"""Server-to-leaf cable media follow distance (fabric.topology.racks; facts.md sections 9 and 10).

Rack layout: servers per rack = floor(40.8 kW / server power): 4 DGX H100 (10.2 kW; NVIDIA's DGX SuperPOD data
center design puts four per rack), so 32 H100 GPUs, i.e. 4 eight-GPU nodes, per rack; slots fill racks in order.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabric.catalog import default_catalog
from fabric.cost import bill_of_materials
from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.errors import DesignError
from fabric.topology import build_fabric
from fabric.topology import racks
from fabric.topology.fabric import LINK_KINDS, MEDIA

NIC_LEAF = LINK_KINDS.index("nic-leaf")


def endpoint_media(f) -> dict[str, int]:
    m = f.link_medium[f.link_kind == NIC_LEAF]
    return {MEDIA[k]: int(c) for k, c in zip(*np.unique(m, return_counts=True))}


def nic_leaf_cables(f) -> dict[str, int]:
    return {i.model: i.count for i in bill_of_materials(f).items if i.category == "cable" and i.where == "nic-leaf"}


def test_rack_layout_from_server_power():
    cat = default_catalog()
    assert racks.RACK_POWER_BUDGET_W == 4 * 10_200                      # four DGX H100 at 10.2 kW max
    assert racks.nodes_per_rack(cat.gpu("h100-sxm"), 8) == 4
    assert racks.nodes_per_rack(cat.gpu("h100-sxm"), 1) == 32          # one-GPU "nodes": 32 GPUs per rack
    assert racks.nodes_per_rack(cat.gpu("a100-sxm-80gb"), 8) == 6       # 6.5 kW DGX A100: 6 x 6.5 = 39 kW
    assert racks.nodes_per_rack(cat.gpu("b200"), 8) == 2                # 14.3 kW DGX B200: 2 x 14.3 = 28.6 kW
    assert racks.nodes_per_rack(cat.gpu("gb200-nvl72"), 4) == 18        # the ~120 kW NVL72 rack is a rack: 18 trays
    f = build_fabric(Design(gpus=1024))
    assert (f.structure["nodes_per_rack"], f.structure["racks"]) == (4, 32)


def test_rail_optimized_endpoint_links_are_never_copper():
    """A rail leaf takes one NIC from each node of its units, in many racks: optics (facts.md section 10)."""
    for d in (preset_design("dgx-h100-superpod", 1016), preset_design("alibaba-hpn", 15360),
              preset_design("rail-only", 512), Design(family="rail_optimized", gpus=32)):
        f = build_fabric(d)
        assert endpoint_media(f) == {"optics": f.link_counts()["nic-leaf"]}, d.name
        assert not any(m.startswith(("dac", "acc")) for m in nic_leaf_cables(f))
    with pytest.raises(DesignError, match=r"endpoint_cabling 'copper': 1,016 of 1,016 server-to-leaf links .*"
                                          r"rail leaf takes one port from each of up to 32 nodes in racks of 4"):
        build_fabric(preset_design("dgx-h100-superpod", 1016).replace(endpoint_cabling="copper"))


def test_clos_leaf_wider_than_a_rack_uses_active_copper_next_door():
    """768 GPUs, 64-port leaves at 3:1: 48 down -> 6 nodes per leaf, 4 nodes per rack. Leaf 2k takes nodes
    12k..12k+5 (racks 3k, 3k, 3k, 3k, 3k+1, 3k+1) and sits in rack 3k; leaf 2k+1 takes 12k+6..12k+11 (racks 3k+1,
    3k+1, 3k+2 x 4) and sits in rack 3k+2. So of every 12 nodes, 8 are in their leaf's rack (DAC) and 4 in the
    next rack (ACC): 64 + 32 nodes of 8 ports, 512 DACs and 256 ACCs, no NIC-side transceivers."""
    f = build_fabric(Design(gpus=768, oversubscription=(3.0,)))
    assert f.structure["nodes_per_leaf"] == 6
    assert endpoint_media(f) == {"copper": 512, "active_copper": 256}
    assert nic_leaf_cables(f) == {"dac-400-2m": 512, "acc-400-5m": 256}
    reach = f.link_reach_m[f.link_kind == NIC_LEAF]
    assert sorted(np.unique(reach).tolist()) == [racks.REACH_IN_RACK_M, racks.REACH_NEIGHBOUR_RACK_M]
    bom = bill_of_materials(f)
    assert not [i for i in bom.items if i.category == "transceiver" and "NIC end" in i.where]
    with pytest.raises(DesignError, match=r"'copper': 256 of 768 .* \(a leaf holds up to 6 nodes, a rack 4\)"):
        build_fabric(Design(gpus=768, oversubscription=(3.0,), endpoint_cabling="copper"))


def test_clos_leaf_spanning_four_racks_needs_optics_at_the_far_end():
    """224 H100 GPUs on 128 x 400G leaves at 7:1: 112 down -> 14 nodes per leaf. Leaf 0: nodes 0-13 in racks
    0,0,0,0 1,1,1,1 2,2,2,2 3,3; its middle node (6) is in rack 1: 4 nodes DAC, 8 ACC (racks 0 and 2), 2 optics
    (rack 3). Leaf 1: nodes 14-27 in racks 3,3 4x4 5x4 6x4; middle node 20 in rack 5: 4 DAC, 8 ACC, 2 optics (rack 3).
    In links (8 per node): 64 DAC, 128 ACC, 32 optics."""
    d = Design(gpus=224, switch_model="eth-51t-64x800", nic_model="nic-eth-400", transport="roce",
               oversubscription=(7.0,))
    f = build_fabric(d)
    assert f.structure["nodes_per_leaf"] == 14
    assert endpoint_media(f) == {"copper": 64, "active_copper": 128, "optics": 32}
    cables = nic_leaf_cables(f)
    assert cables["dac-400-2m"] == 64 and cables["acc-400-5m"] == 128
    tx = {i.model: i.count for i in bill_of_materials(f).items if i.where == "nic-leaf (NIC end)"}
    assert tx == {"osfp-400-sr4-nic": 32}


def test_small_clos_leaves_stay_in_the_rack():
    """32 x 400G switches at 1:1: 16 down -> 2 nodes per leaf; 4 nodes per rack, so both of a leaf's nodes share
    its rack: 8 nodes, 64 DACs. At 3:1 (24 down, 3 nodes per leaf) leaf 1 takes nodes 3, 4, 5 (racks 0, 1, 1) and
    sits in rack 1, leaf 2 nodes 6, 7, 8 (racks 1, 1, 2) in rack 1: nodes 3 and 8 are next door. 12 nodes: 10 DAC,
    2 ACC, i.e. 80 and 16 links."""
    base = dict(switch_model="eth-12t-32x400", nic_model="nic-eth-400", transport="roce")
    f = build_fabric(Design(gpus=64, **base))
    assert f.structure["nodes_per_leaf"] == 2
    assert endpoint_media(f) == {"copper": 64}
    assert nic_leaf_cables(f) == {"dac-400-2m": 64}
    f = build_fabric(Design(gpus=96, oversubscription=(3.0,), **base))
    assert f.structure["nodes_per_leaf"] == 3
    assert endpoint_media(f) == {"copper": 80, "active_copper": 16}
    # forced copper builds when every node shares its leaf's rack (4 nodes per leaf = one H100 rack, 1:1)
    assert endpoint_media(build_fabric(Design(gpus=1024, endpoint_cabling="copper"))) == {"copper": 1024}


def test_without_active_copper_the_next_rack_takes_optics(tmp_path):
    """A catalog with no ACC/AOC at 400G: the neighbour-rack links of the 768-GPU 3:1 Clos fall back to optics."""
    cat = default_catalog()
    tables = cat.tables()
    tables["cables"] = tables["cables"][tables["cables"]["kind"] != "acc"]
    from fabric.catalog import Catalog

    f = build_fabric(Design(gpus=768, oversubscription=(3.0,)), Catalog.from_tables(tables, source="no acc"))
    assert endpoint_media(f) == {"copper": 512, "optics": 256}


def test_forced_optics_are_optics_everywhere():
    f = build_fabric(Design(gpus=768, oversubscription=(3.0,), endpoint_cabling="optics"))
    assert endpoint_media(f) == {"optics": 768}
    assert {i.model: i.count for i in bill_of_materials(f).items
            if i.where == "nic-leaf (NIC end)"} == {"osfp-400-sr4-nic": 768}


def test_switch_modules_fit_the_switch_cage():
    """A twin-port 2 x 400G module needs an 800G OSFP cage: QM9700-class NDR switches (32 cages of two 400G ports)
    take it, a Tomahawk 4-class 64 x 400G QSFP-DD switch (one port per cage) does not, so each of its optical link
    ends takes a single-port 400G module. 256 GPUs at 2:1 on 64 x 400G switches: a leaf has 40 ports down
    (5 servers) and 20 up, 7 leaves (32 servers / 5), 140 leaf-spine fibres on 4 spines: 140 modules at each end
    on QSFP-DD, 70 twin-port ones at the leaves on NDR (10 per leaf) and 72 at the spines (35 links each: 18)."""
    cat = default_catalog()
    base = preset_design("fat-tree", 256).replace(oversubscription=(2.0, 1.0), nic_model="nic-eth-400",
                                                  transport="roce")

    def switch_modules(design):
        bom = bill_of_materials(build_fabric(design, cat), cat)
        assert bom.switches == {"leaf": 7, "spine": 4} and bom.links["leaf-spine"] == 140
        return {(i.model, i.where): i.count for i in bom.items
                if i.category == "transceiver" and "leaf-spine" in i.where}

    qsfpdd = switch_modules(base.replace(switch_model="eth-25t-64x400"))
    assert qsfpdd == {("qsfpdd-400-sr8", "leaf-spine (leaf end)"): 140,
                      ("qsfpdd-400-sr8", "leaf-spine (spine end)"): 140}
    ndr = switch_modules(base.replace(switch_model="ib-ndr-64x400", nic_model="nic-cx7-400",
                                      transport="infiniband"))
    assert ndr == {("osfp-2x400-sr8-switch", "leaf-spine (leaf end)"): 70,
                   ("osfp-2x400-sr8-switch", "leaf-spine (spine end)"): 72}
    # the cage is what decides: the twin-port module is the cheaper per port, and is refused only by the cage
    twin, single = cat.transceiver("osfp-2x400-sr8-switch"), cat.transceiver("qsfpdd-400-sr8")
    assert twin.price_per_port_usd < single.price_per_port_usd
    assert cat.switch("eth-25t-64x400").cage_bps == 400e9 and cat.switch("ib-ndr-64x400").cage_bps == 800e9
