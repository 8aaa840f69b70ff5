"""A GPU's host feeds its NICs over PCIe: H100-class hosts (Gen5 x16, ~64 GB/s per direction) run 400G per GPU, not
800G; A100 (Gen4 x16) 200G; Blackwell-class 800G (facts.md section 9). The catalog says so, the builder refuses
impossible pairs, and the search never offers them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.catalog import Catalog, compatible_nics, default_catalog, load_catalog, nic_host_problem
from fabric.cli.main import main
from fabric.cost import bill_of_materials
from fabric.design import Design
from fabric.errors import DesignError
from fabric.search import ConstraintError, Constraints, DesignSpace, exhaustive_search
from fabric.search.baselines import baseline_designs
from fabric.topology import build_fabric
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

H100_NICS = ["nic-cx7-400", "nic-cx6-200", "nic-2x200-dual", "nic-eth-400"]


def test_catalog_carries_each_hosts_nic_limit():
    cat = default_catalog()
    limits = {m: cat.gpu(m).max_nic_bps_per_gpu / 1e9 for m in cat.models("gpus")}
    assert limits == {"h100-sxm": 400, "h200-sxm": 400, "b200": 800, "gb200-nvl72": 800, "gb200-nvl36x2": 800,
                      "a100-sxm-80gb": 200}
    assert "PCIe Gen5 x16" in cat.gpu("h100-sxm").source and "PCIe Gen4 x16" in cat.gpu("a100-sxm-80gb").source
    assert compatible_nics(cat, "h100-sxm") == H100_NICS
    assert compatible_nics(cat, "h200-sxm") == H100_NICS
    assert compatible_nics(cat, "a100-sxm-80gb") == ["nic-cx6-200"]                 # DGX A100: 8 x 200G HDR
    assert compatible_nics(cat, "b200") == cat.models("nics")
    # two NICs per GPU both pass through the GPU's link; two GPUs sharing a NIC still put it on one slot
    assert compatible_nics(cat, "h100-sxm", 2.0) == ["nic-cx6-200"]
    assert compatible_nics(cat, "h100-sxm", 0.5) == H100_NICS
    assert nic_host_problem(cat.gpu("b200"), cat.nic("nic-cx8-800")) is None


def test_h100_with_an_800g_nic_is_refused_naming_both():
    d = Design(gpus=64, switch_model="ib-xdr-144x800", nic_model="nic-cx8-800")
    with pytest.raises(DesignError) as err:
        build_fabric(d)
    msg = str(err.value)
    assert "NIC nic-cx8-800 (800G)" in msg and "h100-sxm host" in msg and "at most 400 Gb/s" in msg
    assert "NICs that fit: nic-cx7-400, nic-cx6-200, nic-2x200-dual, nic-eth-400" in msg
    with pytest.raises(DesignError, match=r"2 x NIC nic-cx7-400 \(400G\) per GPU .* needs 800 Gb/s per GPU"):
        build_fabric(Design(gpus=64, nics_per_gpu=2.0))
    with pytest.raises(DesignError, match=r"nic-cx7-400 \(400G\) .* a100-sxm-80gb host: .* at most 200 Gb/s"):
        build_fabric(Design(gpus=64, gpu_model="a100-sxm-80gb"))


def test_b200_with_an_800g_nic_builds():
    d = Design(gpus=1024, gpu_model="b200", switch_model="ib-xdr-144x800", nic_model="nic-cx8-800")
    f = build_fabric(d)
    assert f.link_speed_bps == 800e9
    assert f.link_counts()["nic-leaf"] == 1024
    bom = bill_of_materials(f)
    assert {i.model: i.count for i in bom.items if i.category == "nic"} == {"nic-cx8-800": 1024}


def test_catalog_files_without_the_column_still_load(tmp_path):
    """An older override file adding a GPU (every column it knew, not max_nic_gbps_per_gpu) still loads; the
    GPU then has no limit (None: not checked), as docs/catalog.md says."""
    row = {"model": "old-gpu", "price_usd": 1, "power_w": 700, "scale_up_gbps": 3600, "scale_up_domain_max": 8,
           "bf16_tflops": 989, "server_gpus": 8, "server_price_usd": 8, "server_power_w": 10200, "nvls": "yes",
           "source": "a file from before the column"}
    csv_path = tmp_path / "old.csv"
    csv_path.write_text("table," + ",".join(row) + "\n" + "gpus," + ",".join(str(v) for v in row.values()) + "\n")
    cat = load_catalog(csv_path)
    assert cat.gpu("old-gpu").max_nic_bps_per_gpu is None
    assert cat.gpu("h100-sxm").max_nic_bps_per_gpu == 400e9                  # defaults keep theirs
    f = build_fabric(Design(gpus=64, gpu_model="old-gpu", switch_model="ib-xdr-144x800", nic_model="nic-cx8-800"),
                     cat)
    assert f.link_speed_bps == 800e9
    # a whole gpus table replaced from JSON without the column, and tables without it, load too
    json_path = tmp_path / "old.json"
    json_path.write_text(json.dumps({"replace": True, "gpus": [row]}))
    assert load_catalog(json_path).models("gpus") == ["old-gpu"]
    tables = default_catalog().tables()
    tables["gpus"] = tables["gpus"].drop(columns=["max_nic_gbps_per_gpu"])
    assert Catalog.from_tables(tables).gpu("h100-sxm").max_nic_bps_per_gpu is None
    # the column round-trips through the edge-unit tables
    assert Catalog.from_tables(default_catalog().tables()).gpu("a100-sxm-80gb").max_nic_bps_per_gpu == 200e9


def test_catalog_cli_shows_the_limit(capsys):
    assert main(["catalog", "--table", "gpus"]) == 0
    out = capsys.readouterr().out
    assert "max_nic_gbps_per_gpu" in out and "Host NIC limit 400 Gb/s per GPU" in out


# ----------------------------------------------------------------- search


def test_space_leaves_out_nics_the_host_cannot_run_and_says_why():
    space = DesignSpace(Constraints(gpus=64, nic_models=("nic-cx8-800", "nic-cx7-400")))
    assert space.genes[space.names.index("nic_model")].choices == ("nic-cx7-400",)
    assert "nic-cx8-800 (800G) cannot run at full speed on the h100-sxm host" in space.excluded_nics["nic-cx8-800"]
    b200 = DesignSpace(Constraints(gpus=64, gpu_model="b200", nic_models=("nic-cx8-800", "nic-cx7-400")))
    assert b200.genes[b200.names.index("nic_model")].choices == ("nic-cx8-800", "nic-cx7-400")
    assert b200.excluded_nics == {}
    # the baselines' "fastest links" are the fastest the host runs
    space = DesignSpace(Constraints(gpus=64, switch_models=("ib-xdr-144x800",)))
    assert {d.nic_model for d in baseline_designs(space)} == {"nic-cx7-400"}


def test_asking_only_for_impossible_nics_is_refused_with_the_ones_that_fit():
    with pytest.raises(ConstraintError, match=r"constraint 'nic_models': none of the allowed NIC models "
                                              r"\(nic-cx8-800\) runs at full speed on h100-sxm hosts, which feed at "
                                              r"most 400 Gb/s .*; allow one of nic-cx7-400, nic-cx6-200"):
        DesignSpace(Constraints(gpus=64, nic_models=("nic-cx8-800",)))
    with pytest.raises(ConstraintError, match=r"none of the allowed NIC models \(nic-cx7-400\) .* a100-sxm-80gb"):
        DesignSpace(Constraints(gpus=64, gpu_model="a100-sxm-80gb", nic_models=("nic-cx7-400",)))


def _workload(world=64):
    g = ProcessGroup("dp", world, "dp", rank_start=0, rank_stride=1)
    return Workload(jobs=(Job("j", world_size=world, groups=(g,), ops=(CommOp("all_reduce", 64 << 20, "dp"),),
                              compute_time_s=0.01),))


def test_a_search_allowed_800g_nics_on_h100_never_evaluates_one():
    """Every design of the space (exhaustive) and every baseline: no H100 record has an 800G NIC or two 400G NICs
    per GPU; a genome asking for two 400G NICs per GPU is repaired to one, and the repair says so."""
    cons = Constraints(gpus=64, families=("clos",), switch_models=("ib-xdr-144x800", "ib-ndr-64x400"),
                       nic_models=("nic-cx8-800", "nic-cx7-400", "nic-cx6-200"), nics_per_gpu=(1.0, 2.0),
                       oversubscriptions=(1.0,), planes=(1,), routings=("ecmp",), qps=(1,),
                       transports=("infiniband",), placements=("packed",))
    res = exhaustive_search(_workload(), cons, samples=16)
    records = list(res.records) + list(res.baselines)
    assert len(records) > 10
    cat = default_catalog()
    for r in records:
        assert r["nic_model"] != "nic-cx8-800"
        assert nic_host_problem(cat.gpu("h100-sxm"), cat.nic(r["nic_model"]), r["nics_per_gpu"]) is None, r
        assert "cannot run at full speed" not in r.get("error", "")
    assert {(r["nic_model"], r["nics_per_gpu"]) for r in records} == {
        ("nic-cx7-400", 1.0), ("nic-cx6-200", 1.0), ("nic-cx6-200", 2.0)}
    space = DesignSpace(cons)
    x = np.zeros(space.n_var, dtype=np.int64)
    x[space.names.index("nic_model")] = space.genes[space.names.index("nic_model")].choices.index("nic-cx7-400")
    x[space.names.index("nics_per_gpu")] = 1                                     # 2.0
    design, repairs = space.decode(x)
    assert (design.nic_model, design.nics_per_gpu) == ("nic-cx7-400", 1.0)
    assert "nics_per_gpu 2->1 (h100-sxm host feeds 400 Gb/s per GPU)" in repairs


@st.composite
def genomes(draw):
    """A space for a random GPU over a random set of NICs (plus one NIC per switch fabric that the GPU's host runs,
    so that every switch has a NIC to repair to), and a random genome of it."""
    gpu = draw(st.sampled_from(["h100-sxm", "h200-sxm", "a100-sxm-80gb", "b200"]))
    nics = draw(st.sets(st.sampled_from(default_catalog().models("nics")), min_size=1)) | {"nic-cx6-200"}
    switches = ("ib-ndr-64x400", "ib-xdr-144x800", "ib-hdr-40x200")
    if gpu != "a100-sxm-80gb":                         # no Ethernet NIC of the catalog fits a 200G host
        nics = nics | {"nic-2x200-dual"}
        switches += ("eth-51t-64x800", "eth-25t-64x400")
    space = DesignSpace(Constraints(gpus=64, gpu_model=gpu, nic_models=tuple(sorted(nics)), switch_models=switches,
                                    nics_per_gpu=(0.5, 1.0, 2.0), planes=(1, 2)))
    x = np.array([draw(st.integers(0, int(u))) for u in space.upper], dtype=np.int64)
    return space, x


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(sx=genomes())
def test_sampled_genomes_never_decode_to_an_impossible_pair(sx):
    space, x = sx
    design, _ = space.decode(x)
    cat = space.catalog
    assert nic_host_problem(cat.gpu(design.gpu_model), cat.nic(design.nic_model), design.nics_per_gpu) is None
    assert design.nic_model not in space.excluded_nics
    assert (space.repair(space.repair(x)) == space.repair(x)).all()


def test_calibration_designs_respect_the_host_and_a_measured_system_overrides_it():
    """A one-node A100 calibration stands for a DGX A100 (200G NICs); a measured 2-node system that fed 400G per
    A100 GPU is taken as measured: its calibration catalog raises the limit to what was measured."""
    from fabric.calibrate.system import SystemSpec, system_design

    design, cat = system_design(SystemSpec(ranks=8, gpus_per_node=8, gpu_model="a100-sxm-80gb"))
    assert design.nic_model == "nic-cx6-200"
    build_fabric(design, cat)
    design, cat = system_design(SystemSpec(ranks=16, gpus_per_node=8, gpu_model="a100-sxm-80gb",
                                           network="infiniband", nic_gbps=3200.0, nics_per_node=8))
    assert cat.gpu("a100-sxm-80gb").max_nic_bps_per_gpu == 400e9
    assert build_fabric(design, cat).link_speed_bps == 400e9


def test_search_cli_says_which_nics_it_left_out(tmp_path, capsys):
    from fabric.workload.model import dump_workload_json

    w = tmp_path / "w.json"
    w.write_text(dump_workload_json(_workload()))
    base = {"gpus": 64, "families": ["clos"], "switch_models": ["ib-xdr-144x800", "ib-ndr-64x400"],
            "nics_per_gpu": [1.0], "oversubscriptions": [1.0], "planes": [1], "routings": ["ecmp"], "qps": [1],
            "transports": ["infiniband"], "placements": ["packed"]}
    c = tmp_path / "c.json"
    c.write_text(json.dumps({**base, "nic_models": ["nic-cx8-800"]}))
    assert main(["search", "-w", str(w), "-c", str(c), "--exhaustive", "--samples", "16",
                 "--out", str(tmp_path / "o1")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none of the allowed NIC models (nic-cx8-800) runs at full speed on h100-sxm" in err
    # 8 servers on 64- or 144-port switches: every design (and the fat-tree baselines' single leaf) holds all of
    # them on one switch, which no single-failure rule survives; this test is about the NICs left out
    c.write_text(json.dumps({**base, "nic_models": ["nic-cx8-800", "nic-cx7-400"], "survive_single_failure": False}))
    assert main(["search", "-w", str(w), "-c", str(c), "--exhaustive", "--samples", "16",
                 "--out", str(tmp_path / "o2")]) == 0
    assert "note: left out NIC(s) nic-cx8-800: NIC nic-cx8-800 (800G) cannot run at full speed" in \
        capsys.readouterr().err
