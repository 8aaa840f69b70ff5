"""Scaling a traced job to the cluster being designed: the grown layout follows Megatron-LM's rank order, every
rank keeps its work and message sizes, and what cannot be grown is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fabric.cli.main import main
from fabric.reference.presets import preset_design
from fabric.errors import WorkloadError
from fabric.evaluate import evaluate
from fabric.evaluate.placement import group_instances
from fabric.workload.ingest import ingest_paths
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload
from fabric.workload.presets import preset_workload
from fabric.workload.scale import scale_to

from conftest import trace_path

ROOT = Path(__file__).resolve().parent.parent


def _layout(job) -> dict:
    return {g.name: (g.size, g.rank_stride) for g in job.groups}


def test_growing_dp_follows_megatron_order():
    # Megatron-LM: rank = tp_rank + tp x (dp_rank + dp x pp_rank); TP 8 x DP 4 x PP 4 = 128 -> DP 16 = 512 GPUs:
    # TP groups stride 1, DP groups stride 8 (16 of them), PP groups stride tp x dp = 128
    small = preset_workload("llama3-70b", 128, grad_accum=8)
    big = scale_to(small, 512)
    job = big.jobs[0]
    assert job.world_size == 512
    assert _layout(job) == {"tp": (8, 1), "dp": (16, 8), "pp": (4, 128)}
    direct = preset_workload("llama3-70b", 512, grad_accum=8).jobs[0]
    for g, h in zip(job.groups, direct.groups):
        assert np.array_equal(group_instances(g, 512), group_instances(h, 512))
    # every rank keeps its work: the same ops, sizes, counts and compute as the 128-GPU trace
    assert [(o.kind, o.bytes, o.count_per_step) for o in job.ops] == \
        [(o.kind, o.bytes, o.count_per_step) for o in small.jobs[0].ops]
    assert job.compute_time_s == small.jobs[0].compute_time_s


def test_growing_dp_of_an_moe_job_keeps_expert_groups():
    # Mixtral-like TP 2, EP 8 out of DP: EP groups (stride 2, 8 ranks) stay, expert-DP groups grow with DP
    small = preset_workload("mixtral-8x7b", 64)
    big = scale_to(small, 256).jobs[0]
    assert _layout(big) == {"tp": (2, 1), "dp": (128, 2), "ep": (8, 2), "edp": (16, 16)}
    direct = preset_workload("mixtral-8x7b", 256).jobs[0]
    for g, h in zip(big.groups, direct.groups):
        assert np.array_equal(group_instances(g, 256), group_instances(h, 256))


def test_cli_scales_a_trace_and_keeps_per_rank_bytes(capsys):
    files = sorted(str(p) for p in (ROOT / "sample_traces" / "kineto").glob("llama3-70b.rank*.pt.trace.json.gz"))
    assert main(["parse", *files, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)["jobs"][0]
    assert main(["parse", *files, "--scale-to", "1024", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)["jobs"][0]
    assert before["world_size"] == 256 and after["world_size"] == 1024
    assert [(o["kind"], o["bytes"], o["count_per_step"]) for o in after["ops"]] == \
        [(o["kind"], o["bytes"], o["count_per_step"]) for o in before["ops"]]
    assert {g["name"]: g["size"] for g in after["groups"]} == {"tp": 8, "dp": 32, "pp": 4}
    assert main(["parse", *files, "--scale-to", "1000"]) == 2
    assert "use 768 or 1,024" in capsys.readouterr().err
    assert main(["parse", *files, "--grow", "pp"]) == 2
    assert "only apply with --scale-to" in capsys.readouterr().err


def test_a_real_8_rank_trace_scales_to_1024_gpus_and_evaluates():
    files = sorted(trace_path("kineto/param_dlrm_kineto").glob("worker*.pt.trace.json"))
    wl = ingest_paths([str(f) for f in files]).workload
    job = max(wl.jobs, key=lambda j: j.world_size)
    big = scale_to(wl, 1024)
    grown = next(j for j in big.jobs if j.name == job.name)
    assert grown.world_size == 1024
    assert [(o.kind, o.bytes, o.per_rank_bytes) for o in grown.ops] == \
        [(o.kind, o.bytes, o.per_rank_bytes) for o in job.ops]
    ev = evaluate(preset_design("fat-tree", 1024), big, samples=32)
    assert ev.step_time_s["p99"] >= ev.lower_bound_s > 0


def test_what_cannot_be_grown_is_named():
    def job(groups, world=8):
        return Workload(jobs=(Job(name="j", world_size=world, groups=groups,
                                  ops=(CommOp("all_reduce", 1024, groups[0].name),), compute_time_s=0.1),))

    with pytest.raises(WorkloadError, match="not a whole multiple of the traced 8 ranks of job 'j'; use 8 or 16$"):
        scale_to(job((ProcessGroup("w", 8, "world"),)), 12)
    # below the traced size the way out is the traced size or a multiple (not "8 or 8")
    with pytest.raises(WorkloadError, match=r"traced 8 ranks of job 'j'; use 8 \(the traced size\) or a multiple"):
        scale_to(job((ProcessGroup("w", 8, "world"),)), 6)
    with pytest.raises(WorkloadError, match="no 'pp' group to grow"):
        scale_to(job((ProcessGroup("w", 8, "world"),)), 16, grow="pp")
    with pytest.raises(WorkloadError, match="not evenly spaced"):
        scale_to(job((ProcessGroup("w", 8, "world"), ProcessGroup("odd", 3, "dp", ranks=(0, 1, 5)))), 16)
    # a group straddling the grown dimension: DP of 2 ranks at stride 2 (ranks 0, 2) against a contiguous group of
    # 4 ranks (0-3) that reaches into DP without covering it
    with pytest.raises(WorkloadError, match="straddles"):
        scale_to(job((ProcessGroup("dp", 2, "dp", rank_start=0, rank_stride=2),
                      ProcessGroup("x", 4, "tp", rank_start=0, rank_stride=1))), 16)
    # growing by 1 changes nothing
    w = job((ProcessGroup("w", 8, "world"),))
    assert scale_to(w, 8) is w
