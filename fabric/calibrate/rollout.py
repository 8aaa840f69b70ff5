"""Before/after rollout check: did the change do what fabric predicted, and is the model still right?

A change (new uplinks, a routing policy, more spines, another NIC) is measured twice: before and after, on the
designs they ran on. fabric predicts the change from the same designs and workloads and compares the predicted
ratio ``after / before`` with the measured one. A model that matched before can drift as software, firmware or
traffic change; ``drift = predicted ratio / measured ratio - 1`` beyond a tolerance (default 15 %) flags it.

Two kinds of measurements:

- rank traces with steps (Kineto, a ``measured step time (s)`` fact): the step time, against the evaluator's p50
  step of the traced workload on each design;
- nccl-tests runs (or NCCL logs with their result tables): every (collective, size, ranks) present in both, against
  the evaluator's p50 time of that collective on each design (:func:`fabric.calibrate.model.evaluate_points`); the
  summary is the geometric mean of the per-point ratios, and every point beyond the tolerance is listed.

Comparing ratios rather than times cancels what the model has wrong on both sides (a calibration offset, a
constant overhead): what is checked is the change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fabric.errors import FabricError

__all__ = ["RolloutReport", "rollout_check", "measured_step_s", "MEASURED_STEP_FACT", "DEFAULT_TOLERANCE"]

#: Default tolerance on ``predicted ratio / measured ratio - 1``.
DEFAULT_TOLERANCE = 0.15
MEASURED_STEP_FACT = "measured step time (s)"


@dataclass(frozen=True)
class RolloutReport:
    """What changed, measured and predicted. ``rows``: one per compared quantity (the step, or each collective
    point) with ``measured_before_s``, ``measured_after_s``, ``predicted_before_s``, ``predicted_after_s``,
    ``measured_ratio``, ``predicted_ratio``, ``drift``."""

    mode: str                    # "step" or "collectives"
    rows: tuple
    measured_ratio: float        # after / before (geometric mean over points for collectives)
    predicted_ratio: float
    drift: float                 # predicted / measured - 1
    tolerance: float
    drifted: bool
    notes: tuple = field(default_factory=tuple)

    def summary(self) -> str:
        """One sentence: the measured and predicted change and the verdict."""
        def change(r):
            return f"{(r - 1) * 100:+.1f} %"

        verdict = (f"the model DRIFTED: its predicted change is off by {self.drift:+.1%} (tolerance "
                   f"{self.tolerance:.0%}); recalibrate before trusting its next prediction"
                   if self.drifted else f"the model holds: off by {self.drift:+.1%} (tolerance {self.tolerance:.0%})")
        what = "step time" if self.mode == "step" else f"collective time ({len(self.rows)} points, geometric mean)"
        return (f"measured {what} change {change(self.measured_ratio)}, predicted {change(self.predicted_ratio)}; "
                f"{verdict}")

    def to_dict(self) -> dict:
        return {"mode": self.mode, "rows": [dict(r) for r in self.rows], "measured_ratio": self.measured_ratio,
                "predicted_ratio": self.predicted_ratio, "drift": self.drift, "tolerance": self.tolerance,
                "drifted": self.drifted, "notes": list(self.notes), "summary": self.summary()}


def measured_step_s(workload, where: str = "the trace") -> float:
    """The measured step time a trace recorded (Kineto ProfilerStep durations); FabricError when it has none."""
    for key, value in workload.facts:
        if key == MEASURED_STEP_FACT:
            try:
                v = float(value)
            except ValueError:
                break
            if v > 0 and math.isfinite(v):
                return v
    raise FabricError(f"{where} records no measured step time (rank traces with ProfilerStep markers do); give "
                      f"traces with steps, or nccl-tests runs")


def _check_tolerance(tolerance: float) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 10:
        raise FabricError(f"rollout tolerance: expected a share such as 0.15 (15 %), got {tolerance!r}")
    return float(tolerance)


def _row(name, mb, ma, pb, pa) -> dict:
    mr, pr = ma / mb, pa / pb
    return {"what": name, "measured_before_s": mb, "measured_after_s": ma, "predicted_before_s": pb,
            "predicted_after_s": pa, "measured_ratio": mr, "predicted_ratio": pr, "drift": pr / mr - 1.0}


def rollout_check(before, after, *, before_design, after_design, tolerance: float = DEFAULT_TOLERANCE,
                  catalog=None, transport_overrides: dict | None = None, samples: int = 64,
                  seed: int = 0) -> RolloutReport:
    """Compare a measured change with fabric's prediction (see the module docstring).

    ``before`` and ``after`` are workloads: parsed rank traces with a measured step time, or nccl-tests
    measurements (``workload.measurements``); both of the same kind. ``before_design``/``after_design``: the
    designs each ran on.
    """
    tol = _check_tolerance(tolerance)

    def kind(wl):
        if any(k == MEASURED_STEP_FACT for k, _ in wl.facts):
            return "step"
        return "collectives" if wl.measurements else None

    kb, ka = kind(before), kind(after)
    if kb is None or ka is None:
        side = "before" if kb is None else "after"
        raise FabricError(f"rollout: the '{side}' input has neither a measured step time (rank traces with "
                          f"ProfilerStep markers) nor measured collective times (nccl-tests); nothing to compare")
    if kb != ka:
        raise FabricError("rollout: give the same kind of measurement before and after (both rank traces with "
                          "steps, or both nccl-tests runs)")
    run = _steps if kb == "step" else _collectives
    return run(before, after, before_design, after_design, tol, catalog, transport_overrides, samples, seed)


def _steps(before, after, d0, d1, tol, catalog, overrides, samples, seed) -> RolloutReport:
    from fabric.evaluate import evaluate

    mb, ma = measured_step_s(before, "the 'before' trace"), measured_step_s(after, "the 'after' trace")
    kw = dict(catalog=catalog, transport_overrides=overrides, samples=samples, seed=seed)
    pb = evaluate(d0, before, **kw).step_time_s["p50"]
    pa = evaluate(d1, after, **kw).step_time_s["p50"]
    row = _row("step", mb, ma, pb, pa)
    notes = ("measured: mean ProfilerStep duration of the traced ranks; predicted: the evaluator's p50 step",)
    return RolloutReport("step", (row,), row["measured_ratio"], row["predicted_ratio"], row["drift"], tol,
                         abs(row["drift"]) > tol, notes)


def _collectives(before, after, d0, d1, tol, catalog, overrides, samples, seed) -> RolloutReport:
    from fabric.calibrate.data import merge_points
    from fabric.calibrate.model import evaluate_points

    pts_b, notes_b = merge_points(before.measurements)
    pts_a, notes_a = merge_points(after.measurements)
    by_key = {(p.kind, p.bytes, p.ranks): p for p in pts_a}
    pairs = [(p, by_key[(p.kind, p.bytes, p.ranks)]) for p in pts_b if (p.kind, p.bytes, p.ranks) in by_key]
    if not pairs:
        raise FabricError("rollout: the before and after runs share no (collective, size, ranks) point to compare")
    notes = list(notes_b) + list(notes_a)
    dropped = len(pts_b) + len(pts_a) - 2 * len(pairs)
    if dropped:
        notes.append(f"{dropped} point(s) measured on one side only were left out")
    rows = []
    for ranks in sorted({p.ranks for p, _ in pairs}):
        grp = [(b, a) for b, a in pairs if b.ranks == ranks]
        for d in (d0, d1):
            if d.gpus < ranks:
                raise FabricError(f"rollout: the measurements use {ranks} ranks but design {d.name!r} has only "
                                  f"{d.gpus:,} GPUs; give the designs the runs were measured on")
        pb = evaluate_points(d0, catalog, [b for b, _ in grp], overrides, samples=samples, seed=seed)
        pa = evaluate_points(d1, catalog, [a for _, a in grp], overrides, samples=samples, seed=seed)
        for (b, a), tb, ta in zip(grp, pb, pa):
            rows.append(_row(f"{b.kind} {b.bytes:,} B on {ranks} ranks", b.time_s, a.time_s, float(tb), float(ta)))
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
    mr, pr = gm([r["measured_ratio"] for r in rows]), gm([r["predicted_ratio"] for r in rows])
    off = [r for r in rows if abs(r["drift"]) > tol]
    if off:
        notes.append(f"{len(off)} of {len(rows)} point(s) drift beyond {tol:.0%}: "
                     + ", ".join(f"{r['what']} ({r['drift']:+.0%})" for r in off[:6]) + ("..." if len(off) > 6 else ""))
    drift = pr / mr - 1.0
    return RolloutReport("collectives", tuple(rows), mr, pr, drift, tol, abs(drift) > tol, tuple(notes))
