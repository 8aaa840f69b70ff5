"""Calibration: fit the evaluator's transport parameters to measured collective times (issue 7).

- :func:`load_measurements`: measurement files (nccl-tests output, NCCL logs with an nccl-tests table, per-op CSVs
  with timings) -> the measurements and the system they ran on (:class:`SystemSpec`);
- :func:`fit_profile`: efficiency and alpha of the exercised level (NVLink on one node, the network across nodes)
  plus an efficiency and alpha scale per message-size regime, by relative (log-space) least squares, with the
  evaluator's own per-point predictions and errors (:class:`CalibrationResult`);
- :func:`cross_validate`: calibrate on one collective, predict the others;
- :func:`save_profile` / :func:`load_profile`: the fit as JSON whose ``overrides`` are exactly what
  ``evaluate(..., transport_overrides=...)`` accepts;

``docs/validation.md`` has the measured errors on the real traces.
"""

from fabric.calibrate.crossval import CrossValidation, cross_validate
from fabric.calibrate.data import MeasurementSet, Point, load_measurements, merge_points
from fabric.calibrate.errors import LARGE_BYTES, error_summary, geomean_error
from fabric.calibrate.fit import (DEFAULT_REGIME_EDGES, MIN_SIZES_PER_REGIME, TARGET_IN_SAMPLE, TARGET_OUT_OF_SAMPLE,
                                  CalibrationResult, PointResult, fit_profile)
from fabric.calibrate.model import build_basis, evaluate_points
from fabric.calibrate.profile import CalibrationProfile, load_profile, save_profile
from fabric.calibrate.system import CalibrationError, SystemSpec, gpu_model_for, infer_system, system_design

__all__ = [
    "CalibrationError", "SystemSpec", "infer_system", "system_design", "gpu_model_for",
    "MeasurementSet", "Point", "load_measurements", "merge_points",
    "DEFAULT_REGIME_EDGES", "MIN_SIZES_PER_REGIME", "TARGET_IN_SAMPLE", "TARGET_OUT_OF_SAMPLE",
    "CalibrationResult", "PointResult", "fit_profile", "build_basis", "evaluate_points",
    "CrossValidation", "cross_validate", "CalibrationProfile", "save_profile", "load_profile",
    "LARGE_BYTES", "error_summary", "geomean_error",
]
