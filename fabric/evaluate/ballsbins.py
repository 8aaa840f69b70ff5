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

Correlated paths (:func:`pair_max_load_cdf`): when k balls leave one leaf for one other leaf over s spines with
b parallel links per leaf-spine pair, a ball's spine is chosen once (at the source leaf, uniformly over its s b
uplinks) and carries it down to the destination leaf, where the spine picks one of its b links. Given the spine
counts c_1..c_s, the uplink bundle and the downlink bundle of spine j split c_j balls independently, so

    P(max over all 2 s b links <= m) = [y^k] (sum_c pois(c) F_b(m | c)^2 y^c)^s / pois_k(k)

with F_b(m | c) = P(max of c balls in b bins <= m) (the same Poisson conditioning as above). With b = 1 the
uplink and downlink loads are equal and this is the plain maximum of k balls in s bins.

Unequal bins (:func:`weighted_max_load_cdf`): when bins are chosen with unequal probabilities (hash polarization,
:mod:`fabric.evaluate.polarization`), groups of ``c_g`` bins of probability ``p_g`` each give

    P(max <= m) = [y^k] prod_g (sum_{j<=m} pois_{k p_g}(j) y^j)^{c_g} / pois_k(k)

by the same conditioning; beyond ``EXACT_MAX_BALLS`` balls, prod_g Binomial(k, p_g).cdf(m)^{c_g}.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

__all__ = ["max_load_cdf", "pair_max_load_cdf", "weighted_max_load_cdf", "sample_max_load", "sample_from_cdf",
           "expected_max_load", "cdf_at", "EXACT_MAX_BALLS", "MaxLoad"]

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


def cdf_at(dist: MaxLoad, m: np.ndarray) -> np.ndarray:
    """``P(max <= m)`` of ``dist`` at integer loads ``m``."""
    off, cdf = dist
    idx = np.asarray(m, dtype=np.int64) - off
    out = np.where(idx >= cdf.size, 1.0, cdf[np.clip(idx, 0, cdf.size - 1)])
    return np.where(idx < 0, 0.0, out)


@lru_cache(maxsize=1024)
def pair_max_load_cdf(k: int, s: int, b: int) -> MaxLoad:
    """Busiest link of k balls from one leaf to one other over s spines with b links per leaf-spine pair.

    The maximum over the source leaf's s b uplinks and the destination leaf's s b downlinks, with each ball's
    spine shared by its uplink and its downlink (see the module docstring).
    """
    if k <= 0:
        return MaxLoad(0, np.ones(1))
    if b <= 1 or s <= 0:
        return max_load_cdf(k, max(s, 1)) if b <= 1 else max_load_cdf(k, b)
    if s == 1:
        # one spine: both bundles split the same k balls independently
        off, cdf = max_load_cdf(k, b)
        return MaxLoad(off, cdf * cdf)
    lam = k / s
    hi_c = min(k, int(math.ceil(lam + 12.0 * math.sqrt(lam) + 12)))
    c = np.arange(hi_c + 1, dtype=float)
    if k > EXACT_MAX_BALLS:
        from math import lgamma

        p = 1.0 / s
        logw = np.array([lgamma(k + 1) - lgamma(x + 1) - lgamma(k - x + 1) for x in c]) \
            + c * math.log(p) + (k - c) * math.log1p(-p)
        weight = np.exp(logw)
        denom = None
    else:
        weight = np.exp(_log_pois(c, lam))
        denom = math.exp(float(_log_pois(np.array([float(k)]), float(k))[0]))
    # F(m | c) = P(max of c balls in b bins <= m) for every c at once: [y^c] (sum_{j<=m} pois_mu(j) y^j)^b divided
    # by pois_{b mu}(c), with b mu = lam (the typical spine count)
    mu = max(lam / b, 1e-9)
    pois_j = np.exp(_log_pois(c, mu))
    den_c = np.exp(_log_pois(c, b * mu))
    lo = max(int(math.ceil(k / (s * b))), 0)
    vals = []
    for m in range(lo, hi_c + 1):
        col = _poly_pow(pois_j[: m + 1], b, hi_c)
        f = np.zeros(hi_c + 1)
        f[: col.size] = col
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.clip(np.where(den_c > 0, f / den_c, 1.0), 0.0, 1.0)
        f[: m + 1] = 1.0
        base = weight * f * f
        if denom is None:
            val = float(np.sum(base)) ** s
        else:
            coeffs = _poly_pow(base, s, k)
            val = coeffs[k] / denom if coeffs.size > k else 0.0
        vals.append(min(max(val, 0.0), 1.0))
        if vals[-1] > 1.0 - 1e-10:
            break
    cdf = np.maximum.accumulate(np.array(vals))
    cdf[-1] = 1.0
    start = int(np.searchsorted(cdf, 1e-300))
    return MaxLoad(lo + start, cdf[start:].copy())


@lru_cache(maxsize=1024)
def weighted_max_load_cdf(k: int, groups: tuple) -> MaxLoad:
    """Distribution of the maximum bin load of k balls thrown independently onto bins of unequal probability.

    ``groups``: ``((count, p), ...)``, ``count`` bins each chosen with probability ``p`` (the p's sum to 1 over all
    bins; bins of probability 0 may be left out). See the module docstring.
    """
    groups = tuple((int(c), float(p)) for c, p in groups if c > 0 and p > 0)
    if k <= 0 or not groups:
        return MaxLoad(0, np.ones(1))
    if len(groups) == 1:
        return max_load_cdf(k, groups[0][0])
    support = sum(c for c, _ in groups)
    p_max = max(p for _, p in groups)
    lam = k * p_max
    lo = int(math.ceil(k / support - 1e-9))
    if k > EXACT_MAX_BALLS:
        from scipy.stats import binom

        hi = min(k, int(math.ceil(lam + 14.0 * math.sqrt(lam) + 14)))
        m = np.arange(lo, hi + 1)
        with np.errstate(under="ignore", divide="ignore"):
            logc = sum(c * np.log(np.clip(binom.cdf(m, k, p), 1e-300, 1.0)) for c, p in groups)
            cdf = np.exp(logc)
        cdf[-1] = 1.0
        cdf = np.maximum.accumulate(cdf)
        start = int(np.searchsorted(cdf, 1e-300))
        return MaxLoad(lo + start, cdf[start:].copy())
    j = np.arange(k + 1, dtype=float)
    pois = [(c, np.exp(_log_pois(j, k * p))) for c, p in groups]
    denom = math.exp(float(_log_pois(np.array([float(k)]), float(k))[0]))
    hi = min(k, int(math.ceil(lam + 12.0 * math.sqrt(lam) + 12)))
    vals = []
    for m in range(lo, hi + 1):
        prod = np.ones(1)
        for c, pj in pois:
            prod = _poly_mul(prod, _poly_pow(pj[: m + 1], c, k), k)
        val = prod[k] / denom if prod.size > k else 0.0
        vals.append(min(max(val, 0.0), 1.0))
        if vals[-1] > 1.0 - 1e-12:
            break
    cdf = np.maximum.accumulate(np.array(vals))
    cdf[-1] = 1.0
    return MaxLoad(lo, cdf)


def sample_from_cdf(dist: MaxLoad, groups: int, u: np.ndarray, cap: int | None = None) -> np.ndarray:
    """Max over ``groups`` independent draws of ``dist``, one value per uniform in ``u`` (inverse CDF)."""
    off, cdf = dist
    if groups > 1:
        with np.errstate(under="ignore"):
            cdf = cdf ** groups
    idx = np.searchsorted(cdf, u, side="left")
    out = off + np.minimum(idx, cdf.size - 1)
    return (out if cap is None else np.minimum(out, cap)).astype(float)


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
