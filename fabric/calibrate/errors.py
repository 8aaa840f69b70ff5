"""Error measures of predicted against measured times.

``error`` of a point is ``predicted / measured - 1`` (signed). The headline figure is the **geomean error**
``exp(mean |ln(predicted / measured)|) - 1``: the geometric mean of the ratio by which predictions miss, which treats
a 2x overestimate like a 2x underestimate and cannot be pulled to zero by one lucky point. The geometric mean of
``|error|`` (a definition some papers use; always lower, often much lower) is reported beside it as
``geomean_abs_error``. Targets (issue 7) are stated on the headline figure for sizes of at least 1 MB.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LARGE_BYTES", "error_summary", "geomean_error"]

#: "Large" messages for the targets: at least 1 MB (10^6 bytes; the first power of two above is 1 MiB).
LARGE_BYTES = 1_000_000


def geomean_error(predicted, measured) -> float:
    """exp(mean |ln(predicted / measured)|) - 1 (NaN for no points)."""
    p = np.asarray(predicted, float)
    m = np.asarray(measured, float)
    if p.size == 0:
        return float("nan")
    return float(math.expm1(np.mean(np.abs(np.log(p / m)))))


def error_summary(predicted, measured, sizes) -> dict:
    """Geomean error over all points and over sizes >= 1 MB, mean/max |error|, geomean |error|, counts."""
    p = np.asarray(predicted, float)
    m = np.asarray(measured, float)
    s = np.asarray(sizes, float)
    big = s >= LARGE_BYTES
    err = np.abs(p / m - 1.0) if p.size else np.zeros(0)
    nz = err[err > 0]
    return {
        "points": int(p.size),
        "geomean_error": geomean_error(p, m),
        "points_ge_1mb": int(big.sum()),
        "geomean_error_ge_1mb": geomean_error(p[big], m[big]),
        "mean_abs_error": float(err.mean()) if err.size else float("nan"),
        "max_abs_error": float(err.max()) if err.size else float("nan"),
        "geomean_abs_error": float(np.exp(np.mean(np.log(nz)))) if nz.size else (0.0 if err.size else float("nan")),
    }
