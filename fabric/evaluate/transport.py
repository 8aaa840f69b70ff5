"""Transport profiles: how much of the line rate a collective gets and what each algorithm step costs.

Each figure is a default with its basis; ``fabric calibrate`` (issue 7) fits them to measurements.

Four profiles (``fabric.design.TRANSPORTS``):

- ``infiniband``: InfiniBand verbs; with adaptive routing the HCA accepts packets out of order, so spraying costs
  nothing extra (reorder tolerant).
- ``roce``: RoCEv2 on NICs that recover with go-back-N: a packet that arrives out of order is treated as a loss and
  everything after it is resent, so spraying is allowed but pays ``reorder_slowdown`` (below).
- ``tcp``: a kernel TCP transport (NCCL's socket transport, storage over TCP): three duplicate ACKs of reordering
  look like a loss and halve the window (fast retransmit), so spraying pays ``reorder_slowdown``.
- ``uec``: reorder-tolerant Ethernet: NICs that place packets out of order and track them per packet (Ultra
  Ethernet's UET, AWS SRD under EFA, NVIDIA Spectrum-X's out-of-order placement); spraying costs nothing extra.
  Design files that say ``spray_ethernet`` (this profile's old name) still load (``LEGACY_TRANSPORTS``).

Parameters:

- ``bandwidth_efficiency``: goodput / line rate on the network. InfiniBand NDR reaches 46-48 of 50 GB/s busbw per NIC
  (facts.md section 2, nccl-tests issue 290) and SimAI uses 48.5 of 50 GB/s for CX7: 0.96. RoCEv2 on the same NICs
  loses a little to congestion control and headers: 0.94. TCP with a 1500-byte MTU carries 1448 payload bytes per
  1538 on the wire (Ethernet preamble, header, FCS and gap 38 bytes; IPv4 20; TCP 20 + timestamps 12): 0.94.
  Reorder-tolerant Ethernet pays per-packet tracking headers: 0.93.
- ``step_alpha_s``: software + protocol latency of one algorithm step across the network (NCCL's tuning model:
  ring Simple 9.6 us, LL 2.7 us per network hop): 5 us InfiniBand, 6 us RoCE and reorder-tolerant Ethernet; 10 us
  kernel TCP (an assumption: socket calls and copies on both ends add a few microseconds per message over RDMA;
  ``fabric calibrate`` fits it from measurements).
- ``reorder_tolerant`` / ``reorder_slowdown`` / ``reorder_floor``: per-packet spraying (``routing: spray``)
  delivers a flow's packets over paths whose queues differ, so they arrive out of order. Reorder-tolerant
  transports absorb it. On the others (three duplicate ACKs look like a loss to TCP: it halves its window and resends
  segments that were not lost; go-back-N RoCE resends everything after a gap) a sprayed phase takes longer by
  (:func:`reorder_factor`)

      1 + (reorder_slowdown - 1) x u x g,   u = clip((rho x L - 1) / (L - 1), 0, 1)

  ``rho``: utilization of the busiest sprayed link group (L links) over the phase. Packets queue, and so overtake
  each other, only when several senders share those links: ``u`` is 0 while one sender's flow could fill them
  alone (rho <= 1/L) and 1 when they are full. ``g``: how much of it the other flows cannot hide. While the NICs
  set the pace, a backed-off flow's share is taken up by the other ``n`` flows of its NIC port: g = 1/n. When the
  sprayed links set the pace, their queues grow, reordering is deep and the spurious retransmissions take
  bottleneck capacity: g = floor + (1 - floor)/n with n the larger of the flows per port and the flows per link.
  TCP: ``reorder_slowdown`` 2.0, ``reorder_floor`` 0.45, fitted to ns-3 runs (``benchmarks/bench_reorder.py``: TCP
  NewReno, random per-packet spraying, 10 Gb/s leaf-spine, 4 MB flows: 1-4 senders per leaf over 4 uplinks run
  1.0/1.3/1.7/1.9x the same flows behind a reorder buffer; 2-4 senders of 1-8 flows on full links 1.4-1.9x; table
  in docs/evaluator.md, "Reordering"). RoCEv2 with go-back-N: 7.0 (Nie et al., "An out-of-order packet processing
  algorithm of RoCE based on improved SACK", IAEAC 2022: under multipath reordering a selective-repeat RoCE reaches
  7x the throughput of go-back-N RoCE in a single-flow simulation), with the same form and floor.
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
- ``hash_correlation``: share of the flows (0-1) whose ECMP hash at a spine and at a core follows the leaf's (hash
  polarization between tiers: identical hash functions and seeds); default 0, independent per-switch hashes, as
  before. An assumption with no source for values in between (:mod:`fabric.evaluate.polarization`,
  docs/evaluator.md "Hash polarization").
- ``small_message_floor_s``: minimum time of a collective under 1 MB by rank count (SimAI workload/Layer.cc):
  10/12/15/66/135/200/320 us for 2/4/8/16/32/64/128 ranks, log-interpolated and extrapolated linearly in p beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabric.errors import DesignError

__all__ = ["TransportProfile", "PROFILES", "LEGACY_TRANSPORTS", "profile_for", "reorder_factor",
           "small_message_floor_s"]

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
    #: share of the flows whose spine and core ECMP hash follows the leaf's (hash polarization between tiers,
    #: fabric.evaluate.polarization); 0: independent per-switch hashes
    hash_correlation: float = 0.0
    reorder_tolerant: bool = False
    #: time multiple of a sprayed flow alone on its NIC port when the transport is not reorder tolerant
    reorder_slowdown: float = 1.0
    #: share of that penalty left however many flows share sprayed links that are the bottleneck
    reorder_floor: float = 0.45
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
        if "hash_correlation" in kw:
            from fabric.evaluate.polarization import check_hash_correlation

            kw["hash_correlation"] = check_hash_correlation(kw["hash_correlation"])
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
    "roce": TransportProfile("roce", 0.94, 6e-6, reorder_slowdown=7.0),
    "tcp": TransportProfile("tcp", 0.94, 10e-6, reorder_slowdown=2.0),
    "uec": TransportProfile("uec", 0.93, 6e-6, reorder_tolerant=True),
}

#: Old transport names that still load, and what they are called now.
LEGACY_TRANSPORTS = {"spray_ethernet": "uec"}


def profile_for(design, overrides: dict | None = None) -> TransportProfile:
    """The profile of the design's transport, with calibration ``overrides`` applied."""
    name = LEGACY_TRANSPORTS.get(design.transport, design.transport)
    if name not in PROFILES:
        raise DesignError(f"unknown transport {design.transport!r}")
    prof = PROFILES[name]
    if overrides:
        prof = prof.with_overrides(**overrides)
    return prof


def reorder_factor(reorder_slowdown: float, rho, links, flows_per_port, flows_per_link=1.0,
                   floor: float = 0.45) -> np.ndarray:
    """Time multiple of a sprayed phase on a reorder-intolerant transport (see the module docstring).

    ``rho``: utilization of the busiest sprayed link group over the phase (0-1; 1: those links set the pace);
    ``links``: its link count; ``flows_per_port``: concurrent flows of a sending NIC port; ``flows_per_link``:
    flows per link of that group. Arrays broadcast (one value per Monte Carlo sample).
    """
    rho = np.clip(np.asarray(rho, dtype=float), 0.0, 1.0)
    L = np.maximum(np.asarray(links, dtype=float), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(L > 1, np.clip((rho * L - 1.0) / (L - 1.0), 0.0, 1.0), 0.0)
    n_port = np.maximum(np.asarray(flows_per_port, dtype=float), 1.0)
    n_link = np.maximum(np.asarray(flows_per_link, dtype=float), 1.0)
    g = np.where(rho >= 1.0 - 1e-9, floor + (1.0 - floor) / np.maximum(n_port, n_link), 1.0 / n_port)
    return 1.0 + max(float(reorder_slowdown) - 1.0, 0.0) * u * g


def small_message_floor_s(ranks: int, size_bytes: float) -> float:
    """SimAI's measured floor for collectives under 1 MB (0 for larger ones or a single rank)."""
    if ranks <= 1 or size_bytes >= FLOOR_MAX_BYTES:
        return 0.0
    if ranks <= _FLOOR_RANKS[-1]:
        return float(np.exp(np.interp(np.log(ranks), np.log(_FLOOR_RANKS), np.log(_FLOOR_S))))
    return float(_FLOOR_S[-1] * ranks / _FLOOR_RANKS[-1])
