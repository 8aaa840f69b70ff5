"""The ASTRA-sim export (issue 38 item 5): Chakra traces written by fabric read back to the same ops, sizes and
counts; the network dimensions from the design; what cannot be expressed is said; bad input is refused."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fabric.cabling.package import package_bytes
from fabric.design import Design
from fabric.errors import DesignError, FabricError, ParseError, WorkloadError
from fabric.reference.presets import preset_design
from fabric.validate import astra_sim
from fabric.validate.astra_sim import (CANNOT_EXPRESS, GIB, astra_network, astra_sim_binary, astra_sim_files,
                                       run_astra_sim, write_astra_sim)
from fabric.workload.chakra_writer import job_to_chakra, write_chakra
from fabric.workload.ingest import ingest, ingest_paths
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload
from fabric.workload.parsers.chakra import decode_et
from fabric.workload.presets import preset_workload

ROOT = Path(__file__).resolve().parents[1]


def _few(workload, n=3):
    """The workload with each op run at most ``n`` times a step (the kinds, sizes and groups kept): traces of a few
    hundred nodes a rank instead of tens of thousands."""
    from dataclasses import replace

    return workload.with_jobs([replace(j, ops=tuple(replace(o, count_per_step=min(o.count_per_step, n))
                                                    for o in j.ops)) for j in workload.jobs])


def _op_key(job):
    return sorted((o.kind, o.bytes, round(o.count_per_step, 9), job.group(o.group).size,
                   job.group(o.group).rank_stride) for o in job.ops)


@pytest.mark.parametrize("preset", ["llama3-70b", "mixtral-8x7b"])
def test_chakra_round_trip_gives_the_same_ops_sizes_and_counts(tmp_path, preset):
    job = _few(preset_workload(preset, 64)).training_jobs[0]
    export = job_to_chakra(job)
    paths = write_chakra(export, tmp_path, "w")
    assert len(paths) == 64 + 1
    res = ingest_paths(paths)
    assert res.ok, res.errors
    assert all(f.format == "chakra" for f in res.files)
    back = res.workload.jobs[0]
    assert back.world_size == 64
    # every op with its bytes, count per step, group size and stride
    assert _op_key(back) == _op_key(job)
    # the roles the parser infers from the groups match the plan's
    assert sorted((g.size, g.role) for g in back.groups) == sorted((g.size, g.role) for g in job.groups)
    assert back.compute_time_s == pytest.approx(job.compute_time_s, abs=1e-6)      # written in whole microseconds
    assert not any("assumed the world size" in n for n in back.notes)


def test_trace_follows_astra_sims_conventions():
    """An all-gather's comm_size is the per-rank input; nodes form one chain; a pipeline send goes to the next stage."""
    groups = (ProcessGroup("tp", 4, "tp", rank_start=0, rank_stride=1),
              ProcessGroup("pp", 2, "pp", rank_start=0, rank_stride=4))
    job = Job(name="t", world_size=8, groups=groups, compute_time_s=0.002,
              ops=(CommOp("all_gather", 4096, "tp", count_per_step=3), CommOp("send_recv", 1000, "pp")))
    ex = job_to_chakra(job)
    assert ex.comm_groups == {1: (0, 1, 2, 3), 2: (4, 5, 6, 7), 3: (0, 4), 4: (1, 5), 5: (2, 6), 6: (3, 7)}
    meta, nodes = decode_et(ex.traces[1])
    assert meta["version"] == "0.0.4"
    assert [n["type"] for n in nodes] == [4, 7, 7, 7, 5]           # compute, 3 all-gathers, a send (stage 0)
    assert nodes[0]["dur"] == 2000
    assert all(n["attr"]["comm_size"] == 1024 for n in nodes[1:4])  # 4096 B over 4 ranks
    assert {n["attr"]["pg_name"] for n in nodes[1:4]} == {"1"}
    send = nodes[4]["attr"]
    assert (send["comm_src"], send["comm_dst"], send["comm_size"], send["pg_name"]) == (1, 5, 1000, "4")
    _, last = decode_et(ex.traces[5])
    assert [n["type"] for n in last] == [4, 7, 7, 7, 6]            # the last stage receives from rank 1
    assert (last[4]["attr"]["comm_src"], last[4]["attr"]["comm_dst"]) == (1, 5)
    # one dependency chain: node i depends on node i-1 (data_deps, field 5, decoded by protobuf's wire rules)
    raw = ex.traces[1]
    assert raw.count(b"\x2a\x01") >= 4


def test_what_a_trace_cannot_hold_is_said():
    g = (ProcessGroup("world", 4, "dp", rank_start=0, rank_stride=1),)
    job = Job(name="j", world_size=4, groups=g, compute_time_s=0.0,
              ops=(CommOp("reduce", 64, "world"), CommOp("barrier", 0, "world"),
                   CommOp("all_reduce", 64, "world", count_per_step=1.5, overlap_fraction=0.5)))
    ex = job_to_chakra(job)
    text = " ".join(ex.notes)
    assert "reduce on 'world') left out" in text and "barrier" in text
    assert "1.5 times per step: written 2 times" in text
    assert "overlaps with compute" in text
    _, nodes = decode_et(ex.traces[0])
    assert [n["type"] for n in nodes] == [4, 7, 7]
    serving = Job(name="s", kind="inference", world_size=4, groups=g, ops=(CommOp("all_reduce", 64, "world"),))
    with pytest.raises(WorkloadError, match="inference job"):
        job_to_chakra(serving)


def test_network_dimensions_from_the_design():
    sp = preset_design("dgx-h100-superpod", 1024)
    net = astra_network(sp, 1024)
    assert net.topology == ("Switch", "Switch") and net.npus_count == (8, 128)
    # H100 NVLink 450 GB/s and a 400G NIC per GPU, at the transport's efficiencies (0.80 NVLink, 0.96 InfiniBand)
    assert net.bandwidth_gbps[0] == pytest.approx(450e9 * 0.80 / GIB)
    assert net.bandwidth_gbps[1] == pytest.approx(50e9 * 0.96 / GIB)
    two = astra_network(Design(gpus=1024, family="rail_optimized", oversubscription=(2.0, 1.0)), 1024)
    assert two.npus_count[0] == 8 and two.npus_count[1] * two.npus_count[2] == 128
    assert two.bandwidth_gbps[2] == pytest.approx(two.bandwidth_gbps[1] / 2)
    assert "leaf dimension is 32 servers" in two.notes[0]     # a leaf of 42 servers does not divide 128
    assert astra_network(sp, 256).npus_count == (8, 32)
    with pytest.raises(DesignError, match="does not fit"):
        astra_network(sp, 4096)
    with pytest.raises(DesignError, match="whole number of 8-GPU"):
        astra_network(sp, 12)


def test_export_files_and_readme(tmp_path):
    wl = _few(preset_workload("mixtral-8x7b", 64))
    d = write_astra_sim(Design(gpus=64), wl, tmp_path / "a")
    names = {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}
    assert {"network.yml", "system.json", "remote_memory.json", "run.sh", "README.txt",
            "workload/workload.comm_groups.json"} <= names
    assert sum(n.endswith(".et") for n in names) == 64
    sysj = json.loads((d / "system.json").read_text())
    assert sysj["all-to-all-implementation"] == ["direct", "direct"] and sysj["peak-perf"] == pytest.approx(989.4, abs=1)
    yml = (d / "network.yml").read_text()
    assert "npus_count: [ 8, 8 ]" in yml
    readme = (d / "README.txt").read_text()
    assert all(c in readme for c in CANNOT_EXPRESS)
    assert os.access(d / "run.sh", os.X_OK)


def test_too_large_a_job_is_refused_and_the_package_says_so(monkeypatch):
    wl = _few(preset_workload("mixtral-8x7b", 64))
    with pytest.raises(FabricError, match="trace nodes, more than the 1,000"):
        astra_sim_files(Design(gpus=64), wl, max_nodes=1000)
    monkeypatch.setattr(astra_sim, "MAX_TRACE_NODES", 1000)
    data, _ = package_bytes(Design(gpus=64), workload=wl)
    z = zipfile.ZipFile(io.BytesIO(data))
    assert "No ASTRA-sim export in this package" in z.read("astra-sim/NOT_INCLUDED.txt").decode()
    assert not any(n.endswith(".et") for n in z.namelist())


def test_package_with_a_workload_holds_the_simulator_files():
    wl = _few(preset_workload("mixtral-8x7b", 64))
    data, summary = package_bytes(Design(gpus=64), workload=wl)
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    assert sum(n.startswith("astra-sim/workload/workload.") and n.endswith(".et") for n in names) == 64
    readme = z.read("README.txt").decode()
    assert "astra-sim/workload/workload.<rank>.et (64 files, one per rank)" in readme
    # the traces inside the zip read back to the job's ops
    files = [(n.rsplit("/", 1)[1], z.read(n)) for n in names if n.startswith("astra-sim/workload/")]
    back = ingest(files)
    assert back.ok and _op_key(back.workload.jobs[0]) == _op_key(wl.training_jobs[0])


def test_bad_comm_groups_files_are_named():
    job = _few(preset_workload("mixtral-8x7b", 16)).training_jobs[0]
    ex = job_to_chakra(job)
    traces = [(f"w.{r}.et", t) for r, t in enumerate(ex.traces)]
    bad = ingest(traces + [("w.comm_groups.json", b'{"1": [0, 1], "x": [2]}')])
    assert not bad.ok and any("w.comm_groups.json" in e and "'x'" in e for e in bad.errors)
    alone = ingest([("other.comm_groups.json", ex.comm_groups_json().encode())])
    assert not alone.ok and "without its traces" in alone.errors[0]
    groups = json.loads(ex.comm_groups_json())
    groups["1"] = [5, 6]                                   # rank 0 runs ops on group 1, which no longer lists it
    wrong = ingest(traces + [("w.comm_groups.json", json.dumps(groups).encode())])
    assert not wrong.ok and any("does not list it" in e for e in wrong.errors)


def test_cli_writes_the_simulator_input_alone(tmp_path):
    out = tmp_path / "astra"
    cmd = [sys.executable, "-m", "fabric.cli.main", "export", "--preset", "dgx-h100-superpod", "--gpus", "1024",
           "-w", str(ROOT / "sample_traces" / "mixtral-8x7b.json"), "--astra-sim", str(out), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    files = json.loads(r.stdout)["files"]
    assert sum(f.endswith(".et") for f in files) == 256 and "network.yml" in files
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 2 and "new or empty folder" in again.stderr
    no_w = subprocess.run(cmd[:8] + ["--astra-sim", str(tmp_path / "b")], capture_output=True, text=True)
    assert no_w.returncode == 2 and "needs the workload" in no_w.stderr


@pytest.mark.skipif(astra_sim_binary() is None, reason="FABRIC_ASTRA_SIM does not name an ASTRA-sim binary")
def test_astra_sim_runs_the_export(tmp_path):
    """A 64 MiB all-reduce over 16 GPUs (2 servers): every rank finishes, no faster than the NIC's bound."""
    g = (ProcessGroup("world", 16, "dp", rank_start=0, rank_stride=1),)
    wl = Workload(jobs=(Job(name="ar", world_size=16, groups=g, ops=(CommOp("all_reduce", 64 * 2**20, "world"),)),))
    d = write_astra_sim(Design(gpus=16), wl, tmp_path / "a")
    r = run_astra_sim(d, astra_sim_binary(), timeout_s=600)
    assert r["ranks"] == 16
    # across 2 servers each GPU's NIC must carry at least S/8 x 2(2-1)/2 of the data at 48 GB/s
    assert r["step_s"] >= (64 * 2**20 / 8) / (50e9 * 0.96)


@pytest.mark.skipif(astra_sim_binary() is None, reason="FABRIC_ASTRA_SIM does not name an ASTRA-sim binary")
def test_astra_sim_runs_pipeline_sends_without_deadlock(tmp_path):
    """Two pipeline stages of 8 GPUs: three 16 MiB activations from stage 0 to stage 1 after 1 ms of compute; every
    rank finishes, no sooner than the compute plus the three transfers at the NIC's 48 GB/s."""
    g = (ProcessGroup("tp", 8, "tp", rank_start=0, rank_stride=1), ProcessGroup("pp", 2, "pp", rank_start=0,
                                                                                 rank_stride=8))
    job = Job(name="pp", world_size=16, groups=g, compute_time_s=0.001,
              ops=(CommOp("all_reduce", 2**20, "tp", count_per_step=2), CommOp("send_recv", 2**24, "pp",
                                                                              count_per_step=3)))
    d = write_astra_sim(Design(gpus=16), Workload(jobs=(job,)), tmp_path / "a")
    r = run_astra_sim(d, astra_sim_binary(), timeout_s=600)
    assert r["ranks"] == 16
    assert r["step_s"] >= 0.001 + 3 * 2**24 / (50e9 * 0.96)
