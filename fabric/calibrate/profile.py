"""Calibration profiles on disk: the evaluator's ``transport_overrides`` plus where they came from.

File format (JSON, ``"schema": "fabric.calibration/1"``)::

    {"schema": "fabric.calibration/1",
     "overrides": {"nvlink_efficiency": 0.78, "nvlink_alpha_s": 2.4e-06,
                   "regimes": [[65536, 0.9, 1.0], [1048576, 0.6, 1.3], ...]},
     "transport": "infiniband", "level": "nvlink", "system": {...}, "sources": [...], "kinds": [...],
     "errors": {"in_sample": {...}, "out_of_sample": {...}, "per_kind": {...}},
     "parameters": [...], "regimes": [...], "notes": [...]}

``overrides`` is exactly what ``evaluate(design, workload, transport_overrides=...)`` accepts; everything else is
metadata. :func:`load_profile` checks the overrides against the transport profile before returning them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from fabric.calibrate.system import CalibrationError

__all__ = ["SCHEMA", "CalibrationProfile", "save_profile", "load_profile", "check_overrides", "no_nan"]

SCHEMA = "fabric.calibration/1"


@dataclass(frozen=True)
class CalibrationProfile:
    """A saved calibration: ``overrides`` for the evaluator and its ``metadata``."""

    overrides: dict
    metadata: dict = field(default_factory=dict)

    @classmethod
    def from_result(cls, result) -> "CalibrationProfile":
        from fabric import __version__

        meta = {
            "transport": result.transport, "level": result.level, "system": result.system.to_dict(),
            "sources": list(result.sources), "kinds": list(result.kinds_fitted),
            "errors": {"in_sample": result.in_sample, "out_of_sample": result.out_of_sample,
                       "per_kind": result.per_kind, "targets": result.targets()},
            "parameters": [dict(p) for p in result.parameters], "regimes": [dict(r) for r in result.regimes],
            "notes": list(result.notes), "created_by": f"fabric {__version__} calibrate",
        }
        return cls(dict(result.overrides), meta)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "overrides": self.overrides, **self.metadata}


def check_overrides(overrides: dict, transport: str = "infiniband", where: str = "overrides") -> dict:
    """Validate ``overrides`` the way the evaluator will use them; returns them (regimes as lists)."""
    from fabric.evaluate.transport import PROFILES

    if not isinstance(overrides, dict):
        raise CalibrationError(f"{where}: 'overrides' must be a mapping of transport parameter to value")
    prof = PROFILES.get(transport, PROFILES["infiniband"])
    try:
        prof.with_overrides(**overrides)
    except (TypeError, ValueError) as err:
        raise CalibrationError(f"{where}: {err}") from err
    for k, v in overrides.items():
        if k == "regimes":
            last = -math.inf
            for r in v:
                ok = len(r) in (3, 4) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                               and math.isfinite(x) for x in r)
                if not ok or min(r[:3]) <= 0 or (len(r) == 4 and r[3] < 0):
                    raise CalibrationError(f"{where}: each regime must be [max_bytes, efficiency_scale, alpha_scale"
                                           f"(, op_overhead_s)] of positive numbers (overhead >= 0), got {r!r}")
                if r[0] <= last:
                    raise CalibrationError(f"{where}: regimes must be in ascending max_bytes, got {v!r}")
                last = r[0]
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and not (math.isfinite(v) and v >= 0):
            raise CalibrationError(f"{where}: {k} must be a finite non-negative number, got {v!r}")
    return overrides


def save_profile(profile, path) -> Path:
    """Write a profile (a :class:`CalibrationProfile` or a fit result) as JSON; returns the path."""
    if not isinstance(profile, CalibrationProfile):
        profile = profile.profile()
    path = Path(path)
    path.write_text(json.dumps(no_nan(profile.to_dict()), indent=2, allow_nan=False, default=_plain) + "\n",
                    encoding="utf-8")
    return path


def _plain(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def no_nan(d):
    """JSON cannot hold NaN: summaries use None for 'no points'."""
    if isinstance(d, dict):
        return {k: no_nan(v) for k, v in d.items()}
    if isinstance(d, list):
        return [no_nan(v) for v in d]
    if isinstance(d, float) and not math.isfinite(d):
        return None
    return d


def load_profile(path) -> CalibrationProfile:
    """Read and check a profile written by :func:`save_profile` (or by hand: only ``overrides`` is required)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"{path}: no such calibration profile") from None
    except (OSError, UnicodeDecodeError) as err:
        raise CalibrationError(f"{path}: cannot read the file ({err})") from err
    except json.JSONDecodeError as err:
        raise CalibrationError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from err
    if not isinstance(data, dict) or "overrides" not in data:
        raise CalibrationError(f"{path}: not a calibration profile (no 'overrides' mapping)")
    schema = data.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise CalibrationError(f"{path}: unknown profile schema {schema!r} (expected {SCHEMA!r})")
    meta = {k: v for k, v in data.items() if k not in ("schema", "overrides")}
    overrides = check_overrides(data["overrides"], meta.get("transport", "infiniband"), str(path))
    return CalibrationProfile(overrides, meta)
