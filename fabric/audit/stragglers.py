"""Stragglers: the rank the others wait for in each step, and how often each rank is it.

Rule: in a step traced on two or more ranks, the straggler is the rank with the least collective kernel time (it
reaches the collectives last; see :mod:`fabric.audit.steps`). It is counted only when the others' wait is material:
the largest wait of the step is at least ``MATERIAL_WAIT_SHARE`` of the step's median step time. Otherwise the step
has no straggler.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.audit.stats import nearest_rank
from fabric.audit.steps import RankStep

__all__ = ["MATERIAL_WAIT_SHARE", "StepStraggler", "Straggler", "stragglers"]

#: a step has a straggler when some rank waits at least this share of the step's median step time
MATERIAL_WAIT_SHARE = 0.05


@dataclass(frozen=True)
class StepStraggler:
    step: int
    rank: int | None        # None: no material wait in this step
    max_wait_s: float       # the largest wait of any rank in this step
    mean_wait_s: float      # the mean wait of the other traced ranks


@dataclass(frozen=True)
class Straggler:
    """One rank that was the straggler in at least one step."""

    rank: int
    steps: int              # steps in which it was the straggler
    of_steps: int           # steps traced on two or more ranks
    mean_wait_caused_s: float  # mean wait of the other ranks in those steps


def stragglers(records: list[RankStep]) -> tuple[list[StepStraggler], list[Straggler]]:
    """Per step the straggler (or none), and the stragglers ranked by how often (then by the wait they caused)."""
    by_step: dict[int, list[RankStep]] = {}
    for r in records:
        by_step.setdefault(r.step, []).append(r)
    per_step: list[StepStraggler] = []
    for s in sorted(by_step):
        rs = by_step[s]
        if len(rs) < 2:
            continue
        slow = min(rs, key=lambda r: (r.comm_s, r.rank))
        others = [r.wait_s for r in rs if r is not slow]
        max_wait = max(r.wait_s for r in rs)
        median_step = nearest_rank([r.step_s for r in rs], 50)
        material = max_wait > 0 and max_wait >= MATERIAL_WAIT_SHARE * median_step
        per_step.append(StepStraggler(step=s, rank=slow.rank if material else None, max_wait_s=max_wait,
                                      mean_wait_s=sum(others) / len(others)))
    n = len(per_step)
    agg: dict[int, list[float]] = {}
    for p in per_step:
        if p.rank is not None:
            agg.setdefault(p.rank, []).append(p.mean_wait_s)
    ranked = [Straggler(rank=r, steps=len(w), of_steps=n, mean_wait_caused_s=sum(w) / len(w)) for r, w in agg.items()]
    ranked.sort(key=lambda x: (-x.steps, -x.mean_wait_caused_s, x.rank))
    return per_step, ranked
