"""Distinct values of integer arrays: numpy's ``np.unique`` (a hash table since numpy 2.3 when no index, inverse or
count is asked for) against :func:`fabric.arrays.unique` (one sort), on the shapes the evaluator and the
single-failure rule meet at 131,072 GPUs.

Run: python benchmarks/bench_unique.py
"""

from __future__ import annotations

import time

import numpy as np

from fabric.arrays import unique

CASES = (("600,000 int64 of 10^9 values (switch x server codes)", np.int64, 600_000, 10**9),
         ("600,000 int64 of 7,000 values (switch ids)", np.int64, 600_000, 7_000),
         ("131,072 int64 of 10^6 values", np.int64, 131_072, 10**6),
         ("1,000,000 int8 of 4 values (link kinds: numpy's own)", np.int8, 1_000_000, 4))


def _ms(f, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return 1e3 * sorted(times)[len(times) // 2]


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}; median of 7, ms")
    for name, dt, n, hi in CASES:
        a = rng.integers(0, hi, n).astype(dt)
        assert np.array_equal(unique(a), np.unique(a))
        print(f"  {name}: np.unique {_ms(lambda: np.unique(a)):.1f}, fabric.arrays.unique {_ms(lambda: unique(a)):.1f}")


if __name__ == "__main__":
    main()
