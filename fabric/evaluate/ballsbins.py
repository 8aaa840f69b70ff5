"""Most-loaded path under ECMP: the distribution of the maximum bin load when k flows hash onto n equal paths.

A bulk-synchronous collective ends when its most loaded path does; with per-flow hashing that is the maximum
load of k balls thrown uniformly into n bins (facts.md section 3). The exact distribution:

    P(max <= m) = P(X_1..X_n <= m | sum X_i = k),  X_i iid Poisson(k/n)
                = [y^k] (sum_{j<=m} pois(j) y^j)^n / pois_{k}(k)

(the multinomial is Poissons conditioned on their sum). The polynomial power is taken by FFT-based repeated
squaring truncated at degree k; beyond ``EXACT_MAX_BALLS`` balls the bins are treated as independent binomials,
P(max <= m) ~ Binomial(k, 1/n).cdf(m)^n, which tests show within 1 % of the exact mean and on the exact tail
quantiles there. Results are cached per (k, n).

Maxima over L independent groups (L leaves with the same k and n) are drawn from P(max <= m)^L by inversion.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

__all__ = ["max_load_cdf", "sample_max_load", "expected_max_load", "EXACT_MAX_BALLS", "MaxLoad"]

#: Above this many balls the Gaussian approximation replaces the exact computation.
EXACT_MAX_BALLS = 1024


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


class MaxLoad(NamedTuple):
    """``cdf[i] = P(max bin load <= offset + i)``; below ``offset`` the probability is 0 (or negligible)."""

    offset: int
    cdf: np.ndarray


@lru_cache(maxsize=4096)
def max_load_cdf(k: int, n: int) -> MaxLoad:
    """Distribution of the maximum bin load of k balls in n bins, on the window of loads that matter."""
    if k <= 0:
        return MaxLoad(0, np.ones(1))
    if n <= 1:
        return MaxLoad(k, np.ones(1))
    lam = k / n
    if k > EXACT_MAX_BALLS:
        return _binomial_power_cdf(k, n)
    j = np.arange(k + 1, dtype=float)
    pois = np.exp(_log_pois(j, lam))
    denom = math.exp(float(_log_pois(np.array([float(k)]), float(k))[0]))
    cdf = np.zeros(k + 1)
    lo = max(int(math.ceil(lam)), 0)
    cdf[:lo] = 0.0
    # beyond 12 standard deviations above the mean the remaining mass is negligible (and FFT noise can keep the
    # computed value a hair below 1, so stop there rather than wait for it)
    hi = min(k, int(math.ceil(lam + 12.0 * math.sqrt(lam) + 12)))
    for m in range(lo, hi + 1):
        coeffs = _poly_pow(pois[: m + 1], n, k)
        p = coeffs[k] / denom if coeffs.size > k else 0.0
        cdf[m] = min(max(p, 0.0), 1.0)
        if cdf[m] > 1.0 - 1e-12:
            break
    cdf[m:] = 1.0
    cdf = np.maximum.accumulate(cdf)
    return MaxLoad(lo, cdf[lo: m + 1].copy())


def _binomial_power_cdf(k: int, n: int) -> MaxLoad:
    """P(max <= m) ~ Binomial(k, 1/n).cdf(m)^n, on the window mean +- 14 standard deviations."""
    from math import lgamma

    p = 1.0 / n
    lam = k * p
    sd = math.sqrt(lam * (1.0 - p))
    lo = max(0, int(math.floor(lam - 14.0 * sd)) - 2)
    hi = min(k, int(math.ceil(lam + 14.0 * sd)) + 14)
    j = np.arange(lo, hi + 1, dtype=float)
    log_lo = lgamma(k + 1) - lgamma(lo + 1) - lgamma(k - lo + 1) + lo * math.log(p) + (k - lo) * math.log(1 - p)
    # log pmf by the ratio pmf(j+1)/pmf(j) = (k-j)/(j+1) * p/(1-p), accumulated from lo
    steps = np.log((k - j[:-1]) / (j[:-1] + 1.0)) + math.log(p / (1.0 - p))
    logpmf = np.concatenate([[log_lo], log_lo + np.cumsum(steps)])
    cdf = np.clip(np.cumsum(np.exp(logpmf)), 0.0, 1.0)
    cdf[-1] = 1.0
    with np.errstate(under="ignore"):
        cdf = np.maximum.accumulate(cdf ** n)
    # the bins are not independent: k balls in n bins always put at least ceil(k/n) in the busiest one, which the
    # independent-binomial form would otherwise undercut with some probability when n is small
    cdf[j < math.ceil(lam - 1e-9)] = 0.0
    start = int(np.searchsorted(cdf, 1e-300))
    return MaxLoad(lo + start, cdf[start:].copy())


def expected_max_load(k: int, n: int) -> float:
    """E[max bin load] of k balls in n bins."""
    off, cdf = max_load_cdf(k, n)
    return float(off + np.sum(1.0 - cdf[:-1]))


def sample_max_load(k: int, n: int, groups: int, u: np.ndarray) -> np.ndarray:
    """Max over ``groups`` independent (k, n) experiments, one value per uniform in ``u`` (inverse CDF)."""
    off, cdf = max_load_cdf(k, n)
    if groups > 1:
        with np.errstate(under="ignore"):
            cdf = cdf ** groups
    idx = np.searchsorted(cdf, u, side="left")
    return np.minimum(off + idx, k).astype(float)
