"""Calibration (issue 7): synthetic recovery of known parameters, the real nccl-tests files against the targets,
refusals, profile round trips through JSON and evaluate, and the CLI's exit codes and messages."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabric.calibrate import (CalibrationError, SystemSpec, cross_validate, evaluate_points, fit_profile,
                              gpu_model_for, load_measurements, load_profile, save_profile, system_design)
from fabric.calibrate.data import Point
from fabric.calibrate.fit import TARGET_IN_SAMPLE, TARGET_OUT_OF_SAMPLE
from fabric.calibrate.model import CATCH_ALL_BYTES, build_basis, probe_workload
from fabric.cli.main import main
from fabric.evaluate import evaluate
from fabric.workload.model import Measurement
from tests.conftest import trace_path

SUPERBENCH = "nccl_tests/superbench/"
EFA_LOG = "nccl_debug/aws_efa_eks_p4d_16rank/README.md.nccl-tests-efa-16.log"
NODE = SystemSpec(ranks=8, gpus_per_node=8, gpu_model="a100-sxm-80gb")
EFA = SystemSpec(ranks=16, gpus_per_node=8, gpu_model="a100-sxm-80gb", network="efa", nic_gbps=400.0,
                 nics_per_node=4)
SIZES = [2 ** k for k in range(3, 34)]


def _synthetic(system, overrides, kinds, *, noise=0.0, seed=1, sizes=SIZES):
    """Measurements the evaluator itself predicts under ``overrides`` (times x lognormal noise)."""
    pts = [Point(k, s, system.ranks, 1.0) for k in kinds for s in sizes]
    design, cat = system_design(system)
    t = evaluate_points(design, cat, pts, overrides)
    t = t * np.exp(np.random.default_rng(seed).normal(0.0, noise, t.size))
    return [Measurement("synthetic", p.kind, p.bytes, float(x), p.ranks) for p, x in zip(pts, t)]


def _param(res, name, regime=None):
    rows = [p for p in res.parameters if p["name"] == name and (regime is None or p["regime"] == regime)]
    assert len(rows) == 1, (name, regime, res.parameters)
    return rows[0]


def _regime(res, label):
    return next(r for r in res.regimes if r["regime"] == label)


# ---------------------------------------------------------------- the decomposition and synthetic recovery


def test_basis_reproduces_the_evaluator_exactly():
    pts = [Point(k, s, 16, 1.0) for k in ("all_reduce", "all_gather", "broadcast") for s in SIZES[::3]]
    design, cat = system_design(EFA)
    basis = build_basis(design, cat, pts)
    for ov in ({}, {"bandwidth_efficiency": 0.5, "step_alpha_s": 2e-5, "nvlink_efficiency": 0.6,
                    "regimes": [[65536, 0.3, 2.0], [2 ** 24, 0.7, 1.5], [CATCH_ALL_BYTES, 1.0, 3.0]]}):
        assert np.allclose(basis.times(ov), evaluate_points(design, cat, pts, ov), rtol=1e-9)


def test_fit_recovers_known_nvlink_parameters():
    truth = {"nvlink_efficiency": 0.7, "nvlink_alpha_s": 3e-6,
             "regimes": [[65536, 1.0, 1.0], [2 ** 20, 0.4, 1.5], [2 ** 24, 0.8, 2.0], [CATCH_ALL_BYTES, 1.0, 1.5]]}
    ms = _synthetic(NODE, truth, ("all_reduce", "all_gather"), noise=0.01)
    res = fit_profile(ms, NODE)
    assert _param(res, "nvlink_efficiency")["value"] == pytest.approx(0.7, rel=0.03)
    assert _param(res, "nvlink_alpha_s")["value"] == pytest.approx(3e-6, rel=0.05)
    for label, es, al in (("64 KiB - 1 MiB", 0.4, 1.5), ("1 MiB - 16 MiB", 0.8, 2.0), ("> 16 MiB", 1.0, 1.5)):
        r = _regime(res, label)
        assert r["efficiency_scale"] == pytest.approx(es, rel=0.1), label
        assert r["alpha_scale"] == pytest.approx(al, rel=0.15), label
    assert res.in_sample["geomean_error"] < 0.02          # the noise level
    # the efficiency of tiny messages does not show in their times: flagged, not claimed
    assert not _param(res, "efficiency_scale", "<= 64 KiB")["identified"]
    assert _param(res, "nvlink_efficiency")["identified"]


def test_fit_recovers_known_network_parameters():
    # alpha high enough that small messages sit above the 66 us floor of 16 ranks (at the floor nothing is learnt);
    # two collectives with different step counts, so per-step alpha and per-call overhead are both identifiable
    truth = {"bandwidth_efficiency": 0.6, "step_alpha_s": 4e-5,
             "regimes": [[65536, 0.2, 1.0, 1e-5], [2 ** 20, 0.3, 2.0, 1e-5], [2 ** 24, 0.7, 1.2, 1e-5]]}
    ms = _synthetic(EFA, truth, ("all_reduce", "all_gather"))
    res = fit_profile(ms, EFA)
    assert res.level == "network"
    assert _param(res, "bandwidth_efficiency")["value"] == pytest.approx(0.6, rel=0.01)
    assert _param(res, "step_alpha_s")["value"] == pytest.approx(4e-5, rel=0.02)
    assert _regime(res, "1 MiB - 16 MiB")["efficiency_scale"] == pytest.approx(0.7, rel=0.05)
    assert res.in_sample["geomean_error"] < 1e-3
    assert "nvlink_efficiency" not in res.overrides         # one-node parameters are not touched


# ---------------------------------------------------------------- real measurements against the targets


def test_superbench_all_reduce_meets_in_sample_target():
    ms = load_measurements([trace_path(SUPERBENCH + "nccl_allreduce.log")])
    assert ms.system.nodes == 1 and ms.system.gpu_model == "a100-sxm-80gb"
    res = fit_profile(ms)
    assert res.in_sample["geomean_error_ge_1mb"] <= TARGET_IN_SAMPLE
    assert res.targets()["in_sample"]["met"]
    # A100 NVLink3: ~235 GB/s busbw of 300 GB/s per direction
    assert 0.72 < res.overrides["nvlink_efficiency"] < 0.84
    big = [p for p in res.points if p.bytes == 2 ** 33][0]
    assert big.predicted_busbw == pytest.approx(big.measured_busbw, rel=0.03)


@pytest.mark.parametrize("fname", ["nccl_allgather.log", "nccl_alltoall.log", "nccl_broadcast.log",
                                   "nccl_reduce.log", "nccl_reducescatter.log"])
def test_every_superbench_file_meets_in_sample_target(fname):
    res = fit_profile(load_measurements([trace_path(SUPERBENCH + fname)]))
    assert res.in_sample["geomean_error_ge_1mb"] <= TARGET_IN_SAMPLE


def test_efa_two_node_all_reduce_meets_in_sample_target():
    ms = load_measurements([trace_path(EFA_LOG)])
    s = ms.system
    assert (s.nodes, s.gpus_per_node, s.network, s.nic_gbps, s.nics_per_node) == (2, 8, "efa", 400.0, 4)
    res = fit_profile(ms)
    assert res.level == "network" and res.in_sample["geomean_error_ge_1mb"] <= TARGET_IN_SAMPLE
    # A100s have no NVLS, so the evaluator runs NCCL's flat ring (2(p-1)/p S through each node): the fitted
    # efficiency is then the NICs' own, close to the measured 43.8 of 50 GB/s busbw per node (0.876)
    assert 0.75 < res.overrides["bandwidth_efficiency"] < 0.95


#: 2 x AWS p5.48xlarge (16 H100, 32 x 100 Gb/s EFA per node), nccl-tests all_reduce_perf: size (B), out-of-place
#: and in-place time (us), transcribed from the published run in aws-ia/terraform-aws-eks-blueprints,
#: patterns/nvidia-gpu-efa/README.md ("EFA NCCL test"; facts.md section 7). No multi-node H100 log is in
#: ../shared/traces (its only multi-node log is the 2 x p4d A100 one), so this public table is the H100 check.
P5_ALL_REDUCE_US = [
    (8, 87.96, 78.05), (16, 76.83, 77.15), (32, 77.37, 75.38), (64, 77.60, 79.80), (128, 77.20, 77.78),
    (256, 78.46, 80.39), (512, 77.56, 78.00), (1024, 76.98, 78.52), (2048, 77.92, 78.64), (4096, 83.26, 83.16),
    (8192, 88.46, 86.32), (16384, 97.22, 94.82), (32768, 98.84, 99.85), (65536, 101.1, 96.80),
    (131072, 100.5, 99.13), (262144, 104.5, 102.2), (524288, 108.8, 109.8), (1048576, 119.1, 121.5),
    (2097152, 145.8, 144.7), (4194304, 163.2, 162.4), (8388608, 197.9, 197.9), (16777216, 282.3, 290.3),
    (33554432, 442.8, 417.4), (67108864, 597.4, 591.6), (134217728, 872.0, 872.8), (268435456, 1501.2, 1503.1),
    (536870912, 2599.4, 2553.0), (1073741824, 4556.5, 5274.0), (2147483648, 9079.2, 9128.1),
    (4294967296, 17320, 17270), (8589934592, 33611, 34474), (17179869184, 66988, 66717)]
P5 = SystemSpec(ranks=16, gpus_per_node=8, gpu_model="h100-sxm", network="efa", nic_gbps=3200.0, nics_per_node=32)


def test_two_node_h100_all_reduce_fits_every_large_point():
    """Issue 14: calibrating on a multi-node H100 all-reduce, every point >= 256 MiB within 10 %. busbw climbs to
    481 GB/s, above the flat ring's 8 x 50 GB/s: with the flat ring (or the NVLink ring inside the node, 385 GB/s
    at most) the fit missed the largest sizes by up to 25 %; NCCL's NVLS tree reaches them."""
    ms = [Measurement("p5", "all_reduce", b, t * 1e-6, 16, in_place=ip)
          for b, o, i in P5_ALL_REDUCE_US for t, ip in ((o, False), (i, True))]
    res = fit_profile(ms, P5)
    big = [p for p in res.points if p.bytes >= 256 * 2 ** 20]
    assert len(big) == 7
    assert max(abs(p.error) for p in big) <= 0.10
    assert res.in_sample["geomean_error_ge_1mb"] <= TARGET_IN_SAMPLE
    design, cat = system_design(P5)
    ev = evaluate(design, probe_workload([Point("all_reduce", 1 << 30, 16, 1.0)]), catalog=cat, samples=16)
    assert ev.ops[0].algorithm == "nvls_tree"            # the calibration design runs NCCL's choice


def test_efa_two_node_a100_log_fits_every_large_point():
    """The closest real multi-node log in ../shared/traces: 2 x p4d (A100, 4 x 100 Gb/s EFA per node, NCCL 2.9.9).
    A100s have no NVLS and NCCL's model keeps the ring at every size on 2 nodes (its log shows the rings):
    every point >= 256 MiB within 10 %."""
    ms = load_measurements([trace_path(EFA_LOG)])
    res = fit_profile(ms)
    big = [p for p in res.points if p.bytes >= 256 * 2 ** 20]
    assert len(big) == 5 and max(abs(p.error) for p in big) <= 0.10
    design, cat = system_design(ms.system)
    ev = evaluate(design, probe_workload([Point("all_reduce", b, 16, 1.0) for b in (8, 1 << 20, 1 << 32)]),
                  catalog=cat, samples=16)
    assert [o.algorithm for o in ev.ops] == ["ring"] * 3


def _superbench():
    return load_measurements(sorted(trace_path(SUPERBENCH + f) for f in (
        "nccl_allgather.log", "nccl_allreduce.log", "nccl_alltoall.log", "nccl_broadcast.log", "nccl_reduce.log",
        "nccl_reducescatter.log")))


def test_superbench_out_of_sample_meets_the_target():
    """Issue 7: calibrated on one collective, every other collective of the same system within 20 % (>= 1 MB).
    It holds because latency is fitted as a per-call overhead (NCCL's small-message cost is per call: a 2(p-1)-step
    all-reduce and a (p-1)-step all-gather pay about the same)."""
    cv = cross_validate(_superbench())
    summary = cv.summary()
    assert all(v["met"] for v in summary.values())
    worst = max(r["geomean_error_ge_1mb"] for r in cv.out_of_sample())
    assert worst <= TARGET_OUT_OF_SAMPLE
    for r in cv.rows:
        if r["in_sample"]:
            assert r["geomean_error_ge_1mb"] <= TARGET_IN_SAMPLE
    # holding one collective out of a fit on the other five meets the out-of-sample target
    res = fit_profile(_superbench(), kinds=("all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"))
    assert res.out_of_sample["geomean_error_ge_1mb"] <= TARGET_OUT_OF_SAMPLE


# ---------------------------------------------------------------- refusals and mapping


def test_too_few_points_in_a_regime_is_refused():
    truth = {"nvlink_efficiency": 0.7}
    ms = _synthetic(NODE, truth, ("all_reduce",), sizes=[2 ** 10, 2 ** 12, 2 ** 14, 2 ** 17, 2 ** 19])
    with pytest.raises(CalibrationError, match=r"regime '64 KiB - 1 MiB': 2 measured size\(s\) \(131,072, 524,288"):
        fit_profile(ms, NODE)
    res = fit_profile(ms, NODE, regimes=())                  # one regime: 5 sizes are enough
    # one regime: no size-dependent scales, only the per-call overhead (alpha stays put: one collective)
    assert [r[1:3] for r in res.overrides.get("regimes")] == [[1.0, 1.0]]
    with pytest.raises(CalibrationError, match="regime 'all sizes': 2 measured size"):
        fit_profile(ms[:2], NODE, regimes=())


def test_ranks_must_match_the_system_and_kinds_must_exist():
    ms = _synthetic(NODE, {}, ("all_reduce",))
    with pytest.raises(CalibrationError, match="do not match the system's 16"):
        fit_profile(ms, EFA)
    with pytest.raises(CalibrationError, match="no measurements of all_gather"):
        fit_profile(ms, NODE, kinds=("all_gather",))
    with pytest.raises(CalibrationError, match="at least two collectives"):
        cross_validate(ms, NODE)


def test_gpu_names_map_to_catalog_rows():
    assert gpu_model_for("A100-SXM4-40GB") == "a100-sxm-80gb"
    assert gpu_model_for("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert gpu_model_for("NVIDIA H100 PCIe") is None
    assert gpu_model_for("NVIDIA A800-SXM4-80GB") is None
    assert gpu_model_for("Tesla V100-SXM2-32GB") is None


# ---------------------------------------------------------------- profiles


def test_profile_round_trip_and_evaluate_direction(tmp_path):
    ms = load_measurements([trace_path(SUPERBENCH + "nccl_allreduce.log")])
    res = fit_profile(ms)
    path = save_profile(res, tmp_path / "a100.json")
    data = json.loads(path.read_text())
    assert data["schema"] == "fabric.calibration/1" and data["overrides"] == json.loads(json.dumps(res.overrides))
    assert data["system"]["gpu_model"] == "a100-sxm-80gb" and data["sources"]
    prof = load_profile(path)
    assert prof.overrides == data["overrides"]
    design, cat = system_design(ms.system)
    for size in (2 ** 12, 2 ** 30):
        wl = probe_workload([Point("all_reduce", size, 8, 1.0)])
        base = evaluate(design, wl, samples=16, catalog=cat).ops[0].time_p50_s
        cal = evaluate(design, wl, samples=16, catalog=cat, transport_overrides=prof.overrides).ops[0].time_p50_s
        # measured A100 runs are slower than the uncalibrated profile: latency 35 us, not 15; 78 % not 80 %
        assert cal > base
        measured = [p for p in res.points if p.bytes == size][0]
        assert cal == pytest.approx(measured.predicted_s, rel=1e-9)
        assert cal == pytest.approx(measured.measured_s, rel=0.05)


def test_bad_profiles_are_refused(tmp_path):
    p = tmp_path / "p.json"
    p.write_text("{not json")
    with pytest.raises(CalibrationError, match="not valid JSON"):
        load_profile(p)
    p.write_text(json.dumps({"overrides": {"nvlink_speed": 1}}))
    with pytest.raises(CalibrationError, match="unknown transport parameter"):
        load_profile(p)
    p.write_text(json.dumps({"overrides": {"regimes": [[2 ** 20, 0.5, 1], [2 ** 10, 0.5, 1]]}}))
    with pytest.raises(CalibrationError, match="ascending"):
        load_profile(p)
    p.write_text(json.dumps({"overrides": {"nvlink_efficiency": 0.5}}))   # hand-written: overrides alone
    assert load_profile(p).overrides == {"nvlink_efficiency": 0.5}
    with pytest.raises(CalibrationError, match="no such calibration profile"):
        load_profile(tmp_path / "missing.json")


# ---------------------------------------------------------------- CLI


def _nccl_log(kind: str, times_us: dict, *, gpu="NVIDIA A100-SXM4-80GB", ranks=8) -> str:
    """A small nccl-tests (new layout) output with the given size -> time rows."""
    factor = {"all_reduce": 2 * (ranks - 1) / ranks, "all_gather": (ranks - 1) / ranks}[kind]
    lines = [f"# nThread 1 nGpus {ranks} minBytes 8 maxBytes 1 step: 2(factor) warmup iters: 5 iters: 20 "
             "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Group  0 Pid  101 on     node1 device {r:2d} [0x18] {gpu}" for r in range(ranks)]
    lines += ["#", f"# Collective test starting: {kind}_perf",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
              "algbw   busbw #wrong"]
    for size, t in sorted(times_us.items()):
        count = size // 4 if kind == "all_reduce" else size // (4 * ranks)
        algbw = size / t / 1e3
        cells = f"{t:8.2f} {algbw:7.2f} {algbw * factor:7.2f}      0"
        lines.append(f"{size:12d} {count:13d}     float     sum      -1 {cells} {cells}")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", ""]
    return "\n".join(lines)


def _times(kind, sizes=SIZES[:28]):
    f = 2 if kind == "all_reduce" else 1
    return {s: 30.0 + f * s * 7 / 8 / 230e3 for s in sizes}


def test_cli_fits_saves_and_plots(tmp_path, capsys):
    log = tmp_path / "ar.log"
    log.write_text(_nccl_log("all_reduce", _times("all_reduce")))
    log2 = tmp_path / "ag.log"
    log2.write_text(_nccl_log("all_gather", _times("all_gather")))
    out, plot = tmp_path / "p.json", tmp_path / "p.html"
    assert main(["calibrate", str(log), str(log2), "--holdout", "allgather", "--out", str(out), "--plot",
                 str(plot)]) == 0
    text = capsys.readouterr().out
    assert "nvlink_efficiency" in text and "held out" in text and "target <= 10%" in text
    assert load_profile(out).overrides["nvlink_efficiency"] > 0
    html = plot.read_text()
    assert "plotly" in html and 'src="https://cdn.plot.ly' not in html and len(html) > 1_000_000
    assert main(["calibrate", str(log), str(log2), "--json", "--cross-validate"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["system"]["gpu_model"] == "a100-sxm-80gb" and d["in_sample"]["points"] == 56
    assert {r["train"] for r in d["cross_validation"]["rows"]} == {"all_reduce", "all_gather"}


def _fails(args, capsys, match):
    assert main(["calibrate", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fabric calibrate: error: ") and match in err and err.count("\n") == 1, err


def test_cli_bad_files_exit_2_with_one_line(tmp_path, capsys):
    csv = tmp_path / "aicb.csv"
    csv.write_text("comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,algbw,busbw,"
                   "count\nCommType.all_reduce,CommGroup.dp_group,8,1048576,init,None,None,None,None,None,None,1\n"
                   "CommType.epoch_end,CommGroup.all,8,0,train,None,None,None,None,None,None,1\n"
                   "CommType.all_reduce,CommGroup.dp_group,8,1048576,train,None,None,None,None,None,None,1\n")
    _fails([str(csv)], capsys, f"no measured times in {csv} (timing columns are None)")
    log = tmp_path / "info.log"
    log.write_text("h1:1:1 [0] NCCL INFO Bootstrap : Using eth0\n"
                   "h1:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n")
    _fails([str(log)], capsys, "no nccl-tests result table")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    _fails([str(empty)], capsys, str(empty))
    _fails([str(tmp_path / "missing.log")], capsys, "missing.log")
    few = tmp_path / "few.log"
    few.write_text(_nccl_log("all_reduce", _times("all_reduce", [2 ** 10, 2 ** 12, 2 ** 14, 2 ** 17, 2 ** 19])))
    _fails([str(few)], capsys, "too few points to fit regime '64 KiB - 1 MiB': 2 measured size(s)")
    assert main(["calibrate", str(few), "--regimes", "none"]) == 0
    capsys.readouterr()
    _fails([str(few), "--regimes", "3 parsecs"], capsys, "--regimes")
    _fails([str(few), "--holdout", "all_reduce"], capsys, "every collective is held out")
    _fails([str(few), "--holdout", "alltoall"], capsys, "no measurements of 'alltoall'")


def test_cli_unknown_gpu_and_unknown_network_ask_for_flags(tmp_path, capsys):
    log = tmp_path / "v100.log"
    log.write_text(_nccl_log("all_reduce", _times("all_reduce"), gpu="Tesla V100-SXM2-32GB"))
    _fails([str(log)], capsys, "pass --gpu-model")
    assert main(["calibrate", str(log), "--gpu-model", "a100-sxm-80gb"]) == 0
    capsys.readouterr()
    _fails([str(log), "--gpu-model", "v100"], capsys, "unknown GPU model 'v100'")
    two = tmp_path / "two.log"
    text = _nccl_log("all_reduce", _times("all_reduce"), ranks=16).replace("node1 device  8", "node2 device  8")
    for r in range(8, 16):
        text = text.replace(f"on     node1 device {r:2d}", f"on     node2 device {r:2d}")
    two.write_text(text)
    _fails([str(two)], capsys, "pass --transport and --nic-gbps")
    assert main(["calibrate", str(two), "--transport", "roce", "--nic-gbps", "3200", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["system"]["nodes"] == 2 and d["level"] == "network" and d["system"]["nic_gbps"] == 3200
