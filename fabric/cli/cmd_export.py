"""``fabric export``: the design package (cabling plan, rack elevations, NetBox CSVs, bill of materials, design and,
with a workload, its ASTRA-sim input) as one zip, the cabling plan alone as CSV, or the ASTRA-sim input alone."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fabric.cli.common import catalog_arg, load_workload_files
from fabric.errors import FabricError

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write a design's build package: cabling plan, rack elevations, NetBox CSVs, bill of materials",
        description=(
            "Write the package a team builds a design from (docs/cabling.md): the design file, the bill of "
            "materials, the cabling plan (every link with both ends' rack, U, device, port, cage and breakout lane, "
            "optics, cable and length), each rack's links, the audit's port-to-link mapping, rack elevations (SVG), "
            "and the CSV files NetBox's bulk import takes; with -w, the design and the workload's training step as "
            "ASTRA-sim 2.x input (network and system configuration, a Chakra trace per rank). The plan's checks (ports used once, counts equal to the "
            "bill of materials, lengths within reach, rack power, planes, rails, uplink spread) are printed and "
            "written into the package. Exit status: 0 when every check passes, 3 when the package was written "
            "but a check failed, 2 on bad input (nothing written)."),
        epilog=("examples:\n  fabric export --preset dgx-h100-superpod --out superpod.zip\n"
                "  fabric export my_design.yaml --out package.zip --json\n"
                "  fabric export my_design.yaml --plan-csv cabling.csv\n"
                "  fabric export --preset dgx-h100-superpod --gpus 1024 -w sample_traces/mixtral-8x7b.json "
                "--astra-sim astra_in/"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("design", nargs="?", help="design file (.json, .yaml or .yml)")
    p.add_argument("--preset", help="start from a named reference design (fabric build --list-presets)")
    p.add_argument("--gpus", type=int, help="GPU count for --preset (default: the preset's own)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file (CSV, JSON or YAML)")
    p.add_argument("--out", metavar="ZIP", help="where to write the package (.zip)")
    p.add_argument("--plan-csv", metavar="CSV", help="write only the cabling plan, as CSV, to this file")
    p.add_argument("--racks-per-row", type=int, metavar="N",
                   help="racks in one row of the floor layout (default: a square floor, 8-40 per row)")
    p.add_argument("--workload", "-w", nargs="+", metavar="FILE",
                   help="trace or workload file(s): the package gets an astra-sim/ folder for its training step")
    p.add_argument("--astra-sim", metavar="DIR",
                   help="write only the ASTRA-sim 2.x input (needs -w) into this new or empty folder")
    p.add_argument("--json", action="store_true", help="print the package summary (files, rows, checks) as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from fabric.cabling.checks import failed
    from fabric.cli.cmd_build import _design_from_args

    if args.astra_sim:
        return _run_astra_sim(args)
    if not args.out and not args.plan_csv:
        raise FabricError("say where to write: --out package.zip (the whole package), --plan-csv plan.csv or "
                          "--astra-sim DIR (with -w)")
    if args.out and not str(args.out).lower().endswith(".zip"):
        raise FabricError(f"--out {args.out}: the package is a zip file; give a name ending in .zip")
    if args.racks_per_row is not None and not 1 <= args.racks_per_row <= 200:
        raise FabricError(f"--racks-per-row must be between 1 and 200, got {args.racks_per_row}")
    for target in (args.out, args.plan_csv):
        if target and not Path(target).resolve().parent.is_dir():
            raise FabricError(f"{target}: the folder {Path(target).resolve().parent} does not exist")
    catalog = catalog_arg(args.catalog)
    design = _design_from_args(args, catalog)
    workload = load_workload_files(args.workload) if args.workload else None
    from fabric.cabling.checks import plan_checks
    from fabric.cabling.plan import cabling_plan

    plan = cabling_plan(design, catalog, racks_per_row=args.racks_per_row)
    if args.plan_csv:
        from fabric.cabling.tables import write_plan_csv

        part = Path(str(args.plan_csv) + ".part")
        try:
            write_plan_csv(plan, part)
            part.replace(args.plan_csv)
        finally:
            if part.exists():
                part.unlink()
    checks = plan_checks(plan, catalog=catalog)
    summary = None
    if args.out:
        from fabric.cabling.package import package_bytes

        data, summary = package_bytes(design, catalog, plan=plan, brief_text=_brief_text(design, plan, catalog),
                                      workload=workload)
        part = Path(str(args.out) + ".part")
        try:
            part.write_bytes(data)
            part.replace(args.out)
        finally:
            if part.exists():
                part.unlink()
        checks = summary.checks
    bad = failed(checks)
    if args.json:
        print(json.dumps({"design": design.name, "links": plan.rows, "racks": plan.layout.n_racks,
                          "files": summary.files if summary else {}, "package": args.out, "plan_csv": args.plan_csv,
                          "checks": [c.to_dict() for c in checks], "ok": not bad}, indent=2))
    else:
        where = " and ".join(x for x in (args.out, args.plan_csv) if x)
        print(f"{design.name}: {plan.rows:,} cabling rows, {plan.layout.n_racks:,} racks; written to {where}")
        for c in checks:
            print(f"  [{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}")
    return 3 if bad else 0


def _brief_text(design, plan, catalog) -> str:
    """The design's summary for the package: its fields, its switches and links, its racks and power."""
    from fabric.cost import bill_of_materials
    from fabric.facility.rackpower import rack_report

    bom = bill_of_materials(plan.fabric, catalog)
    racks = rack_report(design, catalog=catalog, fabric=plan.fabric, bom=bom)
    lines = [f"{design.name}", "", f"{design.gpus:,} x {design.gpu_model}, {design.family}, {plan.fabric.tiers} "
             f"tier(s), {plan.fabric.planes} plane(s), switch {design.switch_model}, NIC {design.nic_model} x "
             f"{design.nics_per_gpu:g} per GPU", "",
             "Switches: " + ", ".join(f"{k} {v:,}" for k, v in bom.switches.items()),
             "Links: " + ", ".join(f"{k} {v:,}" for k, v in bom.links.items()),
             f"Network capex ${bom.cost_usd:,.0f}; network power {bom.power_w / 1e3:,.1f} kW; IT power "
             f"{racks['it_power_w'] / 1e6:,.2f} MW; {racks['compute_racks']:,} compute racks and "
             f"{racks['network_racks']:,} network racks"]
    return "\n".join(lines) + "\n"


def _run_astra_sim(args) -> int:
    """``--astra-sim DIR``: the design and the workload's training step as ASTRA-sim input, nothing else."""
    import shutil
    import tempfile

    from fabric.cli.cmd_build import _design_from_args
    from fabric.validate.astra_sim import write_astra_sim

    if args.out or args.plan_csv:
        raise FabricError("--astra-sim writes the simulator input alone: leave out --out and --plan-csv (the package "
                          "from --out holds the same files under astra-sim/ when -w is given)")
    if not args.workload:
        raise FabricError("--astra-sim needs the workload to simulate: -w trace or workload file(s)")
    target = Path(args.astra_sim)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FabricError(f"--astra-sim {target}: give a new or empty folder (it is not overwritten)")
    if not target.resolve().parent.is_dir():
        raise FabricError(f"--astra-sim {target}: the folder {target.resolve().parent} does not exist")
    catalog = catalog_arg(args.catalog)
    design = _design_from_args(args, catalog)
    workload = load_workload_files(args.workload)
    tmp = Path(tempfile.mkdtemp(prefix=".astra-", dir=target.resolve().parent))
    try:
        write_astra_sim(design, workload, tmp, catalog=catalog)
        readme = (tmp / "README.txt").read_text()
        target.mkdir(exist_ok=True)
        for item in tmp.iterdir():
            shutil.move(str(item), target / item.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps({"design": design.name, "astra_sim": str(target),
                          "files": sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())},
                         indent=2))
    else:
        print(f"{design.name}: ASTRA-sim input written to {target}")
        print(readme.rstrip())
    return 0

