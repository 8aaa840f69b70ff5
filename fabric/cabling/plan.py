"""The cabling plan of a built design: every network link as a row with both ends (rack, U, device, port, cage and
breakout lane), its optics, cable model and length, and its role.

Port assignment follows the rules fabrics are cabled by:

- a switch's ports are dealt in groups, downlinks first (servers' NICs, then lower switches), then links to its
  own tier (a dragonfly's local, then global links), then uplinks; each group starts on a fresh cage, so one cage
  never mixes link kinds, speeds or media, and breakout lanes fill in order (port 1 lanes 1-4, then port 2);
- downlinks to servers go in server order (node slot, then NIC port), so port k of every rail leaf holds the same
  server slot, and reserved slots (a SuperPOD's UFM node) keep their ports;
- uplinks go round-robin over the switches above (spine 1, spine 2, ... spine S, then spine 1 again), so a leaf's
  uplinks spread evenly and parallel links to one spine land on different cages;
- a NIC's ports are its own: port p of a NIC is the port the builder cabled to plane p's switch.

Which leaf a server's NIC reaches (rail r on rail leaf r, each plane on its own switches) is the builder's
(:mod:`fabric.topology.build`); the plan checks it (:mod:`fabric.cabling.checks`).

Cables and optics are the bill of materials' (:mod:`fabric.cost.bom`): each link's medium and length class from the
builder, the cheapest catalog cable at least that long, and the optical module of its kind and speed on each
optical end. Lengths are the layout's (:mod:`fabric.cabling.layout`), so the checks can say when a link is longer
than the cable bought for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabric.cabling.layout import RackLayout, link_lengths_m, rack_layout
from fabric.cabling.roles import PLAN_COLUMNS, RESERVED_ROLE, ROLE_NAMES
from fabric.cost.bom import optical_groups
from fabric.errors import DesignError
from fabric.topology.fabric import LINK_KINDS, MEDIA, NIC

__all__ = ["CablingPlan", "cabling_plan", "ROLE_NAMES", "RESERVED_ROLE", "PLAN_COLUMNS"]

_NET_KINDS = [LINK_KINDS.index(k) for k in ("nic-leaf", "leaf-spine", "spine-core", "router-local", "router-global")]
#: Role of a row: the link kind, or "reserved" for a reserved node slot's port (cabled by the site, not bought here).
_OPTICS = MEDIA.index("optics")
_CABLE_KIND = {"copper": "dac", "active_copper": "acc", "aoc": "aoc", "optics": "fibre"}


@dataclass(frozen=True, eq=False)
class CablingPlan:
    """Rows of a cabling plan as arrays (one per row; see :data:`PLAN_COLUMNS`) and the tables they index.

    ``link`` is the fabric's link id (-1 for a reserved slot's port); ``a_node`` / ``b_node`` node ids (``a`` is
    the NIC or the lower switch; a reserved row's ``a_node`` is ``-1 - slot``); ports, cages and lanes count from
    1 (0 on a NIC end: a NIC port has no cage); ``optic_models`` / ``cable_models`` are the catalog models the
    ``*_optic`` / ``cable`` columns index (-1: none).
    """

    fabric: object
    layout: RackLayout
    link: np.ndarray
    role: np.ndarray
    plane: np.ndarray
    speed_bps: np.ndarray
    a_node: np.ndarray
    b_node: np.ndarray
    a_port: np.ndarray
    a_cage: np.ndarray
    a_lane: np.ndarray
    b_port: np.ndarray
    b_cage: np.ndarray
    b_lane: np.ndarray
    a_optic: np.ndarray
    b_optic: np.ndarray
    medium: np.ndarray
    cable: np.ndarray
    length_m: np.ndarray
    optic_models: tuple
    cable_models: tuple
    cable_length_m: np.ndarray
    node_names: np.ndarray
    nic_interface: np.ndarray
    switch_lanes: dict = field(default_factory=dict)
    ports_per_cage: int = 1

    @property
    def rows(self) -> int:
        return int(self.link.shape[0])

    def rack_rows(self, rack: int) -> np.ndarray:
        """Rows with an end in layout rack ``rack``."""
        return np.flatnonzero((self.a_rack == rack) | (self.b_rack == rack))

    @property
    def a_rack(self) -> np.ndarray:
        return self._ends()[0]

    @property
    def b_rack(self) -> np.ndarray:
        return self._ends()[2]

    @property
    def a_u(self) -> np.ndarray:
        return self._ends()[1]

    @property
    def b_u(self) -> np.ndarray:
        return self._ends()[3]

    def _ends(self):
        cached = self.__dict__.get("_ends_cache")
        if cached is None:
            ra, ua = _positions(self.fabric, self.layout, self.a_node)
            rb, ub = _positions(self.fabric, self.layout, self.b_node)
            cached = (ra, ua, rb, ub)
            object.__setattr__(self, "_ends_cache", cached)
        return cached


def _positions(fabric, layout, node):
    """(rack, lowest U) of each row end; a reserved slot's row carries ``-1 - slot``."""
    node = np.asarray(node, np.int64)
    rack = np.zeros(node.shape, np.int64)
    u = np.zeros(node.shape, np.int64)
    res = node < 0
    if res.any():
        slot = -1 - node[res]
        rack[res], u[res] = layout.slot_rack[slot], layout.slot_u[slot]
    kind = np.where(res, -1, fabric.node_kind[np.where(res, 0, node)])
    nic = kind == NIC
    if nic.any():
        slot = (node[nic] - fabric.nic_base) // max(1, fabric.design.nics_per_node) + fabric.design.reserved_node_slots
        rack[nic], u[nic] = layout.slot_rack[slot], layout.slot_u[slot]
    sw = (~res) & (~nic)
    if sw.any():
        i = node[sw] - fabric.switch_base
        rack[sw], u[sw] = layout.switch_rack[i], layout.switch_u[i]
    return rack, u


def _rank_in_groups(keys: np.ndarray) -> np.ndarray:
    """Position of each element among the elements with the same key, in array order (a stable cumcount)."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    first = np.searchsorted(k, k, side="left")
    out = np.empty(keys.shape[0], np.int64)
    out[order] = np.arange(k.shape[0]) - first
    return out


def _node_names(fabric, reserved: int) -> tuple[np.ndarray, np.ndarray]:
    """Names of the servers (one per NIC node), switches, and reserved slots; the NIC interface name of each NIC."""
    d = fabric.design
    npn = max(1, d.nics_per_node)
    width = max(4, len(str(d.nodes)))
    nic_idx = np.arange(fabric.n_nics)
    server = np.char.add("node-", np.char.zfill((nic_idx // npn + 1).astype(str), width))
    nic_iface = np.char.add("nic", (nic_idx % npn + 1).astype(str))
    base, n_sw = fabric.switch_base, fabric.n_switches
    tiers = fabric.node_tier[base:base + n_sw]
    planes = fabric.node_plane[base:base + n_sw]
    tier_names = np.asarray(fabric.tier_names)[tiers]
    key = planes.astype(np.int64) * 8 + tiers
    # the fabric's own switch labels (Fabric.node_label: leaf0, spine3@p1), as failures and the audit name them
    idx = _rank_in_groups(key)
    sw_names = np.char.add(tier_names, idx.astype(str))
    if fabric.planes > 1:
        sw_names = np.char.add(np.char.add(sw_names, "@p"), planes.astype(str))
    names = np.full(fabric.n_nodes, "", dtype=object)
    names[fabric.nic_base:fabric.nic_base + fabric.n_nics] = server
    names[base:base + n_sw] = sw_names
    res_names = np.array([f"reserved-{i + 1:02d}" for i in range(reserved)], dtype=object)
    return np.concatenate([names, res_names[::-1]]) if reserved else names, nic_iface


def cabling_plan(design_or_fabric, catalog=None, *, racks_per_row: int | None = None) -> CablingPlan:
    """The cabling plan of a design (or of its built fabric): module docstring. Raises :class:`DesignError` when the
    design cannot be built or its ports cannot be assigned (more links on a switch than it has ports)."""
    from fabric.catalog import default_catalog
    from fabric.cost import bill_of_materials
    from fabric.topology import build_fabric

    cat = catalog or default_catalog()
    fabric = design_or_fabric if hasattr(design_or_fabric, "link_a") else build_fabric(design_or_fabric, cat)
    d = fabric.design
    bom = bill_of_materials(fabric, cat)
    layout = rack_layout(fabric, bom, cat, racks_per_row=racks_per_row)
    sw = cat.switch(d.switch_model)
    nic = cat.nic(d.nic_model)
    ppc = int(sw.ports_per_cage or 1)
    base, n_sw = fabric.switch_base, fabric.n_switches
    npn = max(1, d.nics_per_node)
    reserved = int(d.reserved_node_slots)

    links = np.flatnonzero(np.isin(fabric.link_kind, _NET_KINDS))
    a, b = fabric.link_a[links], fabric.link_b[links]
    kind = fabric.link_kind[links].astype(np.int64)
    speed = fabric.link_capacity_bps[links]

    # reserved slots' ports: plane by plane, slot by slot, rail by rail (fabric.topology.build)
    res_leaf = np.asarray(fabric.reserved_links.get("leaf_nodes", np.zeros(0, np.int64)), np.int64)
    P = fabric.planes
    ppp = max(1, nic.ports // P)
    Q = npn * ppp
    if res_leaf.size:
        r = np.arange(res_leaf.size)
        res_plane, rest = r // (reserved * Q), r % (reserved * Q)
        res_slot, res_rail = rest // Q, rest % Q
        res_global_port = (res_rail // ppp) * nic.ports + res_plane * ppp + res_rail % ppp
    n_res = int(res_leaf.size)

    # NIC end: which port of its NIC each server link uses (nic_ports), parallel links to one switch in order
    nl = kind == LINK_KINDS.index("nic-leaf")
    nic_node = a[nl]
    nic_row = nic_node - fabric.nic_base
    eq = fabric.nic_ports[nic_row] == b[nl][:, None]
    rank = _rank_in_groups(nic_row * (n_sw + 1) + (b[nl] - base))
    cum = np.cumsum(eq, axis=1)
    nic_port = np.argmax(eq & (cum == rank[:, None] + 1), axis=1)
    if not (eq & (cum == rank[:, None] + 1)).any(axis=1).all():
        raise DesignError("cabling plan: a server link has no matching NIC port in the built fabric (nic_ports)")

    # switch ends: (switch, direction, kind, speed) groups, ordered members, fresh cage per group
    L = links.size
    end_sw = np.concatenate([b, np.where(nl, -1, a)])
    end_row = np.concatenate([np.arange(L), np.arange(L)])
    end_side = np.concatenate([np.ones(L, np.int8), np.zeros(L, np.int8)])      # 1: the b end, 0: the a end
    end_kind = np.concatenate([kind, kind])
    end_speed = np.concatenate([speed, speed])
    other = np.concatenate([a, b])
    # direction on its switch: 0 down (b end of an up-going link), 1 same tier (dragonfly), 2 up
    same_tier = np.isin(end_kind, [LINK_KINDS.index("router-local"), LINK_KINDS.index("router-global")])
    direction = np.where(same_tier, 1, np.where(end_side == 1, 0, 2))
    # member order: servers by slot and NIC port; switches round-robin (rank among parallel links, then id)
    pair = np.minimum(end_sw, other) * (fabric.n_nodes + 1) + np.maximum(end_sw, other)
    spread = _rank_in_groups(np.where(end_kind == LINK_KINDS.index("nic-leaf"), -1, pair)) if L else np.zeros(0)
    big = np.int64(fabric.n_nodes + 1)
    order_key = spread * big + other
    nl2 = np.concatenate([nl, np.zeros(L, bool)])
    slot_of = (other[nl2] - fabric.nic_base) // npn + reserved
    order_key[nl2] = slot_of * (npn * nic.ports) + ((other[nl2] - fabric.nic_base) % npn) * nic.ports + nic_port
    keep = end_sw >= 0
    end_sw, end_row, end_side = end_sw[keep], end_row[keep], end_side[keep]
    end_kind, end_speed, direction, order_key = end_kind[keep], end_speed[keep], direction[keep], order_key[keep]
    if n_res:
        end_sw = np.concatenate([res_leaf, end_sw])
        end_row = np.concatenate([L + np.arange(n_res), end_row])
        end_side = np.concatenate([np.ones(n_res, np.int8), end_side])
        end_kind = np.concatenate([np.full(n_res, LINK_KINDS.index("nic-leaf")), end_kind])
        end_speed = np.concatenate([np.full(n_res, fabric.link_speed_bps), end_speed])
        direction = np.concatenate([np.zeros(n_res, np.int64), direction])
        order_key = np.concatenate([res_slot * (npn * nic.ports) + res_global_port, order_key])

    speeds, speed_code = np.unique(end_speed, return_inverse=True)
    lanes_of_speed = np.array([max(1, sw.lanes_at(s)) if sw.lanes_at(s) else 1 for s in speeds.tolist()], np.int64)
    group = (((end_sw - base) * 3 + direction) * len(LINK_KINDS) + end_kind) * len(speeds) + speed_code
    order = np.lexsort((order_key, group))
    g_sorted = group[order]
    g_uniq, g_first, g_count = np.unique(g_sorted, return_index=True, return_counts=True)
    member = np.arange(order.size) - np.repeat(g_first, g_count)
    g_lanes = lanes_of_speed[g_uniq % len(speeds)]
    g_ports = -(-g_count // g_lanes)
    g_cages = -(-g_ports // ppc)
    g_switch = g_uniq // (3 * len(LINK_KINDS) * len(speeds))
    # cages before each group on its switch
    cum = np.cumsum(g_cages) - g_cages
    sw_first = np.searchsorted(g_switch, g_switch, side="left")
    g_start_cage = cum - cum[sw_first]
    cages_total = int(sw.ports) // ppc
    used_cages = np.bincount(g_switch, weights=g_cages, minlength=n_sw)
    over = np.flatnonzero(used_cages > cages_total)
    if over.size:
        # a group per fresh cage does not fit: pack that switch's groups port after port instead
        fix = np.isin(g_switch, over)
        cum_p = np.cumsum(np.where(fix, g_ports, 0)) - np.where(fix, g_ports, 0)
        start_port = cum_p - cum_p[sw_first]
        start_port_all = np.where(fix, start_port, g_start_cage * ppc)
    else:
        start_port_all = g_start_cage * ppc
    lanes_m = np.repeat(g_lanes, g_count)
    port = np.repeat(start_port_all, g_count) + member // lanes_m + 1
    lane = member % lanes_m + 1
    cage = (port - 1) // ppc + 1
    # a switch with more ports in use than it has: the design cannot be cabled
    too_many = np.bincount(g_switch, weights=g_ports, minlength=n_sw) > sw.ports
    if too_many.any():
        s = int(np.flatnonzero(too_many)[0])
        raise DesignError(f"cabling plan: switch {s + base} needs more than its {sw.ports} ports")

    rows_total = L + n_res
    a_port = np.zeros(rows_total, np.int64)
    a_cage = np.zeros(rows_total, np.int64)
    a_lane = np.zeros(rows_total, np.int64)
    b_port, b_cage, b_lane = a_port.copy(), a_cage.copy(), a_lane.copy()
    rows_s, side_s = end_row[order], end_side[order]
    on_b = side_s == 1
    b_port[rows_s[on_b]], b_cage[rows_s[on_b]], b_lane[rows_s[on_b]] = port[on_b], cage[on_b], lane[on_b]
    a_port[rows_s[~on_b]], a_cage[rows_s[~on_b]], a_lane[rows_s[~on_b]] = port[~on_b], cage[~on_b], lane[~on_b]
    nl_rows = np.flatnonzero(nl)
    a_port[nl_rows] = nic_port + 1            # a NIC port: no cage, no lane
    if n_res:
        a_port[L:] = res_global_port + 1      # a reserved slot's port: its rail (NIC port) number

    # cables and optics as the bill of materials buys them
    medium = fabric.link_medium[links]
    reach = fabric.link_reach_m[links]
    cable_models: list = []
    cable_len: list = []
    cable = np.full(rows_total, -1, np.int64)
    combo = np.stack([medium.astype(float), speed, reach], axis=1)
    uniq, inv = np.unique(combo, axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    def cable_index(c) -> int:
        if c.model not in cable_models:
            cable_models.append(c.model)
            cable_len.append(c.reach_m)
        return cable_models.index(c.model)

    for i, (m, s, r) in enumerate(uniq.tolist()):
        if int(m) != _OPTICS:           # optical links: the fibre of their modules' medium, below
            cable[:L][inv == i] = cable_index(cat.cable_for(_CABLE_KIND[MEDIA[int(m)]], s, r))
    optic_models: list = []
    a_optic = np.full(rows_total, -1, np.int64)
    b_optic = np.full(rows_total, -1, np.int64)
    row_of = np.full(fabric.link_a.shape[0], -1, np.int64)
    row_of[links] = np.arange(L)
    for g in optical_groups(fabric, cat):       # the bill of materials' modules and fibres, link by link
        rows_g = row_of[g.links]
        rows_g = rows_g[rows_g >= 0]
        a_tx = g.nic_module if g.nic_module is not None else g.switch_module
        for tx, arr in ((a_tx, a_optic), (g.switch_module, b_optic)):
            if tx.model not in optic_models:
                optic_models.append(tx.model)
            arr[rows_g] = optic_models.index(tx.model)
        r_g = reach[rows_g]
        for length, fibre in g.fibre_by_length.items():
            cable[rows_g[r_g == length]] = cable_index(fibre)

    names, nic_iface = _node_names(fabric, reserved)
    a_node = np.concatenate([a, -1 - res_slot]) if n_res else a
    b_node = np.concatenate([b, res_leaf]) if n_res else b
    role = np.concatenate([kind, np.full(n_res, RESERVED_ROLE)]) if n_res else kind
    node_plane = fabric.node_plane
    plane = node_plane[b_node].astype(np.int64) + 1
    sp = np.concatenate([speed, np.full(n_res, fabric.link_speed_bps)]) if n_res else speed
    medium_all = np.concatenate([medium, np.full(n_res, -1, np.int8)]) if n_res else medium
    length = np.concatenate([link_lengths_m(fabric, layout, links), np.zeros(n_res)]) if n_res else \
        link_lengths_m(fabric, layout, links)
    if n_res:       # a reserved slot's port: the length from its slot to the leaf, as the layout gives it
        from fabric.cabling.layout import SLACK_BETWEEN_RACKS_M, TRAY_M, U_M
        rs = layout.slot_rack[res_slot]
        rl = layout.switch_rack[res_leaf - base]
        up = ((layout.rack_height_u[rs] - layout.slot_u[res_slot]) + (layout.rack_height_u[rl] - layout.switch_u[res_leaf - base])) * U_M
        length[L:] = np.round(up + 2 * TRAY_M + np.abs(layout.rack_x_m[rs] - layout.rack_x_m[rl])
                              + np.abs(layout.rack_y_m[rs] - layout.rack_y_m[rl]) + SLACK_BETWEEN_RACKS_M, 2)
    lanes_by_speed = {float(s): int(v) for s, v in zip(speeds.tolist(), lanes_of_speed.tolist())}
    return CablingPlan(
        fabric=fabric, layout=layout, link=np.concatenate([links, np.full(n_res, -1)]) if n_res else links,
        role=role.astype(np.int64), plane=plane, speed_bps=sp, a_node=a_node, b_node=b_node,
        a_port=a_port, a_cage=a_cage, a_lane=a_lane, b_port=b_port, b_cage=b_cage, b_lane=b_lane,
        a_optic=a_optic, b_optic=b_optic, medium=medium_all, cable=cable, length_m=length,
        optic_models=tuple(optic_models), cable_models=tuple(cable_models),
        cable_length_m=np.asarray(cable_len, float), node_names=names, nic_interface=nic_iface,
        switch_lanes=lanes_by_speed, ports_per_cage=ppc)
