"""Transport profiles: how much of the line rate a collective gets and what each algorithm step costs.

Each figure is a default with its basis; ``fabric calibrate`` (issue 7) fits them to measurements.

- ``bandwidth_efficiency``: goodput / line rate on the network. InfiniBand NDR reaches 46-48 of 50 GB/s busbw per NIC
  (facts.md section 2, nccl-tests issue 290) and SimAI uses 48.5 of 50 GB/s for CX7: 0.96. RoCEv2 on the same NICs
  loses a little to congestion control and headers: 0.94. Spraying Ethernet pays a reordering overhead: 0.93.
- ``step_alpha_s``: software + protocol latency of one algorithm step across the network (NCCL's tuning model:
  ring Simple 9.6 us, LL 2.7 us per network hop): 5 us InfiniBand, 6 us RoCE and spraying Ethernet.
- ``nvlink_efficiency``: an 8 x H100 NVLink ring all-reduce reaches ~360 GB/s busbw of 450 GB/s per direction: 0.80.
- ``nvlink_alpha_s``: per step inside the node: 1 us (SimAI's floor of 15 us for an 8-rank small all-reduce over
  14 ring steps).
- ``nvls_efficiency_scale``: NVLS (NVLink SHARP) moves (1 + 1/g) S per GPU through the NVSwitch; an 8 x H100 NVLS
  all-reduce reaches ~476 GB/s busbw (facts.md section 2, nccl-tests issue 290), i.e. 272 GB/s algbw x 1.125 =
  306 of 450 GB/s per direction = 0.68 of NVLink, 0.85 x ``nvlink_efficiency`` (the scale keeps NVLS tied to the
  calibrated NVLink efficiency). 2 x AWS p5 (NVLS tree) reach 481 GB/s busbw at 16 GiB = 0.64 of NVLink.
- ``peer_issue_s``: a direct all-to-all posts one transfer per peer; NCCL's tuning model charges 1 us per network
  post on Intel hosts (2 us AMD; src/graph/tuning.cc, ``getNetOverhead``). NVLink peers are charged the same (an
  assumption: on one A100 node the superbench all-to-all pays ~55 us more per call than the ring collectives,
  docs/validation.md, so 1 us per peer is if anything low; calibration's per-call overhead carries the rest). The
  posts overlap the transfers already in flight: an all-to-all takes max(transfer, peers x this) plus one round
  trip.
- ``adaptive_imbalance``: adaptive routing is modelled as a near-even split whose most loaded path carries this much
  more than the mean (an exposed assumption, not a sourced figure; facts.md section 3).
- ``small_message_floor_s``: minimum time of a collective under 1 MB by rank count (SimAI workload/Layer.cc):
  10/12/15/66/135/200/320 us for 2/4/8/16/32/64/128 ranks, log-interpolated and extrapolated linearly in p beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabric.errors import DesignError

__all__ = ["TransportProfile", "PROFILES", "profile_for", "small_message_floor_s"]

_FLOOR_RANKS = np.array([2, 4, 8, 16, 32, 64, 128], dtype=float)
_FLOOR_S = np.array([10, 12, 15, 66, 135, 200, 320], dtype=float) * 1e-6
#: Messages at or above this size are not subject to the small-message floor.
FLOOR_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class TransportProfile:
    """Efficiency and latency parameters of one transport (see the module docstring for their basis)."""

    name: str
    bandwidth_efficiency: float
    step_alpha_s: float
    nvlink_efficiency: float = 0.80
    nvlink_alpha_s: float = 1e-6
    nvls_efficiency_scale: float = 0.85
    peer_issue_s: float = 1e-6
    adaptive_imbalance: float = 0.05
    reorder_tolerant: bool = False
    in_network_reduction: bool = False
    #: fixed cost of one collective call (kernel launch, proxy set-up), seconds; calibration fits it per regime
    op_overhead_s: float = 0.0
    #: message-size regimes from calibration: ((max_bytes, efficiency_scale, alpha_scale[, op_overhead_s]), ...)
    #: in ascending max_bytes; an op of size S uses the first regime with S <= max_bytes (none: scales 1.0 and the
    #: base overhead). NCCL switches protocols (LL, LL128, Simple) by size, so small messages reach a smaller
    #: share of the bandwidth and pay a different per-call cost.
    regimes: tuple = ()

    def with_overrides(self, **kw) -> "TransportProfile":
        """A copy with calibrated values (unknown names are errors)."""
        from dataclasses import fields as _fields

        known = {f.name for f in _fields(self)}
        unknown = sorted(set(kw) - known)
        if unknown:
            raise DesignError(f"unknown transport parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if "regimes" in kw:
            kw["regimes"] = tuple(tuple(float(x) for x in r) for r in kw["regimes"])
        return replace(self, **kw)

    def scales_for(self, size_bytes: float) -> tuple[float, float, float]:
        """(efficiency scale, alpha scale, per-call overhead s) of the regime an op of ``size_bytes`` falls in."""
        for regime in self.regimes:
            if size_bytes <= regime[0]:
                overhead = regime[3] if len(regime) > 3 else self.op_overhead_s
                return regime[1], regime[2], overhead
        return 1.0, 1.0, self.op_overhead_s


PROFILES = {
    "infiniband": TransportProfile("infiniband", 0.96, 5e-6, reorder_tolerant=True, in_network_reduction=True),
    "roce": TransportProfile("roce", 0.94, 6e-6),
    "spray_ethernet": TransportProfile("spray_ethernet", 0.93, 6e-6, reorder_tolerant=True),
}


def profile_for(design, overrides: dict | None = None) -> TransportProfile:
    """The profile of the design's transport, with calibration ``overrides`` applied."""
    if design.transport not in PROFILES:
        raise DesignError(f"unknown transport {design.transport!r}")
    prof = PROFILES[design.transport]
    if overrides:
        prof = prof.with_overrides(**overrides)
    return prof


def small_message_floor_s(ranks: int, size_bytes: float) -> float:
    """SimAI's measured floor for collectives under 1 MB (0 for larger ones or a single rank)."""
    if ranks <= 1 or size_bytes >= FLOOR_MAX_BYTES:
        return 0.0
    if ranks <= _FLOOR_RANKS[-1]:
        return float(np.exp(np.interp(np.log(ranks), np.log(_FLOOR_RANKS), np.log(_FLOOR_S))))
    return float(_FLOOR_S[-1] * ranks / _FLOOR_RANKS[-1])
