"""Measured against predicted: the same workload evaluated on the installed design.

For each job size the traced ranks are merged into a workload by the Kineto parser (as ``fabric parse`` does) and
evaluated on the design (:func:`fabric.evaluate.evaluate`, baseline scenario). Rows:

- one per collective (kind, bytes per call): measured time per step = in each step the least collective time of
  that (kind, bytes) among the traced ranks (a rank that waited for no one: transfer, not waiting), mean over steps;
  predicted = sum over the workload's ops of that kind and size of count per step x the op's p50 time;
- the step p50 and p99, and the tail (p99 / p50).

Rows are sorted by |ln(measured / predicted)|, largest disagreement first, each with what usually causes it
(:mod:`fabric.audit.causes`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from fabric.audit.causes import collective_cause, tail_cause
from fabric.audit.traces import RunTraces
from fabric.errors import FabricError

__all__ = ["Row", "Comparison", "compare_run", "predict", "size_text"]

_US = 1e-6


@dataclass(frozen=True)
class Row:
    what: str                  # "all_reduce 1.58 MB", "step p99", ...
    kind: str                  # collective kind, or "step"
    bytes_per_call: int | None
    measured_s: float
    predicted_s: float
    ratio: float               # measured / predicted (inf when nothing is predicted)
    cause: str
    unit: str = "s"            # "s", or "ratio" for the tail row (p99 / p50)


@dataclass(frozen=True)
class Comparison:
    world_size: int
    design: str
    rows: tuple[Row, ...]      # largest disagreement first
    predicted_step_s: dict     # p50 p95 p99 mean
    notes: tuple[str, ...]


def size_text(n: int | None, unknown: str = "? B") -> str:
    """Bytes in decimal units, 3 significant digits (``1.58 MB``); ``unknown`` when ``n`` is None."""
    if n is None:
        return unknown
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n} B"


def _measured_collectives(run: RunTraces) -> dict[tuple[str, int | None], float]:
    """(kind, bytes per call) -> measured transfer time per step (s): per step the least sum among traced ranks."""
    per: dict[tuple, dict[int, dict[int, float]]] = {}   # key -> step -> rank -> us
    steps: set[int] = set()
    for i, t in enumerate(run.ranks):
        rank = t.rank if t.rank is not None else i
        for s in range(len(t.window_len_us or t.windows)):
            steps.add(s)
        for c in t.calls:
            if not c.kind:
                continue
            nb = c.nbytes * (c.group_size or 1) if (c.per_rank_input and c.nbytes is not None) else c.nbytes
            d = per.setdefault((c.kind, nb), {}).setdefault(c.step, {})
            d[rank] = d.get(rank, 0.0) + c.kernel_us
    out = {}
    ranks = {t.rank if t.rank is not None else i for i, t in enumerate(run.ranks)}
    for key, by_step in per.items():
        vals = []
        for s in steps:
            got = by_step.get(s, {})
            # a traced rank that did not call it in this step spent 0 on it
            vals.append(min(got.get(r, 0.0) for r in ranks))
        out[key] = sum(vals) / max(len(vals), 1) * _US
    return out


def _ratio(m: float, p: float) -> float:
    if p > 0:
        return m / p
    return 1.0 if m == 0 else math.inf


def predict(run: RunTraces, design, *, catalog=None, seed: int = 0, samples: int | None = None):
    """(workload, evaluation): the traced ranks merged into a workload as ``fabric parse`` does, evaluated on
    ``design`` (baseline scenario)."""
    from fabric.evaluate import evaluate
    from fabric.evaluate.engine import DEFAULT_SAMPLES
    from fabric.workload.parsers.kineto import merge_ranks

    if design.gpus < run.world_size:
        raise FabricError(f"design {design.name!r} has {design.gpus} GPUs, fewer than the {run.world_size}-rank job "
                          f"traced; give the installed design (or --gpus)")
    workload = merge_ranks(copy.deepcopy(run.ranks), f"audit-{run.world_size}")
    return workload, evaluate(design, workload, None, seed=seed, samples=samples or DEFAULT_SAMPLES, catalog=catalog)


def compare_run(run: RunTraces, measured_step: dict, straggler_rank: int | None, design, ev) -> Comparison:
    """Measured vs predicted for one job size on ``design``, whose evaluation is ``ev`` (see the module
    docstring)."""
    predicted: dict[tuple[str, int], float] = {}
    for o in ev.ops:
        key = (o.kind, o.bytes)
        predicted[key] = predicted.get(key, 0.0) + o.count_per_step * o.time_p50_s
    rows = []
    notes = []
    measured = _measured_collectives(run)
    for (kind, nb), m in measured.items():
        p = predicted.get((kind, nb))
        if p is None:
            notes.append(f"{kind} of {size_text(nb)}: measured but not in the evaluated workload")
            continue
        r = _ratio(m, p)
        rows.append(Row(what=f"{kind} {size_text(nb)}", kind=kind, bytes_per_call=nb, measured_s=m, predicted_s=p,
                        ratio=r, cause=collective_cause(kind, nb, r)))
    pst = ev.step_time_s
    for q in ("p50", "p99"):
        r = _ratio(measured_step[q], pst[q])
        cause = "agrees" if 0.8 <= r <= 1.25 else (
            "slower than predicted: see the collectives above and the tail" if r > 1 else
            "faster than predicted: the model is pessimistic (see the collectives above)")
        rows.append(Row(what=f"step {q}", kind="step", bytes_per_call=None, measured_s=measured_step[q],
                        predicted_s=pst[q], ratio=r, cause=cause))
    m_tail = measured_step["p99"] / measured_step["p50"] if measured_step["p50"] > 0 else 1.0
    p_tail = pst["p99"] / pst["p50"] if pst["p50"] > 0 else 1.0
    rows.append(Row(what="step tail p99/p50", kind="tail", bytes_per_call=None, measured_s=m_tail,
                    predicted_s=p_tail, ratio=_ratio(m_tail, p_tail),
                    cause=tail_cause(m_tail, p_tail, straggler_rank), unit="ratio"))
    if measured_step.get("n", 0) < 100:
        notes.append(f"measured p99 from {measured_step.get('n')} (rank, step) sample(s): with fewer than 100 it is "
                     f"the largest sample")
    notes.append("measured collective time: per step the least among the traced ranks (no waiting), mean over steps; "
                 "predicted: count per step x p50 time of the op")
    rows.sort(key=lambda r: (-abs(math.log(r.ratio)) if 0 < r.ratio < math.inf else -math.inf, r.what))
    return Comparison(world_size=run.world_size, design=design.name, rows=tuple(rows),
                      predicted_step_s=dict(pst), notes=tuple(notes))
