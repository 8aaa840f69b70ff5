"""Measured vs predicted on the installed design (issue 26 stage 2)."""

from __future__ import annotations

import json
import math

import pytest

from fabric.audit import audit_files
from fabric.audit.causes import collective_cause, tail_cause
from fabric.reference.presets import preset_design
from fabric.errors import FabricError
from fabric.workload.kineto_writer import NOMINAL_BUSBW_BYTES_PER_S, workload_to_kineto
from fabric.workload.model import CommOp, Job, ProcessGroup

AR, A2A = 64 << 20, 256 << 10


def _job(world=16):
    return Job("j", world_size=world, groups=(ProcessGroup("dp", world, "dp"),),
               ops=(CommOp("all_reduce", AR, "dp", 2.0), CommOp("all_to_all", A2A, "dp", 1.0)),
               compute_time_s=0.02, compute_cv=0.0)


def _files(job, ranks, waits=None):
    return [(f"rank{r}.json", json.dumps(workload_to_kineto(job, r, steps=3, wait_us=(waits or {}).get(r))).encode())
            for r in ranks]


def _writer_us(nbytes, factor):
    return 8.0 + nbytes * factor / NOMINAL_BUSBW_BYTES_PER_S * 1e6


def test_measured_per_collective_is_the_transfer_not_the_wait_and_rows_are_sorted():
    p = 16
    waits = {r: {(s, 0): 3000.0 for s in range(3)} for r in (1, 2, 3)}      # rank 0 is late at the first all_reduce
    design = preset_design("fat-tree", 16)
    a = audit_files(_files(_job(p), range(4), waits), design=design, samples=32)
    (c,) = a.comparisons
    rows = {r.what: r for r in c.rows}
    ar = rows["all_reduce 67.1 MB"]
    a2a = rows["all_to_all 262 kB"]
    # two all_reduce calls per step at the writer's 40 GB/s bus bandwidth; waiting is not transfer
    assert ar.measured_s == pytest.approx(2 * _writer_us(AR, 2 * (p - 1) / p) * 1e-6, rel=1e-6)
    assert a2a.measured_s == pytest.approx(_writer_us(A2A, (p - 1) / p) * 1e-6, rel=1e-6)
    assert ar.ratio == pytest.approx(ar.measured_s / ar.predicted_s)
    assert rows["step p50"].measured_s == pytest.approx(a.sizes[0].step_s["p50"])
    keys = [abs(math.log(r.ratio)) for r in c.rows]
    assert keys == sorted(keys, reverse=True)
    assert c.predicted_step_s["p99"] >= c.predicted_step_s["p50"] > 0
    assert any("from 12 (rank, step) sample(s)" in n for n in c.notes)


def test_predicted_is_count_times_p50_of_the_evaluated_ops():
    from fabric.evaluate import evaluate
    from fabric.workload.ingest import ingest

    design = preset_design("fat-tree", 16)
    files = _files(_job(16), range(2))
    a = audit_files(files, design=design, samples=32)
    ev = evaluate(design, ingest(files).workload, None, seed=0, samples=32)
    want = sum(o.count_per_step * o.time_p50_s for o in ev.ops if o.kind == "all_reduce")
    row = next(r for r in a.comparisons[0].rows if r.kind == "all_reduce")
    assert row.predicted_s == pytest.approx(want, rel=1e-9)


def test_causes_by_direction_kind_and_size():
    assert collective_cause("all_to_all", 1 << 24, 2.0).startswith("congestion control")
    assert collective_cause("all_reduce", 1 << 24, 2.0).startswith("placement")
    assert collective_cause("all_reduce", 1024, 2.0).startswith("latency-bound")
    assert collective_cause("all_reduce", 1 << 24, 0.5).startswith("the model is pessimistic")
    assert collective_cause("all_reduce", 1 << 24, 1.1) == "agrees"
    assert "rank 3" in tail_cause(1.5, 1.05, 3)
    assert tail_cause(1.0, 1.3, None).startswith("the modelled compute jitter")


def test_design_too_small_is_a_clear_error():
    with pytest.raises(FabricError, match="has 8 GPUs: no traced job size fits"):
        audit_files(_files(_job(16), range(2)), design=preset_design("fat-tree", 8), samples=32)


def test_cli_with_design(tmp_path, capsys):
    from fabric.cli.main import main

    paths = []
    for name, data in _files(_job(16), range(2)):
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    assert main(["audit", *paths, "--design", "fat-tree", "--gpus", "16", "--samples", "32"]) == 0
    out = capsys.readouterr().out
    assert "measured vs predicted on" in out and "all_reduce 67.1 MB" in out and "step tail p99/p50" in out
    assert main(["audit", *paths, "--design", "fat-tree", "--gpus", "16", "--samples", "32", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["comparisons"][0]["rows"][0]["cause"]
