"""Cabling plan, rack elevations, NetBox files and the design package (issue 38)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from fabric.audit.portmap import read_port_map
from fabric.cabling.checks import failed, plan_checks
from fabric.cabling.layout import SLACK_BETWEEN_RACKS_M, SLACK_IN_RACK_M, TRAY_M, U_M
from fabric.cabling.package import package_bytes, write_package
from fabric.cabling.plan import cabling_plan
from fabric.cabling.tables import write_plan_csv
from fabric.cost import bill_of_materials
from fabric.design import Design
from fabric.errors import DesignError
from fabric.reference.presets import preset_design
from fabric.topology import build_fabric


def _plan_frame(plan) -> pd.DataFrame:
    buf = io.BytesIO()
    write_plan_csv(plan, buf)
    return pd.read_csv(io.BytesIO(buf.getvalue()))


# NVIDIA DGX H100 SuperPOD reference architecture, compute fabric (facts.md section 4): per scalable units
# (31 nodes + the UFM slot each): leaves, spines, leaf-spine cables
SUPERPOD = {1: (248, 8, 4, 256), 2: (504, 16, 8, 512), 3: (760, 24, 16, 768), 4: (1016, 32, 16, 1024)}


@pytest.mark.parametrize("sus", [1, 2, 3, 4])
def test_superpod_cabling_matches_nvidia_reference(sus):
    gpus, leaves, spines, leaf_spine = SUPERPOD[sus]
    df = _plan_frame(cabling_plan(preset_design("dgx-h100-superpod", gpus)))
    assert df.loc[df.role == "leaf-spine"].shape[0] == leaf_spine
    assert df.b_device[df.role == "leaf-spine"].nunique() == spines
    # 32 node slots x 8 rails per scalable unit reach the leaves: 31 DGX H100 and the UFM slot
    down = df[df.role.isin(["nic-leaf", "reserved"])]
    assert down.shape[0] == 256 * sus
    assert (df.role == "reserved").sum() == 8            # the UFM slot's 8 ports, on the first unit's leaves
    assert down.b_device.nunique() == leaves
    # every QM9700 leaf is full: 32 ports down, 32 up, 64 ports = 32 OSFP cages of two
    ports = pd.concat([down[["b_device", "b_port"]].rename(columns={"b_device": "sw", "b_port": "port"}),
                       df[df.role == "leaf-spine"][["a_device", "a_port"]].rename(columns={"a_device": "sw",
                                                                                            "a_port": "port"})])
    per_leaf = ports.groupby("sw").port.agg(["count", "max", "nunique"])
    assert (per_leaf["count"] == 64).all() and (per_leaf["nunique"] == 64).all() and (per_leaf["max"] == 64).all()


def test_superpod_port_rules():
    """Rail r of every server on rail leaf r, server slot k on port k of every rail leaf of its unit, uplinks
    round-robin over the 16 spines, twin-port cages filled in order."""
    df = _plan_frame(cabling_plan(preset_design("dgx-h100-superpod")))
    nl = df[df.role == "nic-leaf"].copy()
    nl["rail"] = nl.a_interface.str.slice(3).astype(int)
    assert (nl.groupby("b_device").rail.nunique() == 1).all()
    nl["node"] = nl.a_device.str.slice(5).astype(int)
    # the same server slot sits on the same port number of all 8 rail leaves
    assert (nl.groupby("node").b_port.nunique() == 1).all()
    first = nl[nl.node == 1]
    assert set(first.b_port) == {2}                      # port 1 of the first unit's leaves is the UFM slot's
    assert set(first.b_interface) == {"1/2"}             # cage 1, second port
    up = df[(df.role == "leaf-spine") & (df.a_device == "leaf0")].sort_values("a_port")
    assert list(up.a_port) == list(range(33, 65))
    spines = list(up.b_device)
    assert spines[:16] == [f"spine{i}" for i in range(16)] and spines[16:] == spines[:16]


def test_every_port_once_and_counts_equal_bom_on_presets():
    for name, gpus in (("dgx-h100-superpod", None), ("alibaba-hpn", 2048), ("fat-tree", None),
                       ("rail-only", None), ("meta-roce-zone", 3072), ("gb200-nvl72-superpod", None)):
        design = preset_design(name, gpus)
        plan = cabling_plan(design)
        df = _plan_frame(plan)
        sw_ends = pd.concat([df[["b_device", "b_port", "b_lane"]].set_axis(["d", "p", "l"], axis=1),
                             df[~df.role.isin(["nic-leaf", "reserved"])][["a_device", "a_port", "a_lane"]]
                             .set_axis(["d", "p", "l"], axis=1)])
        assert not sw_ends.duplicated().any(), name
        nic_ends = df[df.role == "nic-leaf"][["a_device", "a_interface"]]
        assert not nic_ends.duplicated().any(), name
        bom = bill_of_materials(plan.fabric)
        bought = df[df.role != "reserved"].cable_model.value_counts().to_dict()
        expected = {}
        for item in bom.items:
            if item.category == "cable":
                expected[item.model] = expected.get(item.model, 0) + item.count
        assert bought == expected, name
        assert not failed(plan_checks(plan)), name


def test_dual_plane_nic_ports_on_different_switches():
    plan = cabling_plan(preset_design("alibaba-hpn", 2048))
    df = _plan_frame(plan)
    nl = df[df.role == "nic-leaf"]
    per_nic = nl.groupby(["a_device", nl.a_interface.str.split("/").str[0]])
    assert (per_nic.b_device.nunique() == 2).all() and (per_nic.plane.nunique() == 2).all()


def test_lengths_from_the_layout_by_hand():
    """Fat tree: four DGX H100 (8U) per rack with their top-of-rack leaf (1U) in the middle: server 1 at U1-8,
    server 2 at U9-16, the leaf at U17, servers 3-4 at U18-33."""
    plan = cabling_plan(preset_design("fat-tree"))
    df = _plan_frame(plan)
    row = df[(df.role == "nic-leaf") & (df.a_device == "node-0001") & (df.a_interface == "nic1")].iloc[0]
    assert row.a_u == 1 and row.b_u == 17
    # in the rack: |17.5 - 5| U + slack
    assert row.length_m == pytest.approx(round(abs(17.5 - 5.0) * U_M + SLACK_IN_RACK_M, 2))
    assert row.medium == "copper" and row.cable_model == "dac-400-2m"
    # a leaf-spine cable: up both racks to the tray, along the floor, and the service loops
    lay = plan.layout
    ls = df[df.role == "leaf-spine"].iloc[0]
    ra, rb = list(lay.rack_name).index(ls.a_rack), list(lay.rack_name).index(ls.b_rack)
    up = (42 - (ls.a_u + 0.5)) * U_M + (42 - (ls.b_u + 0.5)) * U_M + 2 * TRAY_M
    floor = abs(lay.rack_x_m[ra] - lay.rack_x_m[rb]) + abs(lay.rack_y_m[ra] - lay.rack_y_m[rb])
    assert ls.length_m == pytest.approx(round(up + floor + SLACK_BETWEEN_RACKS_M, 2))


def test_checks_fail_when_lengths_or_rack_power_break():
    # 3,072 GPUs on ~100 racks in one line (one rack per row, 2.4 m apart): leaf-spine runs far beyond 50 m
    long = cabling_plan(preset_design("meta-roce-zone", 3072), racks_per_row=1)
    checks = {c.name: c for c in plan_checks(long)}
    reach = checks["every length within its cable's and optic's reach"]
    assert not reach.ok and "longer than the cable or optic bought" in reach.detail
    df = _plan_frame(long)
    too_long = int((df.length_m > df.cable_length_m).sum())
    assert too_long > 0 and f"; {too_long:,} longer than" in reach.detail
    design = preset_design("dgx-h100-superpod")
    tight = replace(design, rack_power_w=41_000.0)          # 4 x 10.2 kW servers plus their NIC optics > 41 kW
    power = {c.name: c for c in plan_checks(cabling_plan(tight))}["every rack within its power budget"]
    assert not power.ok and "41.0 kW" in power.detail


def test_audit_mapping_comes_from_the_plan():
    design = preset_design("dgx-h100-superpod")
    data, summary = package_bytes(design)
    z = zipfile.ZipFile(io.BytesIO(data))
    pm = read_port_map("audit_mapping.csv", z.read("cabling/audit_mapping.csv"), build_fabric(design))
    assert len(pm) == 2 * 1024                              # both ends of every leaf-spine cable
    plan = _plan_frame(cabling_plan(design))
    row = plan[plan.role == "leaf-spine"].iloc[0]
    assert pm[(row.a_device, row.a_interface)] == f"{row.a_device}-{row.b_device}"
    assert pm[(row.b_device, row.b_interface)] == f"{row.b_device}-{row.a_device}"


def test_package_contents_netbox_and_elevations():
    design = preset_design("dgx-h100-superpod")
    data, summary = package_bytes(design, brief_text="brief\n")
    assert summary.ok and summary.links == 2048
    z = zipfile.ZipFile(io.BytesIO(data))
    names = set(z.namelist())
    for f in ("README.txt", "design.json", "bill_of_materials.csv", "cabling/plan.csv", "cabling/by_rack.csv",
              "cabling/checks.txt", "elevations/racks.csv", "brief.txt", "netbox/cables.csv"):
        assert f in names
    headers = {n: next(csv.reader(io.StringIO(z.read(n).decode()))) for n in names if n.startswith("netbox/")}
    assert headers["netbox/devices.csv"] == ["name", "role", "manufacturer", "device_type", "status", "site", "rack",
                                             "position", "face"]
    assert headers["netbox/cables.csv"][:6] == ["side_a_device", "side_a_type", "side_a_name", "side_b_device",
                                                "side_b_type", "side_b_name"]
    assert headers["netbox/interfaces.csv"][:3] == ["device", "name", "type"]
    assert headers["netbox/racks.csv"][:5] == ["site", "name", "status", "width", "u_height"]
    devices = pd.read_csv(io.BytesIO(z.read("netbox/devices.csv")))
    racks = pd.read_csv(io.BytesIO(z.read("netbox/racks.csv")))
    ifaces = pd.read_csv(io.BytesIO(z.read("netbox/interfaces.csv")))
    cables = pd.read_csv(io.BytesIO(z.read("netbox/cables.csv")))
    assert set(devices.rack) <= set(racks.name)
    assert (devices.role == "server").sum() == 127 and (devices.role == "leaf").sum() == 32
    assert not ifaces.duplicated(["device", "name"]).any()
    known = set(zip(ifaces.device, ifaces.name))
    assert all((d, n) in known for d, n in zip(cables.side_a_device, cables.side_a_name))
    assert all((d, n) in known for d, n in zip(cables.side_b_device, cables.side_b_name))
    assert set(cables.side_a_device) | set(cables.side_b_device) <= set(devices.name)
    assert set(cables.type.dropna()) == {"mmf-om4"} and set(ifaces.type) == {"infiniband-ndr"}
    # elevations: no two devices share a U, everything inside its rack, every SVG is well-formed
    el = pd.read_csv(io.BytesIO(z.read("elevations/racks.csv")))
    for rack, g in el.groupby("rack"):
        used = np.concatenate([np.arange(u, u + h) for u, h in zip(g.u, g.height_u)])
        assert used.size == np.unique(used).size and used.max() <= 42, rack
    svgs = [n for n in names if n.endswith(".svg")]
    assert len(svgs) == 35
    for n in svgs:
        ET.fromstring(z.read(n))


def test_bad_design_gives_a_clear_error_and_no_file(tmp_path):
    bad = Design(name="bad", family="clos", gpus=1024, spines=3, oversubscription=(1.0,))
    target = tmp_path / "p.zip"
    with pytest.raises(DesignError):
        write_package(bad, target)
    assert not target.exists() and not list(tmp_path.iterdir())
    (tmp_path / "bad.json").write_text('{"name": "bad", "family": "clos", "gpus": 1024, "spines": 3}')
    out = subprocess.run([sys.executable, "-m", "fabric.cli.main", "export", str(tmp_path / "bad.json"), "--out",
                          str(target)], capture_output=True, text=True)
    assert out.returncode == 2 and "fabric export: error:" in out.stderr and "Traceback" not in out.stderr
    assert not target.exists() and not list(tmp_path.glob("*.zip*"))


def test_cli_export_writes_the_package_and_says_when_a_check_fails(tmp_path):
    target = tmp_path / "sp.zip"
    out = subprocess.run([sys.executable, "-m", "fabric.cli.main", "export", "--preset", "dgx-h100-superpod",
                          "--out", str(target)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert zipfile.ZipFile(target).read("cabling/plan.csv").count(b"\n") == 2049
    out = subprocess.run([sys.executable, "-m", "fabric.cli.main", "export", "--preset", "meta-roce-zone", "--gpus",
                          "3072", "--plan-csv", str(tmp_path / "p.csv"), "--racks-per-row", "1"], capture_output=True,
                         text=True)
    assert out.returncode == 3 and "[FAILED] every length within" in out.stdout


def test_design_of_regions_is_cabled_and_checked():
    """Two regions (A rail-optimized 1:1, B a 3:1 top-of-rack Clos) on a shared core: every port once, counts
    equal the bill of materials, B's leaves sit in their servers' racks on copper."""
    d = Design(name="two", gpus=4096, switch_model="ib-ndr-64x400", regions=[
        {"name": "A", "nodes": 256, "family": "rail_optimized", "oversubscription": [1, 1]},
        {"name": "B", "nodes": 256, "family": "clos", "oversubscription": [3, 1]}])
    plan = cabling_plan(d)
    assert not failed(plan_checks(plan))
    df = _plan_frame(plan)
    nl = df[df.role == "nic-leaf"]
    # region B's 256 servers x 8 NICs on top-of-rack leaves of 6 servers (48 ports down at 3:1): copper in the
    # rack, active copper to the rack beside it; region A's on rail leaves in network racks, optics
    tor = nl[nl.medium.isin(["copper", "active_copper"])]
    assert tor.shape[0] == 256 * 8 and (nl.medium == "optics").sum() == 256 * 8
    assert set(tor[tor.a_rack == tor.b_rack].medium) == {"copper"}
    assert set(tor[tor.a_rack != tor.b_rack].medium) == {"active_copper"}
    # the rail check reads each region's leaves: two rail-A NICs swapped between rail leaves is caught
    from fabric.cabling.checks import _rails
    from fabric.topology.fabric import LINK_KINDS

    nl_rows = np.flatnonzero(plan.role == LINK_KINDS.index("nic-leaf"))
    i, j = nl_rows[0], nl_rows[1]                  # server 1's NICs 0 and 1: rails 0 and 1 of region A
    plan.b_node[i], plan.b_node[j] = plan.b_node[j], plan.b_node[i]
    bad = _rails(plan)
    assert not bad.ok and "2 take more rails than their region's" in bad.detail


def test_dragonfly_plan_optics_equal_the_bill():
    # a dragonfly router is the first end of some global links and the second of others: its twin-port modules
    # pair its ports over both (the bill's rule); counted side by side the plan bought 256 modules more
    from fabric.cabling.checks import plan_checks
    from fabric.cabling.plan import cabling_plan
    from fabric.catalog import default_catalog
    from fabric.design.schema import Design
    from fabric.topology import build_fabric

    cat = default_catalog()
    fab = build_fabric(Design(name="df", gpus=16384, family="dragonfly"), cat)
    checks = {c.name: c for c in plan_checks(cabling_plan(fab, catalog=cat), catalog=cat)}
    assert checks["counts equal the bill of materials"].ok, checks["counts equal the bill of materials"].detail
