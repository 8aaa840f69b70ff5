"""Packet-level cross-check table: ns-3 vs the fluid bound vs fabric's flow-level evaluator (docs/validation-packet.md).

Run: python benchmarks/bench_packet.py [--quick] [--seed K] [--json FILE] [--write-examples DIR] [--cases I,J]

Each case is one op on a 2-tier leaf-spine of 32 single-GPU hosts at 10 Gb/s (4 leaves x 8 hosts; 1:1 with 8
uplinks per leaf, 2:1 with 4), ECMP (per-flow hash) or per-packet spraying: ring all-reduces (one over all 32
ranks; 8 rings of 4 ranks, one per leaf, whose every flow crosses the spines) and all-to-alls of 4 MB per rank
(fabric.validate.scenarios.TABLE_CASES). It prints a Markdown table: the ns-3 completion time, the fluid bound for
the same paths, the evaluator's p50 (p1-p99 over its hash draws) with the packet model's goodput and no per-step
software latency, the evaluator as shipped, and the relative errors. ``--quick`` halves the bytes;
``--write-examples DIR`` writes the designs, workloads and catalog as files for ``fabric validate``. ns-3 must be
installed (pip install .[packet]).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from fabric.validate.scenarios import (TABLE_CASES, VALIDATION_CATALOG, one_op_workload,  # noqa: E402
                                       validation_catalog, validation_design)

HOSTS = 32


def _ms(x):
    return f"{x * 1e3:.3f}" if x is not None and x == x and x != float("inf") else "-"


def _pct(x):
    return f"{x * 100:+.1f} %" if x is not None and x == x and abs(x) != float("inf") else "-"


def write_examples(out_dir: str) -> None:
    """Design, workload and catalog files of every case, for ``fabric validate``."""
    from fabric.design import design_to_dict
    from fabric.workload.model import workload_to_dict

    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "catalog.json"), "w") as fh:
        json.dump(VALIDATION_CATALOG, fh, indent=1)
    for o in (1, 2):
        for routing in ("ecmp", "spray"):
            with open(os.path.join(out_dir, f"leaf-spine-{o}to1-{routing}.json"), "w") as fh:
                json.dump(design_to_dict(validation_design(o, routing=routing, hosts=HOSTS)), fh, indent=1)
    for kind in ("all_reduce", "all_to_all"):
        with open(os.path.join(out_dir, f"{kind}-4MB-x{HOSTS}.json"), "w") as fh:
            json.dump(workload_to_dict(one_op_workload(kind, 4_000_000, HOSTS)), fh, indent=1)
    with open(os.path.join(out_dir, "all_reduce-2MB-8-rings-of-4.json"), "w") as fh:
        json.dump(workload_to_dict(one_op_workload("all_reduce", 2_000_000, HOSTS, group_size=4, stride=8)), fh,
                  indent=1)
    print(f"wrote examples to {out_dir}: fabric validate --design {out_dir}/leaf-spine-1to1-ecmp.json "
          f"--workload {out_dir}/all_to_all-4MB-x{HOSTS}.json --catalog {out_dir}/catalog.json --packet")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="half the bytes (about half the run time)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", help="comma-separated case numbers (default: all)")
    ap.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    ap.add_argument("--write-examples", metavar="DIR", help="write the case files for fabric validate and exit")
    args = ap.parse_args(argv)
    if args.write_examples:
        write_examples(args.write_examples)
        return 0
    from fabric.validate import ns3_available, run_packet
    from fabric.validate.ns3sim import NS3_MISSING, SimConfig, import_ns3

    if not ns3_available():
        print(NS3_MISSING, file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    import_ns3()
    t_import = time.perf_counter() - t0
    cat = validation_catalog()
    cases = list(enumerate(TABLE_CASES, 1))
    if args.cases:
        keep = {int(x) for x in args.cases.split(",")}
        cases = [c for c in cases if c[0] in keep]
    scale = 0.5 if args.quick else 1.0
    results = []
    print(f"ns-3 import {t_import:.1f} s; {HOSTS} hosts, 10 Gb/s, seed {args.seed}\n")
    header = ("| # | case | flows | ns-3 ms | fluid ms (same paths) | evaluator p50 ms [p1-p99] | evaluator vs ns-3 "
              "| same, typical draw | ns-3 vs fluid | evaluator vs fluid | as shipped ms | retx / drops | ns-3 run s |")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for i, c in cases:
        routing = c["routing"]
        design = validation_design(c["oversubscription"], routing=routing, hosts=HOSTS)
        wl = one_op_workload(c["kind"], int(c["bytes"] * scale), HOSTS, group_size=c["group_size"],
                             stride=c["stride"])
        cfg = SimConfig(switch_queue_packets=c["switch_queue_packets"])
        r = run_packet(design, wl, catalog=cat, seed=args.seed, routing=routing, config=cfg)
        label = c["label"]
        results.append({"case": i, "label": label, "config": c, **r.to_dict()})
        rng = f"{_ms(r.evaluator_p50_s)} [{_ms(r.evaluator_p1_s)}-{_ms(r.evaluator_p99_s)}]"
        print(f"| {i} | {label} | {r.flows} | {_ms(r.packet_s)} | {_ms(r.fluid_s)} | {rng} | {_pct(r.rel_error)} "
              f"| {_pct(r.rel_error_typical_draw) if routing == 'ecmp' else '='} | {_pct(r.fluid_gap)} "
              f"| {_pct(r.evaluator_vs_fluid)} | {_ms(r.evaluator_shipped_p50_s)} | {r.retransmissions} / {r.drops} "
              f"| {r.wall_s['ns3_run']:.1f} |",
              flush=True)
    lossless = [x for x in results if x["drops"] == 0]
    worst = max((abs(x["rel_error"]) for x in lossless), default=float("nan"))
    within = sum(abs(x["rel_error"]) <= 0.15 for x in lossless)
    print(f"\nwithout drops: {within}/{len(lossless)} within 15 %, worst |evaluator vs ns-3| {worst * 100:.1f} %; "
          f"with drops: {len(results) - len(lossless)} case(s); total {time.perf_counter() - t0:.0f} s")
    for x in results:
        if x["hash_mismatches"] or x["notes"]:
            print(f"case {x['case']}: {'; '.join(x['notes'])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"seed": args.seed, "hosts": HOSTS, "quick": args.quick, "results": results}, fh, indent=1,
                      default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
