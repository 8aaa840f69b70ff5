"""What makes a robust search fast enough (benchmarks/bench_robust.py) without changing any result: one design's
evaluations share their fabric, network models and traffic loads; chunks of one design balance the workers; the
front of two objectives is found by a sweep."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from fabric.design import Design
from fabric.errors import FabricError
from fabric.evaluate import SCENARIO_PRESETS, evaluate
from fabric.search.result import pareto_mask
from fabric.search.runners import _chunks
from fabric.workload.presets import preset_workload

SCENARIOS = ("baseline", "fail-spine", "job-mix-shift", "slow-switch", "flaky-links", "bigger-cluster",
             "background-30", "checkpoint-burst")


@pytest.fixture(scope="module")
def workloads():
    a, b = preset_workload("llama3-70b", 128), preset_workload("mixtral-8x7b", 128)
    two = a.with_jobs([replace(j, name="A" + j.name) for j in a.jobs] + [replace(j, name="B" + j.name) for j in b.jobs])
    serve = preset_workload("llama3-70b-online", 128)
    shared = a.with_jobs(list(a.jobs) + [replace(j, name="S" + j.name) for j in serve.jobs])   # training + serving
    return {"llama": preset_workload("llama3-70b", 256), "moe": preset_workload("mixtral-8x7b", 256),
            "dlrm": preset_workload("dlrm-dcnv2", 256), "two jobs": two, "serving": serve,
            "training and serving": shared}


@pytest.mark.parametrize("design", [
    Design(name="clos 2:1", gpus=256, oversubscription=(2.0, 1.0)),
    Design(name="rail-opt spray", gpus=256, family="rail_optimized", routing="spray"),
    Design(name="dragonfly", gpus=256, family="dragonfly", switch_model="eth-51t-64x800", nic_model="nic-eth-400",
           transport="roce", routing="adaptive")])
def test_shared_intermediates_give_the_same_evaluation_as_evaluating_alone(design, workloads):
    reuse: dict = {}
    for wl in workloads.values():
        for name in SCENARIOS:
            try:
                alone = evaluate(design, wl, SCENARIO_PRESETS[name], seed=5, samples=48)
            except FabricError as err:          # (a serving job cannot be scaled to a bigger cluster)
                with pytest.raises(type(err), match=re.escape(str(err))):
                    evaluate(design, wl, SCENARIO_PRESETS[name], seed=5, samples=48, reuse=reuse)
                continue
            shared = evaluate(design, wl, SCENARIO_PRESETS[name], seed=5, samples=48, reuse=reuse)
            assert shared.to_dict(include_samples=True) == alone.to_dict(include_samples=True), (wl, name)


def test_a_design_builds_once_and_a_job_mix_shift_reuses_the_baseline_loads(monkeypatch, workloads):
    import fabric.evaluate.engine as engine
    import fabric.evaluate.traffic as traffic

    calls = {"build": 0, "load": 0}
    real_build, real_load = engine.build_fabric, traffic.phase_load

    def build(*a, **k):
        calls["build"] += 1
        return real_build(*a, **k)

    def load(*a, **k):
        calls["load"] += 1
        return real_load(*a, **k)

    monkeypatch.setattr(engine, "build_fabric", build)
    monkeypatch.setattr(traffic, "phase_load", load)
    d = Design(name="clos", gpus=256)
    reuse: dict = {}
    evaluate(d, workloads["moe"], SCENARIO_PRESETS["baseline"], samples=32, reuse=reuse)
    after_baseline = dict(calls)
    evaluate(d, workloads["moe"], SCENARIO_PRESETS["job-mix-shift"], samples=32, reuse=reuse)
    # 1.5x the bytes: the same flows per byte on the same healthy network, so nothing is built or loaded again
    assert calls == after_baseline and calls["build"] == 1 and calls["load"] > 0
    evaluate(d, workloads["moe"], SCENARIO_PRESETS["fail-spine"], samples=32, reuse=reuse)
    assert calls["build"] == 1 and calls["load"] > after_baseline["load"]      # a spine down: new loads
    evaluate(d, workloads["moe"], SCENARIO_PRESETS["baseline"], samples=32)      # without reuse: built again
    assert calls["build"] == 2


def _dominated_brute(F):
    """The definition: row i is dropped when another row is <= in both and < in one, or is an earlier copy."""
    keep = []
    for i, f in enumerate(F):
        dom = any((g <= f).all() and (g < f).any() for g in F)
        dup = any((F[j] == f).all() for j in range(i))
        keep.append(not dom and not dup)
    return np.array(keep)


def test_two_objective_front_matches_the_definition_with_ties_and_copies():
    rng = np.random.default_rng(3)
    for t in range(400):
        n = int(rng.integers(1, 40))
        F = rng.integers(0, 5, size=(n, 2)).astype(float) if t % 2 else rng.random((n, 2))
        if t % 5 == 0:
            F[rng.integers(0, n)] = np.inf
        assert (pareto_mask(F) == _dominated_brute(F)).all(), F
    F = np.array([[1.0, 3.0], [2.0, 2.0], [2.0, 2.0], [1.0, 3.0], [3.0, 2.0], [0.5, 9.0]])
    assert pareto_mask(F).tolist() == [True, True, False, False, False, True]


def test_chunks_of_a_robust_objective_hold_one_design():
    designs = list(range(25))
    assert [len(c) for c in _chunks(designs, 2)] == [4, 4, 4, 4, 4, 4, 1]      # one workload: as before
    assert [len(c) for c in _chunks(designs, 2, cases=9)] == [1] * 25           # 9 evaluations per design
    assert [len(c) for c in _chunks(designs, 2, cases=2)] == [2] * 12 + [1]


def test_chunks_do_not_split_a_cabling_over_two_workers():
    # 25 designs sorted by cabling: groups of 3, 1, 6, 2, 13 designs (letters stand for cabling keys)
    groups = [("a", 3), ("b", 1), ("c", 6), ("d", 2), ("e", 13)]
    items = [(k, i) for k, n in groups for i in range(n)]
    chunks = _chunks(items, 2, key=lambda it: it[0])
    assert [it for c in chunks for it in c] == items                      # every design once, in order
    for left, right in zip(chunks, chunks[1:]):
        # no cabling on both sides of a cut, but for the one with two chunks' worth of designs (13 >= 2 x 4)
        assert left[-1][0] != right[0][0] or left[-1][0] == "e"
    # by hand: size 4 (25 items, 2 workers x 4 chunks); a chunk grows to the end of its last cabling unless that
    # cabling holds 8 designs or more: a a a b | c c c c + c c | d d e e | e e e e | e e e e | e e e
    assert [len(c) for c in chunks] == [4, 6, 4, 4, 4, 3]
    # the baselines' free policies (three cablings of 23 designs each, fabric.search.tuned) spread over 2 workers
    tuned = [(k, i) for k in "xyz" for i in range(23)]
    chunks = _chunks(tuned, 2, key=lambda it: it[0])
    assert [len(c) for c in chunks] == [9, 9, 9, 9, 9, 9, 9, 6]           # size 9 = ceil(69 / 8)
    from fabric.reference.presets import preset_design
    from fabric.search.runners import _cabling_of

    d = preset_design("fat-tree")
    assert _cabling_of((d, None, ())) == _cabling_of((replace(d, routing="adaptive", qps_per_connection=4), None, ()))


def test_chunks_of_slow_evaluations_shrink_towards_the_end_of_a_batch():
    """Evaluations of 100,000-GPU fabrics (tenths of a second each): chunks of about 1 / (2 x workers) of what is
    left, down to one design, so two workers end a batch within one design of each other."""
    designs = list(range(40))
    assert [len(c) for c in _chunks(designs, 2)] == [5] * 8                  # fast: equal chunks, as before
    chunks = _chunks(designs, 2, slow=True)
    assert [x for c in chunks for x in c] == designs
    # by hand: ceil(left / 4) capped at the equal size 5: 40..20 left -> 5 each, then 20 -> 5, 15 -> 4, 11 -> 3,
    # 8 -> 2, 6 -> 2, 4 -> 1, 3 -> 1, 2 -> 1, 1 -> 1
    assert [len(c) for c in chunks] == [5, 5, 5, 5, 5, 4, 3, 2, 2, 1, 1, 1, 1]
    # a cabling shorter than two chunks still stays in one chunk
    items = [(k, i) for k, n in [("a", 30), ("b", 3), ("c", 7)] for i in range(n)]
    chunks = _chunks(items, 2, key=lambda it: it[0], slow=True)
    assert [it for c in chunks for it in c] == items
    for left, right in zip(chunks, chunks[1:]):
        assert left[-1][0] != right[0][0] or left[-1][0] == "a"
