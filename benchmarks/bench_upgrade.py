"""Time of an upgrade search and of a growth plan (docs/upgrade.md, "Speed").

Run: python benchmarks/bench_upgrade.py [--repeats N]
Prints: the upgrade search of the installed 1,024-GPU 2:1 fat tree (examples/installed-2to1.yaml) on the Mixtral
sample (two-round and exhaustive policies; with failures), and the 1,024 -> 4,096 -> 16,384 growth plan: options,
evaluations, median wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from fabric.brownfield import GrowthStage, UpgradeLimits, load_installed, plan_growth, upgrade_front
from fabric.cli.common import load_workload_files
from fabric.workload.scale import scale_to

ROOT = Path(__file__).resolve().parent.parent


def _time(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    w = load_workload_files([str(ROOT / "sample_traces" / "mixtral-8x7b.json")])
    inst = load_installed(ROOT / "examples" / "installed-2to1.yaml")
    limits = UpgradeLimits(budget_usd=1_500_000)
    for name, kw in (("two-round policies", {}), ("every policy on every hardware", {"policies": "all"}),
                     ("two-round, with worst single failure", {"failures": True})):
        t, res = _time(lambda: upgrade_front(inst, w, limits, **kw), args.repeats if not kw.get("failures") else 1)
        c = res.counts
        print(f"upgrade 1,024 GPUs 2:1, {name}: {c['hardware_options']} hardware options, {c['evaluations']} "
              f"evaluations, front {len(res.front)}: {t:.2f} s")
    stages = [GrowthStage(g, scale_to(w, g)) for g in (1024, 4096, 16384)]
    t, plan = _time(lambda: plan_growth(stages, samples=64), args.repeats)
    n = sum(len(c) for c in plan.candidates)
    print(f"growth plan 1,024 -> 4,096 -> 16,384 GPUs: {n} qualifying candidates: {t:.2f} s")


if __name__ == "__main__":
    main()
