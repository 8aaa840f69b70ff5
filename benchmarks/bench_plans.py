"""Plan search at 1,024 GPUs: how fast inner mode is, and what co-design buys in hypervolume (issue 25).

(b) Speed (run first, on a cold process): a 1,000-evaluation inner-mode search (``fabric search --plan-space auto``
    with ``--budget-evals 1000``: 1,000 designs, each judged at its best shortlisted plan) of Mixtral-8x7B on
    1,024 H100 over the default search space, timed from the call to the result, the shortlist's preparation
    (ranking plans on the probe designs) shown apart. Target: <= 30 s on the 2-core machine.

(a) Hypervolume of the fixed-plan, inner and joint fronts on one evaluation budget: ``--budget`` evaluator calls
    (default 1,000) for each mode: fixed and joint spend one call per record, inner one per shortlisted plan per
    design, so it gets budget / shortlist designs (also shown: inner at ``--budget`` designs, as the timed run).
    Every run uses the same Monte Carlo seed (``eval_seed`` 0: equal (design, plan) pairs get equal objectives) and
    genetic seeds ``--seeds`` (default 0 1 2), population 40. Objectives are normalised by the fixed-plan 1:1 fat
    tree baseline (cost, p99 at the preset's plan); the shared reference point is 1.1 x the worst normalised cost
    and the worst normalised p99 among the points of every front of every run.

(c) The shortlist's gap: for each inner-mode front design of seed 0, its best plan over the whole plan space
    (``rank_plans``, exact) against the best shortlisted plan it was judged at.

Run: python benchmarks/bench_plans.py [--budget 1000] [--seeds 0 1 2] [--samples 256] [--skip-speed]
     [--speed-only] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from fabric.plans.basis import basis_from_preset  # noqa: E402
from fabric.plans.best import rank_plans  # noqa: E402
from fabric.search.plan_space.inner import PlanObjective  # noqa: E402
from fabric.search.plan_space.joint import JointObjective  # noqa: E402
from fabric.plans.workloads import plan_workload  # noqa: E402
from fabric.search import Constraints, run_search  # noqa: E402
from fabric.search.result import hypervolume  # noqa: E402
from fabric.search.space import DesignSpace  # noqa: E402

#: The figures of docs/ measure the genetic search at a fixed budget: it runs to the budget (not stopping on
#: convergence) and the recommendation's neighbourhood check (evaluations beyond the budget) is left out, so
#: searches compared at one budget spend the same (docs/search.md "Convergence").
FIXED_BUDGET = dict(stop_on_convergence=False, check_neighbourhood=False)

GPUS = 1024
POP = 40


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def speed(basis, cons, samples: int, workers: int) -> None:
    """The timed inner-mode search: wall time, and this process' CPU time (what a busy machine does not change)."""
    from fabric.search.runners import ProcessRunner

    where = "in-process" if workers <= 1 else f"{workers} worker processes"
    print(f"(b) inner-mode search, 1,000 evaluations, Mixtral-8x7B on {GPUS:,} H100, default space, {where}; "
          f"{_load()}")
    t0, c0 = time.perf_counter(), time.process_time()
    obj = PlanObjective(basis)
    prepared = obj.prepared_for(DesignSpace(cons, None, obj), seed=0, samples=samples)
    t1, c1 = time.perf_counter(), time.process_time()
    runner = ProcessRunner(workers) if workers > 1 else None
    res = run_search(prepared, cons, budget_evals=1000, seed=0, samples=samples, pop_size=POP, runner=runner,
                     **FIXED_BUDGET)
    t2, c2 = time.perf_counter(), time.process_time()
    short = {g: len(cs) for g, cs in prepared.shortlist}
    cpu = "" if workers > 1 else f" (CPU {c1 - c0:.1f} s + {c2 - c1:.1f} s)"
    print(f"  shortlist {short} prepared in {t1 - t0:.1f} s; search {t2 - t1:.1f} s "
          f"({res.evaluations:,} designs, {res.generations} generations, front {len(res.front)}); "
          f"total {t2 - t0:.1f} s{cpu}; {_load()}")


def _points(front):
    return np.array([[r["cost_usd"], r["p99_s"]] for r in front], float).reshape(-1, 2)


def compare(basis, cons, budget: int, seeds, samples: int):
    fixed_wl = plan_workload(basis, basis.given)
    inner = PlanObjective(basis)
    inner = inner.prepared_for(DesignSpace(cons, None, inner), seed=0, samples=samples)
    k = inner.evaluations_per_design
    runs: dict = {}
    for seed in seeds:
        for name, wl, evals in (("fixed", fixed_wl, budget), ("joint", JointObjective(basis), budget),
                                ("inner", inner, budget // k), ("inner, same designs", inner, budget)):
            t = time.perf_counter()
            res = run_search(wl, cons, budget_evals=evals, seed=seed, eval_seed=0, samples=samples, pop_size=POP,
                             **FIXED_BUDGET)
            runs[(name, seed)] = (res, time.perf_counter() - t)
    base = next(r for r in runs[("fixed", seeds[0])][0].baselines if r["buildable"])
    scale = np.array([base["cost_usd"], base["p99_s"]])
    allpts = np.vstack([_points(res.front) / scale for res, _ in runs.values()])
    ref = 1.1 * allpts.max(axis=0)
    print(f"(a) hypervolume on one budget of {budget:,} evaluator calls (inner: {k} plans per design -> "
          f"{budget // k:,} designs), seeds {list(seeds)}, population {POP}, {samples} samples, eval_seed 0")
    print(f"  normalised by the fixed-plan 1:1 fat tree (${scale[0]:,.0f}, p99 {scale[1]:.3f} s); reference point "
          f"({ref[0]:.3f}, {ref[1]:.3f})")
    names = ("fixed", "inner", "joint", "inner, same designs")
    hv = {}
    for name in names:
        vals = []
        for seed in seeds:
            res, el = runs[(name, seed)]
            vals.append(hypervolume(_points(res.front) / scale, ref))
            print(f"  {name:20s} seed {seed}: hypervolume {vals[-1]:.4f}, {res.evaluations:,} records, front "
                  f"{len(res.front)}, {el:.1f} s")
        hv[name] = vals
    for name in names:
        print(f"  {name:20s} mean hypervolume {np.mean(hv[name]):.4f} "
              f"({np.mean(hv[name]) / np.mean(hv['fixed']):.2f} x fixed)")
    print(f"  {_load()}")
    return runs[("inner", seeds[0])][0], inner


def gap(res, basis, samples: int) -> None:
    print("(c) inner-mode front designs (seed 0): best shortlisted plan against the exact best over the plan space")
    space = DesignSpace(Constraints(gpus=GPUS), None, plan_workload(basis, basis.given))
    worst = 0.0
    for r in res.front:
        if r.get("genome") is None:
            continue
        d, _ = space.decode(r["genome"])
        exact = rank_plans(d, basis, seed=0, samples=samples, keep=1)
        g = r["p99_s"] / exact.top.p99_s - 1.0
        worst = max(worst, g)
        print(f"  {r['design'][:60]:60s} shortlist {r['p99_s']:.3f} s, exact {exact.top.p99_s:.3f} s "
              f"(+{g:.1%}; {exact.evaluated} plans ranked)")
    print(f"  largest gap {worst:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--workers", type=int, default=1, help="(b) with this many worker processes (default in-process)")
    ap.add_argument("--speed-only", action="store_true")
    args = ap.parse_args()
    basis = basis_from_preset("mixtral-8x7b", GPUS)
    cons = Constraints(gpus=GPUS)
    if not args.skip_speed:
        speed(basis, cons, args.samples, args.workers)
    if args.speed_only:
        return
    res, _ = compare(basis, cons, args.budget, args.seeds, args.samples)
    gap(res, basis, args.samples)


if __name__ == "__main__":
    main()
