"""fabric beside ASTRA-sim 2.x on the same exported design and workload (issue 38 item 5).

For each case the design and job are exported (fabric.validate.astra_sim), the export's Chakra traces are read back
through fabric's own Chakra parser (the round trip: same ops, sizes and counts), and both tools time the step:

- fabric: the evaluator's p50 and p99 step on the read-back workload (no overlap, like the traces) and, for the
  training step, on the original workload (with the overlap the traces cannot carry);
- ASTRA-sim: the analytical congestion-unaware backend on the export (slowest rank's finishing time).

Cases: a 1 GiB all-reduce on 1,024 H100 (rail-optimised Clos, leaves 1:1 and 2:1), and one training
step of the Mixtral-8x7B and Llama-3-70B presets on 1,024 H100.

ASTRA-sim is not part of the project: build it from its public repository outside the project and point
FABRIC_ASTRA_SIM at ``AstraSim_Analytical_Congestion_Unaware`` (docs/cabling.md, "Simulator export"). Without it
the script prints fabric's figures and the export sizes and says that ASTRA-sim was not run.

    FABRIC_ASTRA_SIM=/path/to/AstraSim_Analytical_Congestion_Unaware python benchmarks/bench_astra_sim.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabric.design.schema import Design  # noqa: E402
from fabric.evaluate.engine import step_time_stats  # noqa: E402
from fabric.validate.astra_sim import astra_network, astra_sim_binary, run_astra_sim, write_astra_sim  # noqa: E402
from fabric.workload.ingest import ingest_paths  # noqa: E402
from fabric.workload.model import CommOp, Job, ProcessGroup, Workload  # noqa: E402
from fabric.workload.presets import preset_workload  # noqa: E402


def _allreduce(gpus: int, nbytes: int) -> Workload:
    job = Job(name=f"all-reduce {nbytes / 2**30:g} GiB", world_size=gpus,
              groups=(ProcessGroup("world", gpus, "dp", rank_start=0, rank_stride=1),),
              ops=(CommOp("all_reduce", nbytes, "world"),), compute_time_s=0.0)
    return Workload(jobs=(job,), name=job.name)


def _case(label: str, design: Design, workload: Workload, binary, samples: int, with_original: bool) -> None:
    job = workload.training_jobs[0]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        write_astra_sim(design, workload, tmp)
        t_export = time.perf_counter() - t0
        files = sorted(Path(tmp, "workload").iterdir())
        size = sum(p.stat().st_size for p in files)
        back = ingest_paths(files).workload
        same = sorted((o.kind, o.bytes, round(o.count_per_step, 6)) for o in job.ops if o.kind not in ("reduce", "barrier")) \
            == sorted((o.kind, o.bytes, round(o.count_per_step, 6)) for o in back.jobs[0].ops)
        st = step_time_stats(design, back, samples=samples)
        net = astra_network(design, job.world_size)
        print(f"{label}")
        print(f"   ASTRA-sim network: {', '.join(f'{t} {n} @ {b:.1f} GB/s' for t, n, b in zip(net.topology, net.npus_count, net.bandwidth_gbps))}"
              + (f" ({'; '.join(net.notes)})" if net.notes else ""))
        print(f"   export: {len(files) - 1:,} traces, {size / 1e6:.1f} MB, {t_export:.1f} s; read back: ops, sizes and "
              f"counts {'equal' if same else 'DIFFER'}")
        print(f"   fabric (read-back workload, no overlap): p50 {st['p50'] * 1e3:.3f} ms, p99 {st['p99'] * 1e3:.3f} ms")
        if with_original:
            so = step_time_stats(design, workload, samples=samples)
            print(f"   fabric (original workload, with its overlap): p50 {so['p50'] * 1e3:.3f} ms, "
                  f"p99 {so['p99'] * 1e3:.3f} ms")
        if binary is None:
            print("   ASTRA-sim: not run (FABRIC_ASTRA_SIM does not name an executable binary)")
            return
        r = run_astra_sim(tmp, binary)
        print(f"   ASTRA-sim: step {r['step_s'] * 1e3:.3f} ms ({r['ranks']:,} ranks finished, {r['wall_s']:.1f} s wall); "
              f"ASTRA-sim / fabric p50 = {r['step_s'] / st['p50']:.3f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--skip-llama", action="store_true", help="leave out the Llama-3-70B step (3,200 nodes a rank)")
    a = ap.parse_args(argv)
    binary = astra_sim_binary()
    print(f"ASTRA-sim binary: {binary or 'none (set FABRIC_ASTRA_SIM)'}; fabric samples {a.samples}")
    gpus = 1024
    rail = Design(name="rail-optimised clos 1:1", gpus=gpus, family="rail_optimized")
    tor2 = Design(name="rail-optimised clos 2:1", gpus=gpus, family="rail_optimized", oversubscription=(2.0, 1.0))
    ar = _allreduce(gpus, 2 ** 30)
    _case(f"1 GiB all-reduce, {gpus:,} H100, {rail.name}", rail, ar, binary, a.samples, False)
    _case(f"1 GiB all-reduce, {gpus:,} H100, {tor2.name}", tor2, ar, binary, a.samples, False)
    _case(f"one training step, Mixtral-8x7B preset, {gpus:,} H100, {rail.name}", rail,
          preset_workload("mixtral-8x7b", gpus), binary, a.samples, True)
    if not a.skip_llama:
        _case(f"one training step, Llama-3-70B preset, {gpus:,} H100, {rail.name}", rail,
              preset_workload("llama3-70b", gpus), binary, a.samples, True)


if __name__ == "__main__":
    main()
