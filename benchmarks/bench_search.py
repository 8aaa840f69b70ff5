"""Genetic search against exhaustive and random search, and a full-size search's time and memory.

Part A: a reduced design space small enough to enumerate (a few thousand designs). The exhaustive front's
hypervolume is the ground truth; NSGA-II with at most 10 % of its evaluations must reach >= 99 % of it and beat
random search at the same budget. Hypervolumes use the exhaustive run's normalisation and reference point.
Part B: 3,000 evaluations for a 1,024-GPU training workload: wall time (target 60 s on this 2-core machine),
peak memory (target < 4 GiB), and whether every baseline is dominated or equalled by a front design.

Run: python benchmarks/bench_search.py [--seeds 3] [--workers 1]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from fabric.search import Constraints, exhaustive_search, random_search, run_search
from fabric.search.result import hypervolume
from fabric.search.runners import make_runner
from fabric.workload.presets import preset_workload

#: The figures of docs/ measure the genetic search at a fixed budget: it runs to the budget (not stopping on
#: convergence) and the recommendation's neighbourhood check (evaluations beyond the budget) is left out, so
#: searches compared at one budget spend the same (docs/search.md "Convergence").
FIXED_BUDGET = dict(stop_on_convergence=False, check_neighbourhood=False)

REDUCED = dict(gpus=512, families=("clos", "rail_optimized", "rail_only", "dragonfly"),
               switch_models=("ib-ndr-64x400", "eth-51t-64x800", "eth-25t-64x400"),
               nic_models=("nic-cx7-400", "nic-eth-400", "nic-cx6-200"), nics_per_gpu=(0.5, 1.0, 2.0),
               oversubscriptions=(1.0, 2.0, 4.0), planes=(1,), routings=("ecmp", "spray"),
               qps=(1, 4), transports=("infiniband", "roce"), placements=("packed",))


def _hv(records, norm, ref):
    feas = [r for r in records if r["feasible"]]
    if not feas:
        return 0.0
    F = np.array([[r["cost_usd"], r["p99_s"]] for r in feas]) / np.asarray(norm)
    return hypervolume(F, np.asarray(ref))


def part_a(seeds: int, workers: int) -> None:
    wl = preset_workload("mixtral-8x7b", gpus=512)
    cons = Constraints(**REDUCED)
    t0 = time.perf_counter()
    ex = exhaustive_search(wl, cons, runner=make_runner(workers), samples=256)
    t_ex = time.perf_counter() - t0
    n = ex.evaluations
    full = ex.hv_history[-1]["hypervolume"]
    print(f"A. reduced space: {n:,} distinct designs, exhaustive {t_ex:.1f} s, front {len(ex.front)} designs, "
          f"hypervolume {full:.4f}")
    budget = n // 10 - 40          # the last generation may add up to one population (40) past the budget
    front_keys = {r["key"] for r in ex.front}
    print(f"   budget {budget:,} evaluations (<= 10 % with the last generation)")
    print(f"   {'seed':>4s} {'GA evals':>8s} {'GA HV %':>8s} {'random HV %':>11s} {'GA front found':>14s} "
          f"{'random found':>12s}")
    ga_all, rnd_all = [], []
    for s in range(seeds):
        ga = run_search(wl, cons, budget_evals=budget, seed=s, pop_size=40, samples=256, eval_seed=0,
                        reference_point=ex.reference_point, normalisation=ex.normalisation, **FIXED_BUDGET)
        rnd = random_search(wl, cons, budget_evals=budget, seed=s, samples=256, eval_seed=0)
        hga = _hv(ga.records, ex.normalisation, ex.reference_point) / full
        hrn = _hv(rnd.records, ex.normalisation, ex.reference_point) / full
        ga_all.append(hga)
        rnd_all.append(hrn)
        found_ga = len(front_keys & {r["key"] for r in ga.records})
        found_rn = len(front_keys & {r["key"] for r in rnd.records})
        print(f"   {s:4d} {ga.evaluations:8,d} {hga:8.2%} {hrn:11.2%} {found_ga:>8d} of {len(front_keys):<3d} "
              f"{found_rn:>6d} of {len(front_keys):<3d}")
    print(f"   mean: GA {np.mean(ga_all):.2%} of the exhaustive hypervolume, random {np.mean(rnd_all):.2%}")


def part_b(workers: int) -> None:
    wl = preset_workload("llama3-70b", gpus=1024)
    cons = Constraints(gpus=1024)
    t0 = time.perf_counter()
    res = run_search(wl, cons, budget_evals=3000, seed=0, runner=make_runner(workers), **FIXED_BUDGET)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"B. 1,024-GPU search: {res.evaluations:,} evaluations, {res.generations} generations, {dt:.1f} s, "
          f"peak RSS {rss:,.0f} MiB, front {len(res.front)} designs")
    for b in res.baselines:
        dom = [r for r in res.front if r["cost_usd"] <= b["cost_usd"] and r["p99_s"] <= b["p99_s"]]
        print(f"   {b['design']:42s} ${b['cost_usd']:>13,.0f} p99 {b['p99_s'] * 1e3:9.1f} ms -> "
              f"{'dominated or equalled' if dom else 'NOT dominated'}"
              + (f" by '{min(dom, key=lambda r: r['cost_usd'])['design']}'" if dom else ""))
    for line in res.summary_lines():
        print("   " + line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--part", choices=["a", "b", "both"], default="both")
    args = ap.parse_args()
    if args.part in ("a", "both"):
        part_a(args.seeds, args.workers)
    if args.part in ("b", "both"):
        part_b(args.workers)


if __name__ == "__main__":
    main()
