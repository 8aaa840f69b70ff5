"""When the search converges, what the neighbourhood check of the recommendation costs, and whether a constraint the
recommendation already meets leaves it alone (docs/search.md "Convergence").

Per case (a built-in sample at a cluster size, or a robust mix) and seed, in one process with the cache emptied
before every run:

1. the search with the default convergence rule (fabric.search.convergence) and a cap of ``--cap`` evaluations:
   evaluations and generations to converge, wall time, the neighbourhood check (the front's polish to 1-opt, then
   the recommendation's rounds): designs it evaluated, rounds, seconds;
2. the same search run on to ``--long`` evaluations without stopping on convergence: the converged front's
   hypervolume in % of the long run's (same seed, so the same reference point) and whether both recommend the same
   design (same cost and p99; "key": the very same design);
3. the converged search again with a p99 target at its recommendation's p99 and a budget at its cost, with the
   target alone and with the budget alone: the same recommendation or not;
4. ``--short`` evaluations (the dashboard's default 300) as before this change (no neighbourhood check) and now:
   converged or not, and the constrained run of 3 for each.

Run: python benchmarks/bench_convergence.py [--cases mixtral-256,mixtral-1024,llama-1024,robust-256]
     [--seeds 0,1,2] [--threshold 0.001 --window 5] [--long 3000] [--short 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

from fabric.search import GLOBAL_CACHE, Constraints, run_search
from fabric.search.convergence import ConvergenceRule
from fabric.search.recommend import recommend
from fabric.workload.ingest import ingest

ROOT = Path(__file__).resolve().parent.parent


def _sample(name: str):
    path = ROOT / "sample_traces" / name
    return ingest([(path.name, path.read_bytes())]).workload


def case(name: str):
    """(workload or objective, GPUs) of a case name."""
    if name == "robust-256":
        from fabric.search.robust import RobustObjective
        from fabric.workload.presets import preset_workload

        return RobustObjective((("mixtral-8x7b", _sample("mixtral-8x7b.json"), 1.0),
                                ("llama3-70b", preset_workload("llama3-70b", 256), 1.0)), mode="worst"), 256
    sample, gpus = name.rsplit("-", 1)
    return _sample({"mixtral": "mixtral-8x7b.json", "llama": "llama3-70b.json"}[sample]), int(gpus)


def _run(wl, cons, **kw):
    GLOBAL_CACHE.clear()
    t0 = time.perf_counter()
    res = run_search(wl, cons, **kw)
    return res, time.perf_counter() - t0


def _rec(res, cons):
    return recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s).record


def _same(a, b) -> str:
    if a is None or b is None:
        return "none" if a is b else "DIFFERENT (one front is empty)"
    if a["key"] == b["key"]:
        return "same design"
    if a["cost_usd"] == b["cost_usd"] and a["p99_s"] == b["p99_s"]:
        return "same cost and p99 (a tie)"
    return f"DIFFERENT: ${a['cost_usd']:,.0f} at {a['p99_s']:.4f} s vs ${b['cost_usd']:,.0f} at {b['p99_s']:.4f} s"


def _constrained_same(wl, cons, res, limits="p99 target and budget", **kw) -> str:
    a = _rec(res, cons)
    if a is None:
        return "no recommendation"
    tight = dataclasses.replace(cons, p99_target_s=a["p99_s"] if "p99" in limits else None,
                                budget_usd=a["cost_usd"] if "budget" in limits else None)
    again, _ = _run(wl, tight, **kw)
    return _same(a, _rec(again, tight))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="mixtral-256,mixtral-1024,llama-1024,robust-256")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threshold", type=float, default=None, help="convergence threshold (default: the rule's)")
    ap.add_argument("--window", type=int, default=None, help="convergence window in generations")
    ap.add_argument("--cap", type=int, default=3000, help="evaluation cap of the converging search")
    ap.add_argument("--long", type=int, default=3000, help="evaluations of the long reference run (0: skip)")
    ap.add_argument("--short", type=int, default=300, help="evaluations of the short runs (0: skip)")
    args = ap.parse_args()
    base = ConvergenceRule()
    rule = ConvergenceRule(args.threshold or base.threshold, args.window or base.window)
    print(f"rule: {rule.words}; load average {os.getloadavg()[0]:.2f}")
    for name in args.cases.split(","):
        wl, gpus = case(name)
        cons = Constraints(gpus=gpus)
        for seed in (int(s) for s in args.seeds.split(",")):
            res, dt = _run(wl, cons, budget_evals=args.cap, seed=seed, convergence=rule)
            nb = res.neighbourhood
            ga = res.evaluations - nb.get("evaluated", 0)
            front = (f"front polish {nb.get('front_evaluated', 0)} designs in {nb.get('front_rounds', 0)} rounds"
                     f"{' (1-opt)' if nb.get('front_one_opt') else ''}, " if nb.get("front_one_opt") is not None
                     else "")
            print(f"{name} seed {seed}: {res.status}, {ga:,} evaluations in {res.generations} generations "
                  f"(+{nb.get('evaluated', 0)} by the neighbourhood check), {dt:.1f} s; check: {front}"
                  f"recommendation {nb.get('rounds', 0)} rounds, {nb.get('checked', 0)} neighbours looked at, "
                  f"moves {len(nb.get('moves', []))}; {nb.get('seconds', 0.0):.2f} s "
                  f"({100 * nb.get('seconds', 0.0) / dt:.0f} % of the search)", flush=True)
            if args.long:
                long, dt_long = _run(wl, cons, budget_evals=args.long, seed=seed, stop_on_convergence=False)
                hv, hv_long = res.hv_history[-1]["hypervolume"], long.hv_history[-1]["hypervolume"]
                print(f"    vs {long.evaluations:,} evaluations ({dt_long:.1f} s): hypervolume {100 * hv / hv_long:.3f} %"
                      f", recommendation: {_same(_rec(res, cons), _rec(long, cons))}", flush=True)
            for limits in ("p99 target and budget", "p99 target", "budget"):
                same = _constrained_same(wl, cons, res, limits, budget_evals=args.cap, seed=seed, convergence=rule)
                print(f"    {limits} at its recommendation: {same}", flush=True)
            if args.short:
                for label, kw in (("as before (no check, no stop on convergence)",
                               dict(check_neighbourhood=False, stop_on_convergence=False)), ("now", {})):
                    short, dt_s = _run(wl, cons, budget_evals=args.short, seed=seed, **kw)
                    same = _constrained_same(wl, cons, short, budget_evals=args.short, seed=seed, **kw)
                    print(f"    {args.short} evaluations {label}: {short.status} ({short.evaluations:,} evaluations, "
                          f"{dt_s:.1f} s); p99 target and budget at its recommendation: {same}", flush=True)


if __name__ == "__main__":
    main()
