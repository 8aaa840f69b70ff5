"""Nearest-rank percentiles of measured samples (the evaluator's rule: each percentile is one of the samples)."""

from __future__ import annotations

import math

__all__ = ["nearest_rank", "distribution"]


def nearest_rank(samples, q: float) -> float:
    """The ``q``-th percentile (0 < q <= 100) by the nearest-rank rule: the ceil(q/100 * n)-th smallest sample.

    >>> nearest_rank([4.0, 1.0, 3.0, 2.0], 50)
    2.0
    """
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("no samples")
    if not 0 < q <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {q}")
    k = max(math.ceil(q / 100.0 * len(xs) - 1e-9), 1)
    return xs[k - 1]


def distribution(samples) -> dict:
    """{"p50", "p95", "p99", "mean", "min", "max", "n"} of the samples (seconds in, seconds out)."""
    xs = [float(x) for x in samples]
    if not xs:
        raise ValueError("no samples")
    return {"p50": nearest_rank(xs, 50), "p95": nearest_rank(xs, 95), "p99": nearest_rank(xs, 99),
            "mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs), "n": len(xs)}
