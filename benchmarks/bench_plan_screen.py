"""The plan shortlist's screen: grouped (``fabric.plans.best.screen_plans``) against the exact ranking of every plan.

A plan search (``--plan-space auto``) first ranks the plan space on the 1:1 fat tree probe and passes its best
24 plans to the other probe designs (docs/plans.md, "Inner mode"). The grouped screen ranks one plan per
combination of parallel degrees and then every plan of the 12 best combinations; the exact screen ranks every plan
(``GROUPS = None``). For each case this prints both screens' time, their evaluator calls on the first probe, how
many of the exact top 24 the grouped screen found, and whether the shortlist (what every design is tried at) is the
same.

Run: python benchmarks/bench_plan_screen.py [--samples 256]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from fabric.catalog import default_catalog  # noqa: E402
from fabric.plans import best  # noqa: E402
from fabric.search.plan_space import inner  # noqa: E402
from fabric.plans.basis import basis_from_preset  # noqa: E402
from fabric.search.plan_space.inner import PlanObjective, probe_designs  # noqa: E402
from fabric.plans.space import plan_space  # noqa: E402
from fabric.search import Constraints, DesignSpace  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def cases():
    """(name, objective, constraints): the dashboard's sample workload and the presets at 128-4,096 GPUs."""
    from fabric.ui_support.plans_view import plan_objective
    from fabric.ui_support.workload_view import cluster_gpus
    from fabric.workload.ingest import ingest

    res = ingest([("mixtral-8x7b.json", (ROOT / "sample_traces/mixtral-8x7b.json").read_bytes())])
    cons = Constraints()
    yield ("sample trace mixtral-8x7b", plan_objective(res.workload, None, default_catalog()),
           replace(cons, gpus=cluster_gpus(res.workload, cons.gpus_per_node)))
    for name in ("mixtral-8x7b", "llama3-70b"):
        for gpus in (128, 256, 512, 1024, 2048, 4096):
            yield f"{name} at {gpus:,} GPUs", PlanObjective(basis_from_preset(name, gpus)), replace(cons, gpus=gpus)


def first_probe_counts(obj, space, samples: int) -> tuple[int, int, set, set, int]:
    """Evaluator calls of the grouped and the exact screen on the first probe, their top-24 plan labels and the
    number of plans in the space."""
    d = probe_designs(space)[0]
    sp = plan_space(obj.basis, d.gpu_model, domain=d.domain_size, catalog=space.catalog)
    g = best.screen_plans(d, obj.basis, keep=inner.SCREENED, groups=inner.GROUPS, samples=samples,
                          catalog=space.catalog, space=sp)
    e = best.rank_plans(d, obj.basis, keep=inner.SCREENED, samples=samples, catalog=space.catalog, space=sp,
                        detail=False)
    return g.evaluated, e.evaluated, {r.label for r in g.best}, {r.label for r in e.best}, len(sp.candidates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=256)
    args = ap.parse_args()
    groups = inner.GROUPS
    same = total = 0
    print(f"{'case':30s} {'plans':>5s} {'calls grouped/exact':>20s} {'top 24 found':>13s} "
          f"{'shortlist time grouped/exact':>29s}  same shortlist")
    for name, obj, cons in cases():
        space = DesignSpace(cons, None, obj)
        g_calls, e_calls, g_top, e_top, n = first_probe_counts(obj, space, args.samples)
        short = {}
        times = {}
        for label, value in (("grouped", groups), ("exact", None)):
            inner.GROUPS = value
            t0 = time.perf_counter()
            ready = obj.prepared_for(space, seed=0, samples=args.samples)
            times[label] = time.perf_counter() - t0
            short[label] = [(g, [c.label for c in cs]) for g, cs in ready.shortlist]
        inner.GROUPS = groups
        ok = short["grouped"] == short["exact"]
        same += ok
        total += 1
        print(f"{name:30s} {n:5d} {g_calls:9d} / {e_calls:<8d} {len(g_top & e_top):7d} of {len(e_top):2d} "
              f"{times['grouped']:12.2f} s / {times['exact']:5.2f} s   {'yes' if ok else 'NO'}", flush=True)
        if not ok:
            print(f"    grouped: {short['grouped']}\n    exact:   {short['exact']}")
    print(f"same shortlist in {same} of {total} cases")


if __name__ == "__main__":
    main()
