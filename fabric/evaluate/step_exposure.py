"""What of an op's time a step pays (used by the step assembly, :mod:`fabric.evaluate.step`, and by the lower bound's
split, :mod:`fabric.evaluate.lower_bound`): an op with ``overlap_fraction`` f runs that share of its time beside
compute, and a step cannot hide more communication than it has compute."""

from __future__ import annotations

import numpy as np

__all__ = ["exposed_time"]


def exposed_time(op_times: list, ops: list, compute: np.ndarray, samples: int):
    """Per-op exposed time (count included) and its sum: overlappable time is hidden up to the compute time."""
    if not ops:
        return [], np.zeros(samples)
    total = [t * op.count_per_step for t, op in zip(op_times, ops)]
    overl = [t * op.overlap_fraction if op.overlap_window_s is None else np.minimum(t * op.overlap_fraction,
                                                                                 op.overlap_window_s)
             for t, op in zip(total, ops)]
    sum_over = np.sum(overl, axis=0)
    hidden = np.minimum(sum_over, compute)
    share = np.divide(hidden, sum_over, out=np.zeros_like(sum_over, dtype=float), where=sum_over > 0)
    with np.errstate(invalid="ignore"):
        exposed = [np.where(np.isfinite(o), t - o * share, t) for t, o in zip(total, overl)]
    return exposed, np.sum(exposed, axis=0)
