"""Predicted congestion signals per tier: an ESTIMATE of ECN marking and PFC pause exposure from the evaluator's
per-phase link loads (docs/audit.md, "Predicted congestion signals"; compared with ns-3 in
docs/validation-packet.md).

A switch port builds a standing queue, and so marks ECN and (lossless) pauses its senders, when the traffic offered
to it at the senders' rates exceeds its line rate. From the evaluator's own phase model
(:func:`fabric.audit.linkload.op_phase_loads`):

- every ball (flow x queue pair) of a phase is sent at its NIC port's share, r = NIC line rate / the port's
  concurrent balls (the phase's ``flows_per_port``);
- a link group (a leaf's uplinks, the downlinks into a leaf, a pod's core links) holds k balls on n links. Under
  ECMP each ball lands on a link at random: the ball's link is oversubscribed when it and the others there offer more
  than the line rate C, m r > C with m = 1 + Binomial(k - 1, 1/n) (the size-biased count a ball sees), so the share
  of the group's bytes that meet a standing queue is P(1 + Binomial(k - 1, 1/n) > C / r). Under spraying or
  adaptive routing every link is offered k r / n: all bytes or none;
- links further along a path (spine->leaf, core->spine, a NIC's downlink) see a ball at most at the rate the
  tier before delivers it: r x min(1, that tier's capacity / the rate offered to it), taken over the phase;
- a NIC's downlink (``leaf->host``) is offered the sum of the rates of the flows into it (so throttled).

Per tier the estimate is the byte-weighted share of the tier's traffic that crosses an oversubscribed port:
``ecn_marked`` (the share of bytes a threshold marker would mark) and ``pause_exposure`` (the share of the tier's
busy link time spent with the queue above XOFF, on lossless RoCE). A rate-based sender fills an oversubscribed
queue past any threshold until congestion control reacts, so the estimate gives both the same value: it tells
where and how much, not the queue's height. Not modelled: bursts on ports that are not oversubscribed on average,
congestion control's reaction, in-network reduction trees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["TierSignal", "congestion_estimate", "share_oversubscribed"]

_TIER_OF = {"leaf uplinks": "leaf->spine", "leaf downlinks": "spine->leaf", "pod core uplinks": "spine->core",
            "pod core downlinks": "core->spine"}


@dataclass(frozen=True)
class TierSignal:
    tier: str
    bytes_per_step: float
    ecn_marked: float          # share of the tier's bytes that meet a standing queue (estimate)
    pause_exposure: float      # share of the tier's busy link time with the queue above XOFF (estimate)


def share_oversubscribed(k: int, n: int, ratio: float, routing: str) -> float:
    """Share of a link group's bytes on oversubscribed links: ``k`` balls, ``n`` links, ``ratio`` = line rate /
    a ball's rate (see the module docstring)."""
    if k <= 0 or n <= 0:
        return 0.0
    if routing != "ecmp":
        return 1.0 if k / n > ratio * (1 + 1e-9) else 0.0
    need = math.floor(ratio * (1 + 1e-9)) + 1          # balls on a link (m) with m > ratio
    if need <= 1:
        return 1.0
    # P(1 + Binomial(k - 1, 1/n) >= need) = 1 - P(Binomial <= need - 2)
    p = 1.0 / n
    if n == 1:
        return 1.0 if k >= need else 0.0
    cdf, term = 0.0, (1 - p) ** (k - 1)
    for j in range(0, min(need - 1, k)):
        cdf += term
        term *= (k - 1 - j) / (j + 1) * p / (1 - p)
    return max(0.0, min(1.0, 1.0 - cdf))


def congestion_estimate(design, workload, *, catalog=None, seed: int = 0, samples: int = 64) -> dict:
    """{tier: TierSignal} for one step of ``workload`` on ``design`` (see the module docstring)."""
    from fabric.audit.linkload import op_phase_loads

    fabric, model, _hw, _notes, ops = op_phase_loads(design, workload, catalog=catalog, seed=seed, samples=samples)
    nic_bps = float(fabric.link_speed_bps)
    routing = design.routing
    acc: dict[str, list[float]] = {}

    def add(tier, nbytes, share):
        a = acc.setdefault(tier, [0.0, 0.0])
        a[0] += nbytes
        a[1] += nbytes * share

    for _job, op, _tr, phases in ops:
        scale = float(op.bytes) * float(op.count_per_step)
        for ph, pl in phases:
            r = nic_bps / max(pl.flows_per_port, 1.0)
            rate = {}                  # the rate a ball arrives at each tier (throttled by the tiers before it)
            cur = r
            for kinds in (("leaf uplinks",), ("pod core uplinks",), ("pod core downlinks",), ("leaf downlinks",)):
                cls = [c for c in pl.classes if c.kind in kinds and not c.pinned]
                for k in kinds:
                    rate[k] = cur
                cap = sum(c.members * c.n * model.link_bps(c.kind) for c in cls)
                offered = sum(c.members * c.k for c in cls) * cur
                if offered > cap > 0:
                    cur *= cap / offered
            rate["nic"] = cur
            for c in pl.classes:
                tier = _TIER_OF.get(c.kind)
                if tier is None or c.pinned:
                    continue
                ratio = model.link_bps(c.kind) / rate[c.kind]
                add(tier, c.members * c.k * c.ball * scale, share_oversubscribed(int(c.k), int(c.n), ratio,
                                                                                  routing))
            # NIC downlinks: the flows into each NIC port, each at its sender port's share
            p = ph.expand() if ph.all_pairs is not None else ph
            if p.src_gpu.size == 0:
                continue
            s_nic = fabric.gpu_nics[p.src_gpu, 0]
            d_nic = fabric.gpu_nics[p.dst_gpu, 0]
            cross = s_nic != d_nic
            if not cross.any():
                continue
            s_nic, d_nic, b = s_nic[cross], d_nic[cross], p.bytes_per_byte[cross]
            out_flows = np.bincount(s_nic - fabric.nic_base, minlength=fabric.n_nics)
            # through the switches only when leaving the leaf: throttled like the downlinks
            via = fabric.nic_ports[s_nic - fabric.nic_base, 0] != fabric.nic_ports[d_nic - fabric.nic_base, 0]
            frate = nic_bps / np.maximum(out_flows[s_nic - fabric.nic_base], 1) * np.where(via, rate["nic"] / r, 1.0)
            offered = np.bincount(d_nic - fabric.nic_base, weights=frate, minlength=fabric.n_nics)
            into = np.bincount(d_nic - fabric.nic_base, weights=b, minlength=fabric.n_nics)
            over = offered > nic_bps * (1 + 1e-9)
            add("leaf->host", float(into.sum()) * scale, float(into[over].sum() / into.sum()) if into.sum() else 0.0)
    return {t: TierSignal(tier=t, bytes_per_step=v[0], ecn_marked=v[1] / v[0] if v[0] else 0.0,
                          pause_exposure=v[1] / v[0] if v[0] else 0.0) for t, v in sorted(acc.items())}
