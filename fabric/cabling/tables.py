"""A cabling plan as tables: the whole plan as CSV (streamed in batches, so a million links stay a few seconds and a
bounded amount of memory), every rack's links as one CSV (sorted with integer keys, written in batches), the audit's
port-to-link mapping as CSV, and a readable table per rack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from fabric.cabling.memo import per_plan
from fabric.topology.fabric import LINK_KINDS, MEDIA

__all__ = ["plan_table", "write_plan_csv", "rack_table", "switch_interface_names", "BATCH_ROWS",
           "write_by_rack_csv", "audit_mapping_csv", "AUDIT_ROLES"]

#: Rows written per batch.
BATCH_ROWS = 200_000
#: Link kinds whose both ends are switches: the rows of the audit's port-to-link mapping.
AUDIT_ROLES = ("leaf-spine", "spine-core", "router-local", "router-global")



def _take(values, idx: np.ndarray) -> pa.Array:
    """``values[idx]`` as a string array (``idx`` -1: empty)."""
    values = pa.array(list(values) + [""], pa.string())
    idx = np.where(np.asarray(idx) < 0, len(values) - 1, idx)
    return pc.take(values, pa.array(idx, pa.int64()))


def switch_interface_names(port: np.ndarray, cage: np.ndarray, lane: np.ndarray, ports_per_cage: int,
                           lanes: np.ndarray) -> pa.Array:
    """Interface names on a switch: ``cage/port-in-cage`` where a cage holds two ports (Quantum-2's OSFP cages,
    "1/1", "1/2"), else the port number; a breakout lane adds ``/lane`` ("12/3")."""
    port, cage, lane = (np.asarray(x, np.int64) for x in (port, cage, lane))
    if ports_per_cage > 1:
        head = pc.binary_join_element_wise(pa.array(cage).cast(pa.string()),
                                           pa.array((port - 1) % ports_per_cage + 1).cast(pa.string()), "/")
    else:
        head = pa.array(port).cast(pa.string())
    tail = pa.array(lane).cast(pa.string())
    split = pa.array(np.asarray(lanes) > 1)
    return pc.if_else(split, pc.binary_join_element_wise(head, tail, "/"), head)


class _Names:
    """A plan's node names and NIC interface names as arrow string arrays (made once per plan: converting half a
    million Python strings costs more than taking from them)."""

    __slots__ = ("nodes", "nic", "_rank")

    def __init__(self, plan):
        self.nodes = pa.array(np.asarray(plan.node_names).astype(str), pa.string())
        nic = np.asarray(plan.nic_interface)
        self.nic = pa.array((nic if nic.size else np.array([""])).astype(str), pa.string())
        self._rank = None

    def rank(self) -> np.ndarray:
        """Each node name's rank among the distinct names in string order (equal names, equal ranks)."""
        if self._rank is None:
            n = len(self.nodes)
            order = pc.sort_indices(self.nodes).to_numpy()
            names = self.nodes.take(pa.array(order))
            new = pc.not_equal(names.slice(1), names.slice(0, max(n - 1, 0))).to_numpy(zero_copy_only=False) \
                if n > 1 else np.zeros(0, bool)
            rank = np.empty(n, np.int64)
            rank[order] = np.concatenate([np.zeros(min(n, 1), np.int64), np.cumsum(new, dtype=np.int64)])
            self._rank = rank
        return self._rank


def _names(plan) -> _Names:
    return per_plan(plan, _Names)


def _node_index(node: np.ndarray, n: int) -> pa.Array:
    """Node ids as indices into the names (a reserved slot's ``-1 - slot`` counts from the end, as numpy does)."""
    node = np.asarray(node, np.int64)
    return pa.array(np.where(node < 0, node + n, node))


def _device_names(plan, node: np.ndarray) -> pa.Array:
    """``plan.node_names[node]`` as a string array."""
    names = _names(plan).nodes
    return names.take(_node_index(node, len(names)))


def _interfaces(plan, node: np.ndarray, port, cage, lane, speed) -> pa.Array:
    """Interface name of each row end: a NIC's ``nicK`` (``nicK/pP`` on a multi-port NIC), a switch's port name;
    a reserved slot's ``rail-R``."""
    fab = plan.fabric
    node = np.asarray(node, np.int64)
    is_nic = (node >= fab.nic_base) & (node < fab.nic_base + fab.n_nics)
    speeds = np.unique(speed)
    lanes = np.array([plan.switch_lanes.get(float(s), 1) for s in speeds.tolist()])
    lanes = lanes[np.searchsorted(speeds, speed)]
    sw_names = switch_interface_names(port, np.maximum(cage, 1), np.maximum(lane, 1), plan.ports_per_cage, lanes)
    nic_idx = np.where(is_nic, node - fab.nic_base, 0)
    nic_ports = fab.nic_ports.shape[1]
    nic_name = _names(plan).nic.take(pa.array(nic_idx, pa.int64()))
    if nic_ports > 1:
        nic_name = pc.binary_join_element_wise(nic_name, pc.binary_join_element_wise(
            pa.scalar("p"), pa.array(port).cast(pa.string()), ""), "/")
    return pc.if_else(pa.array(is_nic), nic_name, sw_names)


def _a_interfaces(plan, idx: np.ndarray) -> pa.Array:
    """The a end's interface of rows ``idx`` (a reserved slot's row: ``rail-R``)."""
    from fabric.cabling.roles import RESERVED_ROLE

    a_port = plan.a_port[idx]
    a_iface = _interfaces(plan, plan.a_node[idx], a_port, plan.a_cage[idx], plan.a_lane[idx], plan.speed_bps[idx])
    res = plan.role[idx] == RESERVED_ROLE
    if res.any():
        rail = pc.binary_join_element_wise(pa.scalar("rail-"), pa.array(a_port).cast(pa.string()), "")
        a_iface = pc.if_else(pa.array(res), rail, a_iface)
    return a_iface


def _b_interfaces(plan, idx: np.ndarray) -> pa.Array:
    """The b end's interface of rows ``idx``."""
    return _interfaces(plan, plan.b_node[idx], plan.b_port[idx], plan.b_cage[idx], plan.b_lane[idx],
                       plan.speed_bps[idx])


def plan_table(plan, rows=None, columns=None) -> pa.Table:
    """The plan's rows (all, a slice or an index array) as a table with the columns of ``PLAN_COLUMNS`` (or only
    ``columns``, in that order: only those are computed)."""
    from fabric.cabling.roles import PLAN_COLUMNS, ROLE_NAMES

    idx = np.arange(plan.rows)[rows] if rows is not None else np.arange(plan.rows)
    lay = plan.layout
    ra, ua, rb, ub = (x[idx] for x in plan._ends())

    def cable_len():
        cable = plan.cable[idx]
        return pa.array(np.where(cable >= 0, plan.cable_length_m[np.maximum(cable, 0)]
                                 if plan.cable_length_m.size else 0.0, 0.0), mask=cable < 0)   # reserved: empty

    def medium():
        m = plan.medium[idx]
        return _take(MEDIA, np.where(m < 0, -1, m))

    build = {
        "link": lambda: pa.array(plan.link[idx]),
        "role": lambda: _take(ROLE_NAMES, plan.role[idx]),
        "plane": lambda: pa.array(plan.plane[idx]),
        "speed_gbps": lambda: pa.array(plan.speed_bps[idx] / 1e9),
        "a_rack": lambda: _take(lay.rack_name.tolist(), ra),
        "a_u": lambda: pa.array(ua),
        "a_device": lambda: _device_names(plan, plan.a_node[idx]),
        "a_interface": lambda: _a_interfaces(plan, idx),
        "a_port": lambda: pa.array(plan.a_port[idx]),
        "a_cage": lambda: pa.array(plan.a_cage[idx]),
        "a_lane": lambda: pa.array(plan.a_lane[idx]),
        "a_optic": lambda: _take(plan.optic_models, plan.a_optic[idx]),
        "b_rack": lambda: _take(lay.rack_name.tolist(), rb),
        "b_u": lambda: pa.array(ub),
        "b_device": lambda: _device_names(plan, plan.b_node[idx]),
        "b_interface": lambda: _b_interfaces(plan, idx),
        "b_port": lambda: pa.array(plan.b_port[idx]),
        "b_cage": lambda: pa.array(plan.b_cage[idx]),
        "b_lane": lambda: pa.array(plan.b_lane[idx]),
        "b_optic": lambda: _take(plan.optic_models, plan.b_optic[idx]),
        "medium": medium,
        "cable_model": lambda: _take(plan.cable_models, plan.cable[idx]),
        "cable_length_m": cable_len,
        "length_m": lambda: pa.array(plan.length_m[idx]),
    }
    return pa.table({c: build[c]() for c in (PLAN_COLUMNS if columns is None else columns)})


def write_plan_csv(plan, path, *, batch_rows: int = BATCH_ROWS) -> int:
    """Write the whole plan as CSV to ``path`` (a path or a binary file object), batch by batch; returns the rows
    written."""
    sink = str(path) if isinstance(path, (str, Path)) else path
    writer = None
    try:
        for start in range(0, max(plan.rows, 1), batch_rows):
            t = plan_table(plan, slice(start, min(plan.rows, start + batch_rows)))
            if writer is None:
                writer = pacsv.CSVWriter(sink, t.schema)
            writer.write_table(t)
    finally:
        if writer is not None:
            writer.close()
    return plan.rows


def rack_table(plan, rack: int):
    """A readable table (pandas) of the links with an end in layout rack ``rack``: that end first (its U, device,
    port), the far end, the cable and its length; ordered by U and port."""
    rows = plan.rack_rows(rack)
    t = plan_table(plan, rows).to_pandas()
    here_a = plan.a_rack[rows] == rack
    out = {}
    for col, a_col, b_col in (("U", "a_u", "b_u"), ("device", "a_device", "b_device"),
                              ("port", "a_interface", "b_interface"), ("far rack", "b_rack", "a_rack"),
                              ("far device", "b_device", "a_device"), ("far port", "b_interface", "a_interface")):
        out[col] = np.where(here_a, t[a_col], t[b_col])
    import pandas as pd

    df = pd.DataFrame(out)
    df["role"] = t["role"].to_numpy()
    df["cable"] = t["cable_model"].to_numpy()
    df["length (m)"] = t["length_m"].to_numpy()
    return df.sort_values(["U", "device", "port"], kind="stable").reset_index(drop=True)


def _sort_order(keys) -> np.ndarray:
    """``np.lexsort(keys)`` of integer keys (last key primary; stable): one stable argsort of the keys packed into an
    int64 (each less its minimum) when their ranges fit in 62 bits, else lexsort itself."""
    keys = [np.asarray(k, np.int64) for k in keys]
    if not keys or keys[0].size == 0:
        return np.lexsort(keys) if keys else np.zeros(0, np.int64)
    lows = [int(k.min()) for k in keys]
    bits = [max(int(k.max()) - lo, 0).bit_length() for k, lo in zip(keys, lows)]
    if sum(bits) > 62:
        return np.lexsort(keys)
    packed = np.zeros(keys[0].shape, np.int64)
    shift = 0
    for k, lo, b in zip(keys, lows, bits):          # first key in the lowest bits
        if b:
            packed |= (k - lo) << shift
        shift += b
    return np.argsort(packed, kind="stable")


def write_by_rack_csv(plan, path_or_file, *, batch_rows: int = BATCH_ROWS) -> int:
    """Every rack's links as one CSV, rack by rack (each link twice, once from each end's rack): rack, U, device,
    port, then the far end, role, cable and length; ordered by rack, U, device and port. Returns the rows.

    Sorted on integer keys (a device's key: its name's rank among the names), then written batch by batch, each
    batch's columns taken from the rows it holds."""
    from fabric.cabling.roles import ROLE_NAMES

    lay = plan.layout
    n = plan.rows
    ra, ua, rb, ub = plan._ends()
    # row ends: e < n is row e's a end, e >= n row e - n's b end; the far end of e is (e + n) % 2n
    rack = np.concatenate([ra, rb])
    u = np.concatenate([ua, ub])
    node = np.concatenate([plan.a_node, plan.b_node]).astype(np.int64)
    port = np.concatenate([plan.a_port, plan.b_port])
    names = _names(plan)
    dev_rank = names.rank()[_node_index(node, len(names.nodes)).to_numpy()]
    order = _sort_order((port, dev_rank, u, rack))
    del dev_rank
    all_rows = np.arange(n)
    iface = pa.concat_arrays([_a_interfaces(plan, all_rows), _b_interfaces(plan, all_rows)]) if n else \
        pa.array([], pa.string())
    rack_names = lay.rack_name.tolist()
    sink = str(path_or_file) if isinstance(path_or_file, (str, Path)) else path_or_file
    schema = None
    writer = None
    try:
        for start in range(0, order.size, batch_rows):
            e = order[start:start + batch_rows]
            far = (e + n) % (2 * n)
            row = e % n
            t = pa.table({
                "rack": _take(rack_names, rack[e]), "u": pa.array(u[e]), "device": _device_names(plan, node[e]),
                "port": iface.take(pa.array(e)), "far_rack": _take(rack_names, rack[far]),
                "far_device": _device_names(plan, node[far]), "far_port": iface.take(pa.array(far)),
                "role": _take(ROLE_NAMES, plan.role[row]), "cable_model": _take(plan.cable_models, plan.cable[row]),
                "length_m": pa.array(plan.length_m[row]), "link": pa.array(plan.link[row])})
            if writer is None:
                schema = t.schema
                writer = pacsv.CSVWriter(sink, schema)
            writer.write_table(t)
        if writer is None:              # no rows: the header alone
            e = np.zeros(0, np.int64)
            schema = pa.schema([("rack", pa.string()), ("u", pa.array(u[e]).type), ("device", pa.string()),
                                ("port", pa.string()), ("far_rack", pa.string()), ("far_device", pa.string()),
                                ("far_port", pa.string()), ("role", pa.string()), ("cable_model", pa.string()),
                                ("length_m", pa.array(plan.length_m[e]).type), ("link", pa.array(plan.link[e]).type)])
            writer = pacsv.CSVWriter(sink, schema)
    finally:
        if writer is not None:
            writer.close()
    return int(order.size)


def audit_mapping_csv(plan) -> bytes:
    """The audit's port-to-link mapping (``switch,port,link``; :mod:`fabric.audit.portmap`) as CSV bytes, as
    :func:`fabric.cabling.package.audit_mapping_rows` gives its rows and Python's ``csv`` writer writes them: each
    switch-to-switch cable gives two rows, the port at each end with the direction it transmits in
    (``leaf3-spine1``)."""
    sw = np.flatnonzero(np.isin(plan.role, [LINK_KINDS.index(k) for k in AUDIT_ROLES]))
    a_dev, b_dev = _device_names(plan, plan.a_node[sw]), _device_names(plan, plan.b_node[sw])
    a_if, b_if = _a_interfaces(plan, sw), _b_interfaces(plan, sw)
    m = sw.size
    inter = pa.array(np.stack([np.arange(m), np.arange(m) + m], axis=1).ravel())   # a0, b0, a1, b1, ...
    table = pa.table({
        "switch": pa.concat_arrays([a_dev, b_dev]).take(inter),
        "port": pa.concat_arrays([a_if, b_if]).take(inter),
        "link": pa.concat_arrays([pc.binary_join_element_wise(a_dev, b_dev, "-"),
                                  pc.binary_join_element_wise(b_dev, a_dev, "-")]).take(inter)})
    return _plain_csv(table)


def _plain_csv(table: pa.Table) -> bytes:
    """A table of strings as Python's ``csv.writer(lineterminator="\\n")`` writes it: fields bare, quoted only when
    they hold a comma, a quote or a line break (then written by the ``csv`` module itself)."""
    head = ",".join(table.column_names) + "\n"
    structural = any(pc.any(pc.match_substring_regex(col, r'[,"\r\n]')).as_py() for col in table.columns)
    if structural or any(c in name for name in table.column_names for c in ',"\r\n'):
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(table.column_names)
        w.writerows(zip(*(col.to_pylist() for col in table.columns)))
        return buf.getvalue().encode()
    sink = pa.BufferOutputStream()
    sink.write(head.encode())
    opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
    with pacsv.CSVWriter(sink, table.schema, write_options=opts) as w:
        for start in range(0, table.num_rows, BATCH_ROWS):
            w.write_table(table.slice(start, BATCH_ROWS))
    return sink.getvalue().to_pybytes()
