"""What request-level serving latency adds to an evaluation (docs/serving.md).

Run: python benchmarks/bench_serving.py [--repeats N]
For each serving preset on a 1:1 fat tree: the warm evaluation time (median of the repeats, 256 samples) of the
job without its request structure (the op times only), with it (TTFT/TPOT from 16,384 simulated requests: what a
search pays per design), and with the latency-versus-load curve as well (what the Design page and ``fabric
evaluate`` pay), plus the p99s; then the cost of the colocated prefill timeline alone
(``fabric.evaluate.serving.decode_end_times`` over 32 launches of 512 requests, what the TPOT tail adds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from fabric.design import Design  # noqa: E402
from fabric.evaluate import evaluate  # noqa: E402
from fabric.workload.presets import preset_workload  # noqa: E402

CASES = (("llama3-70b-online", 256), ("llama3-70b-disagg", 256), ("deepseek-v3-ep-decode", 640))


def _median(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"{'preset':24s} {'GPUs':>5s} {'ops only ms':>12s} {'+ requests ms':>14s} {'+ curve ms':>11s} "
          f"{'p99 TTFT ms':>12s} {'p99 TPOT ms':>12s}")
    for name, gpus in CASES:
        wl = preset_workload(name, gpus=gpus)
        bare = wl.with_jobs([replace(j, serving=None, ops=tuple(replace(o, phase=None) for o in j.ops))
                             for j in wl.jobs])
        design = Design(name="fat tree", gpus=gpus)
        t_bare = _median(lambda: evaluate(design, bare), args.repeats)
        t_req = _median(lambda: evaluate(design, wl), args.repeats)
        t_curve = _median(lambda: evaluate(design, wl, serving_curve=True), args.repeats)
        m = evaluate(design, wl).serving[wl.jobs[0].name]
        print(f"{name:24s} {gpus:5d} {t_bare * 1e3:12.1f} {t_req * 1e3:14.1f} {t_curve * 1e3:11.1f} "
              f"{m['ttft_s']['p99'] * 1e3:12.1f} {m['tpot_s']['p99'] * 1e3:12.2f}")
    import numpy as np

    from fabric.evaluate.serving import MAX_LAUNCHES, REQUESTS_PER_LAUNCH, decode_end_times

    rng = np.random.default_rng(0)        # llama3-70b-online's replica: 7.2 requests/s, 56 ms prefills, 1.8 s decodes
    arr = np.cumsum(rng.exponential(1 / 7.2, size=(MAX_LAUNCHES, REQUESTS_PER_LAUNCH)), axis=1)
    work = np.full(REQUESTS_PER_LAUNCH, 1.81)
    t_tl = _median(lambda: [decode_end_times(a + 0.056, work, a, a + 0.056, 0.4) for a in arr], args.repeats)
    print(f"colocated prefill timeline ({MAX_LAUNCHES} x {REQUESTS_PER_LAUNCH} requests): {t_tl * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
