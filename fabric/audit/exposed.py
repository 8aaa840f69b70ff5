"""Exposed communication per collective: how much of each collective's kernel time no compute kernel hides.

Collectives are grouped by (kind, process group) over every traced rank and step; figures are per step and rank
(the mean over the (rank, step) records), so they add up to the mean exposed time of a step.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.audit.traces import RunTraces

__all__ = ["CollectiveExposure", "exposure_by_collective"]

_US = 1e-6


@dataclass(frozen=True)
class CollectiveExposure:
    kind: str                 # all_reduce, all_to_all, ... ("" when the trace did not say)
    group: str                # process group name as recorded ("" = the world group of an old-format trace)
    group_size: int | None
    calls_per_step: float     # per rank
    median_bytes: int | None  # per call
    kernel_s_per_call: float  # mean
    comm_s_per_step: float    # kernel time per (rank, step)
    exposed_s_per_step: float


def exposure_by_collective(run: RunTraces) -> list[CollectiveExposure]:
    """Per (kind, group), largest exposed time first."""
    samples = sum(max(len(t.window_len_us or t.windows), 1) for t in run.ranks)
    agg: dict[tuple[str, str], dict] = {}
    for t in run.ranks:
        for c in t.calls:
            a = agg.setdefault((c.kind, c.group), {"n": 0, "k": 0.0, "e": 0.0, "b": [], "size": c.group_size})
            a["n"] += 1
            a["k"] += c.kernel_us
            a["e"] += max(c.kernel_us - c.overlap_us, 0.0)
            if c.nbytes is not None:
                a["b"].append(c.nbytes)
            if a["size"] is None:
                a["size"] = c.group_size
    out = []
    for (kind, group), a in agg.items():
        b = sorted(a["b"])
        out.append(CollectiveExposure(
            kind=kind, group=group, group_size=a["size"], calls_per_step=a["n"] / samples,
            median_bytes=b[(len(b) - 1) // 2] if b else None, kernel_s_per_call=a["k"] * _US / a["n"],
            comm_s_per_step=a["k"] * _US / samples, exposed_s_per_step=a["e"] * _US / samples))
    out.sort(key=lambda x: (-x.exposed_s_per_step, x.kind, x.group))
    return out
