"""The audit from per-rank Kineto traces (issue 26 stage 1): measured step percentiles, communication wait,
stragglers, exposed communication and the N -> 4N scaling rule.

The real-trace tests compute the expected figures from the raw JSON events with plain loops (json.load, no fabric
code): step times from the ProfilerStep# events, NCCL kernel time per rank and step from the kernel events.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from contextlib import redirect_stdout

import pytest

from conftest import TRACES_DIR, trace_path
from fabric.audit import audit_files, audit_paths
from fabric.audit.stats import nearest_rank
from fabric.errors import FabricError
from fabric.workload.kineto_writer import NOMINAL_BUSBW_BYTES_PER_S, workload_to_kineto
from fabric.workload.model import CommOp, Job, ProcessGroup

DLRM = "kineto/param_dlrm_kineto"


def _load(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def _hand_rank(doc):
    """(rank, [step durations us], [NCCL kernel us per step]) by hand: a kernel belongs to the step whose CPU window
    holds the runtime call that launched it (matched by correlation id)."""
    evs = doc["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    launch = {}
    for e in evs:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "aunch" in e.get("name", ""):
            launch[e["args"]["correlation"]] = e["ts"]
    comm = [0.0] * len(steps)
    for e in evs:
        if e.get("cat") == "kernel" and "nccl" in e["name"].lower():
            t = launch[e["args"]["correlation"]]
            for i, (a, b) in enumerate(steps):
                if a <= t < b:
                    comm[i] += e["dur"]
    return doc["distributedInfo"]["rank"], [b - a for a, b in steps], comm


def _hand_percentile(xs, q):
    xs = sorted(xs)
    return xs[math.ceil(q / 100 * len(xs)) - 1]


def test_nearest_rank_percentiles_by_hand():
    xs = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert nearest_rank(xs, 50) == 3.0          # ceil(2.5) = 3rd smallest
    assert nearest_rank(xs, 95) == 5.0
    assert nearest_rank(list(range(1, 101)), 99) == 99
    assert nearest_rank(list(range(1, 201)), 99) == 198


def test_dlrm_8_ranks_step_percentiles_waits_and_straggler_by_hand(traces_dir):
    paths = sorted((traces_dir / DLRM).glob("worker*.json"))
    assert len(paths) == 8
    hand = sorted(_hand_rank(_load(p)) for p in paths)
    steps_us = [d for _, ds, _ in hand for d in ds]
    assert len(steps_us) == 8
    comm = {r: c[0] for r, _, c in hand}
    least = min(comm.values())
    wait = {r: c - least for r, c in comm.items()}
    slow = min(comm, key=comm.get)
    median_step = _hand_percentile(steps_us, 50)

    a = audit_paths(paths)
    assert len(a.sizes) == 1
    s = a.sizes[0]
    assert s.world_size == 8 and s.ranks_traced == tuple(range(8))
    for q in (50, 95, 99):
        assert s.step_s[f"p{q}"] == pytest.approx(_hand_percentile(steps_us, q) * 1e-6, rel=1e-12)
    assert s.step_s["p50"] == pytest.approx(14455e-6)       # rank 0's step (4th of 8 sorted)
    assert s.step_s["p99"] == pytest.approx(19901e-6)       # rank 1's step
    for r in s.per_rank:
        assert r.comm_s == pytest.approx(comm[r.rank] * 1e-6, rel=1e-9)
        assert r.wait_s == pytest.approx(wait[r.rank] * 1e-6, rel=1e-9, abs=1e-12)
    assert slow == 7
    assert max(wait.values()) >= 0.05 * median_step          # material by the rule
    assert [(g.rank, g.steps, g.of_steps) for g in s.stragglers] == [(7, 1, 1)]
    others = [w for r, w in wait.items() if r != 7]
    assert s.stragglers[0].mean_wait_caused_s == pytest.approx(sum(others) / 7 * 1e-6, rel=1e-9)
    assert "not applicable" in a.verdict and not a.flagged


def test_hta_sampled_ranks_two_steps_by_hand(traces_dir):
    paths = [trace_path(f"kineto/hta/trace_filter/sampled_rank-{i}.json.gz") for i in (0, 1)]
    hand = sorted(_hand_rank(_load(p)) for p in paths)
    steps_us = [d for _, ds, _ in hand for d in ds]
    assert len(steps_us) == 4
    s = audit_paths(paths).sizes[0]
    assert s.world_size == 128
    for q in (50, 95, 99):
        assert s.step_s[f"p{q}"] == pytest.approx(_hand_percentile(steps_us, q) * 1e-6, rel=1e-12)
    for i, st in enumerate(s.step_stragglers):
        comm = {r: c[i] for r, _, c in hand}
        step_lens = [ds[i] for _, ds, _ in hand]
        max_wait = max(comm.values()) - min(comm.values())
        assert st.max_wait_s == pytest.approx(max_wait * 1e-6, rel=1e-9)
        material = max_wait >= 0.05 * _hand_percentile(step_lens, 50)
        assert (st.rank is not None) == material
        if material:
            assert st.rank == min(comm, key=comm.get)
    assert any("2 of 128 ranks traced" in n for n in s.notes)


def test_one_rank_three_steps(traces_dir):
    p = trace_path("kineto/hta/nccl_parser_config/nccl_data.json.gz")
    _, steps_us, _ = _hand_rank(_load(p))
    s = audit_paths([p]).sizes[0]
    assert s.step_s["n"] == 3
    assert s.step_s["p50"] == pytest.approx(sorted(steps_us)[1] * 1e-6)
    assert s.stragglers == () and all(r.wait_s == 0 for r in s.per_rank)
    assert any("one rank traced" in n for n in s.notes)


# ------------------------------------------------------------------ synthetic traces from the Kineto writer

def _job(world, nbytes, compute_s=0.010, overlap=0.0):
    return Job("synthetic", world_size=world, groups=(ProcessGroup("dp", world, "dp"),),
               ops=(CommOp("all_reduce", nbytes, "dp", 2.0, overlap_fraction=overlap),), compute_time_s=compute_s,
               compute_cv=0.0)


def _files(job, ranks, steps=3, waits=None):
    out = []
    for r in ranks:
        doc = workload_to_kineto(job, r, steps=steps, wait_us=(waits or {}).get(r))
        out.append((f"w{job.world_size}/rank{r}.json", json.dumps(doc).encode()))
    return out


def _step_us(world, nbytes, compute_s=0.010):
    d = 8.0 + nbytes * 2 * (world - 1) / world / NOMINAL_BUSBW_BYTES_PER_S * 1e6   # the writer's kernel duration
    return compute_s * 1e6 + 2 * d


def test_injected_waits_name_the_late_rank_and_equal_the_wait():
    job = _job(4, 8 << 20)
    # ranks 0, 1, 3 wait 1.5 ms at the first all_reduce of every step: rank 2 is late
    waits = {r: {(s, 0): 1500.0 for s in range(3)} for r in (0, 1, 3)}
    s = audit_files(_files(job, range(4), waits=waits)).sizes[0]
    assert [(g.rank, g.steps, g.of_steps) for g in s.stragglers] == [(2, 3, 3)]
    for r in s.per_rank:
        assert r.wait_s == pytest.approx(0.0 if r.rank == 2 else 1.5e-3, abs=2e-9)
    assert s.stragglers[0].mean_wait_caused_s == pytest.approx(1.5e-3, abs=2e-9)
    # the late rank's step is its compute plus its transfers; the others' 1.5 ms longer
    assert s.step_s["p50"] == pytest.approx((_step_us(4, 8 << 20) + 1500) * 1e-6, rel=1e-6)


def test_small_waits_are_not_stragglers():
    job = _job(2, 1 << 20)
    waits = {0: {(0, 0): 100.0}}     # 0.1 ms of a ~10.5 ms step: below 5 %
    s = audit_files(_files(job, range(2), waits=waits)).sizes[0]
    assert s.stragglers == ()
    assert s.step_stragglers[0].max_wait_s == pytest.approx(1e-4, abs=2e-9)


def test_scaling_rule_flags_below_80_percent_with_transfer_evidence():
    small, big = _job(4, 16 << 20), _job(16, 64 << 20)     # 4x the bytes at 4x the GPUs: the exposed transfer grows
    a = audit_files(_files(small, range(4)) + _files(big, range(4)))
    t4, t16 = _step_us(4, 16 << 20), _step_us(16, 64 << 20)
    eff = t4 / t16
    assert eff < 0.75
    (p,) = a.scaling
    assert (p.n_from, p.n_to) == (4, 16)
    assert p.efficiency == pytest.approx(eff, rel=1e-6)
    assert a.flagged and "primary suspect" in a.verdict and "borderline" not in a.verdict
    assert p.growth_transfer_s == pytest.approx((t16 - t4) * 1e-6, rel=1e-6)
    assert p.growth_compute_s == pytest.approx(0.0, abs=1e-8)
    assert not any("look there before the network" in e for e in a.evidence)


def test_scaling_rule_not_flagged_when_efficient_and_not_applicable_below_4x():
    a = audit_files(_files(_job(4, 8 << 20), range(2)) + _files(_job(16, 8 << 20), range(2)))
    eff = _step_us(4, 8 << 20) / _step_us(16, 8 << 20)
    assert eff > 0.8
    assert a.scaling[0].efficiency == pytest.approx(eff, rel=1e-6)
    assert not a.flagged and "not flagged" in a.verdict
    b = audit_files(_files(_job(4, 8 << 20), range(2)) + _files(_job(8, 64 << 20), range(2)))
    assert b.scaling[0].efficiency < 0.8 and not b.scaling[0].rule_applies
    assert not b.flagged and "not applicable" in b.verdict


def test_strong_scaling_expects_a_shorter_step():
    a = audit_files(_files(_job(4, 8 << 20, compute_s=0.040), range(2))
                    + _files(_job(16, 8 << 20, compute_s=0.010), range(2)), scaling_mode="strong")
    eff = _step_us(4, 8 << 20, 0.040) * 4 / (_step_us(16, 8 << 20, 0.010) * 16)
    assert a.scaling[0].efficiency == pytest.approx(eff, rel=1e-6)


def test_same_rank_twice_and_bad_files_are_named():
    job = _job(2, 1 << 20)
    f = _files(job, [0])
    with pytest.raises(FabricError, match="rank 0 of the 2-rank job is given twice"):
        audit_files(f + [("other.json", f[0][1])])
    with pytest.raises(FabricError, match="bad.json"):
        audit_files([("bad.json", b"{not json")])
    with pytest.raises(FabricError, match="no trace file"):
        audit_files([])


def test_cli_audit_text_and_json(tmp_path, capsys):
    from fabric.cli.main import main

    paths = []
    for name, data in _files(_job(4, 8 << 20), range(4), waits={r: {(0, 0): 2000.0} for r in (1, 2, 3)}):
        p = tmp_path / name.replace("/", "_")
        p.write_bytes(data)
        paths.append(str(p))
    assert main(["audit", *paths]) == 0
    out = capsys.readouterr().out
    assert "straggler: rank 0 in 1 of 3 step(s)" in out
    assert "rule: network is the primary suspect when" in out
    assert main(["audit", *paths, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sizes"][0]["stragglers"][0]["rank"] == 0
    assert main(["audit", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
