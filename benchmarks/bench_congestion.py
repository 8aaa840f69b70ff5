"""Predicted congestion signals against ns-3: ECN marking and PFC pause exposure per tier (docs/validation-packet.md).

For each case (the packet-validation hardware: 32 single-GPU hosts on 10 Gb/s leaf-spines, fabric.validate.scenarios)
fabric's estimate (fabric.audit.congestion, from the evaluator's per-phase link loads) is set beside what ns-3's
switch queues show on the same flows (fabric.audit.ns3queues: bytes that join a queue holding >= K = 32 KiB, the
share of busy time a queue holds >= XOFF = 128 KiB), per tier, over several seeds (ECMP hash salts).

Run: python benchmarks/bench_congestion.py [--seeds N] [--cases SUBSTR,...] [--json FILE]
About 1-3 minutes of ns-3 plus ~15 s to import it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fabric.validate.scenarios import one_op_workload, validation_catalog, validation_design  # noqa: E402

CASES = [
    ("8 rings x 4 across leaves, 1:1, ECMP", "all_reduce", 2_000_000, 1, "ecmp", dict(group_size=4, stride=8)),
    ("8 rings x 4 across leaves, 1:1, RR spray", "all_reduce", 2_000_000, 1, "spray_rr", dict(group_size=4, stride=8)),
    ("8 rings x 4 across leaves, 2:1, ECMP", "all_reduce", 2_000_000, 2, "ecmp", dict(group_size=4, stride=8)),
    ("8 rings x 4 across leaves, 2:1, RR spray", "all_reduce", 2_000_000, 2, "spray_rr", dict(group_size=4, stride=8)),
    ("all-to-all 1 MB, 1:1, ECMP", "all_to_all", 1_000_000, 1, "ecmp", {}),
    ("all-to-all 1 MB, 2:1, ECMP", "all_to_all", 1_000_000, 2, "ecmp", {}),
]


def run_case(case, seeds):
    from fabric.audit.congestion import congestion_estimate
    from fabric.audit.ns3queues import QueueProbe, by_tier
    from fabric.evaluate.transport import profile_for
    from fabric.topology import build_fabric
    from fabric.validate import ns3sim
    from fabric.validate.network import packet_network, switch_salts
    from fabric.validate.packet import _design_for, _flows_tuples, op_slice, slice_flows

    label, kind, size, o, routing, kw = case
    cat = validation_catalog()
    # spraying runs on a reorder-tolerant transport (uec: the packet model's receiver-side reorder buffer), as a
    # sprayed lossless fabric would: plain TCP takes reordering for loss and never builds the queues measured here
    design = _design_for(validation_design(o, routing=routing, hosts=32,
                                           transport="uec" if routing != "ecmp" else "tcp"), routing)
    wl = one_op_workload(kind, size, 32, **kw)
    est = congestion_estimate(design, wl, catalog=cat)
    fabric = build_fabric(design, cat)
    net = packet_network(fabric)
    _, job, op = op_slice(wl, 0)
    src, dst, nbytes, _ = slice_flows(fabric, design, job, op)
    flows = _flows_tuples(net, src, dst, nbytes)
    cfg = ns3sim.SimConfig(reorder_buffer=profile_for(design).reorder_tolerant)
    runs = []
    for seed in seeds:
        probe = QueueProbe(net)
        t0 = time.perf_counter()
        sim = ns3sim.simulate(net, flows, routing=routing, salts=switch_salts(net.n_switches, seed), seed=seed,
                              config=cfg, probe=probe)
        tiers = by_tier(net, sim.extra["probe"])
        runs.append({"seed": seed, "wall_s": round(time.perf_counter() - t0, 2), "tiers": tiers})
    out = {"label": label, "estimate": {t: {"ecn_marked": s.ecn_marked, "pause_exposure": s.pause_exposure}
                                        for t, s in est.items()}, "ns3": runs}
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cases", default="")
    ap.add_argument("--json", default=os.path.join(HERE, "data", "congestion_ns3.json"))
    args = ap.parse_args(argv)
    want = [w.strip() for w in args.cases.split(",") if w.strip()]
    cases = [c for c in CASES if not want or any(w in c[0] for w in want)]
    results = []
    print(f"{'case':<40} {'tier':<12} {'ECN est':>8} {'ECN ns-3':>9} {'pause est':>9} {'pause ns-3':>10}")
    for case in cases:
        seeds = list(range(args.seeds)) if case[4] == "ecmp" else list(range(max(1, args.seeds // 2)))
        r = run_case(case, seeds)
        results.append(r)
        tiers = sorted(set(r["estimate"]) | {t for run in r["ns3"] for t in run["tiers"]})
        for t in tiers:
            if t.startswith("host"):
                continue
            e = r["estimate"].get(t, {"ecn_marked": 0.0, "pause_exposure": 0.0})
            m = mean([run["tiers"].get(t, {}).get("marked", 0.0) for run in r["ns3"]])
            p = mean([run["tiers"].get(t, {}).get("pause", 0.0) for run in r["ns3"]])
            print(f"{r['label']:<40} {t:<12} {e['ecn_marked']:>8.2f} {m:>9.2f} {e['pause_exposure']:>9.2f} "
                  f"{p:>10.2f}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
