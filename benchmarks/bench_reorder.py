"""What reordering costs a TCP-like transport under per-packet spraying: ns-3 runs behind the transport model.

The evaluator's reordering factor (fabric.evaluate.transport.reorder_factor, docs/evaluator.md "Reordering") was
fitted to these runs. Each case: a 16-host leaf-spine (4 leaves x 4 single-GPU hosts, 10 Gb/s;
fabric.validate.scenarios UPLINK_CASES "1:1" with 4 uplinks per leaf or "2:1 fewer uplinks" with 2), some hosts
of every leaf sending 4 MB flows (one or several each) to hosts of the next leaf, random per-packet spraying, over
3 seeds. It prints ns-3's completion time over the fluid (even split) time for plain TCP NewReno and for the same
TCP behind a receiver-side reorder buffer (the reorder-tolerant transport), and the evaluator's factor for the
case (the utilization rho of the sprayed uplinks, their count L, and the flows n sharing the bottleneck).

Run: python benchmarks/bench_reorder.py   (about 4 minutes of ns-3 on one idle core, plus ~15 s to import it)
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

FLOW_BYTES = 4_000_000
SEEDS = (0, 1, 2)


def cases():
    """(uplinks, senders per leaf, flows per sender)."""
    out = [("1:1", c, 1) for c in (1, 2, 3, 4)] + [("2:1 fewer uplinks", c, 1) for c in (1, 2, 3, 4)]
    return out + [("1:1", 2, 2), ("1:1", 4, 2), ("1:1", 4, 4), ("1:1", 4, 8), ("2:1 fewer uplinks", 2, 4),
                  ("2:1 fewer uplinks", 4, 2), ("2:1 fewer uplinks", 4, 4)]


def flows_of(senders: int, per_sender: int):
    """Host 4L + i (i < senders) sends ``per_sender`` flows to hosts of leaf L + 1 (mod 4)."""
    out = []
    for leaf in range(4):
        for i in range(senders):
            for j in range(per_sender):
                out.append((4 * leaf + i, (4 * (leaf + 1) + (i + j) % 4) % 16, FLOW_BYTES // per_sender))
    return out


def model_factor(uplinks: str, senders: int, per_sender: int) -> float:
    from fabric.evaluate.transport import PROFILES, reorder_factor

    L = 4 if uplinks == "1:1" else 2
    load = senders / L                       # flows at line rate per uplink, before the links cap them
    tcp = PROFILES["tcp"]
    return float(reorder_factor(tcp.reorder_slowdown, min(load, 1.0), L, per_sender, senders * per_sender / L,
                                tcp.reorder_floor))


def main() -> int:
    from fabric.topology import build_fabric
    from fabric.validate import ns3_available, ns3sim
    from fabric.validate.fluid import fluid_bound, goodput_fraction
    from fabric.validate.network import packet_network, switch_salts
    from fabric.validate.packet import DST_PORT_BASE, SRC_PORT_BASE
    from fabric.validate.scenarios import table_design, validation_catalog

    if not ns3_available():
        print(ns3sim.NS3_MISSING, file=sys.stderr)
        return 2
    ns3sim.import_ns3()
    cat = validation_catalog()
    g = goodput_fraction()
    print("| sprayed uplinks L | senders per leaf | flows per sender | TCP: ns-3 / even split | reorder buffer: "
          "ns-3 / even split | TCP / reorder buffer | model |")
    print("|---|---|---|---|---|---|---|")
    for uplinks, senders, per in cases():
        net = packet_network(build_fabric(table_design(uplinks, routing="spray"), cat))
        flows = [(s, t, b, SRC_PORT_BASE + i, DST_PORT_BASE + i) for i, (s, t, b) in enumerate(flows_of(senders, per))]
        fluid = float(fluid_bound(net, flows, routing="spray", goodput=g)[0].max())
        ratios = {}
        for rb in (False, True):
            r = []
            for seed in SEEDS:
                sim = ns3sim.simulate(net, flows, routing="spray", salts=switch_salts(net.n_switches, seed), seed=seed,
                                      config=ns3sim.SimConfig(reorder_buffer=rb), expected_s=fluid)
                r.append(float(np.nanmax(sim.done_s)) / fluid)
            ratios[rb] = float(np.mean(r))
        L = 4 if uplinks == "1:1" else 2
        print(f"| {L} | {senders} | {per} | {ratios[False]:.2f} | {ratios[True]:.2f} | "
              f"{ratios[False] / ratios[True]:.2f} | {model_factor(uplinks, senders, per):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
