"""What usually causes a disagreement between a measured figure and the model's prediction (one table, used by
the CLI, the page and docs/audit.md)."""

from __future__ import annotations

__all__ = ["AGREE_LOW", "AGREE_HIGH", "collective_cause", "tail_cause", "SMALL_MESSAGE_BYTES"]

#: measured / predicted within [AGREE_LOW, AGREE_HIGH] counts as agreement
AGREE_LOW, AGREE_HIGH = 0.8, 1.25
#: below this many bytes per call a collective is latency-bound
SMALL_MESSAGE_BYTES = 64 * 1024

_SLOWER = {
    "all_to_all": "congestion control: all-to-all incast and ECMP collisions make DCQCN/ECN back off (or background "
                  "traffic shares the links)",
    "all_to_allv": "congestion control: all-to-all incast and ECMP collisions make DCQCN/ECN back off (or "
                   "background traffic shares the links)",
    "all_reduce": "placement: the ring/tree crosses more switch tiers than the modelled placement (ranks not packed "
                  "per node or rail), or background load on the uplinks",
    "all_gather": "placement: the ring crosses more switch tiers than modelled, or background load on the uplinks",
    "reduce_scatter": "placement: the ring crosses more switch tiers than modelled, or background load on the "
                      "uplinks",
    "send_recv": "placement: pipeline peers sit far apart in the fabric, or background load on their path",
}
_GENERIC_SLOWER = "background load on the shared links or a placement the model did not assume"
_LATENCY = ("latency-bound calls: per-call launch and synchronisation cost (NCCL protocol, host jitter) above the "
            "modelled latency; calibrate with nccl-tests (fabric calibrate)")
_FASTER = ("the model is pessimistic: more traffic stayed on NVLink or inside a node than the modelled placement, or "
           "the transport parameters need calibrating (fabric calibrate)")


def collective_cause(kind: str, bytes_per_call: int | None, ratio: float) -> str:
    """What usually makes a collective ``ratio`` = measured / predicted."""
    if AGREE_LOW <= ratio <= AGREE_HIGH:
        return "agrees"
    if ratio < AGREE_LOW:
        return _FASTER
    if bytes_per_call is not None and bytes_per_call < SMALL_MESSAGE_BYTES:
        return _LATENCY
    return _SLOWER.get(kind, _GENERIC_SLOWER)


def tail_cause(measured_ratio: float, predicted_ratio: float, straggler_rank: int | None) -> str:
    """What usually makes the measured tail (p99 / p50) heavier or lighter than the predicted one."""
    r = measured_ratio / predicted_ratio if predicted_ratio > 0 else float("inf")
    if AGREE_LOW <= r <= AGREE_HIGH:
        return "agrees"
    if r > AGREE_HIGH:
        who = f" (rank {straggler_rank} is the measured straggler)" if straggler_rank is not None else ""
        return (f"stragglers{who} and background load (other jobs, checkpoint bursts) the scenario does not model")
    return "the modelled compute jitter (compute_cv) is larger than measured"
