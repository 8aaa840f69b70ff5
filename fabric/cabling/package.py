"""The design package: one zip a team can build from.

Contents (``README.txt`` inside lists them with the layout's assumptions and the checks):

- ``design.json`` (the design file ``fabric`` reads back), ``bill_of_materials.csv``;
- ``cabling/plan.csv`` (every link, both ends), ``cabling/by_rack.csv`` (each rack's links from its side),
  ``cabling/checks.txt``, ``cabling/audit_mapping.csv`` (the port-to-link mapping ``fabric audit --mapping``
  reads: counters map to cables);
- ``elevations/racks.csv`` (every rack's devices by U) and ``elevations/*.svg`` (one per rack up to
  :data:`SVG_RACKS_MAX` racks, else one per distinct elevation, named after its first rack, with the racks it
  stands for in ``elevations/groups.csv``);
- ``netbox/*.csv`` (:mod:`fabric.cabling.netbox`, in import order);
- ``astra-sim/`` when a workload is given: the design and its primary training job as ASTRA-sim 2.x input
  (:mod:`fabric.validate.astra_sim`: network and system configuration, a Chakra trace per rank, the communicator
  groups, ``run.sh`` and a README of what the simulator cannot express); a job too large for traces gets
  ``astra-sim/NOT_INCLUDED.txt`` saying why;
- ``brief.html`` or ``brief.txt`` when a brief is given (the Design page's report; the CLI writes the design's
  summary).

The package is built in full before anything is written; a file path gets the zip only when every part was
built (a ``.part`` file renamed at the end), so an error never leaves a partial package.
"""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabric.cabling.checks import failed, plan_checks
from fabric.cabling.elevations import elevation_rows, rack_groups, rack_svg
from fabric.cabling.netbox import NETBOX_ORDER, netbox_files
from fabric.cabling.plan import cabling_plan
from fabric.cabling.tables import audit_mapping_csv, plan_table, write_by_rack_csv, write_plan_csv
from fabric.topology.fabric import LINK_KINDS

__all__ = ["PackageSummary", "write_package", "package_bytes", "SVG_RACKS_MAX", "audit_mapping_rows"]

#: Up to this many racks, one SVG per rack; above it, one per distinct elevation.
SVG_RACKS_MAX = 256


@dataclass(frozen=True)
class PackageSummary:
    """What a package holds: its files (name -> bytes written), the plan's rows and racks, and the checks."""

    files: dict
    links: int
    racks: int
    checks: list

    @property
    def ok(self) -> bool:
        return not failed(self.checks)


def _csv_bytes(header, rows) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode()


def audit_mapping_rows(plan):
    """The audit's port-to-link mapping from the plan (``switch, port, link``; :mod:`fabric.audit.portmap`): each
    switch-to-switch cable gives two rows, the port at each end with the direction it transmits in
    (``leaf3-spine1``), switches and ports named as the plan names them. One definition of which port is which
    link."""
    t = plan_table(plan)
    sw_rows = np.flatnonzero(np.isin(plan.role, [LINK_KINDS.index(k) for k in
                                                 ("leaf-spine", "spine-core", "router-local", "router-global")]))
    a_dev, a_if = t["a_device"].to_pylist(), t["a_interface"].to_pylist()
    b_dev, b_if = t["b_device"].to_pylist(), t["b_interface"].to_pylist()
    for i in sw_rows.tolist():
        yield a_dev[i], a_if[i], f"{a_dev[i]}-{b_dev[i]}"
        yield b_dev[i], b_if[i], f"{b_dev[i]}-{a_dev[i]}"


def _is_trace(name: str) -> bool:
    return name.startswith("astra-sim/workload/") and name.endswith(".et")


def _readme(design, plan, checks, names) -> str:
    lay = plan.layout
    lines = [f"Design package: {design.name}", "",
             f"{design.gpus:,} GPUs ({design.gpu_model}), {design.family}, {plan.fabric.n_switches:,} switches, "
             f"{plan.rows:,} cabling rows, {lay.n_racks:,} racks ({lay.compute_racks:,} compute).", "",
             "Checks:"]
    lines += [f"  [{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}" for c in checks]
    lines += ["", "Layout assumptions (fabric.cabling.layout): " + ", ".join(
        f"{k} {v}" for k, v in lay.assumptions.items()), "",
        "NetBox: import the files of netbox/ in this order: " + ", ".join(NETBOX_ORDER) + ".", "",
        "Files:"] + [f"  {n}" for n in names if not _is_trace(n)]
    traces = sum(1 for n in names if _is_trace(n))
    if traces:
        lines.append(f"  astra-sim/workload/workload.<rank>.et ({traces:,} files, one per rank)")
    return "\n".join(lines) + "\n"


def _build(design, catalog, brief_html: str | None, brief_text: str | None, plan=None, workload=None
           ) -> tuple[dict, object, list]:
    """Every file of the package as bytes (the big CSVs as bytes too: built before writing)."""
    from fabric.catalog import default_catalog
    from fabric.cost import bill_of_materials
    from fabric.design import dump_design

    cat = catalog or default_catalog()
    plan = plan if plan is not None else cabling_plan(design, cat)
    bom = bill_of_materials(plan.fabric, cat)
    checks = plan_checks(plan, bom, cat)
    files: dict[str, bytes] = {"design.json": dump_design(design).encode()}
    files["bill_of_materials.csv"] = _csv_bytes(
        ["category", "model", "where", "count", "unit_price_usd", "total_usd", "unit_power_w", "total_power_w"],
        [[i.category, i.model, i.where, i.count, f"{i.unit_price_usd:.2f}", f"{i.price_usd:.2f}",
          f"{i.unit_power_w:g}", f"{i.power_w:g}"] for i in bom.items])
    buf = io.BytesIO()
    write_plan_csv(plan, buf)
    files["cabling/plan.csv"] = buf.getvalue()
    buf = io.BytesIO()
    write_by_rack_csv(plan, buf)
    files["cabling/by_rack.csv"] = buf.getvalue()
    files["cabling/checks.txt"] = "\n".join(
        f"[{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}" for c in checks).encode() + b"\n"
    files["cabling/audit_mapping.csv"] = audit_mapping_csv(plan)      # the rows of audit_mapping_rows, column-wise
    files["elevations/racks.csv"] = _csv_bytes(
        ["rack", "rack_kind", "row", "position", "u", "height_u", "device", "kind"],
        ([r[k] for k in ("rack", "rack_kind", "row", "position", "u", "height_u", "device", "kind")]
         for r in elevation_rows(plan)))
    lay = plan.layout
    if lay.n_racks <= SVG_RACKS_MAX:
        for r in range(lay.n_racks):
            files[f"elevations/{lay.rack_name[r]}.svg"] = rack_svg(plan, r).encode()
    else:
        groups = rack_groups(plan)
        rows = []
        for g in groups:
            first = g[0]
            title = (f"Rack {lay.rack_name[first]} and {len(g) - 1:,} more like it ({lay.rack_kind[first]})"
                     if len(g) > 1 else None)
            files[f"elevations/{lay.rack_name[first]}.svg"] = rack_svg(plan, first, title=title).encode()
            rows += [[str(lay.rack_name[r]), str(lay.rack_name[first])] for r in g]
        files["elevations/groups.csv"] = _csv_bytes(["rack", "drawn_as"], rows)
    for name, data in netbox_files(plan, cat, site=design.name).items():
        files[f"netbox/{name}"] = data
    if workload is not None:
        files.update(_simulator_files(design, workload, cat))
    if brief_html:
        files["brief.html"] = brief_html.encode()
    if brief_text:
        files["brief.txt"] = brief_text.encode()
    files = {"README.txt": _readme(design, plan, checks, sorted(files)).encode(), **files}
    return files, plan, checks


def _simulator_files(design, workload, catalog) -> dict[str, bytes]:
    from fabric.errors import FabricError
    from fabric.validate import astra_sim

    try:
        sim = astra_sim.astra_sim_files(design, workload, catalog=catalog, max_nodes=astra_sim.MAX_TRACE_NODES)
    except FabricError as err:
        return {"astra-sim/NOT_INCLUDED.txt": f"No ASTRA-sim export in this package: {err}\n".encode()}
    return {f"astra-sim/{k}": v for k, v in sim.items()}


def package_bytes(design, catalog=None, *, brief_html: str | None = None, brief_text: str | None = None,
                  plan=None, workload=None) -> tuple[bytes, PackageSummary]:
    """The package as zip bytes (for a download) and its summary; ``workload`` adds the simulator export."""
    files, plan, checks = _build(design, catalog, brief_html, brief_text, plan, workload)
    buf = io.BytesIO()
    _zip(files, buf)
    return buf.getvalue(), PackageSummary({k: len(v) for k, v in files.items()}, plan.rows, plan.layout.n_racks,
                                          checks)


def _zip(files: dict, target) -> None:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for name, data in files.items():
            z.writestr(name, data)


def write_package(design, path, catalog=None, *, brief_html: str | None = None, brief_text: str | None = None,
                  workload=None) -> PackageSummary:
    """Write the package to ``path`` (a zip). Nothing is left at ``path`` when building any part fails."""
    files, plan, checks = _build(design, catalog, brief_html, brief_text, None, workload)
    path = Path(path)
    part = path.with_name(path.name + ".part")
    try:
        _zip(files, part)
        os.replace(part, path)
    finally:
        if part.exists():
            part.unlink()
    return PackageSummary({k: len(v) for k, v in files.items()}, plan.rows, plan.layout.n_racks, checks)


def summary_json(summary: PackageSummary) -> str:
    """The package summary as JSON (files and sizes, rows, racks, checks)."""
    return json.dumps({"files": summary.files, "links": summary.links, "racks": summary.racks,
                       "checks": [c.to_dict() for c in summary.checks], "ok": summary.ok}, indent=2)
