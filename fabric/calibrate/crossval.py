"""Out-of-sample check: calibrate on one collective of a system, predict the others.

For every collective ``train`` present (or those asked for), :func:`cross_validate` fits on ``train`` alone and
reports, for every collective ``test``, the geomean error of the evaluator's predictions (all sizes and sizes of at
least 1 MB); ``test == train`` is the in-sample figure. Issue 7's out-of-sample target is <= 20 % for >= 1 MB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.calibrate.data import MeasurementSet
from fabric.calibrate.fit import DEFAULT_REGIME_EDGES, TARGET_OUT_OF_SAMPLE, fit_profile
from fabric.calibrate.system import CalibrationError

__all__ = ["CrossValidation", "cross_validate"]


@dataclass(frozen=True)
class CrossValidation:
    """Rows ``{train, test, in_sample, points, geomean_error, points_ge_1mb, geomean_error_ge_1mb}``."""

    rows: tuple
    kinds: tuple
    system_name: str

    def out_of_sample(self, train: str | None = None) -> list[dict]:
        """The rows where the test collective was not fitted (optionally for one ``train`` collective)."""
        return [r for r in self.rows if not r["in_sample"] and (train is None or r["train"] == train)]

    def summary(self) -> dict:
        """Per training collective: mean and worst out-of-sample geomean error (>= 1 MB) and the target check."""
        out = {}
        for k in self.kinds:
            vals = [r["geomean_error_ge_1mb"] for r in self.out_of_sample(k) if r["points_ge_1mb"]]
            if vals:
                out[k] = {"mean_ge_1mb": float(np.mean(vals)), "worst_ge_1mb": float(max(vals)),
                          "target": TARGET_OUT_OF_SAMPLE, "met": bool(max(vals) <= TARGET_OUT_OF_SAMPLE)}
        return out

    def to_dict(self) -> dict:
        return {"system": self.system_name, "kinds": list(self.kinds), "rows": [dict(r) for r in self.rows],
                "summary": self.summary()}


def cross_validate(measurements, system=None, *, kinds=None, regimes=DEFAULT_REGIME_EDGES, samples: int = 16,
                   seed: int = 0, catalog=None) -> CrossValidation:
    """Fit on each collective in ``kinds`` (default: all present) and predict every collective present."""
    if isinstance(measurements, MeasurementSet):
        system = system or measurements.system
        measurements = measurements.measurements
    present = tuple(dict.fromkeys(m.kind for m in measurements))
    train = tuple(kinds) if kinds else present
    if len(present) < 2:
        raise CalibrationError(f"an out-of-sample check needs at least two collectives of one system; the "
                               f"measurements hold only {', '.join(present) or 'none'}")
    rows = []
    for k in train:
        res = fit_profile(measurements, system, kinds=(k,), regimes=regimes, samples=samples, seed=seed,
                          catalog=catalog)
        for test, s in res.per_kind.items():
            rows.append({"train": k, "test": test, "in_sample": test == k, "points": s["points"],
                         "geomean_error": s["geomean_error"], "points_ge_1mb": s["points_ge_1mb"],
                         "geomean_error_ge_1mb": s["geomean_error_ge_1mb"]})
    return CrossValidation(tuple(rows), train, system.name if system else "")
