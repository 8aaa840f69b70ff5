"""What a planner at 100K GPUs is told about sizing (issue 39): a partly filled last pod is said with its cost
(item 3: B200 on 131,072 GPUs, a 1:1 three-tier Clos of 144-port switches builds 26 pods of 72 leaves, the last
holding 21, with a full pod's 72 spines), and plane counts the allowed hardware cannot build are named (item 4)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fabric.catalog import default_catalog
from fabric.cost import bill_of_materials
from fabric.cost.partial_pod import partial_pod
from fabric.design import Design
from fabric.reference.presets import preset_design
from fabric.topology import build_fabric

B200_131K = dict(name="b200-131k-clos", family="clos", gpus=131072, gpu_model="b200", switch_model="ib-xdr-144x800",
                 nic_model="nic-cx8-800", oversubscription=(1.0, 1.0), tiers=3)


def test_last_pod_counts_and_cost_by_hand():
    cat = default_catalog()
    fab = build_fabric(Design(**B200_131K), cat)
    bom = bill_of_materials(fab, cat)
    pod = partial_pod(fab, bom)
    # 16,384 B200 servers, 9 per 144-port leaf at 1:1 (72 down): 1,821 leaves; 72 leaves a pod: 25 full pods + 21
    assert (pod.pods, pod.leaves_per_pod, pod.last_pod_leaves, pod.spines_per_pod) == (26, 72, 21, 72)
    # 21 leaves x 72 uplinks = 1,512 links on spines of 72 leaf-facing ports: at least 21 spines, and equal bundles
    # need a count dividing 72 that keeps the spines at least half used: 24 spines of 3-link bundles (63 ports)
    assert pod.spines_needed == 24 and pod.extra_spines == 48
    assert pod.extra_core_links == 48 * 72 == 3456
    # 936 cores take 26 x 72 x 72 = 134,784 links (144 each); without the 3,456: 131,328 links, 912 cores
    assert pod.extra_cores == 24
    # priced at the bill's own units: a switch $190,000; a spine-core link at the bill's mean over its spine-core
    # optics and fibres (their lengths differ with the halls they join: fabric.topology.floor)
    optics = [i for i in bom.items if i.category in ("transceiver", "cable") and i.where.startswith("spine-core")]
    per_link = sum(i.price_usd for i in optics) / bom.links["spine-core"]
    assert {i.model for i in optics} >= {"osfp-2x800-dr8-switch", "smf-500m"}
    assert pod.extra_usd == pytest.approx(48 * 190_000 + 24 * 190_000 + 3456 * per_link)
    assert "The last of 26 pods holds 21 of 72 leaves but is built as a full pod" in pod.text()
    assert bom.to_dict()["partial_pod"]["extra_spines"] == 48


def test_full_pods_and_pods_whose_leaves_need_every_spine_say_nothing():
    cat = default_catalog()
    for name in ("dgx-h100-superpod", "hyperscale-multiplane", "meta-roce-zone"):
        fab = build_fabric(preset_design(name), cat)
        assert partial_pod(fab, bill_of_materials(fab, cat)) is None, name
    full = build_fabric(Design(**{**B200_131K, "gpus": 82944}), cat)     # 1,152 leaves: 16 full pods
    assert partial_pod(full, bill_of_materials(full, cat)) is None


def test_build_cli_says_it(tmp_path):
    f = tmp_path / "d.json"
    f.write_text(json.dumps({**B200_131K, "oversubscription": [1, 1]}))
    out = subprocess.run([sys.executable, "-m", "fabric.cli.main", "build", str(f)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "48 spines, 3,456 spine-to-core links and 24 core switches beyond what it holds, $" in out.stdout
    js = subprocess.run([sys.executable, "-m", "fabric.cli.main", "build", str(f), "--json"], capture_output=True,
                        text=True)
    assert json.loads(js.stdout)["partial_pod"]["extra_cores"] == 24


def test_unbuildable_plane_counts_are_named():
    """Issue 39 item 4: each plane gets whole NIC ports, so p planes need a NIC of a multiple of p ports."""
    from fabric.search import DesignSpace
    from fabric.search.constraints import Constraints

    h100 = DesignSpace(Constraints(gpus=16384, planes=(1, 2, 4, 8))).unbuildable_planes()
    assert set(h100) == {4, 8}                               # the 2-port NIC builds 2 planes
    assert "nic-cx8-4x200 would, but the host cannot feed it" in h100[4]
    b200 = DesignSpace(Constraints(gpus=16384, planes=(1, 2, 4, 8), gpu_model="b200")).unbuildable_planes()
    assert set(b200) == {8} and "nic-cx8-4x200 4" in b200[8]
    df = DesignSpace(Constraints(gpus=1024, planes=(1, 2), families=("dragonfly",))).unbuildable_planes()
    assert df == {2: "a dragonfly is one plane"}


def test_multiplane_reference_is_a_baseline_from_16k_gpus():
    """Issue 39 item 5: at 16,384 GPUs and above the baselines hold the multi-plane reference; on B200 at 131,072 it
    is the hyperscale-multiplane preset itself (same bill of materials)."""
    from fabric.search import DesignSpace
    from fabric.search.baselines import baseline_designs
    from fabric.search.constraints import Constraints

    cat = default_catalog()
    small = baseline_designs(DesignSpace(Constraints(gpus=1024)))
    assert not any(d.planes > 1 for d in small)
    h100 = [d for d in baseline_designs(DesignSpace(Constraints(gpus=16384))) if d.planes > 1]
    assert len(h100) == 1 and h100[0].planes == 2 and h100[0].nic_model == "nic-2x200-dual"   # H100 hosts: 2 ports
    b200 = [d for d in baseline_designs(DesignSpace(Constraints(gpus=131072, gpu_model="b200"))) if d.planes > 1]
    assert len(b200) == 1
    ref = preset_design("hyperscale-multiplane")
    assert (b200[0].planes, b200[0].oversubscription, b200[0].switch_model, b200[0].nic_model) == \
        (ref.planes, ref.oversubscription, ref.switch_model, ref.nic_model)
    mine = bill_of_materials(build_fabric(b200[0], cat), cat)
    theirs = bill_of_materials(build_fabric(ref, cat), cat)
    assert mine.cost_usd == pytest.approx(theirs.cost_usd) and mine.switches == theirs.switches


def test_pareto_chart_reads_well_at_131k():
    """Issue 39 item 7: money in B (not plotly's "G"), the y unit fixed by the baselines (the live chart does not
    switch from ms to s when the search ends), the caption names the chart's unit (not "(time)")."""
    from fabric.search.constraints import Constraints
    from fabric.ui_support import charts, serving_front

    def rec(cost, p99, fam="clos", key="k"):
        return {"cost_usd": cost, "p99_s": p99, "p50_s": p99, "family": fam, "design": f"d{cost}", "key": key,
                "power_w": 1e6,
                "feasible": True, "buildable": True}

    base = [rec(2.07e9, 0.313, key="b")]
    early = charts.pareto_figure([rec(1.9e9, 0.678)], base)
    late = charts.pareto_figure([rec(1.9e9, 0.678), rec(1.7e9, 1.4)], base)
    assert charts.axis_unit(early, "yaxis") == charts.axis_unit(late, "yaxis") == "ms"
    ticks = list(late.layout.xaxis.ticktext)
    assert "$1B" in ticks and "$2B" in ticks and not any("G" in t for t in ticks)
    cap = serving_front.front_caption(Constraints(gpus=131072), "p99_s", False, unit=charts.axis_unit(late, "yaxis"))
    assert "(ms)" in cap and "(time)" not in cap
    assert charts.money_text(2.07e9) == "$2.07B"


def test_topology_at_131k_keeps_labelled_boxes_readable():
    """Issue 39 item 7: a row of boxes that stand for several switches holds at most 24 (their count labels apart;
    48 before), drawn by pod and plane; the 131K multi-plane reference reads as 4 planes x 5 pods."""
    from fabric.ui_support.topology_view import MAX_LABELLED_PER_ROW, row_label, topology_view

    for d in (preset_design("hyperscale-multiplane"), Design(**B200_131K)):
        v = topology_view(build_fabric(d))
        for row in ("leaf", "spine", "core"):
            boxes = [n for n in v.nodes if n["row"] == row]
            assert len(boxes) <= MAX_LABELLED_PER_ROW, (d.name, row, len(boxes))
    v = topology_view(build_fabric(preset_design("hyperscale-multiplane")))
    assert [row_label(v, r) for r in v.rows] == ["NICs: 131,072 in 5 groups", "leaves: 4,096 in 20 boxes",
                                                 "spines: 2,560 in 20 boxes", "cores: 320 in 24 boxes"]
    leaves = [n["label"] for n in v.nodes if n["row"] == "leaf"]
    assert leaves[0] == "pod 0 leaves plane 0" and {n["plane"] for n in v.nodes} == {0, 1, 2, 3}
