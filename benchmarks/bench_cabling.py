"""Cabling plan and design package: rows, time and memory (issue 38).

For the 1,016-GPU DGX H100 SuperPOD preset and the 131,072-GPU multi-plane preset (hyperscale-multiplane, 4
planes of 200G): time to build the plan (fabric build, bill of materials, floor layout, port assignment), to run
its checks, to stream the plan CSV to disk, and to write the whole package; peak memory of each step (tracemalloc,
numpy and pyarrow buffers included); the CSV's size; the checks. Then the package's parts one by one without
tracemalloc (its hooks slow Python code several times over): the plan CSV, the per-rack CSV, the audit's port
mapping, the elevations, the NetBox files and the zip.

Run: python benchmarks/bench_cabling.py [--skip-package-131k]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc


def _measure(fn):
    tracemalloc.start()
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, dt, peak


def _package_parts(design, plan) -> dict:
    """Seconds of each part of the design package (fabric.cabling.package) on a built plan, untraced."""
    import csv
    import io
    import zipfile

    from fabric.cabling.elevations import elevation_rows, rack_groups
    from fabric.cabling.netbox import netbox_files
    from fabric.cabling.tables import audit_mapping_csv, write_by_rack_csv, write_plan_csv

    files: dict = {}
    out: dict = {}

    def timed(label, fn):
        t = time.perf_counter()
        fn()
        out[label] = time.perf_counter() - t

    def to_bytes(name, writer):
        buf = io.BytesIO()
        writer(plan, buf)
        files[name] = buf.getvalue()

    def elevations():
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(list(r.values()) for r in elevation_rows(plan))
        files["elevations/racks.csv"] = buf.getvalue().encode()
        rack_groups(plan)

    def zipped():
        with zipfile.ZipFile(io.BytesIO(), "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            for name, data in files.items():
                z.writestr(name, data)

    timed("plan CSV", lambda: to_bytes("cabling/plan.csv", write_plan_csv))
    timed("by-rack CSV", lambda: to_bytes("cabling/by_rack.csv", write_by_rack_csv))
    timed("audit mapping", lambda: files.__setitem__("cabling/audit_mapping.csv", audit_mapping_csv(plan)))
    timed("elevations", elevations)
    timed("NetBox", lambda: files.update(netbox_files(plan, site=design.name)))
    timed("zip", zipped)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-package-131k", action="store_true", help="skip the whole package at 131,072 GPUs")
    args = ap.parse_args()
    from fabric.cabling.checks import plan_checks
    from fabric.cabling.package import write_package
    from fabric.cabling.plan import cabling_plan
    from fabric.cabling.tables import write_plan_csv
    from fabric.reference.presets import preset_design
    from fabric.topology.build import clear_fabric_cache

    for name in ("dgx-h100-superpod", "hyperscale-multiplane"):
        design = preset_design(name)
        clear_fabric_cache()
        plan, t_plan, m_plan = _measure(lambda: cabling_plan(design))
        checks, t_chk, m_chk = _measure(lambda: plan_checks(plan))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plan.csv")
            _, t_csv, m_csv = _measure(lambda: write_plan_csv(plan, path))
            size = os.path.getsize(path)
            print(f"{design.name}: {design.gpus:,} GPUs, {plan.rows:,} cabling rows, {plan.layout.n_racks:,} racks")
            print(f"   plan {t_plan:.2f} s (peak {m_plan / 2**20:,.0f} MiB); checks {t_chk:.2f} s (peak "
                  f"{m_chk / 2**20:,.0f} MiB); plan CSV streamed {t_csv:.2f} s (peak {m_csv / 2**20:,.0f} MiB), "
                  f"{size / 1e6:,.1f} MB")
            if name == "dgx-h100-superpod" or not args.skip_package_131k:
                zp = os.path.join(tmp, "package.zip")
                s, t_pkg, m_pkg = _measure(lambda: write_package(design, zp))
                print(f"   whole package {t_pkg:.1f} s (peak {m_pkg / 2**20:,.0f} MiB), zip "
                      f"{os.path.getsize(zp) / 1e6:,.1f} MB, {len(s.files)} files")
                parts = _package_parts(design, plan)
                print("   package parts untraced: " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items())
                      + f" (together {sum(parts.values()):.1f} s)")
        for c in checks:
            print(f"   [{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}")


if __name__ == "__main__":
    main()
