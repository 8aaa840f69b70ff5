"""Measurement files -> measured points of one system.

:func:`load_measurements` reads files with the workload ingester (nccl-tests tables, NCCL_DEBUG logs that carry
an nccl-tests table, AICB CSVs with timings) and says clearly why a file gives nothing to fit: a log without a
result table, a log whose table's collective cannot be decided (with the parser's reason), a CSV whose timing
columns are ``None`` (AICB workload files), a trace format without measured collective times. Every file must come
from the same system (:func:`fabric.calibrate.system.infer_system`).

:func:`merge_points` turns measurements into points: one per (kind, bytes, ranks), its time the geometric mean of
the repeated measurements (nccl-tests' out-of-place and in-place columns), zero-byte rows dropped.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from fabric.calibrate.system import CalibrationError, SystemSpec, infer_system
from fabric.evaluate.collectives import bus_factor

__all__ = ["MeasurementSet", "Point", "load_measurements", "merge_points", "FITTABLE_KINDS"]

#: Kinds the evaluator can predict from a measured size (barrier has no size).
FITTABLE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "all_to_allv", "broadcast", "reduce",
                  "send_recv")


@dataclass(frozen=True)
class Point:
    """One measured (kind, size) on ``ranks`` ranks: time in s (geometric mean of ``samples`` measurements)."""

    kind: str
    bytes: int
    ranks: int
    time_s: float
    samples: int = 1
    sources: tuple = ()

    @property
    def busbw_bytes_per_s(self) -> float:
        """nccl-tests bus bandwidth of the measured time."""
        return bus_factor(self.kind, self.ranks) * self.bytes / self.time_s


@dataclass(frozen=True)
class MeasurementSet:
    """Measurements of one system, with the files they came from and what was dropped or assumed."""

    measurements: tuple
    system: SystemSpec
    sources: tuple
    notes: tuple = field(default_factory=tuple)

    def kinds(self) -> tuple:
        """Collective kinds present, in first-seen order."""
        return tuple(dict.fromkeys(m.kind for m in self.measurements))


def _empty_reason(path: str, report, workload) -> str:
    """Why a file that parsed gave no measurements."""
    fmt = report.format
    facts = dict(workload.facts) if workload is not None else {}
    if fmt == "aicb_csv":
        return f"no measured times in {path} (timing columns are None): an AICB workload file has sizes only"
    if fmt == "nccl_log":
        unused = [w for w in (workload.warnings if workload is not None else ()) if "row(s) were not used" in w]
        if unused:
            return (f"the nccl-tests table in {path} could not be used: " + "; ".join(unused)
                    + "; then calibrate again")
        return (f"no nccl-tests result table in {path}: the NCCL log has topology lines only; calibrate needs the "
                "size/time table nccl-tests prints")
    if fmt == "nccl_tests":
        return f"no measured rows in {path}: its nccl-tests table is empty"
    what = f"its format ({fmt}) carries sizes, not measured times" if fmt else "not a measurement format"
    hint = f" ({facts['timings']})" if "timings" in facts else ""
    return (f"no measured collective times in {path}: {what}{hint}; calibrate needs nccl-tests output or a "
            "per-op CSV with timings")


def load_measurements(paths, *, gpu_model: str | None = None, nic_gbps: float | None = None,
                      gpus_per_node: int | None = None, network: str | None = None, catalog=None) -> MeasurementSet:
    """Measurements and system of ``paths`` (one system); raises :class:`CalibrationError` naming the bad file."""
    from fabric.workload.ingest import ingest_paths

    paths = [str(p) for p in paths]
    if not paths:
        raise CalibrationError("no measurement files given")
    measurements, systems, notes = [], [], []
    for path in paths:
        result = ingest_paths([path])
        report = result.files[0] if result.files else None
        if not result.ok or result.workload is None:
            msg = "; ".join(result.errors) or f"{path}: could not be read"
            raise CalibrationError(msg if path in msg else f"{path}: {msg}")
        wl = result.workload
        ms = [m for m in wl.measurements]
        if not ms:
            raise CalibrationError(_empty_reason(path, report, wl))
        timed = [m for m in ms if m.time_s is not None and m.time_s > 0]
        if not timed:
            raise CalibrationError(f"no measured times in {path} (every time is zero or missing)")
        ranks = sorted({m.ranks for m in timed})
        if len(ranks) > 1:
            raise CalibrationError(f"{path}: measurements span group sizes {', '.join(map(str, ranks))}; calibrate "
                                   "one group size at a time")
        systems.append(infer_system(wl.facts, path, ranks=ranks[0], gpu_model=gpu_model, nic_gbps=nic_gbps,
                                    gpus_per_node=gpus_per_node, network=network, catalog=catalog))
        measurements += timed
        if len(timed) < len(ms):
            notes.append(f"{path}: {len(ms) - len(timed)} rows without a measured time skipped")
    keys = {s.key() for s in systems}
    if len(keys) > 1:
        listing = "; ".join(f"{p}: {s.name}" for p, s in zip(paths, systems))
        raise CalibrationError(f"the files come from different systems ({listing}); calibrate each system on its own")
    return MeasurementSet(tuple(measurements), systems[0], tuple(paths), tuple(notes))


def merge_points(measurements) -> tuple[list[Point], list[str]]:
    """Points of ``measurements`` (see the module doc) and notes on what was dropped."""
    groups: dict[tuple, list] = defaultdict(list)
    dropped: dict[str, int] = defaultdict(int)
    for m in measurements:
        if m.kind not in FITTABLE_KINDS:
            dropped[f"kind {m.kind}"] += 1
        elif m.bytes <= 0:
            dropped["zero-byte rows"] += 1
        elif m.time_s is None or not m.time_s > 0 or not math.isfinite(m.time_s):
            dropped["rows without a time"] += 1
        else:
            groups[(m.kind, int(m.bytes), int(m.ranks))].append(m)
    points = []
    for (kind, size, ranks), ms in groups.items():
        t = math.exp(sum(math.log(m.time_s) for m in ms) / len(ms))
        points.append(Point(kind, size, ranks, t, len(ms), tuple(dict.fromkeys(m.source for m in ms))))
    points.sort(key=lambda p: (p.kind, p.bytes))
    notes = [f"{n} measurements dropped: {why}" for why, n in dropped.items()]
    return points, notes
