"""Where every device of a built design stands: racks on a floor, devices at U positions, and cable lengths between
them.

The layout extends the rack report's (:mod:`fabric.facility.rackpower`) to positions:

- **compute racks** hold node slots in order, as many per rack as the builder put there (``nodes_per_rack``);
  servers stack from the bottom (U1 up) at their height (:data:`SERVER_HEIGHT_U`); a top-of-rack leaf sits in the
  middle of its rack's servers, so passive copper reaches every server of the rack;
- **network racks** hold every other switch, tier by tier, as many per rack as the rack report says
  (``switches_per_rack``), from the bottom up at their height (:func:`switch_height_u`), and above them 1U fibre
  patch panels of :data:`PANEL_LINKS` links each for the links that leave the rack, as far as space allows;
- **the floor**: racks stand in rows of ``racks_per_row`` (default about twice the square root of the rack count,
  8-40 racks: a square floor, rows 0.6 m wide racks, 2.4 m apart), compute racks in slot order; each network rack
  stands beside the compute racks it serves (its switches' servers' middle rack: a scalable unit's rail leaves next
  to its racks, spines of a pod in the pod, cores in the middle of the floor);
- **cable length** between two devices: in one rack, the vertical distance plus :data:`SLACK_IN_RACK_M`; between
  racks, up each rack to the overhead tray (:data:`TRAY_M` above the rack top), along the floor (rows and the row
  distance: a Manhattan path along the trays), and :data:`SLACK_BETWEEN_RACKS_M` of service loops; between two
  racks side by side in a row, through their side openings: the vertical distance, one rack pitch and the in-rack
  slack at both ends. Racks whose servers share a top-of-rack leaf stay side by side in one row.

Assumptions (stated in every cabling plan and package): 42U racks (48U for rack-scale systems), 0.6 m rack pitch,
2.4 m row pitch (1.2 m rack depth plus a 1.2 m aisle), 44.45 mm per U.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fabric.topology import floor
from fabric.topology.fabric import LINK_KINDS, NIC, SWITCH

__all__ = ["RackLayout", "rack_layout", "SERVER_HEIGHT_U", "switch_height_u", "link_lengths_m", "U_M",
           "RACK_PITCH_M", "ROW_PITCH_M", "TRAY_M", "SLACK_IN_RACK_M", "SLACK_BETWEEN_RACKS_M", "PANEL_LINKS",
           "RACK_HEIGHT_U", "RACK_SCALE_HEIGHT_U"]

#: Height of one rack unit, rack and row pitch, the overhead tray and the service loops between racks: the floor's
#: (fabric.topology.floor), in metres; service loops inside a rack, metres.
U_M, RACK_PITCH_M, ROW_PITCH_M = floor.U_M, floor.RACK_PITCH_M, floor.ROW_PITCH_M
TRAY_M, SLACK_BETWEEN_RACKS_M = floor.TRAY_M, floor.SLACK_BETWEEN_RACKS_M
SLACK_IN_RACK_M = 0.3
#: Rack heights in U: a standard 42U rack; a rack-scale system's own rack (GB200 NVL72's MGX rack is 48U).
RACK_HEIGHT_U, RACK_SCALE_HEIGHT_U = 42, 48
#: Links one 1U fibre patch panel takes (high-density MPO; an assumption).
PANEL_LINKS = 96
#: Height of one node (``gpus_per_node`` GPUs) by catalog GPU model, in U: DGX H100 / H200 8U, DGX B200 10U,
#: DGX A100 6U (NVIDIA DGX user guides); a GB200 NVL72 / NVL36x2 node is one 1U compute tray of 4 GPUs.
SERVER_HEIGHT_U = {"h100-sxm": 8, "h200-sxm": 8, "b200": 10, "a100-sxm-80gb": 6, "gb200-nvl72": 1,
                   "gb200-nvl36x2": 1}


def switch_height_u(sw) -> int:
    """A switch's height in U: 1U per 25.6 Tb/s of switching (QM9700 64 x 400G: 1U; a 51.2T Tomahawk 5 box:
    2U; a 115.2T Quantum-X800: 4U at most)."""
    return int(min(4, max(1, math.ceil(sw.capacity_bps / 25.6e12 - 1e-9))))


def _node_height_u(gpu, gpus_per_node: int) -> int:
    if gpu.model in SERVER_HEIGHT_U:
        return SERVER_HEIGHT_U[gpu.model]
    return 1 if gpu.rack_scale else max(1, round(8 * gpus_per_node / 8))


@dataclass(frozen=True)
class RackLayout:
    """Racks on a floor and the devices in them (see the module docstring).

    Racks: ``rack_name``, ``rack_kind`` ("compute" / "network"), ``rack_row``, ``rack_col``, ``rack_x_m``,
    ``rack_y_m``, ``rack_height_u``, ``rack_power_w``. Node slots (reserved slots first): ``slot_rack``,
    ``slot_u`` (lowest U), ``slot_height_u``. Switches (index = node id - ``switch_base``): ``switch_rack``,
    ``switch_u``, ``switch_height_u``. ``panels``: (rack, lowest U, links) per patch panel. ``racks_per_row`` and
    ``assumptions`` say how the floor was laid out.
    """

    rack_name: np.ndarray
    rack_kind: np.ndarray
    rack_row: np.ndarray
    rack_col: np.ndarray
    rack_x_m: np.ndarray
    rack_y_m: np.ndarray
    rack_height_u: np.ndarray
    rack_power_w: np.ndarray
    rack_power_limit_w: float | None
    slot_rack: np.ndarray
    slot_u: np.ndarray
    slot_height_u: int
    switch_rack: np.ndarray
    switch_u: np.ndarray
    switch_height_u: int
    panels: tuple
    racks_per_row: int
    compute_racks: int
    assumptions: dict = field(default_factory=dict)
    #: the hall of each rack (fabric.topology.floor; all 0 on a floor of one hall)
    rack_hall: np.ndarray | None = None

    @property
    def n_racks(self) -> int:
        return int(self.rack_name.shape[0])


def _homes(fabric, slot_rack: np.ndarray, nodes_first_slot: int) -> np.ndarray:
    """Each switch's home: the mean compute rack (a float index) of the servers below it, tier by tier."""
    n_sw, base = fabric.n_switches, fabric.switch_base
    npn = max(1, fabric.design.nics_per_node)
    home = np.zeros(n_sw)
    kind = fabric.link_kind
    nl = np.flatnonzero(kind == LINK_KINDS.index("nic-leaf"))
    leaf = fabric.link_b[nl] - base
    rack_of = slot_rack[(fabric.link_a[nl] - fabric.nic_base) // npn + nodes_first_slot].astype(float)
    cnt = np.bincount(leaf, minlength=n_sw).astype(float)
    home_sum = np.bincount(leaf, weights=rack_of, minlength=n_sw)
    known = cnt > 0
    home[known] = home_sum[known] / cnt[known]
    # upper tiers (and dragonfly routers without servers): the mean home of the switches below them
    for name in ("leaf-spine", "spine-core", "router-local"):
        sel = np.flatnonzero(kind == LINK_KINDS.index(name))
        if not sel.size:
            continue
        lo, hi = fabric.link_a[sel] - base, fabric.link_b[sel] - base
        ok = known[lo] & ~known[hi]
        c = np.bincount(hi[ok], minlength=n_sw).astype(float)
        s = np.bincount(hi[ok], weights=home[lo[ok]], minlength=n_sw)
        new = (c > 0) & ~known
        home[new] = s[new] / c[new]
        known |= new
    if (~known).any():
        home[~known] = float(slot_rack.max()) / 2 if slot_rack.size else 0.0
    return home


def _joined_groups(fabric, slot_rack, switch_rack, n_compute: int, reserved: int) -> np.ndarray:
    """Group id of each compute rack: consecutive racks whose servers share a top-of-rack leaf share a group."""
    joined = np.zeros(max(n_compute - 1, 0), bool)
    nl = np.flatnonzero(fabric.link_kind == LINK_KINDS.index("nic-leaf"))
    leaf = fabric.link_b[nl] - fabric.switch_base
    tor = switch_rack[leaf] >= 0
    if tor.any() and joined.size:
        npn = max(1, fabric.design.nics_per_node)
        rk = slot_rack[(fabric.link_a[nl][tor] - fabric.nic_base) // npn + reserved]
        lf = leaf[tor]
        lo = np.full(fabric.n_switches, np.iinfo(np.int64).max)
        hi = np.full(fabric.n_switches, -1)
        np.minimum.at(lo, lf, rk)
        np.maximum.at(hi, lf, rk)
        span = np.flatnonzero(hi > lo)
        for a, b in zip(lo[span].tolist(), hi[span].tolist()):
            joined[a:b] = True
    return np.concatenate([[0], np.cumsum(~joined)]).astype(np.int64) if n_compute else np.zeros(0, np.int64)


def rack_layout(fabric, bom=None, catalog=None, *, racks_per_row: int | None = None) -> RackLayout:
    """Lay ``fabric`` out on a floor (module docstring). ``racks_per_row`` overrides the square-floor default."""
    from fabric.catalog import default_catalog
    from fabric.cost import bill_of_materials
    from fabric.facility.rackpower import NETWORK_RACK_SWITCHES, place_power, rack_report

    cat = catalog or default_catalog()
    bom = bom if bom is not None else bill_of_materials(fabric, cat)
    d = fabric.design
    gpu, sw = cat.gpu(d.gpu_model), cat.switch(d.switch_model)
    report = rack_report(d, catalog=cat, fabric=fabric, bom=bom)
    place = place_power(fabric, bom, cat)
    per_rack = int(report["nodes_per_rack"])
    reserved = int(d.reserved_node_slots)
    slots = d.nodes + reserved
    n_compute = int(place.compute_rack_w.shape[0])
    node_h = _node_height_u(gpu, d.gpus_per_node)
    rack_h = RACK_SCALE_HEIGHT_U if gpu.rack_scale else RACK_HEIGHT_U
    sw_h = switch_height_u(sw)

    # node slots: bottom up in their compute rack; a top-of-rack leaf (or two) in the middle of the rack's servers
    slot = np.arange(slots)
    slot_rack = slot // per_rack
    pos = slot % per_rack
    tor = place.switch_rack >= 0
    tor_per_rack = np.bincount(place.switch_rack[tor], minlength=n_compute)[:n_compute]
    middle = per_rack // 2
    slot_u = 1 + pos * node_h + np.where(pos >= middle, tor_per_rack[slot_rack] * sw_h, 0)
    n_sw = fabric.n_switches
    switch_rack = np.where(tor, place.switch_rack, -1).astype(np.int64)
    switch_u = np.zeros(n_sw, np.int64)
    if tor.any():
        ids = np.flatnonzero(tor)
        order = ids[np.argsort(switch_rack[ids], kind="stable")]
        first = np.searchsorted(switch_rack[order], switch_rack[order], side="left")
        k = np.arange(order.size) - first
        switch_u[order] = 1 + middle * node_h + k * sw_h

    # halls (fabric.topology.floor): the builder's, whose link lengths the bill of materials bought
    fl = getattr(fabric, "floor", None)
    halls = int(fl.halls) if fl is not None else 1
    compute_hall = (np.asarray(fl.rack_hall[:n_compute], np.int64) if halls > 1
                    else np.zeros(n_compute, np.int64))
    sw_hall = np.asarray(fl.switch_hall, np.int64) if halls > 1 else np.zeros(n_sw, np.int64)

    # network racks: the other switches, tier by tier and hall by hall, in order of their home, packed as the rack
    # report packs them
    home = _homes(fabric, slot_rack, reserved)
    tiers = fabric.node_tier[fabric.switch_base:fabric.switch_base + n_sw]
    fit = {row["tier"]: int(row["switches_per_rack"]) for row in report["network_rack_rows"]}
    net_home, net_tier, net_power, net_hall = [], [], [], []
    rack_id = n_compute
    for t, name in enumerate(fabric.tier_names):
        every = np.flatnonzero((tiers == t) & ~tor)
        for h in np.unique(sw_hall[every]).tolist():
            ids = every[sw_hall[every] == h]
            ids = ids[np.argsort(home[ids], kind="stable")]
            per = max(1, fit.get(name, NETWORK_RACK_SWITCHES))
            k = np.arange(ids.size)
            switch_rack[ids] = rack_id + k // per
            switch_u[ids] = 1 + (k % per) * sw_h
            for j in range(math.ceil(ids.size / per)):
                grp = ids[j * per:(j + 1) * per]
                net_home.append(float(home[grp].mean()))
                net_tier.append(name)
                net_power.append(float(place.switch_w[grp].sum()))
                net_hall.append(h)
            rack_id += math.ceil(ids.size / per)
    if place.storage_switches:
        each = place.storage_switch_w
        per = max(1, min(16, int(report["rack_power_budget_w"] // each))) if each > 0 else 16
        for j in range(math.ceil(place.storage_switches / per)):
            net_home.append((n_compute - 1) / 2)
            net_tier.append("storage network")
            net_power.append(min(per, place.storage_switches - j * per) * each)
            net_hall.append(int(compute_hall[(n_compute - 1) // 2]) if n_compute else 0)
    n_net = len(net_home)
    n_racks = n_compute + n_net
    rack_hall = np.concatenate([compute_hall, np.asarray(net_hall, np.int64)])

    # the floor: one sequence of rack positions, network racks beside the compute racks they serve; racks joined
    # by a top-of-rack leaf (its servers span them: copper to the next rack) stay side by side in one row
    group = _joined_groups(fabric, slot_rack, switch_rack, n_compute, reserved)
    net_key = np.asarray(net_home, float)
    if n_net:   # after the end of the joined group the home falls in
        at = np.clip(np.floor(net_key).astype(np.int64), 0, max(n_compute - 1, 0))
        last_of_group = np.searchsorted(group, group, side="right") - 1
        net_key = last_of_group[at] + 0.5 if n_compute else net_key
    key = np.concatenate([np.arange(n_compute, dtype=float), net_key])
    seq = np.argsort(key, kind="stable")
    if racks_per_row is None:
        racks_per_row = (floor.HALL_ROW_RACKS if halls > 1
                         else int(min(40, max(8, math.ceil(2 * math.sqrt(n_racks))))))
    row = np.empty(n_racks, np.int64)
    col = np.empty(n_racks, np.int64)
    y = np.empty(n_racks, float)
    grp = group.tolist()
    first_row = 0
    for h in range(halls):
        seq_l = seq[rack_hall[seq] == h].tolist() if halls > 1 else seq.tolist()
        r, c = first_row, 0
        i = 0
        while i < len(seq_l):
            k = seq_l[i]
            j = i + 1
            if k < n_compute:       # a block: this rack and the racks joined to it
                while j < len(seq_l) and seq_l[j] < n_compute and grp[seq_l[j]] == grp[k]:
                    j += 1
            size = j - i
            if c and c + size > racks_per_row:
                r, c = r + 1, 0
            for m in range(i, j):
                if c == racks_per_row:      # a block longer than a row goes on in the next
                    r, c = r + 1, 0
                row[seq_l[m]], col[seq_l[m]] = r, c
                y[seq_l[m]] = h * floor.HALL_PITCH_M + (r - first_row) * ROW_PITCH_M
                c += 1
            i = j
        first_row = r + 1 if seq_l else first_row
    names = np.array([f"R{r + 1:03d}-{c + 1:02d}" for r, c in zip(row.tolist(), col.tolist())])
    kind = np.array(["compute"] * n_compute + ["network"] * n_net)
    power = np.concatenate([place.compute_rack_w, np.asarray(net_power, float)])
    heights = np.full(n_racks, rack_h, np.int64)
    heights[n_compute:] = RACK_HEIGHT_U

    # patch panels in network racks: one per PANEL_LINKS links leaving the rack, as far as the rack has room
    panels = []
    if n_net:
        ends = np.concatenate([fabric.link_a, fabric.link_b])
        other = np.concatenate([fabric.link_b, fabric.link_a])
        net_kind = np.concatenate([fabric.link_kind, fabric.link_kind]) >= LINK_KINDS.index("nic-leaf")
        on_sw = net_kind & (ends >= fabric.switch_base) & (ends < fabric.switch_base + n_sw)
        r_end = switch_rack[ends[on_sw] - fabric.switch_base]
        o = other[on_sw]
        o_sw = (o >= fabric.switch_base) & (o < fabric.switch_base + n_sw)
        r_other = np.full(o.shape, -2, np.int64)
        r_other[o_sw] = switch_rack[o[o_sw] - fabric.switch_base]
        leaving = np.bincount(r_end[(r_end >= n_compute) & (r_end != r_other)] - n_compute, minlength=n_net)
        top = np.zeros(n_net, np.int64)
        used = np.bincount(switch_rack[switch_rack >= n_compute] - n_compute, minlength=n_net)
        top[:used.size] = used[:n_net] * sw_h
        for j in range(n_net):
            want = math.ceil(int(leaving[j]) / PANEL_LINKS) if j < leaving.size else 0
            room = max(0, RACK_HEIGHT_U - int(top[j]))
            for p in range(min(want, room)):
                links = min(PANEL_LINKS, int(leaving[j]) - p * PANEL_LINKS)
                panels.append((n_compute + j, int(top[j]) + 1 + p, links))
    limit = report["rack_power_limit_w"]
    return RackLayout(
        rack_name=names, rack_kind=kind, rack_row=row, rack_col=col, rack_x_m=col * RACK_PITCH_M,
        rack_y_m=y, rack_height_u=heights, rack_power_w=power, rack_power_limit_w=None if limit is None else float(limit),
        slot_rack=slot_rack, slot_u=slot_u, slot_height_u=node_h, switch_rack=switch_rack, switch_u=switch_u,
        switch_height_u=sw_h, panels=tuple(panels), racks_per_row=racks_per_row, compute_racks=n_compute,
        assumptions={"rack_height_u": rack_h, "network_rack_height_u": RACK_HEIGHT_U, "rack_pitch_m": RACK_PITCH_M,
                     "row_pitch_m": ROW_PITCH_M, "racks_per_row": racks_per_row, "tray_above_rack_m": TRAY_M,
                     "slack_in_rack_m": SLACK_IN_RACK_M, "slack_between_racks_m": SLACK_BETWEEN_RACKS_M,
                     "server_height_u": node_h, "switch_height_u": sw_h, "patch_panel_links": PANEL_LINKS,
                     "u_m": U_M, "halls": halls, "hall_pitch_m": floor.HALL_PITCH_M if halls > 1 else None},
        rack_hall=rack_hall,
    )


def link_lengths_m(fabric, layout: RackLayout, links: np.ndarray) -> np.ndarray:
    """Cable length of each of ``links`` (network link ids) from the layout (module docstring), in metres."""
    a, b = fabric.link_a[links], fabric.link_b[links]
    ra, ua, ha = _end_position(fabric, layout, a)
    rb, ub, hb = _end_position(fabric, layout, b)
    same = ra == rb
    mid_a, mid_b = ua + ha / 2.0, ub + hb / 2.0
    out = np.abs(mid_a - mid_b) * U_M + SLACK_IN_RACK_M
    diff = ~same
    if diff.any():
        h_a = layout.rack_height_u[ra[diff]]
        h_b = layout.rack_height_u[rb[diff]]
        up = (h_a - mid_a[diff]) * U_M + (h_b - mid_b[diff]) * U_M + 2 * TRAY_M
        floor = (np.abs(layout.rack_x_m[ra[diff]] - layout.rack_x_m[rb[diff]])
                 + np.abs(layout.rack_y_m[ra[diff]] - layout.rack_y_m[rb[diff]]))
        out[diff] = up + floor + SLACK_BETWEEN_RACKS_M
        # side by side in one row: through the racks' side openings, not over the top
        ia, ib = ra[diff], rb[diff]
        beside = (layout.rack_row[ia] == layout.rack_row[ib]) & (np.abs(layout.rack_col[ia] - layout.rack_col[ib]) == 1)
        if beside.any():
            d = np.flatnonzero(diff)[beside]
            out[d] = np.abs(mid_a[d] - mid_b[d]) * U_M + RACK_PITCH_M + 2 * SLACK_IN_RACK_M
    return np.round(out, 2)


def _end_position(fabric, layout: RackLayout, node: np.ndarray):
    """(rack, lowest U, height U) of each link end: a NIC stands where its server does."""
    node = np.asarray(node, np.int64)
    rack = np.zeros(node.shape, np.int64)
    u = np.zeros(node.shape, np.int64)
    h = np.zeros(node.shape, np.int64)
    kind = fabric.node_kind[node]
    nic = kind == NIC
    if nic.any():
        npn = max(1, fabric.design.nics_per_node)
        slot = (node[nic] - fabric.nic_base) // npn + fabric.design.reserved_node_slots
        rack[nic], u[nic], h[nic] = layout.slot_rack[slot], layout.slot_u[slot], layout.slot_height_u
    sw = kind == SWITCH
    if sw.any():
        i = node[sw] - fabric.switch_base
        rack[sw], u[sw], h[sw] = layout.switch_rack[i], layout.switch_u[i], layout.switch_height_u
    return rack, u, h
