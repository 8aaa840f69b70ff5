"""Rack elevations: each rack's U positions with its servers, switches, patch panels and power, as SVG and as rows.

Drawn from the cabling plan's layout (:mod:`fabric.cabling.layout`), the same one the plan's lengths come from.
Power is drawn as the rack's two vertical (0U) power strips with the rack's draw and budget beside them.
"""

from __future__ import annotations

from html import escape

import numpy as np

from fabric.cabling.memo import per_plan

__all__ = ["rack_contents", "rack_svg", "elevation_rows", "rack_groups"]

_COLOURS = {"server": "#4c78a8", "reserved": "#9e9e9e", "leaf": "#f58518", "spine": "#e45756", "core": "#b279a2",
            "router": "#f58518", "panel": "#bab0ac", "storage network": "#72b7b2"}
_PX_PER_U = 14


class _Contents:
    """Every rack's devices at once, ordered by rack, then U (ties: node slots, switches, patch panels, each in
    index order, as :func:`rack_contents` lists them): ``start[r]:start[r + 1]`` are rack ``r``'s."""

    __slots__ = ("u", "height", "device", "kind", "links", "start")

    def __init__(self, plan):
        lay, fab = plan.layout, plan.fabric
        n = lay.n_racks
        reserved = int(fab.design.reserved_node_slots)
        npn = max(1, fab.design.nics_per_node)
        names = plan.node_names
        # node slots (reserved ones first), switches, patch panels: each in index order
        slots = np.flatnonzero((lay.slot_rack >= 0) & (lay.slot_rack < n))
        slot_node = np.where(slots < reserved, len(names) - 1 - slots, fab.nic_base + (slots - reserved) * npn)
        sws = np.flatnonzero((lay.switch_rack >= 0) & (lay.switch_rack < n))
        tiers = fab.node_tier[fab.switch_base:fab.switch_base + fab.n_switches]
        p_rack = np.array([int(p[0]) for p in lay.panels], np.int64)
        p_u = np.array([int(p[1]) for p in lay.panels], np.int64)
        p_links = np.array([int(p[2]) for p in lay.panels], np.int64)
        panels = np.flatnonzero((p_rack >= 0) & (p_rack < n))
        # a panel's number in its rack: its place among the rack's panels, in list order
        p_num = np.zeros(panels.size, np.int64)
        if panels.size:
            order = np.argsort(p_rack[panels], kind="stable")
            r_sorted = p_rack[panels][order]
            p_num[order] = np.arange(panels.size) - np.searchsorted(r_sorted, r_sorted, side="left")
        rack = np.concatenate([lay.slot_rack[slots], lay.switch_rack[sws], p_rack[panels]]).astype(np.int64)
        u = np.concatenate([lay.slot_u[slots], lay.switch_u[sws], p_u[panels]]).astype(np.int64)
        height = np.concatenate([np.full(slots.size, int(lay.slot_height_u), np.int64),
                                 np.full(sws.size, int(lay.switch_height_u), np.int64),
                                 np.ones(panels.size, np.int64)])
        rack_name = lay.rack_name
        device = ([str(x) for x in names[slot_node]] + [str(x) for x in names[fab.switch_base + sws]]
                  + [f"{rack_name[r]}-panel-{j + 1}" for r, j in zip(p_rack[panels].tolist(), p_num.tolist())])
        tier_names = list(fab.tier_names)
        kind = (["reserved" if s < reserved else "server" for s in slots.tolist()]
                + [tier_names[t] for t in tiers[sws].tolist()] + ["panel"] * panels.size)
        order = np.lexsort((u, rack))               # stable: ties keep slots, switches, panels in index order
        links = [None] * (slots.size + sws.size) + p_links[panels].tolist()      # a panel's links; None: not a panel
        self.u, self.height = u[order].tolist(), height[order].tolist()
        self.device, self.kind, self.links = ([x[i] for i in order.tolist()] for x in (device, kind, links))
        self.start = np.searchsorted(rack[order], np.arange(n + 1), side="left").tolist()

    def of(self, rack: int) -> list[dict]:
        if not 0 <= rack < len(self.start) - 1:
            return []
        out = []
        for i in range(self.start[rack], self.start[rack + 1]):
            d = {"u": self.u[i], "height_u": self.height[i], "device": self.device[i], "kind": self.kind[i]}
            if self.links[i] is not None:
                d["links"] = self.links[i]
            out.append(d)
        return out




def _contents(plan) -> _Contents:
    """Every rack's contents, made once per plan (the racks of a 131,072-GPU floor one by one would each scan every
    slot, switch and panel)."""
    return per_plan(plan, _Contents)


def rack_contents(plan, rack: int) -> list[dict]:
    """What rack ``rack`` of the plan's layout holds: one dict per device (``u`` lowest U, ``height_u``,
    ``device``, ``kind``; a patch panel's ``links`` too), bottom to top."""
    return _contents(plan).of(int(rack))


def elevation_rows(plan):
    """Every rack's every device as rows (rack, row, position, U, height, device, kind) for a CSV."""
    lay = plan.layout
    contents = _contents(plan)
    for rack in range(lay.n_racks):
        name, kind = str(lay.rack_name[rack]), str(lay.rack_kind[rack])
        row, position = int(lay.rack_row[rack]) + 1, int(lay.rack_col[rack]) + 1
        for d in contents.of(rack):
            yield {"rack": name, "rack_kind": kind, "row": row, "position": position, "u": d["u"],
                   "height_u": d["height_u"], "device": d["device"], "kind": d["kind"]}


def rack_groups(plan) -> list[list[int]]:
    """Racks grouped by identical elevation (same kinds at the same U positions), biggest group first."""
    c = _contents(plan)
    groups: dict = {}
    for rack in range(plan.layout.n_racks):
        lo, hi = c.start[rack], c.start[rack + 1]
        sig = tuple(zip(c.u[lo:hi], c.height[lo:hi], c.kind[lo:hi]))
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
