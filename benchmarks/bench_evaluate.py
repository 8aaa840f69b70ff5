"""Time and peak memory of one full evaluation (256 samples) of a 3D-parallel training workload.

Targets on one core of the 2-core machine: 1,024 GPUs <= 20 ms, 16,384 GPUs <= 200 ms, 131,072 GPUs <= 2 s,
peak memory of the 131,072-GPU evaluation <= 2 GiB.

Run: python benchmarks/bench_evaluate.py [--repeats N]
The workload is the synthesizer's Llama-3-70B-style preset (TP 8 x PP 4 x DP) sized to the GPU count; the design
is a rail-optimized 3-tier-capable Clos of 64 x 800G switches at 400G, ECMP with 4 QPs. "cold" is the first
evaluation in the process (it fills the collision-table cache); "warm" is the median of the repeats after it,
which is what a search pays per design.

The second table is the same workload on InfiniBand with in-network reduction (SHARP): 144 x 800G Quantum-X800
class switches at 400G, so the data-parallel all-reduces run on aggregation trees placed over the spines and cores
(fabric/evaluate/innetwork.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import tracemalloc

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from fabric.design import Design  # noqa: E402
from fabric.evaluate import evaluate  # noqa: E402
from fabric.evaluate.ballsbins import max_load_cdf  # noqa: E402
from fabric.workload.presets import preset_workload  # noqa: E402

SIZES = (1024, 16384, 131072)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from fabric.catalog import default_catalog

    default_catalog()  # load the CSV catalog once, as a long-running process has
    for title, extra in (("RoCE, 64 x 800G", {}), ("InfiniBand + SHARP, 144 x 800G", SHARP)):
        print(title)
        _table(args.repeats, extra)
    print("Regions (issue 37): 16,384 GPUs, uniform rail-optimized against two regions (target: <= 1.5x)")
    _regions_table(args.repeats)
    print(f"process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


#: the second table's design changes: InfiniBand with in-network reduction
SHARP = dict(switch_model="ib-xdr-144x800", nic_model="nic-cx7-400", transport="infiniband",
             in_network_reduction=True)


def _table(repeats: int, extra: dict) -> None:
    print(f"{'GPUs':>8s} {'ops':>4s} {'cold ms':>9s} {'warm ms':>9s} {'peak MiB':>9s} {'p99 step s':>11s}")
    for n in SIZES:
        wl = preset_workload("llama3-70b", gpus=n)
        kw = dict(switch_model="eth-51t-64x800", nic_model="nic-eth-400", transport="roce")
        kw.update(extra)
        design = Design(name=f"bench-{n}", gpus=n, family="rail_optimized", routing="ecmp", qps_per_connection=4,
                        placement="rail_aligned", **kw)
        max_load_cdf.cache_clear()
        t0 = time.perf_counter()
        ev = evaluate(design, wl, seed=0)
        cold = time.perf_counter() - t0
        warm = []
        for r in range(repeats):
            t0 = time.perf_counter()
            evaluate(design, wl, seed=r + 1)
            warm.append(time.perf_counter() - t0)
        tracemalloc.start()
        evaluate(design, wl, seed=99)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"{n:8,d} {len(wl.jobs[0].ops):4d} {cold * 1e3:9.1f} {statistics.median(warm) * 1e3:9.1f} "
              f"{peak / 2**20:9.1f} {ev.step_time_s['p99']:11.3f}")


def _regions_table(repeats: int) -> None:
    """The 16,384-GPU case as a uniform rail-optimized design and as two regions of 1,024 servers (A rail-optimized
    1:1, B a 3:1 top-of-rack Clos, joined by a shared core), cold (build included) and warm."""
    from fabric.topology.build import clear_fabric_cache

    n = 16384
    wl = preset_workload("llama3-70b", gpus=n)
    kw = dict(gpus=n, switch_model="eth-51t-64x800", nic_model="nic-eth-400", transport="roce", routing="ecmp",
              qps_per_connection=4, placement="rail_aligned")
    uniform = Design(name="uniform", family="rail_optimized", **kw)
    regions = Design(name="two regions", regions=[
        {"name": "A", "nodes": n // 16, "family": "rail_optimized"},
        {"name": "B", "nodes": n // 16, "family": "clos", "oversubscription": [3, 1]}], **kw)
    print(f"{'design':>12s} {'cold ms':>9s} {'warm ms':>9s} {'switches':>9s} {'links':>9s} {'p99 step s':>11s}")
    times = {}
    for d in (uniform, regions):
        clear_fabric_cache()
        max_load_cdf.cache_clear()
        t0 = time.perf_counter()
        ev = evaluate(d, wl, seed=0)
        cold = time.perf_counter() - t0
        warm = []
        for r in range(repeats):
            t0 = time.perf_counter()
            evaluate(d, wl, seed=r + 1)
            warm.append(time.perf_counter() - t0)
        from fabric.topology import build_fabric

        fab = build_fabric(d)
        times[d.name] = (cold, statistics.median(warm))
        print(f"{d.name:>12s} {cold * 1e3:9.1f} {statistics.median(warm) * 1e3:9.1f} {fab.n_switches:9,d} "
              f"{fab.n_links:9,d} {ev.step_time_s['p99']:11.3f}")
    (uc, uw), (rc, rw) = times["uniform"], times["two regions"]
    print(f"two regions / uniform: cold {rc / uc:.2f}x, warm {rw / uw:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
