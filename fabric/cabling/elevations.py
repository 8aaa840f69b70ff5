"""Rack elevations: each rack's U positions with its servers, switches, patch panels and power, as SVG and as rows.

Drawn from the cabling plan's layout (:mod:`fabric.cabling.layout`), the same one the plan's lengths come from.
Power is drawn as the rack's two vertical (0U) power strips with the rack's draw and budget beside them.
"""

from __future__ import annotations

from html import escape

import numpy as np

__all__ = ["rack_contents", "rack_svg", "elevation_rows", "rack_groups"]

_COLOURS = {"server": "#4c78a8", "reserved": "#9e9e9e", "leaf": "#f58518", "spine": "#e45756", "core": "#b279a2",
            "router": "#f58518", "panel": "#bab0ac", "storage network": "#72b7b2"}
_PX_PER_U = 14


def rack_contents(plan, rack: int) -> list[dict]:
    """What rack ``rack`` of the plan's layout holds: one dict per device (``u`` lowest U, ``height_u``,
    ``device``, ``kind``), bottom to top."""
    lay, fab = plan.layout, plan.fabric
    out = []
    reserved = fab.design.reserved_node_slots
    for s in np.flatnonzero(lay.slot_rack == rack).tolist():
        name = plan.node_names[-1 - s] if s < reserved else \
            plan.node_names[fab.nic_base + (s - reserved) * max(1, fab.design.nics_per_node)]
        out.append({"u": int(lay.slot_u[s]), "height_u": int(lay.slot_height_u), "device": str(name),
                    "kind": "reserved" if s < reserved else "server"})
    tiers = fab.node_tier[fab.switch_base:fab.switch_base + fab.n_switches]
    for i in np.flatnonzero(lay.switch_rack == rack).tolist():
        out.append({"u": int(lay.switch_u[i]), "height_u": int(lay.switch_height_u),
                    "device": str(plan.node_names[fab.switch_base + i]), "kind": fab.tier_names[tiers[i]]})
    for j, (r, u, links) in enumerate(p for p in lay.panels if p[0] == rack):
        out.append({"u": int(u), "height_u": 1, "device": f"{lay.rack_name[rack]}-panel-{j + 1}", "kind": "panel",
                    "links": int(links)})
    return sorted(out, key=lambda d: d["u"])


def elevation_rows(plan):
    """Every rack's every device as rows (rack, row, position, U, height, device, kind) for a CSV."""
    lay = plan.layout
    for rack in range(lay.n_racks):
        for d in rack_contents(plan, rack):
            yield {"rack": str(lay.rack_name[rack]), "rack_kind": str(lay.rack_kind[rack]),
                   "row": int(lay.rack_row[rack]) + 1, "position": int(lay.rack_col[rack]) + 1, "u": d["u"],
                   "height_u": d["height_u"], "device": d["device"], "kind": d["kind"]}


def rack_groups(plan) -> list[list[int]]:
    """Racks grouped by identical elevation (same kinds at the same U positions), biggest group first."""
    groups: dict = {}
    for rack in range(plan.layout.n_racks):
        sig = tuple((d["u"], d["height_u"], d["kind"]) for d in rack_contents(plan, rack))
        groups.setdefault(sig, []).append(rack)
    return sorted(groups.values(), key=len, reverse=True)


def rack_svg(plan, rack: int, *, title: str | None = None) -> str:
    """One rack's elevation as an SVG document: U numbers, each device as a box with its name, the patch panels,
    and the two power strips with the rack's power against its budget."""
    lay = plan.layout
    height_u = int(lay.rack_height_u[rack])
    top, left, width = 46, 40, 250
    h = height_u * _PX_PER_U
    total_w = left + width + 70
    total_h = top + h + 40
    name = str(lay.rack_name[rack])
    power = float(lay.rack_power_w[rack])
    limit = lay.rack_power_limit_w
    head = title or f"Rack {name} ({lay.rack_kind[rack]}, row {int(lay.rack_row[rack]) + 1}, " \
                    f"position {int(lay.rack_col[rack]) + 1})"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
             f'viewBox="0 0 {total_w} {total_h}" font-family="sans-serif">',
             f'<text x="4" y="16" font-size="12" font-weight="bold">{escape(head)}</text>',
             f'<text x="4" y="32" font-size="10">{power / 1e3:.1f} kW'
             + (f' of {limit / 1e3:.1f} kW' if limit else " (no rack limit set)") + f', {height_u}U</text>',
             f'<rect x="{left}" y="{top}" width="{width}" height="{h}" fill="#f7f7f7" stroke="#333"/>']
    for u in range(1, height_u + 1):
        y = top + h - u * _PX_PER_U
        if u % 2 == 1 or height_u <= 24:
            parts.append(f'<text x="{left - 4}" y="{y + _PX_PER_U - 3}" font-size="8" text-anchor="end">{u}</text>')
    for d in rack_contents(plan, rack):
        y = top + h - (d["u"] - 1 + d["height_u"]) * _PX_PER_U
        hh = d["height_u"] * _PX_PER_U
        colour = _COLOURS.get(d["kind"], "#888")
        label = d["device"] + (f' ({d["links"]} links)' if d["kind"] == "panel" else "")
        parts.append(f'<rect x="{left + 2}" y="{y + 1}" width="{width - 4}" height="{hh - 2}" fill="{colour}" '
                     f'stroke="#222" stroke-width="0.5"><title>{escape(label)}: U{d["u"]}'
                     f'{"-" + str(d["u"] + d["height_u"] - 1) if d["height_u"] > 1 else ""}</title></rect>')
        parts.append(f'<text x="{left + 8}" y="{y + hh / 2 + 4}" font-size="10" fill="white">{escape(label)}</text>')
    # two vertical power strips (0U) beside the rack
    for k, x in enumerate((left + width + 8, left + width + 24)):
        parts.append(f'<rect x="{x}" y="{top}" width="10" height="{h}" fill="#555"><title>power strip {k + 1}'
                     f'</title></rect>')
    parts.append(f'<text x="{left + width + 40}" y="{top + 12}" font-size="9" transform="rotate(90 '
                 f'{left + width + 40} {top + 12})">PDU A / B</text>')
    parts.append("</svg>")
    return "\n".join(parts)
