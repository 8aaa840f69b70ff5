"""``fabric validate``: cross-check the evaluator on one op against a packet-level simulation (ns-3).

``fabric validate --design D --workload W --packet [--op-index K] [--json]`` runs the op in ns-3 on the design's
exact cabling, and prints the packet-level time, the fluid bound for the same paths, the evaluator's time and the
relative error (docs/validation-packet.md). ns-3 is the optional ``packet`` extra (``pip install .[packet]``).
"""

from __future__ import annotations

import argparse
import json
import math

from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "validate",
        help="cross-check one op of a workload against a packet-level simulation (ns-3)",
        description=(
            "Run one communication op of a workload on a design in the ns-3 packet-level simulator (TCP bulk "
            "flows on the design's exact leaf-spine cabling, per-flow ECMP hashing or per-packet spraying) and "
            "compare its completion time with the fluid bound for the same paths and with fabric's flow-level "
            "evaluator. Needs the optional ns-3 bindings: pip install .[packet]. Keep it small (at most 64 "
            "endpoints, one GPU per host): ns-3 simulates about 10k packets per second here, and importing it "
            "takes ~20 s."
        ),
        epilog=("examples:\n"
                "  python benchmarks/bench_packet.py --write-examples /tmp/val\n"
                "  fabric validate --design /tmp/val/leaf-spine-1to1-ecmp.json \\\n"
                "      --workload /tmp/val/all_to_all-4MB-x32.json --catalog /tmp/val/catalog.json --packet\n"
                "  fabric validate -d my-design.yaml -w trace.json --packet --op-index 2 --routing spray --json"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--design", "-d", required=True, metavar="FILE|PRESET",
                   help="design file (.json/.yaml) or preset name; needs gpus_per_node: 1")
    p.add_argument("--workload", "-w", required=True, nargs="+", metavar="FILE",
                   help="workload or trace file(s), any supported format")
    p.add_argument("--packet", action="store_true",
                   help="run the packet-level (ns-3) cross-check (the only check so far; required)")
    p.add_argument("--op-index", type=int, default=0, metavar="K",
                   help="which op to run: index over the training/inference jobs' ops in file order (default 0)")
    p.add_argument("--routing", choices=("ecmp", "spray", "spray_rr"),
                   help="ecmp: per-flow 5-tuple hash; spray: random next hop per packet (ns-3's RandomEcmpRouting); "
                        "spray_rr: round robin per packet (default: the design's ecmp or spray)")
    p.add_argument("--gpus", type=int, help="resize the design to this many GPUs")
    p.add_argument("--one-gpu-per-host", action="store_true",
                   help="make every GPU its own host (gpus_per_node: 1, scale_up_size: 1), e.g. to check a preset")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--seed", type=int, default=0, help="seed of the hash salts, ns-3's RNG and the evaluator")
    p.add_argument("--samples", type=int, default=256, help="evaluator Monte Carlo samples (default 256)")
    p.add_argument("--switch-queue", type=int, default=None, metavar="PACKETS",
                   help="drop-tail FIFO size of every switch port in packets (default: lossless, deep enough that "
                        "nothing drops, like a PFC/credit-based fabric)")
    p.add_argument("--max-endpoints", type=int, default=64, help="largest group accepted (default 64)")
    p.add_argument("--flows", action="store_true", help="with --json: include every flow's times")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.cli.common import load_design_arg, load_workload_files
    from fabric.errors import FabricError

    if not args.packet:
        raise FabricError("say which check to run: --packet (the packet-level ns-3 cross-check)")
    check_samples(args.samples)
    from fabric.validate import ns3_available
    from fabric.validate.ns3sim import NS3_MISSING, SimConfig

    if not ns3_available():
        raise FabricError(NS3_MISSING)
    catalog = catalog_arg(args.catalog)
    design = load_design_arg(args.design, args.gpus, catalog)
    if args.one_gpu_per_host:
        design = design.replace(gpus_per_node=1, scale_up_size=1)
    workload = load_workload_files(args.workload)
    cfg = SimConfig() if args.switch_queue is None else SimConfig(switch_queue_packets=_positive(args.switch_queue))
    from fabric.validate import run_packet

    r = run_packet(design, workload, catalog=catalog, seed=args.seed, routing=args.routing, op_index=args.op_index,
                   config=cfg, samples=args.samples, max_endpoints=args.max_endpoints)
    if args.json:
        print(json.dumps(r.to_dict(include_flows=args.flows), indent=2, default=_json_default))
        return 0
    print(format_result(r))
    return 0


def _positive(n: int) -> int:
    from fabric.errors import FabricError

    if n < 1:
        raise FabricError(f"--switch-queue must be at least 1 packet, got {n}")
    return n


def _json_default(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return float(x)


def _queue(q) -> str:
    return "lossless (deep enough that nothing drops)" if q == "lossless" else f"{q} packets (drop-tail)"


def _other_speeds(net: dict) -> str:
    """`` (leaf-spine 5 Gb/s)`` for link kinds that do not run at the hosts' speed."""
    other = [f"{k} {v:g} Gb/s" for k, v in net.get("link_speeds_gbps", {}).items() if v != net["link_speed_gbps"]]
    return f" ({', '.join(other)})" if other else ""


def format_result(r) -> str:
    """The human-readable report of a :class:`fabric.validate.PacketResult`."""
    ms = lambda x: f"{x * 1e3:,.3f} ms" if x is not None and math.isfinite(x) else "did not finish"  # noqa: E731
    pct = lambda x: f"{x * 100:+.1f} %" if x is not None and math.isfinite(x) else "n/a"  # noqa: E731
    op, net = r.op, r.network
    lines = [
        f"{r.design} | op {op['index']}: {op['kind']} {op['bytes'] / 1e6:,.2f} MB over {op['group_size']} ranks "
        f"({op['algorithm']}), {r.flows} flows | routing {r.routing}, seed {r.seed}",
        f"network: {net['hosts']} hosts, {net['switches']} switches, {net['links']} links at "
        f"{net['link_speed_gbps']:g} Gb/s{_other_speeds(net)}; FIFO switch ports: "
        f"{_queue(net['switch_queue_packets'])}; TCP "
        f"{net['congestion_control']}, MSS {net['mss_bytes']} B (goodput {r.goodput_fraction:.1%} of line rate)"
        + ("; reorder buffer at the receiving leaf (the design's transport tolerates reordering)"
           if net.get("reorder_buffer") else ""),
        "",
        f"  packet level (ns-3)        {ms(r.packet_s):>14s}",
        f"  fluid bound (same paths)   {ms(r.fluid_s):>14s}   ns-3 vs fluid {pct(r.fluid_gap)} "
        "(transport: TCP start-up, sharing, ACKs, losses)",
        f"  flow-level evaluator p50   {ms(r.evaluator_p50_s):>14s}   p1-p99 {r.evaluator_p1_s * 1e3:,.3f}-"
        f"{r.evaluator_p99_s * 1e3:,.3f} ms",
        f"  relative error (evaluator vs ns-3): {pct(r.rel_error)}",
        f"  evaluator as shipped (its own transport profile, per-step latency): {ms(r.evaluator_shipped_p50_s)}",
    ]
    if r.fluid_draws_p50_s is not None:
        lines.append(f"  fluid bound over other hash draws, p50: {ms(r.fluid_draws_p50_s)} (this draw "
                     f"{pct(r.fluid_s / r.fluid_draws_p50_s - 1.0)}); relative error at the typical draw: "
                     f"{pct(r.rel_error_typical_draw)}")
    lines.append(f"  drops {r.drops}, TCP retransmissions {r.retransmissions}, busiest link "
                 f"{r.busiest_link_utilization:.0%} busy; ns-3 run {r.wall_s['ns3_run']:.1f} s")
    for n in r.notes:
        lines.append(f"  note: {n}")
    return "\n".join(lines)
