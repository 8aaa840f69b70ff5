"""Max-min fair link sharing by progressive filling (vectorized), and the fluid completion of a set of flows.

The evaluator's hot path does not call these: for a bulk-synchronous phase whose flows on each link are of one
size, the slowest flow under max-min fairness finishes exactly when the most loaded link has drained its bytes
(``max_l load_l / capacity_l``), which the link-group sampler computes directly. These functions are the
reference that equivalence is tested against, and the "fluid bound" reported beside packet-level results.

Flows and links are given as an incidence list: ``flow_of[i]`` crosses ``link_of[i]``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_min_rates", "fluid_completion_times"]


def max_min_rates(n_flows: int, flow_of: np.ndarray, link_of: np.ndarray, capacity: np.ndarray,
                  active: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate of every flow (0 for inactive ones), by progressive filling.

    All unfrozen flows grow at the same pace; when a link fills, the flows crossing it freeze.
    """
    flow_of = np.asarray(flow_of, dtype=np.int64)
    link_of = np.asarray(link_of, dtype=np.int64)
    cap = np.asarray(capacity, dtype=float)
    rate = np.zeros(n_flows)
    frozen = np.zeros(n_flows, bool) if active is None else ~np.asarray(active, bool)
    remaining = cap.copy()
    for _ in range(n_flows + 1):
        live = ~frozen[flow_of]
        if not live.any():
            break
        users = np.bincount(link_of[live], minlength=cap.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(users > 0, remaining / users, np.inf)
        delta = share.min()
        rate[~frozen] += delta
        remaining -= delta * users
        full = (users > 0) & (remaining <= 1e-9 * np.maximum(cap, 1.0))
        hit = np.zeros(n_flows, bool)
        hit[flow_of[full[link_of] & live]] = True
        frozen |= hit
    return rate


def fluid_completion_times(bytes_: np.ndarray, flow_of: np.ndarray, link_of: np.ndarray,
                           capacity: np.ndarray) -> np.ndarray:
    """When each flow finishes if all start together and rates stay max-min fair as flows leave (seconds)."""
    bytes_ = np.asarray(bytes_, dtype=float)
    n = bytes_.size
    left = bytes_.copy()
    done = left <= 0
    finish = np.zeros(n)
    now = 0.0
    for _ in range(n + 1):
        if done.all():
            break
        rate = max_min_rates(n, flow_of, link_of, capacity, active=~done)
        with np.errstate(divide="ignore"):
            t_to = np.where(~done & (rate > 0), left / np.where(rate > 0, rate, 1.0), np.inf)
        step = t_to.min()
        if not np.isfinite(step):
            raise ValueError("some flows cross a link of zero capacity")
        now += step
        left = np.where(done, 0.0, left - rate * step)
        newly = ~done & (left <= 1e-9 * np.maximum(bytes_, 1.0))
        finish[newly] = now
        done |= newly
    return finish
