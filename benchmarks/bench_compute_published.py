"""Each plan at its own compute speed, held against published training throughput (issue 36, item 2): the table of
fabric.validate.training_published (sources and configurations there), fabric against each published figure.

Run: python benchmarks/bench_compute_published.py [--samples 64] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from fabric.validate.training_published import SPLIT_STUDY, published_runs, reproduce, split_study  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--only", help="run the cases whose name contains this")
    args = ap.parse_args()
    rows = [c for c in published_runs() if not args.only or args.only.lower() in c.name.lower()]
    print(f"{'case':40s} {'published':>12s} {'fabric':>12s} {'error':>8s} {'compute':>9s} {'step':>9s}")
    within = 0
    for c in rows:
        t0 = time.perf_counter()
        r = reproduce(c, args.samples)
        fmt = (lambda v: f"{v:.3g} s") if c.unit == "s" else (lambda v: f"{v:.0f} TF/s") if c.unit == "TFLOP/s" \
            else (lambda v: f"{v:.1%} MFU")
        within += abs(r["err"]) <= 0.10
        print(f"{c.name:40s} {fmt(c.published):>12s} {fmt(r['got']):>12s} {r['err']:+8.1%} {r['compute_s']:8.2f}s "
              f"{r['step_s']:8.2f}s  ({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"within 10 % of the published figure: {within} of {len(rows)}")
    if not args.only:
        print(f"best split of {SPLIT_STUDY['model'][0]} on {SPLIT_STUDY['gpus']} A100 (Narayanan et al., Figure 13; "
              f"published best (PP, TP) = {SPLIT_STUDY['published_best']}):")
        for batch, row in split_study(args.samples).items():
            best = min(row, key=row.get)
            print(f"  batch {batch}: " + ", ".join(f"{k}: {v:.2f} s" for k, v in row.items()) + f"; fabric's best {best}")


if __name__ == "__main__":
    main()
