"""``fit_profile``: transport parameters per message-size regime, fitted to measured collective times.

What is fitted (on top of the design's transport profile, :mod:`fabric.evaluate.transport`):

- the level the measurements exercise: one node -> ``nvlink_efficiency`` and ``nvlink_alpha_s``; several nodes ->
  ``bandwidth_efficiency`` and ``step_alpha_s`` (NVLink stays at the profile's values);
- per message-size regime ``r`` an efficiency scale ``es_r``, a per-call overhead ``oh_r`` and, when the fitted
  collectives take different numbers of steps (the only way to tell per-step from per-call latency), an alpha
  scale ``as_r`` (``regimes`` in the profile: the evaluator divides an op's bandwidth time by ``es``, multiplies
  its latency by ``as`` and adds ``oh`` once per call; NCCL's small-message cost is mostly per call).

Regime edges (:data:`DEFAULT_REGIME_EDGES`): <= 64 KiB, <= 1 MiB, <= 16 MiB, larger; roughly where NCCL moves from
its LL to LL128 to Simple protocols (the exact switch points depend on the NCCL version, ranks and GPU). The base
efficiency is the largest populated regime's (its scale is 1), the base alpha the smallest populated regime's
(its scale is 1); an explicit catch-all regime carries the alpha scale of the largest messages. Regimes without
points take the scales of the nearest populated regime above (below, past the largest).

Fit: minimise the squared log ratio of predicted to measured time over the points (relative error, so 8 B and
8 GiB weigh alike) plus a weak pull (weight :data:`PRIOR_WEIGHT`) of each log-parameter to its prior (profile value,
scale 1) that only matters for directions the data do not determine (e.g. the efficiency of 64-byte messages);
such parameters are flagged ``identified: False``. Bounded Levenberg-Marquardt (:mod:`fabric.calibrate.lsq`)
from a per-regime linear least-squares start. The predictions reported are the evaluator's own
(:func:`fabric.calibrate.model.evaluate_points` with the fitted overrides).

A populated regime needs :data:`MIN_SIZES_PER_REGIME` distinct message sizes, else the fit is refused with the
regime, its count and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.calibrate.data import MeasurementSet, merge_points
from fabric.calibrate.errors import error_summary
from fabric.calibrate.lsq import least_squares
from fabric.calibrate.model import CATCH_ALL_BYTES, build_basis, evaluate_points
from fabric.calibrate.system import CalibrationError, SystemSpec, system_design
from fabric.evaluate.collectives import bus_factor

__all__ = ["DEFAULT_REGIME_EDGES", "MIN_SIZES_PER_REGIME", "PRIOR_WEIGHT", "TARGET_IN_SAMPLE", "TARGET_OUT_OF_SAMPLE",
           "CalibrationResult", "PointResult", "fit_profile", "regime_labels", "format_bytes", "LEVEL_PARAMETERS"]

KiB, MiB = 1024, 1024 ** 2
#: Upper edges (bytes, inclusive) of the message-size regimes; sizes above the last edge form the last regime.
DEFAULT_REGIME_EDGES = (64 * KiB, 1 * MiB, 16 * MiB)
MIN_SIZES_PER_REGIME = 3
PRIOR_WEIGHT = 0.02
#: Issue 7 targets on the geomean error for sizes >= 1 MB.
TARGET_IN_SAMPLE = 0.10
TARGET_OUT_OF_SAMPLE = 0.20
#: (efficiency, alpha) parameter names per level
LEVEL_PARAMETERS = {"nvlink": ("nvlink_efficiency", "nvlink_alpha_s"),
                    "network": ("bandwidth_efficiency", "step_alpha_s")}
_EFF_BOUNDS = (0.01, 2.0)
_ALPHA_BOUNDS = (1e-9, 1e-3)
_SCALE_BOUNDS = (1e-3, 1e3)
#: per-call overhead (kernel launch, proxy progress): a few microseconds; fitted on a log scale, so never exactly 0
_OVERHEAD_PRIOR = 5e-6
_OVERHEAD_BOUNDS = (1e-8, 1e-2)
_IDENTIFIED = 0.05      # a parameter is identified when some point's time moves >= 5 % per 100 % change


def format_bytes(n: float) -> str:
    """1024-based size label: ``64 KiB``, ``1 MiB``, ``8 GiB``, ``512 B``."""
    for unit, div in (("GiB", 1024 ** 3), ("MiB", MiB), ("KiB", KiB)):
        if n >= div and n % div == 0:
            return f"{n / div:g} {unit}"
    return f"{n:g} B"


def regime_labels(edges) -> list[str]:
    """Human labels of the regimes of ``edges``."""
    edges = list(edges)
    if not edges:
        return ["all sizes"]
    labels = [f"<= {format_bytes(edges[0])}"]
    labels += [f"{format_bytes(a)} - {format_bytes(b)}" for a, b in zip(edges, edges[1:])]
    return labels + [f"> {format_bytes(edges[-1])}"]


@dataclass(frozen=True)
class PointResult:
    """One point: measured and predicted time (s) and busbw (bytes/s), signed relative error, regime."""

    kind: str
    bytes: int
    ranks: int
    measured_s: float
    predicted_s: float
    measured_busbw: float
    predicted_busbw: float
    error: float
    regime: str
    in_fit: bool
    samples: int = 1

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CalibrationResult:
    """The fit: overrides for ``evaluate(..., transport_overrides=...)``, fitted values, per-point errors."""

    system: SystemSpec
    overrides: dict
    parameters: tuple
    regimes: tuple
    points: tuple
    kinds_fitted: tuple
    sources: tuple
    in_sample: dict
    out_of_sample: dict | None
    per_kind: dict
    notes: tuple = field(default_factory=tuple)

    @property
    def level(self) -> str:
        return self.system.level

    @property
    def transport(self) -> str:
        return self.system.transport

    def targets(self) -> dict:
        """Issue 7 targets (geomean error, sizes >= 1 MB): value, target and whether it is met."""
        out = {}
        for name, summ, target in (("in_sample", self.in_sample, TARGET_IN_SAMPLE),
                                   ("out_of_sample", self.out_of_sample, TARGET_OUT_OF_SAMPLE)):
            if summ and summ["points_ge_1mb"]:
                v = summ["geomean_error_ge_1mb"]
                out[name] = {"geomean_error_ge_1mb": v, "target": target, "met": bool(v <= target)}
        return out

    def to_dict(self) -> dict:
        return {
            "system": self.system.to_dict(), "level": self.level, "transport": self.transport,
            "overrides": self.overrides, "parameters": [dict(p) for p in self.parameters],
            "regimes": [dict(r) for r in self.regimes], "kinds_fitted": list(self.kinds_fitted),
            "sources": list(self.sources), "in_sample": self.in_sample, "out_of_sample": self.out_of_sample,
            "per_kind": self.per_kind, "targets": self.targets(), "notes": list(self.notes),
            "points": [p.to_dict() for p in self.points],
        }

    def profile(self):
        """The calibration profile to save (:func:`fabric.calibrate.profile.save_profile`)."""
        from fabric.calibrate.profile import CalibrationProfile

        return CalibrationProfile.from_result(self)


@dataclass(frozen=True)
class _Param:
    name: str
    role: str          # base_eff, base_alpha, es, as, oh
    regime: int
    prior: float
    lo: float
    hi: float


def _regime_index(sizes: np.ndarray, edges) -> np.ndarray:
    return np.searchsorted(np.asarray(edges, float), sizes, side="left")


def _check_counts(points, idx, edges) -> list[int]:
    """Populated regimes (ascending); raises when one has too few distinct sizes."""
    labels = regime_labels(edges)
    populated = []
    for r in range(len(edges) + 1):
        sizes = sorted({p.bytes for p, i in zip(points, idx) if i == r})
        if not sizes:
            continue
        if len(sizes) < MIN_SIZES_PER_REGIME:
            listed = ", ".join(f"{s:,}" for s in sizes)
            raise CalibrationError(
                f"too few points to fit regime '{labels[r]}': {len(sizes)} measured size(s) ({listed} B) where at "
                f"least {MIN_SIZES_PER_REGIME} are needed; measure more sizes in that range or move the regime "
                f"edges (--regimes, e.g. --regimes none for one regime)")
        populated.append(r)
    return populated


def _params(level: str, reference: dict, populated: list[int], *, separable: bool) -> list[_Param]:
    """The fitted parameters. Per-step alpha and per-call overhead are told apart only by collectives with
    different step counts (``separable``); otherwise the alpha stays at the profile's value and the overhead
    carries the latency (NCCL's small-message cost is mostly per call)."""
    eff_name, alpha_name = LEVEL_PARAMETERS[level]
    a0 = reference[alpha_name]
    alpha_bounds = _ALPHA_BOUNDS if separable else (a0 * (1 - 1e-9), a0 * (1 + 1e-9))
    ps = [_Param(eff_name, "base_eff", populated[-1], reference[eff_name], *_EFF_BOUNDS),
          _Param(alpha_name, "base_alpha", populated[0], a0, *alpha_bounds)]
    ps += [_Param("efficiency_scale", "es", r, 1.0, *_SCALE_BOUNDS) for r in populated[:-1]]
    if separable:
        ps += [_Param("alpha_scale", "as", r, 1.0, *_SCALE_BOUNDS) for r in populated[1:]]
    ps += [_Param("op_overhead_s", "oh", r, _OVERHEAD_PRIOR, *_OVERHEAD_BOUNDS) for r in populated]
    return ps


def _scales(params: list[_Param], values: np.ndarray, n_regimes: int, populated: list[int]):
    """(es, as, oh) for every regime, empty ones filled from the nearest populated regime above (else below)."""
    es = {r: 1.0 for r in populated}
    al = {r: 1.0 for r in populated}
    oh = {r: 0.0 for r in populated}
    for p, v in zip(params, values):
        if p.role == "es":
            es[p.regime] = v
        elif p.role == "as":
            al[p.regime] = v
        elif p.role == "oh":
            oh[p.regime] = v
    out = []
    for r in range(n_regimes):
        src = next((q for q in populated if q >= r), populated[-1])
        out.append((es[src], al[src], oh[src]))
    return out


def _overrides(params, values, edges, populated) -> dict:
    ov = {p.name: float(v) for p, v in zip(params, values) if p.role.startswith("base")}
    scales = _scales(params, values, len(edges) + 1, populated)
    regimes = [[float(e), float(s[0]), float(s[1]), float(s[2])] for e, s in zip(edges, scales)]
    regimes.append([CATCH_ALL_BYTES, float(scales[-1][0]), float(scales[-1][1]), float(scales[-1][2])])
    while regimes and regimes[-1][1] == 1.0 and regimes[-1][2] == 1.0 and regimes[-1][3] == 0.0:
        regimes.pop()
    ov["regimes"] = regimes
    return ov


def _initial(params, basis, fit_idx, measured, regime_of, populated, level) -> np.ndarray:
    """Per-regime linear least squares T ~ a x B + b x n (relative weights) -> starting values."""
    b = basis.b_nv if level == "nvlink" else basis.b_net
    n = basis.n_nv if level == "nvlink" else basis.n_net
    eff, alpha = {}, {}
    for r in populated:
        sel = fit_idx[regime_of[fit_idx] == r]
        A = np.column_stack([b[sel], n[sel]]) / measured[sel, None]
        try:
            (a, c), *_ = np.linalg.lstsq(A, np.ones(sel.size), rcond=None)
        except np.linalg.LinAlgError:
            a, c = 0.0, 0.0
        eff[r] = 1.0 / a if a > 0 else None
        alpha[r] = c if c > 0 else None
    x = []
    base_eff = eff[populated[-1]] or params[0].prior
    base_alpha = alpha[populated[0]] or params[1].prior
    base_alpha = min(max(base_alpha, params[1].lo), params[1].hi)
    for p in params:
        if p.role == "base_eff":
            v = base_eff
        elif p.role == "base_alpha":
            v = base_alpha
        elif p.role == "es":
            v = (eff[p.regime] or base_eff) / base_eff
        elif p.role == "oh":
            v = _overhead_start(basis, measured, fit_idx, regime_of, p.regime, p.prior)
        else:
            v = (alpha[p.regime] or base_alpha) / base_alpha
        x.append(np.clip(v, p.lo, p.hi))
    return np.log(np.array(x))


def _overhead_start(basis, measured, fit_idx, regime_of, regime: int, prior: float) -> float:
    """Start value of a regime's per-call overhead: the median time its points spend beyond bandwidth and
    step latency at the profile's values (the fit cannot find it from below the small-message floor, where the
    model's time is flat)."""
    ref = basis.reference
    sel = fit_idx[regime_of[fit_idx] == regime]
    if sel.size == 0:
        return prior
    bw = np.maximum(basis.b_nv[sel] / ref["nvlink_efficiency"], basis.b_net[sel] / ref["bandwidth_efficiency"])
    lat = basis.n_nv[sel] * ref["nvlink_alpha_s"] + basis.n_net[sel] * ref["step_alpha_s"] + basis.l_fix[sel]
    rest = measured[sel] - bw - lat
    return float(max(np.median(rest), prior * 1e-3))


def fit_profile(measurements, system: SystemSpec | None = None, *, kinds=None, regimes=DEFAULT_REGIME_EDGES,
                samples: int = 16, seed: int = 0, catalog=None, sources=None) -> CalibrationResult:
    """Fit the transport profile of ``system`` to ``measurements`` (a :class:`MeasurementSet` or Measurements).

    ``kinds`` restricts the fit to those collectives; points of other kinds are predicted out of sample.
    ``regimes`` are the upper size edges (bytes) of the regimes; ``()`` fits one regime.
    """
    notes = []
    if isinstance(measurements, MeasurementSet):
        system = system or measurements.system
        sources = sources or measurements.sources
        notes += list(measurements.notes)
        measurements = measurements.measurements
    if system is None:
        raise CalibrationError("fit_profile needs the system the measurements ran on")
    points, dropped = merge_points(measurements)
    notes += dropped
    if not points:
        raise CalibrationError("no measured points to fit (every row was dropped: " + "; ".join(dropped) + ")")
    wrong = sorted({p.ranks for p in points} - {system.ranks})
    if wrong:
        raise CalibrationError(f"measurements on {', '.join(map(str, wrong))} ranks do not match the system's "
                               f"{system.ranks}")
    present = tuple(dict.fromkeys(p.kind for p in points))
    fit_kinds = tuple(kinds) if kinds else present
    missing = [k for k in fit_kinds if k not in present]
    if missing:
        raise CalibrationError(f"no measurements of {', '.join(missing)} to fit; present: {', '.join(present)}")
    edges = tuple(sorted(int(e) for e in regimes))
    sizes = np.array([p.bytes for p in points], float)
    regime_of = _regime_index(sizes, edges)
    fit_mask = np.array([p.kind in fit_kinds for p in points])
    fit_idx = np.flatnonzero(fit_mask)
    populated = _check_counts([points[i] for i in fit_idx], regime_of[fit_idx], edges)

    labels = regime_labels(edges)
    empty = [labels[r] for r in range(len(edges) + 1) if r not in populated]
    if empty:
        notes.append(f"no measured sizes in regime(s) {', '.join(empty)}: they take the scales of the nearest "
                     "measured regime (extrapolation)")
    design, cat = system_design(system, catalog)
    basis = build_basis(design, cat, points, samples=samples, seed=seed)
    measured = np.array([p.time_s for p in points])
    # a per-call overhead and the per-step alpha are told apart only by collectives with different step counts
    separable = len({int(basis.n_nv[i] + basis.n_net[i]) for i in fit_idx}) > 1
    if not separable:
        notes.append("the fitted collectives all take the same number of steps, so per-step alpha and per-call "
                     "overhead cannot be told apart: alpha stays at the profile's value, the overhead is fitted")
    params = _params(system.level, basis.reference, populated, separable=separable)
    prior = np.log([p.prior for p in params])
    lo = np.log([p.lo for p in params])
    hi = np.log([p.hi for p in params])
    log_meas = np.log(measured[fit_idx])

    def residuals(x):
        t = basis.times(_overrides(params, np.exp(x), edges, populated))[fit_idx]
        return np.concatenate([np.log(t) - log_meas, PRIOR_WEIGHT * (x - prior)])

    best = None
    for x0 in (_initial(params, basis, fit_idx, measured, regime_of, populated, system.level), prior):
        x, cost, jac = least_squares(residuals, x0, lo, hi)
        if best is None or cost < best[1]:
            best = (x, cost, jac)
    x, _, jac = best
    values = np.exp(x)
    overrides = _overrides(params, values, edges, populated)
    predicted = evaluate_points(design, cat, points, overrides, samples=samples, seed=seed)
    fast = basis.times(overrides)
    gap = float(np.max(np.abs(fast / predicted - 1.0)))
    if gap > 1e-6:
        notes.append(f"the closed-form fit model differs from the evaluator by up to {gap:.2%} (multi-phase "
                     "algorithms); errors are the evaluator's")
    floored = int(np.sum(predicted[fit_idx] <= basis.floor[fit_idx] * (1 + 1e-9)))
    if floored:
        notes.append(f"{floored} fitted point(s) are predicted at the evaluator's small-message floor (SimAI's, by "
                     "rank count; not a fitted parameter): they do not inform the fit")
    sens = np.max(np.abs(jac[: fit_idx.size]), axis=0)
    param_rows = tuple(_param_row(p, v, s, labels, notes) for p, v, s in zip(params, values, sens))
    regime_rows = _regime_rows(params, values, edges, populated, labels, points, fit_idx, regime_of, overrides)
    results = tuple(
        PointResult(p.kind, p.bytes, p.ranks, p.time_s, float(t), p.busbw_bytes_per_s,
                    bus_factor(p.kind, p.ranks) * p.bytes / float(t), float(t / p.time_s - 1.0),
                    labels[regime_of[i]], bool(fit_mask[i]), p.samples)
        for i, (p, t) in enumerate(zip(points, predicted)))
    in_sample = _summary([r for r in results if r.in_fit])
    held = [r for r in results if not r.in_fit]
    per_kind = {k: {**_summary([r for r in results if r.kind == k]), "in_fit": k in fit_kinds} for k in present}
    return CalibrationResult(system=system, overrides=overrides, parameters=param_rows, regimes=regime_rows,
                             points=results, kinds_fitted=fit_kinds, sources=tuple(sources or ()),
                             in_sample=in_sample, out_of_sample=_summary(held) if held else None,
                             per_kind=per_kind, notes=tuple(notes))


def _summary(rows) -> dict:
    return error_summary([r.predicted_s for r in rows], [r.measured_s for r in rows], [r.bytes for r in rows])


def _param_row(p: _Param, value: float, sensitivity: float, labels, notes) -> dict:
    at_bound = value <= p.lo * 1.0001 or value >= p.hi * 0.9999
    if at_bound:
        notes.append(f"{p.name} ({labels[p.regime]}) stopped at its bound {value:.3g}")
    return {"name": p.name, "regime": labels[p.regime], "value": float(value), "prior": p.prior,
            "identified": bool(sensitivity >= _IDENTIFIED), "sensitivity": float(sensitivity),
            "at_bound": bool(at_bound)}


def _regime_rows(params, values, edges, populated, labels, points, fit_idx, regime_of, overrides) -> tuple:
    scales = _scales(params, values, len(edges) + 1, populated)
    base = {p.role: v for p, v in zip(params, values) if p.role.startswith("base")}
    rows = []
    lows = [0] + list(edges)
    for r, (es, al, oh) in enumerate(scales):
        sel = [points[i].bytes for i in fit_idx if regime_of[i] == r]
        rows.append({
            "regime": labels[r], "min_bytes_exclusive": lows[r], "max_bytes": edges[r] if r < len(edges) else None,
            "sizes": len(set(sel)), "efficiency_scale": float(es), "alpha_scale": float(al),
            "op_overhead_s": float(oh),
            "effective_efficiency": float(base["base_eff"] * es), "effective_alpha_s": float(base["base_alpha"] * al),
            "fitted": r in populated,
        })
    return tuple(rows)
