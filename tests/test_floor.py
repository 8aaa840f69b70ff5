"""The floor of halls (issue 39 item 2): link lengths, media and optics from where the racks stand, checked against
hand-computed cases, and the cabling plan laid out on the same halls."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabric.cabling.checks import plan_checks
from fabric.cabling.plan import cabling_plan
from fabric.catalog import default_catalog
from fabric.cost import bill_of_materials
from fabric.cost.bom import optics_for_length
from fabric.facility.rackpower import rack_report
from fabric.reference.presets import preset_design
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS
from fabric.topology.floor import cross_hall_length_m, floor_text


def _lengths(fab, kind: str) -> dict:
    sel = fab.link_kind == LINK_KINDS.index(kind)
    return dict(zip(*[a.tolist() for a in np.unique(fab.link_reach_m[sel], return_counts=True)]))


def test_cross_hall_run_by_hand():
    # halls 9 rows deep plus 2 overflow rows at 2.4 m, 6 m apart: 32.4 m from one hall's start to the next; the
    # longest run between racks of two halls d apart: d x 32.4 + 10 rows x 2.4 + 34 racks x 0.6 + up and down two
    # 48U racks to a tray 0.3 m above (2 x (48 x 0.04445 + 0.3)) + 1 m of service loops, rounded up
    by_hand = [math.ceil(d * 32.4 + 24 + 20.4 + 2 * (48 * 0.04445 + 0.3) + 1.0) for d in (1, 2, 3)]
    assert by_hand == [83, 116, 148]
    assert cross_hall_length_m([0, 0, 5, 2], [1, 2, 2, 2]).tolist() == [83.0, 116.0, 148.0, 0.0]



def test_switch_link_reach_of_many_links_by_hand():
    """A long array of links (the builder's 100,000s, looked up per pair of halls) gets the lengths worked out by
    hand above: 50 m inside a hall, 83 / 116 / 148 m one, two, three halls apart, whatever the halls' numbers."""
    from fabric.topology.floor import switch_link_reach_m

    rng = np.random.default_rng(0)
    a, b = rng.integers(2, 6, 1000), rng.integers(2, 6, 1000)
    want = np.array([50.0, 83.0, 116.0, 148.0])[np.abs(a - b)]
    assert switch_link_reach_m(a, b).tolist() == want.tolist()
    assert switch_link_reach_m(a[:3], b[:3]).tolist() == want[:3].tolist()      # a few links: the same


def test_link_lengths_grouped_as_numpy_groups_them():
    """The bill's groups of link lengths (counted for whole metres, sorted otherwise) are numpy's unique lengths
    and inverse, on the builder's lengths and on fractional ones."""
    from fabric.cost.bom import _lengths_index

    rng = np.random.default_rng(1)
    for reach in (rng.choice([50.0, 83.0, 116.0, 148.0], 5000), rng.choice([1.0, 2.5, 3.0, 7.25], 5000),
                  np.array([3.0, 3.0, 1.0]), rng.choice([1e7, 2e7], 10)):
        got_u, got_inv = _lengths_index(reach)
        want_u, want_inv = np.unique(reach, return_inverse=True)
        assert got_u.tolist() == want_u.tolist() and got_inv.tolist() == want_inv.ravel().tolist()

def test_three_tier_fat_tree_on_four_halls_by_hand():
    # 20,480 H100 on 64-port NDR at 1:1, 3 tiers: a leaf takes 4 DGX (32 ports down), one rack of 4 DGX (40.8 kW);
    # pods of 32 leaves with 32 spines (2 network racks): 34 racks a pod, 9 pods fill a hall of 315 racks, so 20
    # pods take halls 0-2 (9, 9, 2) and the 320 cores (20 racks) a hall of their own in the middle: the floor's
    # halls are 0 (pods 0-8), 1 (cores), 2 (pods 9-17), 3 (pods 18-19).
    cat = default_catalog()
    d = preset_design("fat-tree", 20480).replace(tiers=3, oversubscription=(1.0, 1.0))
    fab = build_fabric(d, cat)
    s = fab.structure
    assert (s["pods"], s["leaves_per_pod"], s["spines_per_pod"], s["cores"], s["halls"]) == (20, 32, 32, 320, 4)
    # every leaf-spine link inside its pod's hall: the 50 m class
    assert _lengths(fab, "leaf-spine") == {50.0: 20 * 32 * 32}
    # spine-core: 32 spines x 32 uplinks = 1,024 links a pod; 18 pods one hall from the cores (83 m), 2 pods two
    # halls away (116 m)
    assert _lengths(fab, "spine-core") == {83.0: 18 * 1024, 116.0: 2 * 1024}
    bom = bill_of_materials(fab, cat)
    items = {(i.model, i.where): i.count for i in bom.items if i.category in ("transceiver", "cable")}
    # beyond the 50 m of multimode SR8: single-mode DR8 twin-port modules (a spine's 32 uplinks: 16 modules; a
    # core's 64 ports: 32) and single-mode fibre of the next length up
    assert items[("osfp-2x400-dr8-switch", "spine-core (spine end)")] == 640 * 16
    assert items[("osfp-2x400-dr8-switch", "spine-core (core end)")] == 320 * 32
    assert items[("smf-100m", "spine-core")] == 18 * 1024 and items[("smf-500m", "spine-core")] == 2 * 1024
    assert items[("mmf-50m", "leaf-spine")] == 20 * 1024
    r = rack_report(d, catalog=cat, fabric=fab, bom=bom)
    assert r["cables_by_reach"]["between halls (single-mode)"] == 20 * 1024
    # the cabling plan stands the racks in the same halls: every measured length within what was bought
    plan = cabling_plan(fab, catalog=cat)
    checks = {c.name: c for c in plan_checks(plan, bom, cat)}
    assert checks["every length within its cable's and optic's reach"].ok, \
        checks["every length within its cable's and optic's reach"].detail
    assert checks["counts equal the bill of materials"].ok
    assert set(np.unique(plan.layout.rack_hall).tolist()) == {0, 1, 2, 3}
    assert "4 halls of 9 rows x 35 racks" in floor_text(fab.floor.to_dict())


def test_one_hall_floor_keeps_the_superpod_counts():
    # NVIDIA's DGX H100 SuperPOD (127 DGX + UFM, 4 SUs): 1,024 leaf-spine cables, one hall, multimode at 50 m
    cat = default_catalog()
    fab = build_fabric(preset_design("dgx-h100-superpod"), cat)
    assert fab.structure["halls"] == 1 and _lengths(fab, "leaf-spine") == {50.0: 1024}
    bom = bill_of_materials(fab, cat)
    assert bom.cables.get("fibre") == 1016 + 1024
    assert "racks in one hall" in floor_text(fab.floor.to_dict())


def test_optics_match_their_fibre():
    cat = default_catalog()
    # 200G at 40 m: the multimode SR4 and 50 m multimode fibre
    nic, sw, fibre = optics_for_length(cat, 200e9, 40, None, True)
    assert (nic.model, sw.model, fibre.model) == ("qsfp56-200-sr4", "qsfp56-200-sr4", "mmf-50m")
    # 200G at 80 m: SR4 reaches 100 m but no multimode fibre is that long: single-mode FR4 and single-mode fibre
    # (never a multimode module on a single-mode fibre)
    nic, sw, fibre = optics_for_length(cat, 200e9, 80, None, False)
    assert nic is None and (sw.model, sw.medium, fibre.model, fibre.medium) == \
        ("qsfp56-200-fr4", "singlemode", "smf-100m", "singlemode")
    # 800G at 600 m: beyond DR8's 500 m, the 2 km 2xFR4
    _, sw, fibre = optics_for_length(cat, 800e9, 600, 1600e9, False)
    assert sw.reach_m >= 600 and sw.medium == "singlemode" and fibre.model == "smf-1000m"


def test_rail_units_stay_in_one_hall():
    # Alibaba HPN-style pod, 15,360 GPUs, rail leaves in network racks: 480 compute racks on two halls, the cut
    # between scalable units (a unit's servers and its rail leaves in one hall)
    cat = default_catalog()
    fab = build_fabric(preset_design("alibaba-hpn"), cat)
    assert fab.structure["halls"] == 2
    checks = {c.name: c for c in plan_checks(cabling_plan(fab, catalog=cat), catalog=cat)}
    assert all(c.ok for c in checks.values()), [c.detail for c in checks.values() if not c.ok]
    assert _lengths(fab, "nic-leaf") == {30.0: 30720}


@pytest.mark.parametrize("name", ["hyperscale-multiplane"])
def test_hyperscale_floor_prices_single_mode(name):
    cat = default_catalog()
    fab = build_fabric(preset_design(name), cat)
    r = rack_report(preset_design(name), catalog=cat, fabric=fab)
    between = r["cables_by_reach"]["between halls (single-mode)"]
    # every spine-core link leaves its pod's halls for the core hall, and most leaf-spine links leave their hall
    assert between > 4 * 20_480 and fab.structure["halls"] > 20
    bom = bill_of_materials(fab, cat)
    single = sum(i.price_usd for i in bom.items if i.category == "transceiver"
                 and cat.transceiver(i.model).medium == "singlemode")
    assert single > 0.1 * bom.cost_usd


def test_cli_says_the_same_floor_as_the_bill(tmp_path):
    import json
    import subprocess
    import sys

    from fabric.design import design_to_dict

    cat = default_catalog()
    d = preset_design("fat-tree", 20480).replace(tiers=3, oversubscription=(1.0, 1.0))
    bom = bill_of_materials(build_fabric(d, cat), cat)
    f = tmp_path / "d.json"
    f.write_text(json.dumps(design_to_dict(d)))
    text = subprocess.run([sys.executable, "-m", "fabric.cli.main", "build", str(f)], capture_output=True, text=True)
    assert text.returncode == 0, text.stderr
    assert bom.floor_text() in text.stdout and "20,480 links run on single-mode optics" in text.stdout
    js = json.loads(subprocess.run([sys.executable, "-m", "fabric.cli.main", "build", str(f), "--json"],
                                   capture_output=True, text=True).stdout)
    assert js["floor"]["halls"] == 4 and js["single_mode"] == bom.single_mode
