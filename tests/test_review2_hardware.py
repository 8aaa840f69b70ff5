"""Issue 24 (a design review of a 1,024-GPU H100 cluster), hardware items: human baselines a team would draw (item
6), the topology drawing, the rack table and the Fabric & BOM page (item 12), one figure for the busiest rack, IT
and facility power and the SuperPOD price on every page (item 4).

Expected values are counted by hand from the cabling rules (docs/topology.md), NVIDIA's published SuperPOD counts
(facts.md section 4) and the catalog's unit figures (fabric/catalog/*.csv), not copied from the code's output."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fabric.brownfield.site import site_power
from fabric.catalog import default_catalog
from fabric.cli.main import main
from fabric.cost import bill_of_materials
from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.facility.rackpower import rack_report
from fabric.search import Constraints, DesignSpace
from fabric.search.baselines import baseline_designs
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS
from fabric.ui_support import urlstate
from fabric.search.designs import design_from_record, design_genes
from fabric.ui_support.racks_view import power_text, rack_rows
from fabric.ui_support.topology_view import topology_figure, topology_view

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
CAT = default_catalog()
DGX_W, QM9700_W, TWIN_SR8_W, ACC_W = 10_200.0, 750.0, 15.0, 1.4
#: facts.md section 4, NVIDIA DGX H100 SuperPOD, Table 4: GPUs -> (leaves, spines, leaf-spine cables)
SUPERPOD_TABLE = {248: (8, 4, 256), 504: (16, 8, 512), 760: (24, 16, 768), 1016: (32, 16, 1024)}
#: the review's design with 22 leaves: a 1,024-GPU Clos of 64-port NDR leaves at 4:1 (spines 2:1) the search found
REVIEW_22 = Design(name="review 22 leaves", family="clos", gpus=1024, switch_model="ib-ndr-64x400",
                   nic_model="nic-cx7-400", oversubscription=(4.0, 2.0), routing="adaptive", placement="rail_aligned")


def _baselines(gpus: int, **kw) -> dict[str, Design]:
    """The baselines by kind: ``ft11``, ``ft21``, ``pod`` (and ``multiplane`` from 16,384 GPUs)."""
    ds = baseline_designs(DesignSpace(Constraints(gpus=gpus, **kw)))
    out = {}
    for d in ds:
        key = ("ft11" if "fat tree 1:1" in d.name else "ft21" if "fat tree 2:1" in d.name
               else "multiplane" if "multi-plane" in d.name else "pod")
        out[key] = d
    return out


def _leaf_ports(fabric) -> tuple[np.ndarray, np.ndarray]:
    """(downlinks, uplinks) of every leaf, counted from the links."""
    sw0 = fabric.switch_base
    leaf = np.flatnonzero(fabric.node_tier[sw0:sw0 + fabric.n_switches] == 0) + sw0
    down = np.zeros(leaf.size, int)
    up = np.zeros(leaf.size, int)
    pos = {int(n): i for i, n in enumerate(leaf)}
    for kind, out in (("nic-leaf", down), ("leaf-spine", up)):
        sel = fabric.link_kind == LINK_KINDS.index(kind)
        for end in (fabric.link_a[sel], fabric.link_b[sel]):
            for n in end.tolist():
                if n in pos:
                    out[pos[n]] += 1
    return down, up


# ------------------------------------------------------------------ item 6: baselines a team would draw


def test_fat_tree_baselines_use_the_nic_generation_switch_at_exactly_the_ratio():
    b = _baselines(1024)
    ft11, ft21 = b["ft11"], b["ft21"]
    # H100 hosts run 400G NICs; the switch made for 400G is NDR 64 x 400G, not XDR 144 x 800G split in two
    for d in (ft11, ft21):
        assert (d.switch_model, d.nic_model) == ("ib-ndr-64x400", "nic-cx7-400")
        assert CAT.switch(d.switch_model).port_speed_bps == CAT.nic(d.nic_model).port_speed_bps == 400e9
    assert ft11.name == "baseline: fat tree 1:1, 400G on ib-ndr-64x400"
    assert ft21.name == "baseline: fat tree 2:1, 400G on ib-ndr-64x400"
    f = build_fabric(ft11)
    # 1:1: a 64-port leaf has 32 down (4 servers x 8 NICs) and 32 up; 128 servers -> 32 leaves; 32 x 32 = 1,024
    # uplinks over 64-port spines: 16 spines, each leaf sending 2 links to each
    assert f.switch_counts() == {"leaf": 32, "spine": 16}
    down, up = _leaf_ports(f)
    assert down.tolist() == [32] * 32 and up.tolist() == [32] * 32
    net = np.isin(f.link_kind, [LINK_KINDS.index(k) for k in ("nic-leaf", "leaf-spine")])
    assert set(f.link_capacity_bps[net].tolist()) == {400e9}                # every port at 400G: capacity 1:1
    f2 = build_fabric(ft21)
    # 2:1: 64 ports = 42 down + 22 up at most; 5 servers (40 NICs) per leaf with 20 uplinks; 128 servers -> 25 full
    # leaves and one of 3 servers (24 NICs) keeping a full leaf's 20 uplinks; 26 x 20 = 520 uplinks over 64-port
    # spines: at least 9, and 10 split each leaf's 20 uplinks evenly (2 per spine)
    down, up = _leaf_ports(f2)
    assert down.tolist() == [40] * 25 + [24] and up.tolist() == [20] * 26
    assert f2.switch_counts() == {"leaf": 26, "spine": 10}
    assert all(d <= 2 * u for d, u in zip(down, up))


def test_roce_baselines_take_the_ethernet_switch_of_the_nic_speed():
    # 400G RoCE NICs: the 25.6T 64 x 400G switch (the 51.2T 64 x 800G split into 128 x 400G has more ports, and
    # the 12.8T 32 x 400G fewer)
    b = _baselines(1024, switch_models=("eth-51t-64x800", "eth-25t-64x400", "eth-12t-32x400"),
                   nic_models=("nic-eth-400",), transports=("roce",))
    assert {d.switch_model for d in b.values()} == {"eth-25t-64x400"}
    assert b["ft11"].name == "baseline: fat tree 1:1, 400G on eth-25t-64x400"


def test_superpod_baseline_has_nvidias_published_counts():
    for gpus, (leaves, spines, cables) in SUPERPOD_TABLE.items():
        pod = _baselines(gpus)["pod"]
        f = build_fabric(pod)
        assert f.switch_counts() == {"leaf": leaves, "spine": spines}, gpus
        assert f.link_counts()["leaf-spine"] == cables, gpus          # the UFM slot's ports are cabled too
        assert (pod.nodes_per_su, pod.reserved_node_slots) == (32, 1)


def test_superpod_baseline_builds_at_any_size_to_131072_gpus():
    # 2,048 GPUs: 256 servers + the UFM slot = 257 slots, 9 SUs x 8 rails = 72 leaves, beyond the 8 SUs two tiers of
    # 64-port switches take; a core tier over pods of 4 SUs (a 1:1 spine has 32 downlinks: 32 leaves), 3 pods of 32
    # spines each (a partly filled pod keeps a full one's), 3 x 32 x 32 = 3,072 spine uplinks over 64-port cores: 48
    f = build_fabric(_baselines(2048)["pod"])
    assert f.switch_counts() == {"leaf": 72, "spine": 96, "core": 48}
    for gpus in (65_536, 131_072):
        pod = _baselines(gpus)["pod"]
        f = build_fabric(pod)                              # three tiers of 64-port NDR reach 65,536 NIC ports
        assert f.tiers == 3 and "ib-xdr-144x800 as 288 x 400G" in pod.name
        assert f.link_counts()["nic-leaf"] == gpus


def test_superpod_preset_and_baseline_are_one_design_and_one_price():
    for gpus in (1016, 1024, 2048):
        pod, preset = _baselines(gpus)["pod"], preset_design("dgx-h100-superpod", gpus)
        assert pod.replace(name="x") == preset.replace(name="x")
        assert bill_of_materials(build_fabric(pod)).cost_usd == bill_of_materials(build_fabric(preset)).cost_usd
    # 1,024 GPUs: 128 servers + the UFM slot = 129 slots: 5 SUs, 40 rail leaves; 40 x 32 = 1,280 uplinks need 20
    # 64-port spines, and 32 split each leaf's 32 uplinks evenly
    assert build_fabric(_baselines(1024)["pod"]).switch_counts() == {"leaf": 40, "spine": 32}
    ft = _baselines(1024)["ft11"]
    assert ft.replace(name="x") == preset_design("fat-tree", 1024).replace(name="x")


def test_superpod_baseline_keeps_its_units_through_records_and_links():
    pod = _baselines(1024)["pod"]
    g = design_genes(pod)
    assert (g["design_nodes_per_su"], g["design_reserved_slots"]) == (32, 1)
    back = urlstate.decode_genes(urlstate.encode_genes(g))
    assert design_from_record({**back, "design": pod.name}, gpus=1024) == pod


# ------------------------------------------------------------------ item 12: drawing and racks of the fabric


def test_topology_draws_every_one_of_22_leaves():
    fig = topology_figure(topology_view(build_fabric(REVIEW_22)))
    leaves = next(t for t in fig.data if (t.name or "").startswith("leaf switches"))
    assert len(leaves.x) == 22                                   # 128 servers / 6 per leaf (48 down at 4:1)
    assert "leaves: 22" in fig.layout.yaxis.ticktext


def test_an_aggregated_row_says_how_many_switches_each_box_stands_for():
    # 131,072 GPUs on a 1:1 fat tree of 288 x 400G switches: 911 leaves, more than 48 boxes can show
    f = build_fabric(_baselines(131_072)["ft11"])
    fig = topology_figure(topology_view(f))
    leaves = next(t for t in fig.data if (t.name or "").startswith("leaf switches"))
    counts = [int(t.replace(",", "")) for t in leaves.text if t]
    assert sum(counts) + sum(1 for t in leaves.text if not t) == f.switch_counts()["leaf"]
    assert f"leaves: {f.switch_counts()['leaf']:,} in {len(leaves.x)} boxes" in fig.layout.yaxis.ticktext


def test_rack_table_says_where_the_22_leaves_sit():
    r = rack_report(REVIEW_22)
    # leaves of 6 servers over racks of 4: each leaf sits in the rack of its middle server, 2 of every 3 racks
    # (racks 0, 2, 3, 5, 6, ...), and the last leaf (servers 126-127) in rack 31: 22 racks with a leaf, 10 without
    rows = [(x["count"], x["holds"]) for x in rack_rows(r) if x["racks"] == "compute"]
    assert rows == [(22, "32 GPUs + 1 leaf switch"), (10, "32 GPUs")]
    # the busiest rack, rack 31: 4 DGX (NICs inside), leaf 21 with its 12 uplinks in 6 twin-port modules, and the
    # 16 active copper cables of servers 124-125 to leaf 20 next door
    assert r["max_rack_power_w"] == pytest.approx(4 * DGX_W + QM9700_W + 6 * TWIN_SR8_W + 16 * ACC_W)
    # a rack without a leaf: 4 DGX and 2 servers' 16 cables to a leaf next door (rack 1: servers 4-5 to leaf 0 in
    # rack 0, 6-7 to leaf 1 in rack 2: 32 cables)
    assert min(g["power_min_w"] for g in r["compute_rack_groups"]) == pytest.approx(4 * DGX_W + 32 * ACC_W)


def test_busiest_rack_it_and_facility_power_are_one_figure_each():
    f = build_fabric(REVIEW_22)
    bom = bill_of_materials(f)
    r = rack_report(REVIEW_22)
    site = site_power(f, bom)                          # what the Upgrade page shows
    # IT power: 128 DGX (10.2 kW with their NICs) + every network item but the 1,024 NICs
    it = 128 * DGX_W + bom.power_w - 1024 * CAT.nic("nic-cx7-400").power_w
    assert r["it_power_w"] == pytest.approx(it) and site.total_w == pytest.approx(it)
    assert r["facility_power_w"] == pytest.approx(1.3 * it) and site.facility_w(1.3) == pytest.approx(1.3 * it)
    assert site.max_rack_w == pytest.approx(r["compute_rack_power_w"])
    assert site.compute_rack_w.sum() + site.network_w == pytest.approx(it)


# ------------------------------------------------------------------ the pages


def _app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _rack_table(at) -> list[dict]:
    t = next(d.value for d in at.dataframe if "holds" in d.value.columns)
    return t.to_dict("records")


def _rack_caption(at) -> str:
    return next(c.value for c in at.caption if "Busiest rack" in c.value)


def _build_json(gpus: int) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["build", "--preset", "dgx-h100-superpod", "--gpus", str(gpus), "--json"]) == 0
    return json.loads(buf.getvalue())


def test_design_page_draws_and_racks_the_22_leaves():
    at = _app(gpus="1024", design=urlstate.encode_genes(design_genes(REVIEW_22)))
    at.switch_page("pages/design.py").run()
    _ok(at)
    topo = json.loads(at.get("plotly_chart")[0].proto.spec)
    leaves = next(t for t in topo["data"] if str(t.get("name", "")).startswith("leaf switches"))
    xs = leaves["x"]
    assert (len(xs) if isinstance(xs, list) else len(np.frombuffer(__import__("base64").b64decode(xs["bdata"]),
                                                                    dtype=np.dtype(xs["dtype"])))) == 22
    assert "leaves: 22" in topo["layout"]["yaxis"]["ticktext"]
    rows = [(x["count"], x["holds"]) for x in _rack_table(at) if x["racks"] == "compute"]
    assert rows == [(22, "32 GPUs + 1 leaf switch"), (10, "32 GPUs")]
    assert "22 of the 32 compute racks hold the 22 leaf switches" in _rack_caption(at)


def test_fabric_and_bom_opens_at_the_sessions_size_and_explains_the_unit_step():
    at = _app(gpus="1024")
    at.switch_page("pages/build.py").run()
    _ok(at)
    assert at.number_input(key="gpus").value == 1024
    assert {m.label: m.value for m in at.metric}["Network capex"] == "$8,266,640"
    note = " ".join(i.value for i in at.info).replace("\\$", "$")
    # 4 SUs hold 127 servers + the UFM slot: the 128th server starts a 5th unit with its 8 rail leaves, and the
    # spines go from 16 to 32
    assert "A 5th scalable unit starts above 1,016 GPUs" in note
    assert "leaf 32 -> 40, spine 16 -> 32" in note and "$6,883,120" in note and "$8,266,640" in note


def test_one_design_has_the_same_racks_power_and_bom_on_design_fabric_bom_and_the_cli():
    """The SuperPOD-style design at 1,024 GPUs: the Search page's baseline opened on the Design page, the preset on
    Fabric & BOM and `fabric build --json` show the same bill of materials, racks and power."""
    pod = _baselines(1024)["pod"]
    at = _app(gpus="1024", design=urlstate.encode_genes(design_genes(pod)))
    at.switch_page("pages/design.py").run()
    _ok(at)
    design_metrics = {m.label: m.value for m in at.metric}
    design_racks, design_caption = _rack_table(at), _rack_caption(at)
    at.switch_page("pages/build.py").run()
    _ok(at)
    build_metrics = {m.label: m.value for m in at.metric}
    build_racks, build_caption = _rack_table(at), _rack_caption(at)
    cli = _build_json(1024)
    assert design_metrics["Network capex"] == build_metrics["Network capex"] == "$8,266,640"
    assert round(cli["cost_usd"]) == 8_266_640
    assert design_racks == build_racks == rack_rows(cli["racks"])
    assert design_caption == build_caption
    assert power_text(cli["racks"]["max_rack_power_w"]) in design_caption
    assert f"IT power {power_text(cli['racks']['it_power_w'])}" in design_caption
    assert f"facility power {power_text(cli['racks']['facility_power_w'])} (IT power x PUE 1.3)" in design_caption


def test_upgrade_page_labels_facility_power_as_it_power_times_pue():
    at = _app()
    at.switch_page("pages/upgrade.py").run()
    _ok(at)
    from fabric.ui_support.upgrade_view import installed_design

    d = installed_design("fat-tree", 256, 2.0, "ecmp")               # the page's default installed fabric
    r = rack_report(d)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Facility power (PUE 1.3)"] == power_text(r["facility_power_w"])
    assert metrics["Most power of a compute rack"] == power_text(r["compute_rack_power_w"])
