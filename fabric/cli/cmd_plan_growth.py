"""``fabric plan-growth``: what to buy at each stage of a growing cluster, against designing each from scratch."""

from __future__ import annotations

import argparse
import json
import sys

from fabric.errors import FabricError
from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "plan-growth",
        help="staged growth (e.g. 1024,4096,16384 GPUs): purchases per stage that throw nothing away",
        description=(
            "Plan the purchases of a cluster growing in stages: at each stage the fabric must meet its p99 target "
            "(default: the p99 of the base design's full-bisection version, 1:1, at that size plus --tolerance) "
            "and no switch bought earlier may be taken out. Each stage's candidates (the base design on each "
            "switch model of its kind, with the tiers the size needs or one more, and 1:1 / 1.5:1 / 2:1 leaves "
            "and spines) are evaluated on the stage's workload; the plan is the cheapest sequence of purchases, "
            "compared with designing each stage from scratch. Details: docs/upgrade.md."
        ),
        epilog=("examples:\n  fabric plan-growth --stages 1024,4096,16384 -w sample_traces/mixtral-8x7b.json\n"
                "  fabric plan-growth --stages 512,2048 -w w.json -d dgx-h100-superpod --p99-target-ms 900,950 "
                "--json\n"
                "  fabric plan-growth --stages 1024,4096 -w w.json --existing examples/installed-2to1.yaml"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--stages", required=True, metavar="LIST", help="GPU counts per stage, e.g. 1024,4096,16384")
    p.add_argument("--workload", "-w", required=True, nargs="+", metavar="FILE",
                   help="workload or trace file(s), grown to each stage's GPU count along --grow")
    p.add_argument("--grow", default="dp", help="parallelism dimension the workload grows along (default dp)")
    p.add_argument("--design", "-d", default=None, metavar="FILE|PRESET",
                   help="base design: family, GPU, NIC and switch kind (default fat-tree); its size is ignored")
    p.add_argument("--existing", "-e", metavar="FILE",
                   help="the installed fabric to grow from (a design file or `fabric build --json` output, as for "
                        "`fabric upgrade --existing`): stage 1 has at least its GPUs, its items are not bought "
                        "again and none of its switches is taken out; the base design is its design")
    p.add_argument("--p99-target-ms", metavar="LIST", help="p99 target per stage (ms), comma list")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="without targets: a stage's target is the p99 of the base design at 1:1 (full bisection) "
                        "at that size times 1 + this (default 0.02)")
    p.add_argument("--allow-discard", action="store_true",
                   help="allow plans that take out switches bought earlier (default: never)")
    p.add_argument("--scenario", "-s", default="baseline", help="scenario preset, file or inline JSON")
    p.add_argument("--samples", type=int, default=64, help="Monte Carlo samples per evaluation (default 64)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.brownfield import GrowthStage, parse_stages, plan_growth
    from fabric.cli.common import load_design_arg, load_workload_files
    from fabric.evaluate import load_scenario
    from fabric.workload.scale import scale_to

    gpus = parse_stages(args.stages)
    check_samples(args.samples)
    targets = [None] * len(gpus)
    if args.p99_target_ms:
        try:
            targets = [float(x) / 1e3 for x in args.p99_target_ms.split(",") if x.strip()]
        except ValueError as err:
            raise FabricError(f"--p99-target-ms: expected numbers separated by commas, got "
                              f"{args.p99_target_ms!r}") from err
        if len(targets) != len(gpus) or any(not t > 0 for t in targets):
            raise FabricError(f"--p99-target-ms: give one target > 0 per stage ({len(gpus)}), got "
                              f"{args.p99_target_ms!r}")
    catalog = catalog_arg(args.catalog)
    installed = None
    if args.existing:
        from fabric.brownfield import load_installed

        if args.design is not None:
            raise FabricError("give --existing (grow the installed fabric) or --design (a base design), not both")
        installed = load_installed(args.existing, catalog)
        base = installed.design
    else:
        base = load_design_arg(args.design or "fat-tree", gpus[0], catalog)
    workload = load_workload_files(args.workload)
    stages = [GrowthStage(g, scale_to(workload, g, grow=args.grow), t) for g, t in zip(gpus, targets)]
    plan = plan_growth(stages, base, installed=installed, catalog=catalog, scenario=load_scenario(args.scenario),
                       seed=args.seed, samples=args.samples, tolerance=args.tolerance,
                       allow_discard=args.allow_discard)
    out = plan.to_dict()
    if args.json:
        json.dump(out, sys.stdout, indent=2, default=float)
        print()
        return 0
    print(plan.answer)
    for note in plan.notes:
        print(f"note: {note}")
    print()
    for i, s in enumerate(out["stages"]):
        print(f"stage {i + 1}: {s['gpus']:,} GPUs, p99 target {s['p99_target_s'] * 1e3:,.1f} ms "
              f"[{s['p99_target_from']}] "
              f"({s['candidates_meeting_target']} of {s['candidates']} candidates meet it)")
        print(f"  plan:    {s['plan']['label']}, p99 {s['plan']['p99_s'] * 1e3:,.1f} ms; buys ${s['buy_usd']:,.0f}"
              + (f"; takes out {s['take_out']} (cost ${s['take_out_value_usd']:,.0f})" if s["take_out"] else ""))
        thrown = (f"; growing into it throws away {s['scratch_throws_away']} (cost "
                  f"${s['scratch_throws_away_usd']:,.0f})" if s["scratch_throws_away"] else "")
        print(f"  scratch: {s['scratch']['label']}, p99 {s['scratch']['p99_s'] * 1e3:,.1f} ms; "
              f"${s['scratch']['cost_usd']:,.0f} new{thrown}")
    print(f"\ntotal: plan ${out['total_usd']:,.0f}; {len(gpus)} designs from scratch ${out['scratch_total_usd']:,.0f} "
          f"bought new, ${out['scratch_grown_usd']:,.0f} grown into each other")
    return 0
