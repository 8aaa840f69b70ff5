"""``fabric catalog``: print the hardware catalog (defaults plus an optional override file)."""

from __future__ import annotations

import argparse
import json

from fabric.catalog import TABLE_NAMES, TABLES, Catalog, load_catalog

__all__ = ["register", "run", "format_table"]


def register(subparsers) -> None:
    """Add the ``catalog`` subcommand."""
    parser = subparsers.add_parser(
        "catalog",
        help="show the hardware catalog (switches, NICs, optics, cables, GPUs) with prices and power",
        description=(
            "Print the hardware catalog fabric designs with: switches, NICs, transceivers, cables and GPUs, "
            "with price, power, speed, reach and latency, and the source of every figure. Units are in the "
            "column names (_gbps, _usd, _w, _ns, _m). Give --catalog FILE to see the defaults with your "
            "overrides applied (CSV with a 'table' and a 'model' column, or JSON/YAML; see docs/catalog.md)."
        ),
    )
    parser.add_argument("--catalog", metavar="FILE", help="override file (.csv, .json, .yaml) applied to the defaults")
    parser.add_argument("--table", choices=TABLE_NAMES, help="print only this table (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON {table: [rows]} in edge units instead")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the catalog and print the chosen tables."""
    catalog = load_catalog(args.catalog)
    names = [args.table] if args.table else list(TABLE_NAMES)
    if args.json:
        print(json.dumps({name: catalog.rows(name) for name in names}, indent=2))
        return 0
    print(f"catalog: {catalog.source}")
    for name in names:
        print()
        print(format_table(catalog, name))
    return 0


def format_table(catalog: Catalog, table: str) -> str:
    """``table`` as aligned text (numbers right-aligned), followed by the source of each row."""
    columns = [c for c in TABLES[table].column_names if c != "source"]
    rows = catalog.rows(table)
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row[c], (int, float)) or row[c] is None for row in rows) for c in columns]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [f"{table} ({len(rows)} models)", line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    out.append("sources:")
    out += [f"  {row['model']}: {row['source']}" for row in rows]
    return "\n".join(out)


def _cell(value) -> str:
    if value is None:
        return "-"                                   # an optional column left blank (see docs/catalog.md)
    return f"{value:g}" if isinstance(value, float) else str(value)
