"""Fluid (max-min fair) completion of the packet-level flows, for the same paths the packets take.

- per-flow ECMP: every flow has one path (:func:`fabric.validate.network.ecmp_path`); the bound is
  :func:`fabric.evaluate.maxmin.fluid_completion_times` on those paths;
- spraying: a flow's rate splits evenly at every hop (:func:`fabric.validate.network.spray_split`), so it loads a
  link with a fraction of its rate. :func:`weighted_fluid_completion_times` is progressive filling with those
  fractions as weights (with all weights 1 it is exactly the ECMP function; the tests check it).

Capacities are goodput: line rate x payload/(payload + headers) of the packet model, because that is what TCP
delivers on an uncontended link (see :func:`goodput_fraction`).
"""

from __future__ import annotations

import numpy as np

from fabric.evaluate.maxmin import fluid_completion_times, max_min_rates
from fabric.validate.network import PacketNetwork, ecmp_path, spray_split

__all__ = ["goodput_fraction", "ecmp_incidence", "spray_incidence", "weighted_max_min_rates",
           "weighted_fluid_completion_times", "fluid_bound", "HEADER_BYTES"]

#: IPv4 (20) + TCP (20) + TCP timestamp option with padding (12) + PPP (2) bytes on the wire per segment.
HEADER_BYTES = 20 + 20 + 12 + 2


def goodput_fraction(mss_bytes: int = 1448) -> float:
    """Payload share of the wire bytes of a full-sized TCP segment (1448 / 1502 = 0.964 for a 1500-byte MTU)."""
    return mss_bytes / (mss_bytes + HEADER_BYTES)


def ecmp_incidence(net: PacketNetwork, flows, salts):
    """``(flow_of, link_of)`` over directed links of the per-flow ECMP paths, and the paths themselves."""
    flow_of, link_of, paths = [], [], []
    for i, (src, dst, _b, sport, dport) in enumerate(flows):
        p = ecmp_path(net, int(src), int(dst), int(sport), int(dport), salts)
        paths.append(p)
        flow_of += [i] * len(p)
        link_of += p
    return np.asarray(flow_of, np.int64), np.asarray(link_of, np.int64), paths


def spray_incidence(net: PacketNetwork, flows):
    """``(flow_of, link_of, weight)``: the share of each flow's rate on each directed link under even spraying."""
    cache: dict = {}
    flow_of, link_of, weight = [], [], []
    for i, (src, dst, *_rest) in enumerate(flows):
        key = (int(src), int(dst))
        if key not in cache:
            cache[key] = spray_split(net, *key)
        for dk, w in cache[key].items():
            flow_of.append(i)
            link_of.append(dk)
            weight.append(w)
    return np.asarray(flow_of, np.int64), np.asarray(link_of, np.int64), np.asarray(weight, float)


def weighted_max_min_rates(n_flows: int, flow_of, link_of, weight, capacity, active=None) -> np.ndarray:
    """Max-min fair rates when flow ``flow_of[i]`` puts ``weight[i]`` of its rate on link ``link_of[i]``."""
    return max_min_rates(n_flows, flow_of, link_of, capacity, active=active, weight=weight)


def weighted_fluid_completion_times(bytes_, flow_of, link_of, weight, capacity) -> np.ndarray:
    """When each flow finishes if all start together and rates stay (weighted) max-min fair as flows leave."""
    return fluid_completion_times(bytes_, flow_of, link_of, capacity, weight=weight)


def fluid_bound(net: PacketNetwork, flows, *, routing: str, salts=None, goodput: float | None = None):
    """Fluid completion time of every flow (seconds) on ``net`` at goodput capacity, and the ECMP paths (or None).

    ``flows`` are ``(src host, dst host, bytes, sport, dport)``; ``routing`` is ``ecmp`` (needs ``salts``) or
    ``spray``.
    """
    g = goodput_fraction() if goodput is None else float(goodput)
    cap = np.repeat(net.link_capacity_bps / 8.0 * g, 2)        # directed links 2k, 2k + 1
    nbytes = np.array([f[2] for f in flows], float)
    if routing == "ecmp":
        flow_of, link_of, paths = ecmp_incidence(net, flows, salts)
        return fluid_completion_times(nbytes, flow_of, link_of, cap), paths
    if routing == "spray":
        flow_of, link_of, weight = spray_incidence(net, flows)
        return weighted_fluid_completion_times(nbytes, flow_of, link_of, weight, cap), None
    raise ValueError(f"routing must be 'ecmp' or 'spray', got {routing!r}")
