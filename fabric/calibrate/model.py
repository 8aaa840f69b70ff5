"""The evaluator's time of each measured point, and its decomposition for a fast fit.

:func:`evaluate_points` asks :func:`fabric.evaluate.evaluate` itself: one workload whose only job runs one op per
point (kind, bytes, group = all ranks), p50 of each op's time. That is the prediction every error is reported on.

For the fit, the evaluator's op time (docs/evaluator.md, step 5) is

    T = max(floor(p, S), max(max(B_nv / nvlink_efficiency, B_net / bandwidth_efficiency) / es(S),
                             n_peer x peer_issue_s)
                         + as(S) x (n_nv x nvlink_alpha_s + n_net x step_alpha_s + L_fix) + oh(S))

with ``B_nv``, ``B_net`` the op's NVLink and network seconds at efficiency 1, ``n_nv``, ``n_net`` its latency steps,
``L_fix`` the switch/NIC/propagation latency of its network steps, ``n_peer`` the network peers a direct
all-to-all posts to (their posting overlaps the transfer), ``es``/``as`` the regime scales of its size,
``oh`` the per-call overhead of its regime and
``floor`` the small-message floor. :func:`build_basis` measures these numbers per point with four calls to the
evaluator (efficiencies and alphas set so that one term dominates by many orders of magnitude and the floor never
binds; a fifth for ``n_peer`` when there are all-to-alls), so the least-squares fit needs no further evaluator
calls; :meth:`Basis.times` evaluates the expression for any overrides. The decomposition is exact for
single-phase algorithms (ring, trees, NVLS, direct) and checked against the evaluator after every fit. The
algorithm of each point is NCCL's choice, which depends on sizes and line rates, never on the fitted parameters,
so the four calls see the same algorithms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.evaluate.transport import profile_for, small_message_floor_s

__all__ = ["Basis", "build_basis", "evaluate_points", "probe_workload", "regime_scales", "CATCH_ALL_BYTES"]

#: ``max_bytes`` of a regime that covers every larger size (the evaluator compares sizes with <=).
CATCH_ALL_BYTES = float(2 ** 63)
_HUGE = 1e12          # an efficiency that makes a term vanish / an efficiency scale that magnifies it
_BIG_ALPHA = 1.0      # seconds per step: latency steps come out as whole numbers


def probe_workload(points):
    """A workload with one job of ``ranks`` ranks running each point once (its ops in point order)."""
    from fabric.workload.model import CommOp, Job, ProcessGroup, Workload

    ranks = points[0].ranks
    ops = tuple(CommOp(kind=p.kind, bytes=int(p.bytes), group="world", name=f"point{i}")
                for i, p in enumerate(points))
    job = Job(name="calibration", kind="training", world_size=ranks,
              groups=(ProcessGroup("world", ranks, "world"),), ops=ops)
    return Workload(jobs=(job,), name="calibration points")


def evaluate_points(design, catalog, points, overrides: dict | None = None, *, samples: int = 16,
                    seed: int = 0) -> np.ndarray:
    """p50 time (s) the evaluator predicts for each point with ``transport_overrides=overrides``."""
    from fabric.evaluate import evaluate

    ev = evaluate(design, probe_workload(points), seed=seed, samples=samples, catalog=catalog,
                  transport_overrides=dict(overrides or {}))
    return np.array([op.time_p50_s for op in ev.ops], dtype=float)


def regime_scales(sizes: np.ndarray, regimes, base_overhead_s: float = 0.0):
    """(efficiency scale, alpha scale, per-call overhead) per size, as ``TransportProfile.scales_for`` does."""
    es = np.ones(len(sizes))
    al = np.ones(len(sizes))
    oh = np.full(len(sizes), float(base_overhead_s))
    done = np.zeros(len(sizes), bool)
    for regime in regimes or ():
        hit = ~done & (sizes <= float(regime[0]))
        es[hit], al[hit] = float(regime[1]), float(regime[2])
        if len(regime) > 3:
            oh[hit] = float(regime[3])
        done |= hit
    return es, al, oh


@dataclass(frozen=True)
class Basis:
    """Per-point terms of the evaluator's time (see the module doc) and the profile they were measured on."""

    sizes: np.ndarray
    b_nv: np.ndarray
    b_net: np.ndarray
    n_nv: np.ndarray
    n_net: np.ndarray
    l_fix: np.ndarray
    floor: np.ndarray
    reference: dict
    n_peer: np.ndarray | None = None

    def times(self, overrides: dict | None = None, extra_s=None) -> np.ndarray:
        """The evaluator's p50 time per point under ``overrides`` (reference values for the rest).

        ``extra_s`` (per point, seconds) is added before the floor: a what-if term the evaluator does not have.
        """
        p = {**self.reference, **(overrides or {})}
        es, al, oh = regime_scales(self.sizes, p.get("regimes", ()), p.get("op_overhead_s", 0.0))
        bw = np.maximum(self.b_nv / p["nvlink_efficiency"], self.b_net / p["bandwidth_efficiency"]) / es
        if self.n_peer is not None:
            bw = np.maximum(bw, self.n_peer * p["peer_issue_s"])
        lat = al * (self.n_nv * p["nvlink_alpha_s"] + self.n_net * p["step_alpha_s"] + self.l_fix)
        return np.maximum(self.floor, bw + lat + oh + (0.0 if extra_s is None else extra_s))


def build_basis(design, catalog, points, *, samples: int = 16, seed: int = 0) -> Basis:
    """Measure the five terms of every point with four evaluator calls (see the module doc)."""
    prof = profile_for(design)
    reference = {"nvlink_efficiency": prof.nvlink_efficiency, "bandwidth_efficiency": prof.bandwidth_efficiency,
                 "nvlink_alpha_s": prof.nvlink_alpha_s, "step_alpha_s": prof.step_alpha_s,
                 "peer_issue_s": prof.peer_issue_s, "regimes": ()}
    sizes = np.array([p.bytes for p in points], dtype=float)
    floor = np.array([small_message_floor_s(p.ranks, p.bytes) for p in points])
    run = lambda **ov: evaluate_points(design, catalog, points, ov, samples=samples, seed=seed)  # noqa: E731
    magnify = ((CATCH_ALL_BYTES, 1.0 / _HUGE, 0.0),)      # bandwidth x 1e12, no latency
    silence = ((CATCH_ALL_BYTES, _HUGE ** 2, 1.0),)       # no bandwidth, latency as is
    zero = {"nvlink_alpha_s": 0.0, "step_alpha_s": 0.0}

    def bandwidth(t):
        return np.where(t > floor * (1 + 1e-9), t / _HUGE, 0.0)

    b_nv = bandwidth(run(nvlink_efficiency=1.0, bandwidth_efficiency=_HUGE, regimes=magnify, **zero))
    b_net = bandwidth(run(nvlink_efficiency=_HUGE, bandwidth_efficiency=1.0, regimes=magnify, **zero))
    t_nv = run(nvlink_alpha_s=_BIG_ALPHA, step_alpha_s=0.0, regimes=silence)
    t_net = run(nvlink_alpha_s=0.0, step_alpha_s=_BIG_ALPHA, regimes=silence)
    n_nv = np.round(t_nv / _BIG_ALPHA)
    n_net = np.round(t_net / _BIG_ALPHA)
    l_fix = np.where(n_net > 0, t_net - n_net * _BIG_ALPHA, 0.0)
    n_peer = None
    if any(p.kind in ("all_to_all", "all_to_allv") for p in points):
        # peers x 1 s of posting dwarfs bandwidth (x 1e-12) and latency (no alpha): whole numbers of peers
        t_peer = run(nvlink_alpha_s=0.0, step_alpha_s=0.0, peer_issue_s=_BIG_ALPHA, regimes=silence)
        n_peer = np.round(t_peer / _BIG_ALPHA)
    return Basis(sizes, b_nv, b_net, n_nv, n_net, np.maximum(l_fix, 0.0), floor, reference, n_peer)
