"""The Design page's region table: one row per region of a design of regions (and the shared layer), with the jobs
of the workload in view placed by the design's rule."""

from __future__ import annotations

from fabric.ui_support.charts import money_text

__all__ = ["region_table"]

_CABLING = {"clos": "Clos (top of rack)", "rail_optimized": "rail-optimized", "shared spines": "shared spines",
            "shared core": "shared core"}


def region_table(design, workload, catalog=None, evaluation=None) -> tuple[list[dict], list[str]]:
    """``(rows, sentences)``: display rows (region, cabling, GPUs, leaf and spine ratio, switches, jobs, capex,
    power) and the sentences saying what each region carries (:func:`fabric.review.regions.region_lines`)."""
    from fabric.cost import bill_of_materials
    from fabric.cost.regions import region_rows
    from fabric.review.regions import job_regions, region_lines
    from fabric.topology import build_fabric

    if not design.regions:
        return [], []
    fab = build_fabric(design, catalog)
    bom = bill_of_materials(fab, catalog)
    where = job_regions(design, workload)
    rows = region_rows(fab, bom, catalog, placement=where)
    out = []
    for r in rows:
        shared = r["region"] == "shared"
        out.append({
            "region": r["region"], "cabling": _CABLING.get(r["cabling"], r["cabling"]),
            "GPUs": "" if shared else f"{r['gpus']:,}",
            "leaf ratio": "" if r["leaf_ratio"] is None else f"{r['leaf_ratio']:g}:1",
            "spine ratio": "" if r["spine_ratio"] is None else f"{r['spine_ratio']:g}:1",
            "switches": (", ".join(x for x in (f"{r['spines']:,} spines" if r["spines"] else "",
                                               f"{r['cores']:,} cores" if r.get("cores") else "") if x)
                         if shared else f"{r['leaves']:,} leaves" + (f", {r['spines']:,} spines" if r["spines"] else "")),
            "jobs": ", ".join(r["jobs"]) or ("" if shared else "none (spare GPUs)"),
            "capex": money_text(r["capex_usd"]), "power": f"{r['power_w'] / 1e3:,.1f} kW"})
    spanning = [n for n, w in where.items() if w == "spans regions"]
    if spanning:
        out.append({"region": "(spanning)", "cabling": "", "GPUs": "", "leaf ratio": "", "spine ratio": "",
                    "switches": "", "jobs": ", ".join(spanning), "capex": "", "power": ""})
    return out, region_lines(design, workload, rows, evaluation=evaluation)
