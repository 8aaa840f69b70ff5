"""What the Design page shows of a cabling plan: its checks as rows, the racks to pick from, one rack's links."""

from __future__ import annotations

import pandas as pd

__all__ = ["check_rows", "rack_options", "rack_links", "plan_summary"]


def check_rows(checks) -> pd.DataFrame:
    """One row per check: passed or not, and its figures."""
    return pd.DataFrame([{"check": c.name, "result": "ok" if c.ok else "FAILED", "figures": c.detail}
                         for c in checks])


def rack_options(plan) -> list[tuple[int, str]]:
    """(layout rack index, label) of every rack: name, kind, what it holds in a few words."""
    from fabric.cabling.elevations import rack_contents

    lay = plan.layout
    out = []
    for r in range(lay.n_racks):
        items = rack_contents(plan, r)
        kinds: dict = {}
        for d in items:
            kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
        what = ", ".join(f"{n} {k}{'s' if n > 1 and not k.endswith('s') else ''}" for k, n in kinds.items())
        out.append((r, f"{lay.rack_name[r]} ({lay.rack_kind[r]}: {what})"))
    return out


def rack_links(plan, rack: int) -> pd.DataFrame:
    """The links with an end in ``rack``, from its side (fabric.cabling.tables.rack_table)."""
    from fabric.cabling.tables import rack_table

    return rack_table(plan, rack)


def plan_summary(plan, checks) -> str:
    """One sentence: rows, racks, floor, checks."""
    lay = plan.layout
    bad = [c for c in checks if not c.ok]
    halls = int(lay.assumptions.get("halls") or 1)
    where = f"in {halls:,} halls, rows of {lay.racks_per_row}" if halls > 1 else f"in rows of {lay.racks_per_row}"
    return (f"{plan.rows:,} cables planned port by port over {lay.n_racks:,} racks ({lay.compute_racks:,} compute) "
            f"{where}; " + ("every check passes." if not bad else
                                                     f"{len(bad)} check(s) FAILED: " + "; ".join(c.name for c in bad)
                                                     + "."))
