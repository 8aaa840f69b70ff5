"""Per-(rank, step) records of a traced job: step time, collective time, exposed time and communication wait.

- step time: the rank's ``ProfilerStep#N`` span (or the whole GPU span when the trace has no step markers);
- collective time: the kernel time of the collectives the rank launched in that step;
- exposed time: the part of that kernel time not overlapped by a compute kernel of the same GPU;
- communication wait: the rank's collective time minus the least collective time of any traced rank in the same
  step. Every rank runs the same collectives in a step, and a collective ends at about the same time on every
  member, so the rank that reaches the collectives last spends the least time in them and every other rank's excess
  is time spent waiting for it. Summed over the step this is a lower bound of the wait (two ranks late at
  different collectives partly cancel).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.audit.traces import RunTraces

__all__ = ["RankStep", "rank_steps", "WAIT_RESOLUTION_S"]

_US = 1e-6
#: waits below 0.1 us are rounding: traces record microseconds to 3 decimals, summed over tens of kernels a step
WAIT_RESOLUTION_S = 1e-7


@dataclass(frozen=True)
class RankStep:
    """One step of one rank (seconds)."""

    rank: int
    step: int            # index of the step in the rank's trace (0 = first traced step)
    step_s: float
    comm_s: float        # collective kernel time
    exposed_s: float     # collective kernel time not overlapped by compute
    wait_s: float        # collective time beyond the least of any traced rank in this step
    calls: int


def rank_steps(run: RunTraces) -> list[RankStep]:
    """The (rank, step) records of one job size, sorted by (step, rank)."""
    raw: list[list] = []
    for i, t in enumerate(run.ranks):
        rank = t.rank if t.rank is not None else i
        lens = t.window_len_us or [b - a for a, b in t.windows]
        for s, length in enumerate(lens):
            calls = [c for c in t.calls if c.step == s]
            comm = sum(c.kernel_us for c in calls)
            exposed = sum(max(c.kernel_us - c.overlap_us, 0.0) for c in calls)
            raw.append([rank, s, length * _US, comm * _US, exposed * _US, len(calls)])
    least: dict[int, float] = {}
    for r in raw:
        least[r[1]] = min(least.get(r[1], r[3]), r[3])
    out = [RankStep(rank=r[0], step=r[1], step_s=r[2], comm_s=r[3], exposed_s=r[4],
                    wait_s=w if (w := r[3] - least[r[1]]) >= WAIT_RESOLUTION_S else 0.0, calls=r[5]) for r in raw]
    return sorted(out, key=lambda x: (x.step, x.rank))
