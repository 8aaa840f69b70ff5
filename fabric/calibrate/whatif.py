"""Diagnostic: how much a per-op overhead term would help (the evaluator has none; this is not its prediction).

The evaluator's latency is ``steps x alpha`` (2(p-1) steps for a ring all-reduce, p-1 for an all-gather), while
measured NCCL times carry a per-call cost that hardly depends on the step count (launch, protocol set-up,
pipeline fill). Fitted on one collective, ``alpha`` then absorbs that cost in proportion to the steps and
mispredicts collectives with another step count. :func:`overhead_whatif` refits the closed-form model of
:mod:`fabric.calibrate.model` with one extra constant per regime, ``T = max(floor, bandwidth + latency + c_r)``,
and reports the errors of that model: the case for an ``op_overhead_s`` transport parameter, quantified.
"""

from __future__ import annotations

import numpy as np

from fabric.calibrate.data import MeasurementSet, merge_points
from fabric.calibrate.errors import error_summary
from fabric.calibrate.fit import (DEFAULT_REGIME_EDGES, PRIOR_WEIGHT, _check_counts, _initial, _overrides, _params,
                                  _regime_index, regime_labels)
from fabric.calibrate.lsq import least_squares
from fabric.calibrate.model import build_basis
from fabric.calibrate.system import CalibrationError, system_design

__all__ = ["overhead_whatif"]

_C_BOUNDS = (1e-8, 1e-2)


def overhead_whatif(measurements, system=None, *, kinds=None, regimes=DEFAULT_REGIME_EDGES, samples: int = 16,
                    seed: int = 0, catalog=None) -> dict:
    """Fit on ``kinds`` (default all) with a per-regime op overhead; errors per collective of that model."""
    if isinstance(measurements, MeasurementSet):
        system = system or measurements.system
        measurements = measurements.measurements
    points, _ = merge_points(measurements)
    if not points:
        raise CalibrationError("no measured points")
    present = tuple(dict.fromkeys(p.kind for p in points))
    fit_kinds = tuple(kinds) if kinds else present
    edges = tuple(sorted(int(e) for e in regimes))
    sizes = np.array([p.bytes for p in points], float)
    regime_of = _regime_index(sizes, edges)
    fit_idx = np.flatnonzero([p.kind in fit_kinds for p in points])
    populated = _check_counts([points[i] for i in fit_idx], regime_of[fit_idx], edges)
    design, cat = system_design(system, catalog)
    basis = build_basis(design, cat, points, samples=samples, seed=seed)
    measured = np.array([p.time_s for p in points])
    params = _params(system.level, basis.reference, populated)
    n = len(params)
    slot = np.array([populated.index(next((q for q in populated if q >= r), populated[-1]))
                     for r in regime_of])
    prior = np.r_[np.log([p.prior for p in params]), np.log([1e-5] * len(populated))]
    lo = np.r_[np.log([p.lo for p in params]), [np.log(_C_BOUNDS[0])] * len(populated)]
    hi = np.r_[np.log([p.hi for p in params]), [np.log(_C_BOUNDS[1])] * len(populated)]

    def model(x):
        return basis.times(_overrides(params, np.exp(x[:n]), edges, populated), np.exp(x[n:])[slot])

    def residuals(x):
        return np.concatenate([np.log(model(x)[fit_idx] / measured[fit_idx]), PRIOR_WEIGHT * (x - prior)])

    x0 = np.r_[_initial(params, basis, fit_idx, measured, regime_of, populated, system.level),
               np.log([1e-5] * len(populated))]
    x, _, _ = least_squares(residuals, x0, lo, hi)
    t = model(x)
    kinds_arr = np.array([p.kind for p in points])
    labels = regime_labels(edges)
    return {
        "model": "closed form + per-regime op overhead (not the evaluator)",
        "kinds_fitted": list(fit_kinds),
        "overhead_s": {labels[r]: float(c) for r, c in zip(populated, np.exp(x[n:]))},
        "overrides": _overrides(params, np.exp(x[:n]), edges, populated),
        "per_kind": {k: error_summary(t[kinds_arr == k], measured[kinds_arr == k], sizes[kinds_arr == k])
                     for k in present},
    }
