"""Validation table: the evaluator's mean/p50/p90 next to ns-3 packet-level runs over many seeds (docs/validation.md).

Every case is one op on a 16-host leaf-spine (4 leaves x 4 single-GPU hosts, 10 Gb/s; fabric.validate.scenarios
UPLINK_CASES): uplinks 1:1 (4 spines, one uplink each), 2:1 by fewer uplinks (2 spines, one uplink each), 2:1 by
slower uplinks (4 spines at 5 Gb/s: needs the design field ``uplink_gbps``); traffic a cross-leaf shift (host i
sends to host i+4 mod 16: a ring all-gather over 4 groups of 4 ranks with stride 4; 4 MB per flow) or an
all-to-all (240 flows of 1 MB: at 4 MB per flow one ns-3 run takes 40 s to 5 minutes on the shared machine, which
would put the table past an hour); routing per-flow ECMP or per-packet spraying (random next hop per packet);
transport TCP (ns-3's TCP NewReno; the evaluator's ``tcp`` profile) or reorder tolerant (the same TCP behind a receiver-side reorder buffer
at the destination leaf; the evaluator's ``uec`` profile). Under ECMP nothing is reordered, so one ECMP row stands
for both transports.

ns-3 runs each case once per seed: the seed salts the switches' ECMP hashes and seeds ns-3's random spraying, so
the ECMP rows are a distribution over hash draws, as the evaluator's are. The evaluator runs the same one-op
workload (4,096 Monte Carlo samples) told the packet model's goodput (line rate x 1448/1502) and no per-step
software latency, as ``fabric validate --packet`` does (docs/validation-packet.md); everything else, the reordering
penalty of a TCP-like transport included, is the evaluator's own model.

ns-3 results are cached per case and seed in ``benchmarks/data/validation_table_ns3.json`` (re-running only fills
what is missing), so the table can be reprinted against a changed evaluator in seconds with ``--no-ns3``.

Run: python benchmarks/bench_validation_table.py [--seeds-shift N] [--seeds-a2a N] [--cases SUBSTR,...]
     [--no-ns3] [--cache FILE] [--json FILE]
The full table takes about 25 minutes of ns-3 on one idle core (each all-to-all run ~10 s, each shift run ~2 s;
three to five times that while other jobs share the machine), plus ~15 s to import ns-3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.path.join(HERE, "data", "validation_table_ns3.json")
HOSTS = 16
#: bytes per flow of each traffic pattern
FLOW_BYTES = {"shift": 4_000_000, "all-to-all": 1_000_000}
TRAFFIC = ("shift", "all-to-all")
ROUTES = (("ecmp", "tcp"), ("spray", "tcp"), ("spray", "uec"))
TARGET = 0.15


def cases():
    """Every case of the table, in print order."""
    from fabric.validate.scenarios import UPLINK_CASES

    out = []
    for traffic in TRAFFIC:
        for uplinks in UPLINK_CASES:
            for routing, transport in ROUTES:
                out.append({"id": f"{traffic}|{uplinks}|{routing}|{transport}|{FLOW_BYTES[traffic]}",
                            "traffic": traffic,
                            "uplinks": uplinks, "routing": routing, "transport": transport})
    return out


def workload(traffic: str):
    """The one-op workload of ``traffic`` (``FLOW_BYTES`` per flow), and the algorithm the packet check forces."""
    from fabric.validate.scenarios import one_op_workload

    b = FLOW_BYTES[traffic]
    if traffic == "shift":
        # a ring all-gather of S over 4 ranks sends (4-1)/4 S from rank i to the next: S = 4/3 x bytes per flow
        return one_op_workload("all_gather", int(round(b * 4 / 3)), HOSTS, group_size=4, stride=4), \
            {"all_gather": "ring"}
    return one_op_workload("all_to_all", b * HOSTS, HOSTS), None


def _label(c) -> str:
    tr = {"tcp": "TCP", "uec": "reorder-tolerant"}[c["transport"]]
    route = "ECMP" if c["routing"] == "ecmp" else "spray"
    who = "TCP = reorder-tolerant" if c["routing"] == "ecmp" else tr
    return f"{c['traffic']} {FLOW_BYTES[c['traffic']] / 1e6:g} MB, {c['uplinks']}, {route}, {who}"


def _load(path):
    if os.path.exists(path):
        with open(path) as fh:
            return json.load(fh)
    return {"note": "ns-3 results of benchmarks/bench_validation_table.py, per case and seed", "runs": {}}


def _save(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def run_ns3(c, seed: int, cat) -> dict:
    """One ns-3 run of case ``c`` with ``seed``: the op's completion time and what the transport did."""
    from fabric.topology import build_fabric
    from fabric.validate import ns3sim
    from fabric.validate.fluid import fluid_bound, goodput_fraction
    from fabric.validate.network import packet_network, switch_salts
    from fabric.validate.packet import _flows_tuples, op_slice, slice_flows
    from fabric.validate.scenarios import table_design
    from fabric.evaluate.transport import profile_for

    design = table_design(c["uplinks"], routing=c["routing"], transport=c["transport"], hosts=HOSTS)
    fabric = build_fabric(design, cat)
    net = packet_network(fabric)
    wl, _alg = workload(c["traffic"])
    _, job, op = op_slice(wl, 0)
    src, dst, nbytes, _tr = slice_flows(fabric, design, job, op, seed=seed)
    flows = _flows_tuples(net, src, dst, nbytes)
    salts = switch_salts(net.n_switches, seed)
    g = goodput_fraction()
    fluid = float(fluid_bound(net, flows, routing=c["routing"], salts=salts, goodput=g)[0].max())
    cfg = ns3sim.SimConfig(reorder_buffer=profile_for(design).reorder_tolerant)
    t0 = time.perf_counter()
    sim = ns3sim.simulate(net, flows, routing=c["routing"], salts=salts, seed=seed, config=cfg,
                          expected_s=max(fluid, 1e-4))
    unfinished = int(np.isnan(sim.done_s).sum())
    return {"packet_s": float(np.nanmax(sim.done_s)) if not unfinished else None, "fluid_s": fluid,
            "flows": len(flows), "retransmissions": int(sim.retransmissions), "drops": int(sim.drops),
            "reorder_held": int(sim.extra.get("reorder_held", 0)), "unfinished": unfinished,
            "path_changes": int(sim.path_changes), "wall_s": round(time.perf_counter() - t0, 2)}


def evaluator(c, cat, samples: int = 4096) -> dict:
    """The evaluator's mean/p50/p90 of the case (packet model's goodput, no per-step software latency)."""
    from fabric.evaluate import evaluate
    from fabric.validate.fluid import goodput_fraction
    from fabric.validate.packet import op_slice
    from fabric.validate.scenarios import table_design

    design = table_design(c["uplinks"], routing=c["routing"], transport=c["transport"], hosts=HOSTS)
    wl, alg = workload(c["traffic"])
    wl1, _job, _op = op_slice(wl, 0)
    ev = evaluate(design, wl1, seed=0, samples=samples, catalog=cat, algorithms=alg,
                  transport_overrides={"bandwidth_efficiency": goodput_fraction(), "step_alpha_s": 0.0})
    t = np.asarray(ev.step_samples_s, float)
    return {"mean": float(t.mean()), "p50": float(np.percentile(t, 50)), "p90": float(np.percentile(t, 90))}


def _ms(x):
    return "-" if x is None else f"{x * 1e3:.2f}"


def _ratio(a, b):
    return "-" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds-shift", type=int, default=20, help="ns-3 seeds per shift case (default 20)")
    ap.add_argument("--seeds-a2a", type=int, default=10, help="ns-3 seeds per all-to-all case (default 10)")
    ap.add_argument("--cases", help="comma-separated substrings: run/print only cases whose id contains one")
    ap.add_argument("--no-ns3", action="store_true", help="use cached ns-3 results only (no simulation)")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help=f"ns-3 result cache (default {DEFAULT_CACHE})")
    ap.add_argument("--json", metavar="FILE", help="also write the table rows as JSON")
    args = ap.parse_args(argv)
    from fabric.validate.scenarios import uplinks_supported, validation_catalog

    cat = validation_catalog()
    todo = cases()
    if args.cases:
        keys = [k.strip() for k in args.cases.split(",") if k.strip()]
        todo = [c for c in todo if any(k in c["id"] for k in keys)]
    data = _load(args.cache)
    runs = data.setdefault("runs", {})
    t_start = time.perf_counter()
    if not args.no_ns3:
        from fabric.validate import ns3_available
        from fabric.validate.ns3sim import NS3_MISSING, import_ns3

        if not ns3_available():
            print(NS3_MISSING, file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        import_ns3()
        print(f"ns-3 import {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        for c in todo:
            if uplinks_supported(c["uplinks"]):
                continue
            n = args.seeds_shift if c["traffic"] == "shift" else args.seeds_a2a
            for seed in range(n):
                key = f"{c['id']}|seed{seed}"
                if key in runs:
                    continue
                runs[key] = run_ns3(c, seed, cat)
                _save(args.cache, data)
                r = runs[key]
                print(f"{key}: {_ms(r['packet_s'])} ms (fluid {_ms(r['fluid_s'])}), retx {r['retransmissions']}, "
                      f"wall {r['wall_s']:.1f} s", file=sys.stderr, flush=True)

    rows, missing = [], []
    print("| case | flows | seeds | ns-3 mean / p50 / p90 (ms) | evaluator mean / p50 / p90 (ms) "
          "| ratio mean | ratio p90 | ns-3 / fluid | TCP retx per run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in todo:
        why = uplinks_supported(c["uplinks"])
        if why:
            missing.append(f"{_label(c)}: {why}")
            print(f"| {_label(c)} | | | not run: {why} | | | | | |")
            continue
        mine = [v for k, v in runs.items() if k.rsplit("|", 1)[0] == c["id"] and v.get("packet_s")]
        if not mine:
            missing.append(f"{_label(c)}: no ns-3 runs cached")
            print(f"| {_label(c)} | | 0 | not run yet | | | | | |")
            continue
        pk = np.array([v["packet_s"] for v in mine])
        fl = np.array([v["fluid_s"] for v in mine])
        ns = {"mean": float(pk.mean()), "p50": float(np.percentile(pk, 50)), "p90": float(np.percentile(pk, 90))}
        ev = evaluator(c, cat)
        rm, r90 = ev["mean"] / ns["mean"], ev["p90"] / ns["p90"]
        ok = abs(rm - 1) <= TARGET and abs(r90 - 1) <= TARGET
        retx = float(np.mean([v["retransmissions"] for v in mine]))
        rows.append({"case": c, "label": _label(c), "flows": mine[0]["flows"], "seeds": len(mine), "ns3": ns,
                     "evaluator": ev, "ratio_mean": rm, "ratio_p90": r90, "within_target": ok,
                     "ns3_over_fluid": float((pk / fl).mean()), "retransmissions_per_run": retx})
        mark = "" if ok else " **"
        print(f"| {_label(c)} | {mine[0]['flows']} | {len(mine)} | {_ms(ns['mean'])} / {_ms(ns['p50'])} / "
              f"{_ms(ns['p90'])} | {_ms(ev['mean'])} / {_ms(ev['p50'])} / {_ms(ev['p90'])} | {rm:.2f}{mark} | "
              f"{r90:.2f}{mark} | {float((pk / fl).mean()):.2f} | {retx:,.0f} |", flush=True)
    within = sum(r["within_target"] for r in rows)
    print(f"\n{within}/{len(rows)} cases within {TARGET:.0%} on mean and p90 (** marks the others); "
          f"{time.perf_counter() - t_start:.0f} s")
    for m in missing:
        print(f"not in the table: {m}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "missing": missing}, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
