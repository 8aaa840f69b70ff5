"""Fit the GEMM efficiency curve of fabric.workload.compute_model to published GEMM rates, and print how well it fits.

The curve: efficiency = e_max / (1 + (w0 / (M N K)^(1/3))^a) with M the rows times the batch. ``e_max`` is each GPU's
best published BF16 matmul rate over its dense peak (the "maximum achievable matmul FLOPS" table of
stas00/ml-engineering: A100 SXM 271.2 of 312, H100 SXM 794.5 of 989, B200 1,745 of 2,250, GB200 1,822 of 2,500
TFLOP/s); ``w0`` and ``a`` are fitted to the size-dependent points of benchmarks/data/gemm_published.csv (XLA's
GPU cost-model table for H100 and B200, and cuBLAS's B200 points) by least squares on the log of the rate.

Run: python benchmarks/fit_gemm.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

DATA = Path(__file__).resolve().parent / "data" / "gemm_published.csv"
PEAK = {"h100": 989e12, "b200": 2250e12}
E_MAX = {"h100": 794.5 / 989, "b200": 1745.0 / 2250}


def load() -> dict:
    rows: dict = {}
    with open(DATA) as fh:
        for r in csv.DictReader(line for line in fh if not line.startswith("#")):
            rows.setdefault(r["gpu"], []).append((float(r["b"]) * float(r["m"]), float(r["n"]), float(r["k"]),
                                                  float(r["tflops"]) * 1e12))
    return rows


def curve(w0: float, a: float, e_max: float, m, n, k):
    return e_max / (1.0 + (w0 / np.cbrt(m * n * k)) ** a)


def fit(points: list, peak: float, e_max: float) -> tuple[float, float, np.ndarray]:
    m, n, k, rate = (np.array(x) for x in zip(*points))
    eff = rate / peak
    res = least_squares(lambda p: np.log(curve(p[0], p[1], e_max, m, n, k)) - np.log(eff), [1500.0, 2.5],
                        bounds=([1.0, 0.1], [1e6, 10.0]))
    err = curve(res.x[0], res.x[1], e_max, m, n, k) / eff - 1.0
    return float(res.x[0]), float(res.x[1]), err


def main() -> None:
    from fabric.workload.compute_model import ROOFLINES

    for gpu, points in load().items():
        w0, a, err = fit(points, PEAK[gpu], E_MAX[gpu])
        used = ROOFLINES[gpu]
        print(f"{gpu}: {len(points)} points; fitted w0 {w0:,.0f}, a {a:.2f} (e_max {E_MAX[gpu]:.3f}); error of the "
              f"rate: median {np.median(abs(err)):.1%}, 90th percentile {np.percentile(abs(err), 90):.1%}, "
              f"max {abs(err).max():.1%}; compute_model uses w0 {used['gemm_w0']:,.0f}, a {used['gemm_a']:.2f}")
        for size in (2048, 4096, 8192):
            print(f"    {size}^3: {curve(w0, a, E_MAX[gpu], size, size, size) * PEAK[gpu] / 1e12:,.0f} TFLOP/s")


if __name__ == "__main__":
    main()
