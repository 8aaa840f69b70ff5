"""Issue 24, item 7: the cluster's GPU model changes compute.

One rule (docs/evaluator.md, step 0; fabric/evaluate/gpu_compute.py): compute measured on or synthesized for one GPU
is scaled to the design's GPU by the catalog's dense BF16 rates, source / target; an unknown source keeps its
compute and carries a note, the same sentence on every page, the brief and ``fabric evaluate``.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fabric.catalog import default_catalog
from fabric.reference.presets import preset_design
from fabric.design.schema import design_to_dict
from fabric.evaluate import evaluate
from fabric.units import time_text
from fabric.workload.ingest import ingest
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload, load_workload_json

from conftest import trace_path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
#: H100 SXM 989 TFLOPS dense BF16 (NVIDIA H100 datasheet: 1,979 with sparsity); B200 2,250 (NVIDIA HGX B200
#: specifications: FP16/BF16 Tensor Core 36 PFLOPS with sparsity for 8 GPUs = 4.5 per GPU, half of it dense)
H100_TFLOPS = 989.0
B200_TFLOPS = 36_000.0 / 8 / 2
RATIO = H100_TFLOPS / B200_TFLOPS


def _sample(name: str):
    return load_workload_json((SAMPLES / name).read_text())


def test_mixtral_sample_on_b200_takes_989_over_2250_of_its_h100_compute():
    cat = default_catalog()                   # the catalog's rates are their source lines
    b200, h100 = cat.gpu("b200"), cat.gpu("h100-sxm")
    assert B200_TFLOPS == 2250.0
    assert b200.bf16_flops == B200_TFLOPS * 1e12 and "2.25 PFLOPS dense BF16" in b200.source
    assert h100.bf16_flops == H100_TFLOPS * 1e12 and "989 TFLOPS dense BF16" in h100.source
    wl = _sample("mixtral-8x7b.json")
    job = wl.jobs[0]
    assert (job.compute_gpu, job.compute_gpu_tflops) == ("h100-sxm", 989.0)      # the sample says its GPU
    d = preset_design("fat-tree", 256)
    h = evaluate(d, wl, samples=32)
    b = evaluate(d.replace(gpu_model="b200"), wl, samples=32)
    assert h.compute_s == job.compute_time_s                  # its own GPU: unchanged, and no note
    assert not [n for n in h.notes if "compute" in n]
    assert b.compute_s / h.compute_s == pytest.approx(RATIO, rel=1e-12)
    basis = b.jobs[job.name]["compute_basis"]
    assert basis["status"] == "scaled" and basis["factor"] == pytest.approx(RATIO, rel=1e-12)
    assert b.jobs[job.name]["compute_s"] == pytest.approx(job.compute_time_s * RATIO, rel=1e-12)
    assert basis["note"] in b.notes and "989 / 2,250 = 0.4396" in basis["note"]
    assert "communication is timed on the fabric" in basis["note"]


def test_what_scales_compute_and_its_jitter_and_serving_compute_not_communication():
    from fabric.evaluate.gpu_compute import on_gpu

    for name in ("mixtral-8x7b.json", "llama3-70b-online.json"):
        wl = _sample(name)
        scaled, (basis,) = on_gpu(wl, "b200")
        before, after = wl.jobs[0], scaled.jobs[0]
        assert after.compute_time_s == pytest.approx(before.compute_time_s * RATIO, rel=1e-12)
        assert after.compute_cv == before.compute_cv               # relative: the jitter in seconds scales too
        assert after.ops == before.ops and after.groups == before.groups      # communication does not scale
        if before.serving is not None:
            assert after.serving.prefill_s == pytest.approx(before.serving.prefill_s * RATIO, rel=1e-12)
            assert after.serving.decode_step_s == pytest.approx(before.serving.decode_step_s * RATIO, rel=1e-12)


def _unknown_gpu_trace() -> Workload:
    """A two-server training job written as a Kineto trace by a job that names no GPU, read back."""
    from fabric.workload.kineto_writer import workload_to_kineto

    job = Job(name="t", world_size=16, groups=(ProcessGroup("tp", 8, "tp", rank_start=0, rank_stride=1),
                                                ProcessGroup("dp", 2, "dp", rank_start=0, rank_stride=8)),
              ops=(CommOp("all_reduce", 1 << 22, "tp", 4.0), CommOp("all_reduce", 1 << 24, "dp", 1.0)),
              compute_time_s=0.25)
    files = [(f"rank{r}.pt.trace.json.gz", gzip.compress(json.dumps(workload_to_kineto(job, r, steps=3, seed=0))
                                                         .encode())) for r in (0, 8)]
    res = ingest(files)
    assert res.workload is not None
    return res.workload


def test_unknown_source_trace_keeps_its_compute_and_says_so_everywhere(tmp_path, capsys):
    wl = _unknown_gpu_trace()
    job = wl.jobs[0]
    assert job.compute_gpu is None and job.compute_time_s > 0
    d = preset_design("fat-tree", 16).replace(gpu_model="b200")
    ev = evaluate(d, wl, samples=32)
    assert ev.compute_s == job.compute_time_s                 # kept
    basis = ev.jobs[job.name]["compute_basis"]
    assert basis["status"] == "kept" and basis["factor"] == 1.0
    note = basis["note"]
    assert "compute kept as in the workload" in note and "does not name the GPU" in note and "b200" in note
    assert note in ev.notes
    # fabric evaluate --json and the text output carry the same sentence
    from fabric.cli.main import main

    wl_path, d_path = tmp_path / "w.json", tmp_path / "d.json"
    from fabric.workload.model import dump_workload_json

    wl_path.write_text(dump_workload_json(wl))
    d_path.write_text(json.dumps(design_to_dict(d)))
    assert main(["evaluate", "-w", str(wl_path), "-d", str(d_path), "--samples", "16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert note in out["notes"] and out["jobs"][job.name]["compute_basis"]["note"] == note
    assert main(["evaluate", "-w", str(wl_path), "-d", str(d_path), "--samples", "16"]) == 0
    assert f"note: {note}" in capsys.readouterr().out


def test_kineto_traces_name_their_gpu():
    from fabric.workload.kineto_writer import workload_to_kineto

    k = [(p.name, p.read_bytes()) for p in sorted((SAMPLES / "kineto").glob("*.gz"))]
    job = ingest(k).workload.jobs[0]
    assert job.compute_gpu == "h100-sxm"                      # "NVIDIA H100 80GB HBM3 (synthetic)"
    assert any("compute measured on NVIDIA H100 80GB HBM3" in n for n in job.notes)
    # a job of B200 compute writes a B200 device, which reads back as the catalog's b200
    small = replace(_unknown_gpu_trace().jobs[0], compute_gpu="b200")
    one = ingest([("r0.json", json.dumps(workload_to_kineto(small, 0, steps=3, seed=0)).encode())]).workload
    assert one.jobs[0].compute_gpu == "b200"


def test_a_v100_trace_is_named_but_kept():
    from fabric.evaluate.gpu_compute import compute_basis

    paths = sorted(trace_path("kineto/param_dlrm_kineto").glob("*.json"))[:2]
    job = ingest([(p.name, p.read_bytes()) for p in paths]).workload.jobs[0]
    assert job.compute_gpu == "Tesla V100-SXM2-32GB"
    b = compute_basis(job, "h100-sxm")
    assert b.status == "kept" and b.compute_s == job.compute_time_s
    assert "measured on Tesla V100-SXM2-32GB, which has no row in the catalog" in b.note


def _app(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["evals"] = "60"
    for k, v in params.items():
        at.query_params[k] = v
    return at


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def test_pages_show_the_b200_compute_with_the_note():
    wl = _sample("llama3-70b-online.json")
    job = wl.jobs[0]
    at = _app(wl="plan:llama3-70b-online:256", gpu_model="b200").run()
    _ok(at)
    expected = job.compute_time_s * RATIO                     # 1.619 s x 989 / 2,250 = 712 ms
    metrics = {m.label: m for m in at.metric}
    assert metrics["Compute per request"].value == time_text(expected) == "711.7 ms"
    infos = "\n".join(i.value for i in at.info)
    assert "compute scaled from h100-sxm (989 TFLOPS BF16) to the cluster's b200 (2,250 TFLOPS)" in infos
    assert "989 / 2,250 = 0.4396" in metrics["Compute per request"].help
    assert at.dataframe[0].value["compute per step (s)"].iloc[0] == pytest.approx(expected, rel=1e-12)
    at.switch_page("pages/design.py").run()
    _ok(at)
    assert "989 / 2,250 = 0.4396" in "\n".join(i.value for i in at.info)
    at.switch_page("pages/compare.py").run()
    _ok(at)
    assert "989 / 2,250 = 0.4396" in "\n".join(i.value for i in at.info)
    frame = at.dataframe[0].value
    assert set(frame.loc["compute per request"]) == {"711.7 ms"}


def test_brief_carries_the_compute_note():
    from fabric.review.brief import brief_sections, review_brief
    from fabric.search import Constraints, run_search
    from fabric.workload.presets import preset_workload

    wl = preset_workload("llama3-70b-online", gpus=16)
    c = Constraints(gpus=16, gpu_model="b200")
    res = run_search(wl, c, budget_evals=24, seed=0, samples=16)
    from fabric.review import prepare_context

    b = review_brief(res.front, res.baselines, prepare_context(wl, c, samples=16))
    notes = b["compute_notes"]
    assert len(notes) == 1 and "989 / 2,250 = 0.4396" in notes[0]
    buy = dict(brief_sections(b))["The design to buy"]
    assert notes[0] in buy
