"""The convergence rule (fabric.search.convergence): when a search says "converged", when "not converged:
continue", and that continuing from the saved state is the search a larger budget would have run."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from fabric.cli.main import main
from fabric.errors import FabricError
from fabric.search import GLOBAL_CACHE, Constraints, run_search
from fabric.search.convergence import DEFAULT_RULE, ConvergenceRule, saved_evaluations, status_text
from fabric.search.run import continue_search
from fabric.workload.model import dump_workload_json
from test_search import _workload


def _history(*hvs):
    return [{"generation": i + 1, "evaluations": 40 * (i + 1), "hypervolume": hv} for i, hv in enumerate(hvs)]


def test_the_rule_is_the_relative_hypervolume_gain_over_the_window():
    rule = ConvergenceRule(threshold=0.01, window=2)
    assert rule.gain(_history(1.0, 1.0)) is None                      # fewer than window + 1 generations
    assert rule.gain(_history(0.0, 0.0, 0.0)) is None                 # no feasible front yet
    assert rule.gain(_history(1.0, 1.5, 2.0)) == pytest.approx(0.5)   # (2.0 - 1.0) / 2.0
    assert rule.gain(_history(1.0, 1.0, 1.005, 1.0099)) == pytest.approx(0.0099 / 1.0099)
    assert rule.met(_history(1.0, 1.0, 1.005, 1.0099))                # below 1 % over the last 2 generations
    assert not rule.met(_history(1.0, 1.0, 1.0102))                   # 1.01 % > 1 %
    assert not rule.met(_history(0.0, 0.0, 0.0))
    assert rule.words == "hypervolume gain below 1 % over 2 generations"
    assert "no feasible front yet" in rule.where(_history(0.0, 0.0, 0.0))
    assert "gain 50 % over the last 2 generations" in rule.where(_history(1.0, 1.5, 2.0))


def test_the_default_rule_and_bad_rules():
    assert (DEFAULT_RULE.threshold, DEFAULT_RULE.window) == (0.001, 10)
    assert DEFAULT_RULE.words == "hypervolume gain below 0.1 % over 10 generations"
    assert status_text(True) == "converged" and status_text(False) == "not converged: continue"
    for bad in (dict(threshold=0.0), dict(threshold=1.5), dict(window=0), dict(window=2.5)):
        with pytest.raises(ValueError):
            ConvergenceRule(**bad)


CONS = Constraints(gpus=256)
KW = dict(pop_size=20, samples=32, seed=3)


@pytest.fixture(scope="module")
def converged():
    GLOBAL_CACHE.clear()
    return run_search(_workload(256), CONS, budget_evals=3000, **KW)


def test_a_search_stops_when_it_has_converged(converged):
    res = converged
    assert res.converged and res.status == "converged"
    assert res.stopped_because.startswith("converged (hypervolume gain ")
    assert res.convergence_rule == DEFAULT_RULE.words
    ga = [h for h in res.hv_history if not h.get("neighbourhood_check")]
    assert len(ga) == res.generations and res.evaluations < 3000       # it stopped well before its budget
    assert DEFAULT_RULE.met(ga) and not DEFAULT_RULE.met(ga[:-1])     # on the first generation the rule held
    summary = res.summary()
    assert summary["converged"] is True and summary["convergence_rule"] == DEFAULT_RULE.words


def test_a_search_stopped_by_its_budget_says_not_converged():
    res = run_search(_workload(256), CONS, budget_evals=120, **KW)
    assert not res.converged and res.status == "not converged: continue"
    assert res.stopped_because.startswith("budget reached, not converged (")
    timed = run_search(_workload(256), CONS, budget_evals=None, budget_seconds=1e-6, **KW)
    assert timed.stopped_because.startswith("time budget reached, not converged (")


def test_a_search_not_stopped_on_convergence_runs_to_its_budget_and_still_says_converged(converged):
    res = run_search(_workload(256), CONS, budget_evals=converged.evaluations + 200, stop_on_convergence=False, **KW)
    assert res.generations > converged.generations and res.converged
    assert res.stopped_because == "budget reached"


def test_continuing_a_search_is_the_search_a_larger_budget_would_have_run(tmp_path):
    state = tmp_path / "state.json"
    GLOBAL_CACHE.clear()
    first = run_search(_workload(256), CONS, budget_evals=120, state_path=state, **KW)
    assert not first.converged
    done = saved_evaluations(state)
    assert done == json.loads(state.read_text())["evaluations"] <= first.evaluations
    GLOBAL_CACHE.clear()                                 # a server restart in between
    more = continue_search(_workload(256), CONS, state, extra_evals=200, **KW)
    GLOBAL_CACHE.clear()
    whole = run_search(_workload(256), CONS, budget_evals=done + 200, **KW)
    assert more.generations == whole.generations and more.evaluations == whole.evaluations
    assert more.stopped_because == whole.stopped_because and more.converged == whole.converged
    assert [h["hypervolume"] for h in more.hv_history] == [h["hypervolume"] for h in whole.hv_history]
    assert sorted(r["key"] for r in more.front) == sorted(r["key"] for r in whole.front)
    assert more.neighbourhood["recommended"] == whole.neighbourhood["recommended"]
    with pytest.raises(FabricError, match="positive whole number"):
        continue_search(_workload(256), CONS, state, extra_evals=0, **KW)
    with pytest.raises(FabricError, match="no saved search state"):
        continue_search(_workload(256), CONS, tmp_path / "none.json", extra_evals=10, **KW)


def test_a_converging_search_resumed_from_any_generation_ends_exactly_like_an_undisturbed_one(tmp_path,
                                                                                               converged):
    """The stop on convergence reads the saved hypervolume history, so a crash changes nothing: same generations,
    same stop, same neighbourhood check and recommendation."""
    state = tmp_path / "state.json"
    copies = {}
    GLOBAL_CACHE.clear()
    full = run_search(_workload(256), CONS, budget_evals=3000, state_path=state,
                      callback=lambda p: copies.setdefault(p.generation, state.read_text()), **KW)
    assert full.stopped_because == converged.stopped_because
    for k in (1, full.generations // 2, full.generations - 1, full.generations):   # (the last: resumed converged)
        GLOBAL_CACHE.clear()
        crashed = tmp_path / f"crash-{k}.json"
        crashed.write_text(copies[k])
        resumed = run_search(_workload(256), CONS, budget_evals=3000, state_path=crashed, **KW)
        assert (resumed.generations, resumed.evaluations, resumed.stopped_because) == \
            (full.generations, full.evaluations, full.stopped_because), k
        assert resumed.neighbourhood["recommended"] == full.neighbourhood["recommended"], k
        assert resumed.neighbourhood["evaluated"] == full.neighbourhood["evaluated"], k
        assert sorted(r["key"] for r in resumed.front) == sorted(r["key"] for r in full.front), k


def test_the_cli_says_not_converged_and_its_resume_line_continues(tmp_path, capsys):
    w = tmp_path / "w.json"
    w.write_text(dump_workload_json(_workload(256)))
    out = tmp_path / "out"
    args = ["search", "-w", str(w), "--gpus", "256", "--pop-size", "20", "--samples", "32", "--seed", "3",
            "--out", str(out), "--quiet"]
    assert main(args + ["--budget-evals", "120"]) == 0
    text = capsys.readouterr().out
    assert "budget reached, not converged (" in text
    m = re.search(r"not converged \(hypervolume gain below 0\.1 % over 10 generations not met\): continue with the "
                  r"same command and (--resume \S+ --budget-evals \d+)\.", text)
    assert m, text
    assert (out / "state.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["converged"] is False and summary["neighbourhood_check"]["rounds"] >= 1
    # the printed line, run as printed (with a budget large enough to converge), continues the same search
    cont = shlex.split(m.group(1))
    cont[-1] = "3000"
    assert main(args + cont) == 0
    text = capsys.readouterr().out
    assert re.search(r"^converged: hypervolume gain [\d.]+ % over the last 10 generations", text, re.M), text
    again = json.loads((out / "summary.json").read_text())
    assert again["converged"] is True and again["generations"] > summary["generations"]
    # a fresh run into the same folder starts afresh (the state it left is replaced, not resumed)
    assert main(args + ["--budget-evals", "120"]) == 0
    assert json.loads((out / "summary.json").read_text())["generations"] == summary["generations"]
