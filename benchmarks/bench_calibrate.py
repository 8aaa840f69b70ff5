"""Calibration on every nccl-tests file in ../shared/traces: the tables of docs/validation.md, and fit times.

    python benchmarks/bench_calibrate.py [--traces DIR]

Prints Markdown: in-sample errors per file, the joint six-collective fit, the hold-one-out and fit-on-one
(cross-validation) tables, the fitted values, and the per-op overhead what-if (a diagnostic, not the evaluator).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

from fabric.calibrate import (TARGET_IN_SAMPLE, TARGET_OUT_OF_SAMPLE, cross_validate, fit_profile, load_measurements)

ROOT = Path(__file__).resolve().parent.parent
SUPERBENCH = ["nccl_allgather.log", "nccl_allreduce.log", "nccl_alltoall.log", "nccl_broadcast.log",
              "nccl_reduce.log", "nccl_reducescatter.log"]
EFA = "nccl_debug/aws_efa_eks_p4d_16rank/README.md.nccl-tests-efa-16.log"


def pct(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.1f} %"


def mark(x, target) -> str:
    return pct(x) + ("" if x <= target else " (missed)")


def in_sample_table(files, traces: Path) -> None:
    print("| file | system | points (>= 1 MB) | geomean all | geomean >= 1 MB | max abs | geomean of abs | "
          "target <= 10 % | fit s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rel in files:
        t0 = time.perf_counter()
        res = fit_profile(load_measurements([traces / rel]))
        dt = time.perf_counter() - t0
        s = res.in_sample
        print(f"| `{rel}` | {res.system.name} | {s['points']} ({s['points_ge_1mb']}) | {pct(s['geomean_error'])} | "
              f"{pct(s['geomean_error_ge_1mb'])} | {pct(s['max_abs_error'])} | {pct(s['geomean_abs_error'])} | "
              f"{'met' if s['geomean_error_ge_1mb'] <= TARGET_IN_SAMPLE else 'missed'} | {dt:.2f} |")


def fitted_table(files, traces: Path) -> None:
    print("| file | efficiency (> 16 MiB) | alpha per step (<= 64 KiB) | regime: efficiency scale / alpha scale / "
          "per-call overhead |")
    print("|---|---|---|---|")
    for rel in files:
        res = fit_profile(load_measurements([traces / rel]))
        eff, alpha = res.parameters[:2]
        reg = "; ".join(f"{r['regime']}: {r['efficiency_scale']:.3g}{'' if _ident(res, 'efficiency_scale', r) else '*'}"
                        f" / {r['alpha_scale']:.3g} / {r['op_overhead_s'] * 1e6:.1f} us" for r in res.regimes)
        print(f"| `{rel.split('/')[-1]}` | {eff['name']} {eff['value']:.3f} | {alpha['name']} "
              f"{alpha['value'] * 1e6:.2f} us | {reg} |")


def _ident(res, name, r) -> bool:
    for p in res.parameters:
        if p["name"] == name and p["regime"] == r["regime"]:
            return p["identified"]
    return True


def joint_and_holdout(ms) -> None:
    kinds = ms.kinds()
    res = fit_profile(ms)
    print("Joint fit on all six collectives (in sample):\n")
    print("| collective | geomean all | geomean >= 1 MB |")
    print("|---|---|---|")
    for k, s in res.per_kind.items():
        print(f"| {k} | {pct(s['geomean_error'])} | {mark(s['geomean_error_ge_1mb'], TARGET_IN_SAMPLE)} |")
    s = res.in_sample
    print(f"| **all** | {pct(s['geomean_error'])} | {mark(s['geomean_error_ge_1mb'], TARGET_IN_SAMPLE)} |\n")
    print("Hold one out (fit on the other five, predict it):\n")
    print("| held out | geomean all | geomean >= 1 MB | in-sample >= 1 MB of the five |")
    print("|---|---|---|---|")
    for k in kinds:
        r = fit_profile(ms, kinds=tuple(x for x in kinds if x != k))
        o = r.out_of_sample
        print(f"| {k} | {pct(o['geomean_error'])} | {mark(o['geomean_error_ge_1mb'], TARGET_OUT_OF_SAMPLE)} | "
              f"{pct(r.in_sample['geomean_error_ge_1mb'])} |")


def cross_table(ms) -> None:
    cv = cross_validate(ms)
    kinds = list(cv.kinds)
    print("Fit on one collective (rows), geomean error >= 1 MB on each collective (columns; diagonal in sample):\n")
    print("| fit on | " + " | ".join(kinds) + " | worst out of sample |")
    print("|---|" + "---|" * (len(kinds) + 1))
    summ = cv.summary()
    for tr in kinds:
        cells = {r["test"]: r for r in cv.rows if r["train"] == tr}
        row = [(f"*{pct(cells[k]['geomean_error_ge_1mb'])}*" if cells[k]["in_sample"]
                else pct(cells[k]["geomean_error_ge_1mb"])) for k in kinds]
        w = summ[tr]["worst_ge_1mb"]
        print(f"| {tr} | " + " | ".join(row) + f" | {mark(w, TARGET_OUT_OF_SAMPLE)} |")
    print("\nSame, all sizes (geomean error over 29-32 sizes from 4 B to 8 GiB):\n")
    print("| fit on | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for tr in kinds:
        cells = {r["test"]: r for r in cv.rows if r["train"] == tr}
        print(f"| {tr} | " + " | ".join(pct(cells[k]["geomean_error"]) for k in kinds) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=os.environ.get("FABRIC_TRACES_DIR", ROOT.parent / "shared" / "traces"))
    traces = Path(ap.parse_args().traces)
    files = [f"nccl_tests/superbench/{f}" for f in SUPERBENCH] + [EFA]
    print("## In sample, per file\n")
    in_sample_table(files, traces)
    print("\n## Fitted values\n")
    fitted_table(files, traces)
    ms = load_measurements([traces / f for f in files[:6]])
    print("\n## Superbench, all six collectives\n")
    joint_and_holdout(ms)
    print("\n## Cross-validation\n")
    cross_table(ms)


if __name__ == "__main__":
    main()
