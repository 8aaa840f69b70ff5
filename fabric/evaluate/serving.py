"""Request-level latency of a serving job: arrivals, queueing, batching and each request's network time.

The evaluator gives, per Monte Carlo launch (one draw of ECMP hashes, faults and placement), the time of every
op of the serving job; :func:`serving_metrics` turns those into request latencies with a vectorised simulation
(docs/serving.md has every formula and what it is checked against):

- **arrivals** per replica (requests are spread over the replicas at random, so each sees 1/replicas of the
  rate): Poisson, or bursty (a two-state Markov-modulated Poisson process: ``burst_factor`` x the mean rate for a
  share ``burst_fraction`` of the time, bursts of ``burst_mean_s`` on average, the rest of the time at the rate
  that keeps the mean);
- **prefill**: one FIFO server per replica; the waits follow Lindley's recursion ``W[n+1] = max(0, W[n] + S[n] -
  A[n+1])``, computed for all requests at once as ``X[n] - min(0, min_{k<=n} X[k])`` with ``X`` the cumulative sum of
  ``S - A``. A request's service is its prefill compute plus the network time of its prefill ops (and of its
  remote KV fetch); the time to first token (TTFT) is its wait plus its service;
- **decode**: up to ``decode_batch`` sequences per replica per iteration; a sequence needs ``output_tokens - 1``
  iterations after its first token, each the decode compute plus the network time of one token step (its
  fan-out waits for its slowest flow: the evaluator's op time). Colocated, prefills take the GPUs ahead of decode
  iterations: a request's decode pauses for every prefill its replica runs while it decodes, the prefills of the
  same simulated timeline (:func:`decode_end_times`), so a request that meets more prefills has a longer TPOT (its
  tail; time lost to prefills: counted as queueing). A request waits for a free decode slot (a
  ``decode_batch``-server FIFO queue, its service the decode time stretched by ``1 / (1 - rho_prefill)`` on
  average); disaggregated, its KV cache crosses the network first and no prefill interrupts its decode.
  Time per output token (TPOT) = (completion - first token) / (output_tokens - 1);
- **competing classes** on shared links: a training job's collectives (active for the share of time it uses the
  link groups it shares with the service, with the slowdown the evaluator computes when both are active) and
  checkpoint bursts (active for burst duration / period, halving the network bandwidth: the evaluator's
  checkpoint rule) slow the network part of a request that overlaps them (prefill: the state at arrival; decode:
  the overlapped share of its decode time). A traffic class of its own (``design.serving_class``) removes both;
  a separate storage network (``design.storage_isolation``) removes the bursts.

Reported: TTFT and TPOT p50/p95/p99, SLO attainment (share of requests within both budgets), the split of the
p99 request's latency into queueing, compute, NVLink and network, and, when competing classes slow it, the p99
the service would have with them isolated. Deterministic for (inputs, seed).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from fabric.workload.model import Job, ServingSpec

__all__ = ["Competitor", "PhaseTimes", "lindley_waits", "poisson_arrivals", "bursty_arrivals", "fifo_multi_server",
           "decode_end_times", "simulate", "serving_metrics", "capacity_rps", "latency_vs_load", "REQUESTS_PER_LAUNCH",
           "MAX_LAUNCHES"]

#: Requests simulated per launch and launches used (at most): 32 x 512 = 16,384 requests, enough for a p99.
REQUESTS_PER_LAUNCH = 512
MAX_LAUNCHES = 32


@dataclass(frozen=True)
class Competitor:
    """Another traffic class on links the service uses: active ``active_fraction`` of the time in windows that
    repeat every ``period_s``; while active the service's network time is ``slowdown`` x (per launch) as long."""

    name: str
    active_fraction: float
    period_s: float
    slowdown: dict              # phase -> array[launches] of factors >= 1 (or a float)


@dataclass(frozen=True)
class PhaseTimes:
    """Per launch (arrays of length ``launches``): each phase's NVLink and network (scale-out) time, seconds.
    prefill and KV fetch per request; decode per token step; KV transfer per request."""

    nvlink: dict
    network: dict

    @property
    def launches(self) -> int:
        return len(next(iter(self.network.values())))


def lindley_waits(interarrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """FIFO single-server waits (before service) of requests ``0..n-1`` along the last axis; the first arrives to
    an empty queue. ``interarrival[n]`` is the gap between request n-1 and n (``interarrival[0]`` is ignored)."""
    d = np.zeros_like(service, dtype=float)
    d[..., 1:] = service[..., :-1] - interarrival[..., 1:]
    x = np.cumsum(d, axis=-1)
    return x - np.minimum(np.minimum.accumulate(x, axis=-1), 0.0)


def poisson_arrivals(rate_per_s: float, shape, rng: np.random.Generator) -> np.ndarray:
    """Arrival times of a Poisson process along the last axis of ``shape`` (seconds from 0)."""
    return np.cumsum(rng.exponential(1.0 / rate_per_s, size=shape), axis=-1)


def bursty_arrivals(rate_per_s: float, shape, rng: np.random.Generator, *, burst_factor: float,
                    burst_fraction: float, burst_mean_s: float) -> np.ndarray:
    """Arrival times of a two-state MMPP with mean rate ``rate_per_s``: ``burst_factor`` x the mean during bursts
    (a share ``burst_fraction`` of the time, exponential durations of mean ``burst_mean_s``), the rest of the time
    ``rate (1 - factor x fraction) / (1 - fraction)``. Thinning of a Poisson process at the peak rate."""
    if burst_fraction <= 0 or burst_factor <= 1:
        return poisson_arrivals(rate_per_s, shape, rng)
    hi = rate_per_s * burst_factor
    lo = rate_per_s * (1 - burst_factor * burst_fraction) / (1 - burst_fraction) if burst_fraction < 1 else hi
    n = shape[-1]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    out = np.empty((rows, n))
    calm_mean = burst_mean_s * (1 - burst_fraction) / burst_fraction
    for r in range(rows):
        got = np.zeros(0)
        t0 = 0.0
        while got.size < n:
            horizon = max(2.0 * (n - got.size) / rate_per_s, 10 * burst_mean_s)
            cand = t0 + np.cumsum(rng.exponential(1.0 / hi, size=int(hi * horizon * 1.2) + 16))
            end = cand[-1]
            # state switch times, starting in the calm state with a random offset
            sw, t, burst = [], t0 - rng.exponential(calm_mean), False
            while t < end:
                t += rng.exponential(burst_mean_s if burst else calm_mean)
                sw.append(t)
                burst = not burst
            idx = np.searchsorted(np.asarray(sw), cand, side="right")
            in_burst = (idx % 2) == 1
            keep = rng.random(cand.size) < np.where(in_burst, 1.0, lo / hi)
            got = np.concatenate([got, cand[keep]])
            t0 = end
        out[r] = got[:n]
    return out.reshape(shape)


def fifo_multi_server(ready: np.ndarray, service: np.ndarray, servers: int) -> np.ndarray:
    """Waits of requests (ready in nondecreasing order) at a FIFO queue of ``servers`` identical servers: each
    request takes the earliest free server. Skipped (all zeros) when no more than ``servers`` would ever overlap."""
    end = ready + service
    order_end = np.sort(end)
    # how many earlier requests are still in service when request i is ready, if nobody waited
    busy = np.arange(ready.size) - np.searchsorted(order_end, ready, side="right")
    if busy.max(initial=0) < servers:
        return np.zeros_like(ready)
    free = [0.0] * servers
    waits = np.empty_like(ready)
    for i in range(ready.size):
        t = heapq.heappop(free)
        start = t if t > ready[i] else ready[i]
        waits[i] = start - ready[i]
        heapq.heappush(free, start + service[i])
    return waits


def decode_end_times(start: np.ndarray, work: np.ndarray, prefill_start: np.ndarray, prefill_end: np.ndarray,
                     rho: float) -> np.ndarray:
    """When decodes that start at ``start`` and need ``work`` seconds of the replica's GPUs finish, if every
    prefill on the replica (busy from ``prefill_start`` to ``prefill_end``: one FIFO server, so the intervals are
    sorted and do not overlap) takes the GPUs ahead of them.

    With ``A(t)`` the time up to ``t`` the GPUs are free of prefills (slope 1 between prefills, flat during them),
    a decode ends at the first ``t`` with ``A(t) = A(start) + work``: its own work plus every prefill that begins
    before it is done. Past the last simulated prefill the GPUs stay free ``1 - rho`` of the time on average (the
    mean prefill share), so a decode running beyond the timeline is stretched by ``1 / (1 - rho)`` there."""
    ps = np.asarray(prefill_start, float)
    pe = np.asarray(prefill_end, float)
    start = np.asarray(start, float)
    if ps.size == 0:
        return start + work
    busy = pe - ps
    done = np.cumsum(busy)                            # prefill time up to the end of each prefill
    before = done - busy                              # ... up to its start
    a_start = ps - before                             # A at each prefill's start (non-decreasing)
    k = np.searchsorted(ps, start, side="right") - 1  # the last prefill started by ``start``
    kk = np.maximum(k, 0)
    in_prefill = (k >= 0) & (start < pe[kk])
    a0 = np.where(k < 0, start, np.where(in_prefill, a_start[kk], start - done[kk]))
    a1 = a0 + work
    m = np.searchsorted(a_start, a1, side="left")     # prefills that begin before the decode is done
    end = a1 + np.where(m > 0, done[np.maximum(m - 1, 0)], 0.0)
    a_last = pe[-1] - done[-1]                        # A at the end of the last prefill
    beyond = a1 > a_last
    free = max(1.0 - rho, 1e-3)
    return np.where(beyond, np.maximum(pe[-1], start) + (a1 - np.maximum(a_last, a0)) / free, end)


def _on(t: np.ndarray, period: float, frac: float, phase: np.ndarray) -> np.ndarray:
    return ((t + phase) % period) < frac * period


def _on_time(t0: np.ndarray, t1: np.ndarray, period: float, frac: float, phase: np.ndarray) -> np.ndarray:
    """Time within [t0, t1] at which a window of ``frac x period`` repeating every ``period`` is on."""
    def cum(t):
        u = t + phase
        return np.floor(u / period) * frac * period + np.minimum(u % period, frac * period)
    return cum(t1) - cum(t0)


def capacity_rps(spec: ServingSpec, times: PhaseTimes) -> float:
    """Requests per second the service sustains with its mean network times (the load at which queues grow
    without bound): colocated ``replicas / (S_prefill + (out - 1) x t_step / batch)``; disaggregated the smaller of
    ``prefill_replicas / S_prefill`` and ``replicas x batch / ((out - 1) x t_step)``."""
    s_p = spec.prefill_s + _mean(times, "prefill") + _mean(times, "kv_offload")
    steps = max(spec.output_tokens - 1, 0)
    t_it = spec.decode_step_s + _mean(times, "decode")
    dec = steps * t_it / spec.decode_batch
    if spec.mode == "colocated":
        return spec.replicas / (s_p + dec) if s_p + dec > 0 else math.inf
    pre = (spec.prefill_replicas or spec.replicas) / s_p if s_p > 0 else math.inf
    return min(pre, spec.replicas / dec if dec > 0 else math.inf)


def _mean(times: PhaseTimes, phase: str) -> float:
    return float(np.mean(times.nvlink.get(phase, 0.0)) + np.mean(times.network.get(phase, 0.0)))


def _per_launch(times: PhaseTimes, kind: str, phase: str, launches: int) -> np.ndarray:
    v = getattr(times, kind).get(phase)
    return np.zeros(launches) if v is None else np.broadcast_to(np.asarray(v, float), (launches,))


@dataclass
class _Sim:
    ttft: np.ndarray
    tpot: np.ndarray
    parts_ttft: dict = field(default_factory=dict)
    parts_tpot: dict = field(default_factory=dict)


def simulate(spec: ServingSpec, rate_per_s: float, times: PhaseTimes, competitors=(), *, seed: int = 0,
             requests_per_launch: int = REQUESTS_PER_LAUNCH) -> _Sim:
    """Simulate ``requests_per_launch`` requests of one replica in every launch; TTFT and TPOT of each, with
    their parts (queueing, compute, NVLink, network), flattened over launches."""
    rng = np.random.default_rng(seed)
    L, n = times.launches, int(requests_per_launch)
    pre_reps = spec.prefill_replicas or spec.replicas if spec.mode == "disaggregated" else spec.replicas
    lam = rate_per_s / pre_reps                                  # arrivals at one (prefill) replica
    if spec.arrival == "bursty":
        arr = bursty_arrivals(lam, (L, n), rng, burst_factor=spec.burst_factor, burst_fraction=spec.burst_fraction,
                              burst_mean_s=spec.burst_mean_s)
    else:
        arr = poisson_arrivals(lam, (L, n), rng)
    inter = np.diff(arr, axis=1, prepend=0.0)
    if spec.mode == "disaggregated" and pre_reps != spec.replicas:
        # a decode replica hears from prefill instances at its own rate: its own arrival stream, each request
        # taking the TTFT of the prefill simulated for the same index
        lam_d = rate_per_s / spec.replicas
        arr_d = (bursty_arrivals(lam_d, (L, n), rng, burst_factor=spec.burst_factor,
                                 burst_fraction=spec.burst_fraction, burst_mean_s=spec.burst_mean_s)
                 if spec.arrival == "bursty" else poisson_arrivals(lam_d, (L, n), rng))
    else:
        arr_d = arr
    g = lambda kind, ph: _per_launch(times, kind, ph, L)[:, None]          # noqa: E731
    phases = [(c, rng.uniform(0, c.period_s, size=(L, 1))) for c in competitors]

    def slow(ph, on_share):
        """Network-time factor of phase ``ph`` per request given each competitor's on share."""
        f = np.ones((L, n))
        for (c, _), share in zip(phases, on_share):
            k = np.asarray(c.slowdown.get(ph, 1.0), float)
            k = k[:, None] if k.ndim else k
            f = f + share * (k - 1.0)
        return f

    at_arrival = [_on(arr, c.period_s, c.active_fraction, ph).astype(float) for c, ph in phases]
    # prefill (with the remote KV fetch before it)
    net_p = (g("network", "prefill") * slow("prefill", at_arrival)
             + g("network", "kv_offload") * slow("kv_offload", at_arrival))
    nv_p = g("nvlink", "prefill") + g("nvlink", "kv_offload")
    comp_p = np.full((L, n), spec.prefill_s)
    s_p = comp_p + nv_p + net_p
    w_p = lindley_waits(inter, s_p)
    ttft = w_p + s_p
    first = arr_d + ttft
    # decode
    steps = max(spec.output_tokens - 1, 0)
    rho_p = 0.0
    if spec.mode == "colocated":
        rho_p = min(float(lam * s_p.mean()), 0.999)
    stretch = 1.0 / (1.0 - rho_p)
    nv_d = g("nvlink", "decode")
    q_d = g("network", "decode")
    t_quiet = spec.decode_step_s + nv_d + q_d
    span = steps * t_quiet * stretch
    dec_share = [_on_time(first, first + span, c.period_s, c.active_fraction, ph) / np.where(span > 0, span, 1.0)
                 for c, ph in phases]
    net_d = steps * q_d * slow("decode", dec_share)
    kv_share = [_on(first, c.period_s, c.active_fraction, ph).astype(float) for c, ph in phases]
    net_kv = g("network", "kv_transfer") * slow("kv_transfer", kv_share) + g("nvlink", "kv_transfer")
    comp_d = np.full((L, n), steps * spec.decode_step_s)
    busy_d = comp_d + steps * nv_d + net_d
    d_service = busy_d * stretch
    ready = first + net_kv
    w_d = np.zeros((L, n))
    if steps:
        order = np.argsort(ready, axis=1, kind="stable")
        for i in range(L):
            o = order[i]
            w_d[i, o] = fifo_multi_server(ready[i, o], d_service[i, o], spec.decode_batch)
    if spec.mode == "colocated" and steps:
        # each request's decode pauses for the prefills its replica runs meanwhile (the same timeline's)
        # (colocated, first token = the end of the request's own prefill: the same numbers, so no rounding makes a
        # decode start inside its own prefill)
        t0 = ready + w_d
        d_service = np.stack([decode_end_times(t0[i], busy_d[i], first[i] - s_p[i], first[i], rho_p)
                              for i in range(L)]) - t0
    after_first = net_kv + w_d + d_service
    tpot = after_first / steps if steps else np.zeros((L, n))
    sim = _Sim(ttft=ttft.ravel(), tpot=tpot.ravel())
    sim.parts_ttft = {"queueing_s": w_p.ravel(), "compute_s": comp_p.ravel(), "nvlink_s": np.broadcast_to(
        nv_p, (L, n)).ravel(), "network_s": net_p.ravel()}
    div = steps or 1
    sim.parts_tpot = {"queueing_s": ((w_d + d_service - busy_d) / div).ravel(),
                      "compute_s": (comp_d / div).ravel(),
                      "nvlink_s": (np.broadcast_to(steps * nv_d + g("nvlink", "kv_transfer"), (L, n)) / div).ravel(),
                      "network_s": ((net_d + net_kv - g("nvlink", "kv_transfer")) / div).ravel()}
    return sim


def _stats(x: np.ndarray) -> dict:
    p = np.percentile(x, (50, 95, 99))
    return {"p50": float(p[0]), "p95": float(p[1]), "p99": float(p[2]), "mean": float(x.mean())}


def _split_at_p99(x: np.ndarray, parts: dict) -> dict:
    """The parts of the requests around the p99 (between the 98.5th and 99.5th percentiles), scaled to add up to
    the p99."""
    lo, p99, hi = np.percentile(x, (98.5, 99, 99.5))
    band = (x >= lo) & (x <= hi)
    if not band.any():
        band = x >= lo
    means = {k: float(v[band].mean()) for k, v in parts.items()}
    tot = sum(means.values())
    return {k: (v / tot * float(p99) if tot > 0 else 0.0) for k, v in means.items()}


def _attainment(sim: _Sim, spec: ServingSpec) -> float | None:
    if spec.ttft_slo_s is None and spec.tpot_slo_s is None:
        return None
    ok = np.ones(sim.ttft.size, bool)
    if spec.ttft_slo_s is not None:
        ok &= sim.ttft <= spec.ttft_slo_s
    if spec.tpot_slo_s is not None:
        ok &= sim.tpot <= spec.tpot_slo_s
    return float(ok.mean())


def serving_metrics(job: Job, times: PhaseTimes, competitors=(), *, seed: int = 0, rate_per_s: float | None = None,
                    requests_per_launch: int = REQUESTS_PER_LAUNCH) -> dict:
    """TTFT/TPOT percentiles, SLO attainment, the p99 split and the load, for ``job`` (which has a ``serving``
    request structure) with the per-launch phase times ``times`` and the competing classes ``competitors``."""
    spec = job.serving
    rate = float(job.request_rate_per_s if rate_per_s is None else rate_per_s)
    cap = capacity_rps(spec, times)
    load = rate / cap if cap > 0 else math.inf
    out = {"request_rate_per_s": rate, "capacity_rps": cap, "load": load, "stable": bool(load < 1.0),
           # what the replicas sustain on compute alone (no network): the basis of a preset's default arrivals
           "compute_capacity_rps": _compute_capacity(spec),
           "mode": spec.mode, "replicas": spec.replicas, "ttft_slo_s": spec.ttft_slo_s, "tpot_slo_s": spec.tpot_slo_s,
           "requests_simulated": int(times.launches * requests_per_launch),
           "competitors": [{"name": c.name, "active_fraction": c.active_fraction, "period_s": c.period_s}
                           for c in competitors]}
    sim = simulate(spec, rate, times, competitors, seed=seed, requests_per_launch=requests_per_launch)
    out["ttft_s"], out["tpot_s"] = _stats(sim.ttft), _stats(sim.tpot)
    out["slo_attainment"] = _attainment(sim, spec)
    if not out["stable"]:
        out["note"] = (f"offered {rate:.3g} requests/s is {load:.0%} of the {cap:.3g} the service sustains: the "
                       "queue grows without bound, so these percentiles only grow with the simulated horizon")
    out["p99_split_ttft_s"] = _split_at_p99(sim.ttft, sim.parts_ttft)
    out["p99_split_tpot_s"] = _split_at_p99(sim.tpot, sim.parts_tpot)
    if competitors:
        quiet = simulate(spec, rate, times, (), seed=seed, requests_per_launch=requests_per_launch)
        out["isolated"] = {"ttft_p99_s": float(np.percentile(quiet.ttft, 99)),
                           "tpot_p99_s": float(np.percentile(quiet.tpot, 99)),
                           "slo_attainment": _attainment(quiet, spec)}
    return out


def _compute_capacity(spec: ServingSpec) -> float:
    """Requests per second the whole service sustains on compute alone
    (:func:`fabric.workload.serving.compute_capacity_per_replica` times its decode replicas)."""
    from fabric.workload.serving import compute_capacity_per_replica

    return float(compute_capacity_per_replica(spec) * spec.replicas)


def latency_vs_load(job: Job, times: PhaseTimes, competitors=(), *, loads=(0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95),
                    seed: int = 0, requests_per_launch: int = REQUESTS_PER_LAUNCH) -> list[dict]:
    """TTFT and TPOT percentiles at each share of the capacity (:func:`capacity_rps`)."""
    cap = capacity_rps(job.serving, times)
    rows = []
    for x in loads:
        m = serving_metrics(job, times, competitors, seed=seed, rate_per_s=x * cap,
                            requests_per_launch=requests_per_launch)
        rows.append({"load": float(x), "request_rate_per_s": x * cap, "ttft_p50_s": m["ttft_s"]["p50"],
                     "ttft_p99_s": m["ttft_s"]["p99"], "tpot_p50_s": m["tpot_s"]["p50"],
                     "tpot_p99_s": m["tpot_s"]["p99"], "slo_attainment": m["slo_attainment"]})
    return rows


# ------------------------------------------------------------------ from the evaluator's op times


def per_request_ops(job: Job) -> list:
    """The job's ops with their counts per request: decode ops run ``output_tokens - 1`` times (the first token
    comes from prefill), the others once per request as counted (:func:`fabric.workload.accounting.step_ops`)."""
    from fabric.workload.accounting import step_ops

    return step_ops(job)


def _phase_times(job: Job, run: dict, launches: int) -> PhaseTimes:
    nv: dict = {}
    net: dict = {}
    for op, t, share in zip(job.ops, run["op_times"], run["nv_shares"]):
        t = np.resize(np.asarray(t, float), max(np.size(t), launches))[:launches]
        share = np.resize(np.asarray(share, float), max(np.size(share), launches))[:launches]
        nv[op.phase] = nv.get(op.phase, 0.0) + op.count_per_step * t * share
        net[op.phase] = net.get(op.phase, 0.0) + op.count_per_step * t * (1.0 - share)
    if not net:
        net = {"decode": np.zeros(launches)}
    return PhaseTimes(nvlink=nv, network=net)


def _seed_for(seed: int, name: str) -> int:
    import hashlib

    return int(np.random.SeedSequence([int(seed), int.from_bytes(hashlib.sha1(name.encode()).digest()[:4], "big")])
               .generate_state(1)[0])


def serving_for_job(job: Job, alone: dict, busy: dict | None, competition: tuple, storage, design, burst_duration,
                    *, seed: int, samples: int, world_of: dict | None = None, curve: bool = False) -> dict:
    """The request-level metrics of serving job ``job`` from the evaluator's runs: ``alone`` (its op times with no
    other job on the fabric), ``busy`` (while the other jobs are active on the link groups it shares with them;
    None when it shares none or has a class of its own), ``competition`` = (their active share, their period),
    the workload's storage jobs, the design, and ``burst_duration(bytes_per_nic)`` the evaluator's checkpoint
    burst length."""
    launches = min(samples, MAX_LAUNCHES)
    times = _phase_times(job, alone, launches)
    competitors = []
    active, period = competition
    weighted = design.serving_class and design.serving_priority == "weighted"
    if busy is not None and active > 0 and period > 0 and (not design.serving_class or weighted):
        slow_t = _phase_times(job, busy, launches)
        factors = {ph: np.divide(slow_t.network[ph], q, out=np.ones(launches), where=q > 0)
                   for ph, q in ((ph, np.asarray(v, float)) for ph, v in times.network.items())}
        competitors.append(Competitor("training traffic on shared links", float(active), float(period), factors))
    if (not design.serving_class or weighted) and not design.storage_isolation:
        burst_factor = 1.0 / design.serving_weight if weighted else 2.0     # the class keeps its weight of the link
        for s in storage:
            if not s.burst_bytes or not s.burst_period_s:
                continue
            writers = (world_of or {}).get(s.burst_target, s.world_size or job.world_size)
            nics = max(1, int(round(writers * design.nics_per_gpu)))
            duration = float(burst_duration(s.burst_bytes / nics))
            competitors.append(Competitor(f"checkpoint bursts ({s.name})", min(1.0, duration / s.burst_period_s),
                                          float(s.burst_period_s), {ph: burst_factor for ph in times.network}))
    out = serving_metrics(job, times, tuple(competitors), seed=_seed_for(seed, job.name))
    if curve:
        out["latency_vs_load"] = latency_vs_load(job, times, tuple(competitors), seed=_seed_for(seed, job.name),
                                                 requests_per_launch=REQUESTS_PER_LAUNCH // 4)
    out["isolation"] = (f"traffic class of its own (weighted {design.serving_weight:g})" if weighted else
                        "traffic class of its own" if design.serving_class else
                        "storage on its own network" if design.storage_isolation else "shared")
    return out
