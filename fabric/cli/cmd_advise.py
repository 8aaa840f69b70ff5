"""``fabric advise``: the single changes of a design that shorten its p99 step, free ones first."""

from __future__ import annotations

import argparse
import json

from fabric.cli.common import catalog_arg, check_samples
from fabric.evaluate.engine import DEFAULT_SAMPLES

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "advise",
        help="cheapest fixes: single changes of a design ranked by p99 gained per dollar, free policy first",
        description=(
            "Try every single change of a design (routing, queue pairs, placement rule, PXN: free; lower "
            "oversubscription, a second plane, faster NICs, a separate storage network: hardware), evaluate each "
            "on the workload with the same seed, and rank those that shorten the p99 step: free changes by the "
            "time they save, then hardware by dollars per millisecond of p99 saved. 'No change helps' is an "
            "answer."
        ),
        epilog=("examples:\n  fabric advise -w sample_traces/mixtral-8x7b.json -d fat-tree --gpus 256\n"
                "  fabric advise -w w.json -d my.yaml --scenario fail-spine --json"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workload", "-w", required=True, nargs="+", metavar="FILE", help="workload or trace file(s)")
    p.add_argument("--design", "-d", required=True, metavar="FILE|PRESET", help="design file or preset name")
    p.add_argument("--gpus", type=int, help="resize the design to this many GPUs")
    p.add_argument("--scenario", "-s", default="baseline", help="scenario preset, file or inline JSON")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES,
                   help=f"Monte Carlo samples per evaluation (default {DEFAULT_SAMPLES}, as fabric evaluate)")
    p.add_argument("--seed", type=int, default=0, help="random seed (the same for every change)")
    p.add_argument("--min-gain", type=float, default=0.005,
                   help="smallest p99 gain, as a share of the p99, that counts as advice (default 0.005)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--calibration", metavar="FILE", help="calibration profile (fitted transport parameters)")
    p.add_argument("--json", action="store_true", help="print the ranked advice as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.review.advisor import advise
    from fabric.cli.common import calibration_arg, warn_calibration
    from fabric.cli.common import load_design_arg, load_workload_files
    from fabric.evaluate import load_scenario

    check_samples(args.samples)
    catalog = catalog_arg(args.catalog)
    workload = load_workload_files(args.workload)
    design = load_design_arg(args.design, args.gpus, catalog)
    warn_calibration(args.calibration, design=design, catalog=catalog)
    res = advise(design, workload, load_scenario(args.scenario), catalog=catalog, seed=args.seed,
                 samples=args.samples, min_gain=args.min_gain, transport_overrides=calibration_arg(args.calibration))
    if args.json:
        print(json.dumps(res, indent=2, default=float))
        return 0
    print(f"{design.name}: p99 {res['p99_s'] * 1e3:,.2f} ms, network ${res['cost_usd']:,.0f}")
    print(res["answer"])
    if res["advice"]:
        from fabric.search.tradeoff import usd_per_ms_text

        print(f"\n{'change':70s} {'kind':>8s} {'p99 change':>12s} {'cost change':>13s} {'price of p99 saved':>20s}")
        for a in res["advice"]:
            per = usd_per_ms_text(a["delta_cost_usd"], a["delta_p99_s"], res["p99_s"])
            dc = a["delta_cost_usd"]
            cost = f"{'-' if dc < 0 else '+'}${abs(dc):,.0f}"
            print(f"{a['change'][:70]:70s} {a['kind']:>8s} {a['delta_p99_s'] * 1e3:+10.2f}ms {cost:>13s} "
                  f"{per:>20s}")
    if "serving_answer" in res:
        sp = res["serving_p99_s"]
        print(f"\nserving (worst job): p99 TTFT {sp['ttft'] * 1e3:,.1f} ms, p99 TPOT {sp['tpot'] * 1e3:,.2f} ms")
        print(res["serving_answer"])
        for a in res["serving_advice"]:
            print(f"  {a['change'][:70]:70s} {a['kind']:>8s} TTFT {a['delta_ttft_p99_s'] * 1e3:+9.1f} ms  TPOT "
                  f"{a['delta_tpot_p99_s'] * 1e3:+8.2f} ms  cost {a['delta_cost_usd']:+,.0f}")
    for n in res["not_possible"]:
        print(f"not possible: {n['change']}: {n['reason']}")
    return 0
