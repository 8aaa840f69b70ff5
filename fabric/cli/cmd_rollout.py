"""``fabric rollout``: compare a measured before/after change with fabric's prediction; flag a drifted model."""

from __future__ import annotations

import argparse
import json

from fabric.cli.common import catalog_arg, check_samples

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "rollout",
        help="before/after check of a change: measured vs predicted, flags a model that drifted",
        description=(
            "Give the measurements taken before and after a change (rank traces with ProfilerStep markers, or "
            "nccl-tests runs) and the designs each ran on. fabric predicts the change (after / before) from the "
            "same designs and workloads and compares it with the measured one; a prediction off by more than the "
            "tolerance flags the model as drifted (recalibrate). Exit code 0: the model holds; 1: it drifted; 2: "
            "bad input."
        ),
        epilog=("examples:\n"
                "  fabric rollout --before old/rank*.json --before-design old.yaml --after new/rank*.json "
                "--after-design new.yaml\n"
                "  fabric rollout --before before.log --after after.log --before-design fat-tree --after-design "
                "fat-tree --gpus 16 --tolerance 0.1 --json"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--before", required=True, nargs="+", metavar="FILE", help="measurements before the change")
    p.add_argument("--after", required=True, nargs="+", metavar="FILE", help="measurements after the change")
    p.add_argument("--before-design", required=True, metavar="FILE|PRESET", help="the design 'before' ran on")
    p.add_argument("--after-design", required=True, metavar="FILE|PRESET", help="the design 'after' ran on")
    p.add_argument("--gpus", type=int, help="size of a preset design (default: the preset's own)")
    p.add_argument("--tolerance", type=float, default=0.15,
                   help="largest accepted |predicted / measured change - 1| (default 0.15 = 15 %%)")
    p.add_argument("--samples", type=int, default=64, help="Monte Carlo samples per evaluation (default 64)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file")
    p.add_argument("--calibration", metavar="FILE", help="calibration profile applied to both predictions")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.cli.common import calibration_arg
    from fabric.cli.common import load_design_arg, load_workload_files
    from fabric.calibrate.rollout import rollout_check

    check_samples(args.samples)
    catalog = catalog_arg(args.catalog)
    before, after = load_workload_files(args.before), load_workload_files(args.after)
    d0 = load_design_arg(args.before_design, args.gpus, catalog)
    d1 = load_design_arg(args.after_design, args.gpus, catalog)
    report = rollout_check(before, after, before_design=d0, after_design=d1, tolerance=args.tolerance,
                           catalog=catalog, transport_overrides=calibration_arg(args.calibration), samples=args.samples)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=float))
        return 1 if report.drifted else 0
    print(report.summary())
    print(f"\n{'what':40s} {'measured before':>16s} {'after':>12s} {'predicted before':>17s} {'after':>12s} "
          f"{'drift':>8s}")
    for r in report.rows[:40]:
        print(f"{r['what'][:40]:40s} {r['measured_before_s'] * 1e3:13.4g} ms {r['measured_after_s'] * 1e3:9.4g} ms "
              f"{r['predicted_before_s'] * 1e3:14.4g} ms {r['predicted_after_s'] * 1e3:9.4g} ms {r['drift']:+8.1%}")
    if len(report.rows) > 40:
        print(f"... {len(report.rows) - 40} more rows (--json lists them all)")
    for n in report.notes:
        print(f"note: {n}")
    return 1 if report.drifted else 0
