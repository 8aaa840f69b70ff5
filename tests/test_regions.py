"""Designs of regions (issue 37): a cluster divided into regions cabled differently, joined by shared spines or a
shared core. Counts and link loads by hand on small cases; the one-region case is today's uniform design."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabric.cost import bill_of_materials
from fabric.design import Design, design_from_dict, design_to_dict
from fabric.errors import DesignError, WorkloadError
from fabric.evaluate import evaluate
from fabric.facility.rackpower import rack_report
from fabric.topology import build_fabric
from fabric.topology.fabric import LINK_KINDS
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

GIB = 2 ** 30


def _job(name: str, n: int, kind: str = "all_to_all", role: str = "ep") -> Job:
    g = ProcessGroup(name="world", size=n, role=role, rank_start=0, rank_stride=1)
    return Job(name=name, kind="training", world_size=n, groups=(g,),
               ops=(CommOp(kind=kind, bytes=GIB, group="world", count_per_step=1.0),), compute_time_s=0.0)


def _small(**kw) -> Design:
    """256 H100 on 64 x 400G switches: region A = 16 servers rail-optimized at 1:1, region B = 16 servers in a
    top-of-rack Clos at 3:1."""
    regions = [{"name": "A", "nodes": 16, "family": "rail_optimized"},
               {"name": "B", "nodes": 16, "family": "clos", "oversubscription": [3, 1]}]
    for r, jobs in zip(regions, kw.pop("jobs", ([], []))):
        if jobs:
            r["jobs"] = list(jobs)
    return Design(name="two regions", gpus=256, regions=regions, **kw)


# ----------------------------------------------------------------- schema


def test_one_region_is_the_uniform_design():
    one = Design(name="x", gpus=1024, regions=[{"name": "A", "nodes": 128, "family": "rail_optimized",
                                               "oversubscription": [2, 1]}])
    assert one == Design(name="x", gpus=1024, family="rail_optimized", oversubscription=(2.0, 1.0))
    assert one.regions is None and one.family == "rail_optimized"


@pytest.mark.parametrize("preset", ["llama3-70b", "mixtral-8x7b"])
def test_one_region_evaluates_exactly_as_the_uniform_design(preset):
    from fabric.workload.presets import preset_workload

    wl = preset_workload(preset, gpus=1024)
    for fam, o in (("clos", (2.0, 1.0)), ("rail_optimized", (1.0, 1.0))):
        uni = Design(name="u", gpus=1024, family=fam, oversubscription=o)
        one = Design(name="u", gpus=1024, regions=[{"name": "all", "nodes": 128, "family": fam,
                                                   "oversubscription": list(o)}])
        a, b = evaluate(uni, wl, samples=64, seed=3), evaluate(one, wl, samples=64, seed=3)
        assert a.step_time_s == b.step_time_s and a.cost_usd == b.cost_usd and a.power_w == b.power_w
        assert a.lower_bound_s == b.lower_bound_s and a.hot_links == b.hot_links


def test_two_regions_round_trip_through_json():
    d = _small(jobs=(["moe"], []))
    assert d.family == "regions" and [r.name for r in d.regions] == ["A", "B"]
    back = design_from_dict(json.loads(json.dumps(design_to_dict(d))))
    assert back == d
    assert "regions" not in design_to_dict(Design(name="u", gpus=64))      # uniform files unchanged


@pytest.mark.parametrize("fields,needle", [
    ({"regions": [{"name": "A", "nodes": 16}, {"name": "B", "nodes": 8}]}, "the regions hold 24 servers"),
    ({"oversubscription": [2, 1]}, "'oversubscription': a design with regions sets it per region"),
    ({"family": "rail_only"}, "has family 'regions'"),
    ({"regions": [{"name": "A", "nodes": 16}, {"name": "A", "nodes": 16}]}, "A repeats"),
    ({"regions": [{"name": "A", "nodes": 16, "color": 1}, {"name": "B", "nodes": 16}]}, "regions[0]': unknown field"),
    ({"regions": [{"name": "A", "nodes": 16, "family": "dragonfly"}, {"name": "B", "nodes": 16}]},
     "regions[0].family': unknown value 'dragonfly'"),
    ({"regions": [{"name": "A", "nodes": 16, "oversubscription": [40]}, {"name": "B", "nodes": 16}]},
     "regions[0].oversubscription': ratio 40 is outside"),
    ({"regions": [{"name": "A", "nodes": 16, "jobs": ["x"]}, {"name": "B", "nodes": 16, "jobs": ["x"]}]},
     "job(s) x placed in more than one region"),
    ({"regions": [{"name": "A", "nodes": 16, "rails_per_leaf": 2}, {"name": "B", "nodes": 16}]},
     "apply to a rail_optimized region only"),
    ({"family": "regions", "regions": None}, "'regions' needs a list of regions"),
])
def test_bad_regions_name_the_field(fields, needle):
    base = {"name": "r", "gpus": 256, "regions": [{"name": "A", "nodes": 16}, {"name": "B", "nodes": 16}]}
    with pytest.raises(DesignError) as err:
        design_from_dict({**base, **fields})
    assert needle in str(err.value)


# ----------------------------------------------------------------- build, by hand


def test_shared_spines_counted_by_hand():
    """A: 16 servers x 8 rails on 8 rail leaves of 16 down / 16 up (1:1). B: a 3:1 leaf keeps 16 of 64 ports up and
    48 down, 6 servers per leaf: leaves of 6, 6 and 4 servers, each with 16 uplinks (the full leaf's). Uplinks
    8 x 16 + 3 x 16 = 176; at least ceil(176 / 64) = 3 spines and at most 16 (each leaf reaches every spine); the
    fewest that split every leaf's 16 evenly is 4, so 4 spines of 44 ports."""
    fab = build_fabric(_small())
    assert fab.switch_counts() == {"leaf": 11, "spine": 4}
    assert fab.link_counts() == {"nic-leaf": 256, "leaf-spine": 176}
    s = fab.structure
    assert s["join"] == "shared spines" and s["tiers"] == 2 and s["spine_ports_used"] == 44
    assert [r["leaves"] for r in s["regions"]] == [8, 3] and [r["leaf_up"] for r in s["regions"]] == [16, 16]
    # every leaf reaches every spine with 4 links
    ls = fab.link_kind == LINK_KINDS.index("leaf-spine")
    pairs = np.stack([fab.link_a[ls], fab.link_b[ls]], 1)
    _, per = np.unique(pairs, axis=0, return_counts=True)
    assert per.tolist() == [4] * 44
    # servers 0-15 on region A's rail leaves (rail r on leaf r), servers 16-31 on B's leaves, 6 per leaf
    nics = fab.gpu_nics[:, 0] - fab.nic_base
    leaf = (fab.nic_ports[nics, 0] - fab.switch_base).reshape(32, 8)
    assert (leaf[:16] == np.arange(8)).all()
    assert (leaf[16:, 0] == 8 + np.arange(16) // 6).all() and (leaf[16:] == leaf[16:, :1]).all()
    bom = {(i.category, i.where): i.count for i in bill_of_materials(fab).items}
    assert bom[("switch", "leaf")] == 11 and bom[("switch", "spine")] == 4


def test_shared_core_counted_by_hand():
    """A spine ratio makes each region pods of its own under a shared core. A (rail-optimized, 1:1 and 1:1): 8 leaves
    x 16 uplinks over the fewest spines of 32 downlinks that take them, 4 (bundles of 4), each 32 down and 32 up:
    128 core-facing links. B (3:1 leaves, 2:1 spines: 42 down, 22 up of 64): 3 leaves x 16 uplinks over 2 spines
    (bundles of 8), each 24 down and ceil(24 / 2) = 12 up: 24 links. 152 links over ceil(152 / 64) = 3 cores."""
    d = Design(name="c", gpus=256, regions=[{"name": "A", "nodes": 16, "family": "rail_optimized"},
                                            {"name": "B", "nodes": 16, "family": "clos", "oversubscription": [3, 2]}])
    fab = build_fabric(d)
    s = fab.structure
    assert s["join"] == "shared core" and fab.tiers == 3
    assert [(r["leaves"], r["spines"], r["core_links"]) for r in s["regions"]] == [(8, 4, 128), (3, 2, 24)]
    assert fab.switch_counts() == {"leaf": 11, "spine": 6, "core": 3}
    assert fab.link_counts() == {"nic-leaf": 256, "leaf-spine": 176, "spine-core": 152}
    assert s["core_ports_used"] == 51                 # 152 dealt round-robin: 51, 51, 50


def test_tiers_two_refused_when_a_region_sets_a_spine_ratio():
    d = Design(name="c", gpus=256, tiers=2, regions=[{"name": "A", "nodes": 16},
                                                     {"name": "B", "nodes": 16, "oversubscription": [3, 2]}])
    with pytest.raises(DesignError, match="region\\(s\\) B set a spine ratio"):
        build_fabric(d)


def test_link_loads_by_hand_stay_in_the_region_of_the_job():
    """An all-to-all of 1 GiB per GPU over region B's 128 GPUs, sprayed: a 6-server leaf's 48 GPUs send
    48 x 80 / 128 GiB = 30 GiB to the 80 GPUs outside it, 30 / 16 = 1.875 GiB on each uplink; region A carries
    nothing. The same job on a uniform 3:1 Clos of 16 servers takes the same time."""
    wl = Workload(jobs=(_job("moe", 128),))
    d = _small(routing="spray", jobs=([], ["moe"]))
    ev = evaluate(d, wl, samples=16)
    up = [h for h in ev.hot_links if h["links"] == "leaf uplinks"]
    assert up and all(h["example"] in ("leaf8", "leaf9", "leaf10") for h in ev.hot_links)
    assert up[0]["groups"] == 2 and up[0]["mean_bytes"] == pytest.approx(1.875 * GIB, rel=1e-9)
    uni = Design(name="u", gpus=128, family="clos", oversubscription=(3.0, 1.0), routing="spray")
    assert ev.ops[0].time_p50_s == pytest.approx(evaluate(uni, wl, samples=16).ops[0].time_p50_s, rel=1e-9)


def test_the_region_a_job_sits_in_sets_its_speed():
    """The same all-to-all is twice as slow in the 3:1 region as in the 1:1 rail region (placement is a design
    rule: moving the job changes nothing bought)."""
    wl = Workload(jobs=(_job("moe", 128),))
    fast = evaluate(_small(routing="spray", jobs=(["moe"], [])), wl, samples=16).ops[0].time_p50_s
    slow = evaluate(_small(routing="spray", jobs=([], ["moe"])), wl, samples=16).ops[0].time_p50_s
    assert slow / fast == pytest.approx(2.0, rel=0.01)
    assert _small(jobs=(["moe"], [])).replace(name="x") != _small(jobs=([], ["moe"]))
    assert build_fabric(_small(jobs=(["moe"], []))).cache_key == build_fabric(_small(jobs=([], ["moe"]))).cache_key


# ----------------------------------------------------------------- placement


def test_placement_puts_each_job_inside_its_region():
    from fabric.evaluate.placement import place_jobs

    jobs = [_job("dense", 64, "all_reduce", "dp"), _job("moe", 96)]
    fab = build_fabric(_small(jobs=([], ["moe"])))
    notes: list = []
    dense, moe = place_jobs(jobs, fab, "packed", notes=notes)
    assert dense.min() >= 0 and dense.max() < 128              # first fit: region A
    assert moe.min() >= 128 and moe.max() < 256                # named: region B
    assert notes == []
    # fragmentation moves servers only inside their region
    rng = np.random.default_rng(0)
    dense, moe = place_jobs(jobs, fab, "packed", rng=rng, fragmentation=1.0)
    assert dense.max() < 128 and moe.min() >= 128


def test_placement_says_when_a_job_cannot_sit_in_one_region():
    from fabric.evaluate.placement import place_jobs

    fab = build_fabric(_small(jobs=(["ghost"], [])))
    notes: list = []
    (big,) = place_jobs([_job("big", 192)], fab, "packed", notes=notes)
    assert sorted(set((big // 128).tolist())) == [0, 1]
    assert any("big: no region has 192 GPUs free, so it spans regions" in n for n in notes)
    assert any("region A names job 'ghost'" in n for n in notes)
    with pytest.raises(WorkloadError, match="job 'big' \\(192 GPUs\\) does not fit region B \\(128 of 128"):
        place_jobs([_job("big", 192)], build_fabric(_small(jobs=([], ["big"]))), "packed")


# ----------------------------------------------------------------- racks


def test_clos_region_leaves_sit_in_racks_rail_leaves_in_network_racks():
    """4 DGX H100 per 40.8 kW rack: region B's 16 servers fill racks 4-7; its 3 top-of-rack leaves (6, 6 and 4
    servers) sit in the racks of their middle servers; region A's 8 rail leaves and the 4 spines go to network
    racks; A's server links are row optics, B's in-rack copper or neighbouring-rack cables."""
    d = _small()
    rr = rack_report(d)
    assert rr["compute_racks"] == 8 and rr["tor_switches"] == 3 and rr["leaves_in_compute_racks"]
    assert rr["servers_per_leaf"] == 6
    fab = build_fabric(d)
    media = fab.link_medium[fab.link_kind == LINK_KINDS.index("nic-leaf")]
    reach = fab.link_reach_m[fab.link_kind == LINK_KINDS.index("nic-leaf")]
    assert (reach[:128] == 30.0).all()              # region A: rail leaves in the row
    assert (reach[128:] <= 5.0).all()               # region B: its rack or the next
    assert len(set(media[:128].tolist())) == 1


# ----------------------------------------------------------------- records, links


def test_a_design_of_regions_survives_a_record_and_a_link():
    """Every view rebuilds a design from its record (the search CSV, the Design and Compare pages, a shared link):
    a record that dropped the regions would rebuild a uniform fabric under the same name."""
    from fabric.search.constraints import Constraints
    from fabric.search.designs import design_from_record, genes_of_record, short_label
    from fabric.search.records import evaluate_record
    from fabric.ui_support.urlstate import decode_genes, encode_genes

    d = _small(jobs=([], ["moe"]))
    wl = Workload(jobs=(_job("moe", 128),))
    rec = evaluate_record(d, wl, None, 0, 16, None, Constraints(gpus=256))
    assert rec["buildable"] and rec["family"] == "regions"
    assert rec["oversub_leaf"] == 3.0                     # the highest ratio of any region
    genes = genes_of_record(rec)
    back = design_from_record(decode_genes(encode_genes(genes)), gpus=256, name=d.name)
    assert back == d
    assert short_label(genes).startswith("regions [A 16 srv rail-opt 1:1 | B 16 srv Clos 3:1 (moe)]")
    # the same regions holding other jobs are the same hardware (placement is free policy)
    from fabric.design.policy import same_record_hardware
    other = evaluate_record(_small(jobs=(["moe"], [])), wl, None, 0, 16, None, Constraints(gpus=256))
    assert same_record_hardware(rec, other)
    uni = evaluate_record(Design(name="u", gpus=256), wl, None, 0, 16, None, Constraints(gpus=256))
    assert not same_record_hardware(rec, uni)


# ----------------------------------------------------------------- capex by region, the brief's words


def test_capex_by_region_adds_up_and_counts_by_hand():
    from fabric.catalog import default_catalog
    from fabric.cost.regions import region_rows

    cat = default_catalog()
    fab = build_fabric(_small(jobs=(["moe"], [])))
    bom = bill_of_materials(fab)
    rows = region_rows(fab, bom)
    assert [r["region"] for r in rows] == ["A", "B", "shared"]
    assert sum(r["capex_usd"] for r in rows) == pytest.approx(bom.cost_usd)
    assert sum(r["power_w"] for r in rows) == pytest.approx(bom.power_w)
    a, b, shared = rows
    assert (a["leaves"], b["leaves"], shared["spines"]) == (8, 3, 4)
    assert a["jobs"] == ["moe"] and b["jobs"] == []
    sw = cat.switch("ib-ndr-64x400")
    assert shared["capex_usd"] == pytest.approx(4 * sw.price_usd)          # the shared spines, nothing else
    # region B: 3 leaves, 128 NICs, 128 NIC links and 48 uplinks; region A: 8 leaves, 128 NICs, 128 + 128 links
    nic = cat.nic("nic-cx7-400")
    assert b["capex_usd"] > 3 * sw.price_usd + 128 * nic.price_usd
    assert a["capex_usd"] - 8 * sw.price_usd > b["capex_usd"] - 3 * sw.price_usd     # more links, all optics


def test_the_brief_says_what_each_region_carries():
    from fabric.cost.regions import region_rows
    from fabric.review.regions import region_lines

    wl = Workload(jobs=(_job("moe", 128), _job("dense", 64, "all_reduce", "dp")))
    d = _small(jobs=(["moe"], []))
    fab = build_fabric(d)
    lines = region_lines(d, wl, region_rows(fab, bill_of_materials(fab)))
    assert lines[0].startswith("Region A (rail-optimized, 1:1 at the leaf, 128 GPUs")
    assert lines[-1] == "Tables of one ratio per design show its highest leaf ratio, 3:1."
    assert "carries moe, whose largest traffic across servers is its expert all-to-all (1.07 GB per GPU" in lines[0]
    assert lines[1].startswith("Region B (a top-of-rack Clos, 3:1 at the leaf, 128 GPUs")
    assert "carries dense, whose largest traffic across servers is its data-parallel all-reduce" in lines[1]
    assert lines[2] == "The regions are joined by shared spines (4 spines, $168,000, 11% of the network)."


# ----------------------------------------------------------------- a shared cluster judged job by job


def test_primary_job_picks_the_figure_and_round_trips():
    from dataclasses import replace

    from fabric.workload.model import dump_workload_json, load_workload_json

    wl = Workload(jobs=(_job("moe", 128), _job("dense", 64, "all_reduce", "dp")))
    d = _small(routing="spray", jobs=([], ["moe"]))
    whole = evaluate(d, replace(wl, primary="moe"), samples=16)
    other = evaluate(d, replace(wl, primary="dense"), samples=16)
    assert whole.step_time_s == whole.jobs["moe"]["step_time_s"]
    assert other.step_time_s == other.jobs["dense"]["step_time_s"] != whole.step_time_s
    back = load_workload_json(dump_workload_json(replace(wl, primary="dense")))
    assert back.primary == "dense"
    with pytest.raises(WorkloadError, match="workload.primary: 'x' is not a training or inference job"):
        load_workload_json(json.dumps({**json.loads(dump_workload_json(wl)), "primary": "x"}))


def test_job_mix_objective_has_one_case_per_job():
    from fabric.errors import FabricError
    from fabric.search.robust import job_mix_objective

    wl = Workload(jobs=(_job("moe", 128), _job("dense", 64, "all_reduce", "dp")))
    obj = job_mix_objective(wl, {"moe": 3, "dense": 1})
    assert [(n, w) for n, _, _, w in obj.cases] == [("moe|baseline", 0.75), ("dense|baseline", 0.25)]
    assert [wl_.primary for _, wl_, _, _ in obj.cases] == ["moe", "dense"]
    with pytest.raises(FabricError, match="job mix: no job called ghost"):
        job_mix_objective(wl, {"ghost": 1})


def test_region_genes_decode_repair_and_encode():
    """Every genome of a space with regions decodes to a buildable-or-refused design, repairs to a canonical genome
    and encodes back; region A is sized to hold its jobs whole."""
    from fabric.search.constraints import Constraints
    from fabric.search.space import DesignSpace

    wl = Workload(jobs=(_job("moe", 128), _job("dense", 64, "all_reduce", "dp")))
    space = DesignSpace(Constraints(gpus=256, families=("clos", "rail_optimized", "regions"),
                                    switch_models=("ib-ndr-64x400",), nic_models=("nic-cx7-400",)), workload=wl)
    split = space.gene("region_split")
    assert split.choices == (("dense",), ("moe",))
    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(300):
        x = rng.integers(0, space.upper + 1)
        d, _ = space.decode(x)
        y = space.repair(x)
        assert space.decode(y)[0] == d
        if d.family == "regions":
            seen += 1
            a, b = d.regions
            held = 128 if a.jobs == ("moe",) else 64
            assert a.nodes * 8 == held and a.nodes + b.nodes == 32
            assert set(a.jobs) | set(b.jobs) == {"moe", "dense"}
            assert (space.encode(d) == y).all()
    assert seen > 20


def test_cli_judges_a_mixed_cluster_job_by_job(tmp_path, capsys):
    from pathlib import Path

    from fabric.cli.main import main

    root = Path(__file__).resolve().parents[1]
    design = tmp_path / "r.json"
    design.write_text(json.dumps({"name": "two regions", "gpus": 4096, "regions": [
        {"name": "A", "nodes": 256, "family": "rail_optimized", "jobs": ["mixtral-8x7b"]},
        {"name": "B", "nodes": 256, "family": "clos", "oversubscription": [3, 1]}]}))
    sample = str(root / "sample_traces" / "mixed-cluster.json")
    assert main(["evaluate", "-w", sample, "-d", str(design), "--per-job", "--robust", "mean", "--weights",
                 "0.4,0.4,0.2", "--samples", "16"]) == 0
    out = capsys.readouterr().out
    assert "over 3 cases: mixtral-8x7b|baseline" in out and "llama3-70b-online|baseline" in out
    assert main(["evaluate", "-w", sample, "-d", str(design), "--per-job", "--samples", "16"]) == 2
    assert "--per-job needs --robust worst or --robust mean" in capsys.readouterr().err
    assert main(["evaluate", "-w", sample, "-d", str(design), "--per-job", "--robust", "mean", "--weights", "1,2",
                 "--samples", "16"]) == 2
    assert "--weights gives 2 weight(s) for the workload's 3 jobs" in capsys.readouterr().err
    assert main(["build", str(design)]) == 0
    out = capsys.readouterr().out
    assert "region" in out and "rail_optimized" in out and "mixtral-8x7b" in out
