"""``fabric upgrade``: what to add to an installed fabric within an upgrade budget and the racks' power limits."""

from __future__ import annotations

import argparse
import json
import sys

from fabric.errors import FabricError
from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "upgrade",
        help="upgrade an installed fabric within a budget: the front of upgrade cost vs p99, free policy first",
        description=(
            "Read an installed fabric (a design file, or the JSON 'fabric build --json' writes, whose items may "
            "list spares) and search its upgrades: more leaf or spine uplinks, a tier, a plane, faster uplinks, "
            "other NICs, a storage network, free policy. What stays installed costs nothing, what is added costs "
            "the catalog price, what is taken out brings its resale value (default 0). Every option within the "
            "budget, rack power, facility power, rack units, cable count, free-port reserve and re-cabling limits is evaluated on the "
            "workload; the answer is the cheapest upgrade meeting the p99 target (a free policy change first when "
            "it suffices), and the front of upgrade cost vs p99. Details: docs/upgrade.md."
        ),
        epilog=("examples:\n  fabric build --preset fat-tree --gpus 256 --json > out/installed.json\n"
                "  fabric upgrade --existing out/installed.json -w sample_traces/mixtral-8x7b.json "
                "--budget-usd 500000\n"
                "  fabric upgrade --existing my.yaml -w w.json --match fat-tree --rack-power-kw 45 --json"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--existing", "-e", required=True, metavar="FILE",
                   help="the installed fabric: a design file (.json/.yaml) or 'fabric build --json' output")
    p.add_argument("--workload", "-w", required=True, nargs="+", metavar="FILE", help="workload or trace file(s)")
    p.add_argument("--budget-usd", type=float, help="most capex of what is added (USD; default no limit)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--p99-target-ms", type=float, help="the p99 step time to reach (ms)")
    target.add_argument("--match", metavar="FILE|PRESET",
                        help="reach the p99 of this design at the installed GPU count (e.g. fat-tree: the 1:1 "
                             "fabric built new); also prints what building it new costs")
    p.add_argument("--max-p99-under-failure-ms", type=float,
                   help="most p99 under the worst single switch or link failure (ms); evaluates failures")
    p.add_argument("--rack-power-kw", type=float, help="most power of any compute rack after the upgrade (kW)")
    p.add_argument("--facility-power-kw", type=float,
                   help="most facility power after it (kW): IT power (servers plus network) x --pue")
    p.add_argument("--pue", type=float, default=1.3,
                   help="facility power / IT power for the facility limit and total (default 1.3)")
    p.add_argument("--free-rack-units", type=float, help="rack units free for new switches")
    p.add_argument("--max-cables", type=int, help="most cables after the upgrade")
    p.add_argument("--min-free-ports", type=int,
                   help="physical ports every switch keeps free after the upgrade (a reserve; default none)")
    p.add_argument("--max-recabled-links", type=int,
                   help="most server links moved to another leaf (0: only free ports of installed switches)")
    p.add_argument("--resale", type=float, default=0.0,
                   help="share of the price paid that a removed item brings back, 0-1 (default 0)")
    p.add_argument("--moves", metavar="LIST",
                   help="comma list of moves to try (default all): leaf_uplinks, spine_uplinks, tier, plane, "
                        "uplink_speed, nic, storage_network, policy")
    p.add_argument("--failures", action="store_true",
                   help="also evaluate each upgrade under its worst single failure (second front)")
    p.add_argument("--policies", choices=("auto", "all"), default="auto",
                   help="auto: every policy on the front's hardware; all: every policy on every hardware")
    p.add_argument("--scenario", "-s", default="baseline", help="scenario preset, file or inline JSON")
    p.add_argument("--samples", type=int, default=128, help="Monte Carlo samples per evaluation (default 128)")
    p.add_argument("--seed", type=int, default=0, help="random seed (the same for every upgrade)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--calibration", metavar="FILE", help="calibration profile (fitted transport parameters)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _kw(v):
    return None if v is None else v * 1e3


def _ms(v):
    return None if v is None else v / 1e3


def run(args) -> int:
    from fabric.brownfield import UpgradeLimits, load_installed, upgrade_front
    from fabric.brownfield.upgrade import MOVES, step_time_text
    from fabric.cli.common import calibration_arg
    from fabric.cli.common import load_design_arg, load_workload_files
    from fabric.cost import bill_of_materials
    from fabric.evaluate import evaluate, load_scenario
    from fabric.topology import build_fabric

    check_samples(args.samples)
    moves = None
    if args.moves:
        moves = [m.strip() for m in args.moves.split(",") if m.strip()]
        bad = [m for m in moves if m not in MOVES]
        if bad:
            raise FabricError(f"--moves: unknown move(s) {', '.join(bad)}; choose from {', '.join(MOVES)}")
    catalog = catalog_arg(args.catalog)
    installed = load_installed(args.existing, catalog)
    workload = load_workload_files(args.workload)
    scenario = load_scenario(args.scenario)
    overrides = calibration_arg(args.calibration)
    target_s, match = _ms(args.p99_target_ms), None
    if args.match:
        ref = load_design_arg(args.match, installed.design.gpus, catalog)
        if ref.gpus != installed.design.gpus:
            ref = ref.replace(gpus=installed.design.gpus)
        target_s = float(evaluate(ref, workload, scenario, catalog=catalog, seed=args.seed, samples=args.samples,
                                  transport_overrides=overrides).step_time_s["p99"])
        match = {"design": ref.name, "p99_s": target_s,
                 "new_cost_usd": float(bill_of_materials(build_fabric(ref, catalog), catalog).cost_usd)}
    limits = UpgradeLimits(budget_usd=args.budget_usd, rack_power_w=_kw(args.rack_power_kw),
                           facility_power_w=_kw(args.facility_power_kw), free_rack_units=args.free_rack_units,
                           cable_count=args.max_cables, min_free_ports=args.min_free_ports,
                           max_recabled_server_links=args.max_recabled_links,
                           p99_target_s=target_s, max_p99_under_failure_s=_ms(args.max_p99_under_failure_ms),
                           resale=args.resale, pue=args.pue)
    res = upgrade_front(installed, workload, limits, scenario=scenario, catalog=catalog, seed=args.seed,
                        samples=args.samples, moves=moves, policies=args.policies, failures=args.failures,
                        transport_overrides=overrides)
    if args.json:
        out = res.to_dict()
        out["match"] = match
        json.dump(out, sys.stdout, indent=2, default=float)
        print()
        return 0
    b = res.baseline
    d = installed.design
    print(f"installed: {d.name} [{installed.source}], {d.gpus:,} GPUs: "
          + ", ".join(f"{n:,} {t}" for t, n in b.switches.items())
          + f"; items worth ${installed.inventory.cost_usd:,.0f}; p99 {step_time_text(b.p99_s)}; "
            f"IT power {b.site.total_w / 1e3:,.1f} kW, facility {b.site.facility_w(args.pue) / 1e3:,.1f} kW at PUE "
            f"{args.pue:g}, up to {b.site.max_rack_w / 1e3:,.1f} kW per compute rack")
    print("free switch ports: " + "; ".join(f"{t} {v['free']:,} of {v['ports']:,} (fewest on one switch "
                                            f"{v['fewest_free']})" for t, v in res.free_ports.items()))
    if match:
        print(f"target: the p99 of {match['design']} ({step_time_text(target_s)}), which costs "
              f"${match['new_cost_usd']:,.0f} built new")
    print(res.answer)
    c = res.counts
    print(f"{c['hardware_options']} hardware options ({c['takes_out_switches']} would take installed switches out, "
          f"{c['over_limits']} over a limit), {c['policies']} policies, {c['evaluations']} evaluations")
    if res.front:
        print(f"\nfront (net cost vs p99):\n{'net $':>12s} {'p99 ms':>9s}  change")
        for u in res.front:
            print(f"{u.net_usd:>12,.0f} {u.p99_s * 1e3:>9.1f}  {u.label()}")
    if res.failure_front:
        print(f"\nfront under the worst single failure:\n{'net $':>12s} {'p99 ms':>9s}  change")
        for u in res.failure_front:
            print(f"{u.net_usd:>12,.0f} {u.p99_under_failure_s * 1e3:>9.1f}  {u.label()}")
    if res.best and res.best.delta.text():
        print("\nbuy and take out for the answer:")
        for line in res.best.delta.text():
            print(f"  {line}")
    if match and res.best is not None:
        save = match["new_cost_usd"] - res.best.added_usd
        print(f"\nthe answer buys ${res.best.added_usd:,.0f}: ${save:,.0f} less than building {match['design']} new")
    return 0
