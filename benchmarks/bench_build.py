"""Time to build and cost fabrics of 1,024 / 16,384 / 131,072 GPUs (target: 16,384 GPUs well under 1 s).

Run: python benchmarks/bench_build.py [--repeats N]
Prints, per family and size: switches, links, median build time, median bill-of-materials time, peak memory.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from fabric.cost import bill_of_materials
from fabric.design import Design
from fabric.topology import build_fabric

SIZES = (1024, 16384, 131072)
FAMILIES = {
    "clos": dict(family="clos"),
    "rail_optimized": dict(family="rail_optimized"),
    "rail_only": dict(family="rail_only"),
    "dual_plane": dict(family="rail_optimized", planes=2, nic_model="nic-2x200-dual"),
    "dragonfly": dict(family="dragonfly"),
}
BASE = dict(switch_model="eth-51t-64x800", nic_model="nic-eth-400", transport="roce")


def _time(fn, repeats):
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"{'family':15s} {'GPUs':>8s} {'tiers':>5s} {'switches':>9s} {'links':>9s} {'build ms':>9s} "
          f"{'BOM ms':>8s} {'peak MiB':>9s}")
    for fam, kw in FAMILIES.items():
        for n in SIZES:
            design = Design(gpus=n, **{**BASE, **kw})
            t_build, fab = _time(lambda: build_fabric(design), args.repeats)
            t_bom, _ = _time(lambda: bill_of_materials(fab), args.repeats)
            tracemalloc.start()
            bill_of_materials(build_fabric(design))
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"{fam:15s} {n:8,d} {fab.tiers:5d} {sum(fab.switch_counts().values()):9,d} {fab.n_links:9,d} "
                  f"{t_build * 1e3:9.1f} {t_bom * 1e3:8.1f} {peak / 2**20:9.1f}")


if __name__ == "__main__":
    main()
