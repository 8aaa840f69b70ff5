"""The genetic search: exhaustive ground truth, determinism across runners, constraints, resume, CLI."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest

from fabric.cli.main import main
from fabric.errors import FabricError
from fabric.search import (Constraints, ConstraintError, DesignSpace, ProcessRunner, constraints_from_dict,
                           exhaustive_search, run_search)
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload, dump_workload_json


def _workload(world=128):
    groups = (ProcessGroup("dp", world // 8, "dp", rank_start=0, rank_stride=8),
              ProcessGroup("ep", 16, "ep", rank_start=0, rank_stride=1))
    ops = (CommOp("all_reduce", 64 << 20, "dp", count_per_step=4, overlap_fraction=0.5),
           CommOp("all_to_all", 32 << 20, "ep", count_per_step=8))
    return Workload(jobs=(Job("moe", world_size=world, groups=groups, ops=ops, compute_time_s=0.05),))


SMALL = dict(gpus=128, families=("clos", "rail_optimized"), switch_models=("ib-ndr-64x400", "eth-51t-64x800"),
             nic_models=("nic-cx7-400", "nic-eth-400"), nics_per_gpu=(1.0,), oversubscriptions=(1.0, 2.0, 4.0),
             planes=(1,), routings=("ecmp", "spray"), qps=(1, 4), transports=("infiniband", "roce"),
             placements=("packed",))


def _front_set(res):
    return sorted((r["key"], round(r["cost_usd"], 2), round(r["p99_s"], 12)) for r in res.front)


@pytest.fixture(scope="module")
def exhaustive():
    return exhaustive_search(_workload(), Constraints(**SMALL), samples=64)


def test_space_repairs_are_explicit():
    space = DesignSpace(Constraints(**SMALL))
    x = np.zeros(space.n_var, dtype=np.int64)
    names = space.names
    x[names.index("switch_model")] = 1                      # Ethernet switch
    x[names.index("transport")] = 0                         # ... with the infiniband transport
    x[names.index("nic_model")] = 0                         # ... and an InfiniBand NIC
    design, repairs = space.decode(x)
    assert design.transport == "roce" and design.nic_model == "nic-eth-400"
    assert any("transport infiniband->roce" in r for r in repairs)
    assert any("nic nic-cx7-400->nic-eth-400" in r for r in repairs)
    assert (space.repair(space.repair(x)) == space.repair(x)).all()


def test_exhaustive_front_is_exactly_the_non_dominated_set(exhaustive):
    feas = [r for r in exhaustive.records if r["feasible"]]
    assert len(exhaustive.records) == len({r["key"] for r in exhaustive.records})
    front_keys = {r["key"] for r in exhaustive.front}
    for r in feas:
        dominated = any(o["cost_usd"] <= r["cost_usd"] and o["p99_s"] <= r["p99_s"]
                        and (o["cost_usd"] < r["cost_usd"] or o["p99_s"] < r["p99_s"]) for o in feas)
        if r["key"] in front_keys:
            assert not dominated
        elif not dominated:   # an objective-space twin of a front member (the front keeps one copy)
            assert any(f["cost_usd"] == r["cost_usd"] and f["p99_s"] == r["p99_s"] for f in exhaustive.front)


def test_genetic_search_finds_most_of_the_exhaustive_front(exhaustive):
    ref, norm = exhaustive.reference_point, exhaustive.normalisation
    full = exhaustive.hv_history[-1]["hypervolume"]
    budget = max(20, len(exhaustive.records) // 3)
    res = run_search(_workload(), Constraints(**SMALL), budget_evals=budget, seed=1, pop_size=16, samples=64,
                     reference_point=ref, normalisation=norm)
    # the budget bounds the genetic search; the baselines' tuning and the recommendation's neighbourhood check
    # evaluate beyond it
    assert res.evaluations - res.neighbourhood["evaluated"] <= budget + 16 + res.tuning_evaluations
    assert res.hv_history[-1]["hypervolume"] >= 0.95 * full


def test_same_seed_same_front_and_process_workers_agree():
    cons = Constraints(**SMALL)
    a = run_search(_workload(), cons, budget_evals=48, seed=3, pop_size=16, samples=64)
    b = run_search(_workload(), cons, budget_evals=48, seed=3, pop_size=16, samples=64)
    assert _front_set(a) == _front_set(b)
    from fabric.search.run import GLOBAL_CACHE

    GLOBAL_CACHE._d.clear()                                  # make the workers really evaluate
    c = run_search(_workload(), cons, budget_evals=48, seed=3, pop_size=16, samples=64,
                   runner=ProcessRunner(2))
    assert _front_set(a) == _front_set(c)


def test_baselines_are_reported_and_dominated_or_matched(exhaustive):
    # 400G NICs on the switch their generation calls for (NDR 64 x 400G), InfiniBand first
    assert [b["design"] for b in exhaustive.baselines] == [
        "baseline: fat tree 1:1, 400G on ib-ndr-64x400", "baseline: fat tree 2:1, 400G on ib-ndr-64x400",
        "baseline: rail-optimized SuperPOD-style (SUs of 32 servers, 1:1, 400G on ib-ndr-64x400)"]
    for b in exhaustive.baselines:
        if b["feasible"]:
            assert any(r["cost_usd"] <= b["cost_usd"] and r["p99_s"] <= b["p99_s"] for r in exhaustive.front)


def test_budget_below_cheapest_design_says_why():
    res = run_search(_workload(), Constraints(**{**SMALL, "budget_usd": 1000.0}), budget_evals=32, pop_size=16,
                     samples=32)
    assert not res.feasible
    assert "the cheapest buildable design costs $" in res.infeasible_reason
    assert "above the budget $1,000" in res.infeasible_reason
    assert res.summary_lines()[0].startswith("no feasible design: ")


def test_contradictory_constraints_are_rejected():
    with pytest.raises(ConstraintError, match="excludes every allowed ratio"):
        Constraints(**{**SMALL, "max_oversubscription": 1.0, "oversubscriptions": (2.0, 4.0)})
    with pytest.raises(ConstraintError, match="unknown constraint"):
        constraints_from_dict({"gpus": 64, "budgett": 5})
    with pytest.raises(ConstraintError, match="unknown value"):
        constraints_from_dict({"families": ["torus"]})
    with pytest.raises(FabricError, match="evaluation budget"):
        run_search(_workload(), Constraints(**SMALL), budget_evals=0)


def test_cancel_and_resume(tmp_path):
    cons = Constraints(**SMALL)
    stop = threading.Event()
    seen = []

    def cb(p):
        seen.append(p.generation)
        if p.generation == 2:
            stop.set()

    state = tmp_path / "state.json"
    first = run_search(_workload(), cons, budget_evals=400, seed=5, pop_size=16, samples=32, callback=cb,
                       cancel=stop, state_path=state)
    assert first.stopped_because == "cancelled" and first.generations == 2
    saved = json.loads(state.read_text())
    assert saved["generation"] == 2 and len(saved["records"]) == first.evaluations
    resumed = run_search(_workload(), cons, budget_evals=first.evaluations + 32, seed=5, pop_size=16, samples=32,
                         state_path=state)
    assert resumed.generations > 2
    assert {r["key"] for r in first.records} <= {r["key"] for r in resumed.records}


def test_a_search_resumed_from_any_saved_generation_ends_exactly_like_an_undisturbed_one(tmp_path):
    """A crash after generation k leaves the state file of generation k; resuming from it must give the very
    search that never stopped: same designs evaluated, same hypervolume after every generation, same front."""
    from fabric.search.run import GLOBAL_CACHE

    cons = Constraints(gpus=256)
    wl = _workload(256)
    # long enough for pymoo's 50-generation convergence window to matter: not stopped on the search's own
    # convergence rule (tests/test_convergence.py resumes a search that stops on it)
    kw = dict(budget_evals=1500, seed=3, pop_size=20, samples=32, stop_on_convergence=False)
    state = tmp_path / "state.json"
    copies = {}

    def keep_copy(p):
        copies[p.generation] = state.read_text()

    full = run_search(wl, cons, state_path=state, callback=keep_copy, **kw)
    assert full.generations >= 60
    for k in (1, full.generations // 2, full.generations - 1):
        GLOBAL_CACHE.clear()                 # a restarted server has nothing cached
        crashed = tmp_path / f"crash-{k}.json"
        crashed.write_text(copies[k])
        resumed = run_search(wl, cons, state_path=crashed, **kw)
        assert resumed.generations == full.generations, k
        assert resumed.evaluations == full.evaluations, k
        assert [h["hypervolume"] for h in resumed.hv_history] == [h["hypervolume"] for h in full.hv_history], k
        assert sorted(r["key"] for r in resumed.records) == sorted(r["key"] for r in full.records), k
        assert sorted(r["key"] for r in resumed.front) == sorted(r["key"] for r in full.front), k


def test_search_cli_writes_results(tmp_path, capsys):
    w = tmp_path / "w.json"
    w.write_text(dump_workload_json(_workload()))
    c = tmp_path / "c.json"
    c.write_text(json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in SMALL.items()}))
    out = tmp_path / "out"
    rc = main(["search", "-w", str(w), "-c", str(c), "--budget-evals", "40", "--pop-size", "16", "--samples", "32",
               "--out", str(out), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert re.search(r"\d+ designs? on the front after", text)
    for f in ("evaluations.csv", "pareto.csv", "baselines.csv", "summary.json"):
        assert (out / f).exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["feasible"] and summary["hypervolume"] > 0 and len(summary["comparisons"]) == 3
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(c.read_text()), "budget_usd": 10}))
    assert main(["search", "-w", str(w), "-c", str(bad), "--budget-evals", "20", "--pop-size", "16",
                 "--samples", "16", "--out", str(tmp_path / "o2"), "--quiet"]) == 3
    assert "no feasible design" in capsys.readouterr().out


def test_dask_local_cluster_gives_the_same_front():
    pytest.importorskip("dask.distributed")
    from fabric.search import DaskRunner
    from fabric.search.run import GLOBAL_CACHE

    cons = Constraints(**SMALL)
    a = run_search(_workload(), cons, budget_evals=48, seed=11, pop_size=16, samples=64)
    GLOBAL_CACHE._d.clear()
    b = run_search(_workload(), cons, budget_evals=48, seed=11, pop_size=16, samples=64,
                   runner=DaskRunner(None, n_workers=2))
    assert _front_set(a) == _front_set(b)


def test_killed_local_worker_is_replaced_and_the_front_is_unchanged():
    import os
    import signal

    from fabric.search.run import GLOBAL_CACHE

    cons = Constraints(**SMALL)
    ref = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32)
    GLOBAL_CACHE._d.clear()
    runner = ProcessRunner(2)
    killed = []

    def kill_one(p):
        if p.generation == 1 and not killed:
            pid = runner.worker_pids()[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    res = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32, runner=runner,
                     callback=kill_one)
    assert killed and runner.restarts >= 1
    assert _front_set(res) == _front_set(ref)


def test_killed_dask_worker_does_not_change_the_front():
    pytest.importorskip("dask.distributed")
    import os
    import signal

    from fabric.search import DaskRunner
    from fabric.search.run import GLOBAL_CACHE

    cons = Constraints(**SMALL)
    ref = run_search(_workload(), cons, budget_evals=64, seed=17, pop_size=16, samples=32)
    GLOBAL_CACHE._d.clear()
    runner = DaskRunner(None, n_workers=2)
    killed = []

    def kill_one(p):
        if p.generation == 1 and not killed:
            pids = runner._client.run(os.getpid)
            pid = sorted(pids.values())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    res = run_search(_workload(), cons, budget_evals=64, seed=17, pop_size=16, samples=32, runner=runner,
                     callback=kill_one)
    assert killed
    assert _front_set(res) == _front_set(ref)


def test_cached_designs_are_judged_by_the_current_constraints():
    cons = Constraints(**SMALL)
    free = run_search(_workload(), cons, budget_evals=32, seed=21, pop_size=16, samples=32)
    assert free.feasible
    tight = run_search(_workload(), Constraints(**{**SMALL, "budget_usd": 1000.0}), budget_evals=32, seed=21,
                       pop_size=16, samples=32)                      # same designs, now all from the cache
    assert tight.cache_hits > 0
    assert not tight.feasible and tight.front == []


def test_baselines_outside_the_allowed_families_stay_off_the_front():
    cons = Constraints(**{**SMALL, "families": ("rail_optimized",)})
    res = run_search(_workload(), cons, budget_evals=32, seed=2, pop_size=16, samples=32)
    assert {b["design"] for b in res.baselines if not b["in_space"]} >= {"baseline: fat tree 1:1, 400G on ib-ndr-64x400"}
    assert all(r["family"] == "rail_optimized" for r in res.front)
    assert len(res.comparisons()) == 3                                  # still reported beside the front


def test_the_evaluation_cache_is_capped_by_its_limit(monkeypatch):
    """The records kept for reuse are bounded (limit max_cached_evaluations); the oldest go first."""
    from fabric.search.records import EvaluationCache

    monkeypatch.setenv("FABRIC_LIMIT_MAX_CACHED_EVALUATIONS", "3")
    cache = EvaluationCache()
    for k in range(5):
        cache.put(k, {"key": k})
    assert len(cache) == 3
    assert cache.get(0) is None and cache.get(1) is None and cache.get(4) == {"key": 4}


def test_process_runner_evaluates_in_process_until_its_workers_start_and_the_front_is_unchanged():
    """Warm start: the first batch is evaluated in the calling process, the worker spawned after it, and the
    batches asked for while it starts (a new interpreter importing fabric, about a second) shared between the two;
    the front is the in-process one either way."""
    from fabric.search.run import GLOBAL_CACHE

    cons = Constraints(**SMALL)
    ref = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32)
    GLOBAL_CACHE._d.clear()
    warm = ProcessRunner(1)
    batches = []
    here = warm._here

    def counted(items):
        batches.append(len(items))
        return here(items)

    warm._here = counted
    res = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32, runner=warm)
    assert warm.in_process == sum(batches) and warm.in_process < res.evaluations
    # the first batch (the baselines) whole, then at least one chunk of the first generation did not wait
    assert len(batches) >= 2 and warm._started is not None
    assert _front_set(res) == _front_set(ref)
    GLOBAL_CACHE._d.clear()
    cold = ProcessRunner(1, warm_start=False)
    res = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32, runner=cold)
    assert cold.in_process == 0
    assert _front_set(res) == _front_set(ref)


def test_process_runner_started_early_and_sharing_its_batches_gives_the_same_front():
    """spawn() before the search's context exists (the dashboard starts its worker while it ranks a plan
    shortlist; the context travels with each chunk), and share=True (this process takes chunks from the back of
    each batch while the worker takes them from the front): the front is the in-process one, and both sides
    evaluated part of it."""
    import time

    from fabric.search.run import GLOBAL_CACHE

    cons = Constraints(**SMALL)
    ref = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32)
    GLOBAL_CACHE._d.clear()
    runner = ProcessRunner(1, share=True).spawn()
    deadline = time.monotonic() + 120
    while not runner.ready() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner.ready() and runner.worker_pids()
    res = run_search(_workload(), cons, budget_evals=64, seed=13, pop_size=16, samples=32, runner=runner)
    assert _front_set(res) == _front_set(ref)
    assert 0 < runner.in_process < res.evaluations      # this process and the worker each took chunks


def test_local_workers_are_forks_of_the_fork_server():
    """Where the platform has one, workers are forks of the multiprocessing fork server (started with fabric
    imported by a long-running server: scripts/serve.py), not interpreters spawned by this process."""
    import os

    from fabric.search.runners import start_fork_server, worker_context

    if not start_fork_server():
        pytest.skip("no fork server on this platform")
    assert worker_context().get_start_method() == "forkserver"
    runner = ProcessRunner(1).spawn()
    try:
        parent = runner.share_map(os.getppid, [()], share=False)[0]
        assert parent != os.getpid()
        with open(f"/proc/{parent}/cmdline", "rb") as fh:
            assert b"forkserver" in fh.read()
    finally:
        runner.close()
