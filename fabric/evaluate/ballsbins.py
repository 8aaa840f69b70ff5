"""Most-loaded path under ECMP: the distribution of the maximum bin load when k flows hash onto n equal paths.

A bulk-synchronous collective ends when its most loaded path does; with per-flow hashing that is the maximum
load of k balls thrown uniformly into n bins (facts.md section 3). The exact distribution:

    P(max <= m) = P(X_1..X_n <= m | sum X_i = k),  X_i iid Poisson(k/n)
                = [y^k] (sum_{j<=m} pois(j) y^j)^n / pois_{k}(k)

(the multinomial is Poissons conditioned on their sum). The polynomial power is taken by FFT-based repeated
squaring truncated at degree k; beyond ``EXACT_MAX_BALLS`` balls a Gaussian approximation (each bin normal with
mean k/n and variance k/n (1 - 1/n), the maximum of n such) is used. Results are cached per (k, n).

Maxima over L independent groups (L leaves with the same k and n) are drawn from P(max <= m)^L by inversion.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["max_load_cdf", "sample_max_load", "expected_max_load", "EXACT_MAX_BALLS"]

#: Above this many balls the Gaussian approximation replaces the exact computation.
EXACT_MAX_BALLS = 4096


def _poly_mul(a: np.ndarray, b: np.ndarray, deg: int) -> np.ndarray:
    size = min(a.size + b.size - 1, deg + 1)
    if a.size * b.size < 4096:
        out = np.convolve(a, b)[:size]
    else:
        nfft = 1 << int(math.ceil(math.log2(a.size + b.size - 1)))
        out = np.fft.irfft(np.fft.rfft(a, nfft) * np.fft.rfft(b, nfft), nfft)[:size]
    return np.clip(out, 0.0, None)


def _poly_pow(a: np.ndarray, n: int, deg: int) -> np.ndarray:
    result = np.ones(1)
    base = a[: deg + 1]
    while n:
        if n & 1:
            result = _poly_mul(result, base, deg)
        n >>= 1
        if n:
            base = _poly_mul(base, base, deg)
    return result


def _log_pois(j: np.ndarray, lam: float) -> np.ndarray:
    from math import lgamma

    lg = np.array([lgamma(x + 1.0) for x in np.atleast_1d(j)])
    return j * math.log(lam) - lam - lg


@lru_cache(maxsize=4096)
def max_load_cdf(k: int, n: int) -> np.ndarray:
    """``cdf[m] = P(max bin load <= m)`` for m = 0..k (k balls, n bins)."""
    if k <= 0:
        return np.ones(1)
    if n <= 1:
        cdf = np.zeros(k + 1)
        cdf[k] = 1.0
        return cdf
    lam = k / n
    if k > EXACT_MAX_BALLS:
        return _gaussian_cdf(k, n)
    j = np.arange(k + 1, dtype=float)
    pois = np.exp(_log_pois(j, lam))
    denom = math.exp(float(_log_pois(np.array([float(k)]), float(k))[0]))
    cdf = np.zeros(k + 1)
    lo = max(int(math.ceil(lam)), 0)
    cdf[:lo] = 0.0
    for m in range(lo, k + 1):
        coeffs = _poly_pow(pois[: m + 1], n, k)
        p = coeffs[k] / denom if coeffs.size > k else 0.0
        cdf[m] = min(max(p, 0.0), 1.0)
        if cdf[m] > 1.0 - 1e-13:
            cdf[m:] = 1.0
            break
    return np.maximum.accumulate(cdf)


def _gaussian_cdf(k: int, n: int) -> np.ndarray:
    from math import erf, sqrt

    lam = k / n
    sd = math.sqrt(lam * (1.0 - 1.0 / n))
    m = np.arange(k + 1, dtype=float)
    z = (m + 0.5 - lam) / sd
    phi = 0.5 * (1.0 + np.vectorize(erf)(z / sqrt(2.0)))
    return np.clip(phi ** n, 0.0, 1.0)


def expected_max_load(k: int, n: int) -> float:
    """E[max bin load] of k balls in n bins."""
    cdf = max_load_cdf(k, n)
    return float(np.sum(1.0 - cdf[:-1]))


def sample_max_load(k: int, n: int, groups: int, u: np.ndarray) -> np.ndarray:
    """Max over ``groups`` independent (k, n) experiments, one value per uniform in ``u`` (inverse CDF)."""
    cdf = max_load_cdf(k, n)
    if groups > 1:
        with np.errstate(under="ignore"):
            cdf = cdf ** groups
    idx = np.searchsorted(cdf, u, side="left")
    return np.minimum(idx, k).astype(float)
