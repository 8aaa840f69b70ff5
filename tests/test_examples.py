"""examples/: the generated files are up to date, every file loads with the code the README's commands use, and the
synthetic nccl-tests writer produces what the parser and ``fabric calibrate`` read."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

from fabric.calibrate import fit_profile, load_measurements
from fabric.calibrate.synthetic import DEFAULT_SIZES, DEFAULT_TRUTH, synthetic_nccl_tests, synthetic_times
from fabric.errors import FabricError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _generator():
    spec = importlib.util.spec_from_file_location("examples_generate", EXAMPLES / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_examples_are_up_to_date():
    bad = _generator().check(EXAMPLES)
    assert bad == [], f"out of date: {bad}; regenerate with python examples/generate.py"


def test_the_check_notices_a_changed_file(tmp_path):
    gen = _generator()
    for name, text in gen.files().items():
        (tmp_path / name).write_text(text)
    assert gen.check(tmp_path) == []
    log = tmp_path / "nccl_allreduce.log"
    log.write_text(log.read_text().replace("float     sum", "float     max", 1))
    assert gen.check(tmp_path) == ["nccl_allreduce.log"]


def test_design_and_prices_load_and_apply():
    from fabric.catalog import default_catalog, load_catalog
    from fabric.cost import bill_of_materials
    from fabric.design import load_design
    from fabric.topology import build_fabric

    design = load_design(EXAMPLES / "my_design.yaml")
    assert design.gpus == 512 and design.family == "rail_optimized"
    base, prices = default_catalog(), load_catalog(EXAMPLES / "prices.csv")
    a = bill_of_materials(build_fabric(design, base), base)
    b = bill_of_materials(build_fabric(design, prices), prices)
    assert b.cost_usd < a.cost_usd            # the overrides are cheaper switches and NICs


def test_limits_document_every_key_and_load():
    from fabric.search import Constraints, load_constraints

    cons = load_constraints(EXAMPLES / "limits.yaml")
    assert cons.gpus == 512 and cons.budget_usd == 3_000_000 and cons.p99_target_s == 13.5
    doc = (ROOT / "docs" / "constraints.md").read_text(encoding="utf-8")
    for f in dataclasses.fields(Constraints):
        assert re.search(rf"^\| `{f.name}` \|", doc, re.M), f"docs/constraints.md does not document {f.name}"


def test_packet_check_inputs_load():
    from fabric.catalog import load_catalog
    from fabric.design import load_design
    from fabric.workload.ingest import ingest_paths

    cat = load_catalog(EXAMPLES / "packet-catalog.json")
    design = load_design(EXAMPLES / "leaf-spine-32.json", catalog=cat)
    assert design.gpus == 32 and design.gpus_per_node == 1
    wl = ingest_paths([str(EXAMPLES / "all_to_all-4MB-x32.json")]).workload
    (job,) = wl.jobs
    assert job.world_size == 32 and [o.kind for o in job.ops] == ["all_to_all"]


def test_example_nccl_log_is_labelled_synthetic_and_calibrates():
    text = (EXAMPLES / "nccl_allreduce.log").read_text()
    assert text.startswith("# SYNTHETIC, NOT A MEASUREMENT")
    ms = load_measurements([str(EXAMPLES / "nccl_allreduce.log")])
    assert ms.system.gpu_model == "h100-sxm" and ms.system.ranks == 8 and ms.system.level == "nvlink"
    assert len(ms.measurements) == 2 * len(DEFAULT_SIZES)
    res = fit_profile(ms, kinds=("all_reduce",))
    eff = next(p["value"] for p in res.parameters if p["name"] == "nvlink_efficiency")
    assert eff == pytest.approx(DEFAULT_TRUTH["nvlink_efficiency"], rel=0.03)
    assert res.in_sample["geomean_error_ge_1mb"] < 0.03


@pytest.mark.parametrize("kind", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
def test_noise_free_output_parses_back_to_the_evaluators_times(kind, tmp_path):
    from fabric.workload.ingest import ingest_paths

    sizes = [2 ** k for k in range(10, 28, 3)]
    path = tmp_path / "bench.log"                  # a name that says nothing: the kind comes from the content
    path.write_text(synthetic_nccl_tests(kind, ranks=4, sizes=sizes, noise=0.0))
    result = ingest_paths([str(path)])
    assert result.ok, result.errors
    wl = result.workload
    assert {m.kind for m in wl.measurements} == {kind}
    assert {m.ranks for m in wl.measurements} == {4}
    want = synthetic_times(kind, ranks=4, sizes=sizes)
    got = sorted((m.bytes, m.time_s) for m in wl.measurements if not m.in_place)
    assert [b for b, _ in got] == sizes
    for (b, t), w in zip(got, want):
        assert t == pytest.approx(w, rel=0.005, abs=0.01e-6)


def test_truth_changes_the_numbers_and_the_seed_the_noise():
    sizes = [2 ** 20, 2 ** 26]
    slow = synthetic_times(sizes=sizes, truth={"nvlink_efficiency": 0.4})
    fast = synthetic_times(sizes=sizes, truth={"nvlink_efficiency": 0.8})
    assert slow[-1] > 1.8 * fast[-1]
    assert synthetic_nccl_tests(sizes=sizes, seed=1) != synthetic_nccl_tests(sizes=sizes, seed=2)
    assert synthetic_nccl_tests(sizes=sizes, seed=1) == synthetic_nccl_tests(sizes=sizes, seed=1)


@pytest.mark.parametrize("kw, msg", [
    ({"kind": "gather"}, "kind must be one of"),
    ({"ranks": 16}, "one node of 2 to 8 GPUs"),
    ({"gpu_model": "tpu"}, "gpu model must be one of"),
    ({"sizes": [6]}, "multiples of 4 B"),
    ({"noise": -1}, "noise must be in"),
])
def test_bad_arguments_are_refused(kw, msg):
    kind = kw.pop("kind", "all_reduce")
    with pytest.raises(FabricError, match=msg):
        synthetic_nccl_tests(kind, **kw)


def test_installed_example_is_the_2to1_fabric_it_describes():
    from fabric.brownfield import load_installed

    inst = load_installed(EXAMPLES / "installed-2to1.yaml")
    d = inst.design
    assert (d.gpus, d.oversub(0), d.routing, d.qps_per_connection) == (1024, 2.0, "ecmp", 1)
    # 128 servers, 5 per leaf (40 of 64 ports down, 20 up): 26 leaves; 520 uplinks, 2 to each of 10 spines
    assert inst.inventory.by_category("switch") == {"ib-ndr-64x400": 26 + 10}
