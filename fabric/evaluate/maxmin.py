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
                  active: np.ndarray | None = None, weight: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate of every flow (0 for inactive ones), by progressive filling.

    All unfrozen flows grow at the same pace; when a link fills, the flows crossing it freeze. ``weight[i]`` is
    the share of flow ``flow_of[i]``'s rate that link ``link_of[i]`` carries (1 when omitted; a flow sprayed
    evenly over four paths puts 1/4 on each).
    """
    flow_of = np.asarray(flow_of, dtype=np.int64)
    link_of = np.asarray(link_of, dtype=np.int64)
    weight = np.ones(flow_of.size) if weight is None else np.asarray(weight, dtype=float)
    cap = np.asarray(capacity, dtype=float)
    rate = np.zeros(n_flows)
    frozen = np.zeros(n_flows, bool) if active is None else ~np.asarray(active, bool)
    remaining = cap.copy()
    for _ in range(n_flows + 1):
        live = ~frozen[flow_of]
        if not live.any():
            break
        load = np.bincount(link_of[live], weights=weight[live], minlength=cap.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(load > 0, remaining / np.where(load > 0, load, 1.0), np.inf)
        delta = share.min()
        if not np.isfinite(delta):
            break
        rate[~frozen] += delta
        remaining -= delta * load
        full = (load > 0) & (remaining <= 1e-9 * np.maximum(cap, 1.0))
        hit = np.zeros(n_flows, bool)
        hit[flow_of[full[link_of] & live]] = True
        frozen |= hit
    return rate


def fluid_completion_times(bytes_: np.ndarray, flow_of: np.ndarray, link_of: np.ndarray,
                           capacity: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """When each flow finishes if all start together and rates stay max-min fair as flows leave (seconds).

    ``weight`` as in :func:`max_min_rates` (split flows)."""
    bytes_ = np.asarray(bytes_, dtype=float)
    n = bytes_.size
    left = bytes_.copy()
    done = left <= 0
    finish = np.zeros(n)
    now = 0.0
    for _ in range(n + 1):
        if done.all():
            break
        rate = max_min_rates(n, flow_of, link_of, capacity, active=~done, weight=weight)
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
