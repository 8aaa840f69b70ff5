"""A small bounded Levenberg-Marquardt least-squares solver (numpy only).

The calibration fits a handful of parameters (at most ~10) to at most a few hundred residuals, so a dense
forward-difference Jacobian and a damped Gauss-Newton step are enough. Bounds are box constraints applied by
projection (the fit works on log-parameters, where boxes are natural).
"""

from __future__ import annotations

import numpy as np

__all__ = ["least_squares"]


def _jacobian(fun, x, r, lo, hi, h=1e-6):
    J = np.empty((r.size, x.size))
    for j in range(x.size):
        step = h if x[j] + h <= hi[j] else -h
        xp = x.copy()
        xp[j] += step
        J[:, j] = (fun(xp) - r) / step
    return J


def least_squares(fun, x0, lo, hi, *, max_iter: int = 300, tol: float = 1e-13):
    """Minimise ``sum(fun(x)**2)`` for ``lo <= x <= hi``; returns ``(x, cost, jacobian at x)``."""
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    x = np.clip(np.asarray(x0, float), lo, hi)
    r = fun(x)
    cost = float(r @ r)
    lam = 1e-3
    for _ in range(max_iter):
        J = _jacobian(fun, x, r, lo, hi)
        g = J.T @ r
        H = J.T @ J
        improved = False
        while lam < 1e12:
            A = H + lam * np.diag(np.diag(H) + 1e-12)
            try:
                step = np.linalg.solve(A, -g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            xn = np.clip(x + step, lo, hi)
            rn = fun(xn)
            cn = float(rn @ rn)
            if cn < cost:
                gain = cost - cn
                x, r, cost = xn, rn, cn
                lam = max(lam / 3.0, 1e-12)
                improved = True
                break
            lam *= 4.0
        if not improved or gain <= tol * max(cost, 1e-300):
            break
    return x, cost, _jacobian(fun, x, r, lo, hi)
