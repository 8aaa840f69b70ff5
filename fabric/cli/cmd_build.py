"""``fabric build``: build a design (file or preset) and print its bill of materials."""

from __future__ import annotations

import argparse
import json

from fabric.errors import DesignError
from fabric.cli.common import catalog_arg

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "build",
        help="build a design and print its switches, links, cables, optics, cost and power",
        description=(
            "Build the fabric of a design and print its bill of materials: switches per tier, links per tier "
            "pair, cables and transceivers, NICs, network capex (USD) and power (W). The design comes from a "
            "JSON/YAML file (see docs/design-schema.md) or from a named preset."
        ),
        epilog=("examples:\n  fabric build --preset dgx-h100-superpod --gpus 504\n"
                "  fabric build my_design.yaml --json\n  fabric build --list-presets"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("design", nargs="?", help="design file (.json, .yaml or .yml)")
    p.add_argument("--preset", help="start from a named reference design (see --list-presets)")
    p.add_argument("--gpus", type=int, help="GPU count for --preset (default: the preset's own)")
    p.add_argument("--catalog", metavar="FILE", help="hardware catalog override file (CSV, JSON or YAML)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")
    p.add_argument("--rack-limit-kw", type=float, metavar="KW",
                   help="the most power one rack may draw; racks above it are counted (default: the design's "
                        "rack_power_w, else none)")
    p.add_argument("--pue", type=float, default=1.3, help="facility power / IT power for the facility total "
                                                           "(default 1.3)")
    p.add_argument("--list-presets", action="store_true", help="list the presets with their sources and exit")
    p.set_defaults(func=run)


def _design_from_args(args, catalog):
    from fabric.design import load_design
    from fabric.reference.presets import preset_design

    if args.design and args.preset:
        raise DesignError("give either a design file or --preset, not both")
    if args.preset:
        return preset_design(args.preset, args.gpus)
    if args.gpus is not None:
        raise DesignError("--gpus only applies with --preset; set 'gpus' in the design file instead")
    if not args.design:
        raise DesignError("no design given: pass a design file or --preset NAME (see --list-presets)")
    return load_design(args.design, catalog=catalog)


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def run(args) -> int:
    from fabric.cost import bill_of_materials
    from fabric.reference.presets import list_presets
    from fabric.topology import build_fabric

    if args.list_presets:
        for p in list_presets():
            print(f"{p.name:20s} {p.title}\n{'':20s} default {p.default_gpus:,} GPUs; source: {p.source}")
        return 0
    catalog = catalog_arg(args.catalog)
    design = _design_from_args(args, catalog)
    from fabric.facility.rackpower import rack_report

    if args.rack_limit_kw is not None and not args.rack_limit_kw > 0:
        raise DesignError(f"--rack-limit-kw must be a positive number of kW, got {args.rack_limit_kw:g}")
    if not 1.0 <= args.pue <= 3.0:
        raise DesignError(f"--pue must be between 1 and 3, got {args.pue:g}")
    fabric = build_fabric(design, catalog)
    bom = bill_of_materials(fabric, catalog)
    racks = rack_report(design, catalog=catalog, fabric=fabric, bom=bom, pue=args.pue,
                        rack_limit_w=None if args.rack_limit_kw is None else args.rack_limit_kw * 1e3)
    from fabric.cost.partial_pod import partial_pod

    pod = partial_pod(fabric, bom)
    if args.json:
        from fabric.cost.document import fabric_document

        # design_spec: how it is cabled, so `fabric upgrade --existing` can read this file as an installed fabric
        doc = fabric_document(design, bom.to_dict(), racks)
        if design.regions:
            from fabric.cost.regions import region_rows

            doc["regions"] = region_rows(fabric, bom, catalog)
        print(json.dumps(doc, indent=2, default=float))
        return 0
    s = fabric.structure
    speeds = fabric.link_speeds_gbps()
    ups = [f"{k} at {v:g} Gb/s" for k, v in speeds.items()
           if k in ("leaf-spine", "spine-core") and v != fabric.link_speed_bps / 1e9]
    print(f"{design.name}: {design.family}, {fabric.n_gpus:,} GPUs, {fabric.tiers} tier(s), {fabric.planes} plane(s), "
          f"radix {s.get('radix')} at {fabric.link_speed_bps / 1e9:g} Gb/s" + (f"; {', '.join(ups)}" if ups else ""))
    print()
    print(_table([[t, f"{n:,}"] for t, n in bom.switches.items()], ["switch tier", "count"]))
    print()
    if design.regions:
        from fabric.cost.regions import region_rows

        rows = region_rows(fabric, bom, catalog)
        print(_table([[r["region"], r["cabling"], f"{r['gpus']:,}" if r["gpus"] else "",
                       "" if r["leaf_ratio"] is None else f"{r['leaf_ratio']:g}:1",
                       "" if r["spine_ratio"] is None else f"{r['spine_ratio']:g}:1",
                       f"{r['leaves']:,}", f"{r['spines']:,}", f"{r.get('cores', 0):,}", ", ".join(r["jobs"]),
                       f"{r['capex_usd']:,.0f}", f"{r['power_w']:,.0f}"] for r in rows],
                     ["region", "cabling", "GPUs", "leaf", "spine", "leaves", "spines", "cores", "jobs", "capex USD",
                      "power W"]))
        print()
    print(_table([[k, f"{n:,}", f"{speeds.get(k, 0):g}"] for k, n in bom.links.items()],
                 ["links", "count", "Gb/s"]))
    print()
    print(_table([[i.category, i.model, i.where, f"{i.count:,}", f"{i.unit_price_usd:,.0f}", f"{i.price_usd:,.0f}",
                   f"{i.power_w:,.0f}"] for i in bom.items],
                 ["item", "model", "where", "count", "unit USD", "total USD", "power W"]))
    print()
    print(f"network capex: ${bom.cost_usd:,.0f} (${bom.cost_usd / fabric.n_gpus:,.0f} per GPU); "
          f"network power: {bom.power_w / 1e3:,.1f} kW; cables: {bom.cable_count:,}")
    print(f"servers (for scale): ${bom.compute_cost_usd:,.0f}, {bom.compute_power_w / 1e3:,.1f} kW; "
          f"network share of capex {bom.to_dict()['network_share_of_capex']:.1%}")
    if pod is not None:
        print(pod.text())
    print(bom.floor_text())
    print()
    print(_rack_lines(racks, design))
    return 0


def _rack_lines(r: dict, design) -> str:
    from fabric.ui_support.racks_view import rack_rows, rack_summary

    rows = [[x["racks"], f"{x['count']:,}", x["holds"], f"{x['kW per rack']:,.1f}"] for x in rack_rows(r)]
    out = [_table(rows, ["racks", "count", "each holds", "kW per rack (max)"])]
    out.append(rack_summary(r, design.domain_size))
    out.append("cables by reach: " + "; ".join(f"{k} {v:,}" for k, v in r["cables_by_reach"].items() if v))
    return "\n".join(out)
