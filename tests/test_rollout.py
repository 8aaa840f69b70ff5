"""Before/after rollout check: a measured change against fabric's prediction, with an injected drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.calibrate.data import Point
from fabric.calibrate.model import evaluate_points
from fabric.calibrate.synthetic import render_nccl_tests
from fabric.calibrate.system import SystemSpec, system_design
from fabric.cli.main import main
from fabric.reference.presets import preset_design
from fabric.errors import FabricError
from fabric.evaluate import evaluate
from fabric.calibrate.rollout import rollout_check
from fabric.workload.ingest import ingest

ROOT = Path(__file__).resolve().parent.parent
SIZES = tuple(2 ** k for k in range(20, 31))          # 1 MiB .. 1 GiB


def _run(design, catalog, factor: float) -> str:
    """nccl-tests text whose times are the evaluator's on ``design`` times ``factor`` (a change of the system
    the model does not know about, e.g. a firmware regression, when factor != 1)."""
    pts = [Point("all_reduce", s, 8, 0.0) for s in SIZES]
    t = evaluate_points(design, catalog, pts, samples=16) * factor
    return render_nccl_tests("all_reduce", 8, "h100-sxm", SIZES, t, t)


@pytest.fixture(scope="module")
def node():
    return system_design(SystemSpec(ranks=8, gpus_per_node=8, gpu_model="h100-sxm"))


def _wl(text: str):
    return ingest([("run.log", text.encode())]).workload


def test_a_change_that_behaves_as_predicted_holds(node):
    design, catalog = node
    before, after = _wl(_run(design, catalog, 1.0)), _wl(_run(design, catalog, 1.0))
    r = rollout_check(before, after, before_design=design, after_design=design, catalog=catalog, samples=16)
    assert r.mode == "collectives" and len(r.rows) == len(SIZES)
    assert abs(r.drift) < 0.01 and not r.drifted           # nccl-tests rounds times to 2-3 digits


def test_an_injected_slowdown_is_flagged_as_drift(node):
    design, catalog = node
    before, after = _wl(_run(design, catalog, 1.0)), _wl(_run(design, catalog, 1.3))
    r = rollout_check(before, after, before_design=design, after_design=design, catalog=catalog, samples=16)
    # measured: every point 1.3x slower; predicted: no change -> drift = 1 / 1.3 - 1 = -23.1 %
    assert r.measured_ratio == pytest.approx(1.3, rel=0.01)
    assert r.predicted_ratio == pytest.approx(1.0, rel=1e-9)
    assert r.drift == pytest.approx(1 / 1.3 - 1, abs=0.01) and r.drifted
    assert "DRIFTED" in r.summary()
    assert not rollout_check(before, after, before_design=design, after_design=design, catalog=catalog, samples=16,
                             tolerance=0.3).drifted


def test_step_mode_compares_the_measured_step_with_the_predicted_one():
    files = [(p.name, p.read_bytes()) for p in sorted((ROOT / "sample_traces" / "kineto").glob("llama3-70b.rank*"))]
    wl = ingest(files).workload
    d0 = preset_design("fat-tree", 256)
    d1 = d0.replace(oversubscription=(4.0, 4.0))
    r = rollout_check(wl, wl, before_design=d0, after_design=d1, samples=32, tolerance=0.001)
    p0 = evaluate(d0, wl, samples=32).step_time_s["p50"]
    p1 = evaluate(d1, wl, samples=32).step_time_s["p50"]
    # the same trace twice: measured change 0, so the drift is the predicted change itself
    assert r.mode == "step" and r.measured_ratio == 1.0
    assert r.predicted_ratio == pytest.approx(p1 / p0) and r.drift == pytest.approx(p1 / p0 - 1)
    assert r.drifted == (abs(p1 / p0 - 1) > 0.001)


def test_mismatched_inputs_are_refused(node):
    design, catalog = node
    files = [(p.name, p.read_bytes()) for p in sorted((ROOT / "sample_traces" / "kineto").glob("llama3-70b.rank*"))]
    trace = ingest(files).workload
    with pytest.raises(FabricError, match="same kind of measurement"):
        rollout_check(trace, _wl(_run(design, catalog, 1.0)), before_design=design, after_design=design)
    synth = ingest([("m.json", (ROOT / "sample_traces" / "mixtral-8x7b.json").read_bytes())]).workload
    with pytest.raises(FabricError, match="neither a measured step time"):
        rollout_check(synth, synth, before_design=design, after_design=design)
    with pytest.raises(FabricError, match="tolerance"):
        rollout_check(trace, trace, before_design=design, after_design=design, tolerance=0)


def test_cli_exit_codes(tmp_path, node, capsys):
    design, catalog = node
    (tmp_path / "d.json").write_text(__import__("fabric.design", fromlist=["dump_design"]).dump_design(design))
    (tmp_path / "b.log").write_text(_run(design, catalog, 1.0))
    (tmp_path / "a.log").write_text(_run(design, catalog, 1.5))
    args = ["rollout", "--before", str(tmp_path / "b.log"), "--after", str(tmp_path / "a.log"), "--before-design",
            str(tmp_path / "d.json"), "--after-design", str(tmp_path / "d.json"), "--samples", "16"]
    assert main(args) == 1                                              # drifted
    assert "the model DRIFTED" in capsys.readouterr().out
    assert main(args + ["--tolerance", "0.5"]) == 0
    assert main(args + ["--tolerance", "-1"]) == 2
