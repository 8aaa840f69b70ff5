"""Robust search over a shifting job mix: combination rules, brittle designs, fronts that differ from each
workload's own."""

from __future__ import annotations

import pytest

from fabric.design import Design
from fabric.errors import FabricError
from fabric.evaluate import Scenario
from fabric.search import Constraints, run_search
from fabric.search.records import evaluate_record, workload_key
from fabric.search.robust import RobustObjective, brittle_designs, case_front, robust_lines
from fabric.workload.presets import preset_workload


@pytest.fixture(scope="module")
def mix():
    return preset_workload("llama3-70b", 256), preset_workload("mixtral-8x7b", 256)


def _rec(name, cost, a, b):
    return {"design": name, "key": name, "cost_usd": cost, "feasible": True, "p99_by_case": {"A": a, "B": b}}


def test_brittle_means_best_buy_for_one_case_and_far_off_for_another():
    # hand-made: 'x' is the best design at its price for A, but for B 'cheap' costs less and is 50 % faster
    recs = [_rec("cheap", 100, 10.0, 2.0), _rec("x", 150, 8.0, 3.0), _rec("y", 300, 7.9, 1.9)]
    front = recs
    out = brittle_designs(front, recs)
    assert [b["design"] for b in out] == ["x"]
    assert out[0]["best_for"] == ["A"] and out[0]["worse_for"]["B"] == pytest.approx(3.0 / 2.0 - 1)
    assert [r["design"] for r in case_front(recs, "A")] == ["cheap", "x", "y"]
    assert [r["design"] for r in case_front(recs, "B")] == ["cheap", "y"]
    assert brittle_designs(front, recs, tolerance=0.6) == []          # 50 % is within a 60 % tolerance


def test_worst_and_mean_combine_the_cases_relative_to_the_references(mix):
    a, b = mix
    d = Design(name="d", gpus=256, oversubscription=(2.0, 1.0))
    c = Constraints(gpus=256)
    fail = Scenario(name="one-spine-down", failed_spines=1)
    parts = {(w, s.name): evaluate_record(d, wl, s, 0, 32, None, c)["p99_s"]
             for w, wl in (("A", a), ("B", b)) for s in (Scenario(), fail)}
    refs = {"A|baseline": 20.0, "A|one-spine-down": 21.0, "B|baseline": 4.0, "B|one-spine-down": 5.0}
    for mode in ("worst", "mean"):
        obj = RobustObjective((("A", a, 3.0), ("B", b, 1.0)), (Scenario(), fail), mode=mode, references=refs)
        rec = evaluate_record(d, obj, None, 0, 32, None, c)
        ratios = {k: parts[tuple(k.split("|"))] / v for k, v in refs.items()}
        weights = {"A|baseline": 0.375, "A|one-spine-down": 0.375, "B|baseline": 0.125, "B|one-spine-down": 0.125}
        scale = sum(weights[k] * refs[k] for k in refs)                      # 0.75 x 20.5 + 0.25 x 4.5 = 16.5 s
        assert scale == pytest.approx(16.5)
        slow = max(ratios.values()) if mode == "worst" else sum(weights[k] * ratios[k] for k in refs)
        assert rec["robust_slowdown"] == pytest.approx(slow)
        assert rec["p99_s"] == pytest.approx(slow * 16.5)
        assert rec["p99_by_case"] == {f"{w}|{s}": v for (w, s), v in parts.items()}
    assert workload_key(obj) != workload_key(RobustObjective((("A", a, 1.0), ("B", b, 1.0)), mode="mean"))


def test_a_robust_search_front_differs_from_each_single_workload_front(mix):
    a, b = mix
    c = Constraints(gpus=256)
    robust = run_search(RobustObjective((("llama", a, 1.0), ("mixtral", b, 1.0)), mode="worst"), c,
                        budget_evals=300, seed=0, samples=64)
    alone = [run_search(w, c, budget_evals=300, seed=0, samples=64) for w in (a, b)]
    keys = lambda res: {r["key"] for r in res.front}                        # noqa: E731
    assert keys(robust) != keys(alone[0]) and keys(robust) != keys(alone[1])
    assert all(set(r["p99_by_case"]) == {"llama|baseline", "mixtral|baseline"} for r in robust.front)
    lines = robust_lines(robust)
    assert any(line.startswith(("brittle: '", "no front design is brittle")) for line in lines)
    assert sum(line.startswith("case ") for line in lines) == 2


def test_bad_objectives_are_named(mix):
    a, _ = mix
    with pytest.raises(FabricError, match="choose worst or mean"):
        RobustObjective((("a", a, 1.0),), mode="median")
    with pytest.raises(FabricError, match="weight of workload 'a'"):
        RobustObjective((("a", a, 0.0),))
    with pytest.raises(FabricError, match="names must differ"):
        RobustObjective((("a", a, 1.0), ("a", a, 1.0)))


def test_cli_robust_search_writes_its_review(tmp_path, capsys):
    import json

    from fabric.cli.main import main

    wl = tmp_path / "llama.json"
    assert main(["synth", "--preset", "llama3-70b", "--gpus", "256", "--out", str(wl)]) == 0
    moe = "sample_traces/mixtral-8x7b.json"
    out = tmp_path / "out"
    assert main(["search", "-w", str(wl), "-w", moe, "--robust", "mean", "--weights", "2,1", "--budget-evals",
                 "60", "--samples", "32", "--quiet", "--out", str(out)]) == 0
    rev = json.loads((out / "robust.json").read_text())
    assert rev["objective"] == "robust (mean) over llama, mixtral-8x7b"
    assert all(set(r["p99_by_case_s"]) == {"llama|baseline", "mixtral-8x7b|baseline"} for r in rev["front"])
    capsys.readouterr()
    assert main(["search", "-w", str(wl), "-w", moe, "--budget-evals", "20", "--out", str(out)]) == 2
    assert "choose how to combine them with --robust" in capsys.readouterr().err
    assert main(["search", "-w", str(wl), "-w", moe, "--robust", "worst", "--weights", "1", "--budget-evals", "20",
                 "--out", str(out)]) == 2
    assert "1 weight(s) for 2 workload(s)" in capsys.readouterr().err
